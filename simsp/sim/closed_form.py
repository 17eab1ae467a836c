"""Closed-form iteration time and HBM: the fast tier of sweeps, equal to the engine to 1e-12.

Time. The same chunk costs the engine replays (plan.py, from the shared cost model), and the
pipeline's ends found without an event loop, by the rules the engine follows (sim/walk.py),
per schedule (pipeline_ends):

- 1F1B on alike stages: the textbook formula, with F, B a chunk's forward and backward
  (recompute included), c one point-to-point send (which blocks its sender, as in the engine),
  p stages and m microbatches,

      T_pipe = (m - 1) * max_s W_s  +  sum_stages (F + B)  +  2 (p - 1) c,

  W_s stage s's work for one microbatch (F + B and the sends after them); for equal stages the
  textbook (m + p - 1)(t_f + t_b). It is the walk's makespan where the last stage is at least
  as heavy as the first and the first as the middle ones (formula_exact), and is only taken
  there; stage s finishes earlier by the backward chain from it down to stage 0.
- The interleaved schedule, and 1F1B elsewhere: walked in rounds, all stages a step, for many
  configurations at once, a settled steady state's repeats skipped (sim/rounds.py).
- GPipe: its two flow shops in closed form (sim/gpipe.py).
- The zero-bubble and V schedules and overlapped pairs: the walk itself (`walk`).

Each stage then all-reduces its gradients over DP (after its last backward, or alongside it when
overlapped), the end stages sync the tied embedding, and the optimizer step starts when the
slowest stage is done, exactly as engine.py accounts for them.

Memory. memory.py itself: its per-layer bytes and the schedule walk of interleaved end stages
are cached there, and the peak is taken over the stages that can hold it.

Everything costly (one layer's op-by-op time, the embedding and logits, collectives by size) is
memoised on hashable frozen specs, keyed only by what it depends on, so a sweep over pp, dp and
the schedule costs each layer variant once.
"""

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simsp.cost import cost_model
from simsp.cost import stage_time as st
from simsp.cost.gradient_sync import chunked_gradients_done_s, gradient_windows, gradients_done_s
from simsp.cost.layer_time import layer_time
from simsp.model import layer as L
from simsp.model import stack
from simsp.model.flops import hardware_flops, model_flops, utilization
from simsp.sim import memory
from simsp.sim.gpipe import gpipe_ends
from simsp.sim.memory import CLASSIC
from simsp.sim.plan import Parts, StageCosts, stage_costs
from simsp.sim.rounds import may_skip as rounds_may_skip
from simsp.sim.rounds import walk_rounds
from simsp.sim.schedule import build, stage_and_chunk, virtual_stage
from simsp.sim.walk import arrival, output, seconds, target
from simsp.spec.hardware import HardwareSpec
from simsp.spec.layout import LAYER_GROUPS, layout
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.workload import TrainingSpec, Workload

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
    bubble_s: float = 0.0
    """Stage 0's idle time: the iteration less its passes, sends, exposed DP time and optimizer
    step (the event tier's breakdown()['bubble_s'])."""
    reserve_bytes: int = 0
    """What must stay free beside the peak (HardwareSpec.reserve_bytes)."""

    @property
    def fits(self) -> bool:
        """Whether the most loaded stage fits in HBM with the reserve left free."""
        return self.peak_bytes + self.reserve_bytes <= self.capacity_bytes


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
    """Makespan of the forwards and backwards:
    (m - 1) max W + (p + v - 1)/(pv) sum(F + B) + 2(p - 1)c."""
    chunk_sum = sum(x.forward_s + x.backward_s for x in c.chunks)
    return (
        (c.m - 1) * max(stage_work_s(c))
        + (c.p + c.v - 1) / (c.p * c.v) * chunk_sum
        + 2 * (c.p - 1) * c.p2p_s
    )


def formula_exact(c) -> bool:
    """Whether pipeline_s and stage_finish_s are 1F1B's walk: one stage, or the last stage's
    forward and backward at least as long as the first's, and the first's at least as long as
    the middle ones' (an embedding on the first, a loss on the last), measured against the walk
    to 1e-14 on random stages of that shape (tests/test_rounds.py); a heavier first stage can
    set a longer path (up to 7% at p = 8, m = 8), and is walked."""
    first, last, middle = c.chunks[0], c.chunks[-1], c.chunks[1:-1]
    return c.p == 1 or all(
        all(getattr(x, t) <= getattr(first, t) for x in middle)
        and getattr(first, t) <= getattr(last, t)
        for t in ("forward_s", "backward_s")
    )


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


