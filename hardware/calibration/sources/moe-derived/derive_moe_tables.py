"""Derive the MoE calibration CSVs in this folder from the verbatim upstream copies beside it.

    python hardware/calibration/sources/moe-derived/derive_moe_tables.py

Reads only files under hardware/calibration/sources/ (and the SimuMax B200 system JSON that
hardware/calibration/dgx-b200/sources/ already holds), writes grouped_gemm_<device>.csv and
alltoall_<device>.csv here. Standard library only. Provenance of every input: README.md here and
the README.md of each source folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE.parent
CAL = SOURCES.parent

DEEPGEMM = {  # README versions whose tables differ (git log -p README.md of deepseek-ai/DeepGEMM)
    "a6d97a1": "a6d97a1c1b48a7a9d7994d0e155ee6f11d0a3f07",  # 2025-02-25 initial
    "55ab91f": "55ab91f72f76e8a6db0e86282c3169a88d93df1b",  # 2025-03-25 'Update performance'
    "a9967bc": "a9967bc27cdcead54e8d11e1736644eb51d49b33",  # 2025-04-09 dense M=4096 rows only
}
SIMUMAX_COMMIT = "4dcaae513ba7679d56c116a17cd4a691ec41e252"
TORCHAO = {
    "838dcebb1": "838dcebb13be7cd7b7ae5d1d8c4e674c89a5d7b8",  # 2025-10-13 first B200 tables
    "ff163084e": "ff163084ee0065663204e8be404670a0406e7ec3",  # 2025-10-14 re-measured on 'more reliable b200'
    "2c2d40258": "2c2d402585fd6ce219658e66c4c80c46e2625c97",  # 2026-01-02 first kernel breakdown
    "5e79e5ed3": "5e79e5ed3434aa04281931039da1bab338c415b3",  # 2026-03-13 (= HEAD version of file)
}
DEEPEP = {
    "ebfe47e": "ebfe47e46fa86a5b41be96c326a92f62ed6721da",
    "3b1045d": "3b1045db43ed232691d32dde0517dfed571b0a65",
    "d8dd185": "d8dd185c686cddff0c13b49f640ce9cad4030d03",
    "af9a040": "af9a0403188392824fc3057452822235873e0612",
}
XXRJUN_HEAD = "455de4f8dee2fa94cd4044a7109fd8c576f9e6c1"
XXRJUN_B129 = "b1298129db1c2d17d82af8b0c7a32c69a4bae0bc"
OCI_COMMIT = "6a0abdc78b574b28eb10926387615c8414ed8c1d"

GG_HEADER = "groups,m,n,k,dtype,tflops,source"
A2A_HEADER = "ranks,ranks_per_node,nvlink_domain,bytes_per_rank,time_us,busbw_gbps,source"


def fmt(x: float, nd: int = 1) -> str:
    return f"{x:.{nd}f}"


def md_tables_after(text: str, heading: str) -> list[list[str]]:
    """Rows (cells) of the first markdown table after the line starting with `heading`."""
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(heading))
    rows, seen = [], False
    for l in lines[start + 1:]:
        if l.startswith("|"):
            seen = True
            cells = [c.strip() for c in l.strip().strip("|").split("|")]
            if not all(set(c) <= set(":- ") for c in cells):
                rows.append(cells)
        elif seen:
            break
    return rows[1:]  # drop the header row


# ----------------------------------------------------------------------------- grouped GEMM
def deepgemm_rows() -> list[str]:
    out, seen = [], set()
    for short, full in DEEPGEMM.items():
        text = (SOURCES / "deepgemm" / f"README.{short}.md").read_text()
        for title, kind in (("### Normal GEMMs for dense models", "dense"),
                            ("### Grouped GEMMs for MoE models (contiguous layout)", "contiguous"),
                            ("### Grouped GEMMs for MoE models (masked layout)", "masked")):
            for cells in md_tables_after(text, title):
                if kind == "dense":
                    g, m, n, k, tf = 1, *map(int, cells[:3]), cells[3]
                else:
                    g, m, n, k, tf = *map(int, cells[:4]), cells[4]
                tflops = float(tf.split()[0])
                key = (kind, g, m, n, k, tflops)
                if key in seen:  # the same published number repeated in a later README version
                    continue
                seen.add(key)
                out.append(",".join(map(str, (g, m, n, k, "fp8", fmt(tflops, 0),
                                               f"deepseek-ai/DeepGEMM@{full[:10]}:README.md:{kind}"))))
    return out


def simumax_rows() -> list[str]:
    path = CAL / "dgx-b200" / "sources" / "simumax_b200_bf16_ceperm.json"
    op = json.loads(path.read_text())["accelerator"]["op"]["group_matmul"]
    peak = float(op["tflops"])
    out = []
    for key, eff in op["accurate_efficient_factor"].items():
        f = dict(p.split("=") for p in key.split(", "))
        stage = {"fwd": "fwd", "bwd_grad_act": "dgrad", "bwd_grad_w": "wgrad"}[f["stage"]]
        out.append(",".join(map(str, (
            f["ng"], f["M"], f["N"], f["K"], f["dtype"], fmt(eff * peak),
            f"MooreThreads/SimuMax@{SIMUMAX_COMMIT[:10]}:configs/system/b200_bf16_ceperm.json:"
            f"group_matmul:{stage}:main_grad_{f['main_grad_dtype']}"))))
    return out


def torchao_rows() -> list[str]:
    out, seen = [], set()
    pat = re.compile(r"^\| \((\d+), (\d+), (\d+), (\d+)\) \|\s*([\d.]+)\s*\|\s*([\d.]+)\s*\|")
    for short, full in TORCHAO.items():
        text = (SOURCES / "torchao-moe" / f"README.{short}.md").read_text()
        src = f"pytorch/ao@{full[:10]}:torchao/prototype/moe_training/README.md"
        for line in text.splitlines():
            mt = pat.match(line)
            if mt:  # microbenchmark: torch._grouped_mm bf16 vs MXFP8 fwd+bwd, total M over G jagged groups
                M, N, K, G = map(int, mt.groups()[:4])
                for dtype, us in (("bf16", float(mt.group(5))), ("mxfp8", float(mt.group(6)))):
                    key = (M, N, K, G, dtype, us)
                    if key in seen:
                        continue
                    seen.add(key)
                    tflops = 3 * 2 * M * N * K / (us * 1e-6) / 1e12  # fwd + dgrad + wgrad
                    extra = "" if dtype == "bf16" else "+quantize"
                    out.append(",".join(map(str, (G, fmt(M / G, 0), N, K, dtype, fmt(tflops),
                                                   f"{src}:microbench:fwd+bwd{extra}:jagged_groups"))))
            if "`torch._scaled_grouped_mm`" in line:  # MXFP8 kernel breakdown, B200
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                shape, us = cells[3], float(cells[4])
                dims = list(map(int, re.findall(r"\d+", shape)))
                if "2D-3D" in cells[2]:  # (T, K) @ (G, K, N)
                    T, K, G, _, N = dims
                    g, m, n, k = G, T // G, N, K
                    stage = "fwd" if "Forward" in cells[0] else "dgrad"
                else:  # 2D-2D wgrad: (N, T) @ (T, K), groups along T
                    N, T, _, K = dims
                    g, m, n, k = 8, N, K, T // 8
                    stage = "wgrad"
                key = ("kb", stage, us)
                if key in seen:
                    continue
                seen.add(key)
                tflops = 2 * g * m * n * k / (us * 1e-6) / 1e12
                out.append(",".join(map(str, (g, m, n, k, "mxfp8", fmt(tflops),
                                               f"{src}:kernel_breakdown:{stage}:jagged_groups"))))
    return out


# ----------------------------------------------------------------------------- all-to-all
NUM = re.compile(r"^\s*(\d{4,})\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
                 r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")
TYPE_BYTES = {"float": 4, "double": 8, "half": 2, "bfloat16": 2, "int8": 1, "uint8": 1}


def nccl_alltoall_blocks(text: str) -> list[list[re.Match]]:
    """Each alltoall_perf block of an nccl-tests log: its result lines."""
    blocks, cur, inside = [], None, False
    for line in text.splitlines():
        if "Collective test starting:" in line:
            inside = "alltoall_perf" in line
            cur = [] if inside else None
            if inside:
                blocks.append(cur)
        elif inside:
            m = NUM.match(line)
            if m:
                cur.append(m)
    return [b for b in blocks if b]


def a2a_rows(matches, ranks, per_node, domain, src) -> list[str]:
    out = []
    for m in matches:
        size = int(m.group(1))
        for tag, t, bw in (("out-of-place", m.group(6), m.group(8)), ("in-place", m.group(10), m.group(12))):
            out.append(",".join(map(str, (ranks, per_node, domain, size, t, bw, f"{src}:{tag}"))))
    return out


def xxrjun_rows() -> tuple[list[str], list[str]]:
    base = SOURCES / "nccl-tests-cluster"
    c1 = "benchmarks/example-cluster01/nccl-benchmark-results"
    c0 = "benchmarks/example-cluster00/nccl-benchmark-results"
    runs = [  # (file here, upstream path, commit, ranks, ranks per node)
        ("cluster01/single-node/nccl_N1_G8_cnode3-002.log",
         f"{c1}/single-node/runs/20260128-145017/without-debug/logs/nccl_N1_G8_cnode3-002.log", XXRJUN_HEAD, 8, 8),
        ("cluster01/single-node/nccl_N1_G4_cnode3-002.log",
         f"{c1}/single-node/runs/20260128-145017/without-debug/logs/nccl_N1_G4_cnode3-002.log", XXRJUN_HEAD, 4, 4),
        *[(f"cluster01/pairwise/nccl_N2_G{g}_cnode3-002_cnode3-003.log",
           f"{c1}/pairwise/runs/20260128-010702/without-debug/logs/nccl_N2_G{g}_cnode3-002_cnode3-003.log",
           XXRJUN_HEAD, 2 * g, g) for g in (1, 2, 4, 8)],
        *[(f"cluster01/multi-node/nccl_N10_G{g}.log",
           f"{c1}/multi-node/runs/20260129-180219/without-debug/logs/nccl_N10_G{g}.log",
           XXRJUN_HEAD, 10 * g, g) for g in (1, 2, 4, 8)],
        ("cluster00/single-node/nccl_N1_G8_cnode2-003.log",
         f"{c0}/single-node/runs/2511/without-debug/logs/nccl_N1_G8_cnode2-003.log", XXRJUN_B129, 8, 8),
        ("cluster00/pairwise/nccl_N2_G8_cnode2-001_cnode2-002.log",
         f"{c0}/pairwise/runs/2511/without-debug/logs/nccl_N2_G8_cnode2-001_cnode2-002.log", XXRJUN_HEAD, 16, 8),
    ]
    known, unknown = [], []
    for here, upstream, commit, ranks, per_node in runs:
        blocks = nccl_alltoall_blocks((base / here).read_text())
        assert len(blocks) == 1, here
        for m in blocks[0]:  # nccl-tests: size = count * nranks * typesize for alltoall
            assert int(m.group(1)) == int(m.group(2)) * ranks * TYPE_BYTES[m.group(3)], (here, m.group(0))
        rows = a2a_rows(blocks[0], ranks, per_node, 8, f"xxrjun/nccl-tests-cluster@{commit[:10]}:{upstream}")
        (unknown if "cluster00/pairwise" in here else known).extend(rows)
    return known, unknown


def oci_rows(fname: str, ranks_by_heading: dict[str, tuple[int, int, int]],
             upstream: str | None = None, commit: str = OCI_COMMIT, skip: set | None = None) -> list[str]:
    """alltoall rows of one OCI guide; `skip` holds (ranks, size, time) already listed from another version."""
    text = (SOURCES / "oci-gpu-quickstarts" / fname).read_text()
    upstream = upstream or fname
    out, heading, in_code, found = [], None, False, set()
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
            continue
        if not in_code and line.startswith("#"):
            heading = " ".join(line.lstrip("#").split())  # upstream headings contain U+00A0
            continue
        if heading in ranks_by_heading:
            m = NUM.match(line)
            if m and m.group(4) == "none":  # alltoall rows have redop 'none'
                ranks, per_node, domain = ranks_by_heading[heading]
                found.add(heading)
                if skip is not None:
                    key = (ranks, m.group(1), m.group(6))
                    if key in skip:
                        continue
                    skip.add(key)
                out += a2a_rows([m], ranks, per_node, domain,
                                f"oracle-quickstart/oci-gpu-quickstarts@{commit[:10]}:nvidia/"
                                f"{upstream.split('-')[1].split('.')[0]}/{upstream}:'{heading}'")
    assert found == set(ranks_by_heading), (fname, set(ranks_by_heading) - found)
    return out


# DeepEP: published bottleneck bandwidths (logical: bytes counted include traffic to the own node/rank)
DEEPEP_NORMAL = {  # version: {(#EP): (dispatch GB/s, combine GB/s)}
    "ebfe47e": {8: (153, 158), 16: (43, 43), 32: (44, 47), 64: (46, 45)},
    "3b1045d": {8: (153, 158), 16: (43, 43), 32: (58, 57), 64: (51, 50)},
}
DEEPEP_LL = {  # version: {#EP: (dispatch us, GB/s, combine us, GB/s)}
    "ebfe47e": {8: (163, 46, 318, 46), 16: (173, 43, 329, 44), 32: (182, 41, 350, 41),
                64: (186, 40, 353, 41), 128: (192, 39, 369, 39), 256: (194, 39, 360, 40)},
    "d8dd185": {8: (77, 98, 114, 127), 16: (118, 63, 195, 74), 32: (155, 48, 273, 53),
                64: (173, 43, 314, 46), 128: (192, 39, 369, 39), 256: (194, 39, 360, 40)},
}
# LL bytes per rank: 128 tokens x top-8 copies x 7168 hidden; FP8 dispatch carries 4 B of scale per 128
LL_DISPATCH_BYTES = 128 * 8 * (7168 + 7168 // 128 * 4)
LL_COMBINE_BYTES = 128 * 8 * 7168 * 2
DEEPEP_V2 = [  # (arch, topo ranks, ranks per node, dispatch, combine, #SMs, link)
    ("SM90", 16, 8, 90, 81, 12, "RDMA"), ("SM90", 32, 8, 61, 61, 6, "RDMA"),
    ("SM100", 16, 8, 90, 91, 12, "RDMA"), ("SM100", 8, 8, 726, 740, 64, "NVLink"),
    ("SM100", 8, 8, 643, 675, 24, "NVLink"),
]


GB300_RUNS = {
    "NCCL All-to-All Single Node": (4, 4, 72),
    "NCCL All to All Scale Performance 2 Hosts Single Rack": (8, 4, 72),
    "NCCL All to All Scale Performance 16 Hosts 1 Rack": (64, 4, 72),
    "NCCL All to All Scale Performance 32 Hosts 2 Racks": (128, 4, 72),
}
OCI_GB300_FIRST = "96ac1ec4633ba99ba0d2a43cbdcd7aecdecd39dc"  # 2026-02-24: whole 512 KiB .. 16 GiB sweep


def gb300_rows() -> list[str]:
    """The first GB300 guide published 512 KiB..16 GiB; the current one keeps
    only the two largest sizes. Rows present in both are listed once, under the first version."""
    seen: set = set()
    return (oci_rows("README-GB300.96ac1ec.md", GB300_RUNS, "README-GB300.md", OCI_GB300_FIRST, seen)
            + oci_rows("README-GB300.md", GB300_RUNS, skip=seen))


def deepep_check():
    """The numbers above are transcribed; check each appears in the verbatim README."""
    for ver, tab in DEEPEP_NORMAL.items():
        text = (SOURCES / "deepep" / f"README.{ver}.md").read_text()
        for ep, (d, c) in tab.items():
            assert re.search(rf"\|\s*{ep}\s*\|\s*{d} GB/s \((NVLink|RDMA)\)\s*\|\s*{ep}\s*\|\s*{c} GB/s", text), (ver, ep)
    for ver, tab in DEEPEP_LL.items():
        text = (SOURCES / "deepep" / f"README.{ver}.md").read_text()
        for ep, (dt, dbw, ct, cbw) in tab.items():
            assert re.search(rf"\|\s*{ep}\s*\|\s*{dt} us\s*\|\s*{dbw} GB/s\s*\|\s*{ep}\s*\|\s*{ct} us\s*\|\s*{cbw} GB/s", text), (ver, ep)
    text = (SOURCES / "deepep" / "README.af9a040.md").read_text()
    for arch, ranks, _, d, c, sms, link in DEEPEP_V2:
        topo = "EP 8 x 2" if ranks == 16 else "EP 8 x 4" if ranks == 32 else "EP 8"
        assert re.search(rf"\| {arch} \| [^|]+ \| {topo} \| {d} GB/s \({link}\) \| {c} GB/s \({link}\) \| {sms}", text), (arch, ranks)


def deepep_rows(arches: tuple[str, ...]) -> list[str]:
    out = []
    if "SM90" in arches:  # V1 tables: H800, CX7 400 Gb/s per GPU
        for ver, tab in DEEPEP_NORMAL.items():
            if ver == "3b1045d":
                tab = {ep: v for ep, v in tab.items() if ep != 8 and v != DEEPEP_NORMAL["ebfe47e"][ep]}
            for ep, (d, c) in tab.items():
                src = f"deepseek-ai/DeepEP@{DEEPEP[ver][:10]}:README.md:v1-normal"
                link = "NVLink" if ep == 8 else "RDMA"
                out.append(f"{ep},8,8,,,{d},{src}:dispatch-fp8:logical-{link}-bw:24SM-test")
                out.append(f"{ep},8,8,,,{c},{src}:combine-bf16:logical-{link}-bw:24SM-test")
        for ver, tab in DEEPEP_LL.items():
            for ep, (dt, dbw, ct, cbw) in tab.items():
                if ver == "d8dd185" and tab[ep] == DEEPEP_LL["ebfe47e"][ep]:
                    continue
                src = f"deepseek-ai/DeepEP@{DEEPEP[ver][:10]}:README.md:v1-low-latency"
                out.append(f"{ep},8,8,{LL_DISPATCH_BYTES},{dt},{dbw},{src}:dispatch-fp8:logical-bw")
                out.append(f"{ep},8,8,{LL_COMBINE_BYTES},{ct},{cbw},{src}:combine-bf16:logical-bw")
    for arch, ranks, per_node, d, c, sms, link in DEEPEP_V2:
        if arch in arches:
            src = f"deepseek-ai/DeepEP@{DEEPEP['af9a040'][:10]}:README.md:v2-{arch}"
            out.append(f"{ranks},{per_node},8,,,{d},{src}:dispatch-fp8:logical-{link}-bw:{sms}SM")
            out.append(f"{ranks},{per_node},8,,,{c},{src}:combine-bf16:logical-{link}-bw:{sms}SM")
    return out


# ----------------------------------------------------------------------------- writing
def write(name: str, header_lines: list[str], columns: str, rows: list[str]) -> None:
    body = "".join(f"# {h}\n" for h in header_lines) + columns + "\n" + "".join(r + "\n" for r in rows)
    (HERE / name).write_text(body)
    print(f"{name}: {len(rows)} rows")


def main() -> None:
    deepep_check()
    gg_note = ("tflops = 2*groups*m*n*k / time (fwd+bwd rows: 3 x that); m = rows per group "
               "(jagged_groups: total rows / groups, group sizes random); n = output columns, k = reduction")
    write("grouped_gemm_h800.csv", [
        "PUBLISHED grouped-GEMM throughput, NVIDIA H800 SXM5 (DeepGEMM README tables), FP8 e4m3 inputs with",
        "fine-grained scaling (1x128 activations, 128x128 weights), BF16 output, NVCC 12.8; kernel time by",
        "torch profiler (tests/test_core.py bench_kineto). groups=1 rows are DeepGEMM's dense table, for comparison.",
        "contiguous: all groups' rows in one M-concatenated tensor; masked: [groups, m, k] with per-group valid rows (= m here).",
        "source: deepseek-ai/DeepGEMM README.md at a6d97a1c1b, 55ab91f72f, a9967bc27c (tables removed at 37aa127451);",
        "a number repeated unchanged in a later version is listed once, under the commit that first published it.",
        gg_note, "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], GG_HEADER, deepgemm_rows())
    write("grouped_gemm_b200.csv", [
        "MEASURED grouped-GEMM throughput, NVIDIA B200.",
        "SimuMax rows: BF16 in/out, Transformer Engine general_grouped_gemm (TE 2.x), equal groups (m_splits=[M]*ng),",
        "wall-clock over 40 timed calls after 10 warmup, stored upstream as efficiency x 2250 TFLOPS; fwd = TN",
        "(out [M,N], reduce K), dgrad = NN (out [M,K], reduce N), wgrad = NT with accumulate into main_grad (out [N,K],",
        "reduce M); main_grad_fp32/bf16 is the wgrad accumulation dtype (fwd/dgrad are measured twice, once per setting).",
        "torchao rows: torch._grouped_mm (bf16) and torchao MXFP8 _scaled_grouped_mm, B200, total M rows split",
        "into G random (jagged) groups; microbench = forward+backward incl. an MSE loss (and, for mxfp8, quantization",
        "kernels); kernel_breakdown = the MXFP8 grouped GEMM kernel alone.",
        "source: MooreThreads/SimuMax@4dcaae513b configs/system/b200_bf16_ceperm.json accelerator.op.group_matmul",
        "(copy: hardware/calibration/dgx-b200/sources/simumax_b200_bf16_ceperm.json); pytorch/ao",
        "torchao/prototype/moe_training/README.md at 838dcebb13, ff163084ee, 2c2d402585, 5e79e5ed34.",
        gg_note, "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], GG_HEADER, simumax_rows() + torchao_rows())

    a2a_note = ("bytes_per_rank = nccl-tests 'size' (per-rank send buffer, all peers' chunks incl. its own); "
                "busbw = algbw*(n-1)/n (nccl-tests); both out-of-place and in-place rows are given")
    known, unknown = xxrjun_rows()
    write("alltoall_h100.csv", [
        "MEASURED nccl-tests alltoall_perf, NVIDIA H100 80GB HBM3 (SXM), 8 a node, NVLink4/NVSwitch.",
        "cluster01 (xxrjun example-cluster01): NCCL 2.29.2, nccl-tests 2.17.8, double, 20 iters; its NICs are not",
        "stated, but sendrecv reaches 45.9 GB/s per GPU between two nodes, i.e. one 400 Gb/s NIC per GPU.",
        "cluster00 (example-cluster00, 17 nodes): NCCL 2.28.7, nccl-tests 2.17.6; single node only in this file;",
        "its 2-node pairwise run (much weaker fabric, NICs unstated) is in alltoall_h100_cluster00_pairwise.csv.",
        f"source: xxrjun/nccl-tests-cluster@{XXRJUN_HEAD[:10]} (cluster00 single node @{XXRJUN_B129[:10]}), Apache-2.0.",
        a2a_note, "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], A2A_HEADER, known)
    write("alltoall_h100_cluster00_pairwise.csv", [
        "MEASURED nccl-tests alltoall_perf, 2 nodes x 8 H100 80GB HBM3, xxrjun example-cluster00 (NCCL 2.28.7).",
        "The inter-node fabric is not stated; sendrecv is 15.1 GB/s per GPU and alltoall implies ~12.6 GB/s per GPU",
        "over the network (~100 GB/s a node), far below 8x400G: do not use as a DGX H100 reference.",
        f"source: xxrjun/nccl-tests-cluster@{XXRJUN_HEAD[:10]}, Apache-2.0.",
        a2a_note, "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], A2A_HEADER, unknown)
    write("alltoall_h800.csv", [
        "PUBLISHED DeepEP dispatch/combine bandwidth, H800 (NVLink ~160 GB/s measured max), one CX7 400 Gb/s",
        "InfiniBand NIC per GPU (~50 GB/s), 8 GPUs a node. NOT nccl-tests: busbw_gbps holds DeepEP's",
        "'bottleneck bandwidth' (bytes counted / kernel time), which counts the tokens a rank keeps on its own",
        "node (internode, RDMA) or its own GPU (intranode, NVLink) as well; the share that crosses the NIC is",
        "about (nodes-1)/nodes of it for uniform routing (README.md beside this file).",
        "v1-normal: 4096 tokens/rank, hidden 7168, top-4 node groups, top-8 experts, FP8 dispatch, BF16 combine;",
        "SMs not stated in the table: the repository's tests and usage example run the normal kernels with 24 SMs.",
        "v1-low-latency: 128 tokens/rank, top-8, hidden 7168; time_us = published latency; bytes_per_rank =",
        "128*8 token copies (dispatch FP8 + 4 B scale per 128; combine BF16), which bw*latency reproduces.",
        "v2-SM90: DeepEP V2 table, 'SM90 CX7' (8K tokens, hidden 7168, top-8), SM count given in the source tag.",
        "source: deepseek-ai/DeepEP README.md at ebfe47e46f (initial), 3b1045db43 (internode after #130),",
        "d8dd185c68 (low-latency with NVLink, #173), af9a040318 (V2); unchanged repeats are listed once.",
        "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], A2A_HEADER, deepep_rows(("SM90",)))
    write("alltoall_b200.csv", [
        "PUBLISHED DeepEP V2 dispatch/combine bandwidth, 'SM100' (Blackwell; the README names no SKU), 8 GPUs a node.",
        "busbw_gbps = DeepEP's logical bottleneck bandwidth (includes traffic kept on the own node/GPU), not nccl busbw.",
        "No nccl-tests alltoall_perf log for an 8x B200 node was found. SimuMax's B200 system file fits its",
        "all2all on the node as time = size*(n-1)/n / (900 GiB/s * 0.5968) + 7.3039 us*(n-1) + fixed(n) with",
        "fixed = 51.06 / 19.21 / 0 us for n = 2 / 4 / 8 (a fitted model, not a measurement; not a row here).",
        "source: deepseek-ai/DeepEP@af9a040318 README.md; MooreThreads/SimuMax@4dcaae513b",
        "configs/system/b200_bf16_ceperm.json networks.high_intra_node.op.all2all.",
        "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], A2A_HEADER, deepep_rows(("SM100",)))
    write("alltoall_gb200.csv", [
        "MEASURED nccl-tests alltoall_perf, OCI BM.GPU.GB200 (4 B200 GPUs a host/tray, NVL72 racks, NVLink5 900 GB/s",
        "per GPU per direction), 4 x 400 Gb/s InfiniBand a host (NCCL_IB_HCA lists 4 HCAs), MNNVL on; float; only",
        "the largest sizes are published. Hosts of one rack share the NVLink domain (nvlink_domain = 72 GPUs; the",
        "runs use 16 hosts = 64 GPUs of a rack); the 2- and 3-rack runs cross InfiniBand between racks.",
        "The README's 'count' column has typos (4 GiB rows); ranks come from the headings.",
        f"source: oracle-quickstart/oci-gpu-quickstarts@{OCI_COMMIT[:10]} nvidia/GB200/README-GB200.md (UPL-1.0).",
        a2a_note, "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], A2A_HEADER, oci_rows("README-GB200.md", {
        "NCCL All-to-All Single Node": (4, 4, 72),
        "NCCL All to All Scale Performance 2 Hosts Single Rack": (8, 4, 72),
        "NCCL All to All Scale Performance 16 Hosts 1 Rack": (64, 4, 72),
        "NCCL All to All Scale Performance 32 Hosts 2 Racks": (128, 4, 72),
        "NCCL All to All Scale Performance 48 Hosts 3 Racks": (192, 4, 72),
    }))
    write("alltoall_gb300.csv", [
        "MEASURED nccl-tests alltoall_perf, OCI BM.GPU.GB300.4 (4 B300 GPUs a host, NVL72), 8 x 400 Gb/s RoCE a",
        "host, NCCL 2.28.7, float, MNNVL on. nvlink_domain = 72 GPUs. The first version of the guide",
        "(96ac1ec463, 2026-02-24) lists 512 KiB..16 GiB; the current one only the two largest sizes (same runs).",
        f"source: oracle-quickstart/oci-gpu-quickstarts nvidia/GB300/README-GB300.md at 96ac1ec463 and "
        f"{OCI_COMMIT[:10]} (UPL-1.0).",
        a2a_note, "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], A2A_HEADER, gb300_rows())
    write("alltoall_b300.csv", [
        "MEASURED nccl-tests alltoall_perf, OCI BM.GPU.B300.8 (8 B300, NVLink5), 8 x 2 x 400 Gb/s RDMA a node",
        "(800 Gb/s per GPU), NCCL 2.28.9, float; only the largest size is published.",
        f"source: oracle-quickstart/oci-gpu-quickstarts@{OCI_COMMIT[:10]} nvidia/B300/README-B300.md (UPL-1.0).",
        a2a_note, "derived by: python hardware/calibration/sources/moe-derived/derive_moe_tables.py",
    ], A2A_HEADER, oci_rows("README-B300.md", {
        "All-to-All - Single Node": (8, 8, 8),
        "All-to-All - 2 Nodes": (16, 8, 8),
    }))


if __name__ == "__main__":
    main()
