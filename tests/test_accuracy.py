"""simsp's measured accuracy by hardware file, GPU and precision (validate/accuracy.py): the
derived file is this tree's, the grouping keeps only measured whole iterations, and `simsp run`
and `simsp compare` report it."""

import json
import subprocess
import sys

import numpy as np
import pytest

from simsp.api import run
from simsp.errors import InputError
from simsp.io.config import load_hardware, load_workload
from simsp.present.accuracy import (
    ACCURACY_FILE,
    BAND_MIN_RUNS,
    COMMAND,
    accuracy_line,
    accuracy_of,
    gpu_family,
    read_accuracy,
)
from simsp.present.report import result_json, run_summary
from simsp.validate.accuracy import (
    MEASURED_SETS,
    STACK_SETS,
    accuracy_document,
    measured_iterations,
    quantile,
)
from simsp.validate.cases import project_path
from simsp.validate.runner import run_validation

SETS = ("paper-table4", "vtrain-single", *MEASURED_SETS)


@pytest.fixture(scope="module")
def validation():
    """The measured sets with this tree's model, beside what must not count: Table 4's layer
    times and a few of vTrain's single-node (peer) rows (about 10 s on two cores)."""
    return run_validation(SETS, workers=2, limit={"vtrain-single": 5})


def _groups(doc: dict) -> list[dict]:
    return doc["hardware"] + doc["gpus"]


def _group(doc: dict, kind: str, scope: str, precision: str) -> dict:
    return next(g for g in doc[kind] if (g["scope"], g["precision"]) == (scope, precision))


def _ratios(validation, stem: str, precision: str) -> list[float]:
    """measured / simsp of the measured iterations with hardware/<stem>.yaml."""
    return [
        1 / (1 + r.error)
        for r in measured_iterations(validation.results)
        if r.case.hardware.endswith(f"{stem}.yaml")
        and r.case.workload.training.precision == precision
    ]


def test_the_committed_file_is_this_trees_validation(validation):
    fresh = accuracy_document(validation.results)
    committed = json.loads(ACCURACY_FILE.read_text())
    assert committed["derived_by"] == COMMAND and committed["what"] == fresh["what"]
    stale = f"simsp/validate/data/accuracy.json is stale: re-derive it with `{COMMAND}`"

    def shape(g):
        return g["scope"], g["precision"], g["n"], g["sets"], g.get("files")

    assert [shape(g) for g in _groups(committed)] == [shape(g) for g in _groups(fresh)], stale
    for new, old in zip(_groups(fresh), _groups(committed), strict=True):
        for k in ("mape", "bias", "worst"):
            assert new[k] == pytest.approx(old[k], abs=2e-6), (stale, new["scope"], k)
        for q in ("low", "high"):
            got, want = new["measured_over_simsp"][q], old["measured_over_simsp"][q]
            assert got == pytest.approx(want, abs=2e-6), (stale, new["scope"], q)


def test_only_measured_whole_iterations_are_counted(validation):
    doc = accuracy_document(validation.results)
    counted = [r for r in validation.results if r.case.set in MEASURED_SETS]
    counted = [r for r in counted if r.case.quantity == "iteration"]
    assert measured_iterations(validation.results) == counted
    assert sum(g["n"] for g in doc["hardware"]) == len(counted) == sum(g["n"] for g in doc["gpus"])
    named = {s for g in _groups(doc) for s in g["sets"]}
    assert named <= set(MEASURED_SETS) and not named & {"vtrain-single", "paper-table4"}
    assert any(r.case.set == "paper-table4" for r in validation.results)
    assert any(r.case.set == "vtrain-single" for r in validation.results)


