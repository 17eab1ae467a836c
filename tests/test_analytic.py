"""The closed form shares the engine's costs and equals its event simulation to 1e-12 (the
schedules' walks: sim/rounds.py, sim/gpipe.py, pipeline_time.walk; 1F1B's formula where exact)."""

import dataclasses
import itertools

import pytest

from simsp.cost import cost_model
from simsp.errors import InputError
from simsp.sim import closed_form as analytic
from simsp.sim import memory, pipeline_time
from simsp.sim.chunk_costs import ChunkCost
from simsp.sim.engine import simulate
from simsp.sim.memory import memory_report
from simsp.sim.plan import StageCosts, build_plan
from simsp.spec.rules import validate

from .conftest import PAPER_MODELS

PLAN_FIELDS = (
    "p",
    "v",
    "m",
    "chunks",
    "p2p_s",
    "dp_s",
    "overlap_dp",
    "embedding_sync_s",
    "optimizer_s",
)


def variant(w, micro_batch=None, global_batch=None, **parallel):
    """A validated copy of w with parallel and batch fields replaced; None when it breaks a rule."""
    training = dataclasses.replace(
        w.training,
        **{k: v for k, v in (("micro_batch", micro_batch), ("global_batch", global_batch)) if v},
    )
    w = dataclasses.replace(
        w, training=training, parallel=dataclasses.replace(w.parallel, **parallel)
    )
    try:
        return validate(w, "test")
    except InputError:
        return None


def grid_175b(base):
    """GPT-3 175B on 64 GPUs: tp x pp x SP x recompute x schedule, every valid combination."""
    out = []
    for tp, pp, sp, rc, (sched, v) in itertools.product(
        (2, 4, 8, 16),
        (2, 4, 8, 16),
        (True, False),
        ("none", "selective", "full"),
        (("1f1b", 1), ("interleaved", 3), ("gpipe", 1)),
    ):
        if tp * pp <= 64:
            w = variant(
                base,
                tp=tp,
                pp=pp,
                dp=64 // (tp * pp),
                sequence_parallel=sp,
                recompute=rc,
                schedule=sched,
                virtual_stages=v,
            )
            if w is not None:
                out.append(w)
    return out


def engine_s(w, hw):
    return simulate(build_plan(w, cost_model(hw))).iteration_s


def test_costs_are_the_plans_costs_exactly(workloads, hardware):
    """No second cost model: the memoised costs equal build_plan's, field by field, to the bit."""
    base = workloads["gpt3-175b"]
    cases = (
        [workloads[n] for n in PAPER_MODELS]
        + grid_175b(base)[::9]
        + [
            variant(base, tp=8, pp=1, dp=8, schedule="1f1b", virtual_stages=1),
            variant(
                base,
                overlap_grad_reduce=True,
                distributed_optimizer=True,
                deallocate_pipeline_outputs=False,
            ),
            variant(base, tp=4, pp=4, dp=4, micro_batch=2, schedule="gpipe", virtual_stages=1),
        ]
    )
    # the same run with each loss kernel, one after another: the memo keys on it
    losses = [
        dataclasses.replace(base, training=dataclasses.replace(base.training, cross_entropy=ce))
        for ce in ("te", "native", "unfused")
    ]
    for w in cases + losses:
        plan, costs = build_plan(w, cost_model(hardware)), analytic.costs(w, hardware)
        for field in PLAN_FIELDS:
            assert getattr(costs, field) == getattr(plan, field), (field, w.parallel)


def test_peak_from_candidate_stages_equals_the_full_report(workloads, hardware):
    """Screening takes the peak over stages 0, 1 and p - 1 only; that is the whole report's peak."""
    base = workloads["gpt3-175b"]
    cases = [workloads[n] for n in PAPER_MODELS] + grid_175b(base)[::5]
    cases += [variant(base, micro_batch=mb, deallocate_pipeline_outputs=False) for mb in (1, 2)]
    cases += [
        variant(base, global_batch=8 * g, virtual_stages=v) for g in (1, 2, 3) for v in (2, 3, 4)
    ]
    for w in filter(None, cases):
        expected = memory_report(w, hardware)
        assert memory.peak_bytes(w) == expected.peak_bytes, w.parallel


@pytest.mark.parametrize("name", PAPER_MODELS)
def test_paper_workloads_equal_the_engine(workloads, hardware, name):
    w = workloads[name]
    assert analytic.estimate(w, hardware).iteration_time_s == pytest.approx(
        engine_s(w, hardware), rel=1e-12
    )


def test_interleaved_param_gather_same_in_both_tiers(workloads, hardware):
    """The per-chunk overlapped parameter gather (gradient_sync.interleaved_gather_exposed_s)
    reaches both tiers through the one assembly: equal costs, equal times."""
    w = variant(
        workloads["gpt3-175b"],
        tp=8,
        pp=4,
        dp=2,
        virtual_stages=3,
        distributed_optimizer=True,
        overlap_grad_reduce=True,
        overlap_param_gather=True,
    )
    plan, costs = build_plan(w, cost_model(hardware)), analytic.costs(w, hardware)
    assert costs.param_gather_s == plan.param_gather_s and max(plan.param_gather_s) > 0
    assert analytic.estimate(w, hardware).iteration_time_s == pytest.approx(
        engine_s(w, hardware), rel=1e-12
    )


