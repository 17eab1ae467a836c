"""`simsp plan`: the layout space, the branch and bound against evaluating every layout, the
printed commands against `simsp run`, fixed settings, the HBM reserve, and bad input."""

import json
import shlex

import pytest

from simsp.cli.main import main
from simsp.io.config import load_hardware, load_workload
from simsp.sim import closed_form
from simsp.sweep.layouts import grid_points, space
from simsp.sweep.planner import layouts, search

MODEL = "workloads/models/llama-3.1-8b/config.json"
PLAN = ["plan", "--model", MODEL, "--hardware", "dgx-h100", "--seq-len", "4096"]
SMALL = [*PLAN, "--gpus", "8", "--global-batch", "16", "--simulate", "4", "--top", "4"]


@pytest.fixture(scope="module")
def base():
    overrides = {
        "model": {"hf_config": MODEL, "seq_len": 4096},
        "training": {"global_batch": 16},
        "parallel": {},
    }
    return load_workload(None, overrides), load_hardware("dgx-h100")


def _json(capsys, argv) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_every_printed_command_reproduces_its_row_to_the_bit(capsys):
    plan = _json(capsys, SMALL)
    assert plan["layouts"] >= 1000 and len(plan["best"]) == 4
    for row in plan["best"]:
        argv = shlex.split(row["command"])
        assert argv[:2] == ["simsp", "run"]
        run = _json(capsys, argv[1:])
        assert run["iteration_time_s"] == row["iteration_time_s"]
        assert run["memory"]["peak_bytes"] == row["peak_bytes"]
        assert run["memory"]["fits"] is True
        assert run["configuration"]["parallel"]["tp"] == row["tp"]


def test_rows_are_fastest_first_and_fit(capsys):
    best = _json(capsys, SMALL)["best"]
    times = [r["iteration_time_s"] for r in best]
    assert times == sorted(times)
    assert all(r["fits"] and r["tier"] == "event" for r in best)


@pytest.mark.slow
def test_branch_and_bound_finds_what_evaluating_every_layout_finds(base):
    w, hw = base
    bounded = search(w, hw, 8, {}, simulate=6, jobs=1)
    every = search(w, hw, 8, {}, simulate=6, jobs=1, every=True)
    assert bounded.simulated == every.simulated
    assert len(every.evaluated) == every.counts.configs
    assert len(bounded.evaluated) + bounded.over_hbm < every.counts.configs  # it did skip some


def test_floor_is_below_the_closed_form_on_every_layout(base):
    w, hw = base
    configs, counts = layouts(w, hw, 8, space(w, hw, 8, {}), 10**6, "test")
    assert counts.configs == len(configs) > 1000
    for c in configs[::7]:
        e = closed_form.estimate(c.workload, c.hardware)
        assert 0 < closed_form.floor_s(c.workload, c.hardware) <= e.iteration_time_s


def test_the_arithmetic_prefilter_drops_only_what_the_rules_refuse(base):
    """Every point grid_points drops is refused by spec/rules/ too (a sample of each kind)."""
    from simsp.sweep.configs import admit

    w, hw = base
    s = space(w, hw, 8, {})
    kept = sum(1 for values, _ in grid_points(s) if values)
    dropped = sum(n for _, n in grid_points(s) if n)
    assert kept + dropped == s.points
    # the dropped points, rebuilt by brute force, are all invalid or the same run as a kept one
    import itertools

    keys = [k for k, _ in s.values]
    kept_keys = set()
    for values, _ in grid_points(s):
        if values:
            outcome, found = admit(w, values, 8, hw, "test")
            if not isinstance(found, str):
                kept_keys.add(found.key)
    for i, combo in enumerate(itertools.product(*(v for _, v in s.values))):
        if i % 13:
            continue
        values = dict(zip(keys, combo, strict=True))
        if values["pp"] == 1 and values["schedule"] != "1f1b":
            continue  # one stage runs no pipeline: the next test
        outcome, found = admit(w, values, 8, hw, "test")
        assert isinstance(found, str) or found.key in kept_keys, combo