def test_a_files_figures_are_its_cases_errors(validation):
    """dgx-h100 FP8, recomputed here from the cases' own errors."""
    errors = [
        r.error
        for r in measured_iterations(validation.results)
        if r.case.hardware.endswith("dgx-h100.yaml") and r.case.workload.training.precision == "fp8"
    ]
    doc = accuracy_document(validation.results)
    group = _group(doc, "hardware", "dgx-h100", "fp8")
    assert group["n"] == len(errors) >= BAND_MIN_RUNS
    assert group["mape"] == pytest.approx(np.mean(np.abs(errors)), abs=1e-6)
    assert group["bias"] == pytest.approx(np.mean(errors), abs=1e-6)
    assert group["worst"] == pytest.approx(min(errors, key=lambda e: -abs(e)), abs=1e-6)
    ratios = 1 / (1 + np.array(errors))
    band = group["measured_over_simsp"]
    assert band["of"] == "p10-p90"
    assert band["low"] == pytest.approx(np.percentile(ratios, 10), abs=1e-6)
    assert band["high"] == pytest.approx(np.percentile(ratios, 90), abs=1e-6)


def test_a_small_group_reports_its_whole_range(validation):
    doc = accuracy_document(validation.results)
    group = _group(doc, "hardware", "gb200-nvl72", "fp8")
    ratios = _ratios(validation, "gb200-nvl72", "fp8")
    assert group["n"] == len(ratios) < BAND_MIN_RUNS
    assert group["measured_over_simsp"] == {
        "low": round(min(ratios), 6),
        "high": round(max(ratios), 6),
        "of": "min-max",
    }


def test_a_family_pools_its_files(validation):
    doc = accuracy_document(validation.results)
    a100 = _group(doc, "gpus", "A100", "bf16")
    files = [g for g in doc["hardware"] if g["scope"] in a100["files"] and g["precision"] == "bf16"]
    assert a100["files"] == ["dgx-a100-40gb", "dgx-a100-80gb", "vtrain-a100"]
    assert a100["n"] == sum(g["n"] for g in files)


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("A100-SXM4-80GB", "A100"),
        ("A100-SXM4-80GB (assumed)", "A100"),
        ("H100-SXM5-80GB", "H100"),
        ("H200-SXM-141GB", "H200"),
        ("GH200 480GB", "GH200"),
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


def _llama_8b():
    return load_workload(project_path("workloads/llama-3.1-8b.yaml"))


def test_run_reports_its_own_files_accuracy():
    w, hw = _llama_8b(), load_hardware(project_path("hardware/dgx-h100.yaml"))
    r = run(w, hw)
    files = read_accuracy()[0]
    want = files[("dgx-h100", w.training.precision)]
    assert result_json(r)["accuracy"] == want.to_dict()
    assert run_summary(r).splitlines()[-1] == want.line()
    assert want.line().startswith("validated with hardware/dgx-h100.yaml on ")


def test_a_file_the_validation_never_ran_takes_its_gpus_files(tmp_path):
    """A user's copy of a shipped file is not the file validated: its family's figures."""
    import dataclasses

    shipped = load_hardware(project_path("hardware/dgx-a100-80gb.yaml"))
    hw = dataclasses.replace(shipped, source=str(tmp_path / "my-a100.yaml"))
    found = accuracy_of(hw, "bf16")
    assert found == read_accuracy()[1][("A100", "bf16")]
    line = accuracy_line(hw, "bf16")
    assert line.startswith(f"validated on {found.n} measured bf16 runs on A100 GPUs (hardware/")


def test_a_gpu_without_measured_runs_says_so():
    w, hw = _llama_8b(), load_hardware(project_path("hardware/hgx-h200.yaml"))
    r = run(w, hw)
    assert result_json(r)["accuracy"] is None
    assert run_summary(r).splitlines()[-1] == (
        f"not validated: simsp has no measured {w.training.precision} run on H200 (H200-SXM-141GB)"
    )


