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
from simsp.sim.budget import SECONDS_PER_ACTION, check_seconds, duration, memory_walks, work

COLUMN_GRID_S = 4.0e-4
"""CPU seconds a column grid costs besides its points (grid_columns.enumerate_columns: its arrays
and masks; enumerate_mixed runs one per combination of the keys outside the columns): 0.43
to 0.50 ms for a one-point grid. Measured by benchmarks/sweep_work.py (2026-12-04, this
project's 2-core machine, as every figure here)."""
COLUMN_POINT_S = 3.0e-6
"""... each of its grid points, valid or not: 1.4 to 3 us."""
CONFIG_S = 4.0e-5
"""... and each valid configuration it yields (its workload and key built): 37 to 40 us."""
SCALAR_POINT_S = 7.0e-5
"""CPU seconds a grid point costs enumerated one at a time (spec.enumerate_configs: its workload
built and checked, valid or not): 70 to 71 us on a 92,160-point GPT-3 175B grid."""
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
    """Whether the figure is a bound: before the enumeration (every point valid), or before
    screening chose the configurations to event-simulate."""

    @property
    def seconds(self) -> float:
        return self.enumerate_s + self.screen_s + self.event_s

    def describe(self) -> str:
        """`about 3 min of CPU (enumeration 2 s, closed form 7 s, 310 event simulations 3 min)`."""
        parts = [
            (f"enumeration {duration(self.enumerate_s)}", self.enumerate_s),
            (f"closed form {duration(self.screen_s)}", self.screen_s),
            (f"{self.simulated:,} event simulations {duration(self.event_s)}", self.event_s),
        ]
        said = ", ".join(text for text, s in parts if s > 0)
        return f"{'up to' if self.at_most else 'about'} {duration(self.seconds)} of CPU ({said})"


def enumeration(points: int, grids: int, configs: int | None = None) -> SweepWork:
    """The work of enumerating `points` grid points as `grids` column grids (0: one point at a
    time), yielding `configs` valid configurations; before the enumeration (None), a bound:
    every point one."""
    if not grids:
        return SweepWork(enumerate_s=points * SCALAR_POINT_S)
    valid = points if configs is None else configs
    seconds = grids * COLUMN_GRID_S + points * COLUMN_POINT_S + valid * CONFIG_S
    return SweepWork(enumerate_s=seconds, at_most=configs is None)


def events_s(workloads) -> float:
    """The event simulations of `workloads`."""
    return math.fsum(EVENT_RUN_S + work(w).actions * SECONDS_PER_ACTION for w in workloads)


def evaluation(workloads, screening: bool, before: SweepWork) -> SweepWork:
    """`before` and the work of evaluating `workloads`: every one event-simulated, or with
    `screening` every one in closed form."""
    from simsp.sim.closed_form_columns import vectorisable  # numpy: only when screening
    from simsp.sim.workload_columns import from_workloads

    if not screening:
        return dataclasses.replace(before, event_s=events_s(workloads), simulated=len(workloads))
    screen = 0.0
    for cols, rows in from_workloads(workloads):
        covered = vectorisable(cols)
        screen += int(covered.sum()) * VECTOR_ROW_S
        for i in rows[~covered].tolist():
            w = workloads[i]
            walked = work(w).actions * WALK_ACTION_S if memory_walks(w) else 0.0
            screen += SCALAR_ROW_S + walked
    return dataclasses.replace(before, screen_s=screen)


def kept_bound(todo, most: int, before: SweepWork) -> SweepWork:
    """`before` and, as a bound, the event simulations screening may keep: at most `most` of
    the configurations still to do (`todo`), the costliest in the engine."""
    costly = sorted(todo, key=lambda w: work(w).actions, reverse=True)[:most]
    return dataclasses.replace(
        before, event_s=events_s(costly), simulated=len(costly), at_most=True
    )


def check_work(source, what: str, size: SweepWork, limit: float, hint: str = "") -> None:
    """InputError when `size` is estimated past `limit` CPU seconds: the estimate, the limit,
    the flag that raises it and, where given, a cheaper way."""
    if size.seconds > check_seconds(limit):
        raise InputError(
            source,
            "grid",
            what,
            f"would take {size.describe()}, over the limit of {limit:g} s "
            f"(--max-seconds raises it{hint})",
        )
