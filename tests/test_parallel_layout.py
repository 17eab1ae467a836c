"""Modern parallelism (#14): the rank layout, context parallelism, uneven stages, the
distributed optimizer's reduce-scatter and all-gather, and FSDP, each against a formula written
out from its framework's source or docs."""

import dataclasses

import pytest

from simsp.cost import CostModel, cost_model
from simsp.cost import fsdp as F
from simsp.cost import layer_time as LT
from simsp.cost import op_entries as OE
from simsp.cost import ring_correction as RC
from simsp.cost import stage_time as ST
from simsp.cost.gradient_sync import (
    gather_beside_forwards_s,
    gradient_buckets,
    interleaved_gather_exposed_s,
    param_gather_exposed_s,
)
from simsp.cost.network import NetworkModel
from simsp.cost.overlap import shared_sms_s
from simsp.io.config import load_hardware, load_workload
from simsp.model.layer import Attention, build_layer
from simsp.model.params import layer_params_per_rank, stage_params
from simsp.model.saved_bytes import activation_per_layer_bytes
from simsp.sim import schedule
from simsp.sim.memory import stage_memory
from simsp.sim.plan import stage_costs
from simsp.spec.layout import Layout, layer_placement, layout
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate

H100 = load_hardware("hardware/dgx-h100.yaml")


def _w(name, **par):
    w = load_workload(f"workloads/{name}.yaml")
    return validate(dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, **par)), "t")


# ------------------------------------------------------------------------------------ layout
@pytest.mark.parametrize(
    "par,expect",
    [
        # Megatron-Core order tp-cp-ep-dp-pp: rank = tp + t (cp + c (dp + d pp))
        (ParallelSpec(tp=8, cp=2, dp=4, pp=2), {"tp": 8, "cp": 1, "dp-cp": 1, "pp": 1}),
        (ParallelSpec(tp=2, cp=2, dp=4, pp=2), {"tp": 2, "cp": 2, "dp-cp": 4, "dp": 2}),
        (ParallelSpec(tp=4, dp=8), {"tp": 4, "dp": 2, "dp-cp": 2}),
        # tp-dp first, cp outside the node
        (ParallelSpec(tp=2, cp=2, dp=4, order="tp-dp-cp-ep-pp"), {"cp": 1, "dp": 4}),
    ],
)
def test_groups_follow_the_rank_order(par, expect):
    lay = layout(par, 8)
    for name, on_node in expect.items():
        group = lay.group(name)
        assert group.ranks_per_node == on_node, name
        assert group.size == (par.dp * par.cp if name == "dp-cp" else par.size(name))


def test_pipeline_neighbours_share_a_node_only_inside_one():
    assert layout(ParallelSpec(tp=2, dp=2, pp=4), 8).pp_neighbours_share_node
    assert not layout(ParallelSpec(tp=2, cp=2, dp=2, pp=4), 8).pp_neighbours_share_node


# ---------------------------------------------------------------------- context parallelism
def _free_comm(monkeypatch):
    monkeypatch.setattr(NetworkModel, "collective_s", lambda self, *a: 0.0)
    monkeypatch.setattr(NetworkModel, "p2p_s", lambda self, *a: 0.0)


def _layer(w, cost=None):
    par = w.parallel
    ops = build_layer(w.model, par, w.training.micro_batch)
    return LT.layer_time(ops, cost or cost_model(H100), par, layer_placement(par, 8))


def test_cp2_halves_a_layer_with_free_communication(monkeypatch):
    """Every GEMM has s/c rows and the attention a 1/c share of the causal work: with the
    collectives free, the layer takes half as long within the GEMM tables' shape effects."""
    _free_comm(monkeypatch)
    free = CostModel(H100)  # its own: the shared cost_model(H100) memoises what it prices
    one, two = _layer(_w("llama-3.1-70b", cp=1), free), _layer(_w("llama-3.1-70b", cp=2), free)
    assert two.forward_s / one.forward_s == pytest.approx(0.5, rel=0.1)
    assert two.backward_s / one.backward_s == pytest.approx(0.5, rel=0.1)
    attention = [e for e in two.entries if e.op == "flash attention" and e.phase == "forward"]
    whole = [e for e in one.entries if e.op == "flash attention" and e.phase == "forward"]
    assert attention[0].seconds / whole[0].seconds == pytest.approx(0.5, rel=0.15)