def test_one_stage_under_a_zero_bubble_schedule_is_the_1f1b_run(base):
    """Why pp = 1 is searched as 1F1B only: a one-stage zero-bubble run costs what 1F1B does."""
    from simsp.sweep.configs import admit

    w, hw = base
    times = []
    for schedule in ("1f1b", "zb-h1"):
        values = {"tp": 1, "cp": 1, "pp": 1, "schedule": schedule, "virtual_stages": 1}
        found = admit(w, values, 8, hw, "test")[1]
        times.append(closed_form.estimate(found.workload, hw).iteration_time_s)
    assert times[1] == pytest.approx(times[0], rel=1e-12)  # I + W sums round as B does not


def test_a_flag_fixes_a_setting_instead_of_searching_it(capsys):
    best = _json(capsys, [*SMALL, "--tp", "2", "--recompute", "full"])["best"]
    assert best and all(r["tp"] == 2 and r["recompute"] == "full" for r in best)
    assert all("--tp 2" in r["command"] and "--recompute full" in r["command"] for r in best)


def test_global_tokens_is_the_batch_in_tokens(capsys):
    a = _json(capsys, SMALL)
    b = _json(capsys, [*SMALL[:-6], "--global-tokens", str(16 * 4096), *SMALL[-4:]])
    assert a["best"] == b["best"]


def test_the_reserve_decides_what_fits(capsys):
    assert main([*SMALL, "--hbm-headroom", "79"]) == 0
    out = capsys.readouterr().out
    assert "no layout fits" in out


@pytest.mark.slow
def test_the_same_plan_twice_prints_the_same_bytes(capsys):
    closed_form.clear_caches()
    assert main(SMALL) == 0
    first = capsys.readouterr().out
    assert main(SMALL) == 0
    assert capsys.readouterr().out == first
    assert "to reproduce a row:" in first and " 1  simsp run --model" in first


@pytest.mark.parametrize(
    "argv, words",
    [
        ([*PLAN, "--global-batch", "16"], ["--gpus", "required"]),
        ([*PLAN, "--gpus", "8"], ["--global-batch", "required"]),
        ([*SMALL, "--dp", "2"], ["--dp", "follows from --gpus"]),
        ([*PLAN, "--gpus", "8", "--global-tokens", "1000"], ["--global-tokens", "multiple"]),
        ([*SMALL, "--gpus", "0"], ["--gpus", "positive"]),
        ([*SMALL, "--out", "x.txt"], ["x.txt"]),
        (["plan", "--gpus", "8"], ["workload", "--model"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, words):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("simsp: error:")
    for word in words:
        assert word in err


def test_out_and_pareto_hold_every_layout(capsys, tmp_path):
    out, page = tmp_path / "plan.csv", tmp_path / "plan.html"
    assert main([*SMALL, "--out", str(out), "--pareto", str(page)]) == 0
    head = capsys.readouterr().out.splitlines()[1]
    rows = out.read_text().splitlines()
    layouts_ = int(head.split(" valid layouts")[0].replace(",", ""))
    assert len(rows) == layouts_ + 1
    assert "plotly" in page.read_text().lower()


@pytest.mark.slow
def test_a_workload_file_gives_what_a_plan_does_not_search(capsys):
    plan = _json(
        capsys,
        [
            "plan",
            "workloads/llama-3.1-8b.yaml",
            "--hardware",
            "dgx-h100",
            "--gpus",
            "8",
            "--simulate",
            "2",
            "--top",
            "2",
        ],
    )
    w = load_workload("workloads/llama-3.1-8b.yaml")
    assert plan["best"] and all(r["precision"] == w.training.precision for r in plan["best"])
    assert all(
        r["command"].startswith("simsp run workloads/llama-3.1-8b.yaml") for r in plan["best"]
    )


def test_the_table_carries_the_measured_range(capsys):
    """#31: a plan's times with the range measured runs like them took (the JSON per row)."""
    from simsp.present.accuracy import accuracy_of

    plan = _json(capsys, SMALL)
    group = accuracy_of(load_hardware("dgx-h100"), "bf16")
    for row in plan["best"]:
        t = row["iteration_time_s"]
        assert row["range_s"] == [t * group.low, t * group.high]
    assert main(SMALL) == 0
    assert "measured runs like these took" in capsys.readouterr().out
