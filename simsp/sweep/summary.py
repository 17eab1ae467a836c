"""A sweep in words: the best K rows that fit, as a table, and what the sweep did."""

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


def table(rows: list[dict]) -> str:
    """Rows as a readable table: the usual settings, then every other that varies."""
    width = max([16, *(len(r["hardware"]) for r in rows)])
    extra = varying(rows)
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in extra}
    head = (
        f"{'hardware':{width}s} {'gpus':>5s} {'tp':>3s} {'cp':>3s} {'pp':>3s} {'dp':>4s} "
        f"{'sp':>3s} "
        f"{'recompute':9s} "
        f"{'b':>2s} {'B':>5s} {'schedule':11s} {'v':>2s} "
        + "".join(f"{c:>{widths[c]}s} " for c in extra)
        + f"{'time s':>8s} {'bubble s':>8s} "
        f"{'tokens/s':>9s} {'MFU':>6s} "
        f"{'peak GiB':>8s} {'fits':>4s} tier"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['hardware']:{width}s} {r['gpus']:>5s} {r['tp']:>3s} {r['cp']:>3s} {r['pp']:>3s} "
            f"{r['dp']:>4s} "
            f"{on_off(r['sp']):>3s} {r['recompute']:9s} {r['micro_batch']:>2s} "
            f"{r['global_batch']:>5s} {r['schedule']:11s} {r['virtual_stages']:>2s} "
            + "".join(f"{r[c]:>{widths[c]}s} " for c in extra)
            + f"{float(r['iteration_time_s']):8.3f} {float(r['bubble_s']):8.3f} "
            f"{float(r['tokens_per_s']):9,.0f} "
            f"{float(r['mfu']):6.1%} {peak_gib(r):8.2f} "
            f"{'yes' if r['fits'] == 'true' else 'no':>4s} {r['tier']}"
        )
    return "\n".join(lines)


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


def plan_table(rows: list[dict], searched: tuple[str, ...], hw) -> str:
    """A plan's best rows: rank, tp cp pp dp and every other searched setting that differs between
    them, then time, tokens/s per GPU, MFU, peak HBM and what it leaves free beside the reserve
    (HardwareSpec.reserve_bytes)."""
    keys = [
        k
        for k in ("tp", "cp", "pp", "dp", *searched[3:])
        if k in ("tp", "cp", "pp", "dp") or len({r[k] for r in rows}) > 1
    ]

    def shown(r, k):
        return on_off(r[k]) if r[k] in ("true", "false") else r[k]

    widths = {k: max(len(PLAN_HEADS[k]), *(len(shown(r, k)) for r in rows)) for k in keys}
    head = (
        " # "
        + "".join(f"{PLAN_HEADS[k]:>{widths[k]}s} " for k in keys)
        + f"{'time s':>8s} {'tok/s/GPU':>9s} {'MFU':>6s} {'peak GiB':>8s} {'free GiB':>8s}"
    )
    lines = [head]
    for i, r in enumerate(rows, 1):
        gpus = int(r["gpus"])
        free = hw.free_bytes(int(r["peak_bytes"])) / GIB
        lines.append(
            f"{i:>2d} "
            + "".join(f"{shown(r, k):>{widths[k]}s} " for k in keys)
            + f"{float(r['iteration_time_s']):8.3f} {float(r['tokens_per_s']) / gpus:9,.0f} "
            f"{float(r['mfu']):6.1%} {peak_gib(r):8.2f} {free:8.2f}"
        )
    return "\n".join(lines)


def summary(o: Outcome) -> str:
    """What the sweep did, in one line."""
    c = o.counts
    return (
        f"{c.configs} configurations ({c.grid_points} grid points: {c.invalid} invalid, "
        f"{c.duplicates} duplicates, {c.fallback} interleaved -> 1f1b"
        f"{f', {c.too_big} over --max-actions' if c.too_big else ''}); {o.resumed} from an "
        f"earlier run, {o.simulated} simulated, {o.screened} closed-form only; {o.wall_s:.1f} s"
    )
