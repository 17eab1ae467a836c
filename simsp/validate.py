"""Validation: simsp's predictions against published and measured times, set by set.

Sets (each a list of Cases, a measured time and the run that produced it):

* `paper-table4`: the paper's Table 4, one 22B layer's forward and backward in five settings
  (10 values) on hardware/dgx-a100-80gb.yaml;
* `paper-table5`: the paper's Table 5, four models' iteration times with full recompute and with
  the present work (8 values), same hardware;
* `vtrain-single`, `vtrain-multi`: vTrain's measured Megatron-DeepSpeed iterations (1,440 on one
  node of 8 A100s, 109 on up to 512), derived into `simsp/validation_data/` by `derive_vtrain`,
  on hardware/vtrain-a100.yaml.

Errors are fractions, predicted / measured - 1. Per set: n, MAPE (mean |error|), max |error|,
bias (mean signed error) and the worst cases. Nothing here sets a cost parameter: these times
are held out from calibration.
"""

import argparse
import csv
import dataclasses
import importlib.util
import json
import math
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from simsp.errors import InputError
from simsp.model import ModelSpec
from simsp.parallel import ParallelSpec
from simsp.workload import TrainingSpec, Workload, validate

DATA_DIR = Path(__file__).resolve().parent / "validation_data"
"""Derived validation data, read relative to the package (works for editable installs; a
wheel needs the CSVs declared as package data)."""

PAPER_HARDWARE = "hardware/dgx-a100-80gb.yaml"
VTRAIN_HARDWARE = "hardware/vtrain-a100.yaml"
SETS = ("paper-table4", "paper-table5", "vtrain-single", "vtrain-multi")

VTRAIN_VOCAB = 51200
"""vTrain trains GPT-2's 50,257-token vocabulary, which Megatron pads to a multiple of 128 x tp
(50,304 at tp 1, 50,688 at tp 8); we take the paper's padded 51,200 for every row (< 2% more
logits work, divisible by every tp in the data)."""

VTRAIN_SOURCE = {
    "repository": "https://github.com/VIA-Research/vTrain",
    "commit": "f8dda8473a48b373b1d25f51f52d685bff5150c5",
    "paper": "vTrain, MICRO 2024, arXiv 2312.12391",
    "licence": "MIT-style, Copyright (c) 2024, VIA Research Group at KAIST (see vtrain_LICENSE)",
}

VTRAIN_COLUMNS = {
    # shared CSV header -> derived column name
    "Parameters (billion)": "params_billion",
    "# GPUs": "gpus",
    "global batch": "global_batch",
    "micro batch": "micro_batch",
    "hidden size": "hidden",
    "attention heads": "heads",
    "# layers": "layers",
    "sequence length": "seq_len",
    "tensor parallelism": "tp",
    "data parallelism": "dp",
    "pipeline parallelism": "pp",
    "iteration time (ms)": "iteration_time_ms",
}

VTRAIN_SETTINGS = ("use_checkpoint", "pipeline_scheduling", "use_gradient_bucket", "node_size",
                   "inter_node_bandwidth", "intra_node_bandwidth", "gpu_name")
"""Keys of vTrain's example_config_val_*.json copied into the provenance header."""

VTRAIN_PARALLEL = {"sequence_parallel": False, "recompute": "full", "schedule": "1f1b"}
"""Megatron-DeepSpeed as vTrain ran it: full activation checkpointing (use_checkpoint: true),
1F1B, no sequence parallelism, no gradient bucketing (so no DP overlap: simsp's default)."""


# ------------------------------------------------------------------ deriving the vTrain data

def _vtrain_folder(shared_dir) -> Path:
    """shared_dir may be the shared folder, its data/ folder or data/vtrain itself."""
    base = Path(shared_dir)
    for folder in (base / "data" / "vtrain", base / "vtrain", base):
        if (folder / "ground_truth_single.csv").exists():
            return folder
    raise InputError(shared_dir, "shared_dir", str(shared_dir), "holds no data/vtrain/ground_truth_single.csv")


