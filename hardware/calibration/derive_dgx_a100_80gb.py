"""Derive the calibration files of hardware/dgx-a100-80gb.yaml from the shared measured data.

Usage (from the repository root):

    python hardware/calibration/derive_dgx_a100_80gb.py [DATA_DIR] [--out OUT_DIR] [--date YYYY-MM-DD]

DATA_DIR defaults to hardware/calibration/sources (the upstream files, verbatim, with their
licences; copied from the project's shared data folder, whose layout it keeps); OUT_DIR to
hardware/calibration/dgx-a100-80gb. Writes:

* nvlink/AR_GPU{2..8}_1M_1024M_LUT - vTrain in-node all_reduce LUTs, thinned to 1..8 MiB and
  every multiple of 8 MiB (rows kept byte for byte);
* nvlink/nccl_{2,4,8}.log, infiniband/nccl_{16,32,64,128}.log - Echo nccl-tests logs, unchanged;
* gemm.csv - SimuMax A100 PCIe per-shape GEMM efficiencies scaled to A100 SXM4 TFLOP/s;
* README.md - provenance of all of the above; licenses/*.LICENSE - the sources' licence texts.
"""

import argparse
import datetime
import json
import re
import shutil
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from simsp.tables import GemmPoint, GemmTable, write_gemm_table  # noqa: E402

OUT_DEFAULT = REPO / "hardware" / "calibration" / "dgx-a100-80gb"
VTRAIN = ("VIA-Research/vTrain", "trace/a100/", "f8dda8473a48b373b1d25f51f52d685bff5150c5", "MIT")
ECHO = ("NetX-lab/Echo", "nccl-test-log/", "15f0d12c417459d7a1b3b66abeaa28eca0b841a2", "MIT")
SIMUMAX = ("MooreThreads/SimuMax", "configs/system/a100_pcie.json",
           "4dcaae513ba7679d56c116a17cd4a691ec41e252", "Apache-2.0")
PEAK_TFLOPS = 312.0
"""A100 dense bf16 peak; SimuMax efficiencies are fractions of it."""
MAMF_SXM_TFLOPS = 271.2
MAMF_PCIE_TFLOPS = 252.9
"""Best-shape bf16 torch.mm TFLOP/s, stas00/ml-engineering compute/accelerator/README.md
@744d01e18b79512572f64a6bbd8b5f4a725203a7 (MAMF table): the PCIe -> SXM level scale."""
MIB = 1024**2
_KEY = re.compile(r"b=(\d+), m=(\d+), k=(\d+), n=(\d+), layout=(\w+)")


def keep_lut_row(size_bytes: int) -> bool:
    """Thinning rule for the vTrain LUTs: 1..8 MiB, then every multiple of 8 MiB."""
    mib = size_bytes // MIB
    return mib <= 8 or mib % 8 == 0


def thin_lut(src: Path, dst: Path) -> None:
    """Copy a vTrain LUT keeping its header and the rows `keep_lut_row` selects."""
    lines = src.read_text().splitlines()
    rows = [line for line in lines[1:] if line.strip() and keep_lut_row(int(line.split(",")[0]))]
    dst.write_text("\n".join([lines[0], *rows]) + "\n")


def sxm_tflops(efficiency: float) -> float:
    """SimuMax A100-PCIe efficiency -> A100-SXM4 TFLOP/s: eff * 312 * 271.2/252.9, capped at 271.2."""
    return min(efficiency * PEAK_TFLOPS * MAMF_SXM_TFLOPS / MAMF_PCIE_TFLOPS, MAMF_SXM_TFLOPS)


def gemm_points(simumax_json: Path) -> list[GemmPoint]:
    """SimuMax 'b, m, k, n, layout' keys -> our (m rows, n cols of the output, k reduction)."""
    factors = json.loads(simumax_json.read_text())["accelerator"]["op"]["matmul"]["accurate_efficient_factor"]
    points = {}
    for key, eff in factors.items():
        b, m, k, n, layout = _KEY.match(key).groups()
        shape = (int(m), int(n), int(k), int(b), layout)
        points.setdefault(shape, GemmPoint(*shape, tflops=round(sxm_tflops(eff), 3)))
    return sorted(points.values(), key=lambda p: (("TN", "NN", "NT").index(p.layout), p.m, p.n, p.k, p.batch))


def gemm_comments(date: str) -> list[str]:
    """Provenance lines for gemm.csv."""
    repo, path, commit, licence = SIMUMAX
    return [
        "GEMM throughput for NVIDIA A100-SXM4-80GB, bf16 in / bf16 out (NT: fp32 accumulate), by shape.",
        f"source: {repo}:{path}@{commit} ({licence}),",
        "  accelerator.op.matmul.accurate_efficient_factor: bf16 cuBLAS on A100 PCIe 80GB, fraction of 312 TFLOP/s.",
        "  SimuMax keys 'b=B, m=M, k=K, n=N, layout=L' -> batch=B, m=M (output rows),",
        "  n=N (output cols), k=K (reduction).",
        "  layout: TN = forward, NN = input gradient (dgrad), NT = weight gradient (wgrad).",
        f"formula: tflops = min(eff * {PEAK_TFLOPS:g} * ({MAMF_SXM_TFLOPS} / {MAMF_PCIE_TFLOPS}), {MAMF_SXM_TFLOPS})",
        f"scale: {MAMF_SXM_TFLOPS / MAMF_PCIE_TFLOPS:.5f} = A100 SXM / A100 PCIe best-shape bf16 MAMF "
        "(stas00/ml-engineering:compute/accelerator/README.md@744d01e18b79512572f64a6bbd8b5f4a725203a7)",
        "  keeps SimuMax's per-shape curve, moves its level from the PCIe part (lower power/clocks) to SXM.",
        "derived by: hardware/calibration/derive_dgx_a100_80gb.py",
        f"derived: {date}",
    ]