@pytest.mark.parametrize("send_s", [1e-7, 5e-3])
def test_ring_exposes_what_a_block_does_not_hide(monkeypatch, send_s):
    """Forward: c - 1 K/V sends, each beside one half-block step; exposed = sum of the
    shortfalls, 0 when every block outlasts a send."""
    monkeypatch.setattr(OE.OpEntries, "collective_s", lambda self, c: send_s)
    w = _w("llama-3.1-70b", cp=4)
    lt = _layer(w)
    compute = next(e for e in lt.entries if e.op == "flash attention" and e.phase == "forward")
    ring = next(e for e in lt.entries if e.op.endswith("cp ring send-recv"))
    att = next(op for op in build_layer(w.model, w.parallel, 1) if op.attention).attention
    cm = cost_model(H100).compute
    bh, s, d = att.batch_heads, att.seq_len, att.head_dim
    diagonal = cm.flash_attention(Attention(bh, s, d)).seconds
    half = cm.flash_attention(Attention(bh, s, d, False, s // 2)).seconds
    # the three steps beside a send run on the SMs it leaves; the last step runs alone
    u = H100.calibration.collective_sm_share
    d_, h_ = (shared_sms_s(t, send_s, u) for t in (diagonal, half))
    assert compute.seconds == pytest.approx(d_ + 2 * h_ + half)
    expected = max(0.0, send_s - d_) + 2 * max(0.0, send_s - h_)
    assert ring.seconds == pytest.approx(expected, abs=1e-15)
    assert ring.busy_s == pytest.approx(3 * send_s)
    assert (ring.seconds == 0) == (send_s < min(d_, h_))


def test_ring_correction_bytes_by_hand():
    """Transformer Engine AttnFuncWithCPAndKVP2P @8382eed, in units of Q, K+V and LSE bytes.
    c = 2, rank 1 (its later step attends the full query chunk): concat 2 kv; lse clone 2,
    correction 3; output init 2 q + 2 lse, correction 3 q + 2 lse. Backward: KV copy 2 kv; dq
    copy 2 q, then add 3 q; dkv copy of the first half kv, then add all 3 kv. Rank 0 of 2:
    half-query corrections, dq half copy q then copy + add 2.5 q, dkv copy 2 kv then 2.5 kv."""
    assert RC.forward_kernels(1, 1, 1, 2, 1) == {
        "cp kv concat": (2,),
        "cp softmax-lse correction": (2, 3),
        "cp output correction": (4, 5),
    }
    assert RC.forward_kernels(1, 1, 1, 2, 0)["cp output correction"] == (4, 2.5)
    assert RC.backward_kernels(1, 1, 1, 2, 1) == {
        "cp copies": (2,),
        "cp dq accumulation": (2, 3),
        "cp dk,dv accumulation": (1, 3),
    }
    assert RC.backward_kernels(1, 1, 1, 2, 0) == {
        "cp copies": (2, 1),
        "cp dq accumulation": (1, 2.5),
        "cp dk,dv accumulation": (2, 2.5),
    }
    # c = 4, rank 1: own diagonal at step d = 2
    assert RC.backward_kernels(1, 1, 1, 4, 1)["cp dq accumulation"] == (1, 1.5, 2.5, 3)
    assert RC.backward_kernels(1, 1, 1, 4, 1)["cp dk,dv accumulation"] == (2, 3, 1.5, 3)


def test_cp2_layer_adds_the_ring_kernels():
    """Llama-3.1-8B, tp 1, cp 2, s 8192, b 1: a rank's n = 4096 tokens, 32 query heads, 8 KV
    heads of 128: q = 2 n 32 128, kv = 2 (2 n 8 128), lse = 4 n 32 bytes. Rank 1's kernels, each
    by its bytes; the lse clone runs beside the next step, so only the last correction shows;
    cp = 1 and the all-to-all have none."""
    n, cm = 4096, cost_model(H100).compute
    q, kv, lse = 2 * n * 32 * 128, 2 * 2 * n * 8 * 128, 4 * n * 32
    w = _w("llama-3.1-8b", cp=2, tp=1, pp=1, dp=4, recompute="none")
    lt = _layer(w)
    by = {(e.phase, e.op): e for e in lt.entries if e.kind == "cp_correction"}

    def t(nbytes, backward=False):
        return cm.memory_bound(nbytes, "cp_correction", backward).seconds

    expected = {
        ("forward", "flash attention: cp kv concat"): (t(2 * kv), t(2 * kv)),
        ("forward", "flash attention: cp softmax-lse correction"): (
            t(3 * lse),
            t(2 * lse) + t(3 * lse),
        ),
        ("forward", "flash attention: cp output correction"): (
            t(2 * q + 2 * lse) + t(3 * q + 2 * lse),
        )
        * 2,
        ("backward", "flash attention grad: cp copies"): (t(2 * kv, True),) * 2,
        ("backward", "flash attention grad: cp dq accumulation"): (t(2 * q, True) + t(3 * q, True),)
        * 2,
        ("backward", "flash attention grad: cp dk,dv accumulation"): (
            t(kv, True) + t(3 * kv, True),
        )
        * 2,
    }
    assert set(by) == set(expected)
    for key, (seconds, busy) in expected.items():
        assert (by[key].seconds, by[key].busy_s) == pytest.approx((seconds, busy), rel=1e-12), key
    one = _layer(_w("llama-3.1-8b", cp=1, tp=1, pp=1, dp=8, recompute="none"))
    a2a = _layer(_w("llama-3.1-8b", cp=2, tp=1, pp=1, dp=4, cp_comm_type="a2a"))
    assert not [e for lt in (one, a2a) for e in lt.entries if e.kind == "cp_correction"]


def test_cp_divides_activations_and_keeps_weights():
    one, two = _w("llama-3.1-70b", cp=1), _w("llama-3.1-70b", cp=2)
    per = [activation_per_layer_bytes(w.model, w.parallel, 1) for w in (one, two)]
    assert per[1] == pytest.approx(per[0] / 2, rel=1e-12)
    assert stage_params(one.model, one.parallel, 0) == stage_params(two.model, two.parallel, 0)


def test_cp_rules_are_one_line_errors(tmp_path):
    from simsp.errors import InputError

    with pytest.raises(InputError, match="2 x cp"):
        _w("llama-3.1-70b", cp=3)
    with pytest.raises(InputError, match="attention: flash"):
        w = load_workload("workloads/gpt3-175b.yaml")
        validate(dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, cp=2)), "t")


