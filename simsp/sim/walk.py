"""The one rule of a pipeline walk: for each kind of action (F, B, I, W; schedule/action.py),
what it waits for, how long it runs, what it holds and frees, and where its output goes.

The engine (simpy) drives these rules. The closed form (`pipeline_time.walk`, `stage_busy_s`) and
the memory model (`memory._walk_peak`) fold over the same action lists with them. `dependencies`
states them as (stage, action) pairs, for the tests and whoever writes a schedule. A new kind of
action is a line in each table here.
"""

from simsp.sim.schedule.action import Action, Dependency
from simsp.spec.schedules import stage_and_chunk, virtual_stage

SECONDS = {
    "F": lambda c: c.forward_s,
    "B": lambda c: c.backward_s,
    "I": lambda c: c.input_s,
    "W": lambda c: c.weight_s,
}
"""How long each kind runs on its chunk (a ChunkCost)."""
PAIRED = {
    "F": lambda c: c.forward_s if c.paired_forward_s is None else c.paired_forward_s,
    "B": lambda c: c.backward_s if c.paired_backward_s is None else c.paired_backward_s,
}
"""How long a forward or backward runs as one half of an overlapped pair (Action.overlapped)."""


def seconds(a: Action, c) -> float:
    """How long action `a` runs on its chunk `c`: its kind's time, or its paired time when the
    schedule overlaps it with another microbatch's pass."""
    return (PAIRED if a.overlapped and a.kind in PAIRED else SECONDS)[a.kind](c)


HOLDS = {
    "F": lambda activation, weight: (activation, 0.0),
    "B": lambda activation, weight: (0.0, activation),
    "I": lambda activation, weight: (0.0, activation - weight),
    "W": lambda activation, weight: (0.0, weight),
}
"""(bytes allocated at its start, bytes freed at its end) for a chunk holding `activation`
bytes of one microbatch, `weight` of them what the weight-gradient pass needs: a forward
allocates them, a backward frees them, an I frees all but what its W frees later."""
PASSES = {
    kind: (lambda c, k=kind: (SECONDS[k](c), *HOLDS[k](c.activation_bytes, c.weight_bytes)))
    for kind in SECONDS
}
"""chunk -> (seconds, bytes allocated at the start, bytes freed at the end), per kind; an
overlapped action runs for `seconds` instead."""


def arrival(kind: str, vs: int, last: int) -> tuple[str, int] | None:
    """The (kind, virtual stage) whose output an action on virtual stage `vs` waits for: a
    forward the previous virtual stage's activation, a B or I the next one's gradient (announced
    as "B" whichever of B or I sent it; the last virtual stage's follows its own forward, the
    loss), a W nothing from elsewhere (its own I ran earlier on this stage)."""
    if kind == "F":
        return ("F", vs - 1) if vs > 0 else None
    if kind == "W" or vs == last:
        return None
    return ("B", vs + 1)


def output(kind: str, vs: int) -> tuple[str, int] | None:
    """What an action's end makes available: a forward its activation, a B or I its gradient,
    as (kind, virtual stage); a W nothing."""
    if kind == "W":
        return None
    return ("F" if kind == "F" else "B", vs)


def target(kind: str, vs: int, last: int) -> int | None:
    """The virtual stage an action's output goes to, or None (a W; the ends of the model)."""
    if kind == "W":
        return None
    to = vs + 1 if kind == "F" else vs - 1
    return to if 0 <= to <= last else None


def dependencies(
    p: int, v: int, stage: int, a: Action, placement: str = "loop"
) -> tuple[Dependency, ...]:
    """The (stage, action) pairs that must finish before `a` can start on `stage`: the one
    `arrival` names, located on its stage, plus for a B or I its own forward and for a W its
    own I (earlier on this stage). A forward on the first virtual stage needs nothing."""
    vs = virtual_stage(p, stage, a.chunk, placement)
    if a.kind == "W":
        return ((stage, Action("I", a.microbatch, a.chunk)),)
    own = ((stage, Action("F", a.microbatch, a.chunk)),) if a.kind != "F" else ()
    needed = arrival(a.kind, vs, p * v - 1)
    if needed is None:
        return own
    kind, other = needed
    other_stage, other_chunk = stage_and_chunk(p, other, placement)
    return (*own, (other_stage, Action(kind, a.microbatch, other_chunk)))
