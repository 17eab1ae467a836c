"""Derive the calibration files of the hardware library (every hardware/*.yaml but the DGX A100 80GB).

Usage (from the repository root):

    python hardware/calibration/derive_library.py [DATA_DIR] [--out CAL_DIR] [--date YYYY-MM-DD]

DATA_DIR defaults to hardware/calibration/sources (only the Echo logs are read from it, for
vtrain-a100);
CAL_DIR to hardware/calibration. Every other number is typed in below from
../shared/reference/hardware-and-calibration.md ("ref §x", with its [S*] source tags), and every
table is written in the nccl-tests layout by `simsp.tables.write_nccl_log` (the out-of-place
figures repeated as in-place), with its source and derivation in '# key: value' header lines.
Writes, under CAL_DIR:

* dgx-h100/     nvlink (Azure NVLS all_reduce, Together ring AR/AG/RS), infiniband (Meta ring
                all_reduce, read from a figure); its GEMM tables are derive_gemm_tables.py's;
* hgx-h200/     nvlink (Azure NVLS all_reduce; ring curves scaled to the H200 ring peaks);
* dgx-b200/     nvlink (stas00 all_reduce sweep), infiniband (that sweep's shape scaled to the
                Together multi-node ring peaks);
* gb200-nvl72/  nvlink (Azure 4-GPU sweep; the same scaled to the 32-GPU NVLink peak),
                infiniband (the B200 per-NIC curves re-expressed for 72 NICs a node);
* vtrain-a100/  infiniband (Echo multi-node logs with their bandwidth term scaled by 800/1600);
* dgx-a100-40gb/ README only (the hardware file reuses calibration/dgx-a100-80gb);
* a README.md per machine folder with the provenance of every file.

Sizes written "1K", "16M", "1G" in the sources are powers of two (1024, 16 MiB, 1 GiB).
"""

import argparse
import datetime
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from simsp.tables import (  # noqa: E402
    BUSBW_FACTORS,
    CollectiveTable,
    read_nccl_log,
    write_nccl_log,
)

SCRIPT = "hardware/calibration/derive_library.py"
REF = "../shared/reference/hardware-and-calibration.md"
KIB, MIB, GIB = 1024, 1024**2, 1024**3
AR, AG, RS = "all_reduce", "all_gather", "reduce_scatter"
KEEP_SECTION = "\n## "
"""Start of the README sections other scripts append (derive_gemm_model.py's "## Modeled GEMM table",
derive_flash_attention.py's "## FlashAttention throughput"); the README this script writes has no
"## " heading, so everything from the first one on is kept when README.md is rewritten."""


def pow2_sizes(lo: int, hi: int) -> tuple[int, ...]:
    """lo, 2 lo, 4 lo, ... hi."""
    sizes = [lo]
    while sizes[-1] < hi:
        sizes.append(sizes[-1] * 2)
    return tuple(sizes)


# ================================================================ published figures (typed in)

AZURE_SIZES = pow2_sizes(KIB, 8 * GIB)
"""Ref §3.2 [S21]: Azure/AI-benchmarking-guide, `all_reduce_perf -b 8 -e 8G -f 2 -g <n> -n 40`,
float, in-place busbw (GB/s), sizes 1K..8G."""
AZURE_SRC = ("Azure/AI-benchmarking-guide {page} (ref §3.2 [S21]): all_reduce_perf -b 8 -e 8G -f 2 "
             "-g {gpus} -n 40, float, in-place busbw, one process")
AZURE_H100_AR8 = (0.07, 0.14, 0.27, 0.53, 0.95, 1.71, 2.72, 5.40, 10.86, 21.35, 43.70, 81.93, 128.73,
                  172.13, 234.45, 295.53, 361.78, 400.61, 423.38, 438.46, 466.35, 472.36, 475.54, 478.87)
"""ND H100 v5, 8x H100 80GB, NCCL 2.18.5, NVLS (`Azure Results/ND_H100_v5_results.md@f350e7e6`)."""
AZURE_H200_AR8 = (0.06, 0.12, 0.23, 0.47, 0.93, 1.84, 3.72, 7.39, 14.75, 29.38, 52.96, 88.78, 138.44,
                  181.94, 240.41, 300.91, 368.11, 412.45, 432.24, 442.72, 467.58, 472.57, 477.41, 479.98)
