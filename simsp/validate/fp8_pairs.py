"""NVIDIA's paired BF16 / FP8 runs: the measured FP8 speedup beside simsp's.

`data/fp8_pairs.yaml` holds runs NVIDIA published twice, the same model, GPUs, parallel layout
and batch in BF16 and in FP8 (NVIDIA/dgxc-benchmarking READMEs, NeMo 24.09 to 25.04.01 on DGX
H100 and GB200; each entry names its repository, path, commit and table). Each pair becomes two
cases of the `fp8-pairs` set, its BF16 and FP8 iterations against their measured step times;
the set's summary adds the speedup, t(BF16) / t(FP8), measured and simulated, and the error of
the ratio, which cancels what both precisions share (pipeline, communication, host).

What the READMEs leave unstated comes from the NeMo 1.0 launcher configs of the same tags, as
the compiler of the file read them (its `notes`): sequence parallelism, the distributed optimizer
with overlapped gradient reduce and parameter gather, TP communication overlap, no activation
recompute, FP8 by delayed scaling with `fp8_hybrid` (E4M3 forward, E5M2 backward), and FP8
primary weights where the entry's recipe notes say so (`fp8_params=true`,
`fp8_param_gather=True`). Not exact
pairs (different layouts), MaxText runs (JAX, not Transformer Engine) and MoE models are skipped
with the reason.
"""

import re
from pathlib import Path

from simsp.errors import InputError
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import Workload
from simsp.validate.data import DATA_DIR

PAIRS_SET = "fp8-pairs"
PAIRS_FILE = "fp8_pairs.yaml"
HARDWARE = {"H100-SXM-80GB": "hardware/dgx-h100.yaml", "GB200": "hardware/gb200-nvl72.yaml"}
ARCH = {
    # name prefix: (mlp, norm, position, bias, tied embeddings), as NeMo's configs build them
    "Llama": ("swiglu", "rmsnorm", "rope", False, False),
    "GPT-3": ("gelu", "layernorm", "learned", True, True),
    "Nemotron": ("squared_relu", "layernorm", "rope", False, False),
}
RECIPE_NOTE = (
    "dgxc-benchmarking NeMo 1.0 launcher configs (file notes): SP where tp > 1, distributed "
    "optimizer with overlapped grad reduce and param gather, TP comm overlap, no recompute, "
    "FP8 delayed scaling (fp8_hybrid)"
)


FP8_PARAMS = re.compile(r"fp8_param(s|_gather)\s*=\s*true", re.IGNORECASE)
"""How the pairs file's recipe notes record FP8 primary weights (launcher `model.fp8_params`,
NeMo 2.0 `fp8_param_gather`)."""
NEMO2_FP8_PRESET = re.compile(r"NeMo 25\.0[24].*NeMo 2\.0|Megatron-Bridge")
"""Frameworks whose FP8 preset keeps FP8 primary weights whatever the notes say: NeMo v2.2.0's
bf16_with_fp8_mixed sets fp8_params = True (recipes/precision/mixed_precision.py line 53),
v2.3.0's fp8_param_gather = True (line 70), Megatron-Bridge's FP8 presets the same
(published recipes, validate/recipes.py)."""


NEMO_RELEASE = re.compile(r"NeMo (?:Megatron )?(\d\d\.\d\d)")
"""The NeMo release a pair's framework names (its container, e.g. `NeMo 25.04.01 container`,
or its table's label, `NeMo Megatron 24.11`)."""


def release_of(pair: dict) -> str:
    """The release a pair's framework names, `NeMo 25.04` or `Megatron-Bridge 25.11`; the
    framework text itself where it names no release number."""
    framework = pair.get("framework", "")
    m = NEMO_RELEASE.search(framework)
    if not m:
        return framework
    name = "Megatron-Bridge" if framework.startswith("Megatron-Bridge") else "NeMo"
    return f"{name} {m.group(1)}"


def attention_kernel_of(pair: dict, hw) -> str:
    """The attention kernel of a pair's runs on `hw`: that of its NeMo release's recipe where
    validate/recipes.py has one (the cuDNN of the container, where the hardware's table holds
    rows of it), else the hardware file's."""
    from simsp.validate.attention_kernel import attention_kernel
    from simsp.validate.recipes import RECIPES

    m = NEMO_RELEASE.search(pair.get("framework", ""))
    recipe = RECIPES.get(f"NeMo {m.group(1)}") if m else None
    return attention_kernel(recipe, hw)[0] if recipe else ""


