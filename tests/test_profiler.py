"""The optional profiler: GEMM and collective microbenchmarks -> calibration files -> cost model.

Tests that measure need torch (`tests/extras.needs` in each); the rest run without it. The
measuring ones run on the CPU: GEMMs in fp32, collectives over 2 gloo processes at 1..64 KiB.
"""

import argparse
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

import simsp.cli.main
from simsp.cli.profile_parsers import register
from simsp.cost import CostModel
from simsp.cost.layer_time import layer_time
from simsp.io.config import load_hardware, load_workload
from simsp.measure.profiler import shapes
from simsp.measure.profiler.collectives import LOG_NAMES, OPS
from simsp.model.layer import Gemm, build_layer
from simsp.spec.layout import layer_placement
from simsp.tables import read_gemm_table, read_nccl_log
from tests.extras import needs

pytestmark = pytest.mark.slow  # runs torch's profiler and gloo collectives: about 40 s

ROOT = Path(__file__).resolve().parents[1]
BASE_HW = ROOT / "hardware" / "dgx-a100-80gb.yaml"
TINY = """\
name: tiny
model: {layers: 2, hidden: 256, heads: 4, seq_len: 128, vocab: 1024}
training: {global_batch: 1, micro_batch: 1}
parallel: {tp: 2, pp: 1, dp: 1, sequence_parallel: true, recompute: selective, schedule: 1f1b}
"""
SIZES = [1024 * 2**i for i in range(7)]  # 1 KiB .. 64 KiB
_PARSER = simsp.cli.main.parser


def _parser():
    """simsp's parser with the profiler's commands, registered here if cli/main.py has not."""
    top = _PARSER()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    if "profile" not in sub.choices:
        register(sub)
    return top


@pytest.fixture
def cli(monkeypatch):
    """simsp.cli.main.main with the profiler's commands."""
    monkeypatch.setattr(simsp.cli.main, "parser", _parser)
    return simsp.cli.main.main


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("workload") / "tiny.yaml"
    path.write_text(TINY)
    return path


def _lookups(w, hw) -> set:
    """(m, n, k, batch, layout) of every GEMM the cost model looks up for one layer of w."""
    cost = CostModel(hw)
    seen, real = set(), cost.compute.gemm

    def record(g, layout="TN"):
        seen.add((g.m, g.n, g.k, g.batch, layout))
        return real(g, layout)

    cost.compute.gemm = record
    layer_time(
        build_layer(w.model, w.parallel, w.training.micro_batch),
        cost,
        w.parallel,
        layer_placement(w.parallel, hw.node.gpus),
    )
    return seen


# ---------------------------------------------------------------- without torch


def test_workload_shapes_are_exactly_the_cost_model_lookups(tiny, hardware):
    w = load_workload(tiny)
    keys = [s.key for s in shapes.workload_shapes(w)]
    assert len(keys) == len(set(keys))
    logits = {(128, 512, 256, 1, "TN"), (128, 256, 512, 1, "NN"), (512, 256, 128, 1, "NT")}
    assert logits <= set(keys)
    # every layer shape the cost model asks for, and nothing else besides the logits GEMM
    # (which here shares its shape with h->4h: vocab / tp = 4h / tp)
    assert set(keys) == _lookups(w, hardware) | logits


def test_import_rule_and_the_no_torch_hint(tiny):
    code = textwrap.dedent(f"""
        import sys
        import simsp.cli.main, simsp.cli.profile
        import simsp.measure.profiler.gemm, simsp.measure.profiler.collectives
        import simsp.measure.profiler.calibrate, simsp.measure.profiler.shapes
        assert "torch" not in sys.modules, "a profiler module imported torch at import time"
        sys.modules["torch"] = None  # as if torch were not installed
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from test_profiler import _parser
        simsp.cli.main.parser = _parser
        codes = [simsp.cli.main.main(["profile", "gemm", {str(tiny)!r}, "--out", "never.csv"]),
                 simsp.cli.main.main(["profile", "collectives", "--nproc", "2"])]
        sys.exit(0 if codes == [2, 2] else 1)
    """)
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert r.returncode == 0, r.stderr
    hint = "simsp: error: the profiler needs torch: pip install -e '.[profile]'"
    assert r.stderr.splitlines() == [hint, hint]
    assert not (ROOT / "never.csv").exists()