"""ND H200 v5, 8x H200, NCCL 2.20.5, NVLS (`Azure_Results/ND_H200_v5_results.md@7f20e5fa`)."""
AZURE_GB200_AR4 = (0.10, 0.19, 0.38, 0.76, 1.46, 2.88, 5.71, 11.29, 22.41, 44.07, 80.48, 110.43, 146.27,
                   253.46, 331.09, 422.62, 550.73, 574.19, 593.53, 618.74, 646.87, 666.63, 673.06, 679.61)
"""ND GB200 v6, 4 GPUs of one tray, NCCL 2.25.1, Ring (`Azure_Results/ND_GB200_v6_results.md@2a370be6`)."""

TOGETHER_SRC = ("togethercomputer/together-nccl-tests:benchmarks/H100/results/20260305_220043/"
                "{op}_ring.out@6698e53c (ref §3.3 [S19]): 8x H100 80GB HBM3, NCCL 2.26.2, -g 8, float, "
                "out-of-place time")
TOGETHER_SIZES = (KIB, 16 * KIB, 128 * KIB) + pow2_sizes(MIB, 8 * GIB)
"""Ref §3.3 rows from 1,024 B; the smallest row ('8 / 128') is 8 B for AR, 128 B for AG/RS."""
TOGETHER_H100_US = {
    # op: (smallest size (B), its time (us)), then times (us) at TOGETHER_SIZES
    AR: ((8, 34.98), (39.20, 35.69, 37.29, 46.52, 42.06, 53.09, 80.49, 126.62, 213.96, 368.67, 702.55,
                      1351.28, 2641.67, 5218.59, 10329.0, 20495.8, 40838.9)),
    AG: ((128, 35.05), (34.78, 40.81, 36.80, 41.67, 41.48, 41.34, 47.01, 70.80, 125.45, 210.89, 393.52,
                        732.87, 1399.34, 2726.97, 5363.19, 10579.3, 21001.0)),
    RS: ((128, 41.94), (35.32, 36.14, 36.79, 40.60, 41.66, 41.70, 50.44, 71.97, 118.78, 206.45, 381.43,
                        718.20, 1393.15, 2711.56, 5353.24, 10450.3, 20695.6)),
}
"""Ref §3.3 table (the busbw columns there follow from these times)."""

H100_AR4_PEAK = 367.9
"""8x H100 node, 4-GPU all_reduce peak busbw (typical, 16 GiB), xxrjun/nccl-tests-cluster (ref §3.3 [S24])."""
H200_RING_PEAKS = {("ar4", 8 * GIB): 363.3, (AG, 16 * GIB): 361.4, (RS, 16 * GIB): 362.9}
"""8x H200, NCCL 2.27.7, stas00/ml-engineering network/README.md (ref §3.3 [S22]): ring-only all_reduce
with 4 GPUs at 8 GiB 363.3; all_gather 361.4 and reduce_scatter 362.9 GB/s at 16 GiB."""

META_H100_RING = {
    4: {16 * MIB: 115, 64 * MIB: 215, 256 * MIB: 280, GIB: 338, 16 * GIB: 358},
    512: {16 * MIB: 40, 64 * MIB: 110, 256 * MIB: 220, GIB: 285, 16 * GIB: 345},
}
"""Meta H100 cluster, ring all_reduce busbw (GB/s) by node count (8 GPUs a node), read from the figure
of arXiv 2411.13055 reproduced in stas00/ml-engineering (ref §3.5 [S22]); about +-5 %."""
META_SRC = ("arXiv 2411.13055 (Meta H100 cluster, 8 GPUs a node) ring all_reduce busbw, read from its "
            "figure as reproduced in stas00/ml-engineering network/images/nccl-all-reduce-scan.png "
            "(ref §3.5 [S22]), about +-5 %")

