"""Closed-form iteration time and HBM: the fast tier of sweeps, cross-checked against the engine.

Time. The same chunk costs the engine replays (plan.py, from the shared cost model), folded into
the pipeline formula instead of an event simulation. With F, B a chunk's forward and backward
(recompute included), c one point-to-point send (which blocks its sender, as in the engine), p
stages, v chunks a stage and m microbatches:

    T_pipe = (m - 1) * max_s W_s  +  (p + v - 1) / (p v) * sum_chunks (F + B)  +  2 (p - 1) c

W_s is stage s's work for one microbatch: its chunks' F + B and the sends after them. For equal
chunks this is the textbook (m + p - 1)(t_f + t_b) of GPipe and 1F1B (v = 1; both schedules have
the same makespan when sends block) and (m + (p - 1)/v) v (t_f + t_b) of the interleaved
schedule (Narayanan et al., SC'21, §2.2.2); the max-term lets one slower stage (the logits on
the last one) set the pace of the steady state. The last stage to finish its backwards is stage
0; stage s finishes earlier by the backward chain from it down to stage 0. Each stage then
all-reduces its gradients over DP (after its last backward, or alongside it when overlapped), the
end stages sync the tied embedding, and the optimizer step starts when the slowest stage is
done, exactly as engine.py accounts for them.

Memory. memory.py's closed forms, with the per-layer bytes and the in-flight counts of the
interleaved end stages (which memory.py gets from a walk over the schedule) cached, so screening
a configuration costs microseconds. The result equals memory.memory_report to the byte.

Everything costly (one layer's op-by-op time, the embedding and logits, collectives by size) is
memoised on hashable frozen specs, keyed only by what it depends on, so a sweep over pp, dp and
the schedule costs each layer variant once.
"""

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

from simsp import layer as L
from simsp.cost import cost_model
from simsp.cost import stage_time as st
from simsp.cost.layer_time import layer_time
from simsp.flops import hardware_flops, model_flops, utilization
from simsp.hardware import HardwareSpec
from simsp.memory import (MemoryReport, StageMemory, activation_per_layer_bytes, end_stage_bytes, stage_output_bytes,
                          stage_params, weight_bytes_per_param)
from simsp.model import ModelSpec
from simsp.parallel import ParallelSpec
from simsp.plan import ChunkCost, StageCosts, gradient_buckets, gradients_done_s
from simsp.schedule import interleaved_action, warmup_1f1b, warmup_interleaved
from simsp.workload import TrainingSpec, Workload

_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Estimate:
    """One configuration evaluated in closed form."""

    iteration_time_s: float
    mfu: float
    hfu: float
    tokens_per_s: float
    peak_bytes: float
    capacity_bytes: int

    @property
    def fits(self) -> bool:
        """Whether the most loaded stage fits in HBM."""
        return self.peak_bytes <= self.capacity_bytes


# ---------------------------------------------------------------------------- the time formula
def stage_work_s(c) -> tuple[float, ...]:
    """W_s: one microbatch's forwards, backwards and the sends after them, on each stage."""
    p, last = c.p, c.p * c.v - 1
    work = []
    for s in range(p):
        total = 0.0
        for vs in range(s, last + 1, p):
            sends = (vs < last) + (vs > 0)
            total += c.chunks[vs].forward_s + c.chunks[vs].backward_s + sends * c.p2p_s
        work.append(total)
    return tuple(work)


def pipeline_s(c) -> float:
    """Makespan of the forwards and backwards: (m - 1) max W + (p + v - 1)/(pv) sum(F + B) + 2(p - 1)c."""
    chunk_sum = sum(x.forward_s + x.backward_s for x in c.chunks)
    return ((c.m - 1) * max(stage_work_s(c)) + (c.p + c.v - 1) / (c.p * c.v) * chunk_sum
            + 2 * (c.p - 1) * c.p2p_s)


