"""The hardware library: every hardware/*.yaml loads, prices work sensibly, and its tables match
the published figures they were derived from (hardware/calibration/derive_library.py)."""

import importlib.util
import json
import math
import re
from pathlib import Path

import pytest

from simsp.cli.main import main
from simsp.cost import cost_model
from simsp.io.config import load_hardware
from simsp.model.layer import Gemm
from simsp.tables import BUSBW_FACTORS, read_nccl_log
from tests.extras import needs

REPO = Path(__file__).resolve().parents[1]
CAL = REPO / "hardware" / "calibration"
SOURCES = CAL / "sources"
"""The verbatim upstream logs derive_library.py reads (in the repository, with their READMEs)."""
HARDWARE = sorted((REPO / "hardware").glob("*.yaml"))
LIBRARY = ("dgx-a100-40gb", "dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72", "vtrain-a100")
KIB, MIB, GIB = 1024, 1024**2, 1024**3
MSG = 64 * MIB

# (machine, table, size, published busbw GB/s, per: divide busbw by this before comparing)
# Published figures typed in here, each from the measurement the project's hardware reference
# (hardware-and-calibration.md, section in the comment) cites, or from the Echo logs in
# hardware/calibration/sources (vtrain-a100: half of Echo's busbw at its largest size). The test
# reads no file outside the repository.
PUBLISHED = [
    ("dgx-h100", "nvlink/all_reduce_8.log", 64 * MIB, 361.78, 1),  # §3.2 Azure H100
    ("dgx-h100", "nvlink/all_reduce_8.log", GIB, 466.35, 1),
    ("dgx-h100", "nvlink/all_reduce_8.log", 8 * GIB, 478.87, 1),
    ("dgx-h100", "nvlink/all_reduce_4.log", 8 * GIB, 367.9, 1),  # §3.3 xxrjun 4-GPU peak
    ("dgx-h100", "nvlink/all_reduce_4.log", 64 * MIB, 318.55, 1),  # §3.3 Together ring shape
    ("dgx-h100", "nvlink/all_gather_8.log", 16 * MIB, 207.36, 1),  # §3.3 Together ring
    ("dgx-h100", "nvlink/all_gather_8.log", GIB, 344.53, 1),
    ("dgx-h100", "nvlink/all_gather_8.log", 8 * GIB, 357.90, 1),
    ("dgx-h100", "nvlink/reduce_scatter_8.log", 16 * MIB, 203.96, 1),
    ("dgx-h100", "nvlink/reduce_scatter_8.log", GIB, 346.49, 1),
    ("dgx-h100", "nvlink/reduce_scatter_8.log", 8 * GIB, 363.18, 1),
    ("dgx-h100", "infiniband/all_reduce_32.log", 16 * MIB, 115, 1),  # §3.5 Meta, 4 nodes
    ("dgx-h100", "infiniband/all_reduce_32.log", GIB, 338, 1),
    ("dgx-h100", "infiniband/all_reduce_32.log", 16 * GIB, 358, 1),
    ("dgx-h100", "infiniband/all_reduce_4096.log", 64 * MIB, 110, 1),  # §3.5 Meta, 512 nodes
    ("dgx-h100", "infiniband/all_reduce_4096.log", 16 * GIB, 345, 1),
    ("hgx-h200", "nvlink/all_reduce_8.log", 64 * MIB, 368.11, 1),  # §3.2 Azure H200
    ("hgx-h200", "nvlink/all_reduce_8.log", 8 * GIB, 479.98, 1),
    ("hgx-h200", "nvlink/all_reduce_4.log", 8 * GIB, 363.3, 1),  # §3.3 stas00 H200 ring
    ("hgx-h200", "nvlink/all_gather_8.log", 16 * GIB, 361.4, 1),
    ("hgx-h200", "nvlink/reduce_scatter_8.log", 16 * GIB, 362.9, 1),
    ("dgx-b200", "nvlink/all_reduce_8.log", 64 * MIB, 400.60, 1),  # §3.4 stas00 B200
    ("dgx-b200", "nvlink/all_reduce_8.log", GIB, 723.34, 1),
    ("dgx-b200", "nvlink/all_reduce_8.log", 16 * GIB, 845.67, 1),
    ("dgx-b200", "infiniband/all_reduce_16.log", 16 * GIB, 344.7, 1),  # §3.5 Together ring peaks
    ("dgx-b200", "infiniband/all_reduce_32.log", 16 * GIB, 334.8, 1),
    ("dgx-b200", "infiniband/all_reduce_64.log", 16 * GIB, 322.6, 1),
    ("dgx-b200", "infiniband/all_reduce_128.log", 16 * GIB, 306.3, 1),
    ("gb200-nvl72", "nvlink/all_reduce_4.log", 64 * MIB, 550.73, 1),  # §3.2 Azure GB200
    ("gb200-nvl72", "nvlink/all_reduce_4.log", 8 * GIB, 679.61, 1),
    ("gb200-nvl72", "nvlink/all_reduce_32.log", 8 * GIB, 680, 1),  # §3.1 GTC25 32-GPU NVLink
    ("gb200-nvl72", "infiniband/all_reduce_144.log", 9 * 16 * GIB, 344.7 / 8, 72),  # per NIC
    ("gb200-nvl72", "infiniband/all_reduce_288.log", 9 * 16 * GIB, 334.8 / 8, 72),
    ("vtrain-a100", "infiniband/nccl_16.log", 16 * GIB, 127.95 / 2, 1),  # Echo busbw x 800/1600
    ("vtrain-a100", "infiniband/nccl_32.log", 4 * GIB, 123.70 / 2, 1),
    ("vtrain-a100", "infiniband/nccl_64.log", 4 * GIB, 127.26 / 2, 1),
    ("vtrain-a100", "infiniband/nccl_128.log", 4 * GIB, 122.05 / 2, 1),
]


