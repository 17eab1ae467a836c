"""Zero-bubble schedules on the looped placement (virtual stage chunk * p + stage): the backward
split into its input-gradient part (I), which the previous stage waits for, and its
weight-gradient part (W), which nothing waits for and so can fill the bubbles.

- ``zb-h1``: Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024, arXiv 2401.10241) §3.1:
  1F1B's warm-up and memory, each stage's W passes deferred by its distance from the first stage
  (stage s runs its first s I passes without their W). With v > 1 chunks this is the paper's
  interleaved ZB1P. The order is torch.distributed.pipelining's
  ``ScheduleInterleavedZeroBubble`` (``_get_1f1b_rank_ops`` with zero bubble enabled).
- ``zb-h2``: the same paper §3.1, Fig. 4: stage s warms up with up to 2(p - s) - 1 forwards and
  the W passes go to the tail. Built by the paper's greedy rule (§4: an I as soon as its gradient
  is there, else an F while the memory limit allows, else a pending W) run with equal pass times.
"""

from simsp.sim.schedule.action import Action, Actions, Schedule


def _rounds(p: int, m: int) -> int:
    """Microbatches per round (torch: n // max(1, n // p)); the round count must divide m."""
    rounds = max(1, m // p)
    if m % rounds:
        raise ValueError(f"m={m}: zero bubble needs m divisible by its rounds ({rounds})")
    return m // rounds


def zb_h1_stage(p: int, m: int, v: int, s: int) -> Actions:
    """One stage of ZB-H1 / ZB1P: warm-up forwards, then F and I each step with the W of an
    earlier I once s steps have passed, then the cool-down I passes and the remaining W."""
    per_round = _rounds(p, m)
    warmup = min((v - 1) * per_round + (p - 1 - s), m * v)
    counts: dict = {}
    ops: list[Action] = []
    backwards: list[int] = []  # the chunk of each I, in order: W passes follow it

    def add(kind: str, chunk: int) -> None:
        mb = counts.get((kind, chunk), 0)
        counts[(kind, chunk)] = mb + 1
        ops.append(Action(kind, mb, chunk))

    weights = 0
    for step in range(m * v + warmup):
        if step < m * v:
            add("F", (step // per_round) % v)
        if step < warmup:
            continue
        backwards.append(v - 1 - ((step - warmup) // per_round) % v)
        add("I", backwards[-1])
        if step - warmup >= s:
            add("W", backwards[weights])
            weights += 1
    for chunk in backwards[weights:]:
        add("W", chunk)
    return tuple(ops)


def zb_h1(p: int, m: int, v: int = 1) -> Schedule:
    """ZB-H1 (v = 1) or interleaved ZB1P (v > 1) on every stage."""
    return tuple(zb_h1_stage(p, m, v, s) for s in range(p))


def zb_h2(p: int, m: int, v: int = 1) -> Schedule:
    """ZB-H2 on every stage, by the zero-bubble paper's greedy rule with F = I = W = 1 and free
    communication: each free stage runs the earliest I whose gradient has arrived, else the next
    F while fewer than 2(p - s) - 1 of its microbatches await their I and fewer than 2p - 1 their
    W (the paper's memory bound), else its oldest pending W."""
    if v != 1:
        raise ValueError(f"virtual_stages={v}: zb-h2 runs one chunk a stage")
    done_f = [[-1] * m for _ in range(p)]  # time each F / I ended on each stage
    done_i = [[-1] * m for _ in range(p)]
    nf, ni, nw = [0] * p, [0] * p, [0] * p
    ops: list[list[Action]] = [[] for _ in range(p)]
    t = 0
    while any(nw[s] < m for s in range(p)):
        picks = []
        for s in range(p):
            picks.append(_h2_pick(p, m, s, t, nf, ni, nw, done_f, done_i))
        for s, kind in enumerate(picks):
            if kind == "F":
                done_f[s][nf[s]] = t + 1
                ops[s].append(Action("F", nf[s]))
                nf[s] += 1
            elif kind == "I":
                done_i[s][ni[s]] = t + 1
                ops[s].append(Action("I", ni[s]))
                ni[s] += 1
            elif kind == "W":
                ops[s].append(Action("W", nw[s]))
                nw[s] += 1
        t += 1
    return tuple(tuple(x) for x in ops)


def _h2_pick(p, m, s, t, nf, ni, nw, done_f, done_i) -> str | None:
    """What stage s starts at time t under ZB-H2's rule (None: nothing is ready)."""
    k = ni[s]
    if k < m and k < nf[s]:
        ready = done_f[s][k] if s == p - 1 else done_i[s + 1][k]
        if 0 <= ready <= t:
            return "I"
    if nf[s] < m and nf[s] - ni[s] < 2 * (p - s) - 1 and nf[s] - nw[s] < 2 * p - 1:
        if s == 0 or 0 <= done_f[s - 1][nf[s]] <= t:
            return "F"
    if nw[s] < ni[s]:
        return "W"
    return None