def stage_done_s(c, ends=None) -> tuple[float, ...]:
    """When each stage has its gradients: DP all-reduce (exposed or overlapped), embedding sync.
    `ends`: pipeline_ends(c), where the caller has them already."""
    done = []
    synced = (0, c.last_stage) if c.embedding_sync_s > 0 else ()
    for s, (end, w_start, w_end, by_chunk) in enumerate(ends or pipeline_ends(c)):
        dp = c.dp_s[s]
        if dp > 0 and not c.dp_chunks:
            end = gradients_done_s(
                end, w_start, w_end, dp, c.dp_buckets[s], c.overlap_dp, c.comm_sm_share
            )
        elif dp > 0:
            by_chunk = by_chunk or last_backwards(c, s, w_start)
            windows = gradient_windows(c, s, (w_start, w_end), by_chunk)
            end = chunked_gradients_done_s(end, windows, c.overlap_dp, c.comm_sm_share)
        if s in synced:
            end += c.embedding_sync_s
        done.append(end)
    return tuple(done)


def last_backwards(c, s: int, w_start: float) -> tuple[tuple[float, float], ...]:
    """(start, end) of each model chunk's last backward on stage s under the interleaved
    schedule, from its very last one (chunk 0's, starting at w_start): Megatron's backward order
    ends with p backwards of chunk v - 1, ..., then p of chunk 0, so chunk j's last ends
    (p - 1) b_0 + p (b_1 + ... + b_(j-1)) before w_start. Waits in the cool-down only make those
    gaps longer, so this overlaps a little less than the event tier."""
    b = [c.chunks[virtual_stage(c.p, s, k, c.placement)].backward_s for k in range(c.v)]
    out, end = [(w_start, w_start + b[0])], w_start - (c.p - 1) * b[0]
    for k in range(1, c.v):
        out.append((end - b[k], end))
        end -= c.p * b[k]
    return tuple(out)


def pipeline_ends(c) -> tuple[tuple[float, float, float, tuple], ...]:
    """(end of its last pass and send, start and end of its last weight-gradient pass, and the
    (start, end) of each model chunk's last one) per stage: 1F1B on alike stages from the
    pipeline formula where it is exact (formula_exact; the chunks None: stage_done_s places
    them by last_backwards where it needs them); the interleaved schedule and the rest of
    1F1B walked in rounds (sim/rounds.py: `walk`'s figures, a settled steady state's repeats
    skipped; where no round could be skipped, `walk` gives the same bits one action at a time);
    GPipe's walk in closed form (sim/gpipe.py); else `walk` itself (the zero-bubble and V
    schedules, overlapped pairs)."""
    one_f_one_b = c.schedule in ("1f1b", "interleaved") and c.p > 1 and not c.paired
    if one_f_one_b and not (c.v == 1 and c.alike_stages and formula_exact(c)):
        if rounds_may_skip(c.p, c.v, c.m):  # else the walk's bits, action by action
            return rounds_ends(c)
        return walk(c, build(c.schedule, c.p, c.m, c.v, c.paired))
    if c.schedule == "gpipe" and c.p > 1:
        fwd = np.array([[x.forward_s for x in c.chunks]])
        bwd = np.array([[x.backward_s for x in c.chunks]])
        ends, w_start, w_end = gpipe_ends(fwd, bwd, [c.p2p_s], [c.m])
        return tuple(
            (float(e), float(a), float(b), ((float(a), float(b)),))
            for e, a, b in zip(ends[0], w_start[0], w_end[0], strict=True)
        )
    if c.schedule not in CLASSIC or not c.alike_stages or c.paired or not formula_exact(c):
        return walk(c, build(c.schedule, c.p, c.m, c.v, c.paired))
    return tuple(
        (end, start, start + c.chunks[s].backward_s, None)  # chunks: last_backwards, if needed
        for s, (end, start) in enumerate(stage_finish_s(c))
    )


def rounds_ends(c) -> tuple[tuple[float, float, float, tuple], ...]:
    """pipeline_ends of the interleaved schedule or 1F1B, by sim/rounds.py on one row."""
    fwd = np.array([[x.forward_s for x in c.chunks]])
    bwd = np.array([[x.backward_s for x in c.chunks]])
    ends, w_start, w_end, by_chunk = walk_rounds(c.p, c.v, [c.m], fwd, bwd, [c.p2p_s])
    return tuple(
        (
            float(ends[0, s]),
            float(w_start[0, s]),
            float(w_end[0, s]),
            tuple((float(a), float(b)) for a, b in by_chunk[0, s]),
        )
        for s in range(c.p)
    )


