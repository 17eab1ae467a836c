"""A sweep's grid enumerated as columns: the valid, distinct configurations enumerate_configs
finds, in its order and with its counts, without building a workload for each grid point.

The grid points are integer arrays (one per column of sim/workload_columns.py, the grid's own
values or the workload's), set as `_variant` sets them (dp from the GPUs, SP only with tp > 1,
one chunk for schedules that fix theirs). The workload rules apply as masks: the rules that do
not read the batch (spec/rules first_broken without the batch) once per distinct parallel
layout, the batch's rules (a global batch that micro batch x dp divides, the schedule's own
rule on its microbatch count: rules.schedule_rule) over the columns; then the interleaved
schedule of one chunk becomes 1F1B (`_normalised`), runs over max_actions are dropped, and a
configuration already met is skipped (SP at tp = 1 and a fixed schedule's chunks fold onto
another). A Config is built only for the rows asked for (`config`, `configs`), with the key
enumerate_configs gives it.

An inherited interleaved schedule falls back to 1F1B where it breaks a rule, as admit does,
the points that broke one checked again as 1F1B. Grids with a key outside the columns, or a
named value the rules would refuse, are not covered: `enumerate_columns` returns None. Where
only some keys are outside (a model key, a parallel switch), `enumerate_mixed` runs one column
grid per combination of those keys' values and merges them; where that does not pay (too few
column points) or a named value is refused, the caller enumerates with enumerate_configs.
"""

import dataclasses
import itertools
import math
from dataclasses import dataclass

import numpy as np

from simsp.sim.budget import DEFAULT_MAX_ACTIONS
from simsp.sim.workload_columns import (
    COLUMNS,
    FIXED_CHUNKS,
    NAMES,
    PARALLEL_COLUMNS,
    WorkloadColumns,
    decode,
    encode,
    groups,
    of_rows,
)
from simsp.spec.rules import first_broken, schedule_rule
from simsp.spec.workload import Workload
from simsp.sweep.configs import Config, Counts, admit, config_key, with_values
from simsp.sweep.spec import GRID_KEYS, SweepSpec


@dataclass(frozen=True, eq=False)
class GridColumns:
    """A spec's valid, distinct configurations: the same rows for every hardware file."""

    spec: SweepSpec
    columns: WorkloadColumns
    """The configurations of one hardware file, in grid order."""
    counts: Counts
    points: np.ndarray
    """Each configuration's grid point (its index in itertools.product order)."""
    first_skipped: int
    """The first grid point skipped as invalid or too big (-1: none)."""

    def __len__(self) -> int:
        """Configurations over every hardware file."""
        return len(self.columns) * len(self.spec.hardware)

    def config(self, h: int, i: int) -> Config:
        """Configuration i on hardware file h, as enumerate_configs builds it."""
        w, hw = self.columns.workload(i), self.spec.hardware[h]
        return Config(config_key(w, hw), w, hw)

    def configs(self) -> list[Config]:
        """Every configuration, in enumerate_configs's order (hardware, then grid)."""
        return [
            self.config(h, i)
            for h in range(len(self.spec.hardware))
            for i in range(len(self.columns))
        ]


def _covered(spec: SweepSpec) -> bool:
    """Whether every grid key is a column and every named value a name."""
    return all(_column_key(key, values) for key, values in spec.grid)


def _column_key(key: str, values: tuple) -> bool:
    """Whether a grid key is a column and every value of it one the columns store."""
    section, field, _ = GRID_KEYS[key]
    if field not in COLUMNS or section != ("parallel" if field in PARALLEL_COLUMNS else "training"):
        return False
    if field in NAMES and not all(v in NAMES[field] for v in values):
        return False
    return field != "sequence_parallel" or all(isinstance(v, bool) for v in values)


def _points(spec: SweepSpec) -> dict:
    """Every grid point's value of each column (stored integers), in itertools.product order;
    the workload's own where the grid leaves a column out."""
    sizes = [len(values) for _, values in spec.grid]
    total = int(np.prod(sizes)) if sizes else 1
    index = np.indices(sizes).reshape(len(sizes), total) if sizes else np.zeros((0, 1), int)
    base = spec.workload
    out = {}
    for f in COLUMNS:
        own = getattr(base.parallel if f in PARALLEL_COLUMNS else base.training, f)
        out[f] = np.full(total, encode(f, own) if f != "dp" else 0, dtype=np.int64)
    for k, (key, values) in enumerate(spec.grid):
        field = GRID_KEYS[key][1]
        codes = np.array([encode(field, v) for v in values], dtype=np.int64)
        out[field] = codes[index[k]]
    return out


