"""The discrete-event engine, the only simpy module: replays a Plan and records a trace.

One representative rank per pipeline stage (its TP peers and DP replicas run the same program,
so the cost does not grow with TP or DP). Each stage walks its schedule: a forward waits for its
input from the previous virtual stage, a backward for the gradient from the next; sends block
the sender for the transfer (Megatron synchronises after batch_isend_irecv) and wake the
receiver. Activations are allocated when a forward starts and freed when its backward ends.
After the last backward each stage all-reduces its gradients over DP (optionally overlapped
with that backward); the optimizer's global gradient norm makes every stage wait for the
slowest before the step.

One simpy event an action: when an action starts, its end (and its send's) is known, so the
stage waits once, on the event that hands its output to the receiving stage, falling due when
the send ends; an input that has arrived already is not waited for. Times are those of one
timeout per compute and per send: a send ends at (start + compute) + transfer. The trace is
kept in columns (sim/columns.py), a few bytes a span, each stage's in the order it ran them.
"""

import gc
from dataclasses import dataclass
from heapq import heappush

import simpy
from simpy.events import NORMAL

from simsp.cost.gradient_sync import chunked_gradients_done_s, gradient_windows
from simsp.sim.columns import (
    MemoryTable,
    SpanLabel,
    SpanTable,
    StageSpans,
    stage_memory,
    stage_spans,
)
from simsp.sim.plan import Plan
from simsp.sim.schedule import stage_and_chunk, virtual_stage
from simsp.sim.walk import PAIRED, PASSES, arrival, output, target

SPAN_KINDS = {"F": "forward", "B": "backward", "I": "backward_input", "W": "backward_weight"}
PASS_CODE = {kind: code for code, kind in enumerate(SPAN_KINDS)}
"""Span code of each kind of pass (the first four of `labels`)."""
SEND_CODE = {"F": 4, "B": 5, "I": 5}
"""Span code of the send that follows each kind of pass: an activation or a gradient."""
DP, EMBEDDING, OPTIMIZER, GATHER = 6, 7, 8, 9
"""Span codes of the end of the iteration."""


def labels(plan: Plan) -> tuple[SpanLabel, ...]:
    """What each span code the engine records stands for (its stream, kind and name)."""
    passes = tuple(
        SpanLabel("compute", kind, short, numbered=True, layered=True)
        for short, kind in SPAN_KINDS.items()
    )
    return (
        *passes,
        SpanLabel("pp_comm", "pp_send", "send act", numbered=True),
        SpanLabel("pp_comm", "pp_send", "send grad", numbered=True),
        SpanLabel("dp_comm", "dp_allreduce", plan.dp_label),
        SpanLabel("dp_comm", "dp_allreduce", "tied embedding gradient all-reduce"),
        SpanLabel("compute", "optimizer", "optimizer step"),
        SpanLabel("dp_comm", "param_gather", "parameter all-gather"),
    )


@dataclass(frozen=True)
class Simulation:
    """What the engine observed."""

    spans: SpanTable
    memory: MemoryTable
    iteration_s: float
    stage_done_s: tuple[float, ...]
    """When each stage finished its gradients (before the optimizer barrier)."""


class _Clock(simpy.Environment):
    """simpy's environment, able to trigger an event at a given time: what `schedule` does
    (simpy 4's Environment.schedule, Event.succeed), at `when` rather than now + a delay, which
    need not round back to a time the engine has already computed."""

    def at(self, event: simpy.Event, when: float) -> simpy.Event:
        """Trigger `event` (successfully, no value) at simulated time `when` >= now."""
        event._ok, event._value = True, None
        heappush(self._queue, (when, NORMAL, next(self._eid), event))
        return event


