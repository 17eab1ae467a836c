"""Running a sweep: enumerate, skip what the output already holds, screen in closed form when
asked, event-simulate the rest on an executor, and write each row as it finishes."""

import time
from dataclasses import dataclass

from simsp.sim.budget import DEFAULT_MAX_ACTIONS
from simsp.sweep.execute import executor_rows, screen
from simsp.sweep.progress import Progress
from simsp.sweep.rows import row_key
from simsp.sweep.spec import (
    DEFAULT_MAX_GRID,
    Counts,
    SweepSpec,
    check_grid_size,
    check_some_valid,
    enumerate_configs,
)
from simsp.sweep.store import Output


@dataclass
class Outcome:
    """A finished sweep: every row of its configurations (earlier runs' included) and counts."""

    rows: list[dict]
    counts: Counts
    resumed: int
    """Rows found in the output from an earlier run."""
    simulated: int
    """Configurations event-simulated by this run."""
    screened: int
    """Configurations evaluated only in closed form by this run."""
    wall_s: float


def run_sweep(
    spec: SweepSpec,
    out: str | None = None,
    executor: str = "local",
    jobs: int | None = None,
    screening: bool = False,
    keep: float | None = None,
    progress: bool = True,
    max_grid: int = DEFAULT_MAX_GRID,
    max_actions: int = DEFAULT_MAX_ACTIONS,
) -> Outcome:
    """Check the output path and count the grid, enumerate, skip what the output already holds,
    evaluate the rest, write rows as they finish. InputError, before any evaluation, for an
    output that cannot be written or is not a sweep's, a grid past max_grid, or a grid with no
    valid configuration."""
    t0 = time.perf_counter()
    output = Output(out)
    check_grid_size(spec, max_grid)
    configs, counts = enumerate_all(spec, max_actions)
    check_some_valid(spec, counts)
    wanted = {c.key for c in configs}
    done = {}
    for r in output.existing():
        done.setdefault(row_key(r), r)
    resumed = sum(k in wanted for k in done)
    todo = [c for c in configs if c.key not in done]
    new_rows, screened = [], 0
    if screening:
        rows, kept = screen(configs, spec.keep if keep is None else keep)
        for r, c in zip(rows, configs, strict=True):
            if c.key not in done and c.key not in kept:
                output.write(r)
                new_rows.append(r)
                screened += 1
        todo = [c for c in todo if c.key in kept]
    bar = Progress(len(todo), progress)
    try:
        for row in executor_rows([(c.key, c.workload, c.hardware) for c in todo], executor, jobs):
            output.write(row)
            new_rows.append(row)
            bar.step()
    finally:
        bar.close()
    by_key = {**done, **{row_key(r): r for r in new_rows}}
    rows = [by_key[c.key] for c in configs if c.key in by_key]
    output.close(list(by_key.values()))
    return Outcome(rows, counts, resumed, len(todo), screened, time.perf_counter() - t0)


def enumerate_all(spec: SweepSpec, max_actions: int = DEFAULT_MAX_ACTIONS) -> tuple[list, Counts]:
    """enumerate_configs's configurations and counts: as columns where the grid allows
    (sweep/grid_columns.py: the same configurations, order and counts, the rules applied as
    masks), with one column grid per combination of the other keys' values where some keys
    are not columns (grid_columns.enumerate_mixed), else one grid point at a time."""
    from simsp.sweep.grid_columns import enumerate_columns, enumerate_mixed  # numpy: sweeps

    grid = enumerate_columns(spec, max_actions)
    if grid is not None:
        return grid.configs(), grid.counts
    return enumerate_mixed(spec, max_actions) or enumerate_configs(spec, max_actions)
