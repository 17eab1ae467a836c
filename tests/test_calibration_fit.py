"""`simsp calibrate --runs`: a user's measured runs -> fitted physical parameters, with the
held-out error beside the in-sample and uncalibrated ones (measure/runs.py, measure/fit.py).

The synthetic runs are simsp's own predictions under known parameter values, so the fit must
give those values back; the vTrain runs (tests/data/vtrain_multi_runs.csv) are read and
checked here, and fitted in full by the command the README shows (about two minutes).
"""

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from simsp.cli.main import main
from simsp.cost import CostModel
from simsp.errors import InputError
from simsp.io.config import load_hardware
from simsp.measure import fit as F
from simsp.measure.runs import read_runs
from simsp.model.layer import Gemm
from simsp.sim.closed_form import estimate
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import TrainingSpec, Workload

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "hardware" / "vtrain-a100.yaml"
TRUTH = {"host_forward_us": 800.0, "collective_latency_us": 60.0, "gemm_table_fraction": 0.8}
COLUMNS = "name,layers,hidden,heads,seq_len,vocab,global_batch,micro_batch,tp,pp,dp,recompute"
# Host-bound small models, GEMM-bound big ones, and TP / PP / DP runs whose collectives and
# sends carry the latency: each parameter moves some of them.
CONFIGS = [
    (4, 512, 8, 256, 32000, 8, 1, 1, 1, 1, "none"),
    (4, 1024, 16, 512, 32000, 4, 1, 1, 1, 1, "none"),
    (8, 4096, 32, 2048, 32000, 8, 2, 1, 1, 1, "none"),
    (8, 8192, 64, 2048, 32000, 4, 1, 8, 1, 1, "none"),
    (8, 2048, 16, 1024, 32000, 64, 1, 8, 4, 1, "none"),
    (16, 4096, 32, 2048, 32000, 64, 1, 8, 4, 2, "none"),
    (8, 2048, 16, 1024, 32000, 32, 1, 2, 1, 8, "none"),
    (8, 4096, 32, 2048, 32000, 16, 1, 4, 2, 1, "full"),
]


def _workload(cfg) -> Workload:
    L, h, a, s, v, gb, mb, tp, pp, dp, rc = cfg
    return validate(
        Workload(
            "synthetic",
            ModelSpec(L, h, a, s, v),
            TrainingSpec(gb, mb),
            ParallelSpec(tp=tp, pp=pp, dp=dp, recompute=rc),
        ),
        "synthetic",
    )


def _truth_hw():
    hw = load_hardware(BASE)
    return F.calibrated(hw, F.PARAMETERS, [TRUTH[p.name] for p in F.PARAMETERS])


def write_runs(path: Path, configs=CONFIGS) -> Path:
    """Runs 'measured' as simsp predicts them under TRUTH (repr: the floats round-trip)."""
    hw = _truth_hw()
    lines = [COLUMNS + ",iteration_s"]
    for i, cfg in enumerate(configs):
        t = estimate(_workload(cfg), hw).iteration_time_s
        lines.append(f"run-{i}," + ",".join(map(str, cfg)) + f",{t!r}")
    path.write_text("\n".join(lines) + "\n")
    return path


