"""Many configurations of one workload as columns: the base workload they share and, per
configuration, the settings a sweep varies (tp, cp, pp, dp, SP, recompute, the schedule and its
chunks, the micro and global batch) as integer arrays.

What the closed form over columns (closed_form_columns.py) reads, and what a sweep's grid
enumerates without building a workload per configuration (sweep/grid_columns.py). A row becomes
a Workload (`workload(i)`) only where one is needed: a representative of the rows that share a
cost, a row printed or event-simulated. Named choices are stored as their index in the spec's
list of names (RECOMPUTE_MODES, SCHEDULES), flags as 0 or 1.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from simsp.spec.parallel import RECOMPUTE_MODES, ParallelSpec
from simsp.spec.schedules import REGISTRY, SCHEDULES
from simsp.spec.workload import TrainingSpec, Workload

PARALLEL_COLUMNS = (
    "tp",
    "cp",
    "pp",
    "dp",
    "sequence_parallel",
    "recompute",
    "schedule",
    "virtual_stages",
)
"""ParallelSpec fields held per row."""
TRAINING_COLUMNS = ("micro_batch", "global_batch")
"""TrainingSpec fields held per row."""
COLUMNS = PARALLEL_COLUMNS + TRAINING_COLUMNS
NAMES = {"recompute": RECOMPUTE_MODES, "schedule": SCHEDULES}
"""Columns of named choices, stored as the index of the name."""
FLAGS = ("sequence_parallel",)
"""Columns of booleans, stored as 0 or 1."""
FIXED_CHUNKS = np.array([REGISTRY[s].chunks or 0 for s in SCHEDULES], dtype=np.int64)
"""Chunks a stage holds under each schedule (by its index), 0 where virtual_stages says."""


def encode(field: str, value) -> int:
    """A setting as its column stores it."""
    if field in NAMES:
        return NAMES[field].index(value)
    return int(value)


def decode(field: str, code: int):
    """A column's stored integer as the setting's value."""
    if field in NAMES:
        return NAMES[field][code]
    if field in FLAGS:
        return bool(code)
    return int(code)


@dataclass(frozen=True, eq=False)
class WorkloadColumns:
    """Configurations of `base` that differ only in COLUMNS, one row each: row i is `base` with
    the columns' values at i (workload(i))."""

    base: Workload
    """What every row shares (its own values of COLUMNS are not read)."""
    tp: np.ndarray
    cp: np.ndarray
    pp: np.ndarray
    dp: np.ndarray
    sequence_parallel: np.ndarray
    recompute: np.ndarray
    schedule: np.ndarray
    virtual_stages: np.ndarray
    micro_batch: np.ndarray
    global_batch: np.ndarray

    def __len__(self) -> int:
        return len(self.tp)

    def column(self, field: str) -> np.ndarray:
        """One column by its field's name."""
        return getattr(self, field)

    def value(self, field: str, i: int):
        """Row i's setting of one column, as the workload holds it."""
        return decode(field, self.column(field)[i])

    def workload(self, i: int) -> Workload:
        """Row i as a Workload (equal to the one the configuration names)."""
        b = self.base
        par = dataclasses.replace(b.parallel, **{f: self.value(f, i) for f in PARALLEL_COLUMNS})
        training = dataclasses.replace(
            b.training, **{f: self.value(f, i) for f in TRAINING_COLUMNS}
        )
        return Workload(b.name, b.model, training, par)

    def take(self, rows) -> "WorkloadColumns":
        """The rows at `rows` (indices or a mask), in that order."""
        return WorkloadColumns(self.base, **{f: self.column(f)[rows] for f in COLUMNS})

    def chunks(self) -> np.ndarray:
        """Model chunks a stage holds on each row (ParallelSpec.chunks)."""
        fixed = FIXED_CHUNKS[self.schedule]
        return np.where(fixed > 0, fixed, self.virtual_stages)

    def microbatches(self) -> np.ndarray:
        """Microbatches each pipeline runs per iteration on each row (Workload.microbatches)."""
        return self.global_batch // (self.micro_batch * self.dp)

    def gpus(self) -> np.ndarray:
        """GPUs each row occupies (ParallelSpec.gpus)."""
        return self.tp * self.cp * self.pp * self.dp


def groups(*columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the first row of each distinct combination of the columns' values, each row's index
    into them): one sort, of the columns' values as the digits of one integer."""
    key, span = np.zeros(len(columns[0]), dtype=np.int64), 1
    if not len(key):
        return key, key
    for c in columns:
        low = int(c.min())
        size = int(c.max()) - low + 1
        if span * size >= 1 << 62:  # renumber what is there first: no overflow
            _, key = np.unique(key, return_inverse=True)
            key, span = key.reshape(-1), int(key.max()) + 1
            if span * size >= 1 << 62:
                _, c = np.unique(c, return_inverse=True)
                c, low, size = c.reshape(-1), 0, int(c.max()) + 1
        key = key * size + (c - low)
        span *= size
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def of_rows(base: Workload, rows: dict) -> WorkloadColumns:
    """Columns from a {field: sequence of stored integers} of every column."""
    return WorkloadColumns(base, **{f: np.asarray(rows[f], dtype=np.int64) for f in COLUMNS})


_REST_PARALLEL = tuple(
    f.name for f in dataclasses.fields(ParallelSpec) if f.name not in PARALLEL_COLUMNS
)
_REST_TRAINING = tuple(
    f.name for f in dataclasses.fields(TrainingSpec) if f.name not in TRAINING_COLUMNS
)


def _rest(w: Workload) -> tuple:
    """What rows of one WorkloadColumns share: everything but COLUMNS."""
    t, p = w.training, w.parallel
    return (
        w.name,
        w.model,
        tuple(getattr(t, f) for f in _REST_TRAINING),
        tuple(getattr(p, f) for f in _REST_PARALLEL),
    )


def from_workloads(workloads) -> list[tuple[WorkloadColumns, np.ndarray]]:
    """Workloads as columns: one WorkloadColumns for each set of them that differ only in
    COLUMNS, with the positions of its rows in `workloads`."""
    by_rest: dict = {}
    for i, w in enumerate(workloads):
        by_rest.setdefault(_rest(w), []).append(i)
    out = []
    for positions in by_rest.values():
        ws = [workloads[i] for i in positions]
        rows = {f: [encode(f, getattr(w.parallel, f)) for w in ws] for f in PARALLEL_COLUMNS} | {
            f: [getattr(w.training, f) for w in ws] for f in TRAINING_COLUMNS
        }
        out.append((of_rows(ws[0], rows), np.asarray(positions, dtype=np.int64)))
    return out
