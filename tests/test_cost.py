"""The cost model: sources, exact per-op sums, overlap, collectives and the host floor."""

import dataclasses
import json

import pytest

from simsp.cli.main import main
from simsp.cost import CostModel, cost_model
from simsp.cost.compute import FORWARD
from simsp.cost.layer_time import layer_time
from simsp.model.layer import Gemm, build_layer
from simsp.spec.layout import layer_placement
from simsp.tables import BUSBW_FACTORS


@pytest.fixture(scope="module")
def cost(hardware):
    return cost_model(hardware)


def layer(w, cost, **changes):
    par = dataclasses.replace(w.parallel, **changes)
    return layer_time(
        build_layer(w.model, par, w.training.micro_batch), cost, par, layer_placement(par, 8)
    )


@pytest.mark.parametrize("recompute", ["none", "selective", "full"])
@pytest.mark.parametrize("sp", [False, True])
def test_per_op_entries_sum_to_the_layer_exactly(workloads, cost, recompute, sp):
    lt = layer(workloads["gpt-22b"], cost, recompute=recompute, sequence_parallel=sp)
    fwd = sum(e.seconds for e in lt.entries if e.phase == "forward")
    bwd = sum(e.seconds for e in lt.entries if e.phase in ("recompute", "backward"))
    assert fwd == lt.forward_s and bwd == lt.backward_s


