"""Derive the calibration of the Blackwell Ultra hardware files (dgx-b300.yaml, gb300-nvl72.yaml).

Usage (from the repository root):

    python hardware/calibration/derive_blackwell_ultra.py [--out CAL_DIR] [--date YYYY-MM-DD]

No GEMM sweep by shape, no FlashAttention figure and no nccl-tests sweep of a B300 or a GB300 was
found in what was searched; what was found is typed in below, each with its source. The files are
built as the B200 / GB200 ones were (derive_gemm_tables.py, derive_flash_attention.py,
derive_library.py), from the B200 / GB200 measurements and NVIDIA's models, by the rules stated
here. Nothing is fitted to end-to-end training times. Writes, under CAL_DIR (default
hardware/calibration):

* dgx-b300/gemm_model_fp8.csv: nvMatmulHeuristics' `B200` target (the package has no B300 one)
  anchored by work exactly as dgx-b200's, capped at the B300's own FP8 MAMF (the bf16 model is
  not rewritten: capped at the B300's 1769 instead of 1745 it is dgx-b200's row for row, as no
  row of it reaches 1700; dgx-b300.yaml names that file);
* gb300-nvl72/gemm.csv: SimuMax's B200 rows carried to the GB300 as derive_gemm_tables.py
  carries them to the GB200, with nvMatmulHeuristics' `GB300_NVL` target in place of `GB200_NVL`;
* gb300-nvl72/gemm_model.csv, gemm_model_fp8.csv: `GB300_NVL` anchored as gb200-nvl72's are;
* dgx-b300/flash_attention.csv, gb300-nvl72/flash_attention.csv: the table the B200 / GB200
  files use (dgx-b200/flash_attention.csv), its cuDNN rows times the GB300 / GB200 cuDNN ratio
  NVIDIA's cudnn-frontend measured (Blackwell Ultra's doubled softmax exponent rate);
* dgx-b300/infiniband/*.log, gb300-nvl72/infiniband/*.log: dgx-b200's and gb200-nvl72's tables
  (400 Gb/s NICs) moved to ConnectX-8's 800 Gb/s by simsp.cost.network's own link-rate rule
  (link_scaled_s), the numbers a `measured_nic_gbps: 400` what-if would give at run time, written
  out so that each hardware file prices its tables at the rates it states (as derive_library.py
  wrote vtrain-a100's from Echo's logs);
* a README.md in each folder with every file's provenance and what the hardware file reuses.

The NVLink tables are not copied: the same NVLink5 (900 GB/s a direction) as B200 / GB200, so the
hardware files name dgx-b200's and gb200-nvl72's.
"""

import argparse
import datetime
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import derive_gemm_model as model  # noqa: E402
import published_gemm as pub  # noqa: E402

from simsp.cost.network import best_algbw_bps, link_scaled_s  # noqa: E402
from simsp.tables import (  # noqa: E402
    CollectiveTable,
    GemmPoint,
    GemmTable,
    read_gemm_table,
    read_nccl_log,
    write_gemm_table,
    write_nccl_log,
)
from simsp.tables.attention import AttentionPoint, read_attention_table, write_attention_table  # noqa: E402

CAL = REPO / "hardware" / "calibration"
SCRIPT = "hardware/calibration/derive_blackwell_ultra.py"
REF = "../shared/reference/hardware-and-calibration.md"

# ================================================================ published figures (typed in)

ML_ENG = "stas00/ml-engineering@744d01e18b79512572f64a6bbd8b5f4a725203a7"
"""The commit the reference's [S2]/[S5] cite; compute/accelerator/README.md there."""
MAMF_B300_BF16 = (12288, 18432, 1024, 1769.0)
"""'NVIDIA B300 SXM' bf16 MAMF, best shape MxNxK, torch 2.9.1+cu130 (ref §4.1 [S5])."""
MAMF_B300_FP8 = 3353.3
"""'NVIDIA B300 SXM' fp8 e4m3 MAMF, best shape 3072x6144x7168 (ref §4.1 [S5])."""
DENSE_BF16_PEAK = {"B200": pub.DENSE_BF16_PEAK["B200"], "GB300": 2500.0}
"""GB300: dense BF16 per Blackwell Ultra GPU of GB300 NVL72, ml-engineering TFLOPS table
(note 24: NVIDIA GB300 NVL72 specifications: 360 PFLOPS sparse BF16 a rack / 72 / 2)."""

