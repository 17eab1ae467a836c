"""Transformer Engine's TP communication overlap (tp_comm_overlap): ring exchange, pipelined
reduce-scatter, the sequence-parallel rule, and the unchanged default."""

import dataclasses
import json

import pytest

from simsp.cli.main import main
from simsp.cost import cost_model
from simsp.cost.compute import FORWARD, gemm_grad_shapes
from simsp.cost.layer_time import layer_time
from simsp.cost.overlap import RS_SPLITS, split_overlap_ag_s, split_overlap_rs_s
from simsp.model.layer import build_layer
from simsp.spec.layout import layer_placement

LLAMA_70B = "workloads/llama-3.1-70b.yaml"


@pytest.fixture(scope="module")
def cost(hardware):
    return cost_model(hardware)


def layer(w, cost, **changes):
    par = dataclasses.replace(w.parallel, **changes)
    ops = build_layer(w.model, par, w.training.micro_batch)
    return ops, layer_time(ops, cost, par, layer_placement(par, 8))


def entry(lt, name, phase="forward"):
    (e,) = [e for e in lt.entries if e.op == name and e.phase == phase]
    return e


def test_ring_exchange_hides_a_transfer_shorter_than_a_gemm_chunk():
    # t = 4: chunks of 1 ms, transfers of 0.9 ms (c = 2.7 ms over 3 steps): all hidden
    assert split_overlap_ag_s(4e-3, 2.7e-3, 4) == 0.0
    # transfers of 1.5 ms: each of the 3 steps waits 0.5 ms for its transfer
    assert split_overlap_ag_s(4e-3, 4.5e-3, 4) == pytest.approx(3 * 0.5e-3, rel=1e-12)
    # the pair takes g/t + (t - 1) max(g/t, c/(t - 1))
    g, c, t = 3e-3, 5e-3, 8
    assert g + split_overlap_ag_s(g, c, t) == pytest.approx(
        g / t + (t - 1) * max(g / t, c / (t - 1)), rel=1e-12
    )


def test_pipelined_reduce_scatter_exposes_at_least_the_last_chunk():
    # GEMM chunks (1 ms) outlast RS chunks (0.5 ms): only the last chunk's RS is exposed
    assert split_overlap_rs_s(4e-3, 2e-3) == (4e-3, pytest.approx(0.5e-3, rel=1e-12))
    # RS chunks (2 ms) outlast GEMM chunks (1 ms): 3 steps wait 1 ms each, plus the last RS
    assert split_overlap_rs_s(4e-3, 8e-3)[1] == pytest.approx(3e-3 + 2e-3, rel=1e-12)
    # with an SM margin u the GEMM takes g / (1 - u) throughout
    gemm_s, exposed = split_overlap_rs_s(4e-3, 2e-3, 4, 0.2)
    assert gemm_s == pytest.approx(5e-3, rel=1e-12) and exposed == pytest.approx(0.5e-3)


def test_forward_overlap_follows_the_formulas(workloads, cost, hardware):
    w = workloads["gpt3-175b"]
    ops, off = layer(w, cost, sequence_parallel=True)
    _, on = layer(w, cost, sequence_parallel=True, tp_comm_overlap=True)
    assert on.forward_tp_s < off.forward_tp_s and on.backward_tp_s <= off.backward_tp_s
    for lt in (on, off):  # entries still sum to the passes
        assert lt.forward_s == sum(e.seconds for e in lt.entries if e.phase == "forward")
    qkv = next(o for o in ops if o.name == "qkv")
    g = cost.compute.gemm(qkv.gemm, FORWARD).seconds
    ag = entry(off, "attention entry: all-gather")
    c, t = ag.busy_s, w.parallel.tp
    assert ag.seconds == c  # blocking without the overlap
    exposed = (t - 1) * max(0.0, c / (t - 1) - g / t)
    assert entry(on, "attention entry: all-gather").seconds == pytest.approx(exposed, rel=1e-12)
    assert entry(on, "qkv").seconds == g
    # the projection's reduce-scatter, pipelined over 4 chunks beside 1 - u of the SMs
    proj = next(o for o in ops if o.name == "projection")
    u = hardware.calibration.collective_sm_share
    gp = cost.compute.gemm(proj.gemm, FORWARD).seconds / (1 - u)
    rs = entry(off, "attention exit: reduce-scatter").busy_s
    n = RS_SPLITS
    pair_s = gp / n + (n - 1) * max(gp / n, rs / n) + rs / n
    assert entry(on, "projection").seconds == pytest.approx(gp, rel=1e-12)
    assert entry(on, "projection").seconds + entry(
        on, "attention exit: reduce-scatter"
    ).seconds == pytest.approx(pair_s, rel=1e-12)


def test_backward_ring_exchange_and_the_deferred_wgrad_agree(workloads, cost):
    w = workloads["gpt3-175b"]
    ops, on = layer(w, cost, sequence_parallel=True, tp_comm_overlap=True)
    _, off = layer(w, cost, sequence_parallel=True)
    proj = next(o for o in ops if o.name == "projection")
    (dg, dl), _ = gemm_grad_shapes(proj.gemm)
    g = cost.compute.gemm(dg, dl).seconds
    ag = entry(on, "attention exit: all-gather", "backward")
    assert ag.busy_s == entry(off, "attention exit: all-gather", "backward").seconds
    assert ag.seconds == pytest.approx(split_overlap_ag_s(g, ag.busy_s, 8), rel=1e-12)
    # bulk overlaps of the entry collectives are the non-overlapped model's
    for name in ("attention entry: all-gather", "attention entry: reduce-scatter"):
        assert entry(on, name, "backward") == entry(off, name, "backward")
    split = {e.op: e for e in on.split if e.phase == "input"}
    assert split["attention exit: all-gather"].seconds == ag.seconds
    assert on.input_tp_s <= off.input_tp_s


def test_overlap_needs_sequence_parallel(capsys):
    assert main(["run", LLAMA_70B, "--no-sp", "--tp-comm-overlap"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "tp_comm_overlap" in err and "sequence_parallel" in err


def test_off_is_the_default_and_on_is_faster(capsys):
    def run(*flags):
        assert main(["run", LLAMA_70B, "--hardware", "dgx-h100", "--json", *flags]) == 0
        return json.loads(capsys.readouterr().out)

    default = run()
    assert run("--no-tp-comm-overlap") == default
    assert run("--tp-comm-overlap")["iteration_time_s"] < default["iteration_time_s"]
