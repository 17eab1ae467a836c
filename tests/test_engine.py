"""The engine against closed forms, the memory model and itself."""

import dataclasses
import json
from fractions import Fraction

import pytest

from simsp.api import run
from simsp.sim import schedule
from simsp.sim.chunk_costs import ChunkCost
from simsp.sim.engine import simulate
from simsp.sim.memory import memory_report
from simsp.sim.plan import Plan


def uniform_plan(name, p, m, v, tf, tb, nbytes=0.0, layer=None, chunk=None):
    """A plan whose every chunk costs tf/tb (or is `chunk`) and where communication and the
    optimizer are free."""
    chunk = chunk or ChunkCost(tf, tb, 0.0, 0.0, 0.0, nbytes)
    return Plan(
        p=p,
        v=v,
        m=m,
        actions=schedule.build(name, p, m, v),
        chunks=(chunk,) * (p * v),
        chunk_layers=(1,) * (p * v),
        p2p_s=0.0,
        dp_s=(0.0,) * p,
        overlap_dp=False,
        dp_buckets=(1,) * p,
        embedding_sync_s=0.0,
        optimizer_s=(0.0,) * p,
        weights_bytes=(0.0,) * p,
        layer=layer,
        schedule=name,
    )


@pytest.mark.parametrize("name", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p,m", [(1, 1), (1, 7), (2, 4), (4, 8), (8, 3), (8, 64)])
def test_gpipe_and_1f1b_take_m_plus_p_minus_1_slots(name, p, m):
    tf, tb = 0.25, 0.5  # exact in binary floating point
    assert simulate(uniform_plan(name, p, m, 1, tf, tb)).iteration_s == (m + p - 1) * (tf + tb)


@pytest.mark.parametrize("p,m,v", [(2, 4, 2), (4, 8, 2), (4, 8, 4), (8, 64, 3), (8, 16, 3)])
def test_interleaved_takes_m_plus_p_minus_1_over_v_slots(p, m, v):
    tf, tb = 1.0, 2.0  # whole-model costs; each chunk does 1/v of it
    sim = simulate(uniform_plan("interleaved", p, m, v, tf / v, tb / v))
    expected = (Fraction(m) + Fraction(p - 1, v)) * Fraction(3)
    assert sim.iteration_s == pytest.approx(float(expected), rel=1e-12)


def test_single_stage_is_m_times_the_layer_sum(workloads, hardware):
    w = workloads["gpt-22b"]
    w = dataclasses.replace(w, training=dataclasses.replace(w.training, global_batch=16))
    r = run(w, hardware)
    c = r.plan.chunks[0]
    compute = sum(s.dur_s for s in r.sim.spans if s.kind in ("forward", "backward"))
    assert compute == pytest.approx(w.microbatches * (c.forward_s + c.backward_s), rel=1e-12)
    assert w.microbatches == 4
    layer_sum = w.model.layers * (r.plan.layer.forward_s + r.plan.layer.backward_s)
    extras = c.forward_s + c.backward_s - layer_sum  # embedding + output layer, once per microbatch
    assert compute == pytest.approx(w.microbatches * (layer_sum + extras), rel=1e-12)


@pytest.mark.parametrize("name", ["gpt-22b", "gpt3-175b", "mt-nlg-530b"])
def test_memory_curve_peaks_at_the_memory_model(workloads, hardware, name):
    r = run(workloads[name], hardware)
    analytic = memory_report(workloads[name], hardware)
    for stage in analytic.stages:
        peak = max(s.bytes for s in r.sim.memory if s.stage == stage.stage)
        assert peak == pytest.approx(stage.peak_bytes, rel=1e-9), stage.stage


@pytest.mark.parametrize("sched,v", [("gpipe", 1), ("1f1b", 1)])
def test_memory_curve_peaks_at_the_memory_model_for_other_schedules(workloads, hardware, sched, v):
    w = workloads["gpt3-175b"]
    w = dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, schedule=sched, virtual_stages=v)
    )
    r = run(w, hardware)
    for stage in memory_report(w, hardware).stages:
        peak = max(s.bytes for s in r.sim.memory if s.stage == stage.stage)
        assert peak == pytest.approx(stage.peak_bytes, rel=1e-9)


def test_same_input_same_json(workloads, hardware):
    a = json.dumps(run(workloads["gpt3-175b"], hardware).to_dict())
    b = json.dumps(run(workloads["gpt3-175b"], hardware).to_dict())
    assert a == b


