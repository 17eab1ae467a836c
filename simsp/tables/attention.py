"""FlashAttention throughput tables: CSV in and out, and a lookup by head size, sequence
length, mask and direction.

A row is one published or profiled measurement of a fused attention kernel: `gpu`, `kernel`
(fa2, fa3, ...), `head_dim`, `seq_len`, `causal`, `direction` (fwd, bwd or fwd_bwd), achieved
`tflops` and its `source`, and optionally `batch_heads`, the batch x query heads of the call it
timed (empty: not stated, as for the papers' figures, which run a fixed number of tokens).
TFLOP/s count FLOPs as flash-attention's own benchmarks do
(benchmarks/benchmark_flash_attention.py): forward 4 s² d per batch-head, halved when causal;
backward 2.5 times that; forward + backward 3.5 times. '#' lines at the top are provenance.
"""

import bisect
import csv
import io
import math
from dataclasses import dataclass, field

from simsp.errors import InputError
from simsp.textfile import read_text, write_text

COLUMNS = ("gpu", "kernel", "head_dim", "seq_len", "causal", "direction", "tflops", "source")
WIDTH_COLUMN = "batch_heads"
"""The optional last column: written only by tables that state it."""
DIRECTIONS = ("fwd", "bwd", "fwd_bwd")
BACKWARD_FLOPS_FACTOR = 2.5
"""A backward's FLOPs over its forward's, in the benchmarks' count (two matmuls forward, five
backward: the scores are recomputed)."""


@dataclass(frozen=True)
class AttentionPoint:
    """One measured fused-attention rate."""

    gpu: str
    kernel: str
    head_dim: int
    seq_len: int
    causal: bool
    direction: str
    tflops: float
    source: str = ""
    batch_heads: int = 0
    """Batch x query heads of the timed call; 0 where not stated."""


@dataclass(frozen=True)
class AttentionTable:
    """Fused-attention throughput by (head_dim, causal, direction) and sequence length.

    `lookup_tflops` rule: among rows of the same mask and direction, the nearest measured head
    size (in log scale; ties to the larger); at that head size, the fastest kernel at each
    measured sequence length (a framework dispatches to the best it has), interpolated linearly
    in log2(seq_len) between neighbours and held flat beyond the measured range. A direction
    missing for that mask (published backward figures are often non-causal only) takes the other
    mask's rate for that direction times the measured causal / non-causal forward ratio at the
    same head size and length; failing that (and for a forward with no forward curve), the mask's
    fwd_bwd rate: published figures of older kernels give only forward + backward, and pricing
    both directions at that one rate prices their sum exactly. None when nothing covers it.

    Rows that state `batch_heads` add a second axis: a call of few batch-heads (a TP or CP rank's
    share of the heads, micro batch 1) fills fewer SMs and runs slower. At a measured length the
    rate is interpolated linearly in log2(batch_heads) between the measured widths (flat beyond
    them), then across lengths as above; a call of unknown width (0) takes the fastest measured
    width, and rows without a width stand for any.
    """

    points: tuple[AttentionPoint, ...]
    source: str = ""
    _curves: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        curves: dict = {}
        for p in self.points:
            key = (p.causal, p.direction, p.head_dim)
            widths = curves.setdefault(key, {}).setdefault(p.seq_len, {})
            widths[p.batch_heads] = max(widths.get(p.batch_heads, 0.0), p.tflops)
        object.__setattr__(
            self,
            "_curves",
            {
                k: tuple((s, tuple(sorted(w.items()))) for s, w in sorted(v.items()))
                for k, v in curves.items()
            },
        )

    def lookup_tflops(
        self, head_dim: int, seq_len: int, causal: bool, direction: str, batch_heads: int = 0
    ) -> float | None:
        """Achieved TFLOP/s (benchmark FLOP count) of one direction, or None if not covered."""
        rate = self._curve_rate(head_dim, seq_len, causal, direction, batch_heads)
        if rate is not None:
            return rate
        if direction == "fwd":
            return self._curve_rate(head_dim, seq_len, causal, "fwd_bwd", batch_heads)
        other = self._curve_rate(head_dim, seq_len, not causal, direction, batch_heads)
        fwd = self._curve_rate(head_dim, seq_len, causal, "fwd", batch_heads)
        fwd_other = self._curve_rate(head_dim, seq_len, not causal, "fwd", batch_heads)
        if other is not None and fwd is not None and fwd_other:
            return other * fwd / fwd_other
        return self._curve_rate(head_dim, seq_len, causal, "fwd_bwd", batch_heads)

    def _curve_rate(
        self, head_dim: int, seq_len: int, causal: bool, direction: str, batch_heads: int
    ) -> float | None:
        """The measured curve of exactly this mask and direction, at the nearest head size, each
        length's rate taken at the call's width (`_at_width`)."""
        dims = [d for (c, r, d) in self._curves if c == causal and r == direction]
        if not dims:
            return None
        nearest = min(dims, key=lambda d: (abs(math.log(d / head_dim)), -d))
        curve = self._curves[(causal, direction, nearest)]
        return _interpolate(tuple((s, _at_width(w, batch_heads)) for s, w in curve), seq_len)