def stage_finish_s(c) -> tuple[tuple[float, float], ...]:
    """(end of its last backward and send, start of that backward) for each stage.

    Stage 0 ends the pipeline; stage s's last backward (virtual stage s) feeds stage s - 1's,
    so it ends earlier by the backwards and sends of the stages below it.
    """
    end = pipeline_s(c)
    out = []
    for s in range(c.p):
        if s > 0:
            end -= c.chunks[s - 1].backward_s + (c.p2p_s if s > 1 else 0.0)
        out.append((end, end - (c.p2p_s if s > 0 else 0.0) - c.chunks[s].backward_s))
    return tuple(out)


def stage_done_s(c) -> tuple[float, ...]:
    """When each stage has its gradients: DP all-reduce (exposed or overlapped), embedding sync."""
    done = []
    for s, (end, last_b_start) in enumerate(stage_finish_s(c)):
        dp = c.dp_s[s]
        if dp > 0:
            b_end = last_b_start + c.chunks[s].backward_s
            end = gradients_done_s(end, last_b_start, b_end, dp, c.dp_buckets[s], c.overlap_dp)
        if c.embedding_sync_s > 0 and s in (0, c.p - 1):
            end += c.embedding_sync_s
        done.append(end)
    return tuple(done)


def iteration_s(c) -> float:
    """Iteration time of a Plan (or its StageCosts) in closed form: slowest stage, then the optimizer."""
    return max(stage_done_s(c)) + max(c.optimizer_s)


_cost = cost_model


def _canonical(model: ModelSpec, tp: int, sp: bool, recompute: str, micro_batch: int) -> Workload:
    """A one-stage workload with just the fields a layer's cost and bytes depend on."""
    par = ParallelSpec(tp=tp, sequence_parallel=sp, recompute=recompute)
    return Workload("canonical", model, TrainingSpec(global_batch=micro_batch, micro_batch=micro_batch), par)


@lru_cache(maxsize=_CACHE_SIZE)
def _layer(model, tp, sp, recompute, micro_batch, hw, tp_rpn):
    """(forward, backward, forward TP, backward TP, recompute) seconds of one layer; the LayerTime."""
    par = ParallelSpec(tp=tp, sequence_parallel=sp, recompute=recompute)
    lt = layer_time(L.build_layer(model, par, micro_batch), _cost(hw), par, tp_rpn)
    return (lt.forward_s, lt.backward_s, lt.by_stream("comm", "forward"),
            lt.by_stream("comm", "recompute", "backward"), lt.seconds("recompute")), lt


@lru_cache(maxsize=_CACHE_SIZE)
def layer_bytes(model, tp, sp, recompute, micro_batch):
    """(activations per layer, stage output, embedding extras, output-layer extras) bytes, one GPU."""
    par = ParallelSpec(tp=tp, sequence_parallel=sp, recompute=recompute)
    per_layer = activation_per_layer_bytes(model, par, micro_batch)
    out = stage_output_bytes(model, par, micro_batch)
    emb, last = end_stage_bytes(model, par, micro_batch)
    return per_layer, out, emb, last


@lru_cache(maxsize=_CACHE_SIZE)
def _ends(model, tp, sp, micro_batch, hw, place):
    """(embedding forward, backward, output forward, backward, p2p send) seconds."""
    w, cost = _canonical(model, tp, sp, "none", micro_batch), _cost(hw)
    return (*st.embedding_s(w, cost, place), *st.output_s(w, cost, place), st.p2p_s(w, cost, place))


@lru_cache(maxsize=_CACHE_SIZE)
def _dp_s(hw, dp, dp_rpn, params):
    w = Workload("canonical", _DUMMY_MODEL, TrainingSpec(1, 1), ParallelSpec(dp=dp))
    return st.dp_allreduce_s(w, _cost(hw), st.Placement(1, dp_rpn, True), params)


@lru_cache(maxsize=_CACHE_SIZE)
def _optimizer_s(hw, model, tp, pp, dp, distributed, stage):
    par = ParallelSpec(tp=tp, pp=pp, dp=dp, distributed_optimizer=distributed)
    w = Workload("canonical", model, TrainingSpec(1, 1), par)
    return st.optimizer_s(w, _cost(hw), stage)


