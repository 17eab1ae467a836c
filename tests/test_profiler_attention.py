"""`simsp profile attention` -> FlashAttention CSV -> `simsp calibrate --attention` -> the cost
model.

Measures on the CPU (fp32, torch's CPU flash kernel) one tiny flash workload; the whole module is
skipped without torch.
"""

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.extras import needs

needs("torch")

import simsp.cli.main  # noqa: E402
from simsp.cost import CostModel  # noqa: E402
from simsp.io.config import load_hardware, load_workload  # noqa: E402
from simsp.measure.profiler import attention  # noqa: E402
from simsp.model.layer import build_layer  # noqa: E402
from simsp.tables import read_attention_table  # noqa: E402
from simsp.tables.attention import BACKWARD_FLOPS_FACTOR  # noqa: E402

pytestmark = pytest.mark.slow  # runs torch's attention on the CPU: about 17 s

ROOT = Path(__file__).resolve().parents[1]
BASE_HW = ROOT / "hardware" / "dgx-a100-80gb.yaml"
TINY = """\
name: tiny-flash
model: {layers: 2, hidden: 256, heads: 4, kv_heads: 2, seq_len: 128, vocab: 1024, attention: flash,
        mlp: swiglu, norm: rmsnorm, position: rope, bias: false, dropout: 0}
training: {global_batch: 2, micro_batch: 1}
parallel: {tp: 1}
"""
HINT = "simsp: error: the profiler needs torch: pip install -e '.[profile]'"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("workload") / "tiny.yaml"
    path.write_text(TINY)
    return path


