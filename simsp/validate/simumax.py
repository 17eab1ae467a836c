"""SimuMax's measured Megatron-LM iterations on one node of 8 B200s, with each run's HBM peak.

MooreThreads/SimuMax published, beside its own simulator's answers, the iteration times and the
largest `torch.cuda.max_memory_allocated()` over the 8 ranks of real Megatron-LM runs on the B200
node whose GEMM sweep is hardware/calibration/dgx-b200/gemm.csv (`docs/b200/
b200_release_v1.2_summary.json` @4dcaae51, kept as data/sources/). `derive_simumax` turns it into
data/simumax_b200.csv (one row a run, its settings parsed from the case name); `simumax_cases`
makes the dense rows Cases on hardware/dgx-b200.yaml, measured time and measured peak memory
both, and keeps the mixture-of-experts rows as Skipped.

The runs' settings come from SimuMax's runner `tools/b200/run_megatron_perf_real_pipeline.py`
and launcher `simu_tools/megatron_scripts/scripts/run_pretrain_llama3.sh` / `run_llama3.sh`
@4dcaae51, over Megatron-LM 23e00ed0 (core_r0.14.0, pinned by `scripts/setup_b200_real_env.sh`),
as LAUNCHER says. A peak measured once for several micro-batch counts (SimuMax's
`memory_source_case`: `docs/b200/b200_real_repro_guide.md` section 6 reuses one memory run when
only the count changes) is kept on its own run alone, so each measured peak counts once.
"""

import json
import re
from pathlib import Path

from simsp.errors import InputError
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import TrainingSpec, Workload
from simsp.units import GIB
from simsp.validate.data import read_derived_csv, write_derived_csv

SET = "simumax-b200"
HARDWARE = "hardware/dgx-b200.yaml"
RUNS_FILE = "simumax_b200.csv"
SOURCE_FILE = "sources/simumax_b200_release_v1.2_summary.json"
SOURCE = (
    "MooreThreads/SimuMax docs/b200/b200_release_v1.2_summary.json "
    "@4dcaae513ba7679d56c116a17cd4a691ec41e252 (Apache-2.0, simumax_LICENSE)"
)
GPUS = 8
"""Every run fills the one node (run_llama3.sh world_size=8, dp = 8 / (tp pp cp))."""

MODELS = {
    # run_pretrain_llama3.sh MODEL_TYPE branches (its 405B has 16 query groups, not Llama's 8)
    "llama3-70b": {"hidden": 8192, "ffn_hidden": 28672, "heads": 64, "kv_heads": 8},
    "llama3-405b": {"hidden": 16384, "ffn_hidden": 53248, "heads": 128, "kv_heads": 16},
}
VOCAB = 128256
KERNEL = "te-2.11"
"""The attention the runs ran: SimuMax's profile of Transformer Engine 2.11's attention on the
same node, by batch x heads (dgx-b200/flash_attention.csv, derive_flash_attention.py)."""
SEQ_LEN = 4096
"""SEQ_LEN's default in run_pretrain_llama3.sh; the long-context rows name theirs (`seqN`)."""

LAUNCHER_MODEL = {
    "mlp": "swiglu",
    "norm": "rmsnorm",
    "position": "rope",
    "bias": False,
    "dropout": 0.0,
    "attention": "flash",
    "tied_embeddings": False,
}
"""What both launchers (run_pretrain_llama3.sh, run_pretrain_deepseekv2.sh) give every model."""
LAUNCHER = (
    "SimuMax's launcher @4dcaae51 over Megatron-LM 23e00ed0: bf16, micro batch 1, global batch = "
    "micro batches x dp, distributed optimizer, sequence parallel (Megatron drops it at tp 1), "
    "no recompute (--recompute-granularity full --recompute-method block "
    "--recompute-num-layers 0 checkpoints no layer), fp32 gradient reduction "
    "(--accumulate-allreduce-grads-in-fp32), Transformer Engine 2.11's cached dummy weight "
    "gradients (gradient-accumulation fusion is on by default), no DP or TP overlap (defaults; "
    "TP overlap disabled), 1F1B, RoPE, SwiGLU, RMSNorm, untied, no biases, no dropout, "
    "Transformer Engine 2.11 attention (SimuMax's profile of it on this node: kernel te-2.11), "
    "context parallel over all-to-all (CP_COMM_TYPE=a2a)"
)
COLUMNS = (
    "case",
    "model",
    "layers",
    "tp",
    "pp",
    "cp",
    "dp",
    "micro_batches",
    "seq_len",
    "measured_ms",
    "measured_alloc_gib",
    "memory_case",
    "simumax_ms",
    "simumax_alloc_gib",
)
MOE = ("deepseekv2", "deepseekv3")
"""SimuMax's mixture-of-experts models (MLA attention, fine-grained experts): cases of the moe
set (simumax_moe_cases), skipped here."""
MOE_MODELS = {
    # scripts/run_pretrain_deepseekv2.sh @4dcaae51 MODEL_TYPE branches (data/simumax_moe_settings.md
    # gives each value's line): MLA q 1536, kv 512, rope 64, nope 128, v 128; the 4-layer
    # proxies' moe_layer_freq [0]*1+[1]*3 (one dense layer), shared experts of moe_ffn each
    "deepseekv2": {
        "hidden": 5120,
        "heads": 128,
        "vocab": 102400,
        "ffn_hidden": 12288,
        "moe_ffn": 1536,
        "experts": 160,
        "router_topk": 6,
        "shared_expert_ffn": 2 * 1536,
    },
    "deepseekv3": {
        "hidden": 7168,
        "heads": 128,
        "vocab": 129280,
        "ffn_hidden": 18432,
        "moe_ffn": 2048,
        "experts": 256,
        "router_topk": 8,
        "shared_expert_ffn": 2048,
    },
}
MLA = {"q_lora_rank": 1536, "kv_lora_rank": 512, "qk_rope_dim": 64, "v_head_dim": 128}
MOE_LAUNCHER = (
    "SimuMax's run_pretrain_deepseekv2.sh @4dcaae51 over Megatron-LM 23e00ed0: bf16, micro "
    "batch 1, one dense layer then three with experts, alltoall dispatcher with capacity factor "
    "1 padded (balanced: moe_load 1), grouped GEMM, ETP 1, distributed optimizer, no recompute, "
    "no gradient-reduce overlap, untied, no MTP (data/simumax_moe_settings.md)"
)