@lru_cache(maxsize=_CACHE_SIZE)
def _embedding_sync_s(hw, model, tp, pipelined):
    w = _canonical(model, tp, False, "none", 1)
    if pipelined:
        w = dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, pp=2))
    return st.embedding_sync_s(w, _cost(hw))


_DUMMY_MODEL = ModelSpec(layers=1, hidden=1, heads=1, seq_len=1, vocab=1)


def _by_stage(p: int, first, middle, last) -> tuple:
    """A per-stage tuple from the three kinds of stage (end stages carry the embedding terms)."""
    if p == 1:
        return (first,)
    return (first,) + (middle,) * (p - 2) + (last,)


def _stage_kinds(p: int) -> tuple[int, int, int]:
    """Representative stage indices: first, a middle one (or the first if none), last."""
    return 0, (1 if p > 2 else 0), p - 1


def costs(w: Workload, hw: HardwareSpec) -> StageCosts:
    """The plan's costs without its schedule, every costly part memoised (equal to build_plan's)."""
    par, b, model = w.parallel, w.training.micro_batch, w.model
    p, v = par.pp, par.chunks
    place = st.placement(w, hw.node.gpus)
    key = (model, par.tp, par.sequence_parallel)
    (lf, lb, ltf, ltb, lrc), _ = _layer(*key, par.recompute, b, hw, place.tp_ranks_per_node)
    emb_f, emb_b, out_f, out_b, p2p = _ends(*key, b, hw, place)
    n = w.layers_per_chunk
    per_layer, out_bytes, emb_bytes, last_bytes = layer_bytes(*key, par.recompute, b)
    out_held = 0.0 if par.deallocate_pipeline_outputs else out_bytes
    last = p * v - 1

    def chunk(vs):  # the same sums, in the same order, as plan._chunk
        extra_f = (emb_f if vs == 0 else 0.0) + (out_f if vs == last else 0.0)
        extra_b = (emb_b if vs == 0 else 0.0) + (out_b if vs == last else 0.0)
        extra_bytes = (emb_bytes if vs == 0 else 0.0) + (last_bytes if vs == last else 0.0)
        return ChunkCost(forward_s=n * lf + extra_f, backward_s=n * lb + extra_b,
                         forward_tp_s=n * ltf, backward_tp_s=n * ltb, recompute_s=n * lrc,
                         activation_bytes=n * per_layer + extra_bytes + out_held)

    middle = chunk(1) if last > 1 else None
    chunks = tuple(chunk(vs) if vs in (0, last) else middle for vs in range(last + 1))
    kinds = _stage_kinds(p)
    params = [stage_params(model, par, s) for s in kinds]
    dp = [_dp_s(hw, par.dp, place.dp_ranks_per_node, x) for x in params]
    opt = [_optimizer_s(hw, model, par.tp, p, par.dp, par.distributed_optimizer, s) for s in kinds]
    return StageCosts(p=p, v=v, m=w.microbatches, chunks=chunks, p2p_s=p2p if p > 1 else 0.0,
                 dp_s=_by_stage(p, *dp), overlap_dp=par.overlap_dp_comm,
                 dp_buckets=_by_stage(p, *(gradient_buckets(n, par.dp_bucket_mb) for n in params)),
                 embedding_sync_s=_embedding_sync_s(hw, model, par.tp, p > 1) if model.tied_embeddings else 0.0,
                 optimizer_s=_by_stage(p, *opt))


# ---------------------------------------------------------------------------- memory
@lru_cache(maxsize=_CACHE_SIZE)
def _interleaved_counts(p: int, m: int, v: int, stage: int) -> tuple[tuple[int, int, int], ...]:
    """(chunk-microbatches, of them chunk 0, of them chunk v-1) held after each forward of an
    interleaved stage, the non-dominated ones: memory.py's walk reduced to its candidates."""
    order = [interleaved_action(p, v, k, "F") for k in range(m * v)]
    back = [interleaved_action(p, v, k, "B") for k in range(m * v)]
    warm = warmup_interleaved(p, m, v, stage)
    seq = order[:warm]
    for k in range(m * v - warm):
        seq += [order[warm + k], back[k]]
    seq += back[m * v - warm:]
    held = [0, 0, 0]
    seen = set()
    for a in seq:
        d = 1 if a.kind == "F" else -1
        held[0] += d
        held[1] += d * (a.chunk == 0)
        held[2] += d * (a.chunk == v - 1)
        if d > 0:
            seen.add(tuple(held))
    return tuple(x for x in seen if not any(y != x and all(i >= j for i, j in zip(y, x)) for y in seen))


