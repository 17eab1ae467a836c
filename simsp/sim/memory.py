"""HBM per GPU, derived from the layer's op list: activations, weights, gradients, optimizer state.

Activations per layer sum the tensors the ops save for backward (model/layer.py), so the paper's
Table 2 rows follow from the op list. A stage holds activations for the microbatches its
schedule has in flight; the first and last stages add the embedding and output-layer tensors
(paper §4.3). Weights + gradients + optimizer take 18 bytes a parameter, or 6 + 12/d with the
distributed optimizer (Megatron-LM docs, dist_optimizer.md).
"""

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

from simsp.cost import fsdp
from simsp.model import layer as L
from simsp.model import stack
from simsp.model.blocks import checkpoint
from simsp.model.blocks.loss import CROSS_ENTROPY
from simsp.model.params import linear_params_per_rank, stage_expert_params, stage_params
from simsp.sim.schedule import (
    build,
    stage_and_chunk,
    virtual_stage,
    warmup_1f1b,
    warmup_interleaved,
)
from simsp.sim.walk import HOLDS
from simsp.spec.hardware import HardwareSpec
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.precision import BF16, Numerics
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


def saved_tensors(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics = BF16
) -> tuple[L.Saved, ...]:
    """The tensors one layer keeps for backward under the run's recompute mode (paper §5)."""
    if parallel.recompute == "full":
        return (L.layer_input(model, micro_batch, parallel.cp),)
    if parallel.recompute == "op":
        return checkpoint.kept(model, L.Dims.of(model, parallel, micro_batch))
    saves = (s for op in L.build_layer(model, parallel, micro_batch, numerics) for s in op.saves)
    return tuple(s for s in saves if not L.dropped(s, parallel))


def activation_per_layer_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics = BF16
) -> float:
    """One layer, one microbatch, one GPU: the rows of the paper's Table 2, from the op list."""
    return _per_layer_bytes(model, parallel.for_layer(), micro_batch, numerics)


@lru_cache(maxsize=_CACHE_SIZE)
def _per_layer_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics
) -> float:
    saved = saved_tensors(model, parallel, micro_batch, numerics)
    return sum(L.stored_bytes(s, parallel) for s in saved)


def chunk_activation_bytes(
    w: Workload, stage: int = 0, layers: int | None = None, vs: int | None = None
) -> float:
    """One of a stage's chunks of `layers` layers (a middle chunk's by default), one microbatch:
    with recompute full on only its first N layers (recompute_num_layers, recompute_per_stage),
    those keep their inputs, the rest all they save. Where the model's layers differ (model/
    stack.py) and the virtual stage `vs` is given, each layer of its slice of the stack saves
    what its own kind saves."""
    par, b, num = w.parallel, w.training.micro_batch, w.training.numerics
    n = w.layers_per_chunk if layers is None else layers
    full = par.recomputed_layers(n, stage)
    if vs is not None and not stack.uniform(w.model):
        start = sum(w.chunk_layers[:vs])
        # with recompute full on the first `full` layers only, the rest keep what they save
        rest = dataclasses.replace(par, recompute="none") if par.recompute == "full" else par
        return sum(
            activation_per_layer_bytes(kind, par if i < full else rest, b, num)
            for i, kind in enumerate(stack.kinds(w.model)[start : start + n])
        )
    if par.recompute != "full" or full == n:
        return n * activation_per_layer_bytes(w.model, par, b, num)
    rest = dataclasses.replace(par, recompute="none")
    return full * activation_per_layer_bytes(w.model, par, b, num) + (
        n - full
    ) * activation_per_layer_bytes(w.model, rest, b, num)


def weight_grad_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics = BF16
) -> float:
    """What one layer keeps from its I pass to its deferred W pass, one GPU: each linear layer's
    saved input and its output gradient, the two operands of dW = dYᵀ X (Qi et al. 2024, §2).
    Both are counted as they are stored: under SP sequence-sharded (the column layers' inputs
    and the row layers' [s, b, h] output gradients), to be gathered again for the W pass; that
    re-gather's time is not modelled."""
    return _weight_grad_bytes(model, parallel.for_layer(), micro_batch, numerics)


@lru_cache(maxsize=_CACHE_SIZE)
def _weight_grad_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics
) -> float:
    total = 0.0
    for op in L.build_layer(model, parallel, micro_batch, numerics):
        if op.kind == "gemm":
            total += sum(L.stored_bytes(s, parallel) for s in op.saves)
            row = bool(op.saves) and op.saves[0].shard == L.TP  # a row layer's input: TP-split
            split = parallel.tp if row and parallel.sequence_parallel else 1
            total += BYTES_16BIT * op.gemm.m * op.gemm.n / split
    return total


def end_stage_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, cross_entropy: str
) -> tuple[float, float]:
    """(first stage's embedding, last stage's output layer) activation bytes per microbatch
    (§4.3), the loss kept as training.cross_entropy keeps it."""
    return _end_stage_bytes(model, parallel.for_layer(), micro_batch, cross_entropy)


@lru_cache(maxsize=_CACHE_SIZE)
def _end_stage_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, cross_entropy: str
) -> tuple[float, float]:
    emb, out = (
        sum(L.stored_bytes(s, parallel) for s in saves)
        for saves in (
            L.embedding_saves(model, micro_batch, parallel.cp),
            L.output_saves(model, parallel.tp, micro_batch, parallel.cp, cross_entropy),
        )
    )
    if model.mtp_layers:  # each MTP depth: a layer of the last kind and the output layer again
        last = stack.kinds(model)[-1]
        out += model.mtp_layers * (_per_layer_bytes(last, parallel, micro_batch, BF16) + out)
    return emb, out


def stage_output_bytes(model: ModelSpec, parallel: ParallelSpec, micro_batch: int) -> float:
    """A stage's output tensor, 2sbh (/t under SP): what Appendix B deallocates after sending."""
    return L.stored_bytes(L.layer_input(model, micro_batch, parallel.cp), parallel)


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
