"""nccl-tests logs in, and the time of a collective by message size (`nccl_writer` writes them).

Formats read (auto-detected, see `read_nccl_log`):

* current nccl-tests output (>= Aug 2022): ``size count type redop root`` then out-of-place
  ``time algbw busbw #wrong`` and in-place ``time algbw busbw #wrong``;
* older nccl-tests output: no ``root`` column, ``error`` is a float or ``N/A``;
* vTrain look-up tables: CSV ``size(B),count,type,time(ns),busbw(GB/s),time(ns),busbw(GB/s)``.

Lines may carry an MPI prefix such as ``[1,0]<stdout>:``. The ``size`` column is the whole
buffer in bytes (for all_gather / reduce_scatter: ranks x per-rank chunk); the time kept is the
out-of-place one.
"""

import math
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from simsp.errors import InputError
from simsp.textfile import read_text

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "send_recv", "all_to_all")

BUSBW_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "send_recv": lambda n: 1.0,
    "all_to_all": lambda n: (n - 1) / n,
}
"""busbw = algbw x factor(ranks) (nccl-tests doc/PERFORMANCE.md)."""

TEST_NAMES = {
    "all_reduce": "all_reduce_perf",
    "all_gather": "all_gather_perf",
    "reduce_scatter": "reduce_scatter_perf",
    "send_recv": "sendrecv_perf",
    "all_to_all": "alltoall_perf",
}
REDOPS = {
    "all_reduce": "sum",
    "all_gather": "none",
    "reduce_scatter": "sum",
    "send_recv": "none",
    "all_to_all": "none",
}
PER_RANK_COUNT = ("all_gather", "reduce_scatter")
TYPE_BYTES = {
    "int8": 1,
    "uint8": 1,
    "half": 2,
    "float16": 2,
    "bfloat16": 2,
    "int32": 4,
    "uint32": 4,
    "float": 4,
    "float32": 4,
    "int64": 8,
    "uint64": 8,
    "double": 8,
    "float64": 8,
    "f8e4m3": 1,
    "f8e5m2": 1,
}
_MPI_PREFIX = re.compile(r"^\[\d+,\d+\]<\w+>:")
_RANK_LINE = re.compile(r"^#\s+Rank\s+(\d+)\s+(?:Group|Pid)\b")
_NGPUS = re.compile(r"nThread\s+(\d+)\s+nGpus\s+(\d+)")
_TEST_OP = re.compile(r"^#\s*(?:Collective test starting:|Testing)\s+(\w+)")


@dataclass(frozen=True)
class CollectiveTable:
    """Measured time of one collective vs message size, one group size and link.

    `time_s` gives back each measurement at its size and interpolates linearly in
    log(size)-log(time) between neighbouring sizes, so it is monotone between them and never
    invents a point the log does not hold (where a log itself dips, e.g. latency-floor jitter,
    the lookup follows it).
    """

    op: str
    """One of COLLECTIVES."""
    ranks: int
    """Group size (GPUs taking part)."""
    sizes_bytes: tuple[int, ...]
    """Ascending, unique; nccl-tests 'size' column (whole buffer)."""
    times_s: tuple[float, ...]
    """Out-of-place time at each size, as measured."""
    source: str = ""
    """File the table came from (for messages)."""
    _log_sizes: tuple[float, ...] = field(init=False, repr=False, compare=False)
    _log_times: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        _check_table(self)
        object.__setattr__(self, "_log_sizes", tuple(math.log(x) for x in self.sizes_bytes))
        object.__setattr__(self, "_log_times", tuple(math.log(t) for t in self.times_s))

    def busbw_gbps(self) -> tuple[float, ...]:
        """nccl-tests bus bandwidth (GB/s = 1e9 B/s) of every measured point."""
        factor = BUSBW_FACTORS[self.op](self.ranks)
        return tuple(
            s / t / 1e9 * factor for s, t in zip(self.sizes_bytes, self.times_s, strict=True)
        )

    def time_s(self, size_bytes: float) -> float:
        """Seconds for one collective over `size_bytes` (whole buffer); 0 for nothing to send.

        Piecewise linear in log(size)-log(time) between measured sizes; below the smallest size
        the smallest size's time (latency floor); above the largest, that size's bus bandwidth.
        """
        sizes, times = self.sizes_bytes, self.times_s
        if size_bytes <= 0:
            return 0.0
        if size_bytes <= sizes[0]:
            return times[0]
        if size_bytes >= sizes[-1]:
            return times[-1] * (size_bytes / sizes[-1])
        i = bisect_right(sizes, size_bytes)
        if sizes[i - 1] == size_bytes:
            return times[i - 1]
        x0, x1 = self._log_sizes[i - 1], self._log_sizes[i]
        y0, y1 = self._log_times[i - 1], self._log_times[i]
        return math.exp(y0 + (math.log(size_bytes) - x0) / (x1 - x0) * (y1 - y0))


