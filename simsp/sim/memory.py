"""HBM per GPU, derived from the layer's op list: activations, weights, gradients, optimizer state.

Activations per layer sum the tensors the ops save for backward (model/saved_bytes.py, from
model/layer.py's op list), so the paper's Table 2 rows follow from the op list. A stage holds
activations for the microbatches its schedule has in flight; the first and last stages add the
embedding and output-layer tensors (paper §4.3). Weights + gradients + optimizer take 18 bytes
a parameter, or 6 + 12/d with the distributed optimizer (Megatron-LM docs, dist_optimizer.md).
"""

from dataclasses import dataclass
from functools import lru_cache

from simsp.cost import fsdp
from simsp.model import layer as L
from simsp.model import stack
from simsp.model.blocks.loss import CROSS_ENTROPY
from simsp.model.params import linear_params_per_rank, stage_expert_params, stage_params
from simsp.model.saved_bytes import (
    activation_per_layer_bytes,
    chunk_activation_bytes,
    end_stage_bytes,
    stage_output_bytes,
    weight_grad_bytes,
)
from simsp.sim.schedule import (
    build,
    stage_and_chunk,
    virtual_stage,
    warmup_1f1b,
    warmup_interleaved,
)
from simsp.sim.walk import HOLDS
from simsp.spec.hardware import HardwareSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.workload import Workload
from simsp.units import BYTES_16BIT

_CACHE_SIZE = 4096


@dataclass(frozen=True)
class StageMemory:
    """Peak HBM of one pipeline stage (one representative TP/DP rank)."""

    stage: int
    weights_and_optimizer_bytes: float
    activation_bytes: float

    @property
    def peak_bytes(self) -> float:
        """Weights, gradients, optimizer state and the activation peak together."""
        return self.weights_and_optimizer_bytes + self.activation_bytes


@dataclass(frozen=True)
class MemoryReport:
    """The `memory` object of the JSON contract."""

    capacity_bytes: int
    activation_per_layer_bytes: float
    stages: tuple[StageMemory, ...]
    reserve_bytes: int = 0
    """What the run must leave free beside its peak (HardwareSpec.reserve_bytes): the CUDA
    context, NCCL's buffers and the allocator's share."""

    @property
    def peak_bytes(self) -> float:
        """The most loaded stage's peak."""
        return max(s.peak_bytes for s in self.stages)

    @property
    def fits(self) -> bool:
        """Whether every stage fits in HBM with the reserve left free."""
        return self.peak_bytes + self.reserve_bytes <= self.capacity_bytes

    @property
    def within_reserve(self) -> bool:
        """Does not fit, but only by the reserve: the peak alone is within the capacity."""
        return not self.fits and self.peak_bytes <= self.capacity_bytes

    def to_dict(self) -> dict:
        """The `memory` object of the `simsp run --json` contract (docs/architecture.md)."""
        return {
            "capacity_bytes": self.capacity_bytes,
            "fits": self.fits,
            "reserve_bytes": self.reserve_bytes,
            "peak_bytes": round(self.peak_bytes),
            "stages": [
                {
                    "stage": s.stage,
                    "peak_bytes": round(s.peak_bytes),
                    "weights_and_optimizer_bytes": round(s.weights_and_optimizer_bytes),
                    "activation_bytes": round(s.activation_bytes),
                }
                for s in self.stages
            ],
            "activation_per_layer_bytes": round(self.activation_per_layer_bytes),
        }


def in_flight_chunks(schedule: str, p: int, m: int, v: int, stage: int) -> int:
    """Chunk-microbatches whose activations a stage holds at its peak: warm-up forwards plus one.

    1F1B: p - stage (PipeDream-flush); GPipe: all m; interleaved: Megatron's warm-up plus one,
    which on stage 0 is L(1 + (p-1)/(pv)) layers (paper §4.2.3).
    """
    if schedule == "gpipe":
        return m
    if schedule == "interleaved" and v > 1:
        return min(warmup_interleaved(p, m, v, stage) + 1, m * v)
    return min(warmup_1f1b(p, m, stage) + 1, m)


def weight_bytes_per_param(parallel: ParallelSpec, shards: int = 0) -> float:
    """18 bytes (bf16 weight, fp32 grad, fp32 master, two fp32 Adam moments), or 6 + 12/(d c)
    sharded over the data-parallel ranks and their context-parallel peers (Megatron-Core
    docs/source/api-guide/dist_optimizer.md), 6 + 10/(d c) with 16-bit master remainders
    (store_param_remainders); 2 fewer with bf16 gradients. `shards`: over another group than
    d x c (a routed expert's state over edp)."""
    if parallel.fsdp:
        return fsdp.weight_bytes_per_param(parallel.optimizer_shards)
    grad = 0.0 if parallel.grad_reduce_in_fp32 else -2.0
    if not parallel.distributed_optimizer:
        return grad + 18.0
    state = 10.0 if parallel.store_param_remainders else 12.0
    return grad + 6 + state / (shards or parallel.optimizer_shards)


