"""Work outside the transformer layers: embedding, output layer and loss, pipeline sends,
gradient synchronisation and the optimizer step, in seconds on one rank.
"""

from simsp.cost import CostModel
from simsp.cost.compute import CROSS_ENTROPY_KIND, FORWARD, gemm_grad_shapes
from simsp.cost.gradient_sync import chunk_gradients
from simsp.model.blocks.elementwise import elementwise_layer
from simsp.model.blocks.loss import CROSS_ENTROPY
from simsp.model.layer import Gemm, Op
from simsp.model.params import linear_params_per_rank, stage_expert_params, stage_params
from simsp.spec.layout import GRADIENT_GROUP, Layout, Placement
from simsp.spec.precision import cast_bytes
from simsp.spec.workload import Workload
from simsp.units import BYTES_16BIT, BYTES_FP32

GRAD_AVERAGE_BYTES = 8.0
"""Megatron-LM's DDP wrapper divides the whole fp32 gradient buffer by the DP size before its
all-reduce, whatever that size (megatron/model/distributed.py `allreduce_gradients`: read 4,
write 4 a parameter)."""

GRAD_ZERO_BYTES = 4.0
"""The gradient buffer is zeroed for the next iteration, the whole of it: every parameter the
rank holds, not only its optimizer shard (megatron/core/distributed DistributedDataParallel
.zero_grad_buffer: each buffer's reset() zeroes its grad_data)."""

ADAM_BYTES = 28.0
"""Fused Adam, a parameter: reads the fp32 grad, master, m and v (16), writes master, m, v (12)."""

STEP_OTHER_BYTES = 10.0
"""The rest of the step, a parameter of the shard: the global gradient norm reads the grad (4);
the fp32 master is copied into the bf16 weight (read 4, write 2)."""

EMBEDDING_GRAD_BYTES = 12.0
"""A lookup table's gradient, per element and microbatch: torch's embedding backward zeroes a
dense bf16 gradient of the whole (word-shard or position) table (2) before scattering into it,
and Megatron's DDP hook adds it into the fp32 main grad (`main_grad.add_(grad)`: read 2 + 4,
write 4). The tied output layer's gradient is fused into the main grad by its GEMM instead."""


def _sbh(w: Workload) -> int:
    """Elements of one activation [s, b, h] on one context-parallel rank (s/c tokens)."""
    return w.model.seq_len // w.parallel.cp * w.training.micro_batch * w.model.hidden


def p2p_bytes(w: Workload) -> float:
    """One pipeline message: the activation [s, b, h] split over TP ranks (Megatron's
    scatter-gather optimisation, or SP's own sharding), 16-bit."""
    return BYTES_16BIT * _sbh(w) / w.parallel.tp


def p2p_s(w: Workload, cost: CostModel, place: Placement) -> float:
    """A send between neighbouring stages; without SP the receiver all-gathers the TP pieces."""
    t = cost.network.p2p_s(p2p_bytes(w), place.pp_neighbours_share_node)
    if not w.parallel.sequence_parallel and w.parallel.tp > 1:
        t += _tp_collective(w, cost, place, "all_gather", BYTES_16BIT * _sbh(w))
    return t


def _tp_collective(w, cost, place, op, nbytes):
    return cost.network.group_s(op, nbytes, place.group("tp"))