def test_175b_grid_equals_the_engine_on_every_classic_schedule(workloads, hardware):
    """GPT-3 175B on 64 GPUs, every valid (tp, pp, SP, recompute) under 1F1B, interleaved (3
    chunks) and GPipe: the closed form equals the event simulation to 1e-12 on each."""
    worst = {}
    cases = grid_175b(workloads["gpt3-175b"])
    assert len(cases) > 100
    for w in cases:
        t = engine_s(w, hardware)
        error = abs(analytic.estimate(w, hardware).iteration_time_s / t - 1)
        worst[w.parallel.schedule] = max(worst.get(w.parallel.schedule, 0.0), error)
    assert set(worst) == {"1f1b", "interleaved", "gpipe"}
    assert max(worst.values()) < 1e-12, worst


def test_micro_batch_and_dp_variants_equal_the_engine(workloads, hardware):
    base = workloads["gpt3-175b"]
    cases = [
        variant(
            base, tp=t, pp=p, dp=64 // (t * p), micro_batch=mb, recompute=rc, overlap_grad_reduce=ov
        )
        for t, p in ((4, 4), (8, 2), (2, 16))
        for mb in (1, 2, 4)
        for rc in ("selective", "full")
        for ov in (False, True)
    ]
    for w in filter(None, cases):
        assert analytic.estimate(w, hardware).iteration_time_s == pytest.approx(
            engine_s(w, hardware), rel=1e-12
        )


def test_no_pipeline_is_exact(workloads, hardware):
    """p = 1: m (F + B), then DP and the optimizer, with nothing for the formula to approximate."""
    w = variant(
        workloads["gpt3-175b"],
        tp=8,
        pp=1,
        dp=8,
        schedule="1f1b",
        virtual_stages=1,
        global_batch=512,
    )
    assert analytic.estimate(w, hardware).iteration_time_s == pytest.approx(
        engine_s(w, hardware), rel=1e-12
    )
    w = workloads["gpt-22b"]
    assert analytic.estimate(w, hardware).iteration_time_s == pytest.approx(
        engine_s(w, hardware), rel=1e-12
    )


def uniform(p, m, v=1, f=1.0, b=2.0, c=0.0):
    chunk = ChunkCost(f, b, 0.0, 0.0, 0.0, 0.0)
    return StageCosts(
        p=p,
        v=v,
        m=m,
        chunks=(chunk,) * (p * v),
        p2p_s=c,
        dp_s=(0.0,) * p,
        overlap_dp=False,
        dp_buckets=(4,) * p,
        embedding_sync_s=0.0,
        optimizer_s=(0.0,) * p,
        schedule="interleaved" if v > 1 else "1f1b",
    )


@pytest.mark.parametrize("p,m", [(1, 1), (1, 8), (4, 4), (4, 16), (8, 64)])
def test_textbook_formula_for_equal_stages(p, m):
    """GPipe / 1F1B: (m + p - 1)(t_f + t_b); interleaved: (m + (p - 1)/v) v (t_f + t_b) per
    chunk."""
    assert pipeline_time.iteration_s(uniform(p, m)) == pytest.approx((m + p - 1) * 3.0)
    assert pipeline_time.iteration_s(uniform(p, m, v=3)) == pytest.approx(
        (m + (p - 1) / 3) * 3 * 3.0
    )


def test_dp_allreduce_exposed_or_overlapped():
    c = dataclasses.replace(uniform(2, 4), dp_s=(5.0, 5.0))
    assert pipeline_time.iteration_s(c) == pytest.approx(5 * 3.0 + 5.0)
    # 4 buckets overlapped with stage 0's last backward (13 s to 15 s): ready every 0.5 s, 1.25 s
    # each, so the comm is the bottleneck and ends at 13 + 0.5 + 5 = 18.5 s
    assert pipeline_time.iteration_s(dataclasses.replace(c, overlap_dp=True)) == pytest.approx(
        5 * 3.0 + 3.5
    )
    c = dataclasses.replace(uniform(2, 4), embedding_sync_s=0.5, optimizer_s=(0.25, 0.75))
    assert pipeline_time.iteration_s(c) == pytest.approx(5 * 3.0 + 0.5 + 0.75)


def test_estimate_reports_mfu_and_fit(workloads, hardware):
    from simsp.api import run

    w = workloads["gpt3-175b"]
    e, r = analytic.estimate(w, hardware), run(w, hardware)
    assert e.mfu == pytest.approx(r.mfu(), rel=0.02)
    assert e.hfu / e.mfu == pytest.approx(r.hfu() / r.mfu(), rel=1e-12)
    assert (e.peak_bytes, e.fits, e.capacity_bytes) == (
        r.memory.peak_bytes,
        r.memory.fits,
        r.memory.capacity_bytes,
    )


def test_screening_is_memoised_when_warm(workloads, hardware):
    """A second pass over a grid builds no layer or end-stage cost again: every piece comes from
    the memo (benchmarks/screening_speed.py measures the screening rate, through the closed
    form over columns, which takes its pieces from this memo)."""
    cases = grid_175b(workloads["gpt3-175b"])
    for w in cases:
        analytic.estimate(w, hardware)
    before = (analytic._layer.cache_info().misses, analytic._ends.cache_info().misses)
    for w in cases:
        analytic.estimate(w, hardware)
    assert (analytic._layer.cache_info().misses, analytic._ends.cache_info().misses) == before
