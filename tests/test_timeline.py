"""The plotly timeline: levels of detail, the op expansion, one trace per kind, size of the 1T
page."""

import json
import re
import subprocess
import sys

import pytest

from simsp.cli.main import main
from simsp.present.timeline import (
    BAR_BUDGET,
    KIND_STYLE,
    choose_view,
    expand,
    expand_span,
    expanded_count,
    figure,
    idle_spans,
    memory_lines,
    merge_runs,
    timeline_html,
)
from simsp.sim.trace import Span
from simsp.units import GIB
from tests.conftest import ROOT

MB = 1e6


@pytest.fixture(scope="module")
def page_1t(results):
    return timeline_html(results("gpt-1t"))


def _bar_traces(fig):
    return [t for t in fig.data if t.type == "bar"]


@pytest.mark.parametrize(
    "name,level",
    [
        ("gpt-22b", "op"),
        ("gpt3-175b", "chunk"),
        ("mt-nlg-530b", "aggregated"),
        ("gpt-1t", "aggregated"),
    ],
)
def test_level_of_detail_follows_the_bar_budget(results, name, level):
    view = choose_view(results(name))
    assert view.level == level
    assert len(view.bars) <= BAR_BUDGET
    assert view.note


def test_one_bar_trace_per_kind(results):
    for name in ("gpt-22b", "gpt3-175b", "gpt-1t"):
        r = results(name)
        view = choose_view(r)
        bars = _bar_traces(figure(r, view))
        kinds = {b.kind for b in view.bars}
        assert len(bars) == len(kinds), name
        assert sorted(t.legendgroup for t in bars) == sorted(kinds)
        assert sum(len(t.base) for t in bars) == len(view.bars)


def test_chunk_level_draws_every_span_and_the_bubbles(results):
    r = results("gpt3-175b")
    view = choose_view(r)
    kinds = {b.kind for b in view.bars}
    assert {
        "forward",
        "backward",
        "tp_comm",
        "pp_send",
        "dp_allreduce",
        "optimizer",
        "idle",
    } <= kinds
    assert set(r.sim.spans) <= set(view.bars)
    assert {(b.stage, b.stream) for b in view.bars} >= {(s, "tp_comm") for s in range(r.plan.p)}


def test_page_is_self_contained_plotly(results):
    html = timeline_html(results("gpt3-175b"))
    assert 'id="simsp-timeline"' in html and 'class="plotly-graph-div"' in html
    assert "Plotly.newPlot" in html
    assert not re.search(r"<script[^>]+src=", html), (
        "plotly.js must be inline, the page has to open offline"
    )
    assert "<title>simsp timeline: gpt3-175b on dgx-a100-80gb</title>" in html
    plain = html.replace("\\u002f", "/").replace("\\/", "/")  # plotly escapes '/' inside <script>
    for label in (
        "forward",
        "backward",
        "PP send",
        "TP comm",
        "idle / bubble",
        "capacity (80 GiB)",
    ):
        assert len(re.findall(r'"name":\s*"' + re.escape(label) + '"', plain)) == 1, label


def test_page_is_deterministic(results):
    r = results("gpt-22b")
    assert timeline_html(r) == timeline_html(r)


def test_title_names_workload_hardware_and_iteration_time(results):
    r = results("gpt3-175b")
    title = figure(r).layout.title
    assert "gpt3-175b" in title.text and "dgx-a100-80gb" in title.text
    assert f"{r.iteration_time_s:.3f} s" in title.text
    assert "pp=8" in title.subtitle.text


def test_the_page_keeps_the_runs_measured_accuracy(results):
    """The line `simsp run` ends with, under the title: the picture keeps its caveat."""
    from simsp.present.accuracy import accuracy_line
    from simsp.present.timeline.page import _wrap

    r = results("gpt3-175b")
    note = next(a.text for a in figure(r).layout.annotations if "validated " in a.text)
    head = _wrap(choose_view(r).note) + "<br>"
    want = accuracy_line(r.hardware, r.workload.training.precision)
    assert note.startswith(head) and note[len(head) :].replace("<br>", " ") == want