def test_llama_70b_tp8_cp2_pp4_memory_per_megatron_core():
    """Megatron-Core docs/source/api-guide/dist_optimizer.md: bf16 parameters with fp32 gradients
    take 6 + 12/d bytes a parameter with the distributed optimizer, d the data-parallel ranks the
    optimizer shards over, which include the context-parallel ones (DDP's
    `get_data_parallel_group(with_context_parallel=True)`). Activations: Megatron-Core splits
    every sequence over the CP ranks (get_batch_on_this_cp_rank), so a layer keeps what it keeps
    without CP, halved."""
    w = _w("llama-3.1-70b", tp=8, cp=2, pp=4, dp=1, schedule="1f1b", virtual_stages=1)
    m, par = w.model, w.parallel
    layers = m.layers // par.pp
    embedding = m.padded_vocab(8) * m.hidden / 8
    params = layers * layer_params_per_rank(m, 8) + embedding
    assert stage_memory(w, 0).weights_and_optimizer_bytes == pytest.approx(
        params * (6 + 12 / (par.dp * par.cp)), rel=1e-12
    )
    no_cp = dataclasses.replace(par, cp=1)
    per_layer = activation_per_layer_bytes(m, no_cp, 1) / 2
    in_flight = par.pp  # 1F1B's first stage holds p microbatches (PipeDream-flush)
    assert stage_memory(w, 0).activation_bytes == pytest.approx(
        in_flight * layers * per_layer, rel=1e-12
    )


# ----------------------------------------------------------------------------- uneven stages
def test_account_for_embedding_and_loss_split_like_megatron():
    """Megatron-Core r0.13 get_num_layers_to_build: (L + 2) / (p v) slots a chunk, the first
    chunk and the last one a layer fewer (Llama-3.1-405B: 126 layers, 8 x 8 chunks of 2)."""
    w = load_workload("workloads/llama-3.1-405b.yaml")
    counts = w.chunk_layers
    assert len(counts) == 64 and sum(counts) == 126
    assert counts[0] == counts[-1] == 1 and set(counts[1:-1]) == {2}
    assert w.stage_layers(0) == w.stage_layers(7) == 15 and w.stage_layers(3) == 16


