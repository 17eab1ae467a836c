"""Running a sweep: enumerate, skip what the output already holds, screen in closed form when
asked, event-simulate the rest on an executor, and write each row as it finishes."""

import math
import sys
import time
from dataclasses import dataclass

from simsp.sim.budget import DEFAULT_MAX_ACTIONS, NOTICE_S
from simsp.sweep.configs import Counts, check_some_valid, enumerate_configs
from simsp.sweep.execute import executor_rows, screen
from simsp.sweep.progress import Progress
from simsp.sweep.rows import row_key
from simsp.sweep.spec import DEFAULT_MAX_GRID, SweepSpec, check_grid_size, grid_points
from simsp.sweep.store import Output
from simsp.sweep.work import (
    DEFAULT_MAX_SECONDS,
    check_work,
    enumeration,
    evaluation,
    kept_bound,
)


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
    max_seconds: float = DEFAULT_MAX_SECONDS,
) -> Outcome:
    """Check the output path and count the grid, enumerate, skip what the output already holds,
    evaluate the rest, write rows as they finish. InputError, before any evaluation, for an
    output that cannot be written or is not a sweep's, a grid past max_grid, a grid with no
    valid configuration, or work estimated past max_seconds of CPU (sweep/work.py: before the
    enumeration for the enumeration, before the first evaluation for the whole)."""
    from simsp.sweep.grid_columns import column_grids  # numpy: only when sweeping

    t0 = time.perf_counter()
    output = Output(out)
    check_grid_size(spec, max_grid)
    points, grids = grid_points(spec), column_grids(spec)
    check_work(spec.source, f"{points:,} grid points", enumeration(points, grids), max_seconds)
    configs, counts = enumerate_all(spec, max_actions)
    check_some_valid(spec, counts)
    listing = enumeration(points, grids, counts.configs)
    wanted = {c.key for c in configs}
    done = {}
    for r in output.existing():
        done.setdefault(row_key(r), r)
    resumed = sum(k in wanted for k in done)
    todo = [c for c in configs if c.key not in done]
    share = spec.keep if keep is None else keep
    try:  # a refusal before this run's first row leaves the output as it found it
        _check_work(spec, configs, todo, listing, screening, share, max_seconds)
        if screening:
            rows, kept = screen(configs, share)
            todo = [c for c in todo if c.key in kept]
    except BaseException:
        output.abandon()
        raise
    new_rows, screened = [], 0
    if screening:
        for r, c in zip(rows, configs, strict=True):
            if c.key not in done and c.key not in kept:
                output.write(r)
                new_rows.append(r)
                screened += 1
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


def _check_work(spec, configs, todo, listing, screening, keep, limit) -> None:
    """The whole sweep's work, once its configurations are known (`listing`: the enumeration's):
    the event simulations of those not done, or with `screening` the closed form of all and, as
    a bound, the `keep` share screening may keep; refused past `limit` (an unscreened sweep's
    line says what --screen would take), said on stderr when it runs long."""
    workloads, left = [c.workload for c in configs], [c.workload for c in todo]

    def screened():
        most = math.ceil(keep * len(configs))
        return kept_bound(left, most, evaluation(workloads, True, listing))

    size = screened() if screening else evaluation(left, False, listing)
    hint = ""
    if not screening and size.seconds > limit:
        hint = f"; --screen would take {screened().describe()}"
    check_work(spec.source, f"{len(configs):,} configurations", size, limit, hint)
    if size.seconds > NOTICE_S:
        said = f"simsp: sweep of {len(configs):,} configurations: {size.describe()}"
        print(said, file=sys.stderr)


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