def _parallel_of(case: str) -> dict:
    """tp, pp, cp and the sequence length, from a SimuMax case name."""
    found = {k: re.search(rf"(?:^|_){k}(\d+)", case) for k in ("tp", "pp", "cp", "seq")}
    out = {k: int(m.group(1)) if m else 1 for k, m in found.items()}
    out["seq"] = out["seq"] if found["seq"] else SEQ_LEN
    return out


def _row(source: Path, r: dict) -> dict:
    """One summary row as a simumax_b200.csv row; InputError names a row that lacks a field."""
    try:
        p = _parallel_of(r["case"])
        return {
            "case": r["case"],
            "model": r["model"],
            "layers": r["layer_num"],
            "tp": p["tp"],
            "pp": p["pp"],
            "cp": p["cp"],
            "dp": GPUS // (p["tp"] * p["pp"] * p["cp"]),
            "micro_batches": r["mbc"],
            "seq_len": p["seq"],
            "measured_ms": r["real_ms"],
            "measured_alloc_gib": r["real_alloc_gib"],
            "memory_case": r.get("memory_source_case") or r["case"],
            "simumax_ms": r["perf_ms"],
            "simumax_alloc_gib": r["perf_alloc_gib"],
        }
    except (KeyError, TypeError) as e:
        raise InputError(source, f"rows[{r.get('case', '?')}]", str(e), "lacks a field") from None


def derive_simumax(source, out_dir) -> Path:
    """Write out_dir/simumax_b200.csv from SimuMax's B200 summary JSON: a provenance header, then
    one row a run in the file's order; return its path."""
    source = Path(source)
    rows = json.loads(source.read_text()).get("rows")
    if not isinstance(rows, list):
        raise InputError(source, "rows", type(rows).__name__, "must be a list of runs")
    out = [_row(source, r) for r in rows]
    header = [
        f"{len(out)} Megatron-LM iterations measured on one node of 8 B200s by SimuMax, with each "
        "run's largest torch.cuda.max_memory_allocated() over its ranks (GiB, MiB / 1024) and "
        "SimuMax's own prediction of both.",
        f"Derived by simsp.validate.simumax.derive_simumax from {SOURCE}: real_ms, "
        "real_alloc_gib, perf_ms, perf_alloc_gib, layer_num and mbc verbatim; memory_case is "
        "memory_source_case, the run whose memory log gave real_alloc_gib; tp, pp, cp and "
        "seq_len parsed from the case name (seq_len 4096 where it names none); "
        "dp = 8 / (tp pp cp).",
    ]
    return write_derived_csv(Path(out_dir) / RUNS_FILE, header, COLUMNS, out)


def read_simumax(data_dir) -> list[dict]:
    """simumax_b200.csv's rows as dicts of column to string."""
    return read_derived_csv(Path(data_dir) / RUNS_FILE)


def simumax_workload(row: dict) -> Workload:
    """A dense row as the Workload SimuMax's launcher ran (LAUNCHER)."""
    n = {k: int(row[k]) for k in ("layers", "tp", "pp", "cp", "dp", "micro_batches", "seq_len")}
    model = ModelSpec(
        layers=n["layers"],
        seq_len=n["seq_len"],
        vocab=VOCAB,
        **LAUNCHER_MODEL,
        **MODELS[row["model"]],
    )
    parallel = ParallelSpec(
        tp=n["tp"],
        pp=n["pp"],
        cp=n["cp"],
        dp=n["dp"],
        cp_comm_type="a2a" if n["cp"] > 1 else "p2p",
        sequence_parallel=n["tp"] > 1,
        recompute="none",
        schedule="1f1b",
        distributed_optimizer=True,
        grad_reduce_in_fp32=True,
        cached_dummy_wgrads=True,  # TE 2.11, gradient-accumulation fusion on (Megatron default)
    )
    return validate(Workload(row["case"], model, _training(n), parallel), row["case"])