def test_first_and_last_stage_layers():
    """--decoder-first-pipeline-num-layers 14: the three stages left share 66 layers equally."""
    w = _w("llama-3.1-70b", pp=4, dp=4, schedule="1f1b", virtual_stages=1, first_stage_layers=14)
    m, t = w.model, w.parallel.tp
    assert w.chunk_layers == (14, 22, 22, 22)
    embedding = m.padded_vocab(t) * m.hidden / t
    assert stage_params(m, w.parallel, 0) == 14 * layer_params_per_rank(m, t) + embedding
    assert stage_params(m, w.parallel, 1) == 22 * layer_params_per_rank(m, t)
    from simsp.errors import InputError

    with pytest.raises(InputError, match="divide into the other 3 stages"):
        _w("llama-3.1-70b", pp=4, dp=4, schedule="1f1b", virtual_stages=1, first_stage_layers=15)


# ------------------------------------------------------------------ distributed optimizer
def test_megatron_bucket_rules():
    """Megatron-Core: one bucket per chunk unless the reduction overlaps backward on the first
    stage; there max(40M, 1M d c) parameters a bucket."""
    par = ParallelSpec(dp=64, cp=2, overlap_grad_reduce=True)
    assert gradient_buckets(1e9, par, 0) == 8  # 128M-parameter buckets
    assert gradient_buckets(1e9, par, 1) == 1
    assert gradient_buckets(1e9, dataclasses.replace(par, overlap_grad_reduce=False), 0) == 1


def test_param_gather_overlap():
    assert param_gather_exposed_s(1.0, 4, False, 10.0, 0.0) == 1.0
    # 0.75 s of a 1 s gather hidden, 0.25 of that in the fill: the forwards beside the other
    # 0.5 s run on 80% of the SMs, 0.1 s longer; nothing hidden, nothing slowed
    assert gather_beside_forwards_s(1.0, 0.25, 0.25, 0.2) == pytest.approx(0.35)
    assert gather_beside_forwards_s(1.0, 1.0, 0.0, 0.2) == 1.0
    assert param_gather_exposed_s(1.0, 4, True, 10.0, 0.0) == 0.25  # the first bucket
    assert param_gather_exposed_s(1.0, 4, True, 0.5, 0.0) == 0.5  # 0.25 + (0.75 - 0.5)
    assert param_gather_exposed_s(1.0, 4, True, 10.0, 1.0) == 0.0  # hidden by the fill


def test_interleaved_gather_by_hand():
    """p = 2, v = 3, 1 s a chunk's gather, 0.3 s a forward. Stage 0: chunks 0, 1 go at 0 (ready
    1, 2); forward 0 waits 1; forwards 0, 1 end 1.6; forward 2 (chunk 1's first) launches chunk
    2 (stream free at 2: ready 3) and waits 0.4; forwards 2, 3 end 2.6; forward 4 waits 0.4.
    Stage 1, fill 0.5: waits 0.5; chunk 2 launched at forward 1 (1.3, stream free at 2: ready
    3); forward 2 waits 2 - 1.6; forward 4 waits 3 - 2.6."""
    g, f = (1.0, 1.0, 1.0), (0.3, 0.3, 0.3)
    assert interleaved_gather_exposed_s(g, f, 2, 0, 0.0) == pytest.approx(1.8)
    assert interleaved_gather_exposed_s(g, f, 2, 1, 0.5) == pytest.approx(1.3)
    # 1 s forwards: only chunk 0's gather shows; the fill hides it all on a late stage
    assert interleaved_gather_exposed_s(g, (1.0,) * 3, 2, 0, 0.0) == pytest.approx(1.0)
    assert interleaved_gather_exposed_s(g, (1.0,) * 3, 2, 1, 1.0) == 0.0


def test_interleaved_gather_falls_with_more_forward_to_cover():
    g = (0.4, 0.3, 0.3, 0.3)
    waits = [interleaved_gather_exposed_s(g, (f,) * 4, 4, 1, 0.1) for f in (0.01, 0.05, 0.1, 0.2)]
    assert waits == sorted(waits, reverse=True) and waits[0] > waits[-1]


def _gathers(w):
    c = stage_costs(w, cost_model(H100))[0]
    return c