def embedding_s(w: Workload, cost: CostModel, place: Placement) -> tuple[float, float]:
    """(forward, backward) of the first stage's embedding: vocab-parallel lookup, its TP
    all-reduce (reduce-scatter under SP), then one fused kernel adding learned positions and
    applying dropout where the model has them; backward scatters the token gradients into dense
    table gradients and adds those to the fp32 main grads."""
    m = w.model
    x = BYTES_16BIT * _sbh(w)
    seq = w.parallel.tp if w.parallel.sequence_parallel else 1
    comm = _tp_collective(w, cost, place, "reduce_scatter" if seq > 1 else "all_reduce", x)
    mb = cost.compute.memory_bound
    learned, dropout = m.position == "learned", m.dropout > 0
    # position add: read words and positions, write (3x); dropout: read, write, 1-byte mask (2.5x);
    # fused, the add's output is the dropout's input (3.5x)
    after = (3 * x if learned else 2 * x) + x / 2 if dropout else (3 * x if learned else 0.0)
    fwd = mb(x).seconds + comm + (mb(after / seq).seconds if after else 0.0)
    bwd = mb(2.5 * x / seq).seconds if dropout else 0.0
    bwd += _tp_collective(w, cost, place, "all_gather", x) if seq > 1 else 0.0
    bwd += mb(x + 2 * x).seconds  # mask the other shards' tokens, scatter-add the token gradients
    tables = (
        m.padded_vocab(w.parallel.tp) // w.parallel.tp + (m.seq_len if learned else 0)
    ) * m.hidden
    bwd += mb(EMBEDDING_GRAD_BYTES * tables).seconds
    return fwd, bwd


