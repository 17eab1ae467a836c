"""Published modern training runs turned into simsp cases (the runs file: published_runs.py).

`published_cases` turns each row of `data/published_runs.csv` into a Case
of the set `published-a100`, `published-h100` or `published-b200` (B200 and GB200), or a Skipped
with the reason (mixture-of-experts models; a recipe that offloads activations to CPU).

What a source leaves unstated comes from the named framework version's recipe (recipes.py
RECIPES: one entry per version, each default with the file it was read from, beside the per-run
exceptions), and every case says which defaults it took. Beside simsp's time each case carries
the naive baseline a user computes by hand, model FLOPs / (0.5 x the 16-bit peak x GPUs)
(llm-analysis's "literature" default MFU of 0.5), with simsp's own model FLOPs (`model_flops`
of run --json); FP8 runs keep the 16-bit peak, as MFU does.
"""

import re

from simsp.errors import InputError
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import TrainingSpec, Workload
from simsp.validate.attention_kernel import attention_kernel
from simsp.validate.baseline import naive_baseline_s
from simsp.validate.moe_recipes import (
    LAYOUTS,
    MOE_RECOMPUTE,
    moe_recipe,
    shared_expert_overlap,
)
from simsp.validate.moe_runs import SET as MOE_SET
from simsp.validate.moe_runs import read_moe_runs, with_architecture
from simsp.validate.published_model import cell_int, row_model
from simsp.validate.published_runs import RUNS_FILE, read_published
from simsp.validate.recipes import (
    COMPOSER_REDUCE_FP32,
    KNOWN_GAPS,
    RECIPES,
    RECOMPUTE,
    SKIP,
    TP_OVERLAP_OFF,
    Recipe,
)

PUBLISHED_SETS = ("published-a100", "published-h100", "published-b200")

HARDWARE = {
    # runs.yaml hardware.gpu (prefix) -> (set, hardware library file)
    "A100-80GB": ("published-a100", "hardware/dgx-a100-80gb.yaml"),
    "A100-40GB": ("published-a100", "hardware/dgx-a100-40gb.yaml"),
    "H100-SXM-80GB": ("published-h100", "hardware/dgx-h100.yaml"),
    "H100-80GB": ("published-h100", "hardware/dgx-h100.yaml"),
    "B200-SXM-180GB": ("published-b200", "hardware/dgx-b200.yaml"),
    "GB200": ("published-b200", "hardware/gb200-nvl72.yaml"),
    "B300-SXM": ("published-b200", "hardware/dgx-b300.yaml"),
    "GB300": ("published-b200", "hardware/gb300-nvl72.yaml"),
}

# ------------------------------------------------------------------ recipe defaults


def recipe_of(row: dict) -> str:
    """The RECIPES key of a run, from its source and id."""
    rid, src = row["id"], row["source"]
    if rid.startswith("foundry"):
        return "llm-foundry"
    if rid.startswith("dgxc2504-h100-grok1"):
        return "dgxc-benchmarking grok1 25.04"
    if rid.startswith("nemo-longseq"):
        return "NeMo 24.03"
    for tag, key in (("nemo2407", "24.07"), ("nemo2502", "25.02"), ("nemo2504", "25.04")):
        if rid.startswith(tag):
            return f"NeMo {key}"
    for version in ("25.09", "25.11", "26.04", "26.06"):
        if f"'{version} NeMo Container'" in src:
            return f"Megatron-Bridge {version}"
    raise InputError(RUNS_FILE, "source", src, "names no framework version simsp knows")


# ------------------------------------------------------------------ rows -> cases


def training_spec(
    global_batch: int,
    micro_batch: int,
    precision: str,
    fp8_recipe: str,
    attention_kernel="",
    fp8_param_gather=False,
    cross_entropy="unfused",
):
    """The one place a case's precision and kernels enter its workload (TrainingSpec.precision,
    .fp8_recipe, .attention_kernel, .fp8_param_gather, .cross_entropy)."""
    fp8 = precision == "fp8"
    return TrainingSpec(
        global_batch=global_batch,
        micro_batch=micro_batch,
        precision="fp8" if fp8 else "bf16",
        fp8_recipe=fp8_recipe if fp8 else "delayed",
        attention_kernel=attention_kernel,
        fp8_param_gather=fp8 and fp8_param_gather,
        cross_entropy=cross_entropy,
    )


