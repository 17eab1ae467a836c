"""One transformer layer as data: an ordered list of ops per tensor-parallel rank.

Each op carries its FLOPs, the bytes it moves, its GEMM shape and weights, the tensors it saves
for backward (with how tensor and sequence parallelism shard them), whether selective recompute
re-runs it, and the TP/SP collectives around it. Memory (memory.py), time (cost/), parameter
counts and FLOPs (params.py, flops.py) are all derived from this list, so the paper's Table 2 is a
consequence, not an input.

A layer is its attention block then its MLP block, each composed from the model's choices
(`ModelSpec`): norm, QKV with grouped-query heads, rotary positions, unfused or flash core
attention, gated or plain MLP, biases and dropout. With the paper's GPT choices the list is the
one of Megatron-LM as of the paper (fused scale-mask-softmax, bias-GeLU, bias-dropout-add).
Notation: see model.py.
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
class Weight:
    """A parameter tensor an op owns."""

    name: str
    numel: int
    """Elements of the whole (unsharded) tensor."""
    shard: str
    """'tp': split over TP ranks (column/row-parallel weights, column biases); 'none': replicated
    (norms, row-parallel biases)."""


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
class Attention:
    """FlashAttention's fused core attention, per TP rank (Dao et al., arXiv 2205.14135)."""

    batch_heads: int
    """Micro batch x query heads on this rank."""
    seq_len: int
    head_dim: int
    causal: bool = True

    @property
    def flops(self) -> float:
        """4 s² d per batch-head: QKᵀ and attention-over-V, the whole s x s square, as Megatron-Core
        r0.8's `num_floating_point_operations` counts them (the causal mask is not discounted)."""
        return 4.0 * self.seq_len * self.seq_len * self.head_dim * self.batch_heads

    @property
    def benchmark_flops(self) -> float:
        """The forward's FLOPs as the flash-attention benchmarks count them: halved when causal
        (benchmarks/benchmark_flash_attention.py, `flops(...)`); the measured rates use this."""
        return self.flops / (2 if self.causal else 1)


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
    """gemm, attention_gemm, flash_attention, layernorm, rmsnorm, softmax, dropout, gelu, swiglu,
    squared_relu, rope, bias_dropout_add, residual_add, bias, copy, residual_grad (backward only)
    or comm."""
    block: str
    """attention or mlp."""
    gemm: Gemm | None = None
    attention: Attention | None = None
    fwd_bytes: float = 0.0
    """HBM bytes the forward kernel moves (memory-bound kinds), per TP rank."""
    bwd_bytes: float = 0.0
    """HBM bytes the backward kernels move (memory-bound kinds, bias-gradient reductions
    included), per TP rank."""
    saves: tuple[Saved, ...] = ()
    weights: tuple[Weight, ...] = ()
    selective: bool = False
    """Re-run in backward by selective recompute (Megatron's core-attention checkpoint, paper
    §5)."""
    fwd_comm: Collective | None = None
    bwd_comm: Collective | None = None
    overlaps_wgrad: bool = False
    """Its backward collective runs alongside the next GEMM's weight gradient (paper §6.2)."""

    @property
    def fwd_flops(self) -> float:
        """Matrix FLOPs of the forward (GEMM or fused attention); 0 for other kinds."""
        if self.gemm:
            return self.gemm.flops
        return self.attention.flops if self.attention else 0.0


@dataclass(frozen=True)
class Dims:
    """The sizes one layer's ops are built from, on one TP rank (notation of model.py)."""

    s: int
    b: int
    h: int
    a: int
    g: int
    d: int
    f: int
    t: int
    seq: int
    """The share of norm, dropout and residual work one rank does: t under SP, else 1."""

    @classmethod
    def of(cls, model: ModelSpec, parallel: ParallelSpec, micro_batch: int) -> "Dims":
        return cls(
            model.seq_len,
            micro_batch,
            model.hidden,
            model.heads,
            model.groups,
            model.head_size,
            model.ffn,
            parallel.tp,
            parallel.tp if parallel.sequence_parallel else 1,
        )

    @property
    def x(self) -> float:
        """Bytes of one activation tensor [s, b, h], 16-bit."""
        return BYTES_16BIT * self.s * self.b * self.h

    def heads_bytes(self, heads: int) -> float:
        """Bytes of a 16-bit [s, b, heads, d] tensor, unsharded."""
        return BYTES_16BIT * self.s * self.b * heads * self.d


