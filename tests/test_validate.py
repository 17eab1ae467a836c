"""simsp.validate: the derived vTrain data, case construction, metrics, --json and the scatter page.

The full validation (1,567 cases) is `simsp validate`; here a deterministic subset runs and its
figures are printed (pytest -s), not asserted against targets.
"""

import argparse
import csv
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simsp import validate as V
from simsp.cli.validate import register
from simsp.errors import InputError

ROOT = Path(__file__).resolve().parents[1]
SOURCES = V.DATA_DIR / "sources"
"""The upstream files, verbatim (sources/README.md), laid out as the shared data folder."""
VTRAIN = SOURCES / "vtrain"


# ------------------------------------------------------------------ derived data


@pytest.mark.parametrize("kind", ["single", "multi"])
def test_derived_rows_match_the_shared_csv_row_for_row(kind):
    shared = V.read_shared_csv(VTRAIN / f"ground_truth_{kind}.csv")
    derived = V.read_vtrain(kind)
    assert len(derived) == len(shared) == {"single": 1440, "multi": 109}[kind]
    for s, d in zip(shared, derived, strict=True):
        assert {V.VTRAIN_COLUMNS[k]: v for k, v in s.items()} == d


def test_shipped_files_are_what_derive_vtrain_writes(tmp_path):
    written = V.derive_vtrain(SOURCES, tmp_path)
    assert sorted(p.name for p in written) == [
        "vtrain_LICENSE",
        "vtrain_multi.csv",
        "vtrain_single.csv",
    ]
    for p in written:
        assert p.read_bytes() == (V.DATA_DIR / p.name).read_bytes(), p.name
    # the vtrain folder itself is accepted too
    again = V.derive_vtrain(VTRAIN, tmp_path / "b")
    assert [p.read_bytes() for p in again] == [p.read_bytes() for p in written]


def test_derived_files_carry_their_provenance():
    for kind in ("single", "multi"):
        text = (V.DATA_DIR / f"vtrain_{kind}.csv").read_text()
        header = "\n".join(line for line in text.splitlines() if line.startswith("#"))
        for words in (
            "VIA-Research/vTrain",
            f"data/ground_truth_{kind}.csv",
            "f8dda8473a48b373b1d25f51f52d685bff5150c5",
            "MIT-style",
            "Megatron-DeepSpeed",
            "full activation recompute",
            "1f1b",
            "no gradient bucketing",
            "8 GPUs a node",
        ):
            assert words in header, (kind, words)
        assert "\ufeff" not in text and "\r" not in text
    assert "VIA Research Group at KAIST" in (V.DATA_DIR / "vtrain_LICENSE").read_text()


def test_derive_vtrain_names_a_folder_without_the_data(tmp_path):
    with pytest.raises(InputError, match="ground_truth_single.csv"):
        V.derive_vtrain(tmp_path, tmp_path / "out")


# ------------------------------------------------------------------ cases


def test_every_vtrain_row_becomes_a_case_with_vtrains_settings():
    for kind, n in (("single", 1440), ("multi", 109)):
        cases, skipped = V.vtrain_cases(kind)
        assert len(cases) + len(skipped) == n
        print(f"\nvtrain-{kind}: {len(cases)} cases, {len(skipped)} skipped")
        rows = V.read_vtrain(kind)
        for c in cases:
            row = rows[int(c.name.split("-")[1]) - 1]
            w = c.workload
            assert Path(c.hardware).name == "vtrain-a100.yaml"
            # the single-node file is vTrain's predictor without recompute: like with like
            assert (w.parallel.recompute, w.parallel.schedule, w.parallel.sequence_parallel) == (
                "none" if kind == "single" else "full",
                "1f1b",
                False,
            )
            assert not w.parallel.overlap_grad_reduce and not w.parallel.distributed_optimizer
            assert w.model.vocab == 51200 and w.model.ffn == 4 * w.model.hidden
            assert (w.model.layers, w.model.hidden, w.model.heads, w.model.seq_len) == tuple(
                int(row[k]) for k in ("layers", "hidden", "heads", "seq_len")
            )
            assert (w.training.global_batch, w.training.micro_batch) == (
                int(row["global_batch"]),
                int(row["micro_batch"]),
            )
            assert (w.parallel.tp, w.parallel.pp, w.parallel.dp) == tuple(
                int(row[k]) for k in ("tp", "pp", "dp")
            )
            assert w.parallel.gpus == int(row["gpus"])
            assert c.measured_s == pytest.approx(float(row["iteration_time_ms"]) / 1e3)


