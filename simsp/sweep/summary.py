"""A sweep in words: the best K rows that fit, as a table, and what the sweep did."""

import textwrap

from simsp.present.table import Column, render, width_of_output, words
from simsp.sweep.rows import KEY_COLUMNS, on_off, peak_gib, ranked
from simsp.sweep.runner import Outcome
from simsp.units import GIB


def best(rows: list[dict], k: int) -> list[dict]:
    """The k rows that fit with the highest throughput, i.e. the fastest where the global batch is
    fixed (ties by key, so the order is deterministic)."""
    return ranked(rows)[:k]


SHOWN = (
    "workload",
    "hardware",
    "gpus",
    "tp",
    "cp",
    "pp",
    "dp",
    "sp",
    "recompute",
    "micro_batch",
    "global_batch",
    "schedule",
    "virtual_stages",
)
"""The key columns every table shows; any other that differs between its rows is added."""


def varying(rows: list[dict]) -> list[str]:
    """The key columns beyond SHOWN whose value differs between rows (cp, ep, the dispatcher,
    ...), in column order."""
    return [c for c in KEY_COLUMNS if c not in SHOWN and len({r[c] for r in rows}) > 1]


HEADS = {"micro_batch": "b", "global_batch": "B", "virtual_stages": "v"}
"""Short heads of the settings columns."""
NUMBERS = ("gpus", "tp", "cp", "pp", "dp", "ep", "etp", "micro_batch", "global_batch")
"""Settings columns that hold numbers (aligned right); the rest are words."""


def _setting(r: dict, c: str) -> str:
    return on_off(r[c]) if r[c] in ("true", "false") else r[c]


def table(rows: list[dict], width: int | None = None) -> str:
    """Rows as a readable table: the usual settings, then every other that varies, then the
    results. A usual setting all rows share is said once above the table instead (`every row:
    hardware=dgx-h100, gpus=1024, ...`), so that the table fits a 100-column terminal."""
    shared = [c for c in SHOWN if len(rows) > 1 and len({r[c] for r in rows}) == 1]
    several = {c for c in SHOWN if len({r[c] for r in rows}) > 1}
    keys = [c for c in SHOWN if c not in shared and (c != "workload" or c in several)]
    keys += varying(rows)
    columns = [
        Column(HEADS.get(c, c)) if c in NUMBERS else words(HEADS.get(c, c), fold=c == "hardware")
        for c in keys
    ] + [
        *(Column(h) for h in ("time s", "bubble s", "tokens/s", "MFU", "peak GiB")),
        words("fits"),
        words("tier"),
    ]
    cells = [
        [_setting(r, c) for c in keys]
        + [
            f"{float(r['iteration_time_s']):.3f}",
            f"{float(r['bubble_s']):.3f}",
            f"{float(r['tokens_per_s']):,.0f}",
            f"{float(r['mfu']):.1%}",
            f"{peak_gib(r):.2f}",
            "yes" if r["fits"] == "true" else "no",
            r["tier"],
        ]
        for r in rows
    ]
    above = [f"{HEADS.get(c, c)}={_setting(rows[0], c)}" for c in shared if c != "workload"]
    width = width or width_of_output()
    said = textwrap.wrap(f"every row: {', '.join(above)}", width, subsequent_indent="  ")
    return "\n".join([*(said if above else []), render(columns, cells, width)])


PLAN_HEADS = {
    "tp": "tp",
    "cp": "cp",
    "pp": "pp",
    "dp": "dp",
    "schedule": "schedule",
    "virtual_stages": "v",
    "micro_batch": "b",
    "recompute": "recompute",
    "sp": "sp",
    "distributed_optimizer": "dist-opt",
    "fsdp": "fsdp",
    "ep": "ep",
    "etp": "etp",
}
"""A plan table's column heads, by row column."""


def plan_table(rows: list[dict], searched: tuple[str, ...], hw, width: int | None = None) -> str:
    """A plan's best rows: rank, tp cp pp dp and every other searched setting that differs between
    them, then time, tokens/s per GPU, MFU, peak HBM and what it leaves free beside the reserve
    (HardwareSpec.reserve_bytes)."""
    keys = [
        k
        for k in ("tp", "cp", "pp", "dp", *searched[3:])
        if k in ("tp", "cp", "pp", "dp") or len({r[k] for r in rows}) > 1
    ]
    columns = [
        Column("#"),
        *(Column(PLAN_HEADS[k]) if k in NUMBERS else words(PLAN_HEADS[k]) for k in keys),
        *(Column(h) for h in ("time s", "tok/s/GPU", "MFU", "peak GiB", "free GiB")),
    ]
    cells = [
        [
            str(i),
            *(_setting(r, k) for k in keys),
            f"{float(r['iteration_time_s']):.3f}",
            f"{float(r['tokens_per_s']) / int(r['gpus']):,.0f}",
            f"{float(r['mfu']):.1%}",
            f"{peak_gib(r):.2f}",
            f"{hw.free_bytes(int(r['peak_bytes'])) / GIB:.2f}",
        ]
        for i, r in enumerate(rows, 1)
    ]
    return render(columns, cells, width)


def summary(o: Outcome) -> str:
    """What the sweep did, in one line."""
    c = o.counts
    return (
        f"{c.configs} configurations ({c.grid_points} grid points: {c.invalid} invalid, "
        f"{c.duplicates} duplicates, {c.fallback} interleaved -> 1f1b"
        f"{f', {c.too_big} over --max-actions' if c.too_big else ''}); {o.resumed} from an "
        f"earlier run, {o.simulated} simulated, {o.screened} closed-form only; {o.wall_s:.1f} s"
    )