def _expert_parallel(row: dict, tp: int, recipe: str, notes: list[str]) -> dict:
    """ep, etp, the dispatcher and the EP all-to-all overlap of a mixture-of-experts row (none
    for a dense one): etp as the row states it, else 1 for Megatron-Bridge (its MoE recipes set
    expert_tensor_parallel_size=1) and Megatron-Core's default, tp, for older NeMo; dispatcher
    and overlap as stated, else the release's recipe (moe_recipes.py), else alltoall without
    overlap (NeMo 25.02's Mixtral, whose recipe was not read); balanced routing (force-balanced
    or padded to a capacity of 1: moe-runs/README.md)."""
    if not row["model.experts"]:
        return {}
    ep = cell_int(row["parallel.ep"], 1)
    etp = cell_int(row.get("parallel.etp"), 0) or (1 if "Megatron-Bridge" in row["source"] else tp)
    from simsp.present.accuracy import gpu_family

    key = (recipe.split()[-1], row["model.name"], gpu_family(row["gpu"]))
    read = moe_recipe(*key)
    dispatcher, overlap = read or ("alltoall", False)
    if row.get("moe.dispatcher"):
        dispatcher = row["moe.dispatcher"]
    if row.get("moe.a2a_overlap") in ("true", "false"):
        overlap = row["moe.a2a_overlap"] == "true"
    how = "as stated" if row.get("moe.dispatcher") else "the recipe's" if read else "assumed"
    dispatcher, _, backend = dispatcher.partition("/")
    notes.append(
        f"ep {ep}, etp {etp}, {dispatcher} dispatcher"
        + (f" with {backend}" if backend else "")
        + f" ({how})"
        + (", EP all-to-all overlap" if overlap else "")
        + ", balanced routing"
    )
    out = {"ep": ep, "etp": etp, "moe_dispatcher": dispatcher, "moe_a2a_overlap": overlap}
    if dispatcher == "alltoall" and not overlap and shared_expert_overlap(*key):
        out["moe_shared_expert_overlap"] = True
        notes.append("shared expert beside the all-to-alls (the recipe's)")
    if backend:
        out["moe_flex_backend"] = backend
    modules = MOE_RECOMPUTE.get(row["id"], "")
    if modules:
        out.update(recompute="selective", recompute_modules=modules)
        notes.append(f"selective recompute of {modules} (the recipe's)")
    if row["id"] in LAYOUTS:
        layout, vp = LAYOUTS[row["id"]]
        notes.append(f"pipeline layout {layout} with vp {vp} (the release's code)")
        out.update(
            pipeline_layout=layout, virtual_stages=vp, schedule="interleaved" if vp > 1 else "1f1b"
        )
    return out


def _parallel(row: dict, recipe: Recipe, notes: list[str], recipe_key: str = "") -> ParallelSpec:
    tp, pp, cp, dp = (cell_int(row[f"parallel.{k}"], 1) for k in ("tp", "pp", "cp", "dp"))
    vp = cell_int(row["parallel.virtual_stages"], 1)
    fsdp = row["parallel.fsdp"] not in ("", "false")
    sp = row["parallel.sequence_parallel"]
    sp_on = sp == "true" if sp else tp > 1
    recompute = (row["parallel.recompute"] or "none").split()[0]  # "none (why)" in moe-runs
    if row["id"] in RECOMPUTE:
        recompute, why = RECOMPUTE[row["id"]]
        notes.append(f"recompute {recompute} ({why})")
    tp_overlap = recipe.tp_comm_overlap and sp_on and row["id"] not in TP_OVERLAP_OFF
    reduce_fp32 = recipe.grad_reduce_in_fp32
    mode = re.search(r"MP mode (\w+)", row.get("notes", ""))
    if fsdp and mode and mode.group(1) in COMPOSER_REDUCE_FP32:
        reduce_fp32 = COMPOSER_REDUCE_FP32[mode.group(1)]
    split = cell_int(row["model.layers"]) % (pp * vp) != 0 and pp > 1 and row["id"] not in LAYOUTS
    notes.append(
        f"sp {'on' if sp_on else 'off'}, recompute {recompute}, "
        + ("fsdp" if fsdp else "distributed optimizer")
        + (", overlapped grad reduce/param gather" if recipe.overlap and not fsdp else "")
        + (", tp_comm_overlap" if tp_overlap else "")
        + (", bf16 grad reduce" if not reduce_fp32 else "")
        + (f" (MP mode {mode.group(1)})" if fsdp and mode else "")
        + (", 16-bit master remainders" if recipe.store_param_remainders and not fsdp else "")
        + (", TE's cached dummy wgrads" if recipe.cached_dummy_wgrads and not fsdp else "")
        + (", embedding and loss counted in the pipeline split" if split else "")
    )
    settings = dict(
        tp=tp,
        pp=pp,
        cp=cp,
        dp=dp,
        sequence_parallel=sp_on,
        tp_comm_overlap=tp_overlap,
        recompute=recompute,
        schedule="interleaved" if vp > 1 else "1f1b",
        virtual_stages=vp,
        distributed_optimizer=not fsdp,
        fsdp=fsdp,
        overlap_grad_reduce=recipe.overlap and not fsdp,
        overlap_param_gather=recipe.overlap and not fsdp,
        grad_reduce_in_fp32=reduce_fp32,
        # remainders complete a bf16 weight: not with FP8 primary weights (NeMo's store_params)
        store_param_remainders=recipe.store_param_remainders
        and not fsdp
        and not (_precision(row["precision"], recipe)[0] == "fp8" and recipe.fp8_param_gather),
        cached_dummy_wgrads=recipe.cached_dummy_wgrads and not fsdp,
        # Llama-3.1-405B's 126 layers over pp x vp chunks: NeMo llama31_405b.py and
        # Megatron-Bridge llama3.py count the embedding and the loss as a layer each
        account_for_embedding_in_pipeline_split=split,
        account_for_loss_in_pipeline_split=split,
    )
    return ParallelSpec(**{**settings, **_expert_parallel(row, tp, recipe_key, notes)})