def test_a_run_without_tp_draws_no_tp_row():
    """tp 1: no TP collective, so the chunk level draws no TP-row span (it drew one a chunk)."""
    from simsp.api import run
    from simsp.io.config import load_hardware, load_workload

    w = load_workload(ROOT / "workloads" / "llama-3.1-8b.yaml")
    assert w.parallel.tp == 1
    view = choose_view(run(w, load_hardware(ROOT / "hardware" / "dgx-h100.yaml")))
    assert view.level == "chunk"
    assert not [b for b in view.bars if b.stream == "tp_comm"] and "TP row" not in view.note


def test_aggregated_mode_for_the_1t_model_says_so(results, page_1t):
    view = choose_view(results("gpt-1t"))
    assert view.level == "aggregated"
    assert "AGGREGATED" in view.note
    assert "AGGREGATED view" in page_1t
    assert {b.kind for b in view.bars} >= {"forward", "mixed", "idle", "optimizer"}
    assert {b.stage for b in view.bars} == set(range(64)), "every stage keeps its compute row"


def test_1t_page_is_under_20_mb(page_1t):
    assert len(page_1t.encode()) < 20 * MB


def test_forward_span_expands_into_its_layers_ops(results):
    r = results("gpt3-175b")
    plan, lt = r.plan, r.plan.layer
    span = next(s for s in r.sim.spans if s.kind == "forward" and s.stage == 3)
    ops = expand_span(plan, span)
    compute = [o for o in ops if o.stream == "compute"]
    tp = [o for o in ops if o.stream == "tp_comm"]
    per_layer = sum(1 for e in lt.entries if e.phase == "forward" and e.stream == "compute")
    assert len(compute) == per_layer * span.layers
    assert {o.first_layer for o in ops} == set(
        range(span.first_layer, span.first_layer + span.layers)
    )
    assert all(span.start_s - 1e-12 <= o.start_s and o.end_s <= span.end_s + 1e-12 for o in ops)
    exposed = sum(o.dur_s for o in tp)  # forward collectives block compute
    assert sum(o.dur_s for o in compute) + exposed == pytest.approx(span.dur_s, rel=1e-9)
    assert max(o.end_s for o in ops) == pytest.approx(span.end_s, rel=1e-12)


def test_backward_span_runs_recompute_then_backward_per_layer_in_reverse(results):
    r = results("gpt3-175b")
    span = next(s for s in r.sim.spans if s.kind == "backward" and s.stage == 5)
    ops = [o for o in expand_span(r.plan, span) if o.stream == "compute"]
    layers = [o.first_layer for o in ops]
    assert layers == sorted(layers, reverse=True)
    first_layer_ops = [o.kind for o in ops if o.first_layer == layers[0]]
    assert first_layer_ops[0] == "recompute" and first_layer_ops[-1] == "backward"
    assert {o.kind for o in ops} == {"recompute", "backward"}
    assert max(o.end_s for o in expand_span(r.plan, span)) == pytest.approx(span.end_s, rel=1e-12)


def test_first_and_last_chunks_show_embedding_and_output_layer(results):
    r = results("gpt3-175b")
    last_vs = r.plan.p * r.plan.v - 1
    first = next(s for s in r.sim.spans if s.kind == "forward" and s.stage == 0 and s.chunk == 0)
    last = next(
        s for s in r.sim.spans if s.kind == "forward" and s.chunk * r.plan.p + s.stage == last_vs
    )
    f_ops, l_ops = expand_span(r.plan, first), expand_span(r.plan, last)
    assert f_ops[0].kind == "embedding" and f_ops[0].start_s == first.start_s
    assert l_ops[-1].kind == "embedding" and l_ops[-1].end_s == pytest.approx(last.end_s, rel=1e-12)
    c = r.plan.chunks[0]
    assert f_ops[0].dur_s == pytest.approx(
        c.forward_s - first.layers * r.plan.layer.forward_s, rel=1e-9
    )
    middle = next(s for s in r.sim.spans if s.kind == "forward" and s.stage == 3)
    assert all(o.kind != "embedding" for o in expand_span(r.plan, middle))