def _check_table(table: CollectiveTable) -> None:
    """Raise InputError unless the table is usable."""
    src = table.source or "<table>"
    if table.op not in COLLECTIVES:
        raise InputError(src, "op", table.op, f"must be one of {', '.join(COLLECTIVES)}")
    if not isinstance(table.ranks, int) or table.ranks < 2:
        raise InputError(src, "ranks", table.ranks, "a collective needs at least 2 ranks")
    if not table.sizes_bytes or len(table.sizes_bytes) != len(table.times_s):
        raise InputError(
            src,
            "sizes_bytes",
            len(table.sizes_bytes),
            f"need one time per size and at least one point ({len(table.times_s)} times)",
        )
    if (
        any(b <= a for a, b in zip(table.sizes_bytes, table.sizes_bytes[1:], strict=False))
        or table.sizes_bytes[0] <= 0
    ):
        raise InputError(
            src, "sizes_bytes", table.sizes_bytes[:4], "must be positive, ascending, unique"
        )
    if not all(t > 0 and math.isfinite(t) for t in table.times_s):
        raise InputError(src, "times_s", min(table.times_s), "times must be positive and finite")


def merge_tables(primary: CollectiveTable, secondary: CollectiveTable) -> CollectiveTable:
    """`primary` over its size range, `secondary` outside it (e.g. small messages from another
    log)."""
    if (primary.op, primary.ranks) != (secondary.op, secondary.ranks):
        raise InputError(
            secondary.source,
            "op/ranks",
            (secondary.op, secondary.ranks),
            f"cannot merge with {primary.source} ({primary.op}, {primary.ranks} ranks)",
        )
    lo, hi = primary.sizes_bytes[0], primary.sizes_bytes[-1]
    points = dict(zip(primary.sizes_bytes, primary.times_s, strict=True))
    points.update(
        (s, t)
        for s, t in zip(secondary.sizes_bytes, secondary.times_s, strict=True)
        if s < lo or s > hi
    )
    sizes = tuple(sorted(points))
    return CollectiveTable(
        primary.op,
        primary.ranks,
        sizes,
        tuple(points[s] for s in sizes),
        f"{primary.source} + {secondary.source}",
    )


# ---------------------------------------------------------------- reading


def read_nccl_log(path, op: str | None = None, ranks: int | None = None) -> CollectiveTable:
    """Read an nccl-tests log (current or old layout) or a vTrain LUT CSV.

    op: from the log's '# Collective test starting: X_perf' / '# Testing X' line, else `op`,
    else the file name (AR_..., all_reduce_perf..., nccl_N.log -> all_reduce).
    ranks: from the log's rank lines and 'nThread T nGpus G' (the larger of max rank + 1 and
    T x G), else `ranks`, else the file name (AR_GPU8... -> 8, nccl_16.log -> 16).
    An argument that contradicts the log's own header is an error. Duplicate sizes keep the
    first row; rows without a positive time are skipped.
    """
    path = Path(path)
    lines = _read_lines(path)
    if lines and lines[0].replace(" ", "").lower().startswith("size(b),"):
        log_op, log_ranks, rows = None, None, _lut_rows(lines)
    else:
        log_op, log_ranks, rows = _log_op(path, lines), _log_ranks(lines), _log_rows(lines)
    sizes, times = _first_per_size(rows)
    if not sizes:
        raise InputError(path, "rows", 0, "no parsable nccl-tests or vTrain LUT data rows")
    op = _pick(path, "op", log_op, op, _op_from_name(path.name))
    ranks = _pick(path, "ranks", log_ranks, ranks, _ranks_from_name(path.name))
    return CollectiveTable(op, ranks, sizes, times, str(path))


def _read_lines(path: Path) -> list[str]:
    """Non-empty lines with any MPI output prefix removed."""
    text = read_text(path)
    lines = (_MPI_PREFIX.sub("", line).strip() for line in text.splitlines())
    return [line for line in lines if line]