def test_calibrate_keeps_base_comments_copies_and_rebases(tmp_path, cli, capsys):
    logs_a, logs_b = tmp_path / "a", tmp_path / "b"
    for d in (logs_a, logs_b):
        d.mkdir()
        (d / "nccl_8.log").write_text(
            (BASE_HW.parent / "calibration/dgx-a100-80gb/nvlink/nccl_8.log").read_text()
        )
    gemm = tmp_path / "g.csv"
    gemm.write_text((BASE_HW.parent / "calibration/dgx-a100-80gb/gemm.csv").read_text())
    out = tmp_path / "hw" / "mine.yaml"
    rc = cli(
        [
            "calibrate",
            "--hardware",
            str(BASE_HW),
            "--gemm",
            str(gemm),
            "--gemm-model",
            "none",
            "--nvlink",
            str(logs_a / "nccl_8.log"),
            str(logs_b / "nccl_8.log"),
            "--append",
            "--name",
            "mine",
            "--out",
            str(out),
        ]
    )
    assert rc == 0, capsys.readouterr().err
    text = out.read_text()
    assert "# 8 GPUs on 6 NVSwitches" in text  # base comments kept
    data = yaml.safe_load(text)
    base = yaml.safe_load(BASE_HW.read_text())
    assert data.keys() == base.keys() and data["name"] == "mine" and data["gpu"] == base["gpu"]
    cal = data["calibration"]
    assert "gemm_model" not in cal
    assert cal["gemm"] == "calibration/mine/g.csv"
    assert cal["nvlink"][-2:] == [
        "calibration/mine/nvlink/nccl_8.log",
        "calibration/mine/nvlink/2/nccl_8.log",
    ]
    assert cal["nvlink"][0].endswith(
        "hardware/calibration/dgx-a100-80gb/nvlink/*"
    )  # base entry rebased
    hw = load_hardware(out)
    assert Path(hw.calibration.gemm) == (out.parent / "calibration/mine/g.csv").resolve()
    assert len(hw.calibration.nvlink) == 10 + 2
    same = [Path(p).resolve() for p in load_hardware(BASE_HW).calibration.infiniband]
    assert [Path(p).resolve() for p in hw.calibration.infiniband] == same