def test_single_chunk_model_splits_embedding_and_output(results):
    r = results("gpt-22b")
    ops = expand(r.plan, r.sim.spans, 0.25)
    fwd = [o for o in ops if o.kind == "embedding" and o.microbatch == 0]
    assert len(fwd) == 4  # embedding + output layer, forward and backward
    assert len(ops) == expanded_count(r.plan, r.sim.spans)


def test_idle_fills_what_the_streams_leave(results):
    r = results("gpt3-175b")
    end = r.iteration_time_s
    idle = idle_spans(r.sim.spans, end)
    for stage in range(r.plan.p):
        busy = sorted(
            (s.start_s, s.end_s)
            for s in r.sim.spans
            if s.stage == stage and s.stream in ("compute", "pp_comm", "dp_comm")
        )
        covered, cursor = 0.0, 0.0
        for a, b in busy:
            covered += max(0.0, b - max(a, cursor))
            cursor = max(cursor, b)
        gaps = sum(s.dur_s for s in idle if s.stage == stage)
        assert covered + gaps == pytest.approx(end, rel=1e-9)


def test_merge_runs_joins_close_compute_spans_only():
    spans = [
        Span(0, "compute", "forward", "F0", 0.0, 1.0, 0),
        Span(0, "compute", "forward", "F1", 1.05, 1.0, 1),
        Span(0, "compute", "backward", "B0", 2.1, 2.0, 0),
        Span(0, "compute", "backward", "B1", 9.0, 2.0, 1),
        Span(0, "compute", "optimizer", "opt", 11.0, 0.5),
        Span(1, "compute", "forward", "F0", 0.5, 1.0, 0),
    ]
    out = merge_runs(spans, gap_s=0.2)
    assert [(s.stage, s.kind, s.start_s, s.end_s) for s in out] == [
        (0, "mixed", 0.0, 4.1),
        (0, "backward", 9.0, 11.0),
        (0, "optimizer", 11.0, 11.5),
        (1, "forward", 0.5, 1.5),
    ]
    assert "3 spans merged" in out[0].name


def test_memory_lines_keep_each_stage_peak_and_group_many_stages(results):
    for name, lines in (("gpt3-175b", 8), ("gpt-1t", 8)):
        r = results(name)
        got = memory_lines(r)
        assert len(got) == lines
        assert max(v.max() for _, _, v in got) == pytest.approx(r.memory.peak_bytes, rel=1e-9)
        assert all(len(t) <= 2001 for _, t, _ in got)
    assert memory_lines(results("gpt-1t"))[0][0] == "stages 0-7 (max)"


def test_memory_subplot_shares_the_time_axis_and_shows_capacity(results):
    r = results("gpt3-175b")
    fig = figure(r)
    lines = [t for t in fig.data if t.type == "scatter"]
    cap = [t for t in lines if t.name.startswith("capacity")]
    assert len(cap) == 1 and list(cap[0].y) == [r.memory.capacity_bytes / GIB] * 2
    assert all(t.xaxis == "x2" for t in lines) and fig.layout.xaxis.matches == "x2"


def test_cli_writes_timeline_and_trace(tmp_path, capsys):
    html, trace = tmp_path / "t.html", tmp_path / "t.json"
    workload = str(ROOT / "workloads" / "gpt-22b.yaml")
    assert main(["run", workload, "--timeline", str(html), "--trace", str(trace), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["iteration_time_s"] > 0
    assert "<html>" in html.read_text()[:100] and json.loads(trace.read_text())["traceEvents"]


def test_only_timeline_imports_plotly():
    code = (
        "import sys, simsp.present.perfetto, simsp.present.report; print('plotly' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False", "simsp.present.perfetto must not pull in plotly"


def test_every_kind_has_a_style():
    from simsp.sim.trace import KINDS

    assert set(KINDS) <= set(KIND_STYLE)