def walk(c, actions) -> tuple[tuple[float, float, float, tuple], ...]:
    """The schedule replayed without an event loop, by the engine's rules (sim/walk.py): a
    stage runs its actions in order, each starting when the stage is free and its `arrival`
    has come, and a send to another stage blocks the sender for c.p2p_s. Exact where no
    formula exists (the zero-bubble and V schedules); O(actions)."""
    p, last = c.p, c.p * c.v - 1
    place = c.placement
    vs_of = [[virtual_stage(p, s, k, place) for k in range(c.v)] for s in range(p)]
    home = [stage_and_chunk(p, vs, place)[0] for vs in range(last + 1)]
    arrived: dict = {}
    free, pos = [0.0] * p, [0] * p
    last_w = [(0.0, 0.0)] * p
    by_chunk = [[(0.0, 0.0)] * c.v for _ in range(p)]
    moved = True
    while moved:
        moved = False
        for s in range(p):
            while pos[s] < len(actions[s]):
                a = actions[s][pos[s]]
                vs = vs_of[s][a.chunk]
                need = arrival(a.kind, vs, last)
                if need is not None and (need, a.microbatch) not in arrived:
                    break
                start = max(free[s], arrived[(need, a.microbatch)] if need else 0.0)
                end = start + seconds(a, c.chunks[vs])
                if a.kind in "BW":
                    last_w[s] = by_chunk[s][a.chunk] = (start, end)
                sent = output(a.kind, vs)
                if sent is not None:
                    to = target(a.kind, vs, last)
                    if to is not None and c.p2p_s > 0 and home[to] != s:
                        end += c.p2p_s
                    arrived[(sent, a.microbatch)] = end
                free[s] = end
                pos[s] += 1
                moved = True
    if any(pos[s] < len(actions[s]) for s in range(p)):
        raise ValueError(f"schedule {c.schedule!r} deadlocks at p={p}, m={c.m}, v={c.v}")
    return tuple((free[s], *last_w[s], tuple(by_chunk[s])) for s in range(p))


def stage_busy_s(c, stage: int = 0) -> float:
    """A stage's passes and sends over the iteration: m x W_s for the classic schedules, else
    summed over its actions."""
    if c.schedule in CLASSIC and not c.paired:
        last = c.p * c.v - 1
        return c.m * sum(
            c.chunks[vs].forward_s + c.chunks[vs].backward_s + ((vs < last) + (vs > 0)) * c.p2p_s
            for vs in range(stage, last + 1, c.p)
        )
    p, last = c.p, c.p * c.v - 1
    place = c.placement
    busy = 0.0
    for a in build(c.schedule, p, c.m, c.v, c.paired)[stage]:
        vs = virtual_stage(p, stage, a.chunk, place)
        busy += seconds(a, c.chunks[vs])
        to = target(a.kind, vs, last)
        remote = to is not None and stage_and_chunk(p, to, place)[0] != stage
        busy += c.p2p_s if remote else 0.0
    return busy


def bubble_s(c, ends=None, done=None) -> float:
    """Stage 0's idle time in closed form, as the event tier's breakdown counts it."""
    ends = ends or pipeline_ends(c)
    done = done or stage_done_s(c, ends)
    t = max(done) + max(c.step_s)
    return t - stage_busy_s(c) - (done[0] - ends[0][0]) - c.step_s[0]


def iteration_s(c) -> float:
    """Iteration time of a Plan (or its StageCosts) in closed form: slowest stage, then the
    optimizer."""
    return max(stage_done_s(c)) + max(c.step_s)


@lru_cache(maxsize=_CACHE_SIZE)
def _layer(model, layer_parallel, micro_batch, hw, place, numerics):
    return layer_time(
        L.build_layer(model, layer_parallel, micro_batch, numerics),
        cost_model(hw),
        layer_parallel,
        place,
    )


@lru_cache(maxsize=_CACHE_SIZE)
def _ends(model, layer_parallel, micro_batch, hw, place, numerics):
    w, cost = _canonical(model, layer_parallel, micro_batch, numerics), cost_model(hw)
    return (*st.embedding_s(w, cost, place), *st.output_s(w, cost, place), st.p2p_s(w, cost, place))