def _rest_valid(base: Workload, rows: dict, at: np.ndarray) -> np.ndarray:
    """Whether the rules that do not read the batch hold on each row of `at`: checked once per
    distinct parallel layout, on the workload _variant builds."""
    first, inverse = groups(*(rows[f][at] for f in PARALLEL_COLUMNS))
    holds = np.empty(len(first), dtype=bool)
    for j, i in enumerate(at[first].tolist()):
        changes = {f: decode(f, rows[f][i]) for f in PARALLEL_COLUMNS}
        par = dataclasses.replace(base.parallel, **changes)
        w = Workload(base.name, base.model, base.training, par)
        holds[j] = first_broken(w, batch=False) is None
    return holds[inverse]


def _schedule_valid(rows: dict, at: np.ndarray, m: np.ndarray, chunks: np.ndarray) -> np.ndarray:
    """Whether the schedule's own rule on its microbatch count holds on each row of `at`."""
    schedule, pp, m, chunks = rows["schedule"][at], rows["pp"][at], m[at], chunks[at]
    first, inverse = groups(schedule, pp, m, chunks)
    holds = np.array(
        [
            schedule_rule(NAMES["schedule"][schedule[i]], int(pp[i]), int(m[i]), int(chunks[i]))
            is None
            for i in first.tolist()
        ],
        dtype=bool,
    )
    return holds[inverse]