def _pick(path: Path, key: str, from_log, from_arg, from_name):
    """The log's own value, else the argument, else the file name's; conflicts are errors."""
    if from_log is not None and from_arg is not None and from_log != from_arg:
        raise InputError(path, key, from_arg, f"the log itself says {key}={from_log!r}")
    value = next((v for v in (from_log, from_arg, from_name) if v is not None), None)
    if value is None:
        raise InputError(
            path, key, None, f"cannot tell the {key} from the log or its name; pass {key}="
        )
    if key == "op" and value not in COLLECTIVES:
        raise InputError(
            path, key, value, f"unknown collective; expected one of {', '.join(COLLECTIVES)}"
        )
    return value


def _normalise_op(name: str) -> str:
    """'all_reduce_perf' / 'allreduce' / 'sendrecv' -> our collective names."""
    name = name.lower().removesuffix("_perf")
    return {
        "allreduce": "all_reduce",
        "allgather": "all_gather",
        "reducescatter": "reduce_scatter",
        "sendrecv": "send_recv",
        "p2p": "send_recv",
        "alltoall": "all_to_all",
    }.get(name, name)


def _log_op(path: Path, lines: list[str]) -> str | None:
    """The collective named by the log's header lines, if any."""
    ops = {_normalise_op(m.group(1)) for m in map(_TEST_OP.match, lines) if m}
    if len(ops) > 1:
        raise InputError(path, "op", sorted(ops), "one collective per log file")
    return ops.pop() if ops else None


def _log_ranks(lines: list[str]) -> int | None:
    """Group size from the rank lines and the 'nThread T nGpus G' line."""
    ranks = [int(m.group(1)) + 1 for m in map(_RANK_LINE.match, lines) if m]
    gpus = [int(m.group(1)) * int(m.group(2)) for m in map(_NGPUS.search, lines) if m]
    return max(ranks + gpus) if ranks or gpus else None


def _op_from_name(name: str) -> str | None:
    """Collective implied by a file name (vTrain 'AR_GPU8...', Echo 'nccl_16.log', '*_perf')."""
    low = name.lower()
    for prefix, op in (
        ("ar_", "all_reduce"),
        ("ag_", "all_gather"),
        ("rs_", "reduce_scatter"),
        ("sr_", "send_recv"),
        ("p2p_", "send_recv"),
    ):
        if low.startswith(prefix):
            return op
    for key in (
        "all_reduce",
        "allreduce",
        "all_gather",
        "allgather",
        "reduce_scatter",
        "reducescatter",
        "send_recv",
        "sendrecv",
    ):
        if key in low:
            return _normalise_op(key)
    return "all_reduce" if re.fullmatch(r"nccl_\d+\.log", low) else None


def _ranks_from_name(name: str) -> int | None:
    """Group size implied by a file name ('AR_GPU8_...' -> 8, 'nccl_16.log' -> 16)."""
    m = re.search(r"gpus?_?(\d+)", name, re.I) or re.fullmatch(r"nccl_(\d+)\.log", name, re.I)
    return int(m.group(1)) if m else None


def _lut_rows(lines: list[str]) -> list[tuple[int, float]]:
    """(size, seconds) rows of a vTrain LUT: size(B),count,type,time(ns),busbw,time(ns),busbw."""
    rows = []
    for line in lines[1:]:
        fields = line.split(",")
        row = _number_pair(fields[0], fields[3], 1e-9) if len(fields) >= 4 else None
        if row:
            rows.append(row)
    return rows


def _log_rows(lines: list[str]) -> list[tuple[int, float]]:
    """(size, seconds) out-of-place rows of an nccl-tests log, either layout."""
    header = next((line for line in lines if line.startswith("#") and "redop" in line), None)
    has_root = None if header is None else "root" in header.split()
    rows = []
    for line in lines:
        tokens = line.split()
        if line.startswith("#") or len(tokens) < 12 or not tokens[2].replace("_", "").isalnum():
            continue
        root = has_root if has_root is not None else len(tokens) >= 13
        row = _number_pair(tokens[0], tokens[5 if root else 4], 1e-6)
        if row:
            rows.append(row)
    return rows


def _number_pair(size_text: str, time_text: str, unit_s: float) -> tuple[int, float] | None:
    """(int size, seconds) or None when either field is not a positive number."""
    try:
        size, time = int(size_text), float(time_text) * unit_s
    except ValueError:
        return None
    return (size, time) if size > 0 and time > 0 and math.isfinite(time) else None


def _first_per_size(rows) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Sorted sizes and times, keeping the first row of any repeated size."""
    first = {}
    for size, time in rows:
        first.setdefault(size, time)
    sizes = tuple(sorted(first))
    return sizes, tuple(first[s] for s in sizes)