def test_invalid_rows_are_skipped_and_counted(tmp_path):
    header = (
        "gpus,global_batch,micro_batch,hidden,heads,layers,seq_len,tp,dp,pp,iteration_time_ms\n"
    )
    rows = [
        "2,16,8,1024,16,24,1024,1,1,2,372.1\n",  # valid
        "3,16,8,1024,16,24,1024,3,1,1,100.0\n",  # tp 3 does not divide 16 heads
        "4,16,8,1024,16,24,1024,1,1,2,100.0\n",  # gpus != tp x pp x dp
        "4,10,4,1024,16,24,1024,1,2,2,100.0\n",  # 10 not a multiple of 4 x 2
        "8,16,8,1024,16,25,1024,1,1,8,100.0\n",
    ]  # 25 layers over 8 stages
    (tmp_path / "vtrain_single.csv").write_text("# synthetic\n" + header + "".join(rows))
    cases, skipped = V.vtrain_cases("single", tmp_path)
    assert [c.name for c in cases] == ["single-0001"]
    assert [s.name for s in skipped] == ["single-0002", "single-0003", "single-0004", "single-0005"]
    for s, words in zip(
        skipped,
        ("must divide model.heads", "tp x cp x pp x dp", "micro_batch x dp", "pp x virtual_stages"),
        strict=True,
    ):
        assert words in s.reason and s.set == "vtrain-single"
    v = V.Validation(("vtrain-single",), (V.CaseResult(cases[0], 0.4),), tuple(skipped), 0.0)
    assert v.summary()["sets"]["vtrain-single"]["skipped"] == 4


def test_paper_cases_are_table4_and_table5_on_the_papers_cluster():
    t4, t5 = V.paper_table4_cases(), V.paper_table5_cases()
    assert len(t4) == 10 and len(t5) == 8
    assert {Path(c.hardware).name for c in t4 + t5} == {"dgx-a100-80gb.yaml"}
    assert {c.quantity for c in t4} == {"layer_forward", "layer_backward"}
    assert {c.quantity for c in t5} == {"iteration"}
    assert sum(c.measured_s for c in t5) == pytest.approx(
        1.42 + 1.10 + 18.13 + 13.75 + 49.05 + 37.83 + 94.42 + 71.49
    )
    assert len({c.name for c in t4 + t5}) == 18


def test_subset_is_deterministic_and_spread():
    xs = list(range(100))
    assert V.subset(xs, 10) == list(range(0, 100, 10))
    assert V.subset(xs, 200) == xs


# ------------------------------------------------------------------ metrics


def _result(name, measured, predicted, set_="synthetic"):
    c = V.Case(set_, name, measured, None, "hw", description=name)
    return V.CaseResult(c, predicted)


def test_metrics_by_hand():
    # errors +10%, -20%, +5%, 0%
    rs = [
        _result("a", 1.0, 1.1),
        _result("b", 2.0, 1.6),
        _result("c", 4.0, 4.2),
        _result("d", 0.5, 0.5),
    ]
    assert [r.error for r in rs] == pytest.approx([0.10, -0.20, 0.05, 0.0])
    m = V.metrics([r.error for r in rs])
    assert m["n"] == 4
    assert m["mape"] == pytest.approx((0.10 + 0.20 + 0.05 + 0.0) / 4)  # 0.0875
    assert m["max_abs_error"] == pytest.approx(0.20)
    assert m["bias"] == pytest.approx((0.10 - 0.20 + 0.05 + 0.0) / 4)  # -0.0125
    assert [r.case.name for r in V.worst(rs, 3)] == ["b", "a", "c"]
    s = V.summarize(rs, [], ("synthetic", "empty"))["sets"]
    assert s["synthetic"]["worst"][0] == {
        "case": "b",
        "description": "b",
        "measured_s": 2.0,
        "predicted_s": 1.6,
        "error": pytest.approx(-0.2),
    }
    assert s["empty"] == {
        "n": 0,
        "mape": None,
        "max_abs_error": None,
        "bias": None,
        "over_hbm": [],
        "skipped": 0,
        "reference": "measured",
        "worst": [],
        **{key: V.spread.repeat_summary([]) for key in ("repeats", "release_repeats")},
    }


