"""What a layer is made of: ops, the GEMMs and fused attention they run, the tensors they save
for backward and the weights they own, per tensor-parallel rank; and the sizes they are built
from (Dims, in spec/model.py's notation)."""

from dataclasses import dataclass

from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.units import BYTES_16BIT

TP = ("tp",)
"""Split over the tensor-parallel ranks (heads, a column- or row-parallel weight)."""
SP = ("sp",)
"""Split along the sequence over the tensor-parallel ranks, only under sequence parallelism."""
WHOLE = ()
"""Not split: every rank holds all of it (norms, a row-parallel layer's bias)."""
EXPERTS = ("etp", "ep")
"""Split over the expert layout's tensor- and expert-parallel ranks (routed experts' weights)."""
SHARDS = ("tp", "sp", "etp", "ep")
"""The mesh dimensions a tensor may name: `sp` is the TP group along the sequence (on only under
sequence parallelism); the others are groups of the layout (spec/layout.py)."""


@dataclass(frozen=True)
class Saved:
    """A tensor kept from forward to backward, for one microbatch."""

    name: str
    bytes: float
    """Unsharded size."""
    shard: tuple[str, ...]
    """The mesh dimensions that split it (SHARDS): TP, SP, WHOLE, or several, as a routed
    expert's tensors split by sp (the tokens a rank routes) and etp."""
    selective: bool = False
    """Dropped (and rebuilt in backward) by selective recompute of core attention."""
    recompute: str = ""
    """The other recompute module that drops it (moe_act, layernorm, mla_up_proj), if any."""
    checkpoint: tuple[str, ...] = ()
    """The checkpointed submodules it lies inside (mlp, moe, shared_experts): recomputing one
    drops it. A submodule's input is not among them: the checkpoint keeps that."""


@dataclass(frozen=True)
class Weight:
    """A parameter tensor an op owns."""

    name: str
    numel: int
    """Elements of the whole (unsharded) tensor."""
    shard: tuple[str, ...]
    """The mesh dimensions that split it (SHARDS): TP (column/row-parallel weights, column
    biases), WHOLE (norms, row-parallel biases), EXPERTS (routed experts over etp x ep)."""

    @property
    def expert(self) -> bool:
        """A routed expert's weight: its gradient is reduced, and its optimizer state sharded,
        over the expert-data-parallel group (edp), not dp x cp."""
        return "ep" in self.shard


@dataclass(frozen=True)
class Gemm:
    """A (batched) matrix multiply C[m,n] = A[m,k] B[k,n], per TP rank."""

    m: int
    n: int
    k: int
    batch: int = 1
    dtype: str = "bf16"
    """Operand type: bf16, or fp8 (E4M3/E5M2 operands, BF16 output) for an FP8 run's linear
    layers."""
    grouped: bool = False
    """The batch is a grouped GEMM's groups (a mixture of experts' local experts in one
    Transformer Engine grouped GEMM), priced by the hardware's grouped-GEMM table where it has
    one."""

    @property
    def flops(self) -> float:
        """2mnk per matrix, times the batch."""
        return 2.0 * self.m * self.n * self.k * self.batch