CUDNN_FE = "NVIDIA/cudnn-frontend"
CUDNN_FE_COMMIT = "b372d39879d44c91a8d5b342022e74802b6a8da2"
CUDNN_FE_PATH = (
    "benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_{gpu}.csv"
)
CUDNN_FE_SETTING = (
    "batch 1, 128 query / 8 KV heads, head dim 128, causal, BF16, backend cudnn_fe, "
    "cuDNN 9.17.0 (backend 91700, frontend 1.16.0), NGC PyTorch 25.11 (torch 2.10.0a0 "
    "nv25.11, CUDA 13.0), 4 GPUs of one tray (sample_gb200_bf16_run.txt, "
    "sample_gb300_bf16_run.txt, same commit)"
)
CUDNN_SEQ = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
CUDNN_TFLOPS = {
    # gpu: direction: TFLOP/s at CUDNN_SEQ (fwd_tflops_per_sec, bwd_tflops_per_sec of the
    # cudnn_fe rows; FLOPs as flash-attention's benchmarks count them, causal halved)
    "GB200": {
        "fwd": (408, 733, 1069, 1386, 1584, 1668, 1681, 1573, 1467),
        "bwd": (329, 527, 655, 1054, 1211, 1304, 1348, 1229, 1188),
    },
    "GB300": {
        "fwd": (461, 839, 1312, 1682, 1899, 1978, 2007, 1951, 1821),
        "bwd": (330, 522, 633, 1110, 1292, 1399, 1438, 1399, 1360),
    },
}
"""NVIDIA/cudnn-frontend @b372d39 (cuDNN FE 1.17.0 release, 2025-12-19): the GB200 and GB300
runs of its SDPA training benchmark in one release, same software; the only pair of a Blackwell
and a Blackwell Ultra GPU measured alike that was found. The release before (@0b1577c, cuDNN
9.13) measured GB300 beside B200 instead; its ratios (GB300 / B200 fwd 1.28, bwd 1.19 at 8k) fold
the GB200's higher power limit in and are not used."""
ATTENTION_HOLD = max(
    t / DENSE_BF16_PEAK["GB300"] for d in CUDNN_TFLOPS["GB300"].values() for t in d
)
"""0.803: the highest share of the dense BF16 peak a measured Blackwell Ultra attention row reached
(GB300 cuDNN 9.17 causal forward at 32k, 2007 of 2500). A scaled row is held at or below it: the
ratio was measured causal, and the B200's non-causal rows start higher (72 % of peak)."""
DENSE_BF16 = {"B300": 2250.0, "GB300": DENSE_BF16_PEAK["GB300"]}
SCALED_KERNELS = ("cudnn", "cudnn-9.13")
"""The flash_attention.csv kernels that are NVIDIA's cuDNN fused attention, the kernel the ratio
was measured on and the one the hardware files price attention with (attention_kernel: cudnn)."""

GEMM_SOURCE_NOTE = (
    "nvidia-matmul-heuristics {version} has targets B200, GB200_NVL and GB300_NVL "
    "but none for the B300"
)


# ================================================================ GEMM tables


def _anchored(
    machine: str,
    name: str,
    gpu: str,
    precision: str,
    anchor: str,
    anchor_gpu: str,
    cap: float,
    note: str,
    date: str,
    out: Path,
    extra: tuple[str, ...],
    cap_source: str = "",
) -> dict:
    """model.derive_anchored into out/machine/name, with `extra` comment lines after its first
    line (what the generic comments cannot say: a borrowed target) and, for a cap measured on
    another GPU, `cap_source` in place of the comment's "measured on this GPU"."""
    path = out / machine / name
    path.parent.mkdir(parents=True, exist_ok=True)
    result = model.derive_anchored(
        machine=machine,
        gpu=gpu,
        precision=precision,
        anchor=CAL / anchor,
        anchor_gpu=anchor_gpu,
        anchor_note=note,
        cap=cap,
        date=date,
        out=path,
        command=f"python {SCRIPT} --date {date}",
    )
    text = path.read_text()
    if cap_source:
        mine = "the best rate measured on this GPU (MAMF, ref §4.1 [S5])."
        assert mine in text
        text = text.replace(mine, cap_source)
    if extra:
        first, rest = text.split("\n", 1)
        text = first + "\n" + "".join(f"# {line}\n" for line in extra) + rest
    path.write_text(text)
    return result


