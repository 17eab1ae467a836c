"""GEMM throughput tables by shape: CSV in and out, and an interpolated lookup.

A table row is one measured GEMM: C[m, n] = A[m, k] @ B[k, n], `batch` independent copies,
`layout` in SimuMax's naming for a Megatron linear layer: TN = forward, NN = input gradient
(dgrad), NT = weight gradient (wgrad). The CSV carries '#' comment lines first (provenance,
'# device: ...', '# dtype: ...'), then the columns m,n,k,batch,layout,tflops.
"""

import csv
import heapq
import itertools
import math
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from simsp.errors import InputError
from simsp.textfile import read_text, write_text

LAYOUTS = ("TN", "NN", "NT")
_COLUMNS = ("m", "n", "k", "batch", "layout", "tflops")
_NEIGHBOURS = 4
"""At most this many covered points are blended by a lookup."""


@dataclass(frozen=True)
class GemmPoint:
    """One measured GEMM shape and its achieved throughput."""

    m: int
    """Rows of the output."""
    n: int
    """Columns of the output."""
    k: int
    """Reduction dimension."""
    batch: int
    """Independent GEMMs of this shape in one call (1 for a plain matmul)."""
    layout: str
    """TN (forward), NN (dgrad) or NT (wgrad)."""
    tflops: float
    """Achieved TFLOP/s, counting 2*m*n*k*batch FLOPs."""


@dataclass(frozen=True)
class GemmTable:
    """Measured GEMM throughput by shape.

    `lookup_tflops` rule: an exact (m, n, k, batch, layout) hit returns its value. Otherwise the
    query is *covered* when some measured point of the same layout lies within a factor of 2 of
    it in every one of m, n, k and batch (i.e. the nearest point in the max-norm of log2 ratios
    is <= 1); if no point of that layout covers it, points of any layout are tried. The answer
    is the inverse-squared-distance weighted mean (Euclidean distance in log2 m, n, k, batch) of
    the nearest covering points, at most 4 of them, so it always lies between their values.
    Uncovered queries return None and the caller falls back to its roofline model.
    """

    points: tuple[GemmPoint, ...]
    dtype: str = ""
    device: str = ""
    source: str = ""
    _exact: dict = field(init=False, repr=False, compare=False)
    _cells: dict = field(init=False, repr=False, compare=False)

    @property
    def largest(self) -> tuple[int, int, int]:
        """The largest m, n and k among the points."""
        return (
            max((p.m for p in self.points), default=0),
            max((p.n for p in self.points), default=0),
            max((p.k for p in self.points), default=0),
        )

    def __post_init__(self):
        exact, cells = {}, {}
        for p in self.points:
            exact.setdefault((p.m, p.n, p.k, p.batch, p.layout), p.tflops)
            coords = _log_shape(p.m, p.n, p.k, p.batch)
            entry = (coords, p.tflops)
            for layout in (p.layout, None):  # None: the points of every layout
                cells.setdefault(layout, {}).setdefault(_cell(coords), []).append(entry)
        object.__setattr__(self, "_exact", exact)
        object.__setattr__(self, "_cells", cells)

    def lookup_tflops(self, m, n, k, batch=1, layout="TN") -> float | None:
        """Achieved TFLOP/s for this shape, or None when the table does not cover it."""
        hit = self._exact.get((m, n, k, batch, layout))
        if hit is not None:
            return hit
        if min(m, n, k, batch) <= 0:
            return None
        query = _log_shape(m, n, k, batch)
        near = _covering(query, self._cells.get(layout, {})) or _covering(
            query, self._cells.get(None, {})
        )
        return _idw(near[:_NEIGHBOURS]) if near else None


def _log_shape(m, n, k, batch) -> tuple[float, float, float, float]:
    """The shape as log2 coordinates."""
    return (math.log2(m), math.log2(n), math.log2(k), math.log2(batch))


def _cell(coords) -> tuple[int, ...]:
    """The unit cell of log2 space a point lies in (floor of each coordinate)."""
    return tuple(math.floor(c) for c in coords)


def _covering(query, cells: dict) -> list[tuple[float, float]]:
    """(distance, tflops) of the nearest points within a factor of 2 in every dimension, at most
    _NEIGHBOURS of them, nearest first (heapq.nsmallest: the same as sorting all and cutting).

    Only the 81 unit cells around the query are read, so a lookup costs the same in a table of
    200 shapes as in one of 200,000 of the same density (a scan of every point made large
    tables the slowest part of a run)."""
    near = []
    around = itertools.product(*(range(h - 1, h + 2) for h in _cell(query)))
    for cell in around:
        for coords, tflops in cells.get(cell, ()):
            deltas = [q - c for q, c in zip(query, coords, strict=True)]
            if max(abs(d) for d in deltas) <= 1.0:
                near.append((math.sqrt(sum(d * d for d in deltas)), tflops))
    return heapq.nsmallest(_NEIGHBOURS, near)