def _valid(base: Workload, rows: dict, at: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Whether every workload rule holds on each row of `at`: the batch's over the columns,
    the others once per parallel layout where the batch's hold."""
    chunks = _chunks(rows)
    batch = rows["micro_batch"][at] * rows["dp"][at]
    valid = (rows["global_batch"][at] % batch == 0) & _schedule_valid(rows, at, m, chunks)
    held = np.flatnonzero(valid)
    valid[held] = _rest_valid(base, rows, at[held])
    return valid


def _chunks(rows: dict) -> np.ndarray:
    """Model chunks a stage holds on each row (ParallelSpec.chunks)."""
    fixed = FIXED_CHUNKS[rows["schedule"]]
    return np.where(fixed > 0, fixed, rows["virtual_stages"])


def enumerate_columns(
    spec: SweepSpec, max_actions: int = DEFAULT_MAX_ACTIONS, reason: bool = True
) -> GridColumns | None:
    """enumerate_configs's configurations and counts as columns; None for a grid this does not
    cover (module docstring). `reason`: find why the first skipped point was skipped."""
    if not _covered(spec):
        return None
    rows = _points(spec)
    total = len(rows["tp"])
    model_parallel = rows["tp"] * rows["cp"] * rows["pp"]
    divides = spec.gpus % model_parallel == 0
    rows["dp"] = np.where(divides, spec.gpus // model_parallel, 1)
    rows["sequence_parallel"] = rows["sequence_parallel"] & (rows["tp"] > 1)
    fixed = FIXED_CHUNKS[rows["schedule"]]
    rows["virtual_stages"] = np.where(fixed > 0, 1, rows["virtual_stages"])
    m = rows["global_batch"] // (rows["micro_batch"] * rows["dp"])

    at = np.flatnonzero(divides)
    valid = np.zeros(total, dtype=bool)
    valid[at] = _valid(spec.workload, rows, at, m)
    interleaved, one_f_one_b = (
        NAMES["schedule"].index("interleaved"),
        NAMES["schedule"].index("1f1b"),
    )
    explicit = "schedule" in [k for k, _ in spec.grid]
    fallback = np.zeros(total, dtype=bool)
    if not explicit and spec.workload.parallel.schedule == "interleaved":
        retry = np.flatnonzero(divides & ~valid)  # admit: an inherited interleaving as 1F1B
        rows["schedule"][retry], rows["virtual_stages"][retry] = one_f_one_b, 1
        fallback[retry] = _valid(spec.workload, rows, retry, m)
        valid |= fallback

    one = valid & (rows["schedule"] == interleaved) & (rows["virtual_stages"] == 1)
    rows["schedule"] = np.where(one, one_f_one_b, rows["schedule"])  # _normalised
    actions = rows["pp"] * _chunks(rows) * m  # budget.work: stages x chunks x microbatches
    too_big = valid & (actions > max_actions)
    kept = valid & ~too_big

    at = np.flatnonzero(kept)
    first, _ = groups(*(rows[f][at] for f in COLUMNS))
    chosen = at[np.sort(first)]
    columns = of_rows(spec.workload, {f: rows[f][chosen] for f in COLUMNS})

    n_hw = len(spec.hardware)
    counts = Counts(
        grid_points=total * n_hw,
        invalid=int((~valid).sum()) * n_hw,
        duplicates=(len(at) - len(chosen)) * n_hw,
        fallback=int((fallback & kept).sum()) * n_hw,
        too_big=int(too_big.sum()) * n_hw,
        configs=len(chosen) * n_hw,
    )
    skipped = np.flatnonzero(~kept)
    first_skipped = int(skipped[0]) if len(skipped) else -1
    if reason and first_skipped >= 0:  # why, in enumerate_configs's words
        counts.reason = _reason(spec, first_skipped, max_actions, explicit)
    return GridColumns(spec, columns, counts, chosen, first_skipped)


def _reason(spec: SweepSpec, point: int, max_actions: int, explicit: bool) -> str:
    """admit's reason for skipping grid point `point` (itertools.product order)."""
    sizes = [len(values) for _, values in spec.grid]
    index = np.unravel_index(point, sizes) if sizes else ()
    values = {key: vals[int(i)] for (key, vals), i in zip(spec.grid, index, strict=True)}
    _, found = admit(
        spec.workload, values, spec.gpus, spec.hardware[0], spec.source, max_actions, explicit
    )
    return found


MIXED_MIN_POINTS = 32
"""Column grid points an outer combination must hold for the mixed enumeration to pay: a column
grid costs about 0.4 ms besides its points, a point one at a time about 70 us (sweep/work.py),
so the two meet near 16 points; 32 leaves the margin."""


def column_grids(spec: SweepSpec) -> int:
    """How many column grids the spec enumerates as: 1 (enumerate_columns), one per combination
    of the outer keys' values (enumerate_mixed), or 0 (one point at a time)."""
    if _covered(spec):
        return 1
    if not mixed(spec):
        return 0
    return math.prod(len(v) for k, v in spec.grid if not _column_key(k, v))


def mixed(spec: SweepSpec) -> bool:
    """Whether enumerate_mixed takes the grid: some keys outside the columns (none a column key
    with a value the columns cannot store), and enough column points for each of their
    combinations."""
    outer = [(k, v) for k, v in spec.grid if not _column_key(k, v)]
    inner = [v for k, v in spec.grid if _column_key(k, v)]
    if not outer or not inner:
        return False
    if any(GRID_KEYS[k][1] in COLUMNS for k, _ in outer):  # a named value the rules refuse
        return False
    return math.prod(len(v) for v in inner) >= MIXED_MIN_POINTS


def enumerate_mixed(
    spec: SweepSpec, max_actions: int = DEFAULT_MAX_ACTIONS
) -> tuple[list[Config], Counts] | None:
    """enumerate_configs's configurations and counts for a grid with keys outside the columns:
    one column grid (enumerate_columns) for each combination of those keys' values, set on the
    base workload, merged back into itertools.product order (hardware, then grid point) and
    deduplicated by key as enumerate_configs does. None where the grid is all columns, or too
    few of its points are (enumerate one at a time)."""
    if not mixed(spec):
        return None
    outer = [(k, v) for k, v in spec.grid if not _column_key(k, v)]
    inner = tuple((k, v) for k, v in spec.grid if _column_key(k, v))
    sizes = [len(v) for _, v in spec.grid]
    outer_at = [i for i, (k, v) in enumerate(spec.grid) if not _column_key(k, v)]
    inner_at = [i for i in range(len(spec.grid)) if i not in outer_at]
    inner_sizes = [sizes[i] for i in inner_at]
    found: list[tuple[int, int, Config]] = []  # (hardware, grid point, configuration)
    counts, first_skipped = Counts(), -1
    for combo in itertools.product(*(range(len(v)) for _, v in outer)):
        values = {k: vals[j] for (k, vals), j in zip(outer, combo, strict=True)}
        sub = dataclasses.replace(spec, workload=with_values(spec.workload, values), grid=inner)
        grid = enumerate_columns(sub, max_actions, reason=False)
        digits = [0] * len(sizes)
        for i, j in zip(outer_at, combo, strict=True):
            digits[i] = j
        index = np.array(np.unravel_index(grid.points, inner_sizes))
        full = [None] * len(sizes)
        for n, i in enumerate(inner_at):
            full[i] = index[n]
        for i in outer_at:
            full[i] = np.full(len(grid.points), digits[i], dtype=np.int64)
        point = np.ravel_multi_index(full, sizes) if len(grid.points) else grid.points
        if grid.first_skipped >= 0:
            skipped_digits = list(digits)
            for n, i in enumerate(inner_at):
                skipped_digits[i] = int(np.unravel_index(grid.first_skipped, inner_sizes)[n])
            at = int(np.ravel_multi_index(skipped_digits, sizes))
            first_skipped = at if first_skipped < 0 else min(first_skipped, at)
        for h in range(len(spec.hardware)):
            found += [(h, int(p), grid.config(h, r)) for r, p in enumerate(point.tolist())]
        for f in ("grid_points", "invalid", "duplicates", "fallback", "too_big"):
            setattr(counts, f, getattr(counts, f) + getattr(grid.counts, f))
    found.sort(key=lambda t: (t[0], t[1]))
    seen, configs = set(), []
    for _, _, c in found:
        if c.key in seen:
            counts.duplicates += 1
            continue
        seen.add(c.key)
        configs.append(c)
    counts.configs = len(configs)
    if first_skipped >= 0:
        explicit = "schedule" in [k for k, _ in spec.grid]
        counts.reason = _reason(spec, first_skipped, max_actions, explicit)
    return configs, counts
