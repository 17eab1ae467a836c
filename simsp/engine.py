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

from simsp.plan import Plan, gradients_done_s
from simsp.trace import MemorySample, Span


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

    def event(self, key) -> simpy.Event:
        ev = self.arrived.get(key)
        if ev is None:
            ev = self.arrived[key] = self.env.event()
        return ev

    def span(self, stage, stream, kind, name, start, dur, mb=-1, chunk=-1, vs=-1):
        first, n = (
            (vs * self.plan.layers_per_chunk, self.plan.layers_per_chunk) if vs >= 0 else (-1, 0)
        )
        self.spans.append(Span(stage, stream, kind, name, start, dur, mb, chunk, first, n))

    def stage(self, s: int):
        """Generator: the stage's whole iteration."""
        plan, env = self.plan, self.env
        held = plan.weights_bytes[s]
        self.memory.append(MemorySample(s, 0.0, held))
        last_vs = plan.p * plan.v - 1
        last_b = (0.0, 0.0)
        for a in plan.actions[s]:
            vs = a.chunk * plan.p + s
            cost = plan.chunks[vs]
            forward = a.kind == "F"
            source = vs - 1 if forward else vs + 1
            if 0 <= source <= last_vs:
                yield self.event(("F" if forward else "B", source, a.microbatch))
            start = env.now
            if forward:
                held += cost.activation_bytes
                self.memory.append(MemorySample(s, start, held))
            dur = cost.forward_s if forward else cost.backward_s
            yield env.timeout(dur)
            self.span(
                s,
                "compute",
                "forward" if forward else "backward",
                f"{'F' if forward else 'B'} mb{a.microbatch} c{a.chunk}",
                start,
                dur,
                a.microbatch,
                a.chunk,
                vs,
            )
            if not forward:
                held -= cost.activation_bytes
                self.memory.append(MemorySample(s, env.now, held))
                last_b = (start, env.now)
            target = vs + 1 if forward else vs - 1
            if 0 <= target <= last_vs and plan.p2p_s > 0:
                t0 = env.now
                yield env.timeout(plan.p2p_s)
                self.span(
                    s,
                    "pp_comm",
                    "pp_send",
                    f"send {'act' if forward else 'grad'} mb{a.microbatch} c{a.chunk}",
                    t0,
                    plan.p2p_s,
                    a.microbatch,
                    a.chunk,
                )
            self.event((a.kind, vs, a.microbatch)).succeed()
        yield from self.gradients(s, *last_b)

    def gradients(self, s: int, backward_start: float, backward_end: float):
        """DP all-reduce (after, or bucket by bucket alongside, the last backward),
        tied-embedding sync."""
        plan, env = self.plan, self.env
        dp = plan.dp_s[s]
        if dp > 0:
            end = gradients_done_s(
                env.now, backward_start, backward_end, dp, plan.dp_buckets[s], plan.overlap_dp
            )
            self.span(s, "dp_comm", "dp_allreduce", "DP gradient all-reduce", end - dp, dp)
            yield env.timeout(end - env.now)
        if plan.embedding_sync_s > 0 and s in (0, plan.p - 1):
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


def simulate(plan: Plan) -> Simulation:
    """Replay the plan; the optimizer step starts when the slowest stage is done."""
    run = _Run(plan)
    for s in range(plan.p):
        run.env.process(run.stage(s))
    paused = gc.isenabled()
    gc.disable()  # ~10^5 records: cyclic-GC passes would cost more than the simulation itself
    try:
        run.env.run()
    finally:
        if paused:
            gc.enable()
    barrier = max(run.done)
    for s in range(plan.p):
        run.span(s, "compute", "optimizer", "optimizer step", barrier, plan.optimizer_s[s])
    end = barrier + max(plan.optimizer_s)
    return Simulation(tuple(run.spans), tuple(run.memory), end, tuple(run.done))