def stored_bytes(saved: Saved, parallel: ParallelSpec) -> float:
    """Bytes of one saved tensor on one TP rank."""
    split = saved.shard == "tp" or (saved.shard == "sp" and parallel.sequence_parallel)
    return saved.bytes / parallel.tp if split else saved.bytes


def stored_params(weight: Weight, tp: int) -> float:
    """Elements of one weight on one TP rank."""
    return weight.numel / tp if weight.shard == "tp" else weight.numel


# ---------------------------------------------------------------------------- shared pieces
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
    """Backward-only: autograd sums the two gradients of a tensor that feeds both a norm and the
    residual branch (read two, write one)."""
    return Op(name, "residual_grad", block, bwd_bytes=3 * x_rank)


def _norm(model: ModelSpec, n: int, block: str, dm: Dims) -> Op:
    """Pre-norm of a block: one read and one write forward, three tensors backward; saves its
    input. LayerNorm has a weight and a bias, RMSNorm a weight only; both replicated over TP."""
    params = (2 if model.norm == "layernorm" else 1) * dm.h
    return Op(
        f"{model.norm}_{n}",
        model.norm,
        block,
        fwd_bytes=2 * dm.x / dm.seq,
        bwd_bytes=3 * dm.x / dm.seq,
        saves=(Saved(f"{model.norm}_{n} input", dm.x, "sp"),),
        weights=(Weight(f"{model.norm}_{n}", params, "none"),),
    )


