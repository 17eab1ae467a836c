"""vTrain's measured iterations: derived from the shared ground truth into this package's data/.

`derive_vtrain` turns the shared `data/vtrain/ground_truth_{single,multi}.csv` into
`data/vtrain_{single,multi}.csv` (a provenance header, renamed columns, the rows verbatim) and
copies vTrain's licence beside them; `read_vtrain` reads the in-package copies back.
"""

import csv
import json
from pathlib import Path

from simsp.errors import InputError

DATA_DIR = Path(__file__).resolve().parent / "data"
"""Derived validation data, read relative to the package (works for editable installs; a
wheel needs the CSVs declared as package data)."""

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

VTRAIN_SETTINGS = (
    "use_checkpoint",
    "pipeline_scheduling",
    "use_gradient_bucket",
    "node_size",
    "inter_node_bandwidth",
    "intra_node_bandwidth",
    "gpu_name",
)
"""Keys of vTrain's example_config_val_*.json copied into the provenance header."""


def _vtrain_folder(shared_dir) -> Path:
    """shared_dir may be the shared folder, its data/ folder or data/vtrain itself."""
    base = Path(shared_dir)
    for folder in (base / "data" / "vtrain", base / "vtrain", base):
        if (folder / "ground_truth_single.csv").exists():
            return folder
    raise InputError(
        shared_dir, "shared_dir", str(shared_dir), "holds no data/vtrain/ground_truth_single.csv"
    )


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


def _provenance(kind: str, settings: dict, n: int) -> list[str]:
    """The `# `-prefixed header lines of vtrain_{kind}.csv: source, licence, run settings,
    columns."""
    if kind == "single":
        what = (
            f"vTrain's single-node file: {n} iteration times on 1 node of 8 A100 GPUs "
            "(Megatron-DeepSpeed GPT configs) as vTrain's own released predictor computes them "
            "with activation checkpointing off: NOT measurements (checks in README.md here), "
            "a peer simulator's answers."
        )
    else:
        what = (
            f"vTrain measured iteration times, {n} runs on up to 512 A100 GPUs, 8 a node "
            "(Megatron-DeepSpeed GPT training)."
        )
    lines = [
        what,
        f"Source: {VTRAIN_SOURCE['repository']} data/ground_truth_{kind}.csv "
        f"at commit {VTRAIN_SOURCE['commit']} ({VTRAIN_SOURCE['paper']}).",
        f"Licence: {VTRAIN_SOURCE['licence']}.",
        "Derived by simsp.validate.derive_vtrain from the shared "
        f"data/vtrain/ground_truth_{kind}.csv: UTF-8 BOM and CRLF removed, headers renamed, values "
        "copied verbatim, row order kept.",
        "Run settings (vTrain "
        f"{', '.join(settings.get('files', [])) or 'example_config_val_*.json'}): "
        "Megatron-DeepSpeed, full activation recompute (use_checkpoint: "
        f"{json.dumps(settings.get('use_checkpoint'))}"
        + ("; the single-node rows recompute nothing, see README.md" if kind == "single" else "")
        + "), "
        f"{settings.get('pipeline_scheduling', '1f1b')} schedule, no gradient bucketing "
        f"(use_gradient_bucket: {json.dumps(settings.get('use_gradient_bucket'))}), "
        f"{settings.get('node_size', 8)} GPUs a node, GPU {settings.get('gpu_name', 'A100')}, "
        f"inter-node {settings.get('inter_node_bandwidth')} Gb/s a node, intra-node "
        f"{settings.get('intra_node_bandwidth')} GB/s (vTrain's model parameters).",
        "Columns: "
        + ", ".join(
            f"{v} = '{k}'"
            for k, v in VTRAIN_COLUMNS.items()
            if kind == "multi" or k != "Parameters (billion)"
        )
        + ".",
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
            raise InputError(
                folder / f"ground_truth_{kind}.csv", "header", unknown, "unknown vTrain column"
            )
        path = out / f"vtrain_{kind}.csv"
        with open(path, "w", newline="", encoding="utf-8") as f:
            f.write("\n".join(_provenance(kind, settings, len(rows))) + "\n")
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


def write_derived_csv(path, header: list[str], columns, rows) -> Path:
    """A derived validation file: the provenance lines as '#' comments, then the rows under
    `columns`, whole (the folder made if needed); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write("".join(f"# {line}\n" for line in header))
        writer = csv.DictWriter(f, fieldnames=columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


def read_derived_csv(path) -> list[dict]:
    """A derived validation file's rows as dicts of column to string (comments skipped)."""
    with open(path, newline="", encoding="utf-8") as f:
        return [dict(r) for r in csv.DictReader(line for line in f if not line.startswith("#"))]