def _training(n: dict) -> TrainingSpec:
    """The launchers' batch and kernels: micro batch 1, micro batches x dp a global batch,
    SimuMax's profile of TE 2.11's attention, and the runs' `_cef`: --cross-entropy-loss-fusion
    --cross-entropy-fusion-impl te (SimuMax docs/strategy.md, "cross_entropy_loss_fusion"; its
    published predictions are those of its strategy cross_entropy_loss_fusion = True, 1919.4 ms
    for 70B tp8 mbc32, 1955.0 without)."""
    return TrainingSpec(
        global_batch=n["micro_batches"] * n["dp"],
        micro_batch=1,
        attention_kernel=KERNEL,
        cross_entropy="te",
    )


def simumax_moe_workload(row: dict) -> Workload:
    """An MoE row as the Workload SimuMax's DeepSeek launcher ran (MOE_LAUNCHER)."""
    n = {k: int(row[k]) for k in ("layers", "tp", "pp", "dp", "micro_batches", "seq_len")}
    ep = int(re.search(r"_ep(\d+)", row["case"]).group(1))
    model = ModelSpec(
        layers=n["layers"],
        seq_len=n["seq_len"],
        **LAUNCHER_MODEL,
        head_dim=128,
        dense_layers=1,
        **MLA,
        **MOE_MODELS[row["model"]],
    )
    parallel = ParallelSpec(
        tp=n["tp"],
        pp=n["pp"],
        dp=n["dp"],
        ep=ep,
        etp=1,
        moe_dispatcher="alltoall",
        recompute="none",
        schedule="1f1b",
        distributed_optimizer=True,
        grad_reduce_in_fp32=True,
        cached_dummy_wgrads=True,
    )
    return validate(Workload(row["case"], model, _training(n), parallel), row["case"])


def _case(row: dict, w: Workload, set_name: str, hw: str, peak: float, notes: str):
    """A row as a Case: measured seconds and, where this run measured it, its peak bytes (a peak
    logged by another run of the same layout is that run's: counted there only), SimuMax's own
    answer beside them."""
    from simsp.validate.baseline import naive_baseline_s
    from simsp.validate.case import Case

    own = row["memory_case"] == row["case"]
    return Case(
        set_name,
        row["case"],
        float(row["measured_ms"]) / 1e3,
        w,
        hw,
        description=_describe(row),
        baseline_s=naive_baseline_s(w, peak),
        notes=notes,
        framework="Megatron-LM core_r0.14.0",
        measured_peak_bytes=float(row["measured_alloc_gib"]) * GIB if own else 0.0,
        peer_s=float(row["simumax_ms"]) / 1e3,
    )


def simumax_moe_cases(data_dir, set_name: str) -> list:
    """The MoE rows as Cases of `set_name` on dgx-b200, measured time and (where the run
    measured it) peak memory, with SimuMax's own answer beside them."""
    from simsp.io.config import load_hardware
    from simsp.validate.case import project_path

    hw = str(project_path(HARDWARE))
    peak = load_hardware(hw).gpu.peak_tflops
    return [
        _case(row, simumax_moe_workload(row), set_name, hw, peak, MOE_LAUNCHER)
        for row in read_simumax(data_dir)
        if row["model"] in MOE
    ]


def _describe(row: dict) -> str:
    parts = [f"{row['model']} L{row['layers']}", f"tp{row['tp']} pp{row['pp']}"]
    if row["cp"] != "1":
        parts.append(f"cp{row['cp']}")
    parts += [f"dp{row['dp']} mbc{row['micro_batches']} s{row['seq_len']}"]
    return " ".join(parts)


def simumax_cases(data_dir) -> tuple[list, list]:
    """The dense rows as Cases on dgx-b200 (measured seconds and peak bytes, the naive
    baseline of the published sets), the others as Skipped with the reason."""
    from simsp.io.config import load_hardware
    from simsp.validate.case import Skipped, project_path

    hw = str(project_path(HARDWARE))
    peak = load_hardware(hw).gpu.peak_tflops
    cases, skipped = [], []
    for row in read_simumax(data_dir):
        if row["model"] in MOE:
            reason = f"mixture of experts ({row['model']}): a case of the moe set"
            skipped.append(Skipped(SET, row["case"], reason))
            continue
        if row["model"] not in MODELS:
            known = ", ".join([*MODELS, *MOE])
            raise InputError(RUNS_FILE, "model", row["model"], f"must be one of {known}")
        cases.append(_case(row, simumax_workload(row), SET, hw, peak, LAUNCHER))
    return cases, skipped