def calibrate(tmp_path, capsys, runs, out, *extra) -> tuple[int, str, str]:
    rc = main(
        [
            "calibrate",
            "--runs",
            str(runs),
            "--hardware",
            str(BASE),
            "--out",
            str(out),
            *extra,
        ]
    )
    captured = capsys.readouterr()
    return rc, captured.out, captured.err


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """One fit of the synthetic runs, 2 folds: (summary JSON, fitted file)."""
    folder = tmp_path_factory.mktemp("fit")
    runs = write_runs(folder / "runs.csv")
    out = folder / "fitted.yaml"
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "calibrate", "--runs", str(runs), "--hardware", str(BASE)]
        + ["--out", str(out), "--folds", "2", "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), out


# ---------------------------------------------------------------- the fit


def test_fit_recovers_the_parameters_the_runs_were_made_with(fitted):
    summary, _ = fitted
    got = {p["name"]: p["fitted"] for p in summary["parameters"]}
    assert got["host_forward_us"] == pytest.approx(TRUTH["host_forward_us"], rel=0.01)
    assert got["collective_latency_us"] == pytest.approx(TRUTH["collective_latency_us"], rel=0.02)
    assert got["gemm_table_fraction"] == pytest.approx(TRUTH["gemm_table_fraction"], rel=0.005)
    assert all(p["constrained"] for p in summary["parameters"])
    m = summary["mape"]
    assert m["uncalibrated"] > 0.1  # the base file is far from the "cluster"
    assert m["in_sample"] < 1e-3 and m["held_out"] < 1e-3
    assert len(summary["fold_fits"]) == 2
    assert sum(f["held_out_runs"] for f in summary["fold_fits"]) == len(CONFIGS)


def test_fitted_file_is_marked_and_drives_simsp_run(fitted, tmp_path):
    summary, out = fitted
    text = out.read_text()
    assert "FITTED by `simsp calibrate --runs" in text and "held-out" in text
    assert "5-fold" not in text and "2-fold cross-validation" in text
    hw = load_hardware(out)
    assert hw.calibration.fitted
    assert hw.calibration.collective_latency_us == summary["parameters"][1]["fitted"]
    assert hw.calibration.host_backward_us > load_hardware(BASE).calibration.host_backward_us
    wl = tmp_path / "w.yaml"
    wl.write_text(
        "name: w\nmodel: {layers: 8, hidden: 2048, heads: 16, seq_len: 1024, vocab: 32000}\n"
        "training: {global_batch: 32, micro_batch: 1}\nparallel: {tp: 2, pp: 1, dp: 8}\n"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "run", str(wl), "--hardware", str(out), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    expected = estimate(_workload(CONFIGS[6]), hw).iteration_time_s
    assert json.loads(proc.stdout)["iteration_time_s"] == pytest.approx(expected, rel=1e-9)


def test_validation_refuses_a_fitted_file(fitted):
    from simsp.validate import runner

    _, out = fitted
    with pytest.raises(InputError, match="calibration.fitted"):
        runner.set_hardware(str(out))


def test_validate_takes_no_hardware_file():
    """validate reads only the library's files (validate/cases.py), never one a user names."""
    from simsp.cli.main import parser

    top = parser()
    sub = next(a for a in top._actions if a.__class__.__name__ == "_SubParsersAction")
    options = {o for a in sub.choices["validate"]._actions for o in a.option_strings}
    assert "--hardware" not in options


def test_two_runs_write_the_same_bytes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    runs = write_runs(tmp_path / "runs.csv", CONFIGS[2:5])
    outputs = []
    for i in range(2):
        out = tmp_path / f"fitted{i}.yaml"
        rc, stdout, err = calibrate(
            tmp_path, capsys, runs, out, "--fit", "gemm_table_fraction", "--folds", "3", "--json"
        )
        assert rc == 0, err
        name = out.name
        outputs.append((stdout.replace(name, "X"), out.read_bytes().replace(name.encode(), b"X")))
    assert outputs[0] == outputs[1]
    # the fraction alone also takes up the host and latency the runs were made with
    assert json.loads(outputs[0][0])["parameters"][0]["fitted"] == pytest.approx(0.8, abs=0.02)


def test_a_parameter_the_runs_do_not_move_keeps_its_base_value(tmp_path):
    """GEMM-bound single-GPU runs say nothing about collectives: latency stays at its base 0."""
    runs = read_runs(write_runs(tmp_path / "runs.csv", CONFIGS[2:3] * 2))
    hw = load_hardware(BASE)
    params, _ = F.usable(("collective_latency_us", "gemm_table_fraction"), hw, True)
    fit = F.cross_validated_fit(runs, hw, params, (), 2)
    assert fit.values[0] == 0.0 and not fit.constrained[0]
    assert fit.values[1] == pytest.approx(0.8, rel=0.005)


def test_folds_are_assigned_in_file_order():
    assert F.folds(7, 3) == (0, 1, 2, 0, 1, 2, 0)


def test_host_time_needs_a_profiled_floor(tmp_path):
    hw = load_hardware(BASE)
    bare = dataclasses.replace(
        hw, calibration=dataclasses.replace(hw.calibration, host_forward_us=0.0)
    )
    params, skipped = F.usable(tuple(F.BY_NAME), bare, asked=False)
    assert [p.name for p in params] == ["collective_latency_us", "gemm_table_fraction"]
    assert skipped[0][0] == "host_forward_us" and "simsp profile host" in skipped[0][1]
    with pytest.raises(InputError, match="profiled host floor"):
        F.usable(("host_forward_us",), bare, asked=True)


# ---------------------------------------------------------------- the two new cost scalars


def test_collective_latency_adds_once_per_collective_and_send():
    hw = load_hardware(BASE)
    late = dataclasses.replace(
        hw, calibration=dataclasses.replace(hw.calibration, collective_latency_us=25.0)
    )
    a, b = CostModel(hw).network, CostModel(late).network
    for args in (("all_reduce", 1e6, 8, 8), ("all_gather", 1e6, 16, 8), ("all_reduce", 1e8, 4, 2)):
        assert b.collective_s(*args) - a.collective_s(*args) == pytest.approx(25e-6)
    assert b.p2p_s(1e6, False) - a.p2p_s(1e6, False) == pytest.approx(25e-6)
    assert b.collective_s("all_reduce", 1e6, 1, 1) == 0.0  # no group, no call


def test_gemm_table_fraction_scales_the_table_rates():
    hw = load_hardware(BASE)
    slow = dataclasses.replace(
        hw, calibration=dataclasses.replace(hw.calibration, gemm_table_fraction=0.5)
    )
    g = Gemm(2048, 4096, 4096)
    a, b = CostModel(hw).compute.gemm(g), CostModel(slow).compute.gemm(g)
    assert a.source == b.source == "table"
    assert b.seconds == pytest.approx(2 * a.seconds)


# ---------------------------------------------------------------- the runs file


def test_vtrain_runs_file_is_the_validation_set_as_a_user_writes_it():
    from simsp.validate.cases import vtrain_cases

    runs = read_runs(ROOT / "tests" / "data" / "vtrain_multi_runs.csv")
    cases, _ = vtrain_cases("multi")
    assert len(runs) == len(cases) == 109
    for r, c in zip(runs, cases, strict=True):
        assert dataclasses.replace(r.workload, name="") == dataclasses.replace(c.workload, name="")
        assert r.measured_s == pytest.approx(c.measured_s, rel=1e-6)


def test_a_row_may_name_a_workload_yaml_and_override_it(tmp_path):
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "base.yaml").write_text(
        "name: b\nmodel: {layers: 8, hidden: 2048, heads: 16, seq_len: 1024, vocab: 32000}\n"
        "training: {global_batch: 32, micro_batch: 1}\nparallel: {tp: 2, pp: 1, dp: 8}\n"
    )
    (tmp_path / "runs.csv").write_text(
        "# my cluster\nname,workload,tp,dp,sp,iteration_s\na,w/base.yaml,,,,1.5\n"
        "b,w/base.yaml,4,4,true,2\n"
    )
    a, b = read_runs(tmp_path / "runs.csv")
    assert (a.workload.parallel.tp, a.workload.parallel.dp, a.measured_s) == (2, 8, 1.5)
    assert (b.workload.parallel.tp, b.workload.parallel.dp) == (4, 4)
    assert b.workload.parallel.sequence_parallel and b.name == "b" and b.row == 2


BAD = [
    ("missing column", "name,layers\na,4\n", ["header (line 1)", "iteration_s", "missing"]),
    (
        "unknown column",
        "tpp,iteration_s\n8,1.0\n",
        ["header (line 1)", "column='tpp'", "unknown column"],
    ),
    (
        "bad number",
        COLUMNS + ",iteration_s\n# c\nr,4,512,8,256,32000,8,1,1,1,1,none,fast\n",
        ["row 1 (line 3)", "iteration_s='fast'", "positive number of seconds"],
    ),
    (
        "negative time",
        COLUMNS + ",iteration_s\nr,4,512,8,256,32000,8,1,1,1,1,none,-2\n",
        ["row 1", "iteration_s='-2'", "positive"],
    ),
    (
        "bad integer",
        COLUMNS + ",iteration_s\nr,4,512,8,256,32000,8,1,eight,1,1,none,1.0\n",
        ["row 1", "tp='eight'", "integer"],
    ),
    (
        "bad rule",
        COLUMNS + ",iteration_s\nr,4,512,8,256,32000,8,1,3,1,1,none,1.0\n",
        ["row 1", "tp=3", "heads"],
    ),
    (
        "unknown workload",
        "workload,iteration_s\nnope.yaml,1.0\n",
        ["row 1", "workload='nope.yaml'", "no such workload file"],
    ),
    (
        "missing key",
        "layers,hidden,heads,iteration_s\n4,512,8,1.0\n",
        ["row 1", "seq_len", "required", "workload column"],
    ),
    ("cell count", "layers,iteration_s\n4,1.0,7\n", ["row 1", "cells=3", "2 columns"]),
    ("bad switch", "sp,iteration_s\nmaybe,1.0\n", ["row 1", "sp='maybe'", "true or false"]),
    ("no rows", "# nothing\niteration_s\n", ["rows=0", "no run"]),
]


@pytest.mark.parametrize("name,text,words", BAD, ids=[b[0] for b in BAD])
def test_a_malformed_runs_file_is_one_line_exit_2(tmp_path, capsys, name, text, words):
    runs = tmp_path / "runs.csv"
    runs.write_text(text)
    out = tmp_path / "fitted.yaml"
    rc, _, err = calibrate(tmp_path, capsys, runs, out)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1, err
    assert str(runs) in lines[0] and "Traceback" not in err
    for word in words:
        assert word in lines[0], (word, lines[0])
    assert not out.exists()


def test_a_real_process_prints_one_line_for_a_bad_runs_file(tmp_path):
    runs = tmp_path / "runs.csv"
    runs.write_text("workload,iteration_s\nnope.yaml,1.0\n")
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "calibrate", "--runs", str(runs), "--hardware", str(BASE)]
        + ["--out", str(tmp_path / "f.yaml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


# ---------------------------------------------------------------- where a fitted file may go


def test_fitted_values_never_overwrite_the_base_or_a_library_file(tmp_path, capsys):
    runs = write_runs(tmp_path / "runs.csv", CONFIGS[:2])
    before = BASE.read_bytes()
    rc, _, err = calibrate(tmp_path, capsys, runs, BASE)
    assert rc == 2 and "is the base file" in err
    copy = tmp_path / "base.yaml"
    copy.write_text(
        BASE.read_text().replace("calibration/", str(BASE.parent / "calibration") + "/")
    )
    rc = main(["calibrate", "--runs", str(runs), "--hardware", str(copy), "--out", str(BASE)])
    assert rc == 2 and "shipped hardware file" in capsys.readouterr().err
    assert BASE.read_bytes() == before


def test_runs_are_not_combined_with_measured_files(tmp_path, capsys):
    runs = write_runs(tmp_path / "runs.csv", CONFIGS[:2])
    rc, _, err = calibrate(tmp_path, capsys, runs, tmp_path / "f.yaml", "--gemm", "x.csv")
    assert rc == 2 and "--gemm" in err and "not combined with --runs" in err


def test_folds_must_fit_the_runs(tmp_path, capsys):
    runs = write_runs(tmp_path / "runs.csv", CONFIGS[:2])
    rc, _, err = calibrate(tmp_path, capsys, runs, tmp_path / "f.yaml", "--folds", "5")
    assert rc == 2 and "folds=5" in err and "[2, 2]" in err


def test_a_refit_of_a_fitted_file_keeps_one_fitted_block(fitted, tmp_path, capsys):
    _, first = fitted
    runs = write_runs(tmp_path / "runs.csv", CONFIGS[2:5])
    out = tmp_path / "refit.yaml"
    rc = main(
        ["calibrate", "--runs", str(runs), "--hardware", str(first), "--out", str(out)]
        + ["--fit", "gemm_table_fraction", "--folds", "3"]
    )
    assert rc == 0, capsys.readouterr().err
    text = out.read_text()
    lines = [line.strip() for line in text.splitlines()]
    assert text.count("# FITTED by") == 1 and lines.count("fitted: true") == 1
    assert sum(line.startswith("gemm_table_fraction:") for line in lines) == 1
    assert load_hardware(out).calibration.collective_latency_us == pytest.approx(60.0, rel=0.02)


def test_a_runs_file_is_bounded_in_line_length_and_rows(tmp_path, monkeypatch):
    """Issue 32 class 6: a cell past csv's 131,072 characters was a _csv.Error traceback, a
    million-row file ran on; both are one line naming the file."""
    from simsp.measure import runs

    long = tmp_path / "long.csv"
    long.write_text("name,iteration_s,layers\nx,1.0," + "9" * 200_000 + "\n")
    with pytest.raises(InputError, match="line 2.*over 10,000 characters"):
        read_runs(long)
    monkeypatch.setattr(runs, "MAX_RUNS", 3)
    many = tmp_path / "many.csv"
    row = "1.0,2,64,4,128,256,8,1\n"
    many.write_text(
        "iteration_s,layers,hidden,heads,seq_len,vocab,global_batch,micro_batch\n" + row * 4
    )
    with pytest.raises(InputError, match="at most 3 runs"):
        read_runs(many)


def test_a_fit_estimated_past_max_seconds_is_refused_before_it_starts(tmp_path, capsys):
    """Issue 32 class 6: a runs file near its cap fitted for minutes; the fit's work is counted
    first (points x runs and distinct layers, at simsp's measured CPU costs) and past
    --max-seconds it is one line with the estimate, exit 2, no file written."""
    from simsp.measure import fit_work as W

    runs = write_runs(tmp_path / "runs.csv", CONFIGS[:4])
    out = tmp_path / "f.yaml"
    rc, _, err = calibrate(tmp_path, capsys, runs, out, "--folds", "2", "--max-seconds", "0.01")
    assert rc == 2 and len(err.strip().splitlines()) == 1 and not out.exists()
    assert "would take about" in err and "(--max-seconds raises it" in err
    assert f"{W.fit_points(3, 2)} points x 4 runs" in err
    # the count: the grid, then each of the k + 1 fits' least-squares steps
    assert W.fit_points(3, 5) == 1 + 27 + 6 * W.POINTS_PER_FIT * 4
    measured = read_runs(runs)
    one_layer = W.fit_seconds(measured[:1], 3, 2)
    assert one_layer == pytest.approx(W.fit_points(3, 2) * (W.RUN_POINT_S + W.LAYER_POINT_S))
    for bad in ("0", "-1", "nan"):
        rc, _, err = calibrate(tmp_path, capsys, runs, out, "--max-seconds", bad)
        assert rc == 2 and "--max-seconds" in err


def test_a_runs_file_parses_each_workload_yaml_once(tmp_path, monkeypatch):
    """10,000 rows naming one YAML parsed it 10,000 times (40 s); now once, each row a copy."""
    from simsp.io import config

    (tmp_path / "base.yaml").write_text(
        "name: b\nmodel: {layers: 8, hidden: 2048, heads: 16, seq_len: 1024, vocab: 32000}\n"
        "training: {global_batch: 32, micro_batch: 1}\nparallel: {tp: 2, pp: 1, dp: 8}\n"
    )
    (tmp_path / "runs.csv").write_text(
        "workload,tp,dp,iteration_s\n" + "base.yaml,4,4,1.0\nbase.yaml,,,2.0\n" * 50
    )
    parsed = []
    real = config.read_yaml
    monkeypatch.setattr(config, "read_yaml", lambda p: parsed.append(p) or real(p))
    got = read_runs(tmp_path / "runs.csv")
    assert len(parsed) == 1 and len(got) == 100
    assert [r.workload.parallel.tp for r in got[:2]] == [4, 2]


def test_a_workload_outside_the_runs_files_folder_needs_a_flag(tmp_path):
    """A runs file from someone else may not make simsp read a file of its choosing: a workload
    cell outside the CSV's folder tree (absolute, or climbing out with ..) is refused, naming the
    row and the flag; --allow-outside reads it."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "csv").mkdir()
    base = tmp_path / "outside" / "base.yaml"
    base.write_text(
        "name: b\nmodel: {layers: 8, hidden: 2048, heads: 16, seq_len: 1024, vocab: 32000}\n"
        "training: {global_batch: 32, micro_batch: 1}\nparallel: {tp: 2, pp: 1, dp: 8}\n"
    )
    for cell in (str(base), "../outside/base.yaml"):
        runs = tmp_path / "csv" / "runs.csv"
        runs.write_text(f"name,workload,iteration_s\na,{cell},1.5\n")
        with pytest.raises(InputError, match="outside the runs file's folder.*--allow-outside"):
            read_runs(runs)
        assert read_runs(runs, allow_outside=True)[0].measured_s == 1.5