@pytest.fixture(scope="module", params=HARDWARE, ids=lambda p: p.stem)
def hw(request):
    return load_hardware(request.param)


DERIVED_ELSEWHERE = (
    "gemm.csv",
    "gemm_fp8.csv",
    "gemm_model.csv",
    "gemm_model_fp8.csv",
    "flash_attention.csv",
    "flash_attention_fp8.csv",
    "grouped_gemm.csv",
    "simumax_b200_bf16_ceperm.json",
    "SIMUMAX_LICENSE",
)
"""Written by derive_gemm_tables.py, derive_gemm_model.py, derive_flash_attention.py and
derive_grouped_gemm.py, not derive_library.py; SimuMax's B200 file and licence are copies
derive_gemm_tables.py reads."""


def _positive(seconds: float) -> bool:
    return seconds > 0 and math.isfinite(seconds)


def test_library_is_complete():
    assert {p.stem for p in HARDWARE} >= set(LIBRARY) | {"dgx-a100-80gb"}


def test_collective_and_gemm_times_are_positive(hw):
    net, g = cost_model(hw).network, hw.node.gpus
    times = {
        "all_reduce 8 GPUs": net.collective_s("all_reduce", MSG, 8, g),
        "all_reduce 2 nodes": net.collective_s("all_reduce", MSG, 2 * g, g),
        "reduce_scatter 8 GPUs": net.collective_s("reduce_scatter", MSG, 8, g),
        "all_gather 2 nodes": net.collective_s("all_gather", MSG, 2 * g, g),
        "p2p same node": net.p2p_s(MSG, same_node=True),
        "p2p across nodes": net.p2p_s(MSG, same_node=False),
        "gemm 8192^3": cost_model(hw).compute.gemm(Gemm(8192, 8192, 8192)).seconds,
    }
    assert all(_positive(t) for t in times.values()), times
    assert times["all_reduce 2 nodes"] > times["all_reduce 8 GPUs"]
    assert times["p2p across nodes"] > times["p2p same node"]


def test_faster_gpus_give_faster_gemms():
    def gemm_s(name):
        hw = load_hardware(REPO / "hardware" / f"{name}.yaml")
        return cost_model(hw).compute.gemm(Gemm(8192, 8192, 8192)).seconds

    a100, h100, h200, b200, gb200 = map(
        gemm_s, ("dgx-a100-80gb", "dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72")
    )
    assert a100 > h100 > b200 > gb200
    assert h200 == pytest.approx(h100, rel=0.05)