B200_AR8_SIZES = pow2_sizes(32 * KIB, 16 * GIB)
B200_AR8 = (1.20, 2.17, 4.86, 9.54, 18.71, 36.06, 63.09, 76.48, 126.49, 254.96, 325.97, 400.60, 568.38,
            646.11, 688.99, 723.34, 734.97, 740.64, 839.07, 845.67)
"""8x B200 (AWS p6-b200), NCCL 2.27.7, all_reduce_bench busbw, NVLS allowed, 32 KiB..16 GiB
(stas00/ml-engineering network/README.md@744d01e1, ref §3.4 [S22])."""
B200_AR8_SRC = ("stas00/ml-engineering network/README.md@744d01e1 (ref §3.4 [S22]): 8x B200 AWS p6-b200, "
                "NCCL 2.27.7, all_reduce_bench busbw, NVLS allowed")
B200_RING_CAP_SIZE = 4 * GIB
"""The B200 in-node sweep jumps from 740.64 (4 GiB) to 839.07 (8 GiB) where NVLS takes over (ref §3.4:
NVLS 838.0 vs ring 682.2 at 8 GiB); its shape is used up to 4 GiB only."""
B200_RING_PEAK = {2: 344.7, 4: 334.8, 8: 322.6, 16: 306.3}
"""Together DGXC B200 cluster, 8x ConnectX-7 NDR 400G a node, NCCL 2.29.7, all_reduce Ring busbw at
16 GiB by node count (`baselines/use3a-ss/2026-05-02_nccl_collective_scaling_report.md@0492bede`,
ref §3.5 [S15])."""

GB200_NVLINK32_PEAK = 680.0
"""GB200 NVL72, 32 GPUs over NVLink, all_reduce busbw without SHARP, NVIDIA GTC25 S72583 slide
(ref §3.1 [S20], read from figure)."""
GB200_NICS = 72
"""Assumed one 400 Gb/s NIC per GPU (72 a rack); the reference does not verify GB200 NVL72
scale-out (ref §1.2, §8)."""
B200_NICS = 8

ECHO_SRC = "NetX-lab/Echo:nccl-test-log/@15f0d12c417459d7a1b3b66abeaa28eca0b841a2 (MIT)"
ECHO_NODE_GBPS = 8 * 200
"""Echo's Azure ND A100 v4 nodes: 8x 200 Gb/s HDR InfiniBand (data/echo-nccl-a100/README.md)."""
VTRAIN_NODE_GBPS = 800
"""vTrain's cluster: inter_node_bandwidth 800 (Gb/s a node) in data/vtrain/example_config_val_*.json."""

DEVICES = {
    "dgx-h100": "NVIDIA H100 80GB HBM3",
    "hgx-h200": "NVIDIA H200",
    "dgx-b200": "NVIDIA B200",
    "gb200-nvl72": "NVIDIA GB200",
    "vtrain-a100": "NVIDIA A100-SXM4 (vTrain cluster)",
}


# ================================================================ tables from figures


def from_busbw(op: str, ranks: int, sizes, busbw_gbps, source: str = "") -> CollectiveTable:
    """A table whose nccl-tests busbw at each size is the given figure: t = size x factor / busbw."""
    factor = BUSBW_FACTORS[op](ranks)
    times = tuple(s * factor / (b * 1e9) for s, b in zip(sizes, busbw_gbps))
    return CollectiveTable(op, ranks, tuple(sizes), times, source)


def busbw_of(table: CollectiveTable) -> dict[int, float]:
    """size -> busbw (GB/s) of every point."""
    return dict(zip(table.sizes_bytes, table.busbw_gbps()))


def together_h100(op: str) -> CollectiveTable:
    """Ref §3.3 ring sweep of one collective, 8x H100, from its typed-in times."""
    (small, small_us), times_us = TOGETHER_H100_US[op]
    sizes = (small,) + TOGETHER_SIZES
    return CollectiveTable(op, 8, sizes, tuple(t * 1e-6 for t in (small_us,) + times_us))