def steady_microbatches(p: int, m: int) -> int:
    """The microbatches whose interleaved walk finds every held-count triple a longer run has:
    past warm-up, Megatron's interleaved schedule repeats a period of p v actions, so the counts
    after each forward are those of 3p microbatches once m is a multiple of p beyond it (checked
    against the whole walk in tests/test_memory.py); a walk of m = 10^7 is then 3p long."""
    return 3 * p if m > 3 * p and m % p == 0 else m


@lru_cache(maxsize=_CACHE_SIZE)
def interleaved_counts(p: int, m: int, v: int, stage: int) -> tuple[tuple[int, int, int], ...]:
    """(chunk-microbatches, of them chunk 0, of them chunk v-1) held after each forward of an
    interleaved stage, walking its schedule; only the non-dominated triples (one of them is the
    peak whatever the bytes of the end chunks)."""
    held = [0, 0, 0]
    seen = set()
    for a in build("interleaved", p, m, v)[stage]:
        d = 1 if a.kind == "F" else -1
        held[0] += d
        held[1] += d * (a.chunk == 0)
        held[2] += d * (a.chunk == v - 1)
        if d > 0:
            seen.add(tuple(held))
    return tuple(
        x
        for x in seen
        if not any(y != x and all(i >= j for i, j in zip(y, x, strict=True)) for y in seen)
    )


def stage_activation_bytes(w: Workload, stage: int) -> float:
    """Activation peak of one stage: in-flight chunk-microbatches x their layers, plus the
    end-stage extras (where interleaving puts end chunks beside others, from the schedule walk);
    on the last stage, the loss's working set beyond what it keeps, once."""
    held = _held_activation_bytes(w, stage)
    if stage != w.parallel.pp - 1:
        return held
    return held + loss_working_bytes(w)


def loss_working_bytes(w: Workload) -> float:
    """The loss's working set beyond what it keeps (the last stage's, once): its
    implementation's bytes per logit (model/blocks/loss.py) over one rank's logits."""
    ce = CROSS_ENTROPY[w.training.knob("cross_entropy")]
    m, b, par = w.model, w.training.micro_batch, w.parallel
    logits = m.seq_len // par.cp * b * m.padded_vocab(par.tp) / par.tp
    return ce.working_bytes * logits


def _held_activation_bytes(w: Workload, stage: int) -> float:
    """stage_activation_bytes without the loss's working set."""
    model, par, b = w.model, w.parallel, w.training.micro_batch
    p, v = par.pp, par.chunks
    emb, out = end_stage_bytes(model, par, b, w.training.knob("cross_entropy"))
    mixed = not stack.uniform(model)
    if (
        par.schedule not in CLASSIC
        or not par.deallocate_pipeline_outputs
        or par.uneven
        or mixed
        or par.moe_a2a_overlap  # its pairs hold one chunk-microbatch more (classic.py)
    ):
        return _walk_peak(w, stage, emb, out)
    chunk = chunk_activation_bytes(w, stage)
    first = emb if stage == 0 else 0.0
    last = out if stage == p - 1 else 0.0
    if v > 1 and (first or last):
        return max(
            n * chunk + n0 * first + nl * last
            for n, n0, nl in interleaved_counts(p, steady_microbatches(p, w.microbatches), v, stage)
        )
    count = in_flight_chunks(par.schedule, p, w.microbatches, v, stage)
    last_count = 1 if par.schedule != "gpipe" else count  # 1F1B's last stage holds one microbatch
    return count * (chunk + first) + last_count * last


CLASSIC = ("gpipe", "1f1b", "interleaved")
"""Schedules whose in-flight counts have closed forms (in_flight_chunks); others are walked."""


def _walk_peak(w: Workload, stage: int, emb: float, out: float) -> float:
    """Peak activation bytes over the stage's actions, held and freed by sim/walk.py's HOLDS:
    an F holds its chunk (plus the embedding or output-layer tensors on the end virtual stages,
    and, without Appendix B's deallocation, the output it sent to another stage), a B frees it,
    an I frees all but what its W needs, the W frees that."""
    par = w.parallel
    p, v = par.pp, par.chunks
    last = p * v - 1
    per_layer_w = weight_grad_bytes(w.model, par, w.training.micro_batch, w.training.numerics)
    placement = par.placement
    counts = w.chunk_layers
    if stack.uniform(w.model):
        by_n = {n: chunk_activation_bytes(w, stage, n) for n in set(counts)}
        chunks = [by_n[n] for n in counts]
    else:  # each virtual stage's own slice of the stack
        chunks = [chunk_activation_bytes(w, stage, n, vs) for vs, n in enumerate(counts)]
    sent = sends_output(par, last, placement)
    output = stage_output_bytes(w.model, par, w.training.micro_batch)
    held = peak = 0.0
    for a in build(par.schedule, p, w.microbatches, v, par.moe_a2a_overlap)[stage]:
        vs = virtual_stage(p, stage, a.chunk, placement)
        size = chunks[vs] + (emb if vs == 0 else 0.0) + (out if vs == last else 0.0)
        w_bytes = counts[vs] * per_layer_w
        size += output if vs in sent else 0.0
        allocated, freed = HOLDS[a.kind](size, w_bytes)
        held += allocated
        peak = max(peak, held)
        held -= freed
    return peak


