"""Pipeline schedules as pure data, in one registry: which pass of which microbatch chunk each
pipeline stage runs, in order, and where each chunk sits in the model.

Every schedule is one `Kind` in `spec.schedules.REGISTRY` (its name, placement and rule, which the
CLI, the sweep grid and validation read) and one builder in `BUILDERS` here. The engine, memory
and the closed form walk the same action lists by the rules of sim/walk.py. Adding a
schedule is a function returning per-stage `Action` lists, its line in `BUILDERS` and its line
in `spec.schedules.REGISTRY`.

Placement (``loop`` or ``v``): spec.schedules.
"""

from collections.abc import Callable
from functools import lru_cache

from simsp.sim.schedule import vshape, zero_bubble
from simsp.sim.schedule.action import GRADIENT_KINDS, KINDS, Action, Actions, Dependency, Schedule
from simsp.sim.schedule.classic import (
    gpipe,
    interleaved,
    interleaved_action,
    one_f_one_b,
    warmup_1f1b,
    warmup_interleaved,
)
from simsp.spec.schedules import (
    REGISTRY,
    SCHEDULES,
    Kind,
    chunks_of,
    stage_and_chunk,
    virtual_stage,
)

__all__ = [
    "KINDS",
    "REGISTRY",
    "SCHEDULES",
    "Action",
    "Actions",
    "Dependency",
    "BUILDERS",
    "Kind",
    "Schedule",
    "build",
    "chunks_of",
    "gpipe",
    "interleaved",
    "interleaved_action",
    "max_in_flight",
    "one_f_one_b",
    "peak_in_flight_layers",
    "stage_and_chunk",
    "virtual_stage",
    "warmup_1f1b",
    "warmup_interleaved",
]


BUILDERS: dict[str, Callable[[int, int, int, bool], Schedule]] = {
    "gpipe": lambda p, m, v, paired: gpipe(p, m),
    "1f1b": lambda p, m, v, paired: one_f_one_b(p, m, paired),
    "interleaved": interleaved,
    "zb-h1": lambda p, m, v, paired: zero_bubble.zb_h1(p, m, v),
    "zb-h2": lambda p, m, v, paired: zero_bubble.zb_h2(p, m, v),
    "zbv": lambda p, m, v, paired: vshape.zbv(p, m, v),
    "dualpipev": vshape.dualpipev,
}
"""(p, m, chunks, paired) -> one action list per stage, for each kind of
spec.schedules.REGISTRY; `paired` marks the forward-backward pairs a schedule overlaps under EP
all-to-all overlap (Action.overlapped), where it has any."""


@lru_cache(maxsize=256)
def build(schedule: str, p: int, m: int, v: int = 1, paired: bool = False) -> Schedule:
    """Per-stage action lists for ``schedule`` (one of `SCHEDULES`); ValueError if unknown.

    ``v`` (model chunks per stage) is read by the schedules that take chunks; interleaved with
    v == 1 is 1F1B. ``paired``: EP all-to-all overlap, the steady state's forward-backward
    pairs overlapped (1F1B, interleaved, DualPipeV; the others have none).
    """
    if schedule not in REGISTRY:
        raise ValueError(f"schedule={schedule!r}: must be one of {', '.join(SCHEDULES)}")
    return BUILDERS[schedule](p, m, chunks_of(schedule, v), paired)


def max_in_flight(actions: Actions) -> int:
    """Peak over one stage's action list of (forwards done - backwards done), in chunk-microbatches.

    The number of chunk-microbatches whose activations the stage holds at once (a B or an I
    frees a microbatch's activations; what a deferred W keeps is counted by sim/memory.py).
    """
    return peak_in_flight_layers(actions, 1)


def peak_in_flight_layers(actions: Actions, layers_per_chunk: int) -> int:
    """`max_in_flight` weighted by layers: peak layer-microbatches of activations on one stage.

    With layers_per_chunk = L / (p * v), stage 0 of the interleaved schedule gives the
    L * (1 + (p - 1) / (p * v)) layers of Korthikanti et al. 2023 §4.2.3.
    """
    held = peak = 0
    for action in actions:
        if action.kind == "F":
            held += layers_per_chunk
        elif action.kind in GRADIENT_KINDS:
            held -= layers_per_chunk
        peak = max(peak, held)
    return peak
