"""What a sweep will cost in CPU time, counted before it runs, and the limit it must keep.

A grid near --max-grid can hold tens of thousands of valid configurations; event-simulating all
of them takes hours. The estimate counts what each phase does (grid points enumerated, rows
screened in closed form, event simulations and the actions they replay) and prices each count
at simsp's own measured CPU cost (benchmarks/sweep_work.py prints them beside what it measures),
so a sweep past --max-seconds is one line before the phase that would overrun, with the
estimate, and one that runs long says so on stderr first. The counts are exact; the prices are
means, so the figure is "about": it is deterministic (no clock is read), and a busy machine
takes longer.
"""

import dataclasses
import math
from dataclasses import dataclass

from simsp.errors import InputError
from simsp.sim.budget import SECONDS_PER_ACTION, duration, memory_walks, work

COLUMN_POINT_S = 1.5e-5
"""CPU seconds a grid point costs enumerated as columns (grid_columns: enumerate_columns or
enumerate_mixed, with each valid configuration's workload and key built). Measured by
benchmarks/sweep_work.py (2026-12-03, this project's 2-core machine, as every figure here): 12 to
16 us on a 92,160-point GPT-3 175B grid with two keys outside the columns."""
SCALAR_POINT_S = 7.0e-5
"""... enumerated one point at a time (spec.enumerate_configs): 70 to 71 us, the same grid."""
VECTOR_ROW_S = 4.0e-5
"""CPU seconds a configuration costs screened as arrays (closed_form_columns), cold caches:
33 to 40 us."""
SCALAR_ROW_S = 3.5e-4
"""... screened by the scalar closed form (a row outside the array path), cold caches: 293 us
(6,993 interleaved rows with per-chunk gradient windows) to 400 us."""
WALK_ACTION_S = 1.3e-5
"""... and each stage-chunk-microbatch of its schedule walks (the closed form's and the memory
report's: zero-bubble, V, uneven stages, EP overlap; budget.memory_walks): 13 us."""
EVENT_RUN_S = 3.0e-3
"""CPU seconds an event simulation costs besides its actions (the plan, the memory report, the
row): 2.6 ms, the intercept of 120 configurations' CPU time against their actions, whose slope
(4.8 us) budget.SECONDS_PER_ACTION prices at 6 us."""
DEFAULT_MAX_SECONDS = 120.0
"""Estimated CPU seconds a sweep may take before it is refused (--max-seconds raises it): every
shipped sweep spec fits (the largest, 672 configurations event-simulated: estimated 15 s, 14 s
measured); a grid at --max-grid does not (184,320 GPT-3 points: about 20 min event-simulated,
up to 12 min with --screen)."""


@dataclass(frozen=True)
class SweepWork:
    """The counted work of a sweep's phases and what each costs."""

    enumerate_s: float = 0.0
    screen_s: float = 0.0
    event_s: float = 0.0
    simulated: int = 0
    """Configurations to event-simulate (with --screen, those it kept)."""
    at_most: bool = False
    """Whether the event simulations are a bound (before screening chose them)."""

    @property
    def seconds(self) -> float:
        return self.enumerate_s + self.screen_s + self.event_s

    def describe(self) -> str:
        """`about 3 min of CPU (enumeration 2 s, closed form 7 s, 310 event simulations 3 min)`."""
        parts = [
            (f"enumeration {duration(self.enumerate_s)}", self.enumerate_s),
            (f"closed form {duration(self.screen_s)}", self.screen_s),
            (
                f"{'up to ' if self.at_most else ''}{self.simulated:,} event simulations "
                f"{duration(self.event_s)}",
                self.event_s,
            ),
        ]
        said = ", ".join(text for text, s in parts if s > 0)
        return f"{'up to' if self.at_most else 'about'} {duration(self.seconds)} of CPU ({said})"


def enumeration(points: int, as_columns: bool) -> SweepWork:
    """The work of enumerating `points` grid points, as columns or one at a time."""
    return SweepWork(enumerate_s=points * (COLUMN_POINT_S if as_columns else SCALAR_POINT_S))


def events_s(workloads) -> float:
    """The event simulations of `workloads`."""
    return math.fsum(EVENT_RUN_S + work(w).actions * SECONDS_PER_ACTION for w in workloads)


def evaluation(workloads, screening: bool, before: SweepWork, keep: float = 0.0) -> SweepWork:
    """`before` and the work of evaluating `workloads`: every one event-simulated, or with
    `screening` every one in closed form and, as a bound, the `keep` share of them that costs
    most in the engine (screening keeps that share of those that fit: no more)."""
    from simsp.sim.closed_form_columns import vectorisable  # numpy: only when screening
    from simsp.sim.workload_columns import from_workloads

    if not screening:
        return dataclasses.replace(before, event_s=events_s(workloads), simulated=len(workloads))
    kept = math.ceil(keep * len(workloads))
    costly = sorted(workloads, key=lambda w: work(w).actions, reverse=True)[:kept]
    screen = 0.0
    for cols, rows in from_workloads(workloads):
        covered = vectorisable(cols)
        screen += int(covered.sum()) * VECTOR_ROW_S
        for i in rows[~covered].tolist():
            w = workloads[i]
            walked = work(w).actions * WALK_ACTION_S if memory_walks(w) else 0.0
            screen += SCALAR_ROW_S + walked
    bound = events_s(costly)
    return dataclasses.replace(
        before, screen_s=screen, event_s=bound, simulated=kept, at_most=kept > 0
    )


def check_limit(limit) -> float:
    """--max-seconds as given: a positive number."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0:
        raise InputError("--max-seconds", "max_seconds", limit, "must be a positive number")
    return float(limit)


def check_work(source, what: str, size: SweepWork, limit: float, hint: str = "") -> None:
    """InputError when `size` is estimated past `limit` CPU seconds: the estimate, the limit,
    the flag that raises it and, where given, a cheaper way."""
    if size.seconds > check_limit(limit):
        raise InputError(
            source,
            "grid",
            what,
            f"would take {size.describe()}, over the limit of {limit:g} s "
            f"(--max-seconds raises it{hint})",
        )
