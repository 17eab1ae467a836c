"""The PyTorch-native runs: `data/sources/torch-native-runs/runs.yaml` (22 measured runs of Llama
models on torchtitan, FSDP2 / TP / PP / CP, torch.compile, torchao float8, and one NeMo AutoModel
FSDP2 + CP run; its README says what each source states), read as shipped, flattened to the
published runs' form (published_runs.flat_run, section.key) and turned into the cases of the set
`torch-native`, kept out of the accuracy line like the moe set (cases.APART_SETS).

The model, the naive baseline and the measured time come from the published sets' helpers
(`published_model.row_model`, `baseline.naive_baseline_s`, `published.measured_iteration_s`).
What each row leaves unstated comes from:

- its software stack and parallel settings: `torchtitan_recipes.stack_settings`, each default
  read at the torchtitan (or AutoModel) commit the run used, with its notes;
- its global batch: local batch x the dp ranks; the iteration B s / (tokens/s/GPU x GPUs), as
  the rows' own inferred_fields derive it (recomputed from the row's figures, not its rounded
  iteration_s).

With stack=False the case builder drops the TrainingSpec settings stack_settings gives, pricing
the run as Megatron-Core with Transformer Engine would run it (what simsp said before it knew
stacks).

Cases past 30% carry their suspected reason (KNOWN_GAPS): hypotheses, none of them measured.
"""

from pathlib import Path

from simsp.errors import InputError
from simsp.units import GIB
from simsp.validate.published_model import cell_int
from simsp.validate.published_runs import cell
from simsp.validate.torchtitan_recipes import RUNS, is_automodel, stack_settings

SET = "torch-native"

EXTRA_COLUMNS = (
    "parallel.local_batch",
    "parallel.grad_accum",
    "parallel.pp_schedule",
    "parallel.torch_compile",
    "parallel.async_tp",
    "parallel.fsdp_float8_all_gather",
    "measured.peak_memory_gib",
)
"""runs.yaml keys beyond published_runs.COLUMNS that these runs use."""

HARDWARE = {
    # runs.yaml hardware.gpu (prefix) -> hardware library file
    "H100-SXM-96GB-HBM2e": "hardware/h100-96gb-500w.yaml",
    "H100 (HBM2e": "hardware/h100-96gb-500w.yaml",
    "H100-SXM-80GB": "hardware/dgx-h100.yaml",
    "A100-80GB": "hardware/dgx-a100-80gb.yaml",
    "H200": "hardware/hgx-h200.yaml",
}

KNOWN_GAPS = {
    "tt2412-h100-llama31-8b-fsdp1-cp8-256k": (
        "attention is ~90% of this step, and compute-bound: the 500 W cap's slowing of the "
        "tensor cores is taken at the middle of Meta's stated interval (0.922; no published "
        "GEMM or attention rate at 500 W exists); "
        "torch's ring attention merges each KV block's output with fp32 eager ops "
        "(torch.distributed.tensor.experimental._attention), not priced; unmeasured"
    ),
    "tt2506-h100-llama3-8b-tp8-bf16-asynctp": (
        "TP 8 on an 8B model: small per-rank GEMMs and many DTensor collectives a layer, where "
        "host dispatch and torch's async-TP micro-pipelining (not Transformer Engine's "
        "userbuffers, which tp_comm_overlap prices) decide the time; the 500 W cap, as above; "
        "unmeasured"
    ),
}
"""Why a case misses by more than 30%, where simsp's authors suspect a reason."""
TRAINING_KNOBS = (
    "stack",
    "elementwise",
    "attention_kernel",
    "cross_entropy",
    "fp8_recipe",
    "fsdp_impl",
    "fp8_param_gather",
)
"""The TrainingSpec keyword arguments stack_settings may return (all dropped with stack=False)."""


def _flat(run: dict) -> dict:
    """One runs.yaml entry in published_runs.csv's flat form, with the EXTRA_COLUMNS."""
    from simsp.validate.published_runs import flat_run as flat

    row = flat(run)
    for col in EXTRA_COLUMNS:
        section, _, key = col.partition(".")
        row[col] = cell((run.get(section) or {}).get(key))
    return row


def read_torch_native_runs(data_dir=None) -> list[dict]:
    """runs.yaml's entries as flat rows, in file order."""
    from simsp.io.config import parse_yaml, read_text
    from simsp.validate.data import DATA_DIR

    runs = parse_yaml(read_text(Path(data_dir or DATA_DIR) / RUNS))
    return [_flat(run) for run in runs]


def hardware_of(row: dict) -> str:
    """The hardware library file of a row's GPU."""
    for prefix, hw in HARDWARE.items():
        if row["gpu"].startswith(prefix):
            return hw
    raise InputError(RUNS, "gpu", row["gpu"], f"must start with one of {', '.join(HARDWARE)}")


