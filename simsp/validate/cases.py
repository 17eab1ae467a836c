"""Validation cases: each reference time paired with the simsp run that predicts it.

The paper's Tables 4 and 5 run on hardware/dgx-a100-80gb.yaml; vTrain's rows become workloads
with Megatron-DeepSpeed's settings on hardware/vtrain-a100.yaml, and rows that are not valid
simsp workloads are kept as `Skipped`, with the reason. Every reference is a measurement except
vtrain-single's, which is vTrain's own predictor (REFERENCES).
"""

import dataclasses

from simsp.errors import InputError
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import TrainingSpec, Workload
from simsp.validate.case import Case, Skipped, project_path
from simsp.validate.data import DATA_DIR, read_vtrain
from simsp.validate.fp8_pairs import PAIRS_SET, pair_cases
from simsp.validate.names import SETS
from simsp.validate.published import MOE_SET, PUBLISHED_SETS, published_cases
from simsp.validate.simumax import SET as SIMUMAX_SET
from simsp.validate.simumax import simumax_cases, simumax_moe_cases
from simsp.validate.torch_native import SET as TORCH_NATIVE_SET
from simsp.validate.torch_native import torch_native_cases

PAPER_HARDWARE = "hardware/dgx-a100-80gb.yaml"
VTRAIN_HARDWARE = "hardware/vtrain-a100.yaml"
assert {PAIRS_SET, SIMUMAX_SET, MOE_SET, TORCH_NATIVE_SET} <= set(SETS), "validate/names.py"

VTRAIN_VOCAB = 51200
"""vTrain trains GPT-2's 50,257-token vocabulary, which Megatron pads to a multiple of 128 x tp
(50,304 at tp 1, 50,688 at tp 8); we take the paper's padded 51,200 for every row (< 2% more
logits work, divisible by every tp in the data)."""

VTRAIN_PARALLEL = {"sequence_parallel": False, "recompute": "full", "schedule": "1f1b"}
"""Megatron-DeepSpeed as vTrain ran it: full activation checkpointing (use_checkpoint: true),
1F1B, no sequence parallelism, no gradient bucketing (so no DP overlap: simsp's default)."""

VTRAIN_SINGLE_PARALLEL = {**VTRAIN_PARALLEL, "recompute": "none"}
"""The single-node file is vTrain's predictor run without recompute (validate/peer.py: no
stage of any row recomputes), so simsp runs it without recompute too, like with like."""

REFERENCES = {
    "paper-table4": "measured (the paper's Table 4)",
    "paper-table5": "measured (the paper's Table 5)",
    "vtrain-single": (
        "a comparison with a peer simulator (vTrain's predictor, run without recompute), "
        "not measurement"
    ),
    "vtrain-multi": "measured (vTrain's multi-node runs)",
    "published-a100": "measured (published runs: llm-foundry MPT on A100)",
    "published-h100": "measured (published runs: NeMo / Megatron-Bridge / llm-foundry on H100)",
    "published-b200": "measured (published runs: NeMo / Megatron-Bridge on B200 and GB200)",
    PAIRS_SET: "measured (NVIDIA's paired BF16 / FP8 runs: dgxc-benchmarking, NeMo on H100, GB200)",
    SIMUMAX_SET: "measured, time and HBM peak (SimuMax's Megatron-LM runs on one node of 8 B200s)",
    MOE_SET: (
        "measured (mixture-of-experts runs: Megatron-Bridge 25.09-26.04 tables, dgxc-benchmarking "
        "Grok-1, NeMo 25.02 Mixtral)"
    ),
    TORCH_NATIVE_SET: (
        "measured (PyTorch-native runs: torchtitan benchmarks on A100, H100, H200; NeMo AutoModel "
        "FSDP2 on H100)"
    ),
}
"""What each set's reference times are: a measurement, or another simulator's answer."""
GAP_REPORTED = 0.30
"""A case missed by more than this (|error|) is listed with its written reason."""
PEER_SETS = ("vtrain-single",)
"""Sets whose reference is a peer simulator's prediction, not a measurement."""
APART_SETS = (MOE_SET, TORCH_NATIVE_SET)
"""Measured sets kept out of the per-GPU accuracy line of `simsp run` (validate/accuracy.py):
their runs are not like the dense runs that line speaks for (mixtures of experts; runs on
PyTorch-native stacks rather than Megatron-Core)."""


def _variant(w: Workload, recompute: str, sp: bool) -> Workload:
    return dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, recompute=recompute, sequence_parallel=sp)
    )