class _Run:
    """State of one replay."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.env = _Clock()
        self.handoffs: dict[int, simpy.Event] = {}
        """Output key (rules) -> the event that hands it over, held between its sender and its
        receiver, whichever comes first."""
        self.spans = [stage_spans(s) for s in range(plan.p)]
        self.memory = [stage_memory(s) for s in range(plan.p)]
        self.done = [0.0] * plan.p

    def rules(self, s: int) -> dict:
        """sim/walk.py's rules for each (kind, chunk) of stage s, looked up once: (key of the
        arrival it waits for, its span code, seconds, bytes allocated at its start and freed at
        its end, key of the output it hands over, span code of its send or None, whether it
        times a chunk's backward: a B or a W), keyed by (kind, chunk, overlapped): an
        overlapped F or B takes its paired seconds. An output's key, plus the microbatch, is
        (2 x virtual stage + 1 for a gradient) x m; one without a receiver (the ends of the
        model) is None."""
        plan, p, m = self.plan, self.plan.p, self.plan.m
        last = p * plan.v - 1

        def key(what):
            return None if what is None else (2 * what[1] + (what[0] != "F")) * m

        out = {}
        for chunk in range(plan.v):
            vs = virtual_stage(p, s, chunk, plan.placement)
            for kind in PASSES:
                to = target(kind, vs, last)
                remote = to is not None and stage_and_chunk(p, to, plan.placement)[0] != s
                send = SEND_CODE[kind] if remote and plan.p2p_s > 0 else None
                sent = key(output(kind, vs)) if to is not None else None
                dur, before, after = PASSES[kind](plan.chunks[vs])
                need = key(arrival(kind, vs, last))
                backward = kind in ("B", "W")
                rule = (need, PASS_CODE[kind], dur, before, after, sent, send, backward)
                out[kind, chunk, False] = rule
                if kind in PAIRED:  # the same pass as one half of an overlapped pair
                    paired = PAIRED[kind](plan.chunks[vs])
                    out[kind, chunk, True] = (*rule[:2], paired, *rule[3:])
        return out

    def stage(self, s: int):
        """Generator: the stage's whole iteration, following its actions in order.

        Each action follows sim/walk.py: it waits for its `arrival` (unless that has arrived),
        runs for its kind's time allocating and freeing what that kind holds (PASSES), then
        sends its `output` to its `target` virtual stage if that sits on another stage, the
        receiver woken when the send ends; the stage waits once, until then. Written out in one
        loop: it runs ~10^5 times for the 1T workload."""
        plan, env = self.plan, self.env
        at, event, timeout, p2p = env.at, simpy.Event, env.timeout, plan.p2p_s
        handoffs = self.handoffs
        cols, mem = self.spans[s], self.memory[s]
        code_, start_, dur_ = cols.code.append, cols.start_s.append, cols.dur_s.append
        mb_, chunk_ = cols.microbatch.append, cols.chunk.append
        time_, bytes_ = mem.time_s.append, mem.bytes.append
        held = plan.weights_bytes[s]
        time_(0.0)
        bytes_(held)
        rules = self.rules(s)
        last_w = (0.0, 0.0)
        last_by_chunk = [(0.0, 0.0)] * plan.v
        for a in plan.actions[s]:
            chunk, mb = a.chunk, a.microbatch
            need, code, dur, before, after, sent, send, backward = rules[
                a.kind, chunk, a.overlapped
            ]
            if need is not None:
                ev = handoffs.pop(need + mb, None)
                if ev is None:
                    ev = handoffs[need + mb] = event(env)
                if ev.callbacks is not None:  # not arrived yet
                    yield ev
            start = env.now
            if before:
                held += before
                time_(start)
                bytes_(held)
            end = start + dur
            code_(code)
            start_(start)
            dur_(dur)
            mb_(mb)
            chunk_(chunk)
            if after:
                held -= after
                time_(end)
                bytes_(held)
            if backward:
                last_w = last_by_chunk[chunk] = (start, end)
            if sent is None:
                yield timeout(dur)
                continue
            if send is not None:
                code_(send)
                start_(end)
                dur_(p2p)
                mb_(mb)
                chunk_(chunk)
                end += p2p
            ev = handoffs.pop(sent + mb, None)
            if ev is None:
                ev = handoffs[sent + mb] = event(env)
            yield at(ev, end)
        self.gradients(s, last_w, last_by_chunk)

    def gradients(self, s: int, last_w: tuple, last_by_chunk: list) -> None:
        """DP reduction (after, or bucket by bucket alongside, each model chunk's last backward),
        tied-embedding sync: no other stage waits for them, so they are timed here, not waited
        for."""
        plan, cols = self.plan, self.spans[s]
        now = self.env.now
        dp = plan.dp_s[s]
        if dp > 0:
            end = chunked_gradients_done_s(
                now,
                gradient_windows(plan, s, last_w, last_by_chunk),
                plan.overlap_dp,
                plan.comm_sm_share,
            )
            _append(cols, DP, end - dp, dp)
            now += end - now  # as a timeout of end - now would
        if plan.embedding_sync_s > 0 and s in (0, plan.last_stage):
            _append(cols, EMBEDDING, now, plan.embedding_sync_s)
            now += plan.embedding_sync_s
        self.done[s] = now


def _append(cols: StageSpans, code: int, start: float, dur: float) -> None:
    """A span tied to no microbatch or chunk."""
    cols.code.append(code)
    cols.start_s.append(start)
    cols.dur_s.append(dur)
    cols.microbatch.append(-1)
    cols.chunk.append(-1)


def chunk_layer_ranges(plan: Plan) -> tuple[tuple[tuple[int, int], ...], ...]:
    """Per stage, per model chunk on it: (first transformer layer, layers) of its virtual
    stage."""
    first = [sum(plan.chunk_layers[:vs]) for vs in range(len(plan.chunk_layers))]
    return tuple(
        tuple(
            (first[vs], plan.chunk_layers[vs])
            for vs in (virtual_stage(plan.p, s, c, plan.placement) for c in range(plan.v))
        )
        for s in range(plan.p)
    )


PROGRESS_STEPS = 50
"""Slices of simulated time a watched replay reports after."""


def simulate(plan: Plan, progress=None, expected_s: float = 0.0) -> Simulation:
    """Replay the plan; the optimizer step starts when the slowest stage is done. With a
    `progress` (anything with step() and close(), as sweep.Progress) and the iteration's
    expected length (the closed form's), the replay runs in PROGRESS_STEPS slices of simulated
    time, stepping it after each: the same events in the same order, nothing in the inner
    loop."""
    run = _Run(plan)
    for s in range(plan.p):
        run.env.process(run.stage(s))
    paused = gc.isenabled()
    gc.disable()  # ~10^5 events: cyclic-GC passes would cost more than the simulation itself
    try:
        if progress is not None and expected_s > 0:
            for k in range(1, PROGRESS_STEPS):
                run.env.run(until=expected_s * k / PROGRESS_STEPS)
                progress.step()
        run.env.run()
        if progress is not None and expected_s > 0:
            progress.step()  # the last slice, however long the replay ran past the estimate
    finally:
        if progress is not None:
            progress.close()
        if paused:
            gc.enable()
    barrier = max(run.done)
    for s in range(plan.p):
        _append(run.spans[s], OPTIMIZER, barrier, plan.optimizer_s[s])
        gather = plan.gather_s[s]
        if gather > 0:
            _append(run.spans[s], GATHER, barrier + plan.optimizer_s[s], gather)
    end = barrier + max(plan.step_s)
    spans = SpanTable(labels(plan), tuple(run.spans), chunk_layer_ranges(plan))
    memory = MemoryTable(tuple(run.memory))
    return Simulation(spans, memory, end, tuple(run.done))