def rescaled(shape: CollectiveTable, op: str, ranks: int, scale: float) -> CollectiveTable:
    """`shape`'s busbw curve times `scale`, as a table of `ranks` ranks."""
    bw = busbw_of(shape)
    return from_busbw(op, ranks, list(bw), [b * scale for b in bw.values()])


def h100_ib(nodes: int) -> CollectiveTable:
    """Meta's ring curve from 16 MiB up; below it the Together in-node ring AR shape, scaled to meet it."""
    meta = META_H100_RING[nodes]
    inode = busbw_of(together_h100(AR))
    anchor = min(meta)
    scale = meta[anchor] / inode[anchor]
    points = {s: b * scale for s, b in inode.items() if s < anchor}
    points.update(meta)
    return from_busbw(AR, nodes * 8, sorted(points), [points[s] for s in sorted(points)])


def b200_ib(nodes: int) -> CollectiveTable:
    """The B200 in-node AR shape (capped at its 4 GiB value) normalised and scaled to the k-node ring peak."""
    cap = dict(zip(B200_AR8_SIZES, B200_AR8))[B200_RING_CAP_SIZE]
    busbw = [B200_RING_PEAK[nodes] * min(b, cap) / cap for b in B200_AR8]
    return from_busbw(AR, nodes * B200_NICS, B200_AR8_SIZES, busbw)


def gb200_ib(nodes: int) -> CollectiveTable:
    """B200 k-node table for 72 NICs a node: sizes and busbw x 72/8, so per-NIC size and busbw are the B200's."""
    ratio = GB200_NICS // B200_NICS
    bw = busbw_of(b200_ib(nodes))
    return from_busbw(AR, nodes * GB200_NICS, [s * ratio for s in bw], [b * ratio for b in bw.values()])


def vtrain_ib(echo: CollectiveTable) -> CollectiveTable:
    """Echo's log with its bandwidth term scaled by the NIC ratio: t' = t + S f (1/(rP) - 1/P).

    P is Echo's busbw at its largest size (the plateau), r = 800/1600. Latency-bound small
    messages keep Echo's time; the largest size's busbw becomes r x P.
    """
    r = VTRAIN_NODE_GBPS / ECHO_NODE_GBPS
    plateau = echo.busbw_gbps()[-1] * 1e9
    factor = BUSBW_FACTORS[AR](echo.ranks)
    extra = factor * (1 / (r * plateau) - 1 / plateau)
    times = tuple(t + s * extra for s, t in zip(echo.sizes_bytes, echo.times_s))
    return CollectiveTable(AR, echo.ranks, echo.sizes_bytes, times)


# ================================================================ writing


@dataclass
class Machine:
    """One calibration folder being written: its files and their README rows."""

    name: str
    intro: str
    out: Path
    rows: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    written: list = field(default_factory=list)

    def log(self, rel: str, table: CollectiveTable, what: str, source: str, method: str) -> None:
        """Write one nccl-tests log and record its README row."""
        path = self.out / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        extra = {"hostname": "derived", "simsp": f"DERIVED from published figures by {SCRIPT}, not a raw log",
                 "source": source, "method": method}
        write_nccl_log(table, path, device=DEVICES.get(self.name, ""), header_extra=extra)
        self.rows.append((rel, what, source, method))
        self.written.append(path)

    def readme(self, date: str) -> None:
        """README.md: intro, one row per file, notes; keeps a trailing section other scripts own."""
        path = self.out / "README.md"
        kept = ""
        if path.exists() and KEEP_SECTION in path.read_text():
            kept = path.read_text()[path.read_text().index(KEEP_SECTION):]
        lines = [f"# Calibration for `hardware/{self.name}.yaml`", "",
                 f"Derived on {date} by `{SCRIPT}`; re-run it to reproduce every file here.",
                 f"Sources are cited as in `{REF}` (\"ref §x\", [S*] tags).", "", self.intro, ""]
        if self.rows:
            lines += ["| file | what | source | derivation |", "|---|---|---|---|"]
            lines += [f"| `{rel}` | {what} | {src} | {how} |" for rel, what, src, how in self.rows]
            lines.append("")
        lines += [f"- {note}" for note in self.notes]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines).rstrip() + "\n" + kept)
        self.written.append(path)