def transferred_gb300(b200_rows) -> tuple[GemmPoint, ...]:
    """SimuMax's B200 rows on the GB300, by derive_gemm_tables.transferred_gb200's rule with the
    GB300_NVL target: each row times nvMatmulHeuristics' GB300_NVL / B200 ratio at its own shape,
    held between 1 and the dense-peak ratio 2500 / 2250."""
    top = DENSE_BF16_PEAK["GB300"] / DENSE_BF16_PEAK["B200"]
    gb300, b200 = model.make_model("GB300_NVL"), model.make_model("B200")
    points = []
    for p in b200_rows:
        shape = (p.m, p.n, p.k, p.batch, p.layout)
        ratio = model.model_tflops(gb300, *shape) / model.model_tflops(b200, *shape)
        points.append(GemmPoint(*shape, tflops=round(p.tflops * min(max(ratio, 1.0), top), 3)))
    return tuple(points)


def gemm_tables(out: Path, date: str) -> dict[str, list]:
    """Write the GEMM tables; return README rows (file, what, source, derivation) by machine."""
    version = model.package_version()
    rows: dict[str, list] = {"dgx-b300": [], "gb300-nvl72": []}
    b300_model = (
        "nvMatmulHeuristics `B200` stands for the B300 "
        f"({GEMM_SOURCE_NOTE.format(version=version)}; the two have "
        "the same dense BF16 / FP8 peaks, 2250 / 4500, and 148 SMs)"
    )
    r = _anchored(
        "dgx-b300",
        "gemm_model_fp8.csv",
        "B200",
        "fp8",
        "gb200-nvl72/gemm_fp8.csv",
        "GB200_NVL",
        MAMF_B300_FP8,
        "BORROWED: gb200-nvl72/gemm_fp8.csv (Azure GB200 cuBLASLt FP8) against the "
        "GB200_NVL model (no B300 FP8 sweep by shape is published)",
        date,
        out,
        (f"B300: {b300_model}; the cap is the B300's own FP8 MAMF ({ML_ENG}).",),
    )
    rows["dgx-b300"].append(
        (
            "gemm_model_fp8.csv",
            f"MODELED fp8 GEMM TFLOP/s, {r['rows']} shapes, TN (as dgx-b200's)",
            b300_model,
            "dgx-b200/gemm_model_fp8.csv's derivation unchanged (anchored by work "
            "to the Azure GB200 FP8 sweep against the GB200_NVL model), capped at "
            f"{MAMF_B300_FP8:g} (B300 FP8 MAMF, ref §4.1 [S5]) instead of 3432.5",
        )
    )

    b200_rows = read_gemm_table(CAL / "dgx-b200" / "gemm.csv").points
    points = transferred_gb300(b200_rows)
    top = DENSE_BF16_PEAK["GB300"] / DENSE_BF16_PEAK["B200"]
    held = sum(
        1
        for p, q in zip(b200_rows, points, strict=True)
        if math.isclose(q.tflops, round(p.tflops * top, 3))
    )
    src = "../dgx-b200/gemm.csv (SimuMax B200 sweep, see its header)"
    how = (
        "tflops = the B200 row x nvMatmulHeuristics (GB300_NVL / B200) at the row's shape, the "
        f"ratio held to 1..{top:.4f} (2500 / 2250 dense BF16); the rule of gb200-nvl72/gemm.csv "
        f"with GB300_NVL for GB200_NVL (the upper hold binds on {held} of {len(points)} rows)"
    )
    path = out / "gb300-nvl72" / "gemm.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_gemm_table(
        GemmTable(points, dtype="bf16", device="NVIDIA GB300, carried over from SimuMax's B200"),
        path,
        [
            "TRANSFERRED GEMM throughput, NVIDIA GB300, carried over from SimuMax's B200, bf16, by "
            f"shape: {len(points)} bf16 GEMM shapes of Llama/DeepSeek layers measured on a B200, "
            "carried over to the GB300 shape by shape.",
            f"source: {src}.",
            f"derivation: {how}.",
            f"derived by: python {SCRIPT}",
            f"derived: {date}",
        ],
    )
    rows["gb300-nvl72"].append(
        (
            "gemm.csv",
            f"TRANSFERRED: {len(points)} bf16 GEMM shapes measured on a B200, "
            "carried over to the GB300",
            src,
            how,
        )
    )

    cap_note = (
        "the cap is BORROWED: GB200's MAMF (ref §4.1 [S5]); no GB300 MAMF is published, "
        "and the two have the same dense BF16 / FP8 peaks (2500 / 5000) and 152 SMs."
    )
    r = _anchored(
        "gb300-nvl72",
        "gemm_model.csv",
        "GB300_NVL",
        "bf16",
        "dgx-b200/gemm.csv",
        "B200",
        pub.MAMF_BF16["GB200"][3],
        "BORROWED: dgx-b200/gemm.csv (SimuMax B200) against the B200 model "
        "(no GB300 bf16 table by shape is published)",
        date,
        out,
        (f"GB300: {cap_note}",),
        "BORROWED: the GB200's MAMF (ref §4.1 [S5]); no GB300 MAMF is published.",
    )
    rows["gb300-nvl72"].append(
        (
            "gemm_model.csv",
            f"MODELED bf16 GEMM TFLOP/s, {r['rows']} shapes (as gb200-nvl72's)",
            "nvMatmulHeuristics `GB300_NVL`, precision `TST`",
            "gb200-nvl72/gemm_model.csv's derivation with GB300_NVL for GB200_NVL "
            "(anchored by work to dgx-b200/gemm.csv against the B200 model), "
            f"capped at {pub.MAMF_BF16['GB200'][3]:g}: BORROWED, the GB200 MAMF",
        )
    )
    r = _anchored(
        "gb300-nvl72",
        "gemm_model_fp8.csv",
        "GB300_NVL",
        "fp8",
        "gb200-nvl72/gemm_fp8.csv",
        "GB200_NVL",
        pub.MAMF_FP8["GB200"],
        "BORROWED: gb200-nvl72/gemm_fp8.csv (Azure GB200 cuBLASLt "
        "FP8) against the GB200_NVL model (no GB300 FP8 sweep by shape is published)",
        date,
        out,
        (f"GB300: {cap_note}",),
        "BORROWED: the GB200's FP8 MAMF (ref §4.1 [S5]); no GB300 MAMF is published.",
    )
    rows["gb300-nvl72"].append(
        (
            "gemm_model_fp8.csv",
            f"MODELED fp8 GEMM TFLOP/s, {r['rows']} shapes, TN (as gb200-nvl72's)",
            "nvMatmulHeuristics `GB300_NVL`, precision `QQTST`",
            "gb200-nvl72/gemm_model_fp8.csv's derivation with GB300_NVL for GB200_NVL "
            "(anchored by work to gb200-nvl72/gemm_fp8.csv against the GB200_NVL "
            f"model), capped at {pub.MAMF_FP8['GB200']:g}: BORROWED, the GB200 FP8 MAMF",
        )
    )
    return rows