def readme_text(date: str, n_gemm: int) -> str:
    """README.md of the calibration folder: provenance of every file."""
    vt, ec, sm = (f"`{r}:{p}` @ `{c}` ({lic})" for r, p, c, lic in (VTRAIN, ECHO, SIMUMAX))
    return f"""# Calibration for `hardware/dgx-a100-80gb.yaml`

Derived on {date} by `hardware/calibration/derive_dgx_a100_80gb.py` from `../shared/data`
(measurements by other projects, kept there unchanged). Re-run that script to reproduce every
file here; `tests/test_calibration.py` checks that it does.

| file | what | source | changes |
|---|---|---|---|
| `nvlink/AR_GPU{{2..8}}_1M_1024M_LUT` | nccl-tests all_reduce inside one 8x A100 node (NVLink3/NVSwitch), 2 to 8 GPUs, out-of-place and in-place time (ns) and busbw (GB/s), 1 MiB to 1 GiB | {vt} `AR_GPU{{2..8}}_1M_1024M_LUT` | thinned to 135 rows: every row of 1..8 MiB and every multiple of 8 MiB up to 1 GiB (the original steps by 1 MiB); kept rows are unchanged |
| `nvlink/nccl_{{2,4,8}}.log` | raw nccl-tests all_reduce_perf logs (older layout), 8 B to 1 GiB, in one Azure ND A100 v4 node (A100-SXM4-40GB, NVLink3); give measured latency below vTrain's 1 MiB | {ec} `nccl_{{2,4,8}}.log` | none |
| `infiniband/nccl_{{16,32,64,128}}.log` | the same test across 2 to 16 Azure ND A100 v4 nodes (8 GPUs a node, one 200 Gb/s HDR InfiniBand NIC per GPU), 1 KiB to 16 GiB (4 GiB for 32..128) | {ec} `nccl_{{16,32,64,128}}.log` | none |
| `gemm.csv` | {n_gemm} GEMM shapes (m, n, k, batch, layout, TFLOP/s) | {sm}, `accelerator.op.matmul.accurate_efficient_factor` (bf16 cuBLAS on A100 PCIe 80GB) | scaled to A100 SXM4: `tflops = min(eff * 312 * 271.2 / 252.9, 271.2)`, see below |

Scaling of `gemm.csv`: SimuMax measured on the A100 PCIe part, which runs at lower power and
clocks than the SXM4 part in DGX A100 nodes. Its per-shape efficiencies are kept for the shape
of the curve; the level is moved by the ratio of the best-shape bf16 matmul rates of the two
parts from the MAMF table of `stas00/ml-engineering:compute/accelerator/README.md` @
`744d01e18b79512572f64a6bbd8b5f4a725203a7` (A100 SXM 271.2, A100 PCIe 252.9 TFLOP/s), capped at
the SXM MAMF. SimuMax keys read `b, m, k, n`: stored as batch, m (output rows), n (output
columns), k (reduction). Layout TN is the forward GEMM, NN the input gradient, NT the weight
gradient; `accumulate` and `out_dtype` in SimuMax's keys are dropped (one value per shape).

Caveats: the NVLink logs come from two different clusters (vTrain's 8x A100 node, Echo's Azure
A100-40GB node), and the InfiniBand logs from Azure's fabric, not Selene's; treat the absolute
small-message latencies as indicative.

Licences: every file keeps the licence of its source - vTrain (MIT, (c) 2024 VIA Research Group
at KAIST), Echo (MIT), SimuMax (Apache-2.0). Their licence texts are copied unchanged into
`licenses/` (`vtrain.LICENSE`, `echo.LICENSE`, `simumax.LICENSE`).
"""


def derive(data: Path, out: Path, date: str) -> list[Path]:
    """Write every calibration file under `out` from the shared data folder `data`; return them."""
    written = []
    for sub in ("nvlink", "infiniband"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for gpus in range(2, 9):
        name = f"AR_GPU{gpus}_1M_1024M_LUT"
        thin_lut(data / "vtrain" / "trace-a100" / name, out / "nvlink" / name)
        written.append(out / "nvlink" / name)
    for gpus, sub in [(2, "nvlink"), (4, "nvlink"), (8, "nvlink"),
                      (16, "infiniband"), (32, "infiniband"), (64, "infiniband"), (128, "infiniband")]:
        dst = out / sub / f"nccl_{gpus}.log"
        shutil.copyfile(data / "echo-nccl-a100" / f"nccl_{gpus}.log", dst)
        written.append(dst)
    (out / "licenses").mkdir(exist_ok=True)
    for folder, name in [("vtrain", "vtrain"), ("echo-nccl-a100", "echo"), ("simumax", "simumax")]:
        dst = out / "licenses" / f"{name}.LICENSE"
        shutil.copyfile(data / folder / "LICENSE", dst)
        written.append(dst)
    points = gemm_points(data / "simumax" / "a100_pcie.json")
    table = GemmTable(tuple(points), dtype="bf16", device="NVIDIA A100-SXM4-80GB (scaled from A100 PCIe 80GB)")
    write_gemm_table(table, out / "gemm.csv", gemm_comments(date))
    (out / "README.md").write_text(readme_text(date, len(points)))
    return written + [out / "gemm.csv", out / "README.md"]


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(REPO / "hardware" / "calibration" / "sources"),
                        help="measured-data folder (default: hardware/calibration/sources, the "
                        "upstream files copied verbatim)")
    parser.add_argument("--out", default=str(OUT_DEFAULT), help="output folder")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="date recorded in the files")
    args = parser.parse_args(argv)
    for path in derive(Path(args.data), Path(args.out), args.date):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