# ================================================================ machines


def dgx_h100(out: Path) -> Machine:
    m = Machine("dgx-h100", "Measured collective sweeps for DGX H100 (8x H100 SXM5 80GB, NVLink4 + "
                "4 NVSwitch, 8x 400G NDR). Every table's busbw equals the cited figure at the cited sizes; "
                "where a curve is extended or scaled, the row says by what.", out / "dgx-h100")
    m.log("nvlink/all_reduce_8.log", from_busbw(AR, 8, AZURE_SIZES, AZURE_H100_AR8),
          "all_reduce, 8 GPUs in one node, 1 KiB..8 GiB",
          AZURE_SRC.format(page="Azure Results/ND_H100_v5_results.md@f350e7e6", gpus=8) + ", NCCL 2.18.5, NVLS",
          "none: time = size x 2(n-1)/n / busbw")
    ring_ar = together_h100(AR)
    m.log("nvlink/all_reduce_4.log", rescaled(ring_ar, AR, 4, H100_AR4_PEAK / ring_ar.busbw_gbps()[-1]),
          "all_reduce, 4 GPUs (ring; NVLS engages only above 4 GPUs, ref §3.3)",
          TOGETHER_SRC.format(op="all_reduce") + "; 4-GPU peak 367.9 GB/s from xxrjun/nccl-tests-cluster "
          "(ref §3.3 [S24])",
          f"the 8-GPU ring busbw curve x {H100_AR4_PEAK} / {ring_ar.busbw_gbps()[-1]:.2f} (4-GPU peak / "
          "8-GPU value at 8 GiB), times for n = 4")
    for op in (AG, RS):
        m.log(f"nvlink/{op}_8.log", together_h100(op), f"{op}, 8 GPUs (ring), {TOGETHER_H100_US[op][0][0]} B..8 GiB",
              TOGETHER_SRC.format(op=op), "none: the typed-in out-of-place times")
    for nodes in (4, 512):
        anchor = min(META_H100_RING[nodes])
        m.log(f"infiniband/all_reduce_{nodes * 8}.log", h100_ib(nodes),
              f"all_reduce over {nodes} nodes x 8 GPUs (ring), 8 B..16 GiB",
              META_SRC + f"; below 16 MiB: {TOGETHER_SRC.format(op='all_reduce')}",
              f">= 16 MiB: the figure's points; < 16 MiB: the in-node ring busbw x "
              f"{META_H100_RING[nodes][anchor]} / {busbw_of(together_h100(AR))[anchor]:.2f} "
              "(meets the figure at 16 MiB; an extrapolation)")
    m.notes += [
        "all_reduce at 8 GPUs is NVLS (NCCL's default on this node, ref §3.3 [S24]); all_gather / "
        "reduce_scatter and all_reduce at 2-4 GPUs are ring. With NVLS, 8-GPU all_reduce beats all_gather + "
        "reduce_scatter, so sequence parallelism costs more TP communication time here than on A100.",
        "Azure and Together ran one process driving all GPUs (`-g 8`), which serialises launches: "
        "small-message times (26-45 us) are above what one-process-per-GPU training sees (ref §3.6).",
        "The Meta cluster's NIC layout is not stated in the reference; its 16 GiB busbw (358 GB/s at "
        "4 nodes) matches DGX H100's published 370-380 GB/s with 8x 400G (ref §3.5 [S20]).",
        "Send/recv: no sweep; the cost model uses the 2-GPU all_reduce (rescaled from 4 GPUs), whose "
        "busbw peak (~368 GB/s) matches the measured 8x H100 sendrecv peak 367.4-367.9 GB/s (ref §3.3 [S24]).",
        "Licences: the tables hold published figures transcribed in the reference, not copies of files.",
    ]
    return m