def _canonical(
    model: ModelSpec, layer_parallel: ParallelSpec, micro_batch: int, numerics
) -> Workload:
    """A one-stage workload with just what a layer's and the end stages' costs depend on."""
    training = TrainingSpec(
        micro_batch,
        micro_batch,
        cross_entropy=numerics.cross_entropy,
        elementwise=numerics.elementwise,
    )
    return Workload("canonical", model, training, layer_parallel)


def _memo_key(w: Workload, cost, lay) -> tuple:
    """What a layer's and the end stages' costs depend on, hashable."""
    par = w.parallel.for_layer()
    return (w.model, par, w.training.micro_batch, cost.hw, lay.placement(*LAYER_GROUPS))


def _layer_key(w: Workload, cost, lay) -> tuple:
    """What a layer's cost depends on: the end stages' key and the run's precision."""
    return (*_memo_key(w, cost, lay), w.training.numerics)


MEMOISED = Parts(
    layer=lambda w, cost, lay: _layer(*_layer_key(w, cost, lay)),
    ends=lambda w, cost, lay: _ends(*_memo_key(w, cost, lay), w.training.numerics),
)
"""plan.stage_costs's pieces, memoised on the model, the layer's parallel settings, the micro
batch, the hardware and the placement, and the layer's numerics or the end stages' loss kernel:
a sweep over pp, dp and schedules costs each layer once."""


def costs(w: Workload, hw: HardwareSpec) -> StageCosts:
    """The plan's costs without its schedule: plan.stage_costs with memoised pieces (equal to
    build_plan's to the bit)."""
    return stage_costs(w, cost_model(hw), MEMOISED)[0]


def estimate(w: Workload, hw: HardwareSpec) -> Estimate:
    """Closed-form time, MFU/HFU and peak HBM of one validated workload on one machine."""
    c = costs(w, hw)
    ends = pipeline_ends(c)
    done = stage_done_s(c, ends)
    t = max(done) + max(c.step_s)
    gb, gpus, peak_flops = w.training.global_batch, w.parallel.gpus, hw.gpu.peak_tflops
    peak = memory.peak_bytes(w)
    return Estimate(
        iteration_time_s=t,
        mfu=utilization(model_flops(w.model, gb, w.parallel.tp), t, gpus, peak_flops),
        hfu=utilization(
            hardware_flops(
                w.model,
                gb,
                w.parallel.recompute,
                w.parallel.tp,
                w.recomputed_layers,
                w.parallel.recompute_modules,
            ),
            t,
            gpus,
            peak_flops,
        ),
        tokens_per_s=gb * w.model.seq_len / t,
        peak_bytes=peak,
        capacity_bytes=hw.hbm_bytes,
        bubble_s=bubble_s(c, ends, done),
        reserve_bytes=hw.reserve_bytes(peak),
    )


def floor_s(w: Workload, hw: HardwareSpec) -> float:
    """A lower bound of estimate(w, hw).iteration_time_s, for a search to skip what cannot win:
    the most loaded stage's layer passes, m microbatches of them (a forward, and the cheaper of
    a backward or its input and weight halves), nothing else. Every other term of the closed
    form (the end stages' embedding and loss, sends, the bubble, exposed DP, the optimizer)
    adds time. Where the layers differ (a mixed stack) every layer is taken at the cheapest
    kind's time; 0 where only some layers recompute."""
    par = w.parallel
    if par.recompute_num_layers or par.recompute_per_stage:
        return 0.0
    cost, lay = cost_model(hw), layout(par, hw.node.gpus)
    kinds = (w.model,) if stack.uniform(w.model) else tuple(set(stack.kinds(w.model)))
    per_layer = min(  # an overlapped pair's halves take no longer than the passes alone
        min(lt.forward_s, lt.paired_forward_s)
        + min(lt.backward_s, lt.paired_backward_s, lt.input_s + lt.weight_s)
        for lt in (MEMOISED.layer(dataclasses.replace(w, model=k), cost, lay) for k in kinds)
    )  # where the layers differ, the cheapest kind's
    most = max(par.stage_layers(w.model.layers, s) for s in range(par.pp))
    return w.microbatches * most * per_layer


def clear_caches() -> None:
    """Forget every memoised cost (for benchmarks that measure a cold start)."""
    from simsp.model import flops, params

    for f in (
        _layer,
        _ends,
        memory.interleaved_counts,
        memory.peak_bytes,
        memory._per_layer_bytes,
        memory._end_stage_bytes,
        params.layer_weights,
        params._layer_params,
        params._stage_params,
        params._chunk_params,
        params._linear_params,
        flops._layer_forward,
    ):
        f.cache_clear()