@pytest.fixture(scope="module")
def profiled(tiny, tmp_path_factory) -> Path:
    """One attention profile of the tiny workload on the CPU."""
    out = tmp_path_factory.mktemp("profile") / "attention.csv"
    assert (
        simsp.cli.main.main(
            [
                "profile",
                "attention",
                str(tiny),
                "--device",
                "cpu",
                "--repeats",
                "3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


@pytest.fixture(scope="module")
def calibrated(profiled, tmp_path_factory) -> Path:
    """A hardware YAML whose calibration.flash_attention is the profile (copied beside it)."""
    out = tmp_path_factory.mktemp("hw") / "tiny-cpu.yaml"
    assert (
        simsp.cli.main.main(
            [
                "calibrate",
                "--hardware",
                str(BASE_HW),
                "--attention",
                str(profiled),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    return out


def _flash_op(path):
    w = load_workload(path)
    return w, next(
        op for op in build_layer(w.model, w.parallel, w.training.micro_batch) if op.attention
    )


def test_workload_cases_follow_the_flash_ops(tiny):
    w, op = _flash_op(tiny)
    (case,) = attention.workload_cases(w)
    assert (case.batch, case.heads, case.kv_heads, case.seq_len, case.head_dim, case.causal) == (
        1,
        4,
        2,
        128,
        64,
        True,
    )
    assert case.attention == op.attention
    tp2 = load_workload(tiny, {"parallel": {"tp": 2}})
    assert [(c.heads, c.kv_heads) for c in attention.workload_cases(tp2)] == [(2, 1)]
    assert (
        attention.workload_cases(load_workload(ROOT / "workloads" / "gpt3-175b.yaml")) == []
    )  # unfused
    grid = attention.grid_cases(gpu=False)
    assert {c.head_dim for c in grid} == {64, 128} and {c.causal for c in grid} == {True, False}
    assert {c.seq_len for c in grid} == set(attention.GRID_SEQ_CPU)
    assert {c.seq_len for c in attention.grid_cases(gpu=True)} == {512, 1024, 2048, 4096, 8192}


def test_profile_writes_fwd_and_bwd_rows(profiled, tiny):
    table = read_attention_table(profiled)
    w = load_workload(tiny)
    rows = {p.direction: p for p in table.points}
    assert set(rows) == {"fwd", "bwd"} and len(table.points) == 2
    for p in rows.values():
        assert p.tflops > 0
        assert (p.head_dim, p.seq_len, p.causal) == (w.model.head_size, w.model.seq_len, True)
        assert p.gpu.startswith("CPU") and p.kernel.startswith("sdpa-")
        assert p.source.startswith("simsp profile attention 20")
    header = profiled.read_text()
    for words in (
        "# versions: torch ",
        "# date: ",
        "# command: ",
        "CPU rates",
        "kv_heads=2",
        "enable_gqa",
    ):
        assert words in header


def test_calibrate_points_at_the_copied_table(calibrated, profiled):
    hw = load_hardware(calibrated)
    copy = (calibrated.parent / "calibration" / calibrated.stem / profiled.name).resolve()
    assert Path(hw.calibration.flash_attention) == copy
    assert copy.read_text() == profiled.read_text()
    base = load_hardware(BASE_HW).calibration
    assert (
        Path(hw.calibration.gemm).resolve() == Path(base.gemm).resolve()
    )  # the rest kept (rebased)
    assert "flash_attention: calibration/tiny-cpu/attention.csv" in calibrated.read_text()


def test_simulation_uses_the_flash_table(calibrated, tiny, capsys):
    capsys.readouterr()
    assert simsp.cli.main.main(["layer", str(tiny), "--hardware", str(calibrated), "--json"]) == 0
    ops = [
        op for op in json.loads(capsys.readouterr().out)["ops"] if op["kind"] == "flash_attention"
    ]
    assert ops and {op["source"] for op in ops} == {"flash table"}
    assert {op["phase"] for op in ops} >= {"forward", "backward"}
    assert simsp.cli.main.main(["run", str(tiny), "--hardware", str(calibrated), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["gemm_sources"].get("flash table", 0) >= 2


def test_measured_rate_round_trips_to_the_simulated_time(calibrated, profiled, tiny):
    hw = load_hardware(calibrated)
    compute = CostModel(hw).compute
    rates = {p.direction: p.tflops for p in read_attention_table(profiled).points}
    _, op = _flash_op(tiny)
    flops = op.attention.benchmark_flops
    fwd, bwd = (
        compute.flash_attention(op.attention),
        compute.flash_attention(op.attention, backward=True),
    )
    assert fwd.source == bwd.source == "flash table"
    assert fwd.seconds > compute.launch_s  # not the kernel-launch floor
    assert fwd.seconds == pytest.approx(flops / (rates["fwd"] * 1e12), rel=1e-9, abs=0)
    assert bwd.seconds == pytest.approx(
        BACKWARD_FLOPS_FACTOR * flops / (rates["bwd"] * 1e12), rel=1e-9, abs=0
    )


def test_calibrate_refuses_a_bad_attention_table_and_writes_nothing(tmp_path, capsys):
    bad, out = tmp_path / "bad.csv", tmp_path / "new.yaml"
    bad.write_text("gpu,kernel\nx,y\n")
    assert (
        simsp.cli.main.main(
            ["calibrate", "--hardware", str(BASE_HW), "--attention", str(bad), "--out", str(out)]
        )
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.csv" in err[0]
    assert not out.exists() and not (tmp_path / "calibration").exists()


def test_unfused_workload_without_grid_is_refused(tiny, tmp_path, capsys):
    out = tmp_path / "a.csv"
    assert (
        simsp.cli.main.main(
            [
                "profile",
                "attention",
                str(tiny),
                "--attention",
                "unfused",
                "--device",
                "cpu",
                "--out",
                str(out),
            ]
        )
        == 2
    )
    assert "--grid" in capsys.readouterr().err and not out.exists()


def test_no_torch_gives_the_profilers_one_line_error(tiny):
    code = textwrap.dedent(f"""
        import sys
        import simsp.cli.main, simsp.measure.profiler.attention, simsp.cli.profile
        assert "torch" not in sys.modules, "a profiler module imported torch at import time"
        sys.modules["torch"] = None  # as if torch were not installed
        sys.exit(simsp.cli.main.main(["profile", "attention", {str(tiny)!r}, "--out", "never.csv"]))
    """)
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines() == [HINT]
    assert not (ROOT / "never.csv").exists()


def test_capture_device_profiles_only_flash_workloads(tiny):
    spec = importlib.util.spec_from_file_location(
        "capture_device", ROOT / "hardware/calibration/capture_device.py"
    )
    capture = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(capture)
    assert (
        capture.flash_workloads(list(capture.PAPER_WORKLOADS)) == []
    )  # the paper's runs are unfused
    assert capture.flash_workloads([str(tiny), "workloads/gpt3-175b.yaml"]) == [str(tiny)]


def test_capture_device_adds_the_attention_table(tmp_path, tiny):
    from .test_profiler import capture_command

    r = subprocess.run(
        capture_command(tiny, tmp_path),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    folder = tmp_path / "hardware" / "calibration" / "t"
    hw = load_hardware(tmp_path / "hardware" / "t.yaml")
    assert Path(hw.calibration.flash_attention) == (folder / "attention.csv").resolve()
    assert {
        (p.head_dim, p.seq_len, p.direction)
        for p in read_attention_table(folder / "attention.csv").points
    } == {(64, 128, "fwd"), (64, 128, "bwd")}  # --no-grid: the workload's shape only
    readme = (folder / "README.md").read_text()
    assert "simsp profile attention " in readme and "--attention " in readme