def _idw(near: list[tuple[float, float]]) -> float:
    """Inverse-squared-distance weighted mean of (distance, value) pairs (distance > 0)."""
    weights = [1.0 / (d * d) if d > 0 else math.inf for d, _ in near]
    if math.inf in weights:
        return next(v for (d, v) in near if d == 0)
    return sum(w * v for w, (_, v) in zip(weights, near, strict=True)) / sum(weights)


def read_gemm_table(path) -> GemmTable:
    """Read a GEMM CSV ('#' comment header, then m,n,k,batch,layout,tflops); a file read before
    and unchanged since (same size and modification time) is not parsed again, since loading a
    hardware file checks its tables and the cost model then reads them."""
    try:
        st = os.stat(path)
    except OSError:
        return _read_gemm_table(path)  # _read_gemm_table names the problem
    return _cached_gemm_table(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=32)
def _cached_gemm_table(path: str, mtime_ns: int, size: int) -> GemmTable:
    return _read_gemm_table(path)


def _read_gemm_table(path) -> GemmTable:
    path = Path(path)
    lines = read_text(path).splitlines()
    meta = _comment_fields(line for line in lines if line.startswith("#"))
    body = [line for line in lines if line.strip() and not line.startswith("#")]
    try:
        reader = csv.DictReader(body)
        missing = [c for c in _COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise InputError(
                path,
                "columns",
                reader.fieldnames,
                f"need columns {','.join(_COLUMNS)}; missing {missing}",
            )
        points = tuple(_point(path, i + 2, row) for i, row in enumerate(reader))
    except csv.Error as e:
        raise InputError(path, "file", str(path), f"is not a readable CSV ({e})") from None
    if not points:
        raise InputError(path, "rows", 0, "a GEMM table needs at least one row")
    return GemmTable(points, meta.get("dtype", ""), meta.get("device", ""), str(path))


def _comment_fields(comments) -> dict[str, str]:
    """'# key: value' comment lines as a dict (keys lower-case)."""
    fields = {}
    for line in comments:
        key, sep, value = line.lstrip("#").partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    return fields


def _point(path: Path, row_no: int, row: dict) -> GemmPoint:
    """One CSV row as a GemmPoint; InputError naming the row and column when malformed."""
    if row.get(None) or None in row.values():
        raise InputError(
            path,
            f"row {row_no}",
            row.get(None),
            f"must have the {len(_COLUMNS)} columns {','.join(_COLUMNS)}, no more and no fewer",
        )
    values = {}
    for col in ("m", "n", "k", "batch"):
        values[col] = _positive(path, row_no, col, row[col], int)
    layout = (row["layout"] or "").strip().upper()
    if layout not in LAYOUTS:
        raise InputError(
            path, f"row {row_no}.layout", row["layout"], f"must be one of {', '.join(LAYOUTS)}"
        )
    tflops = _positive(path, row_no, "tflops", row["tflops"], float)
    return GemmPoint(layout=layout, tflops=tflops, **values)


def _positive(path: Path, row_no: int, col: str, text, kind):
    """Parse `text` as a positive finite `kind` (int or float)."""
    try:
        value = kind((text or "").strip())
    except ValueError:
        value = None
    if value is not None and kind is int and value > 2**53:
        value = None  # beyond any GEMM, and past what a float holds exactly
    if value is None or not value > 0 or not math.isfinite(value):
        raise InputError(path, f"row {row_no}.{col}", text, f"must be a positive {kind.__name__}")
    return value


def write_gemm_table(table: GemmTable, path, comments: list[str]) -> None:
    """Write `table` as CSV: `comments` as '# ' lines, then device and dtype, then the rows."""
    lines = [f"# {c}".rstrip() for c in comments]
    lines += [f"# device: {table.device}", f"# dtype: {table.dtype}", ",".join(_COLUMNS)]
    lines += [f"{p.m},{p.n},{p.k},{p.batch},{p.layout},{p.tflops:.3f}" for p in table.points]
    write_text(path, "\n".join(lines) + "\n")  # whole, or an existing file kept
