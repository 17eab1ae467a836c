"""Derive hardware/calibration/dgx-b200/grouped_gemm.csv: Transformer Engine's grouped GEMM on a
B200, as SimuMax measured it (MooreThreads/SimuMax @4dcaae513b, configs/system/
b200_bf16_ceperm.json, accelerator.op.group_matmul.accurate_efficient_factor; the verbatim copy
is dgx-b200/sources/simumax_b200_bf16_ceperm.json, whose dense GEMM rows dgx-b200/gemm.csv
already holds).

Each SimuMax key names ng equal groups of M rows, N, K, the dtype, the accumulation type of the
weight gradient (main_grad_dtype) and the stage: fwd (TN), bwd_grad_act (the input gradient, NN)
or bwd_grad_w (the weight gradient accumulated into main_grad, NT); its value is the achieved
fraction of the file's 2250 TFLOP/s, FLOPs counted 2 ng M N K for every stage (SimuMax
docs/system.md, the group_matmul row). Megatron-Core accumulates weight gradients in fp32, so
the main_grad_dtype=fp32 rows are kept. Written: groups, m, n, k, layout (the stage as simsp's
GEMM tables name it), tflops. Standard library only; re-running writes the same bytes.

    python hardware/calibration/derive_grouped_gemm.py
"""

import json
import re
from pathlib import Path

CAL = Path(__file__).resolve().parent
SOURCE = CAL / "dgx-b200" / "sources" / "simumax_b200_bf16_ceperm.json"
OUT = CAL / "dgx-b200" / "grouped_gemm.csv"
STAGES = {"fwd": "TN", "bwd_grad_act": "NN", "bwd_grad_w": "NT"}
KEY = re.compile(
    r"ng=(\d+), M=(\d+), N=(\d+), K=(\d+), dtype=(\w+), out_dtype=\w+, "
    r"main_grad_dtype=(\w+), stage=(\w+),"
)


def rows(data: dict) -> list[tuple]:
    """(groups, m, n, k, layout, tflops) of every fp32-accumulation entry, in a fixed order."""
    table = data["accelerator"]["op"]["group_matmul"]
    peak = table["tflops"]
    out = []
    for key, fraction in table["accurate_efficient_factor"].items():
        ng, m, n, k, dtype, main_grad, stage = KEY.match(key).groups()
        if dtype == "bf16" and main_grad == "fp32":
            out.append((int(ng), int(m), int(n), int(k), STAGES[stage], fraction * peak))
    return sorted(out)


def derive(source: Path = SOURCE, out: Path = OUT) -> Path:
    """Write the table; return its path."""
    data = json.loads(source.read_text())
    header = [
        "# device: NVIDIA B200 (SimuMax's measurement, Transformer Engine grouped GEMM)",
        "# dtype: bf16",
        "# source: MooreThreads/SimuMax@4dcaae513b configs/system/b200_bf16_ceperm.json "
        "accelerator.op.group_matmul (copy: dgx-b200/sources/simumax_b200_bf16_ceperm.json), "
        "main_grad_dtype=fp32 entries; tflops = fraction x 2250, FLOPs 2 groups m n k",
        "# derived by: python hardware/calibration/derive_grouped_gemm.py",
        "groups,m,n,k,layout,tflops",
    ]
    lines = [f"{g},{m},{n},{k},{lay},{t:.3f}" for g, m, n, k, lay, t in rows(data)]
    out.write_text("\n".join(header + lines) + "\n")
    return out


if __name__ == "__main__":
    print(derive())