def _at_width(widths: tuple[tuple[int, float], ...], batch_heads: int) -> float:
    """The rate at one length for a call of `batch_heads`: the fastest of the rows without a
    width and the stated widths, those interpolated in log2(batch_heads) (flat beyond them;
    their fastest for a call of unknown width)."""
    unstated = [r for b, r in widths if b == 0]
    stated = tuple((b, r) for b, r in widths if b > 0)
    rates = [max(unstated)] if unstated else []
    if stated:
        rates.append(
            _interpolate(stated, batch_heads) if batch_heads > 0 else max(r for _, r in stated)
        )
    return max(rates)


def _interpolate(curve: tuple[tuple[int, float], ...], x: int) -> float:
    """The rate at x (a sequence length, or a width), linear in log2(x) between the measured
    neighbours of the sorted (x, rate) curve; flat outside them."""
    xs = [s for s, _ in curve]
    i = bisect.bisect_left(xs, x)
    if i < len(curve) and xs[i] == x:
        return curve[i][1]
    if i == 0:
        return curve[0][1]
    if i == len(curve):
        return curve[-1][1]
    (s0, r0), (s1, r1) = curve[i - 1], curve[i]
    w = math.log2(x / s0) / math.log2(s1 / s0)
    return r0 + w * (r1 - r0)


def _row(path, n: int, row: dict) -> AttentionPoint:
    if row.get(None):  # csv.DictReader files fields beyond the header under None
        raise InputError(path, f"row {n}", row[None], "has more fields than the header")
    try:
        point = AttentionPoint(
            row["gpu"],
            row["kernel"],
            int(row["head_dim"]),
            int(row["seq_len"]),
            {"true": True, "false": False}[row["causal"].strip().lower()],
            row["direction"].strip(),
            float(row["tflops"]),
            row.get("source") or "",
            int(row.get(WIDTH_COLUMN) or 0),
        )
    except (KeyError, ValueError, AttributeError, TypeError):
        raise InputError(
            path,
            f"row {n}",
            row,
            f"needs columns {', '.join(COLUMNS)} (and optionally {WIDTH_COLUMN}) with integer "
            "head_dim, seq_len and batch_heads, causal true/false and numeric tflops",
        ) from None
    if point.direction not in DIRECTIONS:
        raise InputError(
            path, f"row {n}.direction", point.direction, f"must be one of {', '.join(DIRECTIONS)}"
        )
    if not (0 < point.tflops < math.inf and point.head_dim > 0 and point.seq_len > 0):
        raise InputError(
            path, f"row {n}", row, "head_dim, seq_len and tflops must be positive and finite"
        )
    if point.batch_heads < 0:
        raise InputError(path, f"row {n}.{WIDTH_COLUMN}", point.batch_heads, "must be >= 0")
    return point


def read_attention_table(path) -> AttentionTable:
    """Read a fused-attention CSV; InputError names the file and the row for a bad one."""
    lines = [
        line for line in read_text(path).splitlines() if line.strip() and not line.startswith("#")
    ]
    rows = list(csv.DictReader(lines))
    if not rows:
        raise InputError(path, "file", str(path), f"has no rows (columns: {', '.join(COLUMNS)})")
    return AttentionTable(tuple(_row(path, n, r) for n, r in enumerate(rows, 1)), str(path))


def write_attention_table(path, points, comments: tuple[str, ...] = ()) -> None:
    """Write points as the CSV `read_attention_table` reads (used by `simsp profile attention`),
    whole or not at all."""
    f = io.StringIO(newline="")
    f.writelines(f"# {c}\n" for c in comments)
    w = csv.writer(f)
    widths = any(p.batch_heads for p in points)
    w.writerow(COLUMNS + ((WIDTH_COLUMN,) if widths else ()))
    for p in points:
        row = [
            p.gpu,
            p.kernel,
            p.head_dim,
            p.seq_len,
            str(p.causal).lower(),
            p.direction,
            f"{p.tflops:.6g}",
            p.source,
        ]
        w.writerow(row + ([p.batch_heads or ""] if widths else []))
    write_text(path, f.getvalue())
