"""The Chrome/Perfetto trace against the Trace Event Format and against the simulation it came
from."""

import json
from collections import defaultdict

import pytest

from simsp.api import run
from simsp.present.perfetto import TICKS_PER_US, TIDS, chrome_trace_json
from simsp.sim.trace import KINDS
from simsp.units import GIB

NAMES = ("gpt-22b", "gpt3-175b", "gpt-1t")


@pytest.fixture(scope="module")
def traces(workloads, hardware):
    """name -> (result, trace text, parsed trace)."""
    out = {}
    for name in NAMES:
        r = run(workloads[name], hardware)
        text = chrome_trace_json(r)
        out[name] = (r, text, json.loads(text))
    return out


def _events(doc, ph):
    return [e for e in doc["traceEvents"] if e["ph"] == ph]


@pytest.mark.parametrize("name", NAMES)
def test_top_level_object(traces, name):
    _, _, doc = traces[name]
    assert isinstance(doc["traceEvents"], list) and doc["traceEvents"]
    assert doc["displayTimeUnit"] in ("ms", "ns")
    assert doc["otherData"]["workload"] == name


@pytest.mark.parametrize("name", NAMES)
def test_every_event_has_the_required_fields(traces, name):
    _, _, doc = traces[name]
    for e in doc["traceEvents"]:
        assert isinstance(e["name"], str) and e["name"], e
        assert e["ph"] in ("X", "C", "M"), e
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int), e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
            assert e["cat"] in KINDS, e
            assert set(e["args"]) == {"microbatch", "chunk", "first_layer", "layers"}, e
        if e["ph"] == "C":
            assert all(isinstance(v, (int, float)) for v in e["args"].values()), e


@pytest.mark.parametrize("name", NAMES)
def test_names_for_every_process_and_thread_used(traces, name):
    r, _, doc = traces[name]
    meta = _events(doc, "M")
    processes = {e["pid"]: e["args"]["name"] for e in meta if e["name"] == "process_name"}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta if e["name"] == "thread_name"}
    used = {e["pid"] for e in doc["traceEvents"]}
    assert set(processes) == used
    assert all(processes[p] == f"stage {p}" for p in used)
    x_threads = {(e["pid"], e["tid"]) for e in _events(doc, "X")}
    assert set(threads) == x_threads, (
        "a thread name for each thread with spans, and no empty threads"
    )
    assert all(threads[(p, t)] == {v: k for k, v in TIDS.items()}[t] for p, t in x_threads)


@pytest.mark.parametrize("name", NAMES)
def test_one_track_per_stage_and_stream(traces, name):
    r, _, doc = traces[name]
    meta = {
        (e["pid"], e["tid"]): e["args"]["name"]
        for e in _events(doc, "M")
        if e["name"] == "thread_name"
    }
    tracks = {(e["pid"], meta[(e["pid"], e["tid"])]) for e in _events(doc, "X")}
    expected = {(s.stage, s.stream) for s in r.sim.spans}
    if name == "gpt-22b":  # op level: the TP collectives get their own track
        expected |= {(0, "tp_comm")}
    assert tracks == expected
    assert len({(e["pid"], e["tid"]) for e in _events(doc, "X")}) == len(tracks)


@pytest.mark.parametrize("name", ["gpt3-175b", "gpt-1t"])
def test_chunk_level_trace_has_one_event_per_span(traces, name):
    r, _, doc = traces[name]
    xs = _events(doc, "X")
    assert len(xs) == len(r.sim.spans)
    by_key = {(e["pid"], e["tid"], e["ts"]) for e in xs}
    tick = 1 / TICKS_PER_US
    for s in r.sim.spans[:500]:
        ts = round(s.start_s * 1e6 * TICKS_PER_US) * tick
        assert (s.stage, TIDS[s.stream], ts) in by_key
        assert abs(ts - s.start_s * 1e6) <= tick / 2 + 1e-9


@pytest.mark.parametrize("name", NAMES)
def test_events_nest_properly_on_every_thread(traces, name):
    """Viewers need each thread's slices to nest: a slice ends before its sibling starts, adding
    ts + dur in floating point as they do."""
    _, _, doc = traces[name]
    threads = defaultdict(list)
    for e in _events(doc, "X"):
        threads[(e["pid"], e["tid"])].append(e)
    for key, events in threads.items():
        stack = []
        for e in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            end = e["ts"] + e["dur"]
            while stack and stack[-1] <= e["ts"]:
                stack.pop()
            assert not stack or end <= stack[-1], (key, e)
            stack.append(end)


def test_op_level_ops_nest_inside_their_chunk(traces):
    r, _, doc = traces["gpt-22b"]
    xs = _events(doc, "X")
    chunks = [e for e in xs if e["tid"] == TIDS["compute"] and e["args"]["layers"] > 1]
    ops = [
        e
        for e in xs
        if e["tid"] == TIDS["compute"] and e["args"]["layers"] <= 1 and e["cat"] != "optimizer"
    ]
    tp = [e for e in xs if e["tid"] == TIDS["tp_comm"]]
    assert len(chunks) == 2 and ops and tp
    for c in chunks:
        inside = [
            o
            for o in ops
            if c["ts"] <= o["ts"]
            and o["ts"] + o["dur"] <= c["ts"] + c["dur"]
            and o["args"]["microbatch"] == c["args"]["microbatch"]
        ]
        assert inside, c
        layers = {o["args"]["first_layer"] for o in inside if o["args"]["first_layer"] >= 0}
        assert layers == set(
            range(c["args"]["first_layer"], c["args"]["first_layer"] + c["args"]["layers"])
        )


@pytest.mark.parametrize("name", NAMES)
def test_hbm_counters_follow_the_memory_samples(traces, name):
    r, _, doc = traces[name]
    counters = _events(doc, "C")
    assert {e["name"] for e in counters} == {"HBM"}
    assert {e["pid"] for e in counters} == set(range(r.plan.p))
    for stage in r.memory.stages:
        peak = max(e["args"]["GiB"] for e in counters if e["pid"] == stage.stage)
        assert peak == pytest.approx(stage.peak_bytes / GIB, abs=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_json_round_trip(traces, name):
    _, text, doc = traces[name]
    assert json.loads(json.dumps(doc)) == doc
    assert json.dumps(doc, separators=(",", ":"), ensure_ascii=False) == text


def test_deterministic(workloads, hardware):
    first = chrome_trace_json(run(workloads["gpt3-175b"], hardware))
    assert chrome_trace_json(run(workloads["gpt3-175b"], hardware)) == first
