"""The published runs file: `derive_published` flattens `../shared/data/published-runs/runs.yaml`
(64 measured runs: NVIDIA's NeMo and Megatron-Bridge performance tables, MosaicML llm-foundry's
MPT tables) into `data/published_runs.csv` with a provenance header, and `read_published`
reads it back (published.py turns the rows into cases)."""

from pathlib import Path

from simsp.errors import InputError

RUNS_FILE = "published_runs.csv"

COLUMNS = (
    "id",
    "source",
    "arch_source",
    "gpu",
    "gpus",
    "system",
    "precision",
    *(f"model.{k}" for k in ("name", "arch", "layers", "hidden", "heads", "kv_heads", "ffn")),
    *(f"model.{k}" for k in ("vocab", "glu", "tied_embeddings", "pos", "seq", "experts", "topk")),
    *(f"parallel.{k}" for k in ("tp", "pp", "cp", "dp", "ep", "virtual_stages", "micro_batch")),
    *(f"parallel.{k}" for k in ("global_batch", "sequence_parallel", "recompute")),
    "parallel.distributed_optimizer",
    "parallel.fsdp",
    "measured.tokens_per_s_per_gpu",
    "measured.tflops_per_gpu",
    "measured.iteration_s",
    "inferred_fields",
    "confidence",
    "notes",
)
"""published_runs.csv's columns: runs.yaml's keys flattened (section.key), null as empty."""


def cell(value) -> str:
    """A runs.yaml value as its CSV cell: "" for none, "true"/"false" for a flag."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def flat_run(run: dict) -> dict:
    """One runs.yaml run as a row keyed by COLUMNS ("section.key"), every value a cell."""
    row = {}
    for col in COLUMNS:
        section, _, key = col.partition(".")
        if key:
            row[col] = cell((run.get(section) or {}).get(key))
        elif col in ("gpu", "gpus", "system"):
            row[col] = cell(run["hardware"].get(col))
        elif col == "inferred_fields":
            row[col] = " | ".join(run.get(col) or [])
        else:
            row[col] = cell(run.get(col))
    return row


def _shared_runs(shared_dir) -> Path:
    base = Path(shared_dir)
    for folder in (base / "data" / "published-runs", base / "published-runs", base):
        if (folder / "runs.yaml").exists():
            return folder / "runs.yaml"
    raise InputError(
        shared_dir, "shared_dir", str(shared_dir), "holds no data/published-runs/runs.yaml"
    )


def derive_published(shared_dir, out_dir) -> Path:
    """Write out_dir/published_runs.csv (a provenance header, then one row a run, source order)
    from the shared runs.yaml; return its path."""
    from simsp.io.config import parse_yaml, read_text  # config is the one YAML reader

    src = _shared_runs(shared_dir)
    runs = parse_yaml(read_text(src))
    if not isinstance(runs, list):
        raise InputError(src, "top level", type(runs).__name__, "must be a list of runs")
    header = [
        f"{len(runs)} published, measured training runs (throughput and configuration).",
        "Derived by simsp.validate.published_runs.derive_published from the shared "
        "data/published-runs/runs.yaml: keys flattened to section.key, lists joined with ' | ', "
        "null as empty, values and row order verbatim. Each row's `source` names the table it "
        "was read from (repository, path, commit), `inferred_fields` what that table did not "
        "state; how simsp fills those gaps (framework recipe defaults) is in "
        "simsp/validate/recipes.py RECIPES and in each case's notes.",
    ]
    from simsp.validate.data import write_derived_csv

    return write_derived_csv(Path(out_dir) / RUNS_FILE, header, COLUMNS, map(flat_run, runs))


def read_published(data_dir=None) -> list[dict]:
    """published_runs.csv's rows as dicts of column to string."""
    from simsp.validate.data import DATA_DIR, read_derived_csv

    return read_derived_csv(Path(data_dir or DATA_DIR) / RUNS_FILE)