@pytest.mark.parametrize(
    "machine, rel, size, published, per",
    PUBLISHED,
    ids=[f"{m}/{r}@{s}" for m, r, s, _, _ in PUBLISHED],
)
def test_table_matches_published_busbw(machine, rel, size, published, per):
    table = read_nccl_log(CAL / machine / rel)
    busbw = size * BUSBW_FACTORS[table.op](table.ranks) / table.time_s(size) / 1e9 / per
    assert busbw == pytest.approx(published, rel=0.02)


def test_vtrain_small_messages_keep_echo_latency():
    table = read_nccl_log(CAL / "vtrain-a100" / "infiniband" / "nccl_16.log")
    assert table.time_s(KIB) == pytest.approx(34.66e-6, rel=0.02)  # Echo nccl_16.log, 1 KiB


def test_infiniband_tables_hold_whole_nodes(hw):
    for path in hw.calibration.infiniband:
        table = read_nccl_log(path)
        assert (
            table.op == "all_reduce"
            and table.ranks % hw.node.gpus == 0
            and table.ranks > hw.node.gpus
        )
    assert len(hw.calibration.infiniband) >= 2


def test_derived_logs_say_so():
    for path in CAL.glob("*/*/*.log"):
        if path.parent.parent.name in LIBRARY:
            head = path.read_text()[:4000]
            assert "# simsp: DERIVED" in head and "# source: " in head and "# method: " in head, (
                path
            )


@pytest.mark.parametrize("path", HARDWARE, ids=lambda p: p.stem)
def test_memory_cli_runs(path, capsys):
    assert (
        main(
            [
                "memory",
                str(REPO / "workloads" / "gpt3-175b.yaml"),
                "--hardware",
                str(path),
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["capacity_bytes"] == load_hardware(path).hbm_bytes


def _strip_kept_section(text: str, marker: str) -> str:
    return text[: text.index(marker)] if marker in text else text


def test_derive_library_reproduces_files(tmp_path):
    spec = importlib.util.spec_from_file_location("derive_library", CAL / "derive_library.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    date = re.search(
        r"^Derived on (\S+) by", (CAL / "dgx-h100" / "README.md").read_text(), re.M
    ).group(1)
    written = module.derive(SOURCES, tmp_path, date)
    expected = {
        p.relative_to(CAL)
        for m in LIBRARY
        for p in (CAL / m).rglob("*")
        if p.is_file() and p.name not in DERIVED_ELSEWHERE
    }
    assert {p.relative_to(tmp_path) for p in written} == expected
    for path in written:
        rel = path.relative_to(tmp_path)
        if rel.name == "README.md":
            shipped = _strip_kept_section((CAL / rel).read_text(), module.KEEP_SECTION)
            assert path.read_text() == shipped, rel
        else:
            assert path.read_bytes() == (CAL / rel).read_bytes(), rel


def test_derive_blackwell_ultra_reproduces_its_files(tmp_path):
    """dgx-b300's and gb300-nvl72's calibration folders are what derive_blackwell_ultra.py
    writes, byte for byte (from the B200 / GB200 tables, NVIDIA's GEMM model and the sourced
    figures typed into the script)."""
    needs("nvMatmulHeuristics")
    path = CAL / "derive_blackwell_ultra.py"
    spec = importlib.util.spec_from_file_location("derive_blackwell_ultra", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    date = re.search(
        r"^Derived on (\S+) by", (CAL / "dgx-b300" / "README.md").read_text(), re.M
    ).group(1)
    written = module.derive(tmp_path, date)
    expected = {
        p.relative_to(CAL)
        for m in ("dgx-b300", "gb300-nvl72")
        for p in (CAL / m).rglob("*")
        if p.is_file()
    }
    assert {p.relative_to(tmp_path) for p in written} == expected
    for p in written:
        assert p.read_bytes() == (CAL / p.relative_to(tmp_path)).read_bytes(), p