def _linear(
    name: str,
    block: str,
    m: int,
    n_full: int,
    k_full: int,
    bias: bool,
    column: bool,
    saved: Saved,
    t: int,
) -> Op:
    """A TP linear layer: column-parallel splits its output n, row-parallel its input k (Megatron
    mpu/layers.py). A column layer's bias is split with it; a row layer's is whole and added
    after the reduction (by the residual kernel, not here)."""
    gemm = Gemm(m, n_full // t, k_full) if column else Gemm(m, n_full, k_full // t)
    weights = (Weight(name, n_full * k_full, "tp"),)
    if bias:
        weights += (Weight(name + " bias", n_full, "tp" if column else "none"),)
    return Op(name, "gemm", block, gemm=gemm, saves=(saved,), weights=weights)


def _residual(model: ModelSpec, n: int, block: str, dm: Dims) -> Op:
    """The block's exit into the residual stream. With dropout: Megatron's fused
    bias-dropout-add (read the branch and the residual, write the sum and a 1-byte mask; its
    backward reads the gradient and mask, writes the branch gradient). Without dropout: a plain
    residual add (read two, write one) whose backward only reduces a bias gradient, if any."""
    x = dm.x / dm.seq
    if model.dropout > 0:
        mask = Saved(f"{block} dropout mask", BYTES_MASK * dm.s * dm.b * dm.h, "sp")
        return Op(
            f"bias-dropout-add {n}",
            "bias_dropout_add",
            block,
            fwd_bytes=3 * x + x / 2,
            bwd_bytes=3 * x + x / 2,
            saves=(mask,),
        )
    bias = model.linear_bias("projection" if block == "attention" else "mlp")
    return Op(
        f"residual add {n}", "residual_add", block, fwd_bytes=3 * x, bwd_bytes=x if bias else 0.0
    )


# ---------------------------------------------------------------------------- attention
def _core_unfused(model: ModelSpec, dm: Dims) -> tuple[Op, ...]:
    """Megatron's unfused core attention: QKᵀ, fused scale-mask-softmax, dropout, attention over
    V, permute back to [s, b, h]. Saves the s x s softmax output (and dropout mask and output).
    With g < a, Megatron-Core repeats K and V to a heads first (`repeat_interleave`, attention.py),
    so what the batched GEMMs save is a heads wide."""
    s, b, a, d, t = dm.s, dm.b, dm.a, dm.d, dm.t
    as2b = a * s * s * b
    dropout = model.dropout > 0
    ops = []
    if dm.g < a:
        kv, wide = 2 * dm.heads_bytes(dm.g), 2 * dm.heads_bytes(a)
        ops.append(
            Op(
                "repeat K, V",
                "copy",
                "attention",
                fwd_bytes=(kv + wide) / t,
                bwd_bytes=(kv + wide) / t,
                selective=True,
            )
        )
    ops += [
        Op(
            "qk^T",
            "attention_gemm",
            "attention",
            gemm=Gemm(s, s, d, b * a // t),
            selective=True,
            saves=(Saved("Q, K", 2 * dm.heads_bytes(a), "tp"),),
        ),
        Op(
            "softmax",
            "softmax",
            "attention",
            fwd_bytes=2 * BYTES_16BIT * as2b / t,
            bwd_bytes=3 * BYTES_16BIT * as2b / t,
            selective=True,
            saves=(Saved("softmax output", BYTES_16BIT * as2b, "tp", selective=True),),
        ),
    ]
    if dropout:
        ops.append(
            Op(
                "attention dropout",
                "dropout",
                "attention",
                fwd_bytes=(2 * BYTES_16BIT + BYTES_MASK) * as2b / t,
                bwd_bytes=(2 * BYTES_16BIT + BYTES_MASK) * as2b / t,
                selective=True,
                saves=(Saved("softmax dropout mask", BYTES_MASK * as2b, "tp", selective=True),),
            )
        )
    # attention over V saves its probabilities: the dropout output, or (no dropout) the softmax
    # output already counted above.
    probs = (Saved("dropout output", BYTES_16BIT * as2b, "tp", selective=True),) if dropout else ()
    ops += [
        Op(
            "attention over V",
            "attention_gemm",
            "attention",
            gemm=Gemm(s, d, s, b * a // t),
            selective=True,
            saves=probs + (Saved("V", dm.heads_bytes(a), "tp"),),
        ),
        Op(
            "context permute",
            "copy",
            "attention",
            fwd_bytes=2 * dm.heads_bytes(a) / t,
            bwd_bytes=2 * dm.heads_bytes(a) / t,
            selective=True,
        ),
    ]
    return tuple(ops)


def _core_flash(model: ModelSpec, dm: Dims) -> tuple[Op, ...]:
    """FlashAttention (Dao et al. 2022, §3.1; FA2 arXiv 2307.08691): no s x s tensor exists;
    backward recomputes the scores from Q, K, V and the saved log-sum-exp (fp32, one per query
    row and head). Saved: Q, K, V (g heads wide: GQA is native) and the LSE; its output is saved
    by the projection that consumes it. Megatron-Core's selective recompute checkpoints core
    attention whatever its kernel, keeping Q, K, V and re-running the forward, so only the LSE is
    dropped."""
    att = Attention(dm.b * dm.a // dm.t, dm.s, dm.d, causal=True)
    lse = BYTES_FP32 * dm.s * dm.b * dm.a
    return (
        Op(
            "flash attention",
            "flash_attention",
            "attention",
            attention=att,
            selective=True,
            saves=(
                Saved("Q", dm.heads_bytes(dm.a), "tp"),
                Saved("K, V", 2 * dm.heads_bytes(dm.g), "tp"),
                Saved("log-sum-exp", lse, "tp", selective=True),
            ),
        ),
    )


def _rope(dm: Dims) -> Op:
    """Rotary embedding applied to Q and K (Megatron-Core's fused RoPE): read and write both
    forward and backward; it saves nothing but the (tiny) angles."""
    qk = (dm.heads_bytes(dm.a) + dm.heads_bytes(dm.g)) / dm.t
    return Op("rotary embedding", "rope", "attention", fwd_bytes=2 * qk, bwd_bytes=2 * qk)


def attention_ops(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """Norm, QKV projection (a query and 2g key/value heads of size d, Megatron-Core's
    `query_projection_size + 2 * kv_projection_size`), positions, core attention, output
    projection, residual (paper §4.1 Fig. 2, with GQA per arXiv 2305.13245)."""
    sb, t, x = dm.s * dm.b, dm.t, dm.x
    qkv_out = dm.heads_bytes(dm.a + 2 * dm.g)
    ops = [
        _norm(model, 1, "attention", dm),
        _residual_grad("residual 1", "attention", x / dm.seq),
        _tp_comms("attention entry", "attention", x, parallel, entry=True),
        _linear(
            "qkv",
            "attention",
            sb,
            (dm.a + 2 * dm.g) * dm.d,
            dm.h,
            model.linear_bias("qkv"),
            True,
            Saved("qkv input", x, "sp"),
            t,
        ),
    ]
    if model.linear_bias("qkv"):
        # Megatron's column-parallel linear adds its bias in a separate kernel (mpu/layers.py,
        # `output = output + bias`); backward reduces the output gradient for the bias gradient.
        ops.append(
            Op("qkv bias", "bias", "attention", fwd_bytes=2 * qkv_out / t, bwd_bytes=qkv_out / t)
        )
    if model.position == "rope":
        ops.append(_rope(dm))
    ops += _core_flash(model, dm) if model.attention == "flash" else _core_unfused(model, dm)
    ops += [
        _linear(
            "projection",
            "attention",
            sb,
            dm.h,
            dm.a * dm.d,
            model.linear_bias("projection"),
            False,
            Saved("projection input", dm.heads_bytes(dm.a), "tp"),
            t,
        ),
        _tp_comms("attention exit", "attention", x, parallel, entry=False),
        _residual(model, 1, "attention", dm),
    ]
    return tuple(ops)


# ---------------------------------------------------------------------------- MLP
ACTIVATIONS = {
    # kind: (forward bytes, backward bytes, saved input width), in units of one 16-bit [s, b, f]
    # tensor on one rank.
    # Megatron's fused bias-GeLU: read the input, write the output; backward reads the input and
    # the gradient, recomputes tanh, writes the gradient (4, with the bias-gradient read).
    "gelu": (2, 4, 1),
    # SwiGLU (Shazeer 2020): read gate and up (2f), write f; backward reads both and the
    # gradient, writes both gradients; saves its 2f-wide input (Megatron-Core `bias_swiglu_impl`).
    "swiglu": (3, 5, 2),
    # relu(x)² (So et al. 2021): read, write; backward reads input and gradient, writes one.
    "squared_relu": (2, 3, 1),
}


def _activation(model: ModelSpec, dm: Dims) -> Op:
    fwd, bwd, width = ACTIVATIONS[model.mlp]
    sbf = BYTES_16BIT * dm.s * dm.b * dm.f
    name = {"gelu": "bias-gelu" if model.linear_bias("mlp") else "gelu"}.get(model.mlp, model.mlp)
    label = {"gelu": "GeLU", "swiglu": "SwiGLU", "squared_relu": "squared-ReLU"}[model.mlp]
    return Op(
        name,
        model.mlp,
        "mlp",
        fwd_bytes=fwd * sbf / dm.t,
        bwd_bytes=bwd * sbf / dm.t,
        saves=(Saved(f"{label} input", width * sbf, "tp"),),
    )


def mlp_ops(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """Norm, first projection (2f wide when gated: "If this is a gated linear unit we double the
    output width", Megatron-Core mlp.py, arXiv 2002.05202), activation, second projection,
    residual. The paper's GeLU MLP names its GEMMs h->4h and 4h->h."""
    sb, t, x, f = dm.s * dm.b, dm.t, dm.x, dm.f
    fc1, fc2 = ("h->4h", "4h->h") if model.mlp == "gelu" else ("fc1", "fc2")
    bias = model.linear_bias("mlp")
    return (
        _norm(model, 2, "mlp", dm),
        _residual_grad("residual 2", "mlp", x / dm.seq),
        _tp_comms("mlp entry", "mlp", x, parallel, entry=True),
        _linear(
            fc1,
            "mlp",
            sb,
            (2 if model.gated else 1) * f,
            dm.h,
            bias,
            True,
            Saved(f"{fc1} input", x, "sp"),
            t,
        ),
        _activation(model, dm),
        _linear(
            fc2,
            "mlp",
            sb,
            dm.h,
            f,
            bias,
            False,
            Saved(f"{fc2} input", BYTES_16BIT * dm.s * dm.b * f, "tp"),
            t,
        ),
        _tp_comms("mlp exit", "mlp", x, parallel, entry=False),
        _residual(model, 2, "mlp", dm),
    )


def build_layer(model: ModelSpec, parallel: ParallelSpec, micro_batch: int) -> tuple[Op, ...]:
    """The ops of one layer on one TP rank for one microbatch: attention block, then MLP block."""
    dm = Dims.of(model, parallel, micro_batch)
    return (*attention_ops(model, parallel, dm), *mlp_ops(model, parallel, dm))


# ---------------------------------------------------------------------------- end stages
def layer_input(model: ModelSpec, micro_batch: int) -> Saved:
    """What full recompute keeps per layer: its input, 2sbh (paper §5; sequence-sharded under
    SP)."""
    return Saved("layer input", BYTES_16BIT * model.seq_len * micro_batch * model.hidden, "sp")


def embedding_saves(model: ModelSpec, micro_batch: int) -> tuple[Saved, ...]:
    """First stage, per microbatch: the embedding dropout mask, sbh (paper §4.3), if dropout."""
    if model.dropout <= 0:
        return ()
    return (
        Saved(
            "embedding dropout mask", BYTES_MASK * model.seq_len * micro_batch * model.hidden, "sp"
        ),
    )


def output_saves(model: ModelSpec, tp: int, micro_batch: int) -> tuple[Saved, ...]:
    """Last stage, per microbatch: final norm input 2sbh, projection input 2sbh, fp32 logits
    4sbv (§4.3)."""
    sb = model.seq_len * micro_batch
    return (
        Saved("final norm input", BYTES_16BIT * sb * model.hidden, "sp"),
        Saved("output projection input", BYTES_16BIT * sb * model.hidden, "sp"),
        Saved("fp32 logits", BYTES_FP32 * sb * model.padded_vocab(tp), "tp"),
    )


def embedding_weights(model: ModelSpec, tp: int) -> tuple[Weight, ...]:
    """The first stage's tables: vocab-parallel word embeddings (padded vocabulary) and, for
    learned positions, a replicated s x h position table."""
    words = (Weight("word embeddings", model.padded_vocab(tp) * model.hidden, "tp"),)
    return words + (
        (Weight("position embeddings", model.seq_len * model.hidden, "none"),)
        if model.position == "learned"
        else ()
    )


def output_weights(model: ModelSpec, tp: int, pipelined: bool) -> tuple[Weight, ...]:
    """The last stage's final norm and output layer. A tied output layer reuses the word
    embeddings, but with pp > 1 the last stage keeps its own copy (Megatron's
    `shared_embedding`, synchronised by an all-reduce)."""
    norm = Weight("final norm", (2 if model.norm == "layernorm" else 1) * model.hidden, "none")
    if model.tied_embeddings and not pipelined:
        return (norm,)
    return (norm, Weight("output layer", model.padded_vocab(tp) * model.hidden, "tp"))
