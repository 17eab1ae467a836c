"""A pipeline's time from its StageCosts, without an event loop, by the rules the engine follows
(sim/walk.py): where each stage's last pass ends (pipeline_ends), when each stage has its
gradients (stage_done_s), the iteration (iteration_s) and stage 0's bubble (bubble_s). The
closed form (sim/closed_form.py) and the planner fold runs through it; the array tier does the
same over columns (sim/pipeline_columns.py).

Per schedule (pipeline_ends):

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
"""

import numpy as np

from simsp.cost.gradient_sync import chunked_gradients_done_s, gradient_windows, gradients_done_s
from simsp.sim.gpipe import gpipe_ends
from simsp.sim.memory import CLASSIC
from simsp.sim.rounds import may_skip as rounds_may_skip
from simsp.sim.rounds import walk_rounds
from simsp.sim.schedule import build, stage_and_chunk, virtual_stage
from simsp.sim.walk import arrival, output, seconds, target


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