def nemo_llama2_flops(row: dict) -> float:
    """Model FLOPs per iteration as NVIDIA's tables count them for Llama-2 (NeMo
    nemo/utils/flops_formulas.py `llama2`, v2.3.0): B s L h^2 (12 + 12 g/a + 18 f/h + 12 s/h +
    6 v / (L h)); causal attention not halved."""
    b, s = cell_int(row["parallel.global_batch"]), cell_int(row["model.seq"])
    layers, h = cell_int(row["model.layers"]), cell_int(row["model.hidden"])
    a, g, f = (
        cell_int(row["model.heads"]),
        cell_int(row["model.kv_heads"]),
        cell_int(row["model.ffn"]),
    )
    v = cell_int(row["model.vocab"])
    return (
        b * s * layers * h * h * (12 + 12 * g / a + 18 * f / h + 12 * s / h + 6 * v / (layers * h))
    )


def measured_iteration_s(row: dict) -> tuple[float, str]:
    """The run's seconds per iteration and how they were obtained."""
    if row["measured.iteration_s"] and row["measured.tokens_per_s_per_gpu"]:
        return float(row["measured.iteration_s"]), "iteration_s = B s / (tokens/s/GPU x GPUs)"
    if row["measured.iteration_s"]:
        return float(row["measured.iteration_s"]), "iteration_s as published"
    flops = nemo_llama2_flops(row)
    t = flops / (float(row["measured.tflops_per_gpu"]) * 1e12 * cell_int(row["gpus"]))
    return t, "iteration_s = NeMo llama2 model FLOPs / (published TFLOP/s/GPU x GPUs)"


ROW_PRECISIONS = {
    # moe-runs/README.md `precision`: the recipe its source names -> TrainingSpec's
    "fp8-cs": "current",
    "mxfp8": "mxfp8",
    "fp8-blockwise": "blockwise",
}


def _precision(value: str, recipe: Recipe) -> tuple[str, str]:
    """(precision, fp8 recipe) of a row: bf16; fp8 with the framework recipe's scaling; or an
    FP8 recipe the row names (fp8-cs per-tensor current scaling, mxfp8, fp8-blockwise)."""
    if value in ROW_PRECISIONS:
        return "fp8", ROW_PRECISIONS[value]
    return value, recipe.fp8_recipe


def _unexpressible(row: dict) -> str:
    mla = "MLA" in row["model.kv_heads"] or row["model.arch"].startswith(("deepseek", "kimi"))
    if mla and row["id"] not in LAYOUTS:
        return (
            f"{row['model.arch']}: the pipeline layout this run used was not found in its "
            "release's code (its 61 layers split unevenly)"
        )
    return SKIP.get(row["id"], "")


