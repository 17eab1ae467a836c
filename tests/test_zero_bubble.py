"""Zero-bubble and V schedules: action orders against torch.distributed.pipelining, bubbles
against the zero-bubble paper's closed forms (Qi et al., ICLR 2024, arXiv 2401.10241, Table 2),
and the engine, the closed-form walk and the memory model agreeing on them."""

import dataclasses

import pytest

from simsp.api import run
from simsp.cost.layer_entries import LayerTime
from simsp.sim import closed_form as analytic
from simsp.sim import pipeline_time, schedule
from simsp.sim.chunk_costs import ChunkCost
from simsp.sim.engine import simulate
from simsp.sim.memory import memory_report
from simsp.sim.walk import dependencies
from simsp.spec.rules import validate
from tests.extras import needs

from .test_engine import uniform_plan

PM = [(p, m) for p in (2, 4, 8) for m in (p, 2 * p, 4 * p)]


# ---------------------------------------------------------------------------- orders vs torch
def _torch_order(cls, p, m, v):
    """`pipeline_order` of a torch schedule class, computed without building stages: the
    per-rank compute actions its constructor derives (ScheduleInterleavedZeroBubble adds
    its bubbles after)."""
    o = object.__new__(cls)
    o.pp_group_size, o._n_microbatches, o.n_local_stages = p, m, v
    o.num_stages = o._num_stages = p * v
    o.number_of_rounds = max(1, m // p)
    o.microbatches_per_round = m // o.number_of_rounds
    order = {r: o._calculate_single_rank_operations(r) for r in range(p)}
    if hasattr(cls, "_add_bubbles_to_actions"):
        o.pipeline_order = order
        order = o._add_bubbles_to_actions(p * v)
    return order


def _flat(actions):
    """Compute actions in order; an overlapped F+B pair as its forward then its backward."""
    out = []
    for a in actions:
        if a is not None:
            out += list(a.sub_actions) if a.sub_actions else [a]
    return out


CASES = [
    ("zbv", "ScheduleZBVZeroBubble", 2, "v"),
    ("dualpipev", "ScheduleDualPipeV", 2, "v"),
    ("zb-h1", "ScheduleInterleavedZeroBubble", 1, "loop"),
    ("zb-h1", "ScheduleInterleavedZeroBubble", 2, "loop"),
    ("zb-h1", "ScheduleInterleavedZeroBubble", 4, "loop"),
]


@pytest.mark.parametrize("p,m", PM)
@pytest.mark.parametrize("name,torch_name,v,style", CASES)
def test_action_orders_equal_torch_pipelining(name, torch_name, v, style, p, m):
    needs("torch")
    from torch.distributed.pipelining import schedules
    from torch.distributed.pipelining._utils import generate_rank_to_stage_mapping

    broken = schedule.REGISTRY[name].needs(p, m, v)
    if broken:  # torch refuses the same configurations
        with pytest.raises(ValueError):
            schedule.build(name, p, m, v)
        return
    theirs = _torch_order(getattr(schedules, torch_name), p, m, v)
    stages_of = generate_rank_to_stage_mapping(p, p * v, style=style)
    ours = schedule.build(name, p, m, v)
    for rank in range(p):
        expected = [
            (a.computation_type.value, a.microbatch_index, stages_of[rank].index(a.stage_index))
            for a in _flat(theirs[rank])
        ]
        assert [(a.kind, a.microbatch, a.chunk) for a in ours[rank]] == expected, rank
        for a in ours[rank]:  # and simsp's placement puts each chunk where torch does
            assert schedule.virtual_stage(p, rank, a.chunk, style) == stages_of[rank][a.chunk]


# ---------------------------------------------------------------------------- closed forms
def _plan(name, p, m, f, i, w, v=1, act=1.0, wbytes=0.5):
    """Every chunk costs F, I, W (B = I + W); communication, DP and the optimizer are free."""
    c = ChunkCost(f, i + w, 0.0, 0.0, 0.0, act, input_s=i, weight_s=w, weight_bytes=wbytes)
    return uniform_plan(
        name, p, m, schedule.chunks_of(name, v), f, i + w, layer=LayerTime(()), chunk=c
    )


COSTS = [(1.0, 1.0, 1.0), (1.0, 1.0, 0.5), (1.0, 1.25, 0.75), (1.0, 2.0, 1.0), (2.0, 1.0, 1.0)]


@pytest.mark.parametrize("f,i,w", COSTS)
@pytest.mark.parametrize("p", [2, 4, 8])
def test_1f1b_and_zb_h1_bubbles_are_the_papers(f, i, w, p):
    """1F1B: (p - 1)(T_F + T_B + T_W); ZB-H1: (p - 1)(T_F + T_B - T_W), T_B the I pass alone;
    a third of 1F1B's when the three are equal."""
    m = 4 * p
    work = m * (f + i + w)
    one = simulate(_plan("1f1b", p, m, f, i, w)).iteration_s - work
    zb = simulate(_plan("zb-h1", p, m, f, i, w)).iteration_s - work
    assert one == pytest.approx((p - 1) * (f + i + w))
    assert zb == pytest.approx((p - 1) * (f + i - w))
    if f == i == w:
        assert zb == pytest.approx(one / 3)


@pytest.mark.parametrize("p,m", PM)
def test_zb_h1_holds_no_more_than_1f1b(p, m):
    """ZB-H1 keeps 1F1B's in-flight microbatches (those awaiting their I) on every stage, and,
    where a W needs less than a full activation, no more bytes."""
    for s, (zb, one) in enumerate(
        zip(schedule.build("zb-h1", p, m), schedule.build("1f1b", p, m), strict=True)
    ):
        assert schedule.max_in_flight(zb) <= schedule.max_in_flight(one), s
    peak = lambda name: max(x.bytes for x in simulate(_plan(name, p, m, 1, 1, 1)).memory)  # noqa: E731
    assert peak("zb-h1") <= peak("1f1b")


@pytest.mark.parametrize("p", [2, 4, 8])
@pytest.mark.parametrize("mult", [2, 4, 8])
def test_zb_h2_has_no_bubble_inside_each_stage(p, mult):
    """ZB-H2 with F = I = W: once a stage starts it never waits (the paper's parallelogram), and
    it holds at most 2(p - s) - 1 microbatches awaiting their I (2p - 1 on the first stage). The
    iteration still pays the (p - 1) T_F ramp, since the optimizer step waits for every stage
    (Megatron's global gradient norm; the paper removes that wait by post-validation)."""
    m = mult * p
    sim = simulate(_plan("zb-h2", p, m, 1.0, 1.0, 1.0))
    for s in range(p):
        passes = sorted(
            (
                x
                for x in sim.spans
                if x.stage == s and x.stream == "compute" and x.kind != "optimizer"
            ),
            key=lambda x: x.start_s,
        )
        busy = sum(x.dur_s for x in passes)
        assert passes[-1].end_s - passes[0].start_s == pytest.approx(busy), s
        assert schedule.max_in_flight(schedule.build("zb-h2", p, m)[s]) <= 2 * (p - s) - 1
    assert sim.iteration_s == pytest.approx(3 * m + (p - 1))


@pytest.mark.parametrize("name", ["zb-h1", "zb-h2", "zbv", "dualpipev"])
@pytest.mark.parametrize("f,i,w", COSTS[:3])
def test_closed_form_walk_equals_the_engine(name, f, i, w):
    p, m = 4, 16
    plan = _plan(name, p, m, f, i, w)
    assert pipeline_time.iteration_s(plan) == pytest.approx(simulate(plan).iteration_s, rel=1e-12)


# ---------------------------------------------------------------------------- real workloads
def _with(w, name, v=1):
    par = dataclasses.replace(w.parallel, schedule=name, virtual_stages=v)
    return validate(dataclasses.replace(w, parallel=par), "test")


@pytest.mark.parametrize(
    "name,v", [("zb-h1", 1), ("zb-h1", 3), ("zb-h2", 1), ("zbv", 1), ("dualpipev", 1)]
)
def test_175b_engine_closed_form_and_memory_agree(workloads, hardware, name, v):
    w = _with(workloads["gpt3-175b"], name, v)
    r, e = run(w, hardware), analytic.estimate(w, hardware)
    assert e.iteration_time_s == pytest.approx(r.iteration_time_s, rel=1e-12)
    assert e.bubble_s == pytest.approx(r.breakdown()["bubble_s"], rel=1e-9, abs=1e-12)
    report = memory_report(w, hardware)
    for s in range(w.parallel.pp):  # the engine's HBM trace peaks where the memory model says
        traced = max(x.bytes for x in r.sim.memory if x.stage == s)
        assert traced == pytest.approx(report.stages[s].peak_bytes, rel=1e-12), s
    kinds = {x.kind for x in r.sim.spans}
    assert {"backward_input", "backward_weight"} <= kinds or name == "dualpipev"


def test_zb_h1_beats_1f1b_on_175b_at_equal_memory(workloads, hardware):
    w = workloads["gpt3-175b"]
    one, zb = run(_with(w, "1f1b"), hardware), run(_with(w, "zb-h1"), hardware)
    assert zb.iteration_time_s < one.iteration_time_s
    assert zb.breakdown()["bubble_s"] < one.breakdown()["bubble_s"]
    assert zb.memory.peak_bytes == pytest.approx(one.memory.peak_bytes, rel=1e-3)


def test_deferred_weight_gradient_exposes_the_collective_it_hid(workloads, hardware):
    """Megatron runs the input-gradient all-reduce / reduce-scatter alongside the weight-gradient
    GEMM (paper §6.2); with W deferred, the I pass waits for all of it."""
    lt = run(workloads["gpt3-175b"], hardware).plan.layer
    assert lt.input_tp_s > lt.backward_tp_s
    assert lt.input_s + lt.weight_s > lt.backward_s


def test_v_schedules_put_the_output_layer_on_the_first_stage(workloads, hardware):
    w = _with(workloads["gpt3-175b"], "zbv")
    assert w.parallel.last_stage == 0 and w.parallel.chunks == 2
    report = memory_report(w, hardware)
    assert (
        report.stages[0].weights_and_optimizer_bytes > report.stages[1].weights_and_optimizer_bytes
    )


def test_sweep_compares_the_seven_schedules(tmp_path, capsys):
    """workloads/sweeps/gpt3-175b-zero-bubble.yaml: one row per schedule, with time, bubble and
    peak HBM; ZB-H1 faster than 1F1B at the same peak."""
    from simsp.cli.main import main

    out = tmp_path / "s.csv"
    assert (
        main(
            [
                "sweep",
                "workloads/sweeps/gpt3-175b-zero-bubble.yaml",
                "--out",
                str(out),
                "--jobs",
                "1",
                "--no-progress",
                "--top",
                "20",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    assert "bubble s" in printed and "peak GiB" in printed
    import csv

    rows = list(csv.DictReader(out.open()))
    by = {(r["schedule"], r["virtual_stages"]): r for r in rows}
    assert {s for s, _ in by} == set(schedule.SCHEDULES)
    one, zb = by[("1f1b", "1")], by[("zb-h1", "1")]
    assert float(zb["iteration_time_s"]) < float(one["iteration_time_s"])
    assert float(zb["bubble_s"]) < float(one["bubble_s"])
    assert int(zb["peak_bytes"]) == pytest.approx(int(one["peak_bytes"]), rel=1e-3)


@pytest.mark.parametrize("name", ["zb-h1", "zb-h2", "zbv", "dualpipev"])
def test_every_action_comes_after_what_it_depends_on(name):
    """`dependencies` of each action are earlier on their own stage, or produced somewhere."""
    p, m = 4, 8
    v = schedule.chunks_of(name, 2)
    place = schedule.REGISTRY[name].placement
    stages = schedule.build(name, p, m, v)
    backwards = {
        (s, a.microbatch, a.chunk) for s, acts in enumerate(stages) for a in acts if a.kind in "BI"
    }
    for s, acts in enumerate(stages):
        for i, a in enumerate(acts):
            for stage, dep in dependencies(p, v, s, a, place):
                if dep.kind == "B":  # the next virtual stage's backward, B or I
                    assert (stage, dep.microbatch, dep.chunk) in backwards
                elif stage == s:
                    earlier = {(x.kind, x.microbatch, x.chunk) for x in acts[:i]}
                    assert (dep.kind, dep.microbatch, dep.chunk) in earlier, (name, s, a, dep)


@pytest.mark.parametrize(
    "name, v", [(n, 2 if n in ("interleaved", "zb-h1") else 1) for n in schedule.SCHEDULES]
)
def test_the_engine_follows_the_dependencies_each_schedule_declares(name, v):
    """Every compute span of the engine starts after every action sim/walk.py's
    `dependencies` names for it has ended, on every schedule kind (the engine and the
    declared dependencies are one rule)."""
    p, m = 4, 8
    plan = _plan(name, p, m, 1.0, 1.0, 1.0, v)
    sim = simulate(plan)
    kinds = {"forward": "F", "backward": "B", "backward_input": "I", "backward_weight": "W"}
    ends, starts = {}, {}
    for sp in sim.spans:
        if sp.stream == "compute" and sp.kind in kinds:
            key = (sp.stage, kinds[sp.kind], sp.microbatch, sp.chunk)
            ends[key], starts[key] = sp.end_s, sp.start_s
    checked = 0
    for s, actions in enumerate(plan.actions):
        for a in actions:
            for stage, dep in dependencies(p, plan.v, s, a, plan.placement):
                key = (stage, dep.kind, dep.microbatch, dep.chunk)
                if key not in ends:  # a "B" dependency that stage ran as an I
                    key = (stage, "I", dep.microbatch, dep.chunk)
                assert starts[(s, a.kind, a.microbatch, a.chunk)] >= ends[key] - 1e-12
                checked += 1
    assert checked > 2 * p * m