def batch_and_time(row: dict) -> tuple[int, int, float, str]:
    """(global batch, micro batch, measured iteration seconds, how) of a row: the stated global
    batch, else local batch x dp ranks; the published iteration time, else (and wherever the row
    derived it) B s / (tokens/s/GPU x GPUs)."""
    from simsp.validate.published import measured_iteration_s

    dp = cell_int(row["parallel.dp"], 1)
    micro = cell_int(row["parallel.micro_batch"], 0) or cell_int(row["parallel.local_batch"], 1)
    batch = cell_int(row["parallel.global_batch"], 0)
    how = []
    if not batch:
        local = cell_int(row["parallel.local_batch"], 0) or micro
        batch = local * dp
        how.append(f"global batch {batch} = local batch {local} x dp {dp} (unstated)")
    derived = "measured.iteration_s (derived" in row["inferred_fields"]
    tokens = row["measured.tokens_per_s_per_gpu"]
    if tokens and (derived or not row["measured.iteration_s"]):
        seconds = batch * cell_int(row["model.seq"]) / (float(tokens) * cell_int(row["gpus"]))
        how.append("iteration_s = B s / (tokens/s/GPU x GPUs)")
    elif row["measured.iteration_s"]:
        seconds = float(row["measured.iteration_s"])
        how.append("iteration_s as published")
    else:
        seconds, published = measured_iteration_s(row)
        how.append(published)
    return batch, micro, seconds, "; ".join(how)


def torch_native_case(row: dict, stack: bool = True, hardware: dict | None = None):
    """One row as a Case, or a Skipped with the reason; stack=False prices it as Megatron-Core
    (the TrainingSpec stack settings dropped). `hardware` maps a library file to another (a
    local experiment only: the committed mapping is HARDWARE)."""
    from simsp.io.config import load_hardware
    from simsp.spec.parallel import ParallelSpec
    from simsp.spec.rules import validate
    from simsp.spec.workload import TrainingSpec, Workload
    from simsp.validate.baseline import naive_baseline_s
    from simsp.validate.case import Case, Skipped, project_path
    from simsp.validate.published_model import row_model

    hw_rel = hardware_of(row)
    hw_rel = (hardware or {}).get(hw_rel, hw_rel)
    if not project_path(hw_rel).exists():
        return Skipped(SET, row["id"], f"no hardware file {hw_rel} yet")
    try:
        training_kw, parallel_kw, notes = stack_settings(row)
    except InputError as e:
        return Skipped(SET, row["id"], str(e))
    batch, micro, measured_s, how = batch_and_time(row)
    micro = training_kw.pop("micro_batch", micro)
    notes.append(how)
    if not stack:
        training_kw = {k: v for k, v in training_kw.items() if k not in TRAINING_KNOBS}
        notes.append("priced as Megatron-Core: the stack settings above dropped")
    tp, pp, cp, dp = (cell_int(row[f"parallel.{k}"], 1) for k in ("tp", "pp", "cp", "dp"))
    fp8 = row["precision"] == "fp8"
    spec = load_hardware(project_path(hw_rel))
    if fp8 and not spec.gpu.peak_fp8_tflops:
        return Skipped(SET, row["id"], f"an FP8 run, and {hw_rel} has no FP8 rates yet")
    try:
        w = validate(
            Workload(
                name=row["id"],
                model=row_model(row),
                training=TrainingSpec(
                    global_batch=batch,
                    micro_batch=micro,
                    precision="fp8" if fp8 else "bf16",
                    **training_kw,
                ),
                parallel=ParallelSpec(tp=tp, pp=pp, cp=cp, dp=dp, **parallel_kw),
            ),
            row["id"],
        )
    except (InputError, ValueError, TypeError) as e:
        return Skipped(SET, row["id"], f"not a valid simsp workload: {e}")
    p = w.parallel
    desc = (
        f"{row['model.name']} {w.training.precision} {row['gpus']}x {row['gpu'].split()[0]} "
        f"tp{p.tp} pp{p.pp} cp{p.cp} dp{p.dp}"
        + (f" vp{p.virtual_stages}" if p.virtual_stages > 1 else "")
        + f" fsdp B{batch} b{micro} s{w.model.seq_len} {p.recompute}"
        + (f" {training_kw['elementwise']}" if training_kw.get("elementwise") else "")
    )
    return Case(
        SET,
        row["id"],
        measured_s,
        w,
        str(project_path(hw_rel)),
        description=desc,
        baseline_s=naive_baseline_s(w, spec.gpu.peak_tflops),
        notes="; ".join(notes),
        known_gap=KNOWN_GAPS.get(row["id"], ""),
        measured_peak_bytes=float(row["measured.peak_memory_gib"] or 0) * GIB,
        # torchtitan logs the caching allocator's peak reserved memory, in GiB
        # (torchtitan/tools/metrics.py DeviceMemoryMonitor.get_peak_stats max_reserved_gib)
        measured_peak_kind="max_memory_reserved",
        framework="NeMo AutoModel" if is_automodel(row) else "torchtitan",
    )


def torch_native_cases(data_dir=None, stack: bool = True, hardware: dict | None = None):
    """The set's Cases and Skipped rows, in file order."""
    from simsp.validate.case import Case

    cases, skipped = [], []
    for row in read_torch_native_runs(data_dir):
        c = torch_native_case(row, stack, hardware)
        (cases if isinstance(c, Case) else skipped).append(c)
    return cases, skipped


__all__ = [
    "HARDWARE",
    "SET",
    "batch_and_time",
    "read_torch_native_runs",
    "stack_settings",
    "torch_native_case",
    "torch_native_cases",
]