def test_interleaved_gather_in_the_plan():
    """Llama-3.1-70B as published (tp 4, pp 8, v 5, dp 2) with --overlap-param-gather: each
    stage's exposed gather is interleaved_gather_exposed_s of its chunks' gathers and forwards,
    the fill the stages before; v = 1 keeps the whole-stage formula."""
    w = _w("llama-3.1-70b", overlap_param_gather=True)
    c = _gathers(w)
    lay, cost = layout(w.parallel, H100.node.gpus), cost_model(H100)
    fill, u = 0.0, H100.calibration.collective_sm_share
    for s in range(w.parallel.pp):
        vs = [schedule.virtual_stage(8, s, k) for k in range(5)]
        params = stage_params(w.model, w.parallel, s)
        split = ST.chunk_param_gather_s(w, cost, lay, params, s)
        fwd = tuple(c.chunks[i].forward_s for i in vs)
        exposed = interleaved_gather_exposed_s(split, fwd, 8, s, fill)
        assert c.param_gather_s[s] == gather_beside_forwards_s(sum(split), exposed, fill, u)
        fill += fwd[0] + c.p2p_s
    assert 0 < c.param_gather_s[0] < sum(ST.chunk_param_gather_s(w, cost, lay, params, 0))
    one = _w("llama-3.1-70b", overlap_param_gather=True, schedule="1f1b", virtual_stages=1)
    c1, fill = _gathers(one), 0.0
    for s in range(8):
        gather = ST.param_gather_s(one, cost, lay, stage_params(one.model, one.parallel, s), s)
        forward = c1.chunks[s].forward_s
        exposed = param_gather_exposed_s(gather, c1.dp_buckets[s], True, forward, fill)
        assert c1.param_gather_s[s] == gather_beside_forwards_s(gather, exposed, fill, u)
        fill += forward + c1.p2p_s


# ------------------------------------------------------------------------------------- FSDP
def test_llama_8b_fsdp_64_gpus_memory_per_torchtitan():
    """torchtitan FSDP2 (docs/fsdp.md; mixed precision param bf16, reduce fp32): the model is
    kept in fp32 and sharded, so parameters, gradients and Adam's two moments are 16 bytes a
    parameter over the 64 shards; in flight, two layers' gathered bf16 parameters and two
    layers' unsharded fp32 gradients."""
    w = _w("llama-3.1-8b", cp=1, dp=64, fsdp=True, distributed_optimizer=False)
    m = w.model
    params = m.layers * layer_params_per_rank(m, 1) + 2 * m.padded_vocab(1) * m.hidden + m.hidden
    layer = layer_params_per_rank(m, 1)
    expected = params * 16 / 64 + 2 * 2 * layer + 2 * 4 * layer
    assert stage_memory(w, 0).weights_and_optimizer_bytes == pytest.approx(expected, rel=1e-12)


def test_fsdp_exposure():
    comm = F.LayerComm(gather_s=1.0, reduce_s=2.0, backward_gathers=True)
    assert F.exposed_s(comm, 4, forward_s=5.0, backward_s=5.0) == (1.0, 3.0)
    assert F.exposed_s(comm, 4, forward_s=0.5, backward_s=2.0) == (1.0 + 3 * 0.5, 1 + 3 * 1 + 2)
    # holding a quarter of the SMs, each hidden collective slows its layer by a quarter of itself
    shared = F.LayerComm(gather_s=1.0, reduce_s=2.0, backward_gathers=True, sm_share=0.25)
    assert F.exposed_s(shared, 4, forward_s=5.0, backward_s=5.0) == (1.75, 5.25)
    # comm-bound layers wait for the collectives, as without the share
    assert F.exposed_s(shared, 4, forward_s=0.5, backward_s=2.0) == (1.0 + 3 * 0.5, 1 + 3 * 1 + 2)


def test_fsdp_reduces_in_bf16_where_the_run_does():
    """grad_reduce_in_fp32 false (Composer's PURE, Megatron FSDP's bf16 reduce): the
    reduce-scatter moves half the bytes of torchtitan's fp32 one; the gather is unchanged."""
    w = _w("llama-3.1-8b", cp=1, dp=64, fsdp=True, distributed_optimizer=False)
    bf16 = dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, grad_reduce_in_fp32=False)
    )
    lay = layout(w.parallel, 8)
    fp32_comm, bf16_comm = (
        F.layer_comm(w, cost_model(H100), lay),
        F.layer_comm(bf16, cost_model(H100), lay),
    )
    net, shard = cost_model(H100).network, F.shard_groups(w, lay)[0]
    params = layer_params_per_rank(w.model, 1)
    assert bf16_comm.gather_s == fp32_comm.gather_s
    assert bf16_comm.reduce_s == net.group_s("reduce_scatter", 2 * params, shard)
    assert fp32_comm.reduce_s == net.group_s("reduce_scatter", 4 * params, shard)
    assert F.in_flight_bytes(w, 0) - F.in_flight_bytes(bf16, 0) == 2 * 2 * params


def test_hsdp_shards_inside_a_node():
    w = _w("llama-3.1-8b", cp=1, dp=64, fsdp=True, distributed_optimizer=False, fsdp_shard=8)
    shard, replica = F.shard_groups(w, layout(w.parallel, 8))
    assert (shard.size, shard.ranks_per_node, replica.size, replica.ranks_per_node) == (8, 8, 8, 1)