def test_calibrate_rewrites_a_flow_style_base_without_its_comments(tmp_path, cli):
    data = yaml.safe_load(BASE_HW.read_text())
    folder = BASE_HW.parent
    data["calibration"] = {
        "gemm": str(folder / "calibration/dgx-a100-80gb/gemm.csv"),
        "nvlink": ["x/*"],
    }
    base = tmp_path / "flow.yaml"
    base.write_text(yaml.safe_dump(data, default_flow_style=True))  # the whole file as one {...}
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "nccl_8.log").write_text(
        (folder / "calibration/dgx-a100-80gb/nvlink/nccl_8.log").read_text()
    )
    out = tmp_path / "sub" / "new.yaml"
    assert (
        cli(
            [
                "calibrate",
                "--hardware",
                str(base),
                "--infiniband",
                str(folder / "calibration/dgx-a100-80gb/infiniband/nccl_16.log"),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    cal = yaml.safe_load(out.read_text())["calibration"]
    assert cal == {
        "gemm": data["calibration"]["gemm"],
        "nvlink": ["../x/*"],
        "infiniband": ["calibration/new/infiniband/nccl_16.log"],
    }
    assert len(load_hardware(out).calibration.nvlink) == 1


def test_calibrate_refuses_a_bad_log_and_writes_nothing(tmp_path, cli, capsys):
    bad = tmp_path / "bad.log"
    bad.write_text("not a log\n")
    out = tmp_path / "new.yaml"
    assert (
        cli(["calibrate", "--hardware", str(BASE_HW), "--nvlink", str(bad), "--out", str(out)]) == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.log" in err[0]
    assert not out.exists()


# ---------------------------------------------------------------- measuring (torch, CPU)


@pytest.fixture(scope="module")
def measured(tiny, tmp_path_factory):
    """One GEMM profile of the tiny workload and one 2-rank gloo sweep, shared by the tests
    below."""
    needs("torch")
    folder = tmp_path_factory.mktemp("profile")
    main = simsp.cli.main.main
    saved, simsp.cli.main.parser = simsp.cli.main.parser, _parser
    try:
        rc_gemm = main(
            ["profile", "gemm", str(tiny), "--out", str(folder / "gemm.csv"), "--repeats", "2"]
        )
        rc_coll = main(
            [
                "profile",
                "collectives",
                "--nproc",
                "2",
                "--backend",
                "gloo",
                "--out",
                str(folder / "logs"),
                "--min-bytes",
                "1K",
                "--max-bytes",
                "64K",
                "--iters",
                "3",
            ]
        )
    finally:
        simsp.cli.main.parser = saved
    assert (rc_gemm, rc_coll) == (0, 0)
    return folder


def test_gloo_collectives_read_back(measured):
    needs("torch")
    for op in OPS:
        path = measured / "logs" / LOG_NAMES[op]
        table = read_nccl_log(path)
        assert (table.op, table.ranks, list(table.sizes_bytes)) == (op, 2, SIZES)
        assert all(t > 0 for t in table.times_s)
        header = path.read_text()
        assert "# backend: gloo" in header and "# world size: 2" in header and "# date: " in header
        assert "# method: " in header


def test_gemm_profile_reads_back(measured, tiny):
    needs("torch")
    table = read_gemm_table(measured / "gemm.csv")
    expected = {s.key for s in shapes.workload_shapes(load_workload(tiny))}
    assert {(p.m, p.n, p.k, p.batch, p.layout) for p in table.points} == expected
    assert table.dtype == "fp32" and table.device.startswith("CPU")
    header = (measured / "gemm.csv").read_text()
    for words in (
        "# versions: torch ",
        "CUDA",
        "# date: ",
        "# command: simsp profile gemm",
        "CPU rates",
    ):
        assert words in header


def test_profile_calibrate_cost_model_has_no_roofline(measured, tiny, tmp_path, cli, capsys):
    needs("torch")
    out = tmp_path / "hw" / "tiny-cpu.yaml"
    logs = [str(measured / "logs" / LOG_NAMES[op]) for op in OPS]
    rc = cli(
        [
            "calibrate",
            "--hardware",
            str(BASE_HW),
            "--gemm",
            str(measured / "gemm.csv"),
            "--nvlink",
            *logs,
            "--out",
            str(out),
            "--workload",
            str(tiny),
        ]
    )
    stdout = capsys.readouterr().out
    assert rc == 0
    assert "per-layer forward ms" in stdout and "per-layer backward ms" in stdout
    hw = load_hardware(out)
    assert Path(hw.calibration.gemm).parent == (out.parent / "calibration" / "tiny-cpu").resolve()
    w = load_workload(tiny)
    lt = layer_time(
        build_layer(w.model, w.parallel, w.training.micro_batch),
        CostModel(hw),
        w.parallel,
        layer_placement(w.parallel, hw.node.gpus),
    )
    gemms = [e for e in lt.entries if e.kind in ("gemm", "attention_gemm")]
    assert (
        len(gemms) == 4 * 3 + 2 * 3 + 2
    )  # linears x (fwd, dgrad, wgrad); attention fwd, 2 grads; recompute
    assert not [e for e in lt.entries if e.source == "roofline"]
    # each look-up answers the measured rate itself
    table, compute = read_gemm_table(hw.calibration.gemm), CostModel(hw).compute
    for m, n, k, batch, layout in _lookups(w, hw):
        g = Gemm(m, n, k, batch)
        assert g.flops / compute.gemm(g, layout).seconds / 1e12 == pytest.approx(
            table.lookup_tflops(m, n, k, batch, layout), rel=1e-6
        )


def test_host_profile_prints_calibration_lines_that_load(tmp_path, capsys):
    needs("torch")
    from simsp.cli.main import main

    assert main(["profile", "host", "--repeats", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("# measured by `")
    values = dict(line.split(": ") for line in lines if not line.startswith("#"))
    assert set(values) == {
        "host_forward_us",
        "host_backward_us",
        "host_recompute_full_us",
        "host_recompute_selective_us",
    }
    assert float(values["host_forward_us"]) > 0 and float(values["host_backward_us"]) > 0
    base = "".join(
        line
        for line in (ROOT / "hardware" / "dgx-a100-80gb.yaml").read_text().splitlines(True)
        if not line.lstrip().startswith("host_")
    )  # the shipped values, replaced by ours
    hw = tmp_path / "hw.yaml"
    hw.write_text(
        base.replace(
            "calibration:\n", "calibration:\n" + "".join(f"  {line}\n" for line in lines), 1
        ).replace("calibration/", str(ROOT / "hardware" / "calibration") + "/")
    )
    from simsp.io.config import load_hardware

    assert load_hardware(hw).calibration.host_forward_us == float(values["host_forward_us"])


def test_gemm_profile_of_several_workloads_covers_each(tmp_path, tiny, cli):
    needs("torch")
    other = tmp_path / "other.yaml"
    other.write_text(
        TINY.replace("hidden: 256", "hidden: 128")
        .replace("tp: 2", "tp: 1")
        .replace("sequence_parallel: true", "sequence_parallel: false")
    )
    out = tmp_path / "g.csv"
    assert (
        cli(
            [
                "profile",
                "gemm",
                str(tiny),
                "--add-workload",
                str(other),
                "--out",
                str(out),
                "--repeats",
                "1",
            ]
        )
        == 0
    )
    table = {(p.m, p.n, p.k, p.batch, p.layout) for p in read_gemm_table(out).points}
    wanted = [
        sh.key for path in (tiny, other) for sh in shapes.workload_shapes(load_workload(path))
    ]
    assert set(wanted) == table
    header = [line for line in out.read_text().splitlines() if line.startswith("# workload: ")]
    assert [h.split(":")[1].strip() for h in header] == [
        "tiny",
        "tiny",
    ]  # both runs named (same name here)
    assert "hidden=256" in header[0] and "hidden=128" in header[1]


HOST_FILE = """\
# measured by `simsp profile host --device cuda` on NVIDIA H200, torch 2.11.0, CUDA 13.0, \
2026-11-29 12:00:00 UTC
host_forward_us: 900.5
host_backward_us: 1500
host_recompute_full_us: 950.0
host_recompute_selective_us: 300.0
"""


ADAM_FILE = """\
# measured by `simsp profile optimizer --device cuda` on NVIDIA H200, torch 2.11.0, CUDA 13.0, \
2026-11-29 12:00:00 UTC
adam_gbps: 1500
"""


def test_calibrate_replaces_measured_values_and_their_provenance(tmp_path, cli):
    host, adam, out = tmp_path / "host.yaml", tmp_path / "adam.yaml", tmp_path / "new.yaml"
    host.write_text(HOST_FILE)
    adam.write_text(ADAM_FILE)
    assert (
        cli(
            [
                "calibrate",
                "--hardware",
                str(BASE_HW),
                "--host",
                str(host),
                "--optimizer",
                str(adam),
                "--out",
                str(out),
            ]
        )
        == 0
    )
    cal = load_hardware(out).calibration
    assert (
        cal.host_forward_us,
        cal.host_backward_us,
        cal.host_recompute_full_us,
        cal.host_recompute_selective_us,
        cal.adam_gbps,
    ) == (900.5, 1500.0, 950.0, 300.0, 1500.0)
    text = out.read_text()
    assert (
        text.count("# measured by `simsp profile host") == 1 and text.count("on NVIDIA H200") == 2
    )
    assert text.count("adam_gbps:") == 1
    assert (
        "no CUDA kernel-launch" not in text and "BERT-345M" not in text
    )  # the old provenance went
    assert "# Host (framework) floor of one layer" in text  # the base file's explanations stay
    assert "# Fused Adam update, 28 bytes a parameter" in text


@pytest.mark.parametrize(
    "option, body, key",
    [
        ("--host", "host_forward_us: -3\n", "host_forward_us"),
        ("--host", "host_fwd_us: 3\n", "host_fwd_us"),
        ("--host", "host_backward_us: fast\n", "host_backward_us"),
        ("--host", "- 1\n", "file"),
        ("--optimizer", "adam_gbps: -3\n", "adam_gbps"),
        ("--optimizer", "host_forward_us: 3\n", "host_forward_us"),
        ("--optimizer", "adam_gbps: fast\n", "adam_gbps"),
        ("--optimizer", "- 1\n", "file"),
    ],
)
def test_calibrate_refuses_a_bad_measured_file_and_writes_nothing(
    tmp_path, cli, capsys, option, body, key
):
    measured = tmp_path / "measured.yaml"
    measured.write_text(body)
    out = tmp_path / "new.yaml"
    assert (
        cli(["calibrate", "--hardware", str(BASE_HW), option, str(measured), "--out", str(out)])
        == 2
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "measured.yaml" in err[0] and key in err[0]
    assert not out.exists() and not (tmp_path / "calibration").exists()


def test_host_profile_out_file_feeds_calibrate(tmp_path, cli, capsys):
    needs("torch")
    host, out = tmp_path / "host.yaml", tmp_path / "new.yaml"
    assert cli(["profile", "host", "--repeats", "20", "--out", str(host)]) == 0
    assert capsys.readouterr().out == host.read_text()
    assert (
        "no CUDA kernel-launch" in host.read_text()
    )  # measured on the CPU: says it underestimates
    assert (
        cli(["calibrate", "--hardware", str(BASE_HW), "--host", str(host), "--out", str(out)]) == 0
    )
    values = yaml.safe_load(host.read_text())
    assert load_hardware(out).calibration.host_forward_us == values["host_forward_us"]


def test_optimizer_profile_out_file_feeds_calibrate(tmp_path, cli, capsys):
    needs("torch")
    adam, out = tmp_path / "adam.yaml", tmp_path / "new.yaml"
    assert (
        cli(
            [
                "profile",
                "optimizer",
                "--params",
                "2e6",
                "--hidden",
                "256",
                "--repeats",
                "1",
                "--out",
                str(adam),
            ]
        )
        == 0
    )
    text = adam.read_text()
    assert capsys.readouterr().out == text
    assert "fp32 parameters in " in text and "not a GPU's" in text  # what ran, and the CPU caveat
    values = yaml.safe_load(text)
    assert set(values) == {"adam_gbps"} and values["adam_gbps"] > 0
    assert (
        cli(["calibrate", "--hardware", str(BASE_HW), "--optimizer", str(adam), "--out", str(out)])
        == 0
    )
    assert load_hardware(out).calibration.adam_gbps == values["adam_gbps"]


@pytest.mark.parametrize("what", ["host", "optimizer"])
def test_time_profiles_refuse_a_device_this_machine_lacks(cli, capsys, what):
    torch = needs("torch")
    wanted = f"cuda:{torch.cuda.device_count()}" if torch.cuda.is_available() else "cuda"
    assert cli(["profile", what, "--device", wanted]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--device" in err[0] and wanted in err[0]


@pytest.mark.parametrize("flag, value", [("--params", "0"), ("--hidden", "0"), ("--repeats", "0")])
def test_optimizer_profile_refuses_nonpositive_sizes(cli, capsys, flag, value):
    needs("torch")
    assert cli(["profile", "optimizer", flag, value]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]


@pytest.mark.parametrize("bare", [False, True], ids=["installed", "bare-gpu-image"])
def test_capture_device_script_writes_a_loading_hardware_file(tmp_path, tiny, bare):
    """Also as on the GPU machines' image: torch, numpy and pyyaml, but no simpy or plotly."""
    needs("torch")
    env = dict(os.environ)
    if bare:
        (tmp_path / "block").mkdir()
        for module in ("simpy", "plotly"):
            (tmp_path / "block" / f"{module}.py").write_text(
                f"raise ImportError('no {module} on this image')\n"
            )
        env["PYTHONPATH"] = str(tmp_path / "block")
    r = subprocess.run(
        capture_command(tiny, tmp_path) + ["--tar", str(tmp_path / "t.tgz")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert r.returncode == 0, r.stderr
    hw = load_hardware(tmp_path / "hardware" / "t.yaml")
    folder = tmp_path / "hardware" / "calibration" / "t"
    assert Path(hw.calibration.gemm) == (folder / "gemm.csv").resolve()
    # the MoE workload's routed experts: grouped GEMMs timed, written and wired in
    assert Path(hw.calibration.grouped_gemm) == (folder / "grouped_gemm.csv").resolve()
    assert (
        hw.calibration.host_forward_us
        == yaml.safe_load((folder / "host.yaml").read_text())["host_forward_us"]
    )
    assert (
        hw.calibration.adam_gbps
        == yaml.safe_load((folder / "adam.yaml").read_text())["adam_gbps"]
        > 0
    )
    memory = yaml.safe_load((folder / "memory.yaml").read_text())
    assert hw.memory_bound.unfused_cross_entropy_gbps == memory["unfused_cross_entropy_gbps"] > 0
    assert hw.memory_bound.efficiency_by_bytes[0][0] == 0.0
    readme = (folder / "README.md").read_text()
    assert (
        readme.count("simsp profile ") == 4
        and "simsp calibrate " in readme
        and "No collective logs" in readme
    )
    assert ("not simulated here: no simpy" in readme) == bare and ("iteration s" in readme) != bare
    import tarfile

    with tarfile.open(tmp_path / "t.tgz") as tar:
        names = set(tar.getnames())
    assert {
        "hardware/t.yaml",
        "hardware/calibration/t/gemm.csv",
        "hardware/calibration/t/host.yaml",
        "hardware/calibration/t/adam.yaml",
        "hardware/calibration/t/memory.yaml",
    } <= names


TINY_MOE = ROOT / "tests" / "data" / "tiny-moe.yaml"
"""A mixture of experts small enough to time on a CPU: 8 experts of 128, top-2, ep 2."""


def capture_command(workload, root) -> list[str]:
    """capture_device.py on the CPU, quickly: one repeat, a small Adam, no grid."""
    script = ROOT / "hardware" / "calibration" / "capture_device.py"
    return [
        sys.executable,
        str(script),
        "--base",
        "hardware/hgx-h200.yaml",
        "--workload",
        str(workload),
        "--device",
        "cpu",
        "--no-grid",
        "--repeats",
        "1",
        "--host-repeats",
        "10",
        "--adam-params",
        "1e6",
        "--slug",
        "t",
        "--root",
        str(root),
        "--moe-workload",
        str(TINY_MOE),
    ]


def test_an_optimizer_rate_past_the_gpus_hbm_is_refused(tmp_path, cli):
    """3500 GB/s of Adam traffic on an A100 (HBM 2039 GB/s) is no measurement: exit 2."""
    adam, out = tmp_path / "adam.yaml", tmp_path / "new.yaml"
    adam.write_text(ADAM_FILE.replace("adam_gbps: 1500", "adam_gbps: 3500"))
    argv = ["calibrate", "--hardware", str(BASE_HW), "--optimizer", str(adam), "--out", str(out)]
    assert cli(argv) == 2
    assert not out.exists()