def test_the_line_says_which_way_and_how_much():
    """On made-up groups, so the wording is checked whatever the model's figures are."""
    from simsp.present.accuracy import Accuracy

    sets = (("published-h100", 12),)
    long_ = Accuracy("dgx-x", "bf16", 12, 0.05, 0.004, 0.203, 0.95, 1.07, sets)
    assert long_.line() == (
        "validated with hardware/dgx-x.yaml on 12 measured bf16 runs (12 published-h100): "
        "simsp's times 0.4% long on average, MAPE 5.0%, worst 20.3% long; "
        "measured / simsp 0.95-1.07 (p10-p90)"
    )
    short = Accuracy("X100", "fp8", 1, 0.1, -0.1, -0.1, 1.11, 1.11, sets, ("dgx-x",))
    assert short.line() == (
        "validated on 1 measured fp8 run on X100 GPUs (hardware/dgx-x.yaml: 12 published-h100): "
        "simsp's times 10.0% short on average, MAPE 10.0%, worst 10.0% short; "
        "measured / simsp 1.11-1.11 (min-max)"
    )
    assert "dgx-x.yaml, before --set, on 12" in long_.line(overridden=True)


def test_a_run_with_set_says_the_figures_are_the_files():
    hw = load_hardware(project_path("hardware/dgx-h100.yaml"), ["network.nic_gbps=800"])
    assert "with hardware/dgx-h100.yaml, before --set, on " in accuracy_line(hw, "bf16")


def test_a_file_that_is_not_the_derived_document_is_a_clear_error(tmp_path):
    bad = tmp_path / "accuracy.json"
    bad.write_text('{"hardware": [{"scope": "dgx-h100"}], "gpus": []}')
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


def test_the_readme_shows_the_committed_figures():
    readme = project_path("README.md").read_text()
    files = read_accuracy()[0]
    for a in files.values():
        row = (
            f"| `{a.scope}` {a.precision} | {a.n} | {a.mape:.1%} | {a.bias:+.1%} | "
            f"{a.worst:+.1%} | {a.low:.2f}-{a.high:.2f} |"
        )
        assert row in readme, f"README.md's accuracy table lacks {row}"
    example = files[("dgx-h100", "bf16")].line()
    assert f"# {example}" in readme, "README.md's run example lacks its accuracy line"


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
    assert d["accuracy"] == read_accuracy()[0][("dgx-a100-80gb", "bf16")].to_dict()


def test_compare_says_it_once_a_machine():
    from simsp.present.compare import accuracy_lines

    w = _llama_8b()
    hws = [load_hardware(project_path(f"hardware/{n}.yaml")) for n in ("dgx-a100-80gb", "hgx-h200")]
    runs = [run(w, hw) for hw in (hws[0], hws[0], hws[1])]
    assert accuracy_lines(runs) == [
        accuracy_line(hws[0], w.training.precision),
        accuracy_line(hws[1], w.training.precision),
    ]


def test_the_line_names_sets_in_the_validations_order():
    """present.accuracy reads the document without importing validate: the order of the measured
    sets comes from the document, which the validation writes."""
    files = read_accuracy()[0]
    for a in files.values():
        names = [name for name, _ in a.sets]
        assert names == [s for s in MEASURED_SETS if s in names]
    assert json.loads(ACCURACY_FILE.read_text())["measured_sets"] == list(
        MEASURED_SETS + STACK_SETS
    )


def test_a_run_on_another_stack_reads_its_stacks_figures(capsys):
    """`--stack torchtitan` ends with the torchtitan runs' accuracy, whatever the hardware; a
    stack with no measured run says so."""
    from simsp.cli.main import main
    from tests.conftest import ROOT

    w = str(ROOT / "workloads" / "llama-3.1-8b.yaml")
    stacks = read_accuracy()[2]
    assert main(["run", w, "--hardware", "dgx-h100", "--stack", "torchtitan"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == stacks[("torchtitan", "bf16")].line(stack=True)
    assert "torchtitan stack" in last
    assert main(["run", w, "--hardware", "dgx-h100", "--stack", "composer"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "not validated: simsp has no measured bf16 run on the composer stack"
