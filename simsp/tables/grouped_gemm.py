"""Grouped-GEMM throughput: G equal groups of an m x n x k GEMM in one call, as a mixture of
experts' routed experts run them (Transformer Engine's grouped GEMM). CSV: '#' provenance lines,
then groups,m,n,k,layout,tflops, the shape always the forward one and `layout` the stage (TN
forward, NN input gradient, NT weight gradient, as the GEMM tables name them), FLOPs 2 G m n k.
"""

import csv
import math
from dataclasses import dataclass

from simsp.errors import InputError
from simsp.tables.gemm import LAYOUTS
from simsp.textfile import read_text, write_text

_COLUMNS = ("groups", "m", "n", "k", "layout", "tflops")


@dataclass(frozen=True)
class GroupedPoint:
    """One measured grouped GEMM."""

    groups: int
    m: int
    """Rows of each group."""
    n: int
    k: int
    layout: str
    tflops: float

    @property
    def flops(self) -> float:
        return 2.0 * self.groups * self.m * self.n * self.k


@dataclass(frozen=True)
class GroupedGemmTable:
    points: tuple[GroupedPoint, ...]

    def nearest(self, groups: int, m: int, n: int, k: int, layout: str) -> GroupedPoint:
        """The measured point of the same stage nearest in log2 of (groups, m, n, k)."""

        def distance(p: GroupedPoint) -> float:
            return sum(
                math.log2(a / b) ** 2 for a, b in ((p.groups, groups), (p.m, m), (p.n, n), (p.k, k))
            )

        return min((p for p in self.points if p.layout == layout), key=distance)


def read_grouped_gemm_table(path) -> GroupedGemmTable:
    """Read a grouped-GEMM CSV; an unreadable row is one InputError naming file, row and rule."""
    lines = [line for line in read_text(path).splitlines() if not line.startswith("#")]
    reader = csv.DictReader(lines)
    if tuple(reader.fieldnames or ()) != _COLUMNS:
        raise InputError(path, "header", reader.fieldnames, f"must be {','.join(_COLUMNS)}")
    points = []
    for i, row in enumerate(reader, 1):
        try:
            g, m, n, k = (int(row[c]) for c in ("groups", "m", "n", "k"))
            tflops = float(row["tflops"])
        except (TypeError, ValueError):
            raise InputError(path, f"row {i}", row, "needs whole numbers and a rate") from None
        if min(g, m, n, k) <= 0 or not tflops > 0 or not math.isfinite(tflops):
            raise InputError(path, f"row {i}", row, "needs positive sizes and a positive rate")
        if row["layout"] not in LAYOUTS:
            raise InputError(path, f"row {i}.layout", row["layout"], f"must be one of {LAYOUTS}")
        points.append(GroupedPoint(g, m, n, k, row["layout"], tflops))
    if not {p.layout for p in points} >= set(LAYOUTS):
        raise InputError(path, "rows", len(points), "must measure every stage (TN, NN, NT)")
    return GroupedGemmTable(tuple(points))


def write_grouped_gemm_table(points, path, comments: list[str]) -> None:
    """Write grouped-GEMM points as the CSV read_grouped_gemm_table reads: `comments` as '# '
    lines, then the rows (3 decimals of TFLOP/s)."""
    lines = [f"# {c}".rstrip() for c in comments] + [",".join(_COLUMNS)]
    lines += [f"{p.groups},{p.m},{p.n},{p.k},{p.layout},{p.tflops:.3f}" for p in points]
    write_text(path, "\n".join(lines) + "\n")  # whole, or an existing file kept