def test_measured_runs_simsp_puts_over_hbm_are_listed():
    """A run that was measured fit its GPUs: simsp's peak above the capacity is a miss of the
    memory model, listed per set; layer cases (no peak computed) never are."""
    c = V.Case("s", "big", 1.0, None, "hw")
    over = V.CaseResult(c, 1.0, peak_bytes=90 * 2**30, capacity_bytes=80 * 2**30)
    fits = V.CaseResult(V.Case("s", "ok", 1.0, None, "hw"), 1.0, 70 * 2**30, 80 * 2**30)
    layer = V.CaseResult(V.Case("s", "layer", 1.0, None, "hw"), 1.0)
    assert (over.over_hbm, fits.over_hbm, layer.over_hbm) == (True, False, False)
    s = V.summarize([over, fits, layer], [], ("s",))["sets"]["s"]
    assert s["over_hbm"] == [{"case": "big", "peak_gib": 90.0, "capacity_gib": 80.0}]
    v = V.Validation(("s",), (over, fits, layer), (), 0.0)
    assert "s: HBM, simsp's peak within the GPU for 1 of 2 runs" in V.table(v, verbose=True)
    assert "    big: 90.0 of 80 GiB" in V.table(v, verbose=True)


def test_grouped_metrics_partition_the_set(subset_run):
    rs = [r for r in subset_run.results if r.case.set == "vtrain-single"]
    by_tp = V.grouped(rs, "tp")
    assert list(by_tp) == sorted({r.case.workload.parallel.tp for r in rs})
    assert sum(m["n"] for m in by_tp.values()) == len(rs)
    for tp, m in by_tp.items():
        assert m == V.metrics([r.error for r in rs if r.case.workload.parallel.tp == tp])
    whole = V.metrics([r.error for r in rs])
    assert sum(m["bias"] * m["n"] for m in by_tp.values()) / len(rs) == pytest.approx(whole["bias"])


def test_by_setting_in_the_table_and_the_json(subset_run, capsys):
    text = V.table(subset_run, "micro_batch", verbose=True)
    assert "vtrain-single by micro_batch:" in text and "  micro_batch=1 " in text
    s = subset_run.summary("recompute")["sets"]
    assert set(s["paper-table4"]["by"]["recompute"]) == {"none", "selective", "full"}
    assert s["vtrain-multi"]["by"]["recompute"]["full"]["n"] == s["vtrain-multi"]["n"]


# ------------------------------------------------------------------ a subset, end to end

SUBSET = {"vtrain-single": 40, "vtrain-multi": 10, "fp8-pairs": 20}


@pytest.fixture(scope="module")
def subset_run():
    return V.run_validation(V.SETS, workers=1, limit=SUBSET)


def test_subset_runs_and_prints_its_figures(subset_run):
    v = subset_run
    print("\n" + V.table(v, verbose=True))
    counts = {name: sum(r.case.set == name for r in v.results) for name in V.SETS}
    assert counts == {
        "paper-table4": 10,
        "paper-table5": 8,
        "vtrain-single": 40,
        "vtrain-multi": 10,
        **{name: len(V.published_cases(name)[0]) for name in V.PUBLISHED_SETS},
        "fp8-pairs": 20,
        "simumax-b200": 31,
        "moe": len(V.build_cases(("moe",))[0]),
        "torch-native": len(V.build_cases(("torch-native",))[0]),
    }
    assert all(math.isfinite(r.predicted_s) and r.predicted_s > 0 for r in v.results)
    # the paper sets reproduce test_validation_paper's figures (they are asserted there)
    s = v.summary()["sets"]
    assert s["paper-table4"]["mape"] < 0.03 and s["paper-table5"]["mape"] < 0.03


def test_parallel_prediction_keeps_case_order():
    cases = V.subset(V.vtrain_cases("single")[0], 64)
    assert V.predict_all(cases, workers=2) == V.predict_all(cases, workers=1)


def test_json_shape(capsys):
    top = argparse.ArgumentParser()
    register(top.add_subparsers())
    args = top.parse_args(["validate", "--json", "--set", "paper-table4", "paper-table5"])
    args.func(args)
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["sets"]
    assert list(out["sets"]) == ["paper-table4", "paper-table5"]
    for _name, m in out["sets"].items():
        assert {"n", "mape", "max_abs_error", "bias"} <= set(m)
        assert isinstance(m["n"], int) and all(
            isinstance(m[k], float) for k in ("mape", "max_abs_error", "bias")
        )
        assert 0 <= m["mape"] <= m["max_abs_error"] < 1 and abs(m["bias"]) <= m["mape"]
    assert out["sets"]["paper-table4"]["n"] == 10 and out["sets"]["paper-table5"]["n"] == 8


def test_readable_table_names_every_set(subset_run):
    text = V.table(subset_run, verbose=True)
    for name in V.SETS:  # a set with no case yet (no FP8 rates on B200) has no worst list
        assert name in text
        assert (f"{name}: five worst cases" in text) == any(
            r.case.set == name for r in subset_run.results
        )