def read_shared_csv(path) -> list[dict]:
    """A vTrain ground-truth CSV as dicts keyed by its own headers (UTF-8 BOM and CRLF removed)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        return [dict(row) for row in csv.DictReader(f)]


def _settings(folder: Path) -> dict:
    """vTrain's validation run settings, from its example config(s)."""
    configs = sorted(folder.glob("example_config_val_*.json"))
    settings: dict = {}
    for path in configs:
        data = json.loads(path.read_text())
        for key in VTRAIN_SETTINGS:
            if key in data:
                settings.setdefault(key, data[key])
    return {"files": [p.name for p in configs], **settings}


def _provenance(kind: str, folder: Path, settings: dict, n: int) -> list[str]:
    where = "1 node of 8 A100 GPUs" if kind == "single" else "up to 512 A100 GPUs, 8 a node"
    lines = [
        f"vTrain measured iteration times, {n} runs on {where} (Megatron-DeepSpeed GPT training).",
        f"Source: {VTRAIN_SOURCE['repository']} data/ground_truth_{kind}.csv "
        f"at commit {VTRAIN_SOURCE['commit']} ({VTRAIN_SOURCE['paper']}).",
        f"Licence: {VTRAIN_SOURCE['licence']}.",
        f"Derived by simsp.validate.derive_vtrain from the shared data/vtrain/ground_truth_{kind}.csv: "
        "UTF-8 BOM and CRLF removed, headers renamed, values copied verbatim, row order kept.",
        f"Run settings (vTrain {', '.join(settings.get('files', [])) or 'example_config_val_*.json'}): "
        "Megatron-DeepSpeed, full activation recompute "
        f"(use_checkpoint: {json.dumps(settings.get('use_checkpoint'))}), "
        f"{settings.get('pipeline_scheduling', '1f1b')} schedule, no gradient bucketing "
        f"(use_gradient_bucket: {json.dumps(settings.get('use_gradient_bucket'))}), "
        f"{settings.get('node_size', 8)} GPUs a node, GPU {settings.get('gpu_name', 'A100')}, "
        f"inter-node {settings.get('inter_node_bandwidth')} Gb/s a node, "
        f"intra-node {settings.get('intra_node_bandwidth')} GB/s (vTrain's model parameters).",
        "Columns: " + ", ".join(f"{v} = '{k}'" for k, v in VTRAIN_COLUMNS.items()
                                if kind == "multi" or k != "Parameters (billion)") + ".",
    ]
    return [f"# {line}" for line in lines]


def derive_vtrain(shared_dir, out_dir) -> list[Path]:
    """Write vtrain_single.csv, vtrain_multi.csv (provenance header, then the rows verbatim) and
    vtrain_LICENSE into out_dir from the shared vTrain folder; return the paths written."""
    folder = _vtrain_folder(shared_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    settings = _settings(folder)
    written = []
    for kind in ("single", "multi"):
        rows = read_shared_csv(folder / f"ground_truth_{kind}.csv")
        headers = list(rows[0]) if rows else []
        unknown = [h for h in headers if h not in VTRAIN_COLUMNS]
        if unknown:
            raise InputError(folder / f"ground_truth_{kind}.csv", "header", unknown, "unknown vTrain column")
        path = out / f"vtrain_{kind}.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            f.write("\n".join(_provenance(kind, folder, settings, len(rows))) + "\n")
            writer = csv.writer(f, lineterminator="\n")
            writer.writerow([VTRAIN_COLUMNS[h] for h in headers])
            writer.writerows([row[h] for h in headers] for row in rows)
        written.append(path)
    licence = folder / "LICENSE"
    if licence.exists():
        path = out / "vtrain_LICENSE"
        path.write_text(licence.read_text().rstrip("\n") + "\n")
        written.append(path)
    return written


def read_vtrain(kind: str, data_dir=DATA_DIR) -> list[dict]:
    """The derived rows of vtrain_{kind}.csv as dicts of derived column names to strings."""
    path = Path(data_dir) / f"vtrain_{kind}.csv"
    with open(path, newline="", encoding="utf-8") as f:
        return [dict(r) for r in csv.DictReader(line for line in f if not line.startswith("#"))]


# ------------------------------------------------------------------ cases

@dataclass(frozen=True)
class Case:
    """One measured value and the simsp run that predicts it."""

    set: str
    name: str
    """Unique within the set, e.g. `single-0012` or `gpt3-175b full`."""
    measured_s: float
    workload: Workload
    hardware: str
    """Path of the hardware YAML (cases travel to worker processes as plain data)."""
    quantity: str = "iteration"
    """iteration, layer_forward or layer_backward (one layer, one microbatch)."""
    description: str = ""


@dataclass(frozen=True)
class Skipped:
    """A source row that is not a valid simsp workload, and why."""

    set: str
    name: str
    reason: str


def project_path(rel: str) -> Path:
    """A project file (hardware/, workloads/) from the working directory, else the source checkout."""
    from simsp.config import REPO_ROOT
    local = Path(rel)
    return local if local.exists() else REPO_ROOT / rel


def _variant(w: Workload, recompute: str, sp: bool) -> Workload:
    return dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, recompute=recompute, sequence_parallel=sp))


