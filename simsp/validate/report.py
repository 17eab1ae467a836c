"""The validation in words and files: the readable tables, the --json object, and --out's
per-case CSV, the errors page and the peer-simulator page."""

import csv
import io
from pathlib import Path

from simsp.present.table import Column, render, words
from simsp.spec.knobs import KNOBS, values_of
from simsp.textfile import csv_safe, write_files
from simsp.units import GIB
from simsp.validate.cases import GAP_REPORTED, PEER_SETS
from simsp.validate.errors_page import errors_html
from simsp.validate.fp8_pairs import PAIRS_SET
from simsp.validate.metrics import grouped, of_set, worst
from simsp.validate.runner import Validation
from simsp.validate.scatter import scatter_html
from simsp.validate.spread import KEYS, group_labels, repeat_groups, same_input


def _fmt_time(s: float) -> str:
    return f"{s * 1e3:.2f} ms" if s < 1 else f"{s:.3f} s "


def _worst_table(name: str, rs: list) -> list[str]:
    """One set's five worst cases, a line each under a heading."""
    return _results(f"{name}: five worst cases", worst(rs), "reference", naive=False)


def _results(title: str, rs: list, reference: str, naive: bool) -> list[str]:
    """A heading, then a line a case: reference and simsp times, error (and the naive
    baseline's error), description."""
    columns = [
        words("case"),
        Column(reference),
        Column("simsp"),
        Column("error"),
        *((Column("naive"),) if naive else ()),
        words("description", fold=True),
    ]
    rows = [
        [
            r.case.name,
            _fmt_time(r.case.measured_s),
            _fmt_time(r.predicted_s),
            f"{r.error:+.1%}",
            *((f"{r.naive_error:+.1%}",) if naive else ()),
            r.case.description,
        ]
        for r in rs
    ]
    return ["", title, *render(columns, rows, indent=2).splitlines()]


def _gaps(rs: list) -> list[str]:
    """Every case beyond GAP_REPORTED, with the written reason (or the lack of one)."""
    return [
        f"  beyond {GAP_REPORTED:.0%}: {r.case.name} {r.error:+.1%}: "
        + (r.case.known_gap or "NO WRITTEN REASON")
        for r in rs
        if abs(r.error) > GAP_REPORTED
    ]


def _case_table(name: str, rs: list) -> list[str]:
    """Every case of a set with a naive baseline: measured, simsp, error, naive error."""
    title = f"{name}: every case (naive = model FLOPs / (0.5 x 16-bit peak x GPUs))"
    return _results(title, rs, "measured", naive=True)


def _speedup_table(speedup: dict) -> list[str]:
    """Each pair's FP8 speedup, measured and simulated, and the error of the ratio."""
    rows = speedup["pairs"]
    columns = [words("pair"), *(Column(h) for h in ("measured", "simsp", "error", "bf16 err"))]
    columns.append(Column("fp8 err"))
    cells = [
        [
            r["pair"],
            f"{r['measured_speedup']:.3f}",
            f"{r['simsp_speedup']:.3f}",
            f"{r['error']:+.1%}",
            f"{r['bf16_error']:+.1%}",
            f"{r['fp8_error']:+.1%}",
        ]
        for r in rows
    ]
    return [
        "",
        f"{PAIRS_SET}: FP8 speedup t(BF16) / t(FP8), {speedup['n']} pairs: ratio MAPE "
        + (f"{speedup['mape']:.1%}, bias {speedup['bias']:+.1%}" if rows else "-"),
        *render(columns, cells, indent=2).splitlines(),
    ]


REPEAT_TITLES = {
    "repeats": "the same simsp input measured more than once (a floor for any simulator)",
    "release_repeats": (
        "the same published configuration in several releases, their recipe defaults differing "
        "(a floor for a predictor blind to the release; simsp sees each release's defaults)"
    ),
}


def _times(ts) -> str:
    return " ".join(f"{t:.3f}" for t in ts) + " s"