def _figure_from_html(html: str) -> dict:
    """The data and layout passed to Plotly.newPlot(id, data, layout, config) in a plotly page."""
    m = re.search(r'Plotly\.newPlot\(\s*"[^"]*",\s*', html)
    decoder = json.JSONDecoder()
    data, end = decoder.raw_decode(html, m.end())
    layout, _ = decoder.raw_decode(html, re.compile(r",\s*").match(html, end).end())
    return {"data": data, "layout": layout}


def test_out_writes_the_case_csv_and_the_errors_page(subset_run, tmp_path):
    written = V.write_outputs(subset_run, tmp_path / "out")
    csv_path, errors_path = written[:2]
    assert errors_path.name == "errors.html"
    rows = list(csv.DictReader(csv_path.open()))
    assert len(rows) == len(subset_run.results)
    assert rows[0]["set"] == "paper-table4" and float(rows[0]["predicted_s"]) > 0
    fig = _figure_from_html(errors_path.read_text())
    measured = [r for r in subset_run.results if r.case.set not in V.PEER_SETS]
    per_set = [t for t in fig["data"] if not t["name"].startswith("naive")]
    assert sum(len(t["y"]) for t in per_set) == len(measured)
    for t in per_set:  # each set's cases sorted by error, in percent
        assert t["y"] == sorted(t["y"])
    with_naive = [r for r in measured if r.naive_error is not None]
    naive = [t for t in fig["data"] if t["name"].startswith("naive")]
    assert len(naive[0]["y"]) == len(with_naive) if with_naive else not naive
    assert fig["layout"]["xaxis"]["type"] == "category"


def test_the_peer_simulator_has_a_page_of_its_own(subset_run):
    peers = tuple(s for s in subset_run.sets if s in V.PEER_SETS)
    fig = V.scatter_figure(subset_run, peers)
    names = {t["name"].split(" ")[0] for t in fig["data"]} - {"y"}
    assert names <= set(peers)
    assert not any(
        t["name"].startswith(p) for t in V.errors_figure(subset_run)["data"] for p in peers
    )


def test_the_scatter_draws_the_data(subset_run, tmp_path):
    html = V.scatter_html(subset_run)
    fig = _figure_from_html(html)
    assert fig["layout"]["xaxis"]["type"] == fig["layout"]["yaxis"]["type"] == "log"
    traces = {t["name"].split(" ")[0]: t for t in fig["data"]}
    with_cases = {r.case.set for r in subset_run.results}
    assert set(traces) == with_cases | {"y"}
    for name in with_cases:
        rs = [r for r in subset_run.results if r.case.set == name]
        t = traces[name]
        assert t["x"] == pytest.approx([r.case.measured_s for r in rs])
        assert t["y"] == pytest.approx([r.predicted_s for r in rs])
        assert all(r.case.name in text for r, text in zip(rs, t["text"], strict=True))
    assert len({t["marker"]["color"] for n, t in traces.items() if n != "y"}) == len(with_cases)
    want = json.loads(json.dumps(V.scatter_figure(subset_run)))  # the page draws scatter_figure
    assert fig["data"] == want["data"]
    assert {k: fig["layout"][k] for k in want["layout"]} == want[
        "layout"
    ]  # plotly adds its template
    assert len(html) > 1_000_000 and "<script src=" not in html  # plotly.js inlined


def test_validate_does_not_import_plotly_until_a_page_is_drawn():
    # the scatter figure is plain data; plotly comes in through simsp.present.timeline only to
    # draw the page
    code = (
        "import sys; from simsp import validate as V; c = V.Case('s', 'x', 1.0, None, 'hw'); v = "
        "V.Validation(('s',), (V.CaseResult(c, 1.1),), (), 0.0); fig = V.scatter_figure(v); "
        "print('plotly' in sys.modules, 'simsp.present.timeline' in sys.modules); html = "
        "V.scatter_html(v); print('plotly' in sys.modules, 'Plotly.newPlot' in html)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "True", "True"]


def test_unwritable_out_is_an_input_error(subset_run, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="--out"):
        V.write_outputs(subset_run, blocker / "sub")


def test_the_default_table_is_a_summary_and_verbose_has_the_cases(subset_run):
    short, long = V.table(subset_run), V.table(subset_run, verbose=True)
    assert short.splitlines()[0] == long.splitlines()[0]  # the same metrics header
    assert len(short.splitlines()) < len(long.splitlines())
    assert "--verbose" in short and "--verbose" not in long
