"""simsp's measured accuracy by GPU and precision (validate/accuracy.py): the derived file is
this tree's, the grouping keeps only measured whole iterations, and `simsp run` reports it."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from simsp.config import load_hardware, load_workload
from simsp.errors import InputError
from simsp.report import run, run_summary
from simsp.validate.accuracy import (
    ACCURACY_FILE,
    COMMAND,
    MEASURED_SETS,
    accuracy_document,
    accuracy_line,
    accuracy_of,
    gpu_family,
    quantile,
    read_accuracy,
)
from simsp.validate.cases import project_path
from simsp.validate.runner import run_validation


@pytest.fixture(scope="module")
def measured():
    """The measured sets validated with this tree's model (about 10 s on two cores)."""
    return run_validation(MEASURED_SETS, workers=2)


def test_the_committed_file_is_this_trees_validation(measured):
    fresh = accuracy_document(measured.results)
    committed = json.loads(ACCURACY_FILE.read_text())
    assert committed["derived_by"] == COMMAND
    stale = f"simsp/validate/data/accuracy.json is stale: re-derive it with `{COMMAND}`"
    key = [(g["gpu"], g["precision"], g["n"], g["sets"]) for g in fresh["groups"]]
    assert [(g["gpu"], g["precision"], g["n"], g["sets"]) for g in committed["groups"]] == key, (
        stale
    )
    for new, old in zip(fresh["groups"], committed["groups"], strict=True):
        for k in ("mape", "bias", "max_abs_error"):
            assert new[k] == pytest.approx(old[k], abs=2e-6), (stale, new["gpu"], k)
        for q in ("p10", "p90"):
            got, want = new["measured_over_simsp"][q], old["measured_over_simsp"][q]
            assert got == pytest.approx(want, abs=2e-6), (stale, new["gpu"], q)


def test_only_measured_whole_iterations_are_counted(measured):
    doc = accuracy_document(measured.results)
    iterations = [
        r
        for r in measured.results
        if r.case.set in MEASURED_SETS and r.case.quantity == "iteration"
    ]
    assert sum(g["n"] for g in doc["groups"]) == len(iterations)
    counted = {s for g in doc["groups"] for s in g["sets"]}
    assert counted <= set(MEASURED_SETS)
    assert "vtrain-single" not in counted and "paper-table4" not in counted


def test_a_groups_figures_are_its_cases_errors(measured):
    """H100 FP8, recomputed here from the cases' own errors."""
    from simsp.validate.runner import _hardware

    errors = [
        r.error
        for r in measured.results
        if r.case.set in MEASURED_SETS
        and gpu_family(_hardware(r.case.hardware).gpu.name) == "H100"
        and r.case.workload.training.precision == "fp8"
    ]
    group = next(
        g
        for g in accuracy_document(measured.results)["groups"]
        if g["gpu"] == "H100" and g["precision"] == "fp8"
    )
    assert group["n"] == len(errors) > 100
    assert group["mape"] == pytest.approx(np.mean(np.abs(errors)), abs=1e-6)
    assert group["bias"] == pytest.approx(np.mean(errors), abs=1e-6)
    ratios = 1 / (1 + np.array(errors))
    assert group["measured_over_simsp"]["p10"] == pytest.approx(np.percentile(ratios, 10), abs=1e-6)
    assert group["measured_over_simsp"]["p90"] == pytest.approx(np.percentile(ratios, 90), abs=1e-6)


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("A100-SXM4-80GB", "A100"),
        ("A100-SXM4-80GB (assumed)", "A100"),
        ("H100-SXM5-80GB", "H100"),
        ("H200-SXM-141GB", "H200"),
        ("B200", "B200"),
        ("GB200-Blackwell", "GB200"),
        ("MI300X", ""),
    ],
)
def test_gpu_families(name, family):
    assert gpu_family(name) == family


def test_every_shipped_hardware_file_has_a_family():
    for path in sorted(project_path("hardware").glob("*.yaml")):
        assert gpu_family(load_hardware(path).gpu.name), path.name


@pytest.mark.parametrize("values", [[1.0], [3.0, 1.0], [0.9, 1.2, 1.05, 1.3, 0.99, 1.11, 1.0]])
@pytest.mark.parametrize("q", [0.0, 0.1, 0.5, 0.9, 1.0])
def test_quantile_is_numpys_linear_rule(values, q):
    assert quantile(values, q) == pytest.approx(float(np.quantile(values, q)))


def test_run_reports_the_accuracy_of_its_gpu_and_precision():
    w = load_workload(project_path("workloads/llama-3.1-8b.yaml"))
    hw = load_hardware(project_path("hardware/dgx-h100.yaml"))
    r = run(w, hw)
    d = r.to_dict()["accuracy"]
    want = read_accuracy()[("H100", w.training.precision)]
    assert d["n"] == want.n and d["mape"] == want.mape and d["gpu"] == "H100"
    assert math.isclose(d["measured_over_simsp"]["p90"], want.high)
    assert run_summary(r).splitlines()[-1] == want.line()


def test_a_gpu_without_measured_runs_says_so():
    w = load_workload(project_path("workloads/llama-3.1-8b.yaml"))
    hw = load_hardware(project_path("hardware/hgx-h200.yaml"))
    r = run(w, hw)
    assert r.to_dict()["accuracy"] is None
    assert run_summary(r).splitlines()[-1] == (
        f"not validated: simsp has no measured {w.training.precision} run on H200"
    )
    assert accuracy_of("MI300X", "bf16") is None
    assert accuracy_line(None, "MI300X", "bf16").endswith("run on MI300X")


def test_a_file_that_is_not_the_derived_document_is_a_clear_error(tmp_path):
    bad = tmp_path / "accuracy.json"
    bad.write_text('{"groups": [{"gpu": "H100"}]}')
    with pytest.raises(InputError, match="groups"):
        read_accuracy(str(bad))


def test_validate_refuses_an_accuracy_path_that_is_not_json(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "simsp", "validate", "--accuracy", str(tmp_path / "a.txt")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and ".json" in out.stderr
    assert not (tmp_path / "a.txt").exists()


def test_the_readme_table_is_the_committed_file():
    readme = project_path("README.md").read_text()
    for a in read_accuracy().values():
        row = (
            f"| {a.gpu} {a.precision} | {a.n} | {a.mape:.1%} | {a.bias:+.1%} | "
            f"{a.max_abs_error:.1%} | {a.low:.2f}-{a.high:.2f} |"
        )
        assert row in readme, f"README.md's accuracy table lacks {row}"


def test_the_closed_form_answer_reports_it_too():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "simsp",
            "run",
            str(project_path("workloads/gpt3-175b.yaml")),
            "--max-actions",
            "10",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    d = json.loads(out.stdout)
    assert d["tier"] == "analytic"
    assert d["accuracy"] == read_accuracy()[("A100", "bf16")].to_dict()


def test_compare_says_it_once_a_gpu():
    from simsp.sweep.compare import accuracy_lines

    w = load_workload(project_path("workloads/llama-3.1-8b.yaml"))
    runs = [
        run(w, load_hardware(project_path(f"hardware/{name}.yaml")))
        for name in ("dgx-a100-80gb", "dgx-a100-40gb", "hgx-h200")
    ]
    precision = w.training.precision
    assert accuracy_lines(runs) == [
        read_accuracy()[("A100", precision)].line(),
        f"not validated: simsp has no measured {precision} run on H200",
    ]