# ================================================================ collective tables

MEASURED_NIC_GBPS = 400
"""The NIC line rate of the tables reused: Together's DGX B200 nodes (8x ConnectX-7 400G, ref §3.5
[S15]) and gb200-nvl72's synthesis of them for 72 NICs of 400G."""
CONNECTX8_GBPS = 800
"""ConnectX-8 XDR, one a GPU on DGX B300 and GB300 NVL72 (the hardware files' sources)."""


OCI_B300 = (
    "oracle-quickstart/oci-gpu-quickstarts nvidia/B300/README-B300.md@6a0abdc7, BM.GPU.B300.8 "
    "(8x B300, 16x 400 Gb/s RDMA a node), NCCL 2.28.9, nccl-tests all_reduce_perf, float"
)
OCI_GB300 = (
    "oracle-quickstart/oci-gpu-quickstarts nvidia/GB300/README-GB300.md@6a0abdc7, BM.GPU.GB300.4 "
    "(4 GPUs a host, 8x 400 Gb/s RoCE), NCCL 2.28.7, all_reduce_perf -g 1, NVLS and MNNVL on"
)


def nic_scaled(src: Path, new_gbps: float) -> CollectiveTable:
    """A measured multi-node table moved to another NIC rate by simsp.cost.network's own rule
    (link_scaled_s): the bandwidth-bound part S / A (A the table's best algbw) times
    measured / new, the rest (latency, protocol) kept. The same numbers a hardware file would get
    at run time from measured_nic_gbps 400 and nic_gbps 800; written out so that the file prices
    its tables as stated (measured_nic_gbps = nic_gbps)."""
    table = read_nccl_log(src)
    best, slowdown = best_algbw_bps(table), MEASURED_NIC_GBPS / new_gbps
    times = tuple(
        link_scaled_s(t, s, best, slowdown)
        for s, t in zip(table.sizes_bytes, table.times_s, strict=True)
    )
    return CollectiveTable(table.op, table.ranks, table.sizes_bytes, times)