def test_layer_json_ops_sum_to_the_totals(capsys):
    assert main(["layer", "workloads/gpt-22b.yaml", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert sum(o["ms"] for o in d["ops"] if o["phase"] == "forward") == pytest.approx(
        d["forward_ms"], rel=1e-12
    )
    assert sum(o["ms"] for o in d["ops"] if o["phase"] != "forward") == pytest.approx(
        d["backward_ms"], rel=1e-12
    )
    assert {o["source"] for o in d["ops"]} <= {
        "table",
        "model",
        "roofline",
        "bandwidth",
        "nccl",
        "host",
    }


def test_every_gemm_says_where_its_number_came_from(workloads, cost):
    lt = layer(workloads["gpt3-175b"], cost)
    gemms = [e for e in lt.entries if e.kind in ("gemm", "attention_gemm")]
    assert gemms and all(e.source in ("table", "model", "roofline") for e in gemms)
    assert {e.source for e in gemms if e.kind == "gemm"} == {"table"}


def test_roofline_only_where_no_table_covers(hardware):
    bare = dataclasses.replace(
        hardware, calibration=dataclasses.replace(hardware.calibration, gemm="", gemm_model="")
    )
    t = CostModel(bare).compute.gemm(Gemm(8192, 8192, 8192))
    assert t.source == "roofline"
    assert 2 * 8192**3 / t.seconds / 1e12 <= hardware.gpu.gemm_max_tflops


def test_selective_recompute_reruns_core_attention_and_full_the_whole_forward(workloads, cost):
    w = workloads["gpt-22b"]
    sel = layer(w, cost, recompute="selective", sequence_parallel=False)
    full = layer(w, cost, recompute="full", sequence_parallel=False)
    assert {e.op for e in sel.entries if e.phase == "recompute"} == {
        "qk^T",
        "softmax",
        "attention dropout",
        "attention over V",
        "context permute",
    }
    assert full.seconds("recompute") == pytest.approx(full.forward_s, rel=1e-12)


def test_backward_all_reduce_hides_behind_the_weight_gradient(workloads, cost):
    """Paper §6.2: the input-gradient all-reduce overlaps the weight-gradient GEMM."""
    lt = layer(workloads["gpt-22b"], cost, recompute="none", sequence_parallel=False)
    hidden = [e for e in lt.entries if e.phase == "backward" and e.stream == "comm"]
    assert len(hidden) == 2 and all(e.seconds < e.busy_s for e in hidden)
    share = cost.hw.calibration.collective_sm_share
    for e in hidden:
        wgrad = next(
            x
            for x in lt.entries
            if x.op.endswith("wgrad") and lt.entries.index(x) == lt.entries.index(e) - 1
        )
        gemm_alone = cost.compute.gemm(*_wgrad_shape(workloads["gpt-22b"], wgrad.op)).seconds
        assert wgrad.seconds + e.seconds == pytest.approx(
            max(gemm_alone + share * e.busy_s, e.busy_s)
        )


def _wgrad_shape(w, name):
    from simsp.cost.compute import gemm_grad_shapes

    op = next(
        o
        for o in build_layer(w.model, w.parallel, w.training.micro_batch)
        if name.startswith(o.name + " ")
    )
    return gemm_grad_shapes(op.gemm)[1]


def test_reduce_scatter_is_half_a_ring_all_reduce(cost):
    net = cost.network
    for size in (1e6, 5e7, 4e8):
        assert net.intra_s("reduce_scatter", size, 8) == net.intra_s("all_reduce", size / 2, 8)
        assert net.intra_s("all_gather", size, 8) + net.intra_s(
            "reduce_scatter", size, 8
        ) >= net.intra_s("all_reduce", size, 8)


def test_collectives_read_back_the_measured_log(cost):
    table = cost.network.nvlink[("all_reduce", 8)]
    for size, t in zip(table.sizes_bytes[::7], table.times_s[::7], strict=True):
        assert cost.network.intra_s("all_reduce", size, 8) == pytest.approx(t, rel=0.05)
    busbw = 1e8 * BUSBW_FACTORS["all_reduce"](8) / cost.network.intra_s("all_reduce", 1e8, 8) / 1e9
    assert 150 < busbw < 232  # vTrain's LUT around 100 MB, below the NVLink3 ring peak


def test_groups_across_nodes_are_slower_than_inside_one(cost):
    net = cost.network
    inside = net.collective_s("all_reduce", 1e9, 8, 8)
    assert net.collective_s("all_reduce", 1e9, 16, 8) > inside
    assert net.collective_s("all_reduce", 1e9, 8, 1) > inside  # one GPU a node: IB only
    assert net.p2p_s(1e7, same_node=False) > net.p2p_s(1e7, same_node=True)


def test_host_floor_applies_only_when_the_host_is_slower(workloads, hardware):
    w = workloads["gpt-22b"]
    par = dataclasses.replace(w.parallel, recompute="full")
    ops = build_layer(w.model, par, w.training.micro_batch)
    slow = dataclasses.replace(
        hardware.calibration,
        host_forward_us=50_000.0,
        host_backward_us=60_000.0,
        host_recompute_full_us=40_000.0,
    )
    lt = layer_time(
        ops,
        CostModel(dataclasses.replace(hardware, calibration=slow)),
        par,
        layer_placement(par, 8),
    )
    assert lt.forward_s == pytest.approx(0.050) and lt.backward_s == pytest.approx(0.100)
    fast = dataclasses.replace(hardware.calibration, host_forward_us=1.0, host_backward_us=1.0)
    base = dataclasses.replace(
        hardware.calibration,
        host_forward_us=0.0,
        host_backward_us=0.0,
        host_recompute_full_us=0.0,
        host_recompute_selective_us=0.0,
    )
    a = layer_time(
        ops,
        CostModel(dataclasses.replace(hardware, calibration=fast)),
        par,
        layer_placement(par, 8),
    )
    b = layer_time(
        ops,
        CostModel(dataclasses.replace(hardware, calibration=base)),
        par,
        layer_placement(par, 8),
    )
    assert (a.forward_s, a.backward_s) == (b.forward_s, b.backward_s)


def test_gemm_lookup_uses_forward_layout_by_default(cost):
    g = Gemm(8192, 3072, 6144)
    assert cost.compute.gemm(g).seconds == cost.compute.gemm(g, FORWARD).seconds


@pytest.mark.parametrize("distributed", [False, True])
def test_optimizer_step_runs_adam_at_its_measured_rate(workloads, hardware, distributed):
    """Adam's 28 bytes a parameter of the rank's shard at `adam_gbps`; the rest of the step
    (gradient averaging over every parameter, norm, copy-back, zeroing) on the streaming curve."""
    from simsp.cost import stage_time as st
    from simsp.sim.memory import stage_params

    w = workloads["gpt3-175b"]
    w = dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, dp=4, distributed_optimizer=distributed)
    )
    params = stage_params(w.model, w.parallel, 0)
    shard = params / 4 if distributed else params
    for rate in (1000.0, 3000.0):
        hw = dataclasses.replace(
            hardware, calibration=dataclasses.replace(hardware.calibration, adam_gbps=rate)
        )
        cost = CostModel(hw)
        rest = cost.compute.memory_bound(
            (st.GRAD_AVERAGE_BYTES + st.GRAD_ZERO_BYTES) * params + st.STEP_OTHER_BYTES * shard
        ).seconds
        assert st.optimizer_s(w, cost, 0) == pytest.approx(
            rest + 28 * shard / (rate * 1e9), rel=1e-12
        )
    curve = CostModel(
        dataclasses.replace(
            hardware, calibration=dataclasses.replace(hardware.calibration, adam_gbps=0)
        )
    )
    assert st.optimizer_s(w, curve, 0) < st.optimizer_s(
        w, CostModel(hardware), 0
    )  # A100's 1468 < 0.83 x 2039


def test_no_gemm_runs_above_the_best_rate_measured_on_the_gpu(workloads, cost, hardware):
    """The model's shape trend times a neighbour's measured/model ratio put the 22B QKV forward
    (8192 x 2304 x 6144) at 290 TFLOP/s, above the A100's measured maximum (MAMF 271.2)."""
    from simsp.cost.compute import attention_grad_shapes, gemm_grad_shapes

    ceiling = hardware.gpu.gemm_max_tflops
    assert cost.compute.ceiling_tflops == ceiling  # gemm.csv was capped at the MAMF when derived
    for w in workloads.values():
        for op in build_layer(w.model, w.parallel, w.training.micro_batch):
            if op.gemm is None:
                continue
            grads = (
                gemm_grad_shapes(op.gemm)
                if op.kind == "gemm"
                else [(g, FORWARD) for g in attention_grad_shapes(op.gemm)]
            )
            for g, layout in [(op.gemm, FORWARD), *grads]:
                assert g.flops / cost.compute.gemm(g, layout).seconds / 1e12 <= ceiling * (
                    1 + 1e-12
                ), (w.name, op.name)
    qkv = Gemm(8192, 2304, 6144)
    assert cost.compute.tflops(qkv, FORWARD) == (ceiling, "table")