# ----------------------------------------------------------------------------- the timeline
def test_cp_and_fsdp_communication_are_drawn_on_streams_of_their_own():
    """Beside each forward and backward: the layers' CP exchanges (forward: c - 1 K/V sends a
    layer; backward: 2(c - 1)) and FSDP's gathers and reduce-scatters, on cp_comm and
    fsdp_comm, derived from the compute spans (the engine records nothing more)."""
    from simsp.api import run
    from simsp.present.timeline import side_spans

    w = _w("llama-3.1-8b")  # cp 2, one stage
    r = run(w, H100)
    cp = [s for s in side_spans(r.plan, r.sim.spans) if s.stream == "cp_comm"]
    assert len(cp) == 2 * w.microbatches
    ring = [e for e in r.plan.layer.entries if e.op.endswith("cp ring send-recv")]
    send = next(e.busy_s for e in ring if e.phase == "forward")  # c - 1 = 1 send
    backward = sum(e.busy_s for e in ring if e.phase != "forward")  # + recompute's forward
    forward_span = next(s for s in cp if "beside F" in s.name)
    backward_span = next(s for s in cp if "beside B" in s.name)
    assert forward_span.dur_s == pytest.approx(w.model.layers * send, rel=1e-12)
    assert backward_span.dur_s == pytest.approx(w.model.layers * backward, rel=1e-12)
    assert backward == pytest.approx(3 * send, rel=1e-12)  # recompute 1 + backward 2(c - 1)

    f = _w("llama-3.1-8b", cp=1, dp=8, fsdp=True, distributed_optimizer=False)
    rf = run(f, H100)
    comm = F.layer_comm(f, cost_model(H100), layout(f.parallel, 8))
    spans = [s for s in side_spans(rf.plan, rf.sim.spans) if s.stream == "fsdp_comm"]
    assert len(spans) == 2 * f.microbatches
    assert spans[0].dur_s == pytest.approx(f.model.layers * comm.gather_s, rel=1e-12)
    assert spans[1].dur_s == pytest.approx(
        f.model.layers * (comm.gather_s + comm.reduce_s), rel=1e-12
    )


def test_the_expert_layout_numbers_the_same_gpus_a_second_time():
    """Megatron-Core's expert RankGenerator: the dense order with tp -> etp, cp -> 1, dp -> edp.
    etp defaults to tp (--expert-tensor-parallel-size) and ep to 1, so the expert data-parallel
    group is the rest of a pipeline stage: tp 8 x cp 2 x dp 16 / etp 8 = 32 ranks, one a node.
    With etp 1 it is every rank of the stage, 8 on each node."""
    lay = layout(ParallelSpec(tp=8, pp=4, dp=16, cp=2), 8)
    assert lay.expert_order == ("etp", "cp", "ep", "edp", "pp")
    assert (lay.group("etp").size, lay.group("ep").size) == (8, 1)
    edp = lay.group("edp")
    assert (edp.size, edp.ranks_per_node, edp.nodes) == (32, 1, 32)
    assert lay.group("etp-edp-pp").size == 1024 == lay.group("tp-cp-dp-pp").size
    flat = layout(ParallelSpec(tp=8, pp=4, dp=16, cp=2, etp=1), 8).group("edp")
    assert (flat.size, flat.ranks_per_node, flat.nodes) == (256, 8, 32)
    with pytest.raises(KeyError):
        lay.group("tp-edp")


def test_expert_groups_are_walked_in_the_expert_order():
    """etp 1, ep 4, edp 4 over tp 2 x dp 8 (16 ranks a stage), 8 GPUs a node: rank 0's expert
    group is ranks 0-3 (stride 1, all on node 0) and its expert data-parallel group 0, 4, 8, 12
    (stride 4: 0 and 4 on node 0), as RankGenerator(tp=1, ep=4, dp=4, cp=1) gives them."""
    lay = Layout(("tp", "cp", "ep", "dp", "pp"), (2, 1, 1, 8, 2), 8, expert_sizes=(1, 1, 4, 4, 2))
    ep, edp = lay.group("ep"), lay.group("edp")
    assert (ep.size, ep.ranks_per_node) == (4, 4)
    assert (edp.size, edp.ranks_per_node) == (4, 2)
    assert lay.group("tp").ranks_per_node == 2 and lay.group("ep").name == "ep"
