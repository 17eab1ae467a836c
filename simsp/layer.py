"""One transformer layer as data: an ordered list of ops per tensor-parallel rank.

Each op carries its FLOPs, the bytes it moves, its GEMM shape, the tensors it saves for backward
(with how tensor and sequence parallelism shard them), whether selective recompute re-runs it,
and the TP/SP collectives around it. Memory (memory.py) and time (cost.py) are both derived
from this list, so the paper's Table 2 is a consequence, not an input. Op order and fusions
follow Megatron-LM as of the paper (fused scale-mask-softmax, bias-GeLU, bias-dropout-add).
"""

from dataclasses import dataclass

from simsp.model import ModelSpec
from simsp.parallel import ParallelSpec
from simsp.units import BYTES_16BIT, BYTES_FP32, BYTES_MASK

SHARDS = ("tp", "sp", "none")


@dataclass(frozen=True)
class Saved:
    """A tensor kept from forward to backward, for one microbatch."""

    name: str
    bytes: float
    """Unsharded size."""
    shard: str
    """'tp': split over TP ranks always; 'sp': split only under sequence parallelism; 'none'."""
    selective: bool = False
    """Dropped (and rebuilt in backward) by selective recompute."""


@dataclass(frozen=True)
class Gemm:
    """A (batched) matrix multiply C[m,n] = A[m,k] B[k,n], per TP rank."""

    m: int
    n: int
    k: int
    batch: int = 1

    @property
    def flops(self) -> float:
        """2mnk per matrix, times the batch."""
        return 2.0 * self.m * self.n * self.k * self.batch


@dataclass(frozen=True)
class Collective:
    """A TP/SP collective over the tensor-parallel group."""

    op: str
    """all_reduce, all_gather or reduce_scatter."""
    bytes: float
    """Message size in nccl-tests terms (the full, gathered buffer)."""


@dataclass(frozen=True)
class Op:
    """One step of the layer's forward, with what its backward needs."""

    name: str
    kind: str
    """gemm, attention_gemm, layernorm, softmax, dropout, gelu, bias_dropout_add, bias, copy,
    residual_grad (backward only) or comm."""
    block: str
    """attention or mlp."""
    gemm: Gemm | None = None
    fwd_bytes: float = 0.0
    """HBM bytes the forward kernel moves (memory-bound kinds), per TP rank."""
    bwd_bytes: float = 0.0
    """HBM bytes the backward kernels move (memory-bound kinds, bias-gradient reductions
    included), per TP rank."""
    saves: tuple[Saved, ...] = ()
    selective: bool = False
    """Re-run in backward by selective recompute (the paper's §5 core attention)."""
    fwd_comm: Collective | None = None
    bwd_comm: Collective | None = None
    overlaps_wgrad: bool = False
    """Its backward collective runs alongside the next GEMM's weight gradient (paper §6.2)."""

    @property
    def fwd_flops(self) -> float:
        """GEMM FLOPs of the forward; 0 for other kinds."""
        return self.gemm.flops if self.gemm else 0.0


def stored_bytes(saved: Saved, parallel: ParallelSpec) -> float:
    """Bytes of one saved tensor on one TP rank."""
    split = saved.shard == "tp" or (saved.shard == "sp" and parallel.sequence_parallel)
    return saved.bytes / parallel.tp if split else saved.bytes


def _tp_comms(name, block, act_bytes, parallel, entry: bool) -> Op:
    """The conjugate collectives at a TP region's entry (f / g) or exit (g / ḡ), paper Fig. 4-5."""
    ar, ag, rs = (Collective(o, act_bytes) for o in ("all_reduce", "all_gather", "reduce_scatter"))
    if parallel.tp == 1:
        fwd = bwd = None
    elif parallel.sequence_parallel:
        fwd, bwd = (ag, rs) if entry else (rs, ag)
    else:
        fwd, bwd = (None, ar) if entry else (ar, None)
    return Op(name, "comm", block, fwd_comm=fwd, bwd_comm=bwd, overlaps_wgrad=entry)


def _residual_grad(name: str, block: str, x_rank: float) -> Op:
    """Backward-only: autograd sums the two gradients of a tensor that feeds both a layer-norm
    and the residual branch (read two, write one)."""
    return Op(name, "residual_grad", block, bwd_bytes=3 * x_rank)