def cross_entropy_of(pair: dict) -> str:
    """The loss kernel of a pair's runs: that of its release's recipe where validate/recipes.py
    has one, else Megatron's unfused one (the NeMo 1.0 launcher sets no loss fusion)."""
    from simsp.validate.recipes import RECIPES

    recipe = RECIPES.get(release_of(pair))
    return recipe.cross_entropy if recipe else "unfused"


def fp8_primary_weights(pair: dict) -> bool:
    """Whether a pair's FP8 run keeps FP8 primary weights: its recipe notes say so, or its
    framework's FP8 preset does."""
    return bool(
        FP8_PARAMS.search(pair["fp8"].get("recipe", ""))
        or NEMO2_FP8_PRESET.search(pair.get("framework", ""))
    )


def read_pairs(data_dir=None) -> list[dict]:
    """The pairs file's entries, in file order."""
    from simsp.io.config import read_yaml

    return read_yaml(Path(data_dir or DATA_DIR) / PAIRS_FILE)["pairs"]


def _skip_reason(p: dict) -> str:
    if not p.get("exact_pair", False):
        return "not an exact pair (the two precisions ran different layouts)"
    if p["framework"].startswith("MaxText"):
        return "MaxText on JAX, not Megatron with Transformer Engine"
    if p["hardware"]["gpu"] not in HARDWARE:
        return f"no hardware file for {p['hardware']['gpu']}"
    if not any(p["model"]["name"].startswith(k) for k in ARCH):
        return f"{p['model']['name']}: not a dense model simsp expresses"
    return ""


def _model(m: dict) -> ModelSpec:
    mlp, norm, position, bias, tied = next(v for k, v in ARCH.items() if m["name"].startswith(k))
    return ModelSpec(
        layers=m["layers"],
        hidden=m["hidden"],
        heads=m["heads"],
        kv_heads=m["kv_heads"],
        ffn_hidden=m["ffn"],
        vocab=m["vocab"],
        seq_len=m["seq"],
        mlp=mlp,
        norm=norm,
        position=position,
        bias=bias,
        dropout=0.0,
        attention="flash",
        tied_embeddings=tied,
    )


UNSTATED_VP = {
    # id prefix: (virtual stages, where the launch script of the README's commit sets them)
    "dgxc-nemo2502-h100-nemotron4-340b-": (
        12,
        "NVIDIA/dgxc-benchmarking nemotron/launch.sh @741c8860 lines 62-84: VP=12 for 340b, "
        "passed as -vp (the README's table gives no VP)",
    ),
}
"""Virtual pipeline stages a pair's table leaves out and its launch script sets."""


def unstated_vp(pair: dict) -> tuple[int, str]:
    """(virtual stages, why) for a pair whose table leaves them out, from UNSTATED_VP; (0, "")
    where the table states them or nothing is known."""
    if pair["parallel"].get("vp"):
        return 0, ""
    for prefix, found in UNSTATED_VP.items():
        if pair["id"].startswith(prefix):
            return found
    return 0, ""


NEMO1_LAUNCHER = re.compile(r"^NeMo (?!.*NeMo 2\.0)")
"""Frameworks that are NeMo 1.x (the NeMo 1.0 launcher; not NeMo 2.0 scripts): their
distributed_fused_adam keeps 16-bit master remainders for a bf16 model without FP8 parameters
(validate/recipes.py Recipe.store_param_remainders)."""


def master_remainders(pair: dict, precision: str) -> bool:
    """Whether a pair's run of `precision` keeps 16-bit master remainders."""
    nemo1 = bool(NEMO1_LAUNCHER.match(pair.get("framework", "")))
    return nemo1 and not (precision == "fp8" and fp8_primary_weights(pair))


