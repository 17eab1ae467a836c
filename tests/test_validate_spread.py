"""The measurements' own spread (validate/spread.py): cases measured more than once, grouped by
simsp's input, the repeat floor beside simsp's error on the same cases, in the table, --json
and cases.csv."""

import csv
import dataclasses
import math

import pytest

from simsp import validate as V
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import TrainingSpec, Workload
from simsp.validate.spread import (
    KEYS,
    RELEASE_SETTINGS,
    repeat_groups,
    repeat_summary,
    same_input,
    same_published_configuration,
    without_trailing_parenthesis,
)

BASE = validate(
    Workload(
        "base",
        ModelSpec(layers=2, hidden=64, heads=4, seq_len=128, vocab=512),
        TrainingSpec(global_batch=8, micro_batch=1, precision="fp8"),
        ParallelSpec(),
    ),
    "test",
)


def _with(w=BASE, name="x", **training) -> Workload:
    return dataclasses.replace(w, name=name, training=dataclasses.replace(w.training, **training))


def _r(name, measured, predicted, w=BASE, set_="hand", hw="hw.yaml", description=""):
    c = V.Case(set_, name, measured, dataclasses.replace(w, name=name), hw, description=description)
    return V.CaseResult(c, predicted)


HAND = [
    _r("a 25.02", 1.0, 1.0, description="tiny fp8 (NeMo 25.02)"),
    _r("b 25.09", 1.21, 1.0, description="tiny fp8 (NeMo 25.09)"),
    _r("micro 2", 1.5, 1.4, _with(micro_batch=2)),  # one setting differs: its own configuration
    _r("other hw", 1.0, 1.2, hw="other.yaml"),  # another machine: not the same input
    _r("p 2", 2.0, 3.0, _with(global_batch=16)),
    _r("p 4", 4.0, 3.0, _with(global_batch=16)),
    _r("p 8", 8.0, 3.0, _with(global_batch=16)),
    _r("current", 1.1, 1.05, _with(fp8_recipe="current")),  # a release default differs
]


def test_same_input_groups_cases_that_differ_only_in_name():
    groups = repeat_groups(HAND, same_input)
    assert [g.case_ids for g in groups] == [("a 25.02", "b 25.09"), ("p 2", "p 4", "p 8")]
    assert [g.label for g in groups] == ["r1", "r2"]
    two, three = groups
    assert two.measured_s == (1.0, 1.21) and two.predicted_s == (1.0, 1.0)
    assert two.spread == pytest.approx(0.21)
    assert two.geomean_s == pytest.approx(1.1)
    assert two.floor_errors == pytest.approx((0.1, 1.1 / 1.21 - 1))
    assert two.description == "tiny fp8"  # the release in parentheses is not the configuration
    assert three.spread == pytest.approx(3.0) and three.geomean_s == pytest.approx(4.0)
    assert three.floor_errors == pytest.approx((1.0, 0.0, -0.5))
    # the least summed |error| is at 2 s: 0 + 0.5 + 0.75 (4 s: 1 + 0 + 0.5; 8 s: 3 + 1 + 0),
    # below the geometric mean's 1.5
    assert three.least_abs_errors == pytest.approx((0.0, 0.5, 0.75))


def test_a_different_setting_set_or_hardware_is_another_configuration():
    keys = {r.case.name: same_input(r.case) for r in HAND}
    assert keys["a 25.02"] == keys["b 25.09"]
    for other in ("micro 2", "other hw", "p 2", "current"):
        assert keys[other] != keys["a 25.02"], other
    elsewhere = _r("a 25.02", 1.0, 1.0, set_="another set")
    assert same_input(elsewhere.case) != keys["a 25.02"]
    assert repeat_groups([HAND[0], elsewhere], same_input) == []
    no_workload = V.CaseResult(V.Case("hand", "n", 1.0, None, "hw.yaml"), 1.0)
    assert same_input(no_workload.case) is None
    assert repeat_groups([no_workload, no_workload], same_input) == []


def test_release_settings_may_differ_in_the_published_configuration():
    groups = repeat_groups(HAND, *KEYS["release_repeats"])
    assert [g.case_ids for g in groups] == [
        ("a 25.02", "b 25.09", "current"),
        ("p 2", "p 4", "p 8"),
    ]
    assert [g.label for g in groups] == ["c1", "c2"]
    assert same_published_configuration(HAND[2].case) != same_published_configuration(HAND[0].case)
    fields = {f.name for f in dataclasses.fields(TrainingSpec)} | {
        f.name for f in dataclasses.fields(ParallelSpec)
    }
    assert set(RELEASE_SETTINGS) <= fields  # a renamed field would silently group nothing


def test_set_figures_by_hand():
    m = repeat_summary(repeat_groups(HAND, same_input))
    floor = [0.1, 1.1 / 1.21 - 1, 1.0, 0.0, -0.5]
    simsp = [0.0, 1.0 / 1.21 - 1, 0.5, -0.25, -0.625]
    assert m["groups"] == 2 and m["cases"] == 5
    assert m["floor_mape"] == pytest.approx(sum(map(abs, floor)) / 5)
    assert m["floor_bias"] == pytest.approx(sum(floor) / 5)
    # the two-case group's least is at 1 s: 0 and 1 - 1/1.21
    assert m["floor_least_mape"] == pytest.approx((0 + (1 - 1 / 1.21) + 0.0 + 0.5 + 0.75) / 5)
    assert m["simsp_mape"] == pytest.approx(sum(map(abs, simsp)) / 5)
    assert m["simsp_bias"] == pytest.approx(sum(simsp) / 5)
    assert m["max_spread"] == pytest.approx(3.0)
    assert m["list"][0] == {
        "group": "r1",
        "description": "tiny fp8",
        "cases": ["a 25.02", "b 25.09"],
        "measured_s": [1.0, 1.21],
        "predicted_s": [1.0, 1.0],
        "spread": pytest.approx(0.21),
        "geomean_s": pytest.approx(1.1),
    }
    empty = repeat_summary([])
    assert empty["groups"] == empty["cases"] == 0 and empty["list"] == []
    assert empty["floor_mape"] is None and empty["simsp_mape"] is None