def paper_table4_cases() -> list[Case]:
    """Table 4: the 22B layer's forward and backward (ms) in the paper's five settings."""
    from simsp.config import load_workload
    from simsp.paper import TABLE4_22B_MS, TABLE4_LABELS
    base = load_workload(project_path("workloads/gpt-22b.yaml"))
    hw = str(project_path(PAPER_HARDWARE))
    cases = []
    for key, (fwd_ms, bwd_ms) in TABLE4_22B_MS.items():
        w = _variant(base, *key)
        for quantity, ms in (("layer_forward", fwd_ms), ("layer_backward", bwd_ms)):
            label = f"{TABLE4_LABELS[key]} {quantity.split('_')[1]}"
            cases.append(Case("paper-table4", label, ms / 1e3, w, hw, quantity, f"22B layer, {label}"))
    return cases


def paper_table5_cases() -> list[Case]:
    """Table 5: iteration seconds with full recompute (no SP) and with the present work."""
    from simsp.config import load_workload
    from simsp.paper import MODELS, TABLE5_S
    hw = str(project_path(PAPER_HARDWARE))
    cases = []
    for name in MODELS:
        w = load_workload(project_path(f"workloads/{name}.yaml"))
        full_s, present_s = TABLE5_S[name]
        cases.append(Case("paper-table5", f"{name} full", full_s, _variant(w, "full", False), hw,
                          description=f"{name}, full recompute, no SP"))
        cases.append(Case("paper-table5", f"{name} present", present_s, w, hw,
                          description=f"{name}, SP + selective recompute"))
    return cases


def vtrain_workload(row: dict, name: str) -> Workload:
    """One derived vTrain row as a validated Workload (raises InputError if it is not one)."""
    n = {k: int(row[k]) for k in ("layers", "hidden", "heads", "seq_len", "global_batch", "micro_batch",
                                  "tp", "pp", "dp", "gpus")}
    w = Workload(
        name=name,
        model=ModelSpec(layers=n["layers"], hidden=n["hidden"], heads=n["heads"], seq_len=n["seq_len"],
                        vocab=VTRAIN_VOCAB),
        training=TrainingSpec(global_batch=n["global_batch"], micro_batch=n["micro_batch"]),
        parallel=ParallelSpec(tp=n["tp"], pp=n["pp"], dp=n["dp"], **VTRAIN_PARALLEL),
    )
    if w.parallel.gpus != n["gpus"]:
        raise InputError(name, "gpus", n["gpus"], f"must equal tp x pp x dp ({w.parallel.gpus})")
    return validate(w, name)


def _describe(row: dict) -> str:
    return (f"L{row['layers']} h{row['hidden']} a{row['heads']} s{row['seq_len']} B{row['global_batch']} "
            f"b{row['micro_batch']} tp{row['tp']} pp{row['pp']} dp{row['dp']}")


def vtrain_cases(kind: str, data_dir=DATA_DIR) -> tuple[list[Case], list[Skipped]]:
    """Every row of vtrain_{kind}.csv as a Case on vtrain-a100, and the rows that are not valid."""
    hw = str(project_path(VTRAIN_HARDWARE))
    cases, skipped = [], []
    for i, row in enumerate(read_vtrain(kind, data_dir), start=1):
        name = f"{kind}-{i:04d}"
        try:
            w = vtrain_workload(row, name)
        except (InputError, ValueError) as e:
            skipped.append(Skipped(f"vtrain-{kind}", name, str(e)))
            continue
        desc = _describe(row) + (f" ({row['params_billion']}B)" if row.get("params_billion") else "")
        cases.append(Case(f"vtrain-{kind}", name, float(row["iteration_time_ms"]) / 1e3, w, hw,
                          description=desc))
    return cases, skipped