def _repeats_table(name: str, rs: list, json_key: str, m: dict) -> list[str]:
    """One line a repeated group (spread, simsp, measured times, configuration) under the
    floor's MAPE and bias beside simsp's on the same cases; nothing where there is no repeat.
    release_repeats lists only the groups whose release defaults do differ."""
    groups = repeat_groups(rs, *KEYS[json_key])
    if json_key == "release_repeats":
        strict = {g.case_ids for g in repeat_groups(rs, same_input)}
        groups = [g for g in groups if g.case_ids not in strict]
    if not groups:
        return []
    lines = [
        "",
        f"{name}: {REPEAT_TITLES[json_key]}",
        f"  {m['groups']} group{'s' if m['groups'] != 1 else ''}, {m['cases']} cases: "
        "repeat floor (each group's geometric mean) "
        f"MAPE {m['floor_mape']:.1%}, bias {m['floor_bias']:+.1%} (least possible MAPE "
        f"{m['floor_least_mape']:.1%}); simsp on the same cases MAPE {m['simsp_mape']:.1%}, "
        f"bias {m['simsp_bias']:+.1%}",
    ]
    if json_key == "release_repeats":
        lines.append(f"  groups whose release defaults differ ({len(groups)}):")
    rows = [
        (g, _times(sorted(set(g.predicted_s), key=g.predicted_s.index)), _times(g.measured_s))
        for g in groups
    ]
    columns = [words("group"), Column("spread"), words("simsp"), words("measured")]
    columns.append(words("configuration", fold=True))
    cells = [
        [g.label, f"{g.spread:.1%}", simsp, measured, g.description] for g, simsp, measured in rows
    ]
    return lines + render(columns, cells, indent=2).splitlines()


def _memory_lines(name: str, rs: list, entry: dict) -> list[str]:
    """Whether simsp's HBM peak lets every measured run of a set fit (they did, having run),
    and, where the peaks were measured, how near simsp's come to them."""
    runs = sum(1 for r in rs if r.capacity_bytes)
    if not runs:
        return []
    over = entry["over_hbm"]
    head = f"  {name}: HBM, simsp's peak within the GPU for {runs - len(over)} of {runs} runs"
    lines = [head + (", over it for (they ran):" if over else "")] + [
        f"    {o['case']}: {o['peak_gib']:.1f} of {o['capacity_gib']:.0f} GiB" for o in over
    ]
    if "memory" in entry:
        m = entry["memory"]
        lines.append(
            f"  {name}: HBM peak against the measured {m['measured']} of {m['n']} runs: "
            f"MAPE {m['mape']:.1%}, bias {m['bias']:+.1%}, max |err| {m['max_abs_error']:.1%}"
        )
    return lines


def _peer_lines(name: str, entry: dict) -> list[str]:
    """The published peer simulator's time metrics on the same cases, beside simsp's."""
    if "peer" not in entry:
        return []
    m, own = entry["peer"], entry.get("peer_simsp", entry)
    return [
        f"  {name}: the source's own simulator on the same {m['n']} runs: MAPE {m['mape']:.1%}, "
        f"bias {m['bias']:+.1%}, max |err| {m['max_abs_error']:.1%} (simsp on them: MAPE "
        f"{own['mape']:.1%}, bias {own['bias']:+.1%})"
    ]


METRIC_COLUMNS = (
    Column("n"),
    Column("skipped"),
    Column("MAPE"),
    Column("max|err|"),
    Column("bias"),
    Column("naive MAPE"),
    Column("naive bias"),
)
"""The figures of a set (or a group of its cases), after its name."""


def _metrics_cells(label: str, m: dict, skipped: str) -> list[str]:
    if not m["n"]:
        return [label, "0", skipped, "-", "-", "-", "", ""]
    naive = [f"{m['naive_mape']:.1%}", f"{m['naive_bias']:+.1%}"] if "naive_mape" in m else ["", ""]
    return [
        label,
        str(m["n"]),
        skipped,
        f"{m['mape']:.1%}",
        f"{m['max_abs_error']:.1%}",
        f"{m['bias']:+.1%}",
        *naive,
    ]


def _by_table(name: str, rs: list, by: str) -> list[str]:
    """One set's metrics for each value of the setting `by`."""
    cells = [_metrics_cells(f"{by}={value}", m, "") for value, m in grouped(rs, by).items()]
    table = render((words(by), *METRIC_COLUMNS), cells, indent=2)
    return ["", f"{name} by {by}:", *table.splitlines()]


