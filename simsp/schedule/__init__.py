"""Pipeline schedules as pure data, in one registry: which pass of which microbatch chunk each
pipeline stage runs, in order, and where each chunk sits in the model.

Every schedule is one `Kind` in `REGISTRY`; the CLI, the sweep grid and validation take their
names from it, the engine follows the dependencies `dependencies` derives from its actions
whatever their kind, and memory and the closed form walk the same action lists. Adding a
schedule is a function returning per-stage `Action` lists and one line in `REGISTRY`.

Placement: ``loop`` puts chunk c of stage s at virtual stage c * p + s (Megatron-LM's
interleaving); ``v`` puts chunk 0 at s and chunk 1 at 2p - 1 - s (the zero-bubble paper's V,
DualPipeV), so the first and last layers share the first rank.
"""

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from simsp.schedule import vshape, zero_bubble
from simsp.schedule.action import GRADIENT_KINDS, KINDS, Action, Actions, Dependency, Schedule
from simsp.schedule.classic import (
    gpipe,
    interleaved,
    interleaved_action,
    one_f_one_b,
    warmup_1f1b,
    warmup_interleaved,
)

__all__ = [
    "KINDS",
    "REGISTRY",
    "SCHEDULES",
    "Action",
    "Actions",
    "Dependency",
    "Kind",
    "Schedule",
    "build",
    "chunks_of",
    "dependencies",
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


@dataclass(frozen=True)
class Kind:
    """One schedule: how to build it, where its chunks sit, and the rule it needs."""

    name: str
    build: Callable[[int, int, int], Schedule]
    """(p, m, chunks) -> one action list per stage."""
    placement: str
    """loop or v (module docstring)."""
    chunks: int | None
    """Chunks a stage holds: fixed (1, or 2 for the V schedules), or None for the workload's
    virtual_stages."""
    needs: Callable[[int, int, int], tuple[str, str] | None]
    """(p, m, chunks) -> (workload key, rule) the configuration breaks, or None."""
    source: str


def _none(p: int, m: int, v: int) -> tuple[str, str] | None:
    return None


def _interleaved_needs(p: int, m: int, v: int) -> tuple[str, str] | None:
    if p < 2:
        return "parallel.schedule", "interleaved needs pp > 1"
    if m % p:
        return (
            "training.global_batch",
            f"interleaved needs the microbatch count to be a multiple of pp ({p})",
        )
    return None


def _zb_needs(p: int, m: int, v: int) -> tuple[str, str] | None:
    rounds = max(1, m // p)
    if m % rounds:
        return (
            "training.global_batch",
            f"zb-h1 needs the microbatches ({m}) divisible by {rounds} rounds",
        )
    return None


def _dualpipe_needs(p: int, m: int, v: int) -> tuple[str, str] | None:
    if m < 2 * p:
        return "training.global_batch", f"dualpipev needs at least 2 x pp = {2 * p} microbatches"
    return None


REGISTRY = {
    k.name: k
    for k in (
        Kind("gpipe", lambda p, m, v: gpipe(p, m), "loop", 1, _none, "Huang et al. 2019"),
        Kind(
            "1f1b", lambda p, m, v: one_f_one_b(p, m), "loop", 1, _none, "Narayanan et al. ICML'21"
        ),
        Kind(
            "interleaved",
            interleaved,
            "loop",
            None,
            _interleaved_needs,
            "Narayanan et al. SC'21 §2.2.2",
        ),
        Kind(
            "zb-h1",
            zero_bubble.zb_h1,
            "loop",
            None,
            _zb_needs,
            "Qi et al. ICLR'24 §3.1 (ZB1P with chunks)",
        ),
        Kind("zb-h2", zero_bubble.zb_h2, "loop", 1, _none, "Qi et al. ICLR'24 §3.1"),
        Kind("zbv", vshape.zbv, "v", 2, _none, "Qi et al. ICLR'24 §6"),
        Kind(
            "dualpipev",
            vshape.dualpipev,
            "v",
            2,
            _dualpipe_needs,
            "DeepSeek-V3 arXiv 2412.19437 §3.2.1",
        ),
    )
}
SCHEDULES = tuple(REGISTRY)


def chunks_of(schedule: str, virtual_stages: int) -> int:
    """Model chunks a stage holds under a schedule."""
    fixed = REGISTRY[schedule].chunks
    return fixed if fixed is not None else virtual_stages


@lru_cache(maxsize=256)
def build(schedule: str, p: int, m: int, v: int = 1) -> Schedule:
    """Per-stage action lists for ``schedule`` (one of `SCHEDULES`); ValueError if unknown.

    ``v`` (model chunks per stage) is read by the schedules that take chunks; interleaved with
    v == 1 is 1F1B.
    """
    if schedule not in REGISTRY:
        raise ValueError(f"schedule={schedule!r}: must be one of {', '.join(SCHEDULES)}")
    kind = REGISTRY[schedule]
    return kind.build(p, m, chunks_of(schedule, v))


def virtual_stage(p: int, stage: int, chunk: int, placement: str = "loop") -> int:
    """Position of (stage, chunk) in the model (module docstring)."""
    if placement == "v":
        return stage if chunk == 0 else 2 * p - 1 - stage
    return chunk * p + stage


def stage_and_chunk(p: int, vstage: int, placement: str = "loop") -> tuple[int, int]:
    """Inverse of `virtual_stage`: (stage, chunk) holding virtual stage ``vstage``."""
    if placement == "v":
        return (vstage, 0) if vstage < p else (2 * p - 1 - vstage, 1)
    chunk, stage = divmod(vstage, p)
    return stage, chunk


def dependencies(
    p: int, v: int, stage: int, a: Action, placement: str = "loop"
) -> tuple[Dependency, ...]:
    """The (stage, action) pairs that must finish before ``a`` can start on ``stage``.

    A forward waits for the previous virtual stage's forward of the same microbatch; a backward
    (B or I) for its own forward and for the next virtual stage's backward, written as a "B"
    whichever of B or I that stage runs (the last virtual stage's follows its own forward, the
    loss); a W for its own I. Point-to-point sends are left to the engine, which follows these
    same rules (engine.py).
    """
    vs = virtual_stage(p, stage, a.chunk, placement)
    if a.kind == "F":
        if vs == 0:
            return ()
        prev_stage, prev_chunk = stage_and_chunk(p, vs - 1, placement)
        return ((prev_stage, Action("F", a.microbatch, prev_chunk)),)
    if a.kind == "W":
        return ((stage, Action("I", a.microbatch, a.chunk)),)
    own = (stage, Action("F", a.microbatch, a.chunk))
    if vs == p * v - 1:
        return (own,)
    next_stage, next_chunk = stage_and_chunk(p, vs + 1, placement)
    return (own, (next_stage, Action("B", a.microbatch, next_chunk)))


def max_in_flight(actions: Actions) -> int:
    """Peak over one stage's action list of (forwards done - backwards done), in chunk-microbatches.

    The number of chunk-microbatches whose activations the stage holds at once (a B or an I
    frees a microbatch's activations; what a deferred W keeps is counted by memory.py).
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