def output_s(w: Workload, cost: CostModel, place: Placement) -> tuple[float, float]:
    """(forward, backward) of the last stage: final layer-norm, logits GEMM over the vocab shard,
    then the vocab-parallel cross-entropy the run's implementation computes
    (training.cross_entropy, simsp/model/blocks/loss.py) with its small TP collectives."""
    m, t = w.model, w.parallel.tp
    sb = m.seq_len // w.parallel.cp * w.training.micro_batch
    seq = t if w.parallel.sequence_parallel else 1
    x = BYTES_16BIT * sb * m.hidden
    logits = sb * m.padded_vocab(t) / t
    g = Gemm(sb, m.padded_vocab(t) // t, m.hidden)
    cm = cost.compute
    gather = _tp_collective(w, cost, place, "all_gather", x) if seq > 1 else 0.0
    norm = final_norm(m.norm, x / seq, w.training.knob("elementwise"))
    fwd = cm.memory_bound(norm.fwd_bytes, m.norm, kernels=norm.fwd_kernels).seconds
    fwd += gather + cm.gemm(g, FORWARD).seconds
    ce_fwd, ce_bwd = cross_entropy_s(w, cost, place, logits)
    fwd += ce_fwd
    (dg, dl), (wg, wl) = gemm_grad_shapes(g)
    bwd = ce_bwd + cm.gemm(dg, dl).seconds + cm.gemm(wg, wl).seconds
    bwd += (
        _tp_collective(w, cost, place, "reduce_scatter", x)
        if seq > 1
        else _tp_collective(w, cost, place, "all_reduce", x)
    )
    bwd += cm.memory_bound(norm.bwd_bytes, m.norm, True, norm.bwd_kernels).seconds
    return fwd, bwd


def final_norm(kind: str, x_rank: float, elementwise: str) -> Op:
    """The last stage's norm over one rank's [s, b, h] bytes, as the run's stack runs it."""
    op = Op("final norm", kind, "output", fwd_bytes=2 * x_rank, bwd_bytes=3 * x_rank)
    return elementwise_layer((op,), elementwise)[0]


def cross_entropy_s(
    w: Workload, cost: CostModel, place: Placement, logits: float
) -> tuple[float, float]:
    """(forward, backward) of the cross-entropy over a rank's `logits`: its kernels' bytes at
    the hardware's measured rate for that implementation (MemoryBoundSpec.cross_entropy_gbps)
    or the element-wise curve, and forward's all-reduces and all-gather of per-token fp32."""
    ce = CROSS_ENTROPY[w.training.knob("cross_entropy")]
    token_floats = BYTES_FP32 * (w.model.seq_len // w.parallel.cp * w.training.micro_batch)
    kind = CROSS_ENTROPY_KIND + ce.name
    fwd = cost.compute.memory_bound(ce.forward_bytes * logits, kind).seconds
    fwd += sum(
        _tp_collective(w, cost, place, "all_reduce", n * token_floats) for n in ce.all_reduce_floats
    )
    gathered = ce.all_gather_floats * token_floats * w.parallel.tp
    fwd += _tp_collective(w, cost, place, "all_gather", gathered)
    bwd = cost.compute.memory_bound(ce.backward_bytes * logits, kind).seconds
    return fwd, bwd


def grad_bytes(w: Workload) -> float:
    """Bytes of one parameter's gradient as it is reduced (parallel.grad_reduce_in_fp32)."""
    return BYTES_FP32 if w.parallel.grad_reduce_in_fp32 else BYTES_16BIT


def dp_allreduce_s(
    w: Workload, cost: CostModel, lay: Layout, params: float, expert_params: float = 0.0
) -> float:
    """A stage's gradient reduction over the DP group, its CP peers included (Megatron-Core DDP
    reduces main_grad over dp x cp): an all-reduce, or with the distributed optimizer a
    reduce-scatter, each rank keeping the shard it updates. The routed experts' gradients
    (expert_params of the stage's params) reduce over their own expert-data-parallel group
    (Megatron-Core keeps them in a buffer of their own, reduced over
    get_expert_data_parallel_group), one after the other on the same stream."""
    op = "reduce_scatter" if w.parallel.distributed_optimizer else "all_reduce"
    return sum(
        cost.network.group_s(op, grad_bytes(w) * n, group)
        for n, group in _gradient_groups(lay, params, expert_params)
    )


def _gradient_groups(lay: Layout, params: float, expert_params: float) -> tuple:
    """(parameters, group) of each parameter class: the dense ones over dp x cp, the routed
    experts' over edp (absent for a dense model, so its sums stay as they were)."""
    dense = (params - expert_params, lay.group("-".join(GRADIENT_GROUP)))
    if not expert_params:
        return (dense,)
    return (dense, (expert_params, lay.group("edp")))


def param_gather_s(
    w: Workload, cost: CostModel, lay: Layout, params: float, stage: int = 0, expert: float = 0.0
) -> float:
    """With the distributed optimizer, the all-gather of a stage's updated 16-bit parameters
    from the shards each rank stepped (Megatron-Core `start_param_sync`), the routed experts'
    (`expert` of `params`) over their expert-data-parallel group; 0 without it."""
    if not w.parallel.distributed_optimizer:
        return 0.0
    total = gathered_bytes(w, stage, params)
    groups = _gradient_groups(lay, params, expert)
    if len(groups) == 1:
        return cost.network.group_s("all_gather", total, groups[0][1])
    return sum(cost.network.group_s("all_gather", total * n / params, g) for n, g in groups)


def chunk_param_gather_s(
    w: Workload, cost: CostModel, lay: Layout, params: float, stage: int
) -> tuple[float, ...]:
    """A stage's parameter all-gather split as Megatron-Core sends it: per model chunk (each its
    own DDP), per bucket group of it, one coalesced all-gather each (param_and_grad_buffer.py
    start_param_sync @c550cf6, core_v0.13.0); a chunk's bytes are its share of the stage's
    parameters (gradient_sync.chunk_gradients), cut evenly into its buckets."""
    group = lay.group("-".join(GRADIENT_GROUP))
    total = gathered_bytes(w, stage, params)
    return tuple(
        buckets * cost.network.group_s("all_gather", total * share / buckets, group)
        for share, buckets in chunk_gradients(w, stage)
    )


def gathered_bytes(w: Workload, stage: int, params: float) -> float:
    """Bytes of a stage's parameter all-gather: 16-bit, with FP8 primary weights the linear
    layers' in FP8."""
    per_linear = w.training.numerics.gathered_bytes()
    if per_linear == BYTES_16BIT:
        return BYTES_16BIT * params
    linear = w.parallel.stage_layers(w.model.layers, stage) * linear_params_per_rank(
        w.model, w.parallel
    )
    return BYTES_16BIT * (params - linear) + per_linear * linear


def embedding_sync_s(w: Workload, cost: CostModel) -> float:
    """All-reduce of the tied word-embedding gradient between the first and last stage."""
    if w.parallel.last_stage == 0 or not w.model.tied_embeddings:
        return 0.0
    nbytes = BYTES_FP32 * w.model.padded_vocab(w.parallel.tp) * w.model.hidden / w.parallel.tp
    return cost.network.collective_s("all_reduce", nbytes, 2, 1)


def optimizer_s(w: Workload, cost: CostModel, stage: int) -> float:
    """Gradient averaging and the optimizer step over the parameters one rank owns (the step over
    its dp x cp shard with the distributed optimizer); Adam at its measured rate where there is
    one."""
    params = stage_params(w.model, w.parallel, stage)
    expert = stage_expert_params(w.model, w.parallel, stage) if w.model.experts else 0
    shard = (params - expert) / w.parallel.optimizer_shards
    shard += expert / w.parallel.expert_optimizer_shards if expert else 0.0
    if w.parallel.fsdp:  # gradients arrive sharded: every pass is over the shard
        params = shard
    mb = cost.compute.memory_bound
    step = mb((GRAD_AVERAGE_BYTES + GRAD_ZERO_BYTES) * params + STEP_OTHER_BYTES * shard).seconds
    return step + mb(ADAM_BYTES * shard, "adam").seconds + fp8_weight_cast_s(w, cost, stage)


def fp8_weight_cast_s(w: Workload, cost: CostModel, stage: int) -> float:
    """Quantizing the stage's updated linear weights to their cached FP8 copies, once an
    iteration (TE casts them in the first microbatch's forward, `is_first_microbatch`; priced
    here beside the step, as the same bytes on the same stream). Zero under BF16."""
    numerics = w.training.numerics
    if not (numerics.fp8 and numerics.fp8_recipe.caches_weights):
        return 0.0  # torchao casts its weights in every call (model/blocks/fp8.py)
    layers = w.parallel.stage_layers(w.model.layers, stage)
    elements = layers * linear_params_per_rank(w.model, w.parallel)
    return cost.compute.memory_bound(cast_bytes(elements, numerics.fp8_recipe), "fp8_cast").seconds


AMAX_FWD_BYTES = 48.0
"""Forward amaxes a layer adds to delayed scaling's reduction: fp32, 3 FP8 tensors of each of its
4 linear layers (TE 8382eed fp8.py: the global amax buffer of the autocast region)."""
AMAX_BWD_BYTES = 32.0
"""Backward amaxes a layer adds: fp32, 2 of each linear layer."""


def amax_reduction_s(w: Workload, cost: CostModel, lay: Layout, layers: int):
    """(forward, backward) seconds of delayed scaling's amax all-reduces in one pass of a chunk
    of `layers` layers: Megatron-Core wraps each chunk's TransformerBlock in one fp8_autocast
    (core_v0.13.0 transformer_block.py lines 551-560), whose exit all-reduces (MAX, blocking,
    async_op=False) the region's forward amaxes over the amax-reduction group, tp x dp x cp
    (parallel_state.get_amax_reduction_group(with_context_parallel=True)); the backward of
    its first FP8 module does the same with the backward amaxes (TE 8382eed fp8.py lines
    367-417, 468-477; layernorm_linear.py lines 484, 956). Zero for other recipes, BF16 or
    a group of one. Full recompute's checkpointed regions reduce once more in backward (TE
    distributed.py lines 415-421): left out."""
    numerics = w.training.numerics
    if not (numerics.fp8 and numerics.fp8_recipe.reduces_amax_history) or layers <= 0:
        return 0.0, 0.0
    group = lay.group("tp-dp-cp")
    if group.size == 1:
        return 0.0, 0.0
    net = cost.network
    return (
        net.group_s("all_reduce", AMAX_FWD_BYTES * layers, group),
        net.group_s("all_reduce", AMAX_BWD_BYTES * layers, group),
    )