def _parallel(
    par: dict, layers: int, vp_unstated: int = 0, remainders: bool = False
) -> ParallelSpec:
    tp, pp, cp = par["tp"], par["pp"], par.get("cp") or 1
    vp = par.get("vp") or vp_unstated or 1
    split = pp > 1 and layers % (pp * vp) != 0  # 126-layer 405B: embedding and loss count
    return ParallelSpec(
        tp=tp,
        pp=pp,
        cp=cp,
        dp=par["dp"],
        sequence_parallel=tp > 1,
        tp_comm_overlap=tp > 1,
        recompute="none",
        schedule="interleaved" if vp > 1 else "1f1b",
        virtual_stages=vp,
        distributed_optimizer=True,
        overlap_grad_reduce=True,
        overlap_param_gather=True,
        grad_reduce_in_fp32=False,
        store_param_remainders=remainders,
        account_for_embedding_in_pipeline_split=split,
        account_for_loss_in_pipeline_split=split,
    )


def measured_step_s(run: dict, tokens_per_step: int, gpus: int) -> float:
    """The printed step time, or tokens per step over the whole job's printed tokens/s."""
    printed = run.get("printed", {})
    step = printed.get("step_time_s")
    if isinstance(step, int | float):
        return float(step)
    total = printed.get("tokens_per_s_total") or run["tokens_per_s_per_gpu"] * gpus
    return tokens_per_step / total


def pair_cases(data_dir=None):
    """(Cases, Skipped) of the fp8-pairs set: two cases a pair, named `<id> bf16` / `<id> fp8`."""
    from simsp.io.config import load_hardware
    from simsp.validate.case import Case, Skipped, project_path
    from simsp.validate.published import training_spec

    cases, skipped = [], []
    for p in read_pairs(data_dir):
        reason = _skip_reason(p)
        if reason:
            skipped.append(Skipped(PAIRS_SET, p["id"], reason))
            continue
        m, par, gpus = p["model"], p["parallel"], p["hardware"]["gpus"]
        vp, vp_why = unstated_vp(p)
        source = p["source"]
        hw_path = project_path(HARDWARE[p["hardware"]["gpu"]])
        kernel = attention_kernel_of(p, load_hardware(hw_path))
        for precision in ("bf16", "fp8"):
            name = f"{p['id']} {precision}"
            parallel = _parallel(par, m["layers"], vp, master_remainders(p, precision))
            try:
                w = validate(
                    Workload(
                        name,
                        _model(m),
                        training_spec(
                            par["global_batch"],
                            par["micro_batch"],
                            precision,
                            "delayed",
                            kernel,
                            fp8_param_gather=fp8_primary_weights(p),
                            cross_entropy=cross_entropy_of(p),
                        ),
                        parallel,
                    ),
                    name,
                )
            except InputError as e:
                skipped.append(Skipped(PAIRS_SET, name, f"not a valid simsp workload: {e}"))
                break
            cases.append(
                Case(
                    PAIRS_SET,
                    name,
                    measured_step_s(p[precision], par["global_batch"] * m["seq"], gpus),
                    w,
                    str(hw_path),
                    description=(
                        f"{m['name']} {precision} {gpus}x {p['hardware']['gpu']} tp{parallel.tp} "
                        f"pp{parallel.pp} cp{parallel.cp} dp{parallel.dp} "
                        f"vp{parallel.virtual_stages} B{par['global_batch']} ({p['framework']})"
                    ),
                    framework=release_of(p),
                    notes=f"{RECIPE_NOTE}{f'; attention kernel {kernel}' if kernel else ''}"
                    f"{f'; vp {vp} ({vp_why})' if vp_why else ''}; "
                    f"{source['repo']} {source['path']} @{source['commit']}",
                )
            )
    return cases, skipped


def speedups(results) -> list[dict]:
    """One row per pair with both cases present: measured and simulated t(BF16) / t(FP8) and
    the ratio's signed error (simulated / measured - 1)."""
    by_name = {r.case.name: r for r in results if r.case.set == PAIRS_SET}
    rows = []
    for name, bf in by_name.items():
        if not name.endswith(" bf16") or name[:-5] + " fp8" not in by_name:
            continue
        f8 = by_name[name[:-5] + " fp8"]
        measured = bf.case.measured_s / f8.case.measured_s
        simulated = bf.predicted_s / f8.predicted_s
        rows.append(
            {
                "pair": name[:-5],
                "measured_speedup": measured,
                "simsp_speedup": simulated,
                "error": simulated / measured - 1,
                "bf16_error": bf.error,
                "fp8_error": f8.error,
            }
        )
    return rows