def hgx_h200(out: Path) -> Machine:
    m = Machine("hgx-h200", "Measured collective sweeps for an 8x H200 SXM 141GB node (NVLink4 + NVSwitch, "
                "same as DGX H100). The InfiniBand tables and the GEMM table are reused from "
                "`calibration/dgx-h100/` by `hardware/hgx-h200.yaml` (same 8x 400G NICs, ref §1.2 [S6]; "
                "same compute: MAMF table \"H200 is the same\", ref §4.1 [S5]).", out / "hgx-h200")
    m.log("nvlink/all_reduce_8.log", from_busbw(AR, 8, AZURE_SIZES, AZURE_H200_AR8),
          "all_reduce, 8 GPUs in one node, 1 KiB..8 GiB",
          AZURE_SRC.format(page="Azure_Results/ND_H200_v5_results.md@7f20e5fa", gpus=8) + ", NCCL 2.20.5, NVLS",
          "none: time = size x 2(n-1)/n / busbw")
    shapes = {"ar4": (AR, 4, together_h100(AR)), AG: (AG, 8, together_h100(AG)), RS: (RS, 8, together_h100(RS))}
    for (key, size), peak in H200_RING_PEAKS.items():
        op, ranks, shape = shapes[key]
        last = shape.busbw_gbps()[-1]
        m.log(f"nvlink/{op}_{ranks}.log", rescaled(shape, op, ranks, peak / last),
              f"{op}, {ranks} GPUs (ring)",
              f"H100 ring curve: {TOGETHER_SRC.format(op=op)}; H200 ring peak "
              f"{peak} GB/s at {size // GIB} GiB: stas00/ml-engineering network/README.md@744d01e1 (ref §3.3 [S22])",
              f"the H100 8-GPU ring busbw curve x {peak} / {last:.2f} (H200 peak / H100 value at 8 GiB), "
              f"times for n = {ranks}")
    m.notes += [
        "H200 and H100 share NVLink4/NVSwitch; the H200 ring figures exist only as peaks, so the H100 ring "
        "curves (ref §3.3) give the shape. AG/RS peaks are at 16 GiB on H200 and scaled onto the H100 "
        "8 GiB point (the H100 curves rise < 1 % from 4 to 8 GiB).",
        "all_reduce at 8 GPUs is NVLS (Azure; stas00 measures 480 GB/s NVLS vs 367.2 ring at 16 GiB).",
        "Licences: the tables hold published figures transcribed in the reference, not copies of files.",
    ]
    return m


def dgx_b200(out: Path) -> Machine:
    m = Machine("dgx-b200", "Collective tables for DGX B200 (8x B200, NVLink5 + NVSwitch gen 4, "
                "8x ConnectX-7 400G). Only an all_reduce sweep was published in-node, and only peaks "
                "across nodes.", out / "dgx-b200")
    m.log("nvlink/all_reduce_8.log", from_busbw(AR, 8, B200_AR8_SIZES, B200_AR8),
          "all_reduce, 8 GPUs, 32 KiB..16 GiB", B200_AR8_SRC, "none: time = size x 2(n-1)/n / busbw")
    cap = dict(zip(B200_AR8_SIZES, B200_AR8))[B200_RING_CAP_SIZE]
    for nodes, peak in B200_RING_PEAK.items():
        m.log(f"infiniband/all_reduce_{nodes * 8}.log", b200_ib(nodes),
              f"all_reduce over {nodes} nodes x 8 GPUs (ring), 32 KiB..16 GiB",
              f"peak {peak} GB/s (16 GiB, Ring): together-nccl-tests use3a-ss report@0492bede (ref §3.5 [S15]); "
              f"shape: {B200_AR8_SRC}",
              f"busbw = {peak} x min(in-node busbw, {cap}) / {cap}: the in-node sweep capped at its 4 GiB "
              "value (it jumps to NVLS at 8 GiB), normalised, times the k-node ring peak (a scaled shape, "
              "not a multi-node measurement below 16 GiB)")
    m.notes += [
        "No all_gather / reduce_scatter sweep: the cost model prices them as an all_reduce of half the "
        "size. The in-node all_reduce sweep allowed NVLS, so this is optimistic for ring AG/RS at large "
        "sizes (ring AG peak 662.7-673.6 vs this AR's 845.67 at 16 GiB, ref §3.4 [S15]).",
        "The in-node shape puts half of the multi-node peak near 16-32 MiB, like Meta's measured H100 "
        "4-node ring curve (ref §3.5); the AWS EFA 4-node B200 sweep (ref §3.5 [S22]) reaches it later "
        "(~128 MiB), so mid-size multi-node times here may be optimistic on slower fabrics.",
        "No 2/4-GPU in-node table: smaller groups rescale the 8-GPU table at equal busbw (ring 4-GPU "
        "peak 673.2 vs this table's 845.67 at 16 GiB, ref §3.4).",
        "Licences: the tables hold published figures transcribed in the reference, not copies of files.",
    ]
    return m