def paper_table4_cases() -> list[Case]:
    """Table 4: the 22B layer's forward and backward (ms) in the paper's five settings."""
    from simsp.io.config import load_workload
    from simsp.validate.paper import TABLE4_22B_MS, TABLE4_LABELS

    base = load_workload(project_path("workloads/gpt-22b.yaml"))
    hw = str(project_path(PAPER_HARDWARE))
    cases = []
    for key, (fwd_ms, bwd_ms) in TABLE4_22B_MS.items():
        w = _variant(base, *key)
        for quantity, ms in (("layer_forward", fwd_ms), ("layer_backward", bwd_ms)):
            label = f"{TABLE4_LABELS[key]} {quantity.split('_')[1]}"
            cases.append(
                Case("paper-table4", label, ms / 1e3, w, hw, quantity, f"22B layer, {label}")
            )
    return cases


def paper_table5_cases() -> list[Case]:
    """Table 5: iteration seconds with full recompute (no SP) and with the present work."""
    from simsp.io.config import load_workload
    from simsp.validate.paper import MODELS, TABLE5_S

    hw = str(project_path(PAPER_HARDWARE))
    cases = []
    for name in MODELS:
        w = load_workload(project_path(f"workloads/{name}.yaml"))
        full_s, present_s = TABLE5_S[name]
        cases.append(
            Case(
                "paper-table5",
                f"{name} full",
                full_s,
                _variant(w, "full", False),
                hw,
                description=f"{name}, full recompute, no SP",
            )
        )
        cases.append(
            Case(
                "paper-table5",
                f"{name} present",
                present_s,
                w,
                hw,
                description=f"{name}, SP + selective recompute",
            )
        )
    return cases


def vtrain_workload(row: dict, name: str, settings: dict = VTRAIN_PARALLEL) -> Workload:
    """One derived vTrain row as a validated Workload (raises InputError if it is not one)."""
    n = {
        k: int(row[k])
        for k in (
            "layers",
            "hidden",
            "heads",
            "seq_len",
            "global_batch",
            "micro_batch",
            "tp",
            "pp",
            "dp",
            "gpus",
        )
    }
    w = Workload(
        name=name,
        model=ModelSpec(
            layers=n["layers"],
            hidden=n["hidden"],
            heads=n["heads"],
            seq_len=n["seq_len"],
            vocab=VTRAIN_VOCAB,
        ),
        training=TrainingSpec(global_batch=n["global_batch"], micro_batch=n["micro_batch"]),
        parallel=ParallelSpec(tp=n["tp"], pp=n["pp"], dp=n["dp"], **settings),
    )
    if w.parallel.gpus != n["gpus"]:
        raise InputError(
            name, "gpus", n["gpus"], f"must equal tp x cp x pp x dp ({w.parallel.gpus})"
        )
    return validate(w, name)


def _describe(row: dict) -> str:
    return (
        f"L{row['layers']} h{row['hidden']} a{row['heads']} s{row['seq_len']} "
        f"B{row['global_batch']} b{row['micro_batch']} tp{row['tp']} pp{row['pp']} dp{row['dp']}"
    )


def vtrain_cases(kind: str, data_dir=DATA_DIR) -> tuple[list[Case], list[Skipped]]:
    """Every row of vtrain_{kind}.csv as a Case on vtrain-a100, and the rows that are not valid."""
    hw = str(project_path(VTRAIN_HARDWARE))
    settings = VTRAIN_SINGLE_PARALLEL if kind == "single" else VTRAIN_PARALLEL
    cases, skipped = [], []
    for i, row in enumerate(read_vtrain(kind, data_dir), start=1):
        name = f"{kind}-{i:04d}"
        try:
            w = vtrain_workload(row, name, settings)
        except (InputError, ValueError) as e:
            skipped.append(Skipped(f"vtrain-{kind}", name, str(e)))
            continue
        desc = _describe(row) + (
            f" ({row['params_billion']}B)" if row.get("params_billion") else ""
        )
        cases.append(
            Case(
                f"vtrain-{kind}",
                name,
                float(row["iteration_time_ms"]) / 1e3,
                w,
                hw,
                description=desc,
            )
        )
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
        elif name in PUBLISHED_SETS:
            c, s = published_cases(name, data_dir)
            cases += c
            skipped += s
        elif name == MOE_SET:  # the published MoE runs and SimuMax's measured MoE runs
            c, s = published_cases(name, data_dir)
            cases += c + simumax_moe_cases(data_dir, MOE_SET)
            skipped += s
        elif name == TORCH_NATIVE_SET:
            c, s = torch_native_cases(data_dir)
            cases += c
            skipped += s
        elif name == PAIRS_SET:
            c, s = pair_cases(data_dir)
            cases += c
            skipped += s
        elif name == SIMUMAX_SET:
            c, s = simumax_cases(data_dir)
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