@dataclass(frozen=True)
class Attention:
    """FlashAttention's fused core attention, per TP rank (Dao et al., arXiv 2205.14135)."""

    batch_heads: int
    """Micro batch x query heads on this rank."""
    seq_len: int
    """Query rows of the block (the sequence, or a context-parallel rank's share of it)."""
    head_dim: int
    causal: bool = True
    kv_len: int = 0
    """Key/value rows, if not seq_len (a context-parallel block)."""
    ring: "Collective | None" = None
    """With context parallelism over a ring (cp_comm_type p2p): the K/V send each of the c - 1
    later steps waits for, overlapped with the block before it (Transformer Engine's
    AttnFuncWithCPAndKVP2P)."""
    ring_steps: int = 1
    """Ring steps c: one causal diagonal block, then c - 1 blocks of half the rows."""
    kernel: str = ""
    """The fused-attention kernel the framework runs (a `kernel` of the hardware's
    flash_attention table); empty means the hardware file's calibration.attention_kernel."""
    window: int = 0
    """A local layer's sliding window w (keys a query sees, itself included; 0: the whole causal
    prefix). Set only below the sequence length and without context parallelism."""
    chunk: int = 0
    """A local layer's attention chunk c (Llama-4): queries see the keys of their own chunk up to
    themselves; 0: none."""

    @property
    def keys(self) -> int:
        return self.kv_len or self.seq_len

    @property
    def window_pairs(self) -> int:
        """(query, key) pairs a causal window of w computes over s queries: query i (from 1)
        sees min(i, w) keys, so s w - w (w - 1) / 2 in all."""
        s, w = self.seq_len, self.window
        return s * w - w * (w - 1) // 2

    @property
    def local_pairs(self) -> int:
        """(query, key) pairs a local layer computes: the window's band, or within chunks of c,
        s // c chunks of c (c + 1) / 2 pairs and the rest r of r (r + 1) / 2."""
        if self.chunk:
            c, r = self.chunk, self.seq_len % self.chunk
            return (self.seq_len // c) * c * (c + 1) // 2 + r * (r + 1) // 2
        return self.window_pairs

    @property
    def flops(self) -> float:
        """4 s_q s_kv d per batch-head: QKᵀ and attention-over-V, the whole square, as Megatron-Core
        r0.8's `num_floating_point_operations` counts them (the causal mask is not discounted).
        Through a window: twice the band's computed pairs, 8 d (s w - w (w - 1) / 2), the same
        no-discount factor the whole square carries over its causal half."""
        if self.window or self.chunk:
            return 8.0 * self.local_pairs * self.head_dim * self.batch_heads
        return 4.0 * self.seq_len * self.keys * self.head_dim * self.batch_heads

    @property
    def benchmark_flops(self) -> float:
        """The forward's FLOPs as the flash-attention benchmarks count them: halved when causal
        (benchmarks/benchmark_flash_attention.py, `flops(...)`); the measured rates use this.
        Through a window, the band's computed pairs (FlashAttention-2 skips the blocks outside
        it: `window_size` in flash_attn_func)."""
        return self.flops / (2 if self.causal else 1)

    @property
    def computed_share(self) -> float:
        """The share of the causal square's work a window leaves (1 without one)."""
        if not (self.window or self.chunk):
            return 1.0
        return self.local_pairs / (self.seq_len * self.keys / 2)


@dataclass(frozen=True)
class Collective:
    """A collective a layer runs over one of its parallel groups."""

    op: str
    """all_reduce, all_gather, reduce_scatter, all_to_all or send_recv."""
    bytes: float
    """Message size in nccl-tests terms (the full, gathered buffer; a send's own bytes)."""
    group: str = "tp"
    """The layout group it runs over (layout.LAYER_GROUPS): tp, cp for context parallelism's
    exchanges, ep, etp or etp-ep for a mixture of experts' token dispatch."""
    node_dedup: int = 0
    """An all-to-all of routed token copies sent once per destination node and forwarded over
    NVLink there (DeepEP / HybridEP): each token's k copies (this value) cross the network only
    to the distinct nodes they go to. 0: every copy travels on its own."""


@dataclass(frozen=True)
class Op:
    """One step of the layer's forward, with what its backward needs."""

    name: str
    kind: str
    """gemm, attention_gemm, flash_attention, layernorm, rmsnorm, softmax, dropout, gelu, swiglu,
    squared_relu, rope, bias_dropout_add, residual_add, bias, copy, residual_grad (backward only),
    comm, amax (an FP8 scale's all-reduce, no linear layer's entry or exit), router (a mixture
    of experts' score and top-k kernels), permute (its token permutation) or sort_chunks (the
    alltoall dispatcher's reordering of the received rows by local expert)."""
    block: str
    """attention or mlp (a mixture of experts' block too)."""
    gemm: Gemm | None = None
    attention: Attention | None = None
    fwd_bytes: float = 0.0
    """HBM bytes the forward kernel moves (memory-bound kinds), per TP rank; for an FP8 linear
    layer, its quantize kernels' bytes (blocks/fp8.py)."""
    bwd_bytes: float = 0.0
    """HBM bytes the backward kernels move (memory-bound kinds, bias-gradient reductions
    included), per TP rank; for an FP8 linear layer, its quantize kernels' bytes."""
    saves: tuple[Saved, ...] = ()
    weights: tuple[Weight, ...] = ()
    selective: bool = False
    """Re-run in backward by selective recompute (Megatron's core-attention checkpoint, paper
    §5)."""
    recompute: str = ""
    """The other recompute module that re-runs it in backward (moe_act, layernorm,
    mla_up_proj), if any (ParallelSpec.recompute_modules); `op` where per-op SAC re-runs it."""
    checkpoint: tuple[str, ...] = ()
    """The checkpointed submodules it lies inside (mlp, moe, shared_experts): recomputing one
    re-runs it in backward, collectives included (tensor_parallel.checkpoint re-runs the
    submodule's forward)."""
    fwd_comm: Collective | None = None
    bwd_comm: Collective | None = None
    overlaps_wgrad: bool = False
    """Its backward collective runs alongside the next GEMM's weight gradient (paper §6.2)."""
    keeps_precision: bool = False
    """A GEMM that stays in 16 bits (or fp32) under FP8: a mixture of experts' router, a torch
    linear outside Transformer Engine."""
    rerun_share: float = 1.0
    """Under per-op SAC (recompute op), the share of a GEMM's output columns re-run in backward
    (model/blocks/checkpoint.py)."""
    fwd_kernels: int = 1
    """Kernels the forward's bytes are moved by (a memory-bound op run as several eager torch
    ops: model/blocks/elementwise.py); each is priced at its own size."""
    bwd_kernels: int = 1
    """Kernels the backward's bytes are moved by."""
    beside: str = ""
    """The expert-parallel all-to-all (`dispatch` or `combine`) this op runs beside, on a side
    stream, forward and backward: the shared experts under moe_shared_expert_overlap
    (Megatron-Core shared_experts.py SharedExpertMLP.stream)."""

    @property
    def fwd_flops(self) -> float:
        """Matrix FLOPs of the forward (GEMM or fused attention); 0 for other kinds."""
        if self.gemm:
            return self.gemm.flops
        return self.attention.flops if self.attention else 0.0


@dataclass(frozen=True)
class Dims:
    """The sizes one layer's ops are built from, on one TP rank (notation of spec/model.py)."""

    s: int
    """Tokens of a sequence on this rank: seq_len / c (Megatron-Core splits every sequence over
    the context-parallel ranks before the embedding, get_batch_on_this_cp_rank)."""
    b: int
    h: int
    a: int
    g: int
    d: int
    f: int
    t: int
    seq: int
    """The share of norm, dropout and residual work one rank does: t under SP, else 1."""
    c: int = 1
    """Context-parallel ranks; s is already one rank's share, seq_len / c."""

    @classmethod
    def of(cls, model: ModelSpec, parallel: ParallelSpec, micro_batch: int) -> "Dims":
        return cls(
            model.seq_len // parallel.cp,
            micro_batch,
            model.hidden,
            model.heads,
            model.groups,
            model.head_size,
            model.ffn,
            parallel.tp,
            parallel.tp if parallel.sequence_parallel else 1,
            parallel.cp,
        )

    @property
    def x(self) -> float:
        """Bytes of one activation tensor [s, b, h], 16-bit."""
        return BYTES_16BIT * self.s * self.b * self.h

    def heads_bytes(self, heads: int) -> float:
        """Bytes of a 16-bit [s, b, heads, d] tensor, unsharded."""
        return BYTES_16BIT * self.s * self.b * heads * self.d


def reruns(op: "Op", parallel: ParallelSpec) -> bool:
    """Whether the run's selective recompute (or per-op SAC) re-runs this op in backward."""
    if parallel.recompute == "op":
        return op.recompute == "op"
    return (
        (op.selective and parallel.recomputes("core_attn"))
        or bool(op.recompute and parallel.recomputes(op.recompute))
        or any(parallel.recomputes(m) for m in op.checkpoint)
    )


def dropped(saved: Saved, parallel: ParallelSpec) -> bool:
    """Whether the run's selective recompute drops this tensor (rebuilt in backward)."""
    return (
        (saved.selective and parallel.recomputes("core_attn"))
        or bool(saved.recompute and parallel.recomputes(saved.recompute))
        or any(parallel.recomputes(m) for m in saved.checkpoint)
    )


def shard_ranks(shard: tuple[str, ...], parallel: ParallelSpec) -> int:
    """How many ranks share a tensor split over the mesh dimensions `shard`."""
    ranks = 1
    for dim in shard:
        if dim == "sp":
            ranks *= parallel.tp if parallel.sequence_parallel else 1
        else:
            ranks *= parallel.size(dim)
    return ranks


def stored_bytes(saved: Saved, parallel: ParallelSpec) -> float:
    """Bytes of one saved tensor on one rank."""
    return saved.bytes / shard_ranks(saved.shard, parallel)


def stored_params(weight: Weight, parallel: ParallelSpec) -> float:
    """Elements of one weight on one rank."""
    return weight.numel / shard_ranks(weight.shard, parallel)