def _hardware_of(row: dict) -> tuple[str, str]:
    """(set, hardware file) of a row: its GPU's published set, or `moe` for a mixture of
    experts."""
    for prefix, (set_name, hw) in HARDWARE.items():
        if row["gpu"].startswith(prefix):
            return (MOE_SET if row["model.experts"] else set_name), hw
    raise InputError(RUNS_FILE, "gpu", row["gpu"], f"must start with one of {', '.join(HARDWARE)}")


def published_case(row: dict):
    """One derived row as a Case, or a Skipped with the reason simsp cannot run it."""
    from simsp.io.config import load_hardware
    from simsp.validate.case import Case, Skipped, project_path

    set_name, hw_rel = _hardware_of(row)
    reason = _unexpressible(row)
    if reason:
        return Skipped(set_name, row["id"], reason)
    if not project_path(hw_rel).exists():
        return Skipped(set_name, row["id"], f"no hardware file {hw_rel} yet")
    recipe_name = recipe_of(row)
    recipe = RECIPES[recipe_name]
    notes = [f"defaults of {recipe_name} ({recipe.source})"]
    parallel = _parallel(row, recipe, notes, recipe_name)
    precision, fp8_recipe = _precision(row["precision"], recipe)
    micro = cell_int(row["parallel.micro_batch"], 1)
    if not row["parallel.micro_batch"]:
        notes.append("micro batch 1 (launcher llama2_7b.yaml micro_batch_size)")
    primary_fp8 = precision == "fp8" and recipe.fp8_param_gather and not parallel.fsdp
    if precision == "fp8":
        why = recipe.fp8_why if fp8_recipe == recipe.fp8_recipe else "as the row names it"
        notes.append(f"fp8 {fp8_recipe} ({why})")
        if primary_fp8:
            notes.append("fp8 primary weights (the recipe's FP8 preset: fp8_param_gather)")
    measured_s, how = measured_iteration_s(row)
    hw = project_path(hw_rel)
    spec = load_hardware(hw)
    gpu = spec.gpu
    kernel, why = attention_kernel(recipe, spec)
    notes.extend([why, how] if why else [how])
    if recipe.cross_entropy != "unfused":
        notes.append(f"{recipe.cross_entropy} cross-entropy (the recipe's loss fusion)")
    if precision == "fp8" and not gpu.peak_fp8_tflops:
        return Skipped(
            set_name,
            row["id"],
            f"an FP8 run, and {hw_rel} has no FP8 rates yet (gpu.peak_fp8_tflops unset)",
        )
    try:
        w = validate(
            Workload(
                name=row["id"],
                model=row_model(row),
                training=training_spec(
                    cell_int(row["parallel.global_batch"]),
                    micro,
                    precision,
                    fp8_recipe,
                    kernel,
                    primary_fp8,
                    recipe.cross_entropy,
                ),
                parallel=parallel,
            ),
            row["id"],
        )
    except (InputError, ValueError) as e:
        return Skipped(set_name, row["id"], f"not a valid simsp workload: {e}")
    desc = (
        f"{row['model.name']} {precision} {row['gpus']}x {row['gpu'].split()[0]} "
        f"tp{parallel.tp} pp{parallel.pp} cp{parallel.cp} dp{parallel.dp}"
        + (f" vp{parallel.virtual_stages}" if parallel.virtual_stages > 1 else "")
        + (" fsdp" if parallel.fsdp else "")
        + f" B{w.training.global_batch} b{micro} s{w.model.seq_len}"
    )
    baseline = naive_baseline_s(w, gpu.peak_tflops)
    return Case(
        set_name,
        row["id"],
        measured_s,
        w,
        str(hw),
        description=desc,
        baseline_s=baseline,
        notes="; ".join(notes),
        known_gap=KNOWN_GAPS.get(row["id"], ""),
        framework=recipe_name,
    )


def published_cases(name: str, data_dir=None):
    """The Cases and Skipped rows of one published set, in source order."""
    from simsp.validate.case import Case

    cases, skipped = [], []
    rows = read_published(data_dir)
    if name == MOE_SET:
        rows = [with_architecture(r) for r in rows] + read_moe_runs(data_dir)
    for row in rows:
        if _hardware_of(row)[0] != name:
            continue
        c = published_case(row)
        (cases if isinstance(c, Case) else skipped).append(c)
    return cases, skipped