def sends_output(par: ParallelSpec, last: int, placement: str) -> frozenset:
    """Virtual stages that keep their sent output tensor (deallocate_pipeline_outputs off): those
    whose next virtual stage sits on another stage."""
    if par.deallocate_pipeline_outputs:
        return frozenset()
    return frozenset(
        vs
        for vs in range(last)
        if stage_and_chunk(par.pp, vs + 1, placement)[0]
        != stage_and_chunk(par.pp, vs, placement)[0]
    )


def stage_memory(w: Workload, stage: int) -> StageMemory:
    """One stage's weights and optimizer state (static_bytes) and its activation peak."""
    return StageMemory(stage, static_bytes(w, stage), stage_activation_bytes(w, stage))


def static_bytes(w: Workload, stage: int) -> float:
    """What a stage holds for the whole iteration: weights, gradients and optimizer state; with
    FSDP the sharded state plus the gathered parameters and unsharded gradients in flight
    (cost/fsdp.py); the FP8 weight copies and TE's cached dummy gradients, which live as long.
    The engine's HBM track starts from it (plan.Plan.weights_bytes)."""
    params = stage_params(w.model, w.parallel, stage)
    expert = stage_expert_params(w.model, w.parallel, stage) if w.model.experts else 0
    weights = (
        (params - expert) * weight_bytes_per_param(w.parallel)
        + fp8_weight_bytes(w, stage)
        + dummy_wgrad_bytes(w, stage)
    )
    if expert:
        weights += expert * weight_bytes_per_param(w.parallel, w.parallel.expert_optimizer_shards)
    if w.parallel.fsdp:
        weights += fsdp.in_flight_bytes(w, params)
    return weights


def fp8_weight_bytes(w: Workload, stage: int) -> float:
    """FP8 copies of the stage's linear weights (row-wise and transposed, with their scales),
    cached for the whole iteration (spec/precision.py); with FSDP only the two layers gathered at a
    time have them."""
    per_param = w.training.numerics.weight_copy_bytes()
    if not per_param:
        return 0.0
    par = w.parallel
    layers = 2 if par.fsdp and par.pp == 1 else par.stage_layers(w.model.layers, stage)
    return per_param * layers * linear_params_per_rank(w.model, par)


def dummy_wgrad_bytes(w: Workload, stage: int) -> float:
    """Transformer Engine's cached dummy weight gradients on a stage (ParallelSpec.
    cached_dummy_wgrads): a 16-bit tensor of each distinct linear weight shape a rank holds,
    the output layer's [v / t, h] among them on its stage; 0 when off."""
    par = w.parallel
    if not par.cached_dummy_wgrads:
        return 0.0
    shapes = set()
    if par.stage_layers(w.model.layers, stage):
        ops = L.build_layer(w.model, par.for_layer(), w.training.micro_batch)
        shapes = {(op.gemm.n, op.gemm.k) for op in ops if op.kind == "gemm" and op.weights}
    if stage == par.last_stage:
        shapes.add((w.model.padded_vocab(par.tp) // par.tp, w.model.hidden))
    return BYTES_16BIT * sum(n * k for n, k in shapes)


def peak_candidates(p: int) -> tuple[int, ...]:
    """Stages that can hold the HBM peak: 0, 1 and p - 1. Middle stages hold the same weights,
    and no more in-flight activations than stage 1 (the count falls with the stage under 1F1B
    and interleaving, and is constant under GPipe)."""
    return tuple(sorted({0, min(1, p - 1), p - 1}))


@lru_cache(maxsize=_CACHE_SIZE)
def peak_bytes(w: Workload) -> float:
    """The most loaded stage's peak HBM, from the stages that can hold it (memoised: a plan
    asks whether a layout fits before it asks its time, and the time's estimate asks again)."""
    p = w.parallel.pp
    stages = range(p) if w.parallel.recompute_per_stage else peak_candidates(p)
    return max(stage_memory(w, s).peak_bytes for s in stages)


def memory_report(w: Workload, hw: HardwareSpec) -> MemoryReport:
    """Per-stage peak HBM for a workload on a machine."""
    stages = tuple(stage_memory(w, s) for s in range(w.parallel.pp))
    per_layer = activation_per_layer_bytes(
        w.model, w.parallel, w.training.micro_batch, w.training.numerics
    )
    peak = max(s.peak_bytes for s in stages)
    return MemoryReport(hw.hbm_bytes, per_layer, stages, hw.reserve_bytes(peak))