def ib_tables(out: Path) -> dict[str, list]:
    """infiniband/*.log of both machines; README rows by machine."""
    rows: dict[str, list] = {"dgx-b300": [], "gb300-nvl72": []}
    for machine, base, device in (
        ("dgx-b300", "dgx-b200", "NVIDIA B300"),
        ("gb300-nvl72", "gb200-nvl72", "NVIDIA GB300"),
    ):
        for src in sorted((CAL / base / "infiniband").glob("*.log")):
            head = src.read_text()[:4000]
            source = next(
                line.split(": ", 1)[1]
                for line in head.splitlines()
                if line.startswith("# source: ")
            )
            table = nic_scaled(src, CONNECTX8_GBPS)
            rel = f"infiniband/{src.name}"
            method = (
                f"../{base}/{rel} (measured or synthesized at {MEASURED_NIC_GBPS} Gb/s a "
                f"NIC) moved to {CONNECTX8_GBPS} Gb/s by simsp.cost.network.link_scaled_s: "
                f"t' = t + S / A x ({MEASURED_NIC_GBPS}/{CONNECTX8_GBPS} - 1), A = the "
                f"table's best algbw ({best_algbw_bps(read_nccl_log(src)) / 1e9:.1f} "
                "GB/s): the bandwidth term halves, small messages keep their time. NOT a "
                "measurement: no ConnectX-8 multi-node sweep was found"
            )
            path = out / machine / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            write_nccl_log(
                table,
                path,
                device=device,
                header_extra={
                    "hostname": "derived",
                    "simsp": f"DERIVED from published figures by {SCRIPT}, not a raw log",
                    "source": f"../{base}/{rel}: {source}",
                    "method": method,
                },
            )
            rows[machine].append(
                (
                    rel,
                    f"all_reduce over {table.ranks} GPUs, {len(table.sizes_bytes)} sizes",
                    f"`../{base}/{rel}` ({source})",
                    method,
                )
            )
    return rows


# ================================================================ FlashAttention tables


def cudnn_ratio(direction: str, seq_len: int) -> float:
    """GB300 / GB200 cuDNN rate at a measured length, held at >= 1 (the new part no slower, as
    the GB200 GEMM transfer holds its ratio; it binds on the 1k-2k backward, 0.97-0.99)."""
    i = CUDNN_SEQ.index(seq_len)
    return max(CUDNN_TFLOPS["GB300"][direction][i] / CUDNN_TFLOPS["GB200"][direction][i], 1.0)