def gb200_nvl72(out: Path) -> Machine:
    m = Machine("gb200-nvl72", "Collective tables for a GB200 NVL72 rack treated as one node of 72 GPUs "
                "(the NVLink domain). Only a 4-GPU sweep and a 32-GPU peak exist for NVLink; nothing was "
                "published for its scale-out network (ref §1.2, §8).", out / "gb200-nvl72")
    ar4 = from_busbw(AR, 4, AZURE_SIZES, AZURE_GB200_AR4)
    m.log("nvlink/all_reduce_4.log", ar4, "all_reduce, 4 GPUs of one tray (ring), 1 KiB..8 GiB",
          AZURE_SRC.format(page="Azure_Results/ND_GB200_v6_results.md@2a370be6", gpus=4) + ", NCCL 2.25.1, Ring",
          "none: time = size x 2(n-1)/n / busbw")
    last = ar4.busbw_gbps()[-1]
    m.log("nvlink/all_reduce_32.log", rescaled(ar4, AR, 32, GB200_NVLINK32_PEAK / last),
          "all_reduce, 32 GPUs over NVLink, 1 KiB..8 GiB",
          "GB200 NVL72 32-GPU NVLink all_reduce 680 GB/s without SHARP, NVIDIA GTC25 S72583 slide "
          "(ref §3.1 [S20], read from figure); shape: the 4-GPU Azure sweep",
          f"the 4-GPU busbw curve x {GB200_NVLINK32_PEAK:g} / {last} (published 32-GPU peak / 4-GPU value "
          "at 8 GiB), times for n = 32; groups of 33-72 GPUs rescale this table at equal busbw")
    for nodes in (2, 4):
        m.log(f"infiniband/all_reduce_{nodes * GB200_NICS}.log", gb200_ib(nodes),
              f"all_reduce over {nodes} racks x 72 GPUs (model input, see derivation)",
              f"the dgx-b200 {nodes}-node table (ring peak {B200_RING_PEAK[nodes]} GB/s, ref §3.5 [S15]); "
              f"72 NICs a rack ASSUMED",
              "sizes x 9 and busbw x 9 (72 NICs / 8): the cost model reads per-NIC busbw = busbw / GPUs a "
              "node at per-NIC size = size / GPUs a node, so each NIC behaves as a B200 400G NIC does. NOT "
              "a measurement: a flat nccl-tests run over two racks would be NVLink-bound")
    m.notes += [
        "Scale-out ASSUMED: one 400 Gb/s NIC per GPU (72 a rack), each as fast as a DGX B200 NIC in the "
        "Together ring measurements. Neither the NIC count nor any multi-rack figure is in the reference.",
        "The InfiniBand files carry busbw = 72 x per-NIC busbw (up to ~3100 GB/s), the whole-rack "
        "scale-out rate the cost model's hierarchical all-reduce expects; they are model inputs, not "
        "something nccl-tests could print.",
        "No all_gather / reduce_scatter tables: the cost model prices them as an all_reduce of half the size.",
        "Licences: the tables hold published figures transcribed in the reference, not copies of files.",
    ]
    return m


