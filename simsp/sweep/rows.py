"""A sweep's output rows: the columns, how values are written, and small readings of a row.

A row is a dict of strings, column -> value exactly as the CSV holds it (`fmt`): one row per
configuration, named by its KEY_COLUMNS and measured by its RESULT_COLUMNS.
"""

from simsp.spec.knobs import KNOBS, SECTIONS
from simsp.units import GIB

KEY_KNOBS = tuple(
    k for section in ("parallel", "training", "model") for k in KNOBS if k.section == section
)
"""Every knob, parallel settings first (what a sweep varies most), then batch, then model."""
KEY_COLUMNS = ("workload", "hardware", "gpus") + tuple(k.short for k in KEY_KNOBS)
"""The columns that name a configuration: a row's key for resuming."""
RESULT_COLUMNS = (
    "iteration_time_s",
    "bubble_s",
    "mfu",
    "hfu",
    "tokens_per_s",
    "peak_bytes",
    "capacity_bytes",
    "fits",
    "tier",
)
COLUMNS = KEY_COLUMNS + RESULT_COLUMNS
INT_COLUMNS = ("gpus", "peak_bytes", "capacity_bytes") + tuple(
    k.short for k in KEY_KNOBS if k.kind is int
)
FLOAT_COLUMNS = ("iteration_time_s", "bubble_s", "mfu", "hfu", "tokens_per_s") + tuple(
    k.short for k in KEY_KNOBS if k.kind is float
)
assert {s for s, _ in SECTIONS} == {k.section for k in KEY_KNOBS}


def fmt(value) -> str:
    """A value as written to the CSV: true/false, full-precision floats, plain ints and strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def make_row(key, t, mfu, hfu, tokens, peak, capacity, fits, tier, bubble=0.0) -> dict:
    """An output row from a configuration's key and its measured values."""
    values = dict(zip(KEY_COLUMNS, key, strict=True))
    values.update(
        iteration_time_s=fmt(float(t)),
        bubble_s=fmt(float(bubble)),
        mfu=fmt(float(mfu)),
        hfu=fmt(float(hfu)),
        tokens_per_s=fmt(float(tokens)),
        peak_bytes=fmt(round(peak)),
        capacity_bytes=fmt(int(capacity)),
        fits=fmt(bool(fits)),
        tier=tier,
    )
    return values


def row_key(row: dict) -> tuple[str, ...]:
    """The KEY_COLUMNS values of a row (equal to its configuration's key)."""
    return tuple(row[c] for c in KEY_COLUMNS)


def typed(row: dict) -> dict:
    """A row with numbers and booleans as such (for Parquet and JSON)."""
    out = {}
    for c in COLUMNS:
        v = row[c]
        if v in ("true", "false"):
            out[c] = v == "true"
        elif c in INT_COLUMNS:
            out[c] = int(v)
        elif c in FLOAT_COLUMNS:
            out[c] = float(v)
        else:
            out[c] = v
    return out


def ranked(rows: list[dict]) -> list[dict]:
    """The rows that fit, highest throughput first, i.e. the fastest where the global batch is
    fixed (ties by key, so the order is deterministic)."""
    fitting = [r for r in rows if r["fits"] == "true"]
    return sorted(fitting, key=lambda r: (-float(r["tokens_per_s"]), row_key(r)))


def on_off(flag: str) -> str:
    """A written boolean as on/off."""
    return "on" if flag == "true" else "off"


def peak_gib(row: dict) -> float:
    """A row's peak HBM per GPU in GiB."""
    return int(row["peak_bytes"]) / GIB


def describe_row(r: dict) -> str:
    """A configuration in a few words: its layout (cp, ep and etp where a row has them and they
    are not 1, the optimizer's sharding where there is one), recompute, schedule and batch."""
    chunks = f" v={r['virtual_stages']}" if int(r["virtual_stages"]) > 1 else ""
    extra = "".join(f" {k}={r[k]}" for k in ("cp", "ep", "etp") if r.get(k, "1") not in ("0", "1"))
    sharded = (
        " fsdp"
        if r.get("fsdp") == "true"
        else " dist-opt"
        if r.get("distributed_optimizer") == "true"
        else ""
    )
    return (
        f"tp={r['tp']}{extra} pp={r['pp']} dp={r['dp']} sp={on_off(r['sp'])}{sharded} "
        f"{r['recompute']} {r['schedule']}{chunks} b={r['micro_batch']} B={r['global_batch']}"
    )