def table(v: Validation, by: str | None = None, verbose: bool = False) -> str:
    """Readable tables: the metrics of every set (by a setting if asked); with `verbose`, each
    set's cases, worst cases, memory, repeats and skipped rows too."""
    summary = v.summary()["sets"]
    cells = [_metrics_cells(name, summary[name], str(summary[name]["skipped"])) for name in v.sets]
    lines = render((words("set"), *METRIC_COLUMNS), cells).splitlines()
    lines += [f"  {name}: reference {summary[name]['reference']}" for name in v.sets]
    if by and not verbose:
        for name in v.sets:
            rs = of_set(v.results, name)
            lines += _by_table(name, rs, by) if rs else []
    if not verbose:
        lines.append(
            f"\n{len(v.results)} cases, {len(v.skipped)} rows skipped, {v.wall_s:.1f} s "
            "(--verbose: every case, the worst, memory, repeats and why rows were skipped)"
        )
        return "\n".join(lines)
    for name in v.sets:
        rs = of_set(v.results, name)
        if rs and by:
            lines += _by_table(name, rs, by)
        with_baseline = bool(rs) and bool(rs[0].case.baseline_s)
        if with_baseline:
            lines += _case_table(name, rs)
        if rs:
            lines += _worst_table(name, rs)
            lines += _gaps(rs)
            lines += _memory_lines(name, rs, summary[name])
            lines += _peer_lines(name, summary[name])
        if name == PAIRS_SET and rs:
            lines += _speedup_table(summary[name]["speedup"])
        if with_baseline or name == PAIRS_SET:
            lines += [f"  skipped {s.name}: {s.reason}" for s in v.skipped if s.set == name]
        for json_key in KEYS:
            lines += _repeats_table(name, rs, json_key, summary[name][json_key])
    lines.append(f"\n{len(v.results)} cases, {len(v.skipped)} rows skipped, {v.wall_s:.1f} s")
    return "\n".join(lines)


CSV_FIELDS = (
    "set",
    "case",
    "quantity",
    "measured_s",
    "predicted_s",
    "error",
    *(k.name for k in KNOBS),
    "hardware",
    "description",
    "naive_s",
    "notes",
    "repeat_group",
    "release_group",
    "peak_gib",
    "capacity_gib",
    "framework",
    "measured_peak_gib",
    "peer_s",
)
"""cases.csv's columns; repeat_group / release_group name the case's group of the same input /
the same published configuration (spread.py) within its set, empty where it has no repeat;
peak_gib / capacity_gib are simsp's HBM peak of the fullest GPU and its HBM (iteration cases);
framework the release that ran the measurement, where the source names it; measured_peak_gib
the run's measured HBM peak and peer_s a published peer simulator's seconds, where the source
gives them."""


def case_rows(v: Validation) -> list[dict]:
    """One dict per case for the per-case CSV: the figures, then every knob of its workload."""
    repeat = group_labels(v.results, "repeats")
    release = group_labels(v.results, "release_repeats")
    rows = []
    for r in v.results:
        c = r.case
        rows.append(
            {
                "set": c.set,
                "case": c.name,
                "quantity": c.quantity,
                "measured_s": f"{c.measured_s:.6g}",
                "predicted_s": f"{r.predicted_s:.6g}",
                "error": f"{r.error:.5f}",
                **values_of(c.workload),
                "hardware": Path(c.hardware).stem,
                "description": c.description,
                "naive_s": f"{c.baseline_s:.6g}" if c.baseline_s else "",
                "notes": c.notes,
                "repeat_group": repeat.get((c.set, c.name), ""),
                "release_group": release.get((c.set, c.name), ""),
                "peak_gib": f"{r.peak_bytes / GIB:.4g}" if r.capacity_bytes else "",
                "capacity_gib": f"{r.capacity_bytes / GIB:.4g}" if r.capacity_bytes else "",
                "framework": c.framework,
                "measured_peak_gib": (
                    f"{c.measured_peak_bytes / GIB:.4g}" if c.measured_peak_bytes else ""
                ),
                "peer_s": f"{c.peer_s:.6g}" if c.peer_s else "",
            }
        )
    return rows


OUT_HEADERS = {
    "cases.csv": (",".join(CSV_FIELDS) + "\n").encode(),
    "errors.html": b"",
    "peers.html": b"",
}
"""The files `--out` holds, each with the start of its CSV (b"" for a page): what
textfile.check_output_dir checks before the sets run."""


def write_outputs(v: Validation, out_dir) -> list[Path]:
    """cases.csv (one row a case), errors.html (the error of every measured case, by set, with
    the naive baseline) and, where a peer simulator's set ran, peers.html, in out_dir: all of
    them or none (textfile.write_files)."""
    peers = tuple(s for s in v.sets if s in PEER_SETS and of_set(v.results, s))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: csv_safe(x) for k, x in r.items()} for r in case_rows(v))
    files = {"cases.csv": buf.getvalue(), "errors.html": errors_html(v)}
    if peers:
        files["peers.html"] = scatter_html(v, peers)
    return write_files(out_dir, files, OUT_HEADERS)


def json_summary(v: Validation, by: str | None = None) -> dict:
    """The --json object: {"sets": {NAME: {n, mape, max_abs_error, bias, skipped, worst[, by]}}}."""
    return v.summary(by)