def test_breakdown_sums_to_the_iteration(workloads, hardware):
    r = run(workloads["gpt3-175b"], hardware)
    br = r.breakdown()
    parts = sum(
        br[k]
        for k in ("compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "bubble_s", "optimizer_s")
    )
    assert parts == pytest.approx(r.iteration_time_s, rel=1e-12)
    assert all(
        br[k] >= 0
        for k in ("compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "bubble_s", "optimizer_s")
    )


def test_summary_never_prints_a_negative_zero():
    """The bubble is a residual: float noise around zero prints 0.000, not -0.000."""
    from simsp.present.report import _seconds

    assert (_seconds(-3e-12), _seconds(0.0), _seconds(0.0126), _seconds(-0.25)) == (
        "0.000",
        "0.000",
        "0.013",
        "-0.250",
    )


def test_dp_adds_gradient_all_reduce_and_overlap_hides_some(workloads, hardware):
    w = workloads["gpt3-175b"]
    dp = dataclasses.replace(
        w,
        parallel=dataclasses.replace(w.parallel, dp=4),
        training=dataclasses.replace(w.training, global_batch=256),
    )
    ov = dataclasses.replace(
        dp, parallel=dataclasses.replace(dp.parallel, overlap_grad_reduce=True)
    )
    t1, t4, t4o = (run(x, hardware).iteration_time_s for x in (w, dp, ov))
    assert t4 > t1 and t4o < t4


def test_overlapped_gradient_buckets():
    """One bucket cannot start before the backward ends; many hide all but the last bucket."""
    from simsp.cost.gradient_sync import gradients_done_s

    assert gradients_done_s(10.0, 8.0, 10.0, 1.0, 1, overlap=False) == 11.0
    assert gradients_done_s(10.0, 8.0, 10.0, 1.0, 1, overlap=True) == 11.0
    assert (
        gradients_done_s(10.0, 8.0, 10.0, 1.0, 4, overlap=True) == 10.25
    )  # backward-bound: last bucket
    assert (
        gradients_done_s(10.0, 8.0, 10.0, 8.0, 4, overlap=True) == 16.5
    )  # comm-bound: 8 + 2/4 + 8
    assert (
        gradients_done_s(12.0, 8.0, 10.0, 1.0, 4, overlap=True) == 12.0
    )  # the stage was busy anyway


def test_backward_beside_the_reduction_runs_on_the_sms_it_leaves():
    """A reduction holding a share u of the SMs slows the backward beside it by u x its hidden
    seconds; what it outlasts the backward by is exposed as before; not overlapped, no change."""
    from simsp.cost.gradient_sync import gradients_done_s

    # compute-bound: 1 s of reduction all hidden, the stage ends 0.2 s later
    assert gradients_done_s(12.0, 8.0, 10.0, 1.0, 4, True, sm_share=0.2) == 12.2
    # comm-bound: ends with the reduction (16.5), 1.5 s of it hidden, 10 + 0.3 < 16.5
    assert gradients_done_s(10.0, 8.0, 10.0, 8.0, 4, True, sm_share=0.2) == 16.5
    assert gradients_done_s(10.0, 8.0, 10.0, 1.0, 1, False, sm_share=0.2) == 11.0


def test_each_model_chunk_reduces_after_its_own_last_backward():
    """Interleaved: chunk 1 finished its backwards at 4 s, chunk 0 at 10 s. Its 3 s reduction
    runs from 4 s (done 7 s), then chunk 0's 1 s in 4 buckets over 8-10 s: done 10.25 s, where
    one window, the last backward, with all 4 s in 5 buckets gives 8 + 0.4 + 4 = 12.4 s."""
    import pytest

    from simsp.cost.gradient_sync import chunked_gradients_done_s, gradients_done_s

    windows = ((8.0, 10.0, 1.0, 4), (3.0, 4.0, 3.0, 1))
    assert chunked_gradients_done_s(10.0, windows, overlap=True) == 10.25
    assert gradients_done_s(10.0, 8.0, 10.0, 4.0, 5, overlap=True) == pytest.approx(12.4)
    assert chunked_gradients_done_s(10.0, windows, overlap=False) == 14.0
    # a backlog: chunk 1's 9 s reduction still runs when chunk 0's buckets are ready
    late = ((8.0, 10.0, 1.0, 4), (3.0, 4.0, 9.0, 1))
    assert chunked_gradients_done_s(10.0, late, overlap=True) == 14.0


def test_chunk_gradients_split_the_stage_by_chunk_params():
    """Shares follow each chunk's parameters (the embedding rides on virtual stage 0); only
    chunk 0 is bucketed (Megatron's disable_bucketing=(model_chunk_idx > 0))."""
    import pytest

    from simsp.cost.gradient_sync import chunk_gradients
    from simsp.io.config import load_workload
    from simsp.model.params import chunk_params

    w = load_workload("workloads/llama-3.1-70b.yaml")
    par = w.parallel
    grads = chunk_gradients(w, 0)
    assert len(grads) == par.chunks and sum(s for s, _ in grads) == pytest.approx(1.0)
    assert grads[0][1] > 1 and all(b == 1 for _, b in grads[1:])
    first, second = chunk_params(w.model, par, 0), chunk_params(w.model, par, par.pp)
    assert grads[0][0] / grads[1][0] == pytest.approx(first / second)
    assert first > second  # the embedding


def test_a_watched_replay_is_the_same_replay_in_slices():
    """simulate with a progress bar runs the same events in slices of simulated time and steps
    the bar engine.PROGRESS_STEPS times (whatever the estimate's error)."""
    from simsp.cost import cost_model
    from simsp.io.config import load_hardware, load_workload
    from simsp.sim.engine import PROGRESS_STEPS
    from simsp.sim.pipeline_time import iteration_s
    from simsp.sim.plan import build_plan

    class Bar:
        steps = closed = 0

        def step(self):
            self.steps += 1

        def close(self):
            self.closed += 1

    plan = build_plan(load_workload("workloads/gpt3-175b.yaml"), cost_model(load_hardware()))
    plain = simulate(plan)
    for expected in (iteration_s(plan), 0.5 * iteration_s(plan), 3.0 * iteration_s(plan)):
        bar = Bar()
        watched = simulate(plan, bar, expected)
        assert watched == plain
        assert (bar.steps, bar.closed) == (PROGRESS_STEPS, 1)


def test_an_event_falls_due_at_the_time_it_was_given():
    """A send's end is computed as (start + compute) + transfer; simpy's own scheduling would
    add a delay to now, and 0.2 + (0.9 - 0.2) is not 0.9: the engine's events fall due at the
    time itself."""
    import simpy

    from simsp.sim.engine import _Clock

    now, when = 0.2, 0.9
    assert now + (when - now) != when
    env = _Clock(initial_time=now)
    fired = []
    env.at(simpy.Event(env), when).callbacks.append(lambda ev: fired.append(env.now))
    env.run()
    assert fired == [when]


@pytest.mark.parametrize(
    "name,p,m,v",
    [("1f1b", 4, 8, 1), ("interleaved", 4, 8, 2), ("zb-h2", 4, 9, 1), ("zbv", 4, 8, 2)],
)
def test_one_simpy_event_per_action(name, p, m, v):
    """Each action costs the event loop one event (its end, or its send's end, which also wakes
    the stage waiting for it); besides those, each stage's process starts and ends."""
    from simsp.sim.engine import _Run

    plan = dataclasses.replace(uniform_plan(name, p, m, v, 0.1, 0.3), p2p_s=0.07)
    replay = _Run(plan)
    for s in range(p):
        replay.env.process(replay.stage(s))
    steps = 0
    while replay.env.peek() < float("inf"):
        replay.env.step()
        steps += 1
    assert steps == sum(map(len, plan.actions)) + 2 * p
    assert not replay.handoffs  # every output handed over


def test_the_trace_reads_as_spans_and_samples_from_a_few_bytes_a_row(results):
    """Spans and memory samples are kept as columns (sim/columns.py), 64 bytes a span at most,
    and read as Span and MemorySample records: by stage, each stage's in the order it ran them;
    indexing and slicing agree with iterating."""
    from simsp.sim.trace import MemorySample, Span

    r = results("gpt3-175b")
    spans, memory = r.sim.spans, r.sim.memory
    rows = spans.stages[0]
    columns = (rows.code, rows.start_s, rows.dur_s, rows.microbatch, rows.chunk)
    assert sum(c.itemsize for c in columns) <= 64
    listed = list(spans)
    assert len(listed) == len(spans) == sum(len(b) for b in spans.stages)
    assert all(isinstance(s, Span) for s in listed)
    assert [s.stage for s in listed] == sorted(s.stage for s in listed)
    assert spans[:7] == tuple(listed[:7]) and spans[-1] == listed[-1] and spans[100] == listed[100]
    for stage in (0, r.plan.p - 1):
        mine = [s for s in listed if s.stage == stage]
        assert list(spans.of_stage(stage)) == mine
        compute = [s for s in mine if s.kind in ("forward", "backward")]
        assert all(a.end_s <= b.start_s for a, b in zip(compute, compute[1:], strict=False))
    first = next(s for s in listed if s.kind == "forward" and s.stage == 1)
    assert first.name == f"F mb{first.microbatch} c{first.chunk}" and first.layers > 0
    samples = list(memory)
    assert len(samples) == len(memory) and all(isinstance(m, MemorySample) for m in samples)
    assert {m.stage for m in samples} == set(range(r.plan.p))