KEYS_JSON = {"groups", "cases", "floor_mape", "floor_bias", "simsp_mape", "simsp_bias"}


def test_every_set_has_the_repeats_keys_in_the_json():
    s = V.summarize(HAND, [], ("hand", "empty"))["sets"]
    for name in ("hand", "empty"):
        for key in ("repeats", "release_repeats"):
            assert KEYS_JSON <= set(s[name][key]), (name, key)
    assert s["hand"]["repeats"]["groups"] == 2 and s["hand"]["release_repeats"]["cases"] == 6
    assert s["empty"]["repeats"]["groups"] == 0
    assert {"n", "mape", "max_abs_error", "bias", "skipped"} <= set(s["hand"])  # kept


def _validation(results, sets=("hand",)):
    return V.Validation(sets, tuple(results), (), 0.0)


def test_the_table_shows_repeats_and_nothing_where_there_are_none():
    text = V.table(_validation(HAND), verbose=True)
    assert "hand: the same simsp input measured more than once" in text
    assert "2 groups, 5 cases: repeat floor" in text
    line = next(x for x in text.splitlines() if x.startswith("  r1 "))
    assert "21.0%" in line and "1.000 s" in line and "1.000 1.210 s" in line and "tiny fp8" in line
    assert "hand: the same published configuration in several releases" in text
    assert "groups whose release defaults differ (1):" in text  # c1 holds `current`, c2 = r2
    assert any(x.startswith("  c1 ") for x in text.splitlines())
    assert not any(x.startswith("  c2 ") for x in text.splitlines())
    lone = [HAND[0], HAND[2], HAND[3]]
    plain = V.table(_validation(lone), verbose=True)
    assert "repeat" not in plain and "release" not in plain


def test_cases_csv_names_each_cases_group_after_the_old_columns(tmp_path):
    path, _ = V.write_outputs(_validation(HAND), tmp_path)
    rows = list(csv.DictReader(path.open()))
    # later columns are appended after the old ones: the groups, simsp's HBM peak, the release
    added = ["repeat_group", "release_group", "peak_gib", "capacity_gib", "framework"]
    assert list(rows[0])[-7:-2] == added
    assert list(rows[0])[-2:] == ["measured_peak_gib", "peer_s"]
    assert list(rows[0]) == list(V.CSV_FIELDS)
    assert {r["case"]: r["repeat_group"] for r in rows} == {
        "a 25.02": "r1",
        "b 25.09": "r1",
        "micro 2": "",
        "other hw": "",
        "p 2": "r2",
        "p 4": "r2",
        "p 8": "r2",
        "current": "",
    }
    assert {r["case"] for r in rows if r["release_group"] == "c1"} == {
        "a 25.02",
        "b 25.09",
        "current",
    }


def test_trailing_parenthesis_nested():
    assert without_trailing_parenthesis("X tp4 (NeMo 24.09 container (nvcr.io/x), 1.0)") == "X tp4"
    assert (
        without_trailing_parenthesis("405B (proxy: 7 layers) tp8") == "405B (proxy: 7 layers) tp8"
    )
    assert without_trailing_parenthesis("a (b) c (d)") == "a (b) c"


def test_published_reruns_differ_in_release_defaults_only():
    """The shipped data: Llama-3-8B FP8 on 8 B200 in three releases is one published
    configuration. NeMo 25.02 and Megatron-Bridge 25.09 share delayed scaling, FP8 primary
    weights and a bf16 grad reduce, but not the loss (Megatron's native fusion against TE's),
    and 25.11 scales currently, so no two of them give simsp the same input; nor do the 405B
    runs of the same releases."""
    cases, _ = V.build_cases(("published-b200", "fp8-pairs"))
    results = [V.CaseResult(c, c.measured_s) for c in cases]
    b200 = [r for r in results if r.case.set == "published-b200"]
    assert repeat_groups(b200, same_input) == []
    losses = {r.case.name: r.case.workload.training.cross_entropy for r in b200}
    assert losses["nemo2502-b200-llama3-8b"] == "native" != losses["mb2509-b200-llama3-8b"]
    eight = next(
        g for g in repeat_groups(b200, same_published_configuration) if "llama3-8b" in g.description
    )
    assert eight.case_ids == (
        "nemo2502-b200-llama3-8b",
        "mb2509-b200-llama3-8b",
        "mb2511-b200-llama3-8b",
    )
    assert eight.measured_s == pytest.approx((5.04, 4.37, 4.28))
    pairs = [r for r in results if r.case.set == "fp8-pairs"]
    groups = repeat_groups(pairs, same_input)
    assert len(groups) >= 60 and all(math.isfinite(g.spread) for g in groups)
    # one input for the time: the runs may differ only in memory-only settings
    assert all(len({same_input(r.case) for r in g.results}) == 1 for g in groups)
