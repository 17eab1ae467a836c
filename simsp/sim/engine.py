"""The discrete-event engine, the only simpy module: replays a Plan and records a trace.

One representative rank per pipeline stage (its TP peers and DP replicas run the same program,
so the cost does not grow with TP or DP). Each stage walks its schedule: a forward waits for its
input from the previous virtual stage, a backward for the gradient from the next; sends block
the sender for the transfer (Megatron synchronises after batch_isend_irecv) and wake the
receiver. Activations are allocated when a forward starts and freed when its backward ends.
After the last backward each stage all-reduces its gradients over DP (optionally overlapped
with that backward); the optimizer's global gradient norm makes every stage wait for the
slowest before the step.
"""

import gc
from dataclasses import dataclass

import simpy

from simsp.cost.gradient_sync import chunked_gradients_done_s, gradient_windows
from simsp.sim.plan import Plan
from simsp.sim.schedule import stage_and_chunk, virtual_stage
from simsp.sim.trace import MemorySample, Span
from simsp.sim.walk import PASSES, arrival, output, target

SPAN_KINDS = {"F": "forward", "B": "backward", "I": "backward_input", "W": "backward_weight"}


@dataclass(frozen=True)
class Simulation:
    """What the engine observed."""

    spans: tuple[Span, ...]
    memory: tuple[MemorySample, ...]
    iteration_s: float
    stage_done_s: tuple[float, ...]
    """When each stage finished its gradients (before the optimizer barrier)."""


class _Run:
    """State of one replay."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.env = simpy.Environment()
        self.arrived: dict[tuple[str, int, int], simpy.Event] = {}
        self.spans: list[Span] = []
        self.memory: list[MemorySample] = []
        self.done = [0.0] * plan.p
        self.first_layer = [sum(plan.chunk_layers[:vs]) for vs in range(len(plan.chunk_layers))]

    def event(self, key) -> simpy.Event:
        ev = self.arrived.get(key)
        if ev is None:
            ev = self.arrived[key] = self.env.event()
        return ev

    def span(self, stage, stream, kind, name, start, dur, mb=-1, chunk=-1, vs=-1):
        first, n = (self.first_layer[vs], self.plan.chunk_layers[vs]) if vs >= 0 else (-1, 0)
        self.spans.append(Span(stage, stream, kind, name, start, dur, mb, chunk, first, n))

    def rules(self, s: int) -> dict:
        """sim/walk.py's rules for each (kind, chunk) of stage s, looked up once: (virtual stage,
        the arrival it waits for, the output it announces, whether it sends to another stage)."""
        plan, p = self.plan, self.plan.p
        last = p * plan.v - 1
        out = {}
        for chunk in range(plan.v):
            vs = virtual_stage(p, s, chunk, plan.placement)
            for kind in PASSES:
                to = target(kind, vs, last)
                remote = to is not None and stage_and_chunk(p, to, plan.placement)[0] != s
                sends = remote and plan.p2p_s > 0
                out[kind, chunk] = (vs, arrival(kind, vs, last), output(kind, vs), sends)
        return out

    def stage(self, s: int):
        """Generator: the stage's whole iteration, following its actions in order.

        Each action follows sim/walk.py: it waits for its `arrival`, runs for its kind's time
        allocating and freeing what that kind holds (PASSES), then sends its `output` to its
        `target` virtual stage if that sits on another stage. Written out in one loop: it runs
        ~10^5 times for the 1T workload."""
        plan, env = self.plan, self.env
        held = plan.weights_bytes[s]
        self.memory.append(MemorySample(s, 0.0, held))
        rules = self.rules(s)
        last_w = (0.0, 0.0)
        last_by_chunk = [(0.0, 0.0)] * plan.v
        for a in plan.actions[s]:
            kind = a.kind
            vs, need, sent, sends = rules[kind, a.chunk]
            if need is not None:
                yield self.event((*need, a.microbatch))
            dur, before, after = PASSES[kind](plan.chunks[vs])
            start = env.now
            if before:
                held += before
                self.memory.append(MemorySample(s, start, held))
            yield env.timeout(dur)
            self.span(
                s,
                "compute",
                SPAN_KINDS[kind],
                f"{kind} mb{a.microbatch} c{a.chunk}",
                start,
                dur,
                a.microbatch,
                a.chunk,
                vs,
            )
            if after:
                held -= after
                self.memory.append(MemorySample(s, env.now, held))
            if kind in ("B", "W"):
                last_w = last_by_chunk[a.chunk] = (start, env.now)
            if sent is None:
                continue
            if sends:
                t0 = env.now
                yield env.timeout(plan.p2p_s)
                what = "act" if kind == "F" else "grad"
                self.span(
                    s,
                    "pp_comm",
                    "pp_send",
                    f"send {what} mb{a.microbatch} c{a.chunk}",
                    t0,
                    plan.p2p_s,
                    a.microbatch,
                    a.chunk,
                )
            self.event((*sent, a.microbatch)).succeed()
        yield from self.gradients(s, last_w, last_by_chunk)

    def gradients(self, s: int, last_w: tuple, last_by_chunk: list):
        """DP reduction (after, or bucket by bucket alongside, each model chunk's last backward),
        tied-embedding sync."""
        plan, env = self.plan, self.env
        dp = plan.dp_s[s]
        if dp > 0:
            end = chunked_gradients_done_s(
                env.now,
                gradient_windows(plan, s, last_w, last_by_chunk),
                plan.overlap_dp,
                plan.comm_sm_share,
            )
            self.span(s, "dp_comm", "dp_allreduce", plan.dp_label, end - dp, dp)
            yield env.timeout(end - env.now)
        if plan.embedding_sync_s > 0 and s in (0, plan.last_stage):
            t0 = env.now
            yield env.timeout(plan.embedding_sync_s)
            self.span(
                s,
                "dp_comm",
                "dp_allreduce",
                "tied embedding gradient all-reduce",
                t0,
                plan.embedding_sync_s,
            )
        self.done[s] = env.now


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
    gc.disable()  # ~10^5 records: cyclic-GC passes would cost more than the simulation itself
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
        run.span(s, "compute", "optimizer", "optimizer step", barrier, plan.optimizer_s[s])
        gather = plan.gather_s[s]
        if gather > 0:
            start = barrier + plan.optimizer_s[s]
            run.span(s, "dp_comm", "param_gather", "parameter all-gather", start, gather)
    end = barrier + max(plan.step_s)
    return Simulation(tuple(run.spans), tuple(run.memory), end, tuple(run.done))