def build_layer(model: ModelSpec, parallel: ParallelSpec, micro_batch: int) -> tuple[Op, ...]:
    """The ops of one GPT layer on one TP rank for one microbatch (paper §4.1, Fig. 2)."""
    s, b, h, a, f, t = model.seq_len, micro_batch, model.hidden, model.heads, model.ffn, parallel.tp
    sbh, sbf, as2b = s * b * h, s * b * f, a * s * s * b
    seq = t if parallel.sequence_parallel else 1  # the share of LN/dropout work one rank does
    x = BYTES_16BIT * sbh  # one activation tensor [s, b, h]
    return (
        Op("layernorm_1", "layernorm", "attention", fwd_bytes=2 * x / seq, bwd_bytes=3 * x / seq,
           saves=(Saved("layernorm_1 input", x, "sp"),)),
        _residual_grad("residual 1", "attention", x / seq),
        _tp_comms("attention entry", "attention", x, parallel, entry=True),
        Op("qkv", "gemm", "attention", gemm=Gemm(s * b, 3 * h // t, h),
           saves=(Saved("qkv input", x, "sp"),)),
        # Megatron's column-parallel linear adds its bias in a separate kernel (mpu/layers.py,
        # `output = output + bias`); backward reduces the output gradient for the bias gradient.
        Op("qkv bias", "bias", "attention", fwd_bytes=2 * 3 * x / t, bwd_bytes=3 * x / t),
        Op("qk^T", "attention_gemm", "attention", gemm=Gemm(s, s, h // a, b * a // t), selective=True,
           saves=(Saved("Q, K", 2 * x, "tp"),)),
        Op("softmax", "softmax", "attention", fwd_bytes=2 * BYTES_16BIT * as2b / t,
           bwd_bytes=3 * BYTES_16BIT * as2b / t, selective=True,
           saves=(Saved("softmax output", BYTES_16BIT * as2b, "tp", selective=True),)),
        Op("attention dropout", "dropout", "attention",
           fwd_bytes=(2 * BYTES_16BIT + BYTES_MASK) * as2b / t,
           bwd_bytes=(2 * BYTES_16BIT + BYTES_MASK) * as2b / t, selective=True,
           saves=(Saved("softmax dropout mask", BYTES_MASK * as2b, "tp", selective=True),)),
        Op("attention over V", "attention_gemm", "attention", gemm=Gemm(s, h // a, s, b * a // t),
           selective=True,
           saves=(Saved("dropout output", BYTES_16BIT * as2b, "tp", selective=True),
                  Saved("V", x, "tp"))),
        Op("context permute", "copy", "attention", fwd_bytes=2 * x / t, bwd_bytes=2 * x / t, selective=True),
        Op("projection", "gemm", "attention", gemm=Gemm(s * b, h, h // t),
           saves=(Saved("projection input", x, "tp"),)),
        _tp_comms("attention exit", "attention", x, parallel, entry=False),
        Op("bias-dropout-add 1", "bias_dropout_add", "attention",
           fwd_bytes=(3 * x + x / 2) / seq, bwd_bytes=(3 * x + x / 2) / seq,
           saves=(Saved("attention dropout mask", BYTES_MASK * sbh, "sp"),)),
        Op("layernorm_2", "layernorm", "mlp", fwd_bytes=2 * x / seq, bwd_bytes=3 * x / seq,
           saves=(Saved("layernorm_2 input", x, "sp"),)),
        _residual_grad("residual 2", "mlp", x / seq),
        _tp_comms("mlp entry", "mlp", x, parallel, entry=True),
        Op("h->4h", "gemm", "mlp", gemm=Gemm(s * b, f // t, h), saves=(Saved("h->4h input", x, "sp"),)),
        Op("bias-gelu", "gelu", "mlp", fwd_bytes=2 * BYTES_16BIT * sbf / t,
           bwd_bytes=4 * BYTES_16BIT * sbf / t, saves=(Saved("GeLU input", BYTES_16BIT * sbf, "tp"),)),
        Op("4h->h", "gemm", "mlp", gemm=Gemm(s * b, h, f // t),
           saves=(Saved("4h->h input", BYTES_16BIT * sbf, "tp"),)),
        _tp_comms("mlp exit", "mlp", x, parallel, entry=False),
        Op("bias-dropout-add 2", "bias_dropout_add", "mlp",
           fwd_bytes=(3 * x + x / 2) / seq, bwd_bytes=(3 * x + x / 2) / seq,
           saves=(Saved("mlp dropout mask", BYTES_MASK * sbh, "sp"),)),
    )


def layer_input(model: ModelSpec, micro_batch: int) -> Saved:
    """What full recompute keeps per layer: its input, 2sbh (paper §5; sequence-sharded under SP)."""
    return Saved("layer input", BYTES_16BIT * model.seq_len * micro_batch * model.hidden, "sp")


def embedding_saves(model: ModelSpec, micro_batch: int) -> tuple[Saved, ...]:
    """First stage, per microbatch: the embedding dropout mask, sbh (paper §4.3)."""
    return (Saved("embedding dropout mask", BYTES_MASK * model.seq_len * micro_batch * model.hidden, "sp"),)


def output_saves(model: ModelSpec, micro_batch: int) -> tuple[Saved, ...]:
    """Last stage, per microbatch: final layer-norm input 2sbh, projection input 2sbh, fp32 logits 4sbv (§4.3)."""
    sb = model.seq_len * micro_batch
    return (Saved("final layernorm input", BYTES_16BIT * sb * model.hidden, "sp"),
            Saved("output projection input", BYTES_16BIT * sb * model.hidden, "sp"),
            Saved("fp32 logits", BYTES_FP32 * sb * model.vocab, "tp"))