def attention_table(gpu: str, out: Path, date: str) -> tuple[Path, int, int]:
    """dgx-b200/flash_attention.csv with its cuDNN rows scaled by cudnn_ratio; other rows as
    they are."""
    base = read_attention_table(CAL / "dgx-b200" / "flash_attention.csv")
    points, scaled, capped = [], 0, 0
    for p in base.points:
        if p.kernel in SCALED_KERNELS and p.direction in ("fwd", "bwd"):
            r = cudnn_ratio(p.direction, p.seq_len)
            hold = ATTENTION_HOLD * DENSE_BF16[gpu]
            tflops = round(min(p.tflops * r, hold), 1)
            held = (
                f", held at {ATTENTION_HOLD:.3f} x {DENSE_BF16[gpu]:g}"
                if p.tflops * r > hold
                else ""
            )
            points.append(
                AttentionPoint(
                    gpu,
                    p.kernel,
                    p.head_dim,
                    p.seq_len,
                    p.causal,
                    p.direction,
                    tflops,
                    f"{p.source} x {r:.3f} (cuDNN 9.17 GB300/GB200 {p.direction} at {p.seq_len}, "
                    f"{CUDNN_FE}@{CUDNN_FE_COMMIT[:8]}){held}",
                    p.batch_heads,
                )
            )
            scaled += 1
            capped += bool(held)
        else:
            points.append(p)
    machine = "dgx-b300" if gpu == "B300" else "gb300-nvl72"
    path = out / machine / "flash_attention.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_attention_table(
        path,
        points,
        (
            f"DERIVED FlashAttention throughput for NVIDIA {gpu} (Blackwell "
            "Ultra), BF16: dgx-b200/flash_attention.csv (the table dgx-b200.yaml "
            "and gb200-nvl72.yaml use; provenance in its header and README),",
            f"  its {', '.join(SCALED_KERNELS)} rows times the GB300 / "
            "GB200 ratio of NVIDIA's cuDNN SDPA benchmark at the",
            "  same sequence length and direction (held >= 1), each "
            f"at most {ATTENTION_HOLD:.3f} x the dense BF16 peak",
            f"  ({DENSE_BF16[gpu]:g}; binds on {capped} rows), the "
            "other rows (fa4, fa2, te-2.11: gpu column B200) unchanged.",
            "ratio source: "
            f"{CUDNN_FE}:{CUDNN_FE_PATH.format(gpu='{GB200,GB300}')}@{CUDNN_FE_COMMIT},",
            f"  {CUDNN_FE_SETTING}.",
            "  Blackwell Ultra doubles the SFU's exponential rate "
            "(NVIDIA technical blog 'Inside NVIDIA Blackwell Ultra',",
            "  10.7 vs 5 TeraExponentials/s), which softmax in the "
            "attention forward is bound by; same dense BF16 peak.",
            "FLOPs as flash-attention's benchmarks count them (see dgx-b200/flash_attention.csv).",
            f"derived by: python {SCRIPT}",
            f"derived: {date}",
        ),
    )
    return path, scaled, len(points), capped


def b200_model_top() -> float:
    """The highest rate in dgx-b200/gemm_model.csv (below the B300 cap, it is reused unchanged)."""
    top = max(p.tflops for p in read_gemm_table(CAL / "dgx-b200" / "gemm_model.csv").points)
    assert top < MAMF_B300_BF16[3], "the B300 cap would bind: derive dgx-b300/gemm_model.csv"
    return top


def ratio_text() -> str:
    cells = [
        f"{s // 1024}k {cudnn_ratio('fwd', s):.3f} / {cudnn_ratio('bwd', s):.3f}"
        for s in CUDNN_SEQ[1:7]
    ]
    return ", ".join(cells)


# ================================================================ READMEs


def readme(
    machine: str,
    intro: str,
    gemm_rows: list,
    reused: list,
    notes: list,
    fa: tuple,
    date: str,
    out: Path,
) -> Path:
    path, scaled, total, capped = fa
    lines = [
        f"# Calibration for `hardware/{machine}.yaml`",
        "",
        f"Derived on {date} by `{SCRIPT}`; re-run it to reproduce every file here.",
        f'Sources are cited as in `{REF}` ("ref §x", [S*] tags).',
        "",
        intro,
        "",
        "## Files in this folder",
        "",
        "| file | what | source | derivation |",
        "|---|---|---|---|",
    ]
    lines += [f"| `{f}` | {what} | {src} | {how} |" for f, what, src, how in gemm_rows]
    lines.append(
        f"| `flash_attention.csv` | {total} rows: the B200 table, its {scaled} cuDNN rows "
        "scaled | `../dgx-b200/flash_attention.csv` (FA4 paper B200 figures, SimuMax TE 2.11); "
        f"ratio: {CUDNN_FE}:{CUDNN_FE_PATH.format(gpu='GB200|GB300')}@{CUDNN_FE_COMMIT[:8]}, "
        f"{CUDNN_FE_SETTING} | `cudnn` and `cudnn-9.13` rows x GB300/GB200 cuDNN 9.17 rate at "
        f"the same length and direction, held >= 1 (fwd / bwd: {ratio_text()}); the causal "
        "ratio is applied to non-causal rows too (only causal was measured); each scaled row "
        f"held at or below {ATTENTION_HOLD:.3f} x the dense BF16 peak, the highest share a "
        f"measured GB300 row reached (causal fwd 32k, 2007 of 2500; binds on {capped} rows); "
        "`fa4`, `fa2`, `te-2.11` rows unchanged |"
    )
    lines += [
        "",
        "## Reused by path from the B200 / GB200 folders",
        "",
        "| hardware-file key | file(s) | why it stands for this machine |",
        "|---|---|---|",
    ]
    lines += [f"| `{key}` | `{files}` | {why} |" for key, files, why in reused]
    lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    path = out / machine / "README.md"
    path.write_text("\n".join(lines).rstrip() + "\n")
    return path