def build_cases(sets=SETS, data_dir=DATA_DIR) -> tuple[list[Case], list[Skipped]]:
    """All cases of the named sets, in set order then source order."""
    cases: list[Case] = []
    skipped: list[Skipped] = []
    for name in sets:
        if name == "paper-table4":
            cases += paper_table4_cases()
        elif name == "paper-table5":
            cases += paper_table5_cases()
        elif name in ("vtrain-single", "vtrain-multi"):
            c, s = vtrain_cases(name.split("-")[1], data_dir)
            cases += c
            skipped += s
        else:
            raise InputError("--set", "set", name, f"must be one of {', '.join(SETS)}")
    return cases, skipped


def subset(cases: list[Case], n: int) -> list[Case]:
    """n cases spread evenly over the list (deterministic: every k-th case)."""
    if n >= len(cases):
        return list(cases)
    return [cases[i * len(cases) // n] for i in range(n)]


# ------------------------------------------------------------------ predicting

_HARDWARE: dict = {}


def _hardware(path: str):
    if path not in _HARDWARE:
        from simsp.config import load_hardware
        _HARDWARE[path] = load_hardware(path)
    return _HARDWARE[path]


def predict(case: Case) -> float:
    """simsp's seconds for a case (cost models are cached per hardware file and process)."""
    from simsp.cost import cost_model
    hw = _hardware(case.hardware)
    if case.quantity == "iteration":
        from simsp.report import run
        return run(case.workload, hw).iteration_time_s
    from simsp.cost.layer_time import layer_time
    from simsp.cost.stage_time import placement
    from simsp.layer import build_layer
    w = case.workload
    lt = layer_time(build_layer(w.model, w.parallel, w.training.micro_batch), cost_model(hw), w.parallel,
                    placement(w, hw.node.gpus).tp_ranks_per_node)
    return lt.forward_s if case.quantity == "layer_forward" else lt.backward_s


def predict_all(cases: list[Case], workers: int | None = None) -> list[float]:
    """Predictions in case order; workers > 1 spreads them over processes."""
    workers = (os.cpu_count() or 1) if workers is None else workers
    if workers <= 1 or len(cases) < 64:
        return [predict(c) for c in cases]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(predict, cases, chunksize=max(1, len(cases) // (32 * workers))))


# ------------------------------------------------------------------ metrics

@dataclass(frozen=True)
class CaseResult:
    """A case with its prediction."""

    case: Case
    predicted_s: float

    @property
    def error(self) -> float:
        """Signed relative error, predicted / measured - 1."""
        return self.predicted_s / self.case.measured_s - 1


def metrics(errors: list[float]) -> dict:
    """n, MAPE, max |error| and bias of signed relative errors (fractions)."""
    n = len(errors)
    if n == 0:
        return {"n": 0, "mape": None, "max_abs_error": None, "bias": None}
    return {"n": n, "mape": sum(abs(e) for e in errors) / n, "max_abs_error": max(abs(e) for e in errors),
            "bias": sum(errors) / n}


def worst(results: list[CaseResult], k: int = 5) -> list[CaseResult]:
    """The k cases with the largest |error| (ties in case order)."""
    return sorted(results, key=lambda r: -abs(r.error))[:k]


def summarize(results: list[CaseResult], skipped: list[Skipped], sets=SETS) -> dict:
    """`simsp validate --json`'s object: per set n, mape, max_abs_error, bias, plus skipped and worst."""
    out = {}
    for name in sets:
        rs = [r for r in results if r.case.set == name]
        entry = metrics([r.error for r in rs])
        entry["skipped"] = sum(1 for s in skipped if s.set == name)
        entry["worst"] = [{"case": r.case.name, "description": r.case.description, "measured_s": r.case.measured_s,
                           "predicted_s": r.predicted_s, "error": r.error} for r in worst(rs)]
        out[name] = entry
    return {"sets": out}


@dataclass(frozen=True)
class Validation:
    """A finished validation: every result, the skipped rows and the wall time."""

    sets: tuple[str, ...]
    results: tuple[CaseResult, ...]
    skipped: tuple[Skipped, ...]
    wall_s: float

    def summary(self) -> dict:
        return summarize(list(self.results), list(self.skipped), self.sets)


def run_validation(sets=SETS, workers: int | None = None, data_dir=DATA_DIR,
                   limit: dict | None = None) -> Validation:
    """Build the cases of `sets`, predict them all and keep the results in case order.

    limit maps a set name to a case count: an evenly spread deterministic subset (for tests)."""
    t0 = time.perf_counter()
    cases, skipped = build_cases(sets, data_dir)
    if limit:
        chosen = []
        for name in sets:
            mine = [c for c in cases if c.set == name]
            chosen += subset(mine, limit[name]) if name in limit else mine
        cases = chosen
    predicted = predict_all(cases, workers)
    results = tuple(CaseResult(c, p) for c, p in zip(cases, predicted))
    return Validation(tuple(sets), results, tuple(skipped), time.perf_counter() - t0)


# ------------------------------------------------------------------ output

def _fmt_time(s: float) -> str:
    return f"{s * 1e3:9.2f} ms" if s < 1 else f"{s:9.3f} s "


def table(v: Validation) -> str:
    """Readable per-set tables: the metrics, then the five worst cases."""
    summary = v.summary()["sets"]
    lines = [f"{'set':14s} {'n':>5s} {'skipped':>7s} {'MAPE':>7s} {'max|err|':>8s} {'bias':>7s}"]
    for name in v.sets:
        m = summary[name]
        if m["n"]:
            lines.append(f"{name:14s} {m['n']:5d} {m['skipped']:7d} {m['mape']:7.1%} {m['max_abs_error']:8.1%} {m['bias']:+7.1%}")
        else:
            lines.append(f"{name:14s} {0:5d} {m['skipped']:7d} {'-':>7s} {'-':>8s} {'-':>7s}")
    for name in v.sets:
        rs = [r for r in v.results if r.case.set == name]
        if not rs:
            continue
        top = worst(rs)
        width = max(12, *(len(r.case.name) for r in top))
        lines += ["", f"{name}: five worst cases",
                  f"  {'case':{width}s} {'measured':>12s} {'simsp':>12s} {'error':>7s}  description"]
        for r in top:
            lines.append(f"  {r.case.name:{width}s} {_fmt_time(r.case.measured_s)} {_fmt_time(r.predicted_s)} "
                         f"{r.error:+7.1%}  {r.case.description}")
    lines.append(f"\n{len(v.results)} cases, {len(v.skipped)} rows skipped, {v.wall_s:.1f} s")
    return "\n".join(lines)


CSV_FIELDS = ("set", "case", "quantity", "measured_s", "predicted_s", "error", "layers", "hidden", "heads",
              "seq_len", "vocab", "global_batch", "micro_batch", "tp", "pp", "dp", "sequence_parallel",
              "recompute", "schedule", "hardware", "description")


def case_rows(v: Validation) -> list[dict]:
    """One dict per case for the per-case CSV."""
    rows = []
    for r in v.results:
        c, w = r.case, r.case.workload
        m, t, p = w.model, w.training, w.parallel
        rows.append({"set": c.set, "case": c.name, "quantity": c.quantity, "measured_s": f"{c.measured_s:.6g}",
                     "predicted_s": f"{r.predicted_s:.6g}", "error": f"{r.error:.5f}", "layers": m.layers,
                     "hidden": m.hidden, "heads": m.heads, "seq_len": m.seq_len, "vocab": m.vocab,
                     "global_batch": t.global_batch, "micro_batch": t.micro_batch, "tp": p.tp, "pp": p.pp,
                     "dp": p.dp, "sequence_parallel": p.sequence_parallel, "recompute": p.recompute,
                     "schedule": p.schedule, "hardware": Path(c.hardware).stem, "description": c.description})
    return rows


COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b")


def scatter_figure(v: Validation) -> dict:
    """Predicted vs measured seconds, log-log, one trace per set, and the y = x line, as a plain
    plotly figure dict (no plotly import)."""
    summary = v.summary()["sets"]
    data = []
    for i, name in enumerate(v.sets):
        rs = [r for r in v.results if r.case.set == name]
        if not rs:
            continue
        m = summary[name]
        data.append({
            "type": "scatter", "mode": "markers", "name": f"{name} (n={m['n']}, MAPE {m['mape']:.1%})",
            "x": [r.case.measured_s for r in rs], "y": [r.predicted_s for r in rs],
            "text": [f"{r.case.name}: {r.case.description}<br>error {r.error:+.1%}" for r in rs],
            "hovertemplate": "%{text}<br>measured %{x:.4g} s<br>simsp %{y:.4g} s<extra>" + name + "</extra>",
            "marker": {"color": COLOURS[i % len(COLOURS)], "size": 6, "opacity": 0.7},
        })
    values = [x for r in v.results for x in (r.case.measured_s, r.predicted_s) if x > 0]
    lo, hi = (min(values) / 1.5, max(values) * 1.5) if values else (1e-3, 1e3)
    span = [math.log10(lo), math.log10(hi)]  # plotly log axes take ranges in decades
    data.append({"type": "scatter", "mode": "lines", "name": "y = x", "x": [lo, hi], "y": [lo, hi],
                 "line": {"color": "#444", "dash": "dash", "width": 1}, "hoverinfo": "skip"})
    return {"data": data, "layout": {
        "title": {"text": "simsp validation: predicted vs measured"},
        "xaxis": {"type": "log", "title": {"text": "measured (s)"}, "range": span, "constrain": "domain"},
        "yaxis": {"type": "log", "title": {"text": "simsp (s)"}, "range": span, "scaleanchor": "x",
                  "constrain": "domain"},
        "hovermode": "closest", "height": 750, "legend": {"x": 0.01, "y": 0.99},
    }}


PLOTLY_CDN = "https://cdn.plot.ly/plotly-2.35.2.min.js"


def plotly_js() -> str | None:
    """The plotly.min.js bundled with the installed plotly package, read as a file (plotly itself is
    not imported: find_spec locates a top-level package without running it)."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "package_data" / "plotly.min.js"
    return path.read_text(encoding="utf-8") if path.exists() else None


def scatter_html(v: Validation) -> str:
    """A self-contained page (plotly.js inlined when installed, else loaded from its CDN)."""
    fig = json.dumps(scatter_figure(v)).replace("</", "<\\/")
    js = plotly_js()
    if js:
        lib = "<script>" + js.replace("</script", "<\\/script") + "</script>"
    else:
        lib = f'<script src="{PLOTLY_CDN}"></script>'
    return ("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>simsp validation</title></head><body>\n"
            f"{lib}\n<div id=\"scatter\"></div>\n"
            f"<script id=\"figure\" type=\"application/json\">{fig}</script>\n"
            "<script>const fig = JSON.parse(document.getElementById('figure').textContent);\n"
            "Plotly.newPlot('scatter', fig.data, fig.layout, {responsive: true});</script>\n</body></html>\n")


def write_outputs(v: Validation, out_dir) -> list[Path]:
    """cases.csv (one row a case) and scatter.html in out_dir."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        csv_path, html_path = out / "cases.csv", out / "scatter.html"
        html = scatter_html(v)
        with open(csv_path, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=CSV_FIELDS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(case_rows(v))
        html_path.write_text(html, encoding="utf-8")
    except OSError as e:
        raise InputError(out_dir, "--out", str(out_dir), f"cannot be written ({e.strerror or e})") from None
    return [csv_path, html_path]


# ------------------------------------------------------------------ command line

def json_summary(v: Validation) -> dict:
    """The --json object: {"sets": {NAME: {n, mape, max_abs_error, bias, skipped, worst}}}."""
    return v.summary()


def cmd_validate(args) -> None:
    """`simsp validate`: every set's errors, optionally the per-case CSV and the scatter page."""
    sets = tuple(args.set) if args.set else SETS
    v = run_validation(sets, workers=args.workers)
    if args.out:
        written = write_outputs(v, args.out)
        if not args.json:
            print("wrote " + ", ".join(map(str, written)), file=sys.stderr)
    print(json.dumps(json_summary(v), indent=2)) if args.json else print(table(v))


def register(sub) -> argparse.ArgumentParser:
    """Add the `validate` subcommand to the CLI's subparsers."""
    help_ = "compare predictions with the paper's Tables 4/5 and vTrain's measured iterations"
    p = sub.add_parser("validate", help=help_, description=help_)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--out", metavar="DIR", help="write DIR/cases.csv and DIR/scatter.html")
    p.add_argument("--set", nargs="+", choices=SETS, metavar="NAME", help=f"sets to run (default all: {', '.join(SETS)})")
    p.add_argument("--workers", type=int, default=None, help="processes (default: all CPUs)")
    p.set_defaults(func=cmd_validate)
    return p