def stage_activation_bytes(w: Workload, stage: int) -> float:
    """memory.stage_activation_bytes with cached per-layer bytes and in-flight counts."""
    model, par, b = w.model, w.parallel, w.training.micro_batch
    p, v, m = par.pp, par.chunks, w.microbatches
    per_layer, out_bytes, emb_bytes, last_bytes = layer_bytes(model, par.tp, par.sequence_parallel, par.recompute, b)
    chunk = w.layers_per_chunk * per_layer
    if not par.deallocate_pipeline_outputs and stage < p - 1:
        chunk += out_bytes
    first = emb_bytes if stage == 0 else 0.0
    last = last_bytes if stage == p - 1 else 0.0
    if v > 1 and (first or last):
        return max(n * chunk + n0 * first + nl * last for n, n0, nl in _interleaved_counts(p, m, v, stage))
    if par.schedule == "gpipe":
        count = m
    elif par.schedule == "interleaved" and v > 1:
        count = min(warmup_interleaved(p, m, v, stage) + 1, m * v)
    else:
        count = min(warmup_1f1b(p, m, stage) + 1, m)
    last_count = 1 if par.schedule != "gpipe" else count
    return count * (chunk + first) + last_count * last


def _peak_candidates(w: Workload) -> tuple[int, ...]:
    """Stages that can hold the HBM peak: 0, 1 and p - 1. Middle stages hold the same weights,
    and no more in-flight activations than stage 1 (the count falls with the stage under 1F1B
    and interleaving, and is constant under GPipe)."""
    p = w.parallel.pp
    return tuple(sorted({0, min(1, p - 1), p - 1}))


def memory_report(w: Workload, hw: HardwareSpec) -> MemoryReport:
    """memory.memory_report, fast: every stage from the closed forms and cached counts."""
    return MemoryReport(hw.hbm_bytes, layer_bytes(w.model, w.parallel.tp, w.parallel.sequence_parallel,
                                                  w.parallel.recompute, w.training.micro_batch)[0],
                        memory_stages(w))


def memory_stages(w: Workload, full: bool = True) -> tuple[StageMemory, ...]:
    """Per-stage memory; with full=False only the stages that can hold the peak (0, 1, p - 1)."""
    per_param = weight_bytes_per_param(w.parallel)
    stages = range(w.parallel.pp) if full else _peak_candidates(w)
    return tuple(StageMemory(s, stage_params(w.model, w.parallel, s) * per_param, stage_activation_bytes(w, s))
                 for s in stages)


def peak_bytes(w: Workload) -> float:
    """The most loaded stage's peak HBM, from the stages that can hold it."""
    return max(s.peak_bytes for s in memory_stages(w, full=False))


# ---------------------------------------------------------------------------- one configuration
def estimate(w: Workload, hw: HardwareSpec) -> Estimate:
    """Closed-form time, MFU/HFU and peak HBM of one validated workload on one machine."""
    t = iteration_s(costs(w, hw))
    gb, gpus, peak = w.training.global_batch, w.parallel.gpus, hw.gpu.peak_tflops
    return Estimate(
        iteration_time_s=t,
        mfu=utilization(model_flops(w.model, gb), t, gpus, peak),
        hfu=utilization(hardware_flops(w.model, gb, w.parallel.recompute), t, gpus, peak),
        tokens_per_s=gb * w.model.seq_len / t,
        peak_bytes=peak_bytes(w),
        capacity_bytes=hw.hbm_bytes,
    )


def clear_caches() -> None:
    """Forget every memoised cost (for benchmarks that measure a cold start)."""
    for f in (_layer, layer_bytes, _ends, _dp_s, _optimizer_s, _embedding_sync_s, _interleaved_counts):
        f.cache_clear()
