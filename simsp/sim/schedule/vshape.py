"""V-shaped schedules: two model chunks a stage, chunk 0 on the way down (virtual stage s),
chunk 1 on the way back (virtual stage 2p - 1 - s), so the last layers sit on the first rank.

- ``zbv``: Qi et al., "Zero Bubble Pipeline Parallelism" (ICLR 2024, arXiv 2401.10241) §6,
  in torch.distributed.pipelining's order (``ScheduleZBVZeroBubble``).
- ``dualpipev``: DeepSeek-V3's DualPipe folded into a V (arXiv 2412.19437 §3.2.1;
  deepseek-ai/DualPipe), in torch's order (``ScheduleDualPipeV``). Its overlapped
  forward-and-backward pairs, which hide MoE all-to-alls behind the other chunk's compute, are
  listed as the forward, then the full backward, marked overlapped where EP all-to-all overlap
  is on (each then takes its chunk's paired seconds); a dense model has no all-to-all to hide.
"""

from simsp.sim.schedule.action import Action, Actions, Schedule


def _chunk(stage_chunk: int, p: int, s: int) -> int:
    return 0 if stage_chunk == s else 1


def zbv_stage(p: int, m: int, s: int) -> Actions:
    """One stage of ZB-V: warm-up F0s, then F0/F1 pairs, then F1 I1 W1, a steady state of
    F I W on each chunk, and a cool-down of I then deferred W."""
    n = max(2 * p - 1, m)  # microbatches the pattern needs; those >= m are dropped at the end
    ops: list[Action] = []
    f0 = f1 = b0 = b1 = 0

    def add(kind, chunk, mb):
        ops.append(Action(kind, mb, chunk))

    for _ in range(2 * (p - s) - 1):
        add("F", 0, f0)
        f0 += 1
    for _ in range(s):
        add("F", 1, f1)
        f1 += 1
        add("F", 0, f0)
        f0 += 1
    for _ in range(p - s):
        add("F", 1, f1)
        f1 += 1
        add("I", 1, b1)
        add("W", 1, b1)
        b1 += 1
    while f1 < f0 or f0 < n:
        if f0 < n:
            add("F", 0, f0)
            f0 += 1
        add("I", 0, b0)
        add("W", 0, b0)
        b0 += 1
        add("F", 1, f1)
        f1 += 1
        add("I", 1, b1)
        add("W", 1, b1)
        b1 += 1
    w0, w1 = b0, b1
    for _ in range(s):
        add("I", 0, b0)
        b0 += 1
        add("I", 1, b1)
        b1 += 1
    for _ in range(p - s):
        add("I", 0, b0)
        b0 += 1
        add("W", 0, w0)
        w0 += 1
    for mb in range(w1, b1):
        add("W", 1, mb)
    for mb in range(w0, b0):
        add("W", 0, mb)
    return tuple(a for a in ops if a.microbatch < m)


def zbv(p: int, m: int, v: int = 2) -> Schedule:
    """ZB-V on every stage."""
    return tuple(zbv_stage(p, m, s) for s in range(p))


class _Counter:
    """Next microbatch per (chunk, kind), and W passes waiting in I order (DualPipe's queue);
    `paired`: the overlapped steps' F and B marked so (Action.overlapped)."""

    def __init__(self, paired: bool = False):
        self.paired = paired
        self.next: dict = {}
        self.weights: list[tuple[int, int]] = []
        self.ops: list[Action] = []

    def add(self, kind: str, chunk: int, overlapped: bool = False) -> None:
        key = (chunk, "I" if kind == "B" else kind)
        mb = self.next.get(key, 0)
        self.ops.append(Action(kind, mb, chunk, overlapped))
        self.next[key] = mb + 1
        if kind == "B":
            self.next[(chunk, "W")] = self.next.get((chunk, "W"), 0) + 1
        elif kind == "I":
            self.weights.append((chunk, mb))

    def weight(self) -> None:
        if self.weights:
            chunk, mb = self.weights.pop(0)
            self.ops.append(Action("W", mb, chunk))
            self.next[(chunk, "W")] = self.next.get((chunk, "W"), 0) + 1

    def overlapped(self, forward_chunk: int, backward_chunk: int) -> None:
        self.add("F", forward_chunk, self.paired)
        self.add("B", backward_chunk, self.paired)


def dualpipev_stage(p: int, m: int, s: int, paired: bool = False) -> Actions:
    """One stage of DualPipeV, in the eight steps of torch's ``ScheduleDualPipeV``; `paired`:
    its overlapped F/B steps run as overlapped pairs (EP all-to-all overlap)."""
    c = _Counter(paired)
    for _ in range((p - s - 1) * 2):  # 1: F0
        c.add("F", 0)
    for _ in range(s + 1):  # 2: F0 F1
        c.add("F", 0)
        c.add("F", 1)
    for _ in range(p - s - 1):  # 3: I1 W F1
        c.add("I", 1)
        c.weight()
        c.add("F", 1)
    for i in range(m - 2 * p + s + 1):  # 4: F0 B1, F1 B0 (overlapped pairs)
        if i == 0 and s == p - 1:
            c.add("F", 0)
            c.add("B", 1)
        else:
            c.overlapped(0, 1)
        c.overlapped(1, 0)
    for _ in range(p - s - 1):  # 5: B1, F1 B0
        c.add("B", 1)
        c.overlapped(1, 0)
    zb = False
    steps = s + 1
    for i in range(steps):  # 6: B1 B0, the second half as I (zero bubble)
        if i == steps // 2 and s % 2 == 1:
            zb = True
        c.add("I" if zb else "B", 1)
        if i == steps // 2 and s % 2 == 0:
            zb = True
        c.add("I" if zb else "B", 0)
    for _ in range(p - s - 1):  # 7: W B0
        c.weight()
        c.add("I" if zb else "B", 0)
    for _ in range(s + 1):  # 8: W
        c.weight()
    return tuple(c.ops)


def dualpipev(p: int, m: int, v: int = 2, paired: bool = False) -> Schedule:
    """DualPipeV on every stage; needs m >= 2p (torch: as many microbatches as virtual stages).
    `paired`: its overlapped steps priced as pairs (EP all-to-all overlap)."""
    if m < 2 * p:
        raise ValueError(f"m={m}: dualpipev needs at least 2p = {2 * p} microbatches")
    return tuple(dualpipev_stage(p, m, s, paired) for s in range(p))
