"""FLOPs per iteration, summed over the op list (layer.py), for MFU and HFU.

Model FLOPs follow Megatron-Core r0.8's `num_floating_point_operations`
(megatron/training/training.py @baf94af3, L73-107): every GEMM of a layer and the logits, forward
once and backward twice, attention scores over the whole s x s square (no causal discount), the
padded vocabulary. For the paper's GPT that is its Eq. 7, 72 B L s h² (1 + s/6h + v/12hL).

Hardware FLOPs add what recompute re-runs, counted as the `simsp run --json` contract
(docs/architecture.md) and the paper's Table 5 count it: full recompute one more forward of
every layer; selective recompute the paper's Eq. 8 as printed, which counts the re-run core
attention three times (forward and backward again; reference/paper.md §6 notes that its text
implies once), where core_attn is among the recompute modules, and one forward of whatever the
other modules re-run (norms, activations, MLA's up-projections, a whole MLP or MoE layer).
FlashAttention's own internal recomputation in its backward is not counted, as no Megatron
figure counts it.
"""

from functools import lru_cache

from simsp.model import stack
from simsp.model.blocks.checkpoint import rerun as rerun_op
from simsp.model.layer import Gemm, build_layer, reruns
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec

MODEL_FLOPS_FORMULA = (
    "megatron-core r0.8 num_floating_point_operations (op list; = paper Eq. 7 for GPT)"
)
HARDWARE_FLOPS_FORMULA = (
    "model FLOPs + recompute (full: 1 forward; selective: paper Eq. 8 as printed)"
)
RECOMPUTE_PASSES = {"none": 0, "full": 1, "selective": 3, "op": 1}
"""Forward-equivalents counted for each re-run op (see the module docstring)."""


@lru_cache(maxsize=4096)
def _layer_forward(model: ModelSpec, recompute: str, modules: str = "core_attn") -> tuple:
    """(forward FLOPs of one layer, the forward-equivalents its recompute re-runs), one
    sequence: RECOMPUTE_PASSES x the re-run ops; under selective recompute the core attention
    as Eq. 8 counts it where `modules` name it, and one forward of each op the other modules
    re-run (Megatron-Core's recompute_modules)."""
    par = ParallelSpec(recompute=recompute, recompute_modules=modules)
    ops = build_layer(model, par, 1)
    forward = sum(op.fwd_flops for op in ops)
    if recompute == "op":  # per-op SAC: its re-run ops and GEMM shares (blocks/checkpoint.py)
        rerun = sum(rerun_op(op).fwd_flops for op in ops if op.recompute == "op")
    elif recompute == "selective":
        attention = sum(op.fwd_flops for op in ops if op.selective and reruns(op, par))
        others = sum(op.fwd_flops for op in ops if not op.selective and reruns(op, par))
        return forward, RECOMPUTE_PASSES[recompute] * attention + others
    else:
        rerun = forward if recompute == "full" else 0.0
    return forward, RECOMPUTE_PASSES[recompute] * rerun


def _logits_forward(model: ModelSpec, tp: int) -> float:
    """The output layer's GEMM, one sequence, over the padded vocabulary."""
    return Gemm(model.seq_len, model.padded_vocab(tp), model.hidden).flops


def _layers_forward(
    model: ModelSpec, recompute: str, modules: str = "core_attn"
) -> tuple[float, float]:
    """(forward FLOPs of every layer, of what recompute re-runs in them), summed over the stack:
    L x one layer's where every layer is alike."""
    if stack.uniform(model):
        forward, rerun = _layer_forward(model, recompute, modules)
        return model.layers * forward, model.layers * rerun
    both = [
        (n * f, n * r)
        for kind, n in stack.counts(model)
        for f, r in (_layer_forward(kind, recompute, modules),)
    ]
    return sum(f for f, _ in both), sum(r for _, r in both)


def model_flops(model: ModelSpec, global_batch: int, tp: int = 1) -> float:
    """3 x (the layers' forward + logits) x B sequences."""
    layers, _ = _layers_forward(model, "none")
    return 3.0 * (layers + _logits_forward(model, tp)) * global_batch


def hardware_flops(
    model: ModelSpec,
    global_batch: int,
    recompute: str,
    tp: int = 1,
    recomputed_layers: int | None = None,
    modules: str = "core_attn",
) -> float:
    """Model FLOPs plus the forward-equivalents recompute re-runs (_layer_forward), in every
    layer or in the `recomputed_layers` that recompute (recompute_num_layers; over layers that
    differ, their mean re-run each); `modules` the selective recompute's modules."""
    if stack.uniform(model):
        per_layer = _layer_forward(model, recompute, modules)[1]
    else:
        per_layer = _layers_forward(model, recompute, modules)[1] / model.layers
    layers = model.layers if recomputed_layers is None else recomputed_layers
    return model_flops(model, global_batch, tp) + layers * per_layer * global_batch


def utilization(flops: float, seconds: float, gpus: int, peak_tflops: float) -> float:
    """FLOPs over time x GPUs x peak, as a fraction."""
    return flops / (seconds * gpus * peak_tflops * 1e12)