def derive(out: Path, date: str) -> list[Path]:
    """Write every file; return them."""
    rows = gemm_tables(out, date)
    for machine, more in ib_tables(out).items():
        rows[machine] += more
    written = [out / m / f for m, rs in rows.items() for f, *_ in rs]
    fa_b300 = attention_table("B300", out, date)
    fa_gb300 = attention_table("GB300", out, date)
    written += [fa_b300[0], fa_gb300[0]]
    ratio = (
        "Blackwell Ultra's attention gain is taken from the only like-for-like measurement "
        "found, GB300 against GB200 (both 152 SMs; 1400 vs 1200 W), and applied to the "
        "B300 over the B200 (both 148 SMs; 1100 vs 1000 W) as well: ASSUMED to carry over, "
        "the B300's smaller power step (+10 % vs +17 %) may give it a little less."
    )
    written.append(
        readme(
            "dgx-b300",
            "DGX B300: 8x B300 (Blackwell Ultra, HGX/DGX SXM, 148 SMs), NVLink5 + NVSwitch, 8x "
            "ConnectX-8 800 Gb/s. No B300 GEMM sweep by shape, attention figure or nccl-tests "
            "sweep was found; the hardware file reuses the B200 ones (same dense BF16 / FP8 "
            "peaks, SM count, HBM bandwidth and NVLink) and this folder holds what differs: "
            "the FP8 GEMM model capped at the B300's own MAMF, the attention table with "
            "Blackwell Ultra's cuDNN gain and the multi-node tables moved to 800 Gb/s NICs.",
            rows["dgx-b300"],
            [
                (
                    "calibration.gemm",
                    "../dgx-b200/gemm.csv",
                    "SimuMax's 432 measured B200 shapes, unscaled: same dense "
                    "BF16 peak (2250) and 148 SMs; the MAMF maxima differ "
                    "1.4 % (1769 vs 1745, different torch/CUDA), ref §4.1 [S5]",
                ),
                (
                    "calibration.gemm_model",
                    "../dgx-b200/gemm_model.csv",
                    "nvMatmulHeuristics `B200` (no B300 target) anchored to the SimuMax "
                    f"rows; its highest row is {b200_model_top():g} TFLOP/s, so the B300's "
                    f"MAMF cap ({MAMF_B300_BF16[3]:g} instead of 1745) would change no row",
                ),
                (
                    "calibration.nvlink",
                    "../dgx-b200/nvlink/*",
                    "8x B200 AWS p6-b200 all_reduce sweep: the same NVLink5 (18 links, 900 GB/s "
                    "a direction) and NVSwitch. Cross-checks on B300: 8 GPUs 834.84 GB/s busbw "
                    f"at 8 GiB against this table's 839.07 ({OCI_B300}); 4 GPUs, ring, 654 GB/s "
                    "at 1 GiB (ricardojacomini/b300-benchmarks report/b300_benchmark_report.md, "
                    "NCCL 2.29.7) beside the B200's ring 673 GB/s at 8 GiB (ref §3.4)",
                ),
                (
                    "memory_bound.*_cross_entropy_gbps",
                    "(dgx-b200.yaml's values)",
                    "SimuMax B200 rates; same 8 TB/s HBM3e",
                ),
            ],
            [
                "Every number in the hardware file has its source in its comment; those of the GPU "
                "are NVIDIA's (DGX B300 datasheet via ml-engineering's tables, the Blackwell Ultra "
                "technical blog, the CUDA GPUs list) and MLPerf Training v5.1 system descriptions.",
                ratio,
                "The infiniband tables double the B200's bandwidth term; the one multi-node "
                "B300 figure found, 2 nodes (16 GPUs) all_reduce 766.84 GB/s busbw at 16 GiB "
                f"({OCI_B300}; NCCL's default algorithm, likely NVLSTree, as Together's B200 "
                "2-node NVLSTree 717.2 against ring 344.7, ref §3.5), sits 11 % above "
                "all_reduce_16.log's 689.40 (ring shape): the derived tables are the ring's.",
                "FP8 attention (cudnn_fe_fp8 rows of the "
                "same benchmark) is not tabled, as for B200.",
                "Licences: the tables hold published figures "
                "and model outputs, not copies of files.",
            ],
            fa_b300,
            date,
            out,
        )
    )
    written.append(
        readme(
            "gb300-nvl72",
            "GB300 NVL72: one rack of 72 Blackwell Ultra GPUs (152 SMs each) on one NVLink domain, "
            "4 a compute tray with one ConnectX-8 800 Gb/s each, modelled as one node of 72 as "
            "gb200-nvl72.yaml models the GB200 rack. No GB300 GEMM sweep by shape or nccl-tests "
            "sweep was found; the hardware file reuses the GB200 NVLink and FP8 tables and this "
            "folder holds the GEMM tables rebuilt with NVIDIA's GB300 model, the attention table "
            "with Blackwell Ultra's cuDNN gain and the multi-rack tables moved to 800 Gb/s NICs.",
            rows["gb300-nvl72"],
            [
                (
                    "calibration.gemm_fp8",
                    "../gb200-nvl72/gemm_fp8.csv",
                    "Azure GB200 cuBLASLt FP8 sweep (ref §4.3 [S21]): same dense FP8 peak "
                    "(5000) and 152 SMs; nvMatmulHeuristics' GB300_NVL and GB200_NVL FP8 "
                    "models agree within 0.4 % on all 1067 shapes of gemm_model_fp8.csv",
                ),
                (
                    "calibration.nvlink",
                    "../gb200-nvl72/nvlink/*",
                    "Azure GB200 4-GPU sweep and the GTC25 32-GPU peak (ref §3.1, §3.2): "
                    "the same NVLink5 switch trays, 1.8 TB/s a GPU (MLPerf Training v5.1 "
                    "NVIDIA Theia: 'NVLINK Gen5 1800 GB/s + NVSWITCH Gen5'). Cross-checks "
                    f"on GB300 ({OCI_GB300}): 4 GPUs 681.03 GB/s busbw at 8 GiB against "
                    "this table's 679.61; 8 and 64 GPUs over the rack's NVLink 838.38 and "
                    "897.52 at 8 GiB with NVLS, where the tables (ring, 680 at 32 GPUs) "
                    "price larger groups lower, as for gb200-nvl72",
                ),
                (
                    "memory_bound.*_cross_entropy_gbps",
                    "(dgx-b200.yaml's values)",
                    "SimuMax B200 rates; same 8 TB/s HBM3e",
                ),
            ],
            [
                "The GB200 rack's NIC count, assumed in gb200-nvl72.yaml (one 400G NIC "
                "a GPU), is confirmed by NVIDIA's MLPerf Training v5.1 system "
                "description of Tyche (1x GB200 NVL72: 18 nodes, 4 GPUs and '4x "
                "ConnectX-7 IB NDR 400 Gb/s' a node); Theia (1x GB300 NVL72) lists '4x "
                "ConnectX-8 IB XDR 800 Gb/s' a node (mlcommons/training_results_v5.1 "
                "NVIDIA/systems/{tyche,theia}_ngpu72_ngc25.09_nemo.json@4da2d1cd).",
                ratio,
                "No GB300 MAMF is published; facebookexperimental/triton PR #2023 reports "
                "'cuBLAS GEMM ~1600-2174 tflops at 1400 W' on a GB300 (dtype and shapes "
                "not stated), not used; if bf16, the borrowed 1822 cap is conservative.",
                "Licences: the tables hold published figures "
                "and model outputs, not copies of files.",
            ],
            fa_gb300,
            date,
            out,
        )
    )
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", default=str(CAL), help="calibration folder (default: hardware/calibration)"
    )
    parser.add_argument(
        "--date", default=datetime.date.today().isoformat(), help="date recorded in the files"
    )
    args = parser.parse_args(argv)
    for path in derive(Path(args.out), args.date):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
