"""The element-wise kernels Transformer Engine's context-parallel ring attention runs beside its
attention steps, as bytes per kernel on one CP rank (cp_comm_type p2p, `AttnFuncWithCPAndKVP2P`
in transformer_engine/pytorch/attention/dot_product_attention/context_parallel.py @8382eed, the
TE commit Megatron-Core core_v0.13.0 builds against: docker/Dockerfile.ci.dev `TE_COMMIT`).

The case priced is Megatron-Core's: sbhd layout, causal mask, BF16 attention (no FP8 DPA), no
bias, K and V not MLA-shaped. Sizes, on a rank holding n = b s / c tokens of c ranks' ring:
  q  bytes of Q (and of the output O, and of dQ): n x heads x head_dim in BF16;
  kv bytes of K and V together (and of dK, dV);
  lse bytes of the fp32 softmax log-sum-exp: n x heads.
Each torch op is one kernel reading its inputs once and writing its output once (the
`@jit_fuser` corrections fuse their exp, multiply and add). A half-size view of an sbhd tensor
([2, s/2, ...][k]) is contiguous, so the per-step slicing copies nothing; `combine_tensors` is a
view. Rank r's steps differ: in a causal ring, step i of the forward attends the full query
chunk to half the keys when i <= r, else half the queries to all keys (lines 725-1090).
"""

from dataclasses import dataclass

from simsp.units import BYTES_16BIT, BYTES_FP32

Kernels = dict[str, tuple[float, ...]]
"""Entry name -> bytes of each kernel it stands for, in launch order."""


def forward_kernels(q: float, kv: float, lse: float, c: int, rank: int) -> Kernels:
    """The forward's extra kernels on CP rank `rank` of c (c >= 2).

    kv concat: `torch.cat((k.unsqueeze(-3), v.unsqueeze(-3)), dim=-3)` into the first ring
    buffer (line 691): read K, V, write both, 2 kv.
    softmax-lse correction: `torch.clone(softmax_lse_per_step[0])` (line 1326, 2 lse), then
    for each later step j `flash_attn_fwd_softmax_lse_correction` (read the running and the
    step's lse, write the running one: 3 lse; lines 140-149, 1338) or, for a half-query step,
    its second-half version on half of each (1.5 lse).
    output correction: after the loop, `flash_attn_fwd_out_correction_init` for step 0 (read O
    of the step, both lse, write O: 2 q + 2 lse; lines 94-104, 1368) and for each later step
    `flash_attn_fwd_out_correction` (read O and the step's O, both lse, write O: 3 q + 2 lse;
    lines 108-120) or `..._second_half_out_correction` on half of each (1.5 q + lse)."""
    later = [rank >= j for j in range(1, c)]  # step j attends the full query chunk
    return {
        "cp kv concat": (2 * kv,),
        "cp softmax-lse correction": (2 * lse, *(3 * lse if f else 1.5 * lse for f in later)),
        "cp output correction": (
            2 * q + 2 * lse,
            *(3 * q + 2 * lse if f else 1.5 * q + lse for f in later),
        ),
    }


DQ_ACCUMULATION = "cp dq accumulation"
"""The backward entry whose kernel of each step runs before that step waits for its send."""

HIDDEN_BUT_LAST = ("cp softmax-lse correction",)
"""Entries whose kernels but the last run beside the next attention step: the lse clone and
the correction of step j run on the stream that computed step j while step j + 1 runs on the
other (`flash_attn_streams`, lines 678, 698-700 and 1309-1358); the last step's waits for
nothing. The output corrections run after the loop, on the current stream."""


def backward_kernels(q: float, kv: float, lse: float, c: int, rank: int) -> Kernels:
    """The backward's extra kernels on CP rank `rank` of c (c >= 2); dQ, dK, dV accumulate in
    the BF16 of Q and KV (`dq = torch.empty_like(q)`, the ring buffers `torch.empty((2,
    *kv.shape), dtype=kv.dtype)`, lines 1653-1657) with FP8 attention off.

    cp copies: `p2p_comm_buffers[0][0].copy_(kv)` (line 1658, 2 kv); on ranks < c - 1 the
    lse's second half made contiguous (line 1586, lse).
    dq accumulation, step i (lines 2320-2355), with d = c - rank - 1 the step of the rank's own
    diagonal block: i > d `dq.add_` (3 q); i == d `dq.copy_` on the last rank (2 q), else copy
    the first half and add the second (q + 1.5 q); 0 < i < d `dq[1].add_` (1.5 q); i == 0 < d
    `dq[1].copy_` (q).
    dk, dv accumulation into the received gradients, step i (lines 2506-2551): i == c - 1 on
    rank 0 add the first half and copy the second (1.5 kv + kv), on other ranks `dkv.add_` (3
    kv); d <= i < c - 1 add the first half (1.5 kv), copy it when i == 0 on the last rank (kv);
    0 < i < d add all (3 kv); i == 0 < d copy all (2 kv)."""
    d = c - rank - 1
    return {
        "cp copies": (2 * kv,) + ((lse,) if rank < c - 1 else ()),
        DQ_ACCUMULATION: tuple(_dq_bytes(q, i, d, rank == c - 1) for i in range(c)),
        "cp dk,dv accumulation": tuple(_dkv_bytes(kv, i, d, c, rank) for i in range(c)),
    }


def _dq_bytes(q: float, i: int, d: int, last_rank: bool) -> float:
    if i > d:
        return 3 * q
    if i == d:
        return 2 * q if last_rank else 2.5 * q
    return 1.5 * q if i > 0 else q


def _dkv_bytes(kv: float, i: int, d: int, c: int, rank: int) -> float:
    if i == c - 1:
        return 2.5 * kv if rank == 0 else 3 * kv
    if i >= d:
        return kv if i == 0 and rank == c - 1 else 1.5 * kv
    return 3 * kv if i > 0 else 2 * kv


@dataclass(frozen=True)
class RingKernels:
    """One entry's kernels on one rank, each timed by its bytes (cost.compute.memory_bound)."""

    name: str
    seconds: tuple[float, ...]

    @property
    def busy_s(self) -> float:
        return sum(self.seconds)

    @property
    def exposed_s(self) -> float:
        """What the pass waits for: all of them, or the last where the others run beside the
        next attention step (HIDDEN_BUT_LAST)."""
        return self.seconds[-1] if self.name in HIDDEN_BUT_LAST else self.busy_s


def slowest_rank(att, backward: bool, memory_bound) -> list[RingKernels]:
    """The ring's extra kernels (forward_kernels / backward_kernels) on the CP rank whose serial
    share is the largest: the ring passes K/V (and dK/dV) rank to rank every step, so the
    layer's attention ends with its slowest rank. `att`: the layer's ring Attention;
    `memory_bound(nbytes, kind, backward)`: the cost model's element-wise kernel time."""
    c = att.ring_steps
    q = BYTES_16BIT * att.batch_heads * att.seq_len * att.head_dim
    lse = BYTES_FP32 * att.batch_heads * att.seq_len
    build = backward_kernels if backward else forward_kernels
    ranks = [
        [
            RingKernels(name, tuple(memory_bound(b, "cp_correction", backward).seconds for b in bs))
            for name, bs in build(q, att.ring.bytes, lse, c, r).items()
        ]
        for r in range(c)
    ]
    return max(ranks, key=lambda ks: sum(k.exposed_s for k in ks))