def vtrain_a100(data: Path, out: Path) -> Machine:
    m = Machine("vtrain-a100", "InfiniBand tables for the vTrain validation cluster (8x A100 a node, "
                "800 Gb/s a node across nodes, `data/vtrain/example_config_val_*.json`). In-node "
                "tables and the GEMM table are reused from `calibration/dgx-a100-80gb/` by "
                "`hardware/vtrain-a100.yaml` (vTrain's own all_reduce LUTs, measured on its A100 node).",
                out / "vtrain-a100")
    r = VTRAIN_NODE_GBPS / ECHO_NODE_GBPS
    for gpus in (16, 32, 64, 128):
        echo = read_nccl_log(data / "echo-nccl-a100" / f"nccl_{gpus}.log")
        plateau = echo.busbw_gbps()[-1]
        m.log(f"infiniband/nccl_{gpus}.log", vtrain_ib(echo),
              f"all_reduce over {gpus // 8} nodes x 8 GPUs, 1 KiB..{echo.sizes_bytes[-1] // GIB} GiB",
              f"{ECHO_SRC} nccl_{gpus}.log (Azure ND A100 v4, 8x 200G HDR a node)",
              f"t' = t + S x 2(n-1)/n x (1/(r P) - 1/P), r = {VTRAIN_NODE_GBPS}/{ECHO_NODE_GBPS} Gb/s a node, "
              f"P = {plateau:.2f} GB/s (Echo busbw at its largest size): the bandwidth term halves, "
              f"latency-bound sizes keep Echo's time; busbw at the largest size = {r * plateau:.2f}")
    (m.out / "licenses").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(data / "echo-nccl-a100" / "LICENSE", m.out / "licenses" / "echo.LICENSE")
    m.written.append(m.out / "licenses" / "echo.LICENSE")
    m.notes += [
        "Modelled as 4x 200 Gb/s NICs a node (800 Gb/s, vTrain's inter_node_bandwidth). The model reads the "
        "tables' busbw / 8 as one GPU ring's share, so the NIC count itself does not enter.",
        "Echo's Azure fabric reaches only ~64 % of its 1.6 Tb/s line rate (~128 of 200 GB/s); scaled by the "
        "NIC ratio this gives ~61-64 GB/s. Published 2-node A100 runs with 4x 200G NICs measured 86-91 GB/s "
        "(ref §3.5: nccl-tests issues #100, #175), so these tables may be pessimistic by up to ~30 % at large "
        "sizes if vTrain's fabric is as efficient as those.",
        "The Echo logs were measured on A100-SXM4-40GB nodes; the collective speed does not depend on HBM size.",
        "Licence: derived from Echo's MIT-licensed logs; the licence text is in `licenses/echo.LICENSE`.",
    ]
    return m


def dgx_a100_40gb(out: Path) -> Machine:
    m = Machine("dgx-a100-40gb", "`hardware/dgx-a100-40gb.yaml` has no tables of its own: it reuses every "
                "file of `calibration/dgx-a100-80gb/` by relative path (see the README there). The A100 "
                "SXM4 40GB has the same GA100 compute, NVLink3/NVSwitch and 8x HDR NICs as the 80GB part "
                "(ref §1.1-1.2); only HBM (40 GB, 1555 GB/s) differs. The Echo logs used there were in fact "
                "measured on A100-SXM4-40GB nodes.", out / "dgx-a100-40gb")
    m.notes += ["The GEMM table was scaled to the A100 SXM MAMF 271.2 TFLOP/s (ref §4.1), which the "
                "reference does not split by memory size; the two parts share clocks and power (400 W)."]
    return m


def derive(data: Path, out: Path, date: str) -> list[Path]:
    """Write every derived file under `out` (hardware/calibration); return them."""
    machines = [dgx_a100_40gb(out), dgx_h100(out), hgx_h200(out), dgx_b200(out), gb200_nvl72(out),
                vtrain_a100(data, out)]
    written = []
    for m in machines:
        m.readme(date)
        written += m.written
    return written


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", default=str(REPO / "hardware" / "calibration" / "sources"),
                        help="measured-data folder (default: hardware/calibration/sources, the "
                        "upstream files copied verbatim)")
    parser.add_argument("--out", default=str(REPO / "hardware" / "calibration"), help="calibration folder")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="date recorded in the READMEs")
    args = parser.parse_args(argv)
    for path in derive(Path(args.data), Path(args.out), args.date):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
