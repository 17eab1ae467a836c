"""The model as a stack of layer kinds (simsp.model.stack): sliding-window layers beside global
ones, each summed over where it sits: parameters, FLOPs, a chunk's time, the closed form."""

import dataclasses

import pytest

from simsp.api import estimate, load_hardware, load_workload, run
from simsp.errors import InputError
from simsp.model import flops, params, stack
from simsp.model.layer import build_layer
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate

H100 = load_hardware("hardware/dgx-h100.yaml")


def _workload(**model):
    """Llama-3.1-8B at 8k on one DGX H100 (cp 1), with model keys changed."""
    w = load_workload("workloads/llama-3.1-8b.yaml")
    w = dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, cp=1, dp=8))
    return validate(dataclasses.replace(w, model=dataclasses.replace(w.model, **model)), "t")


def _local(model) -> list[bool]:
    return [kind.window > 0 for kind in stack.kinds(model)]


def test_the_pattern_of_local_layers():
    """Gemma-2: every 2nd layer global; Gemma-3: every 6th; Mistral-7B-v0.1: none; a window at
    least the sequence: every layer global, one kind."""
    base = _workload().model
    gemma2 = dataclasses.replace(base, sliding_window=4096, global_every=2)
    assert _local(gemma2)[:4] == [True, False, True, False] and sum(_local(gemma2)) == 16
    gemma3 = dataclasses.replace(base, sliding_window=1024, global_every=6)
    assert _local(gemma3)[:12] == [True] * 5 + [False] + [True] * 5 + [False]
    mistral = dataclasses.replace(base, sliding_window=4096)
    assert all(_local(mistral)) and stack.uniform(mistral)
    wide = dataclasses.replace(base, sliding_window=8192, global_every=2)
    assert not any(_local(wide)) and stack.uniform(wide)


def test_a_local_layers_attention_flops_follow_the_window():
    """s = 8192, w = 4096, Llama-3.1-8B's 32 heads of d = 128, micro batch 1, tp 1. Query i
    (from 1) sees min(i, w) keys: s w - w (w - 1) / 2 = 33,554,432 - 8,386,560 = 25,167,872
    pairs; each costs 4 d FLOPs (QKᵀ and attention over V), and the model count doubles the
    computed pairs as it counts the whole s x s square for a global layer (no causal
    discount)."""
    model = _workload(sliding_window=4096).model
    (att,) = [op.attention for op in build_layer(model, ParallelSpec(), 1) if op.attention]
    pairs = 8192 * 4096 - 4096 * 4095 // 2
    assert pairs == 25_167_872
    assert att.benchmark_flops == 4 * 128 * 32 * pairs
    assert att.flops == 2 * 4 * 128 * 32 * pairs
    (full,) = [
        op.attention for op in build_layer(_workload().model, ParallelSpec(), 1) if op.attention
    ]
    assert full.flops == 4 * 8192 * 8192 * 128 * 32


def test_model_flops_and_parameters_sum_over_the_stack():
    """Half the layers local: the model's FLOPs are the mean of all-local and all-global; the
    window changes no weight."""
    dense, mixed = _workload().model, _workload(sliding_window=4096, global_every=2).model
    local = dataclasses.replace(mixed, global_every=0)
    f = [flops.model_flops(m, 128) for m in (dense, mixed, local)]
    assert f[1] == pytest.approx((f[0] + f[2]) / 2, rel=1e-12) and f[2] < f[1] < f[0]
    assert params.total_params(mixed) == params.total_params(dense)


@pytest.mark.parametrize(
    "schedule, pp, v, exact",
    [("1f1b", 1, 1, True), ("1f1b", 4, 1, True), ("interleaved", 4, 2, False)],
)
def test_differing_layers_price_between_their_kinds_and_the_closed_form_agrees(
    schedule, pp, v, exact
):
    """Every other layer local: the iteration lies strictly between all-global and all-local.
    Where the closed form equals the engine for alike layers (1F1B here), it does for a stack of
    differing ones too, to 1e-12; interleaved with these buckets is not exact even when alike
    (0.19% at this tree and before it), so there only the order is checked."""

    def timed(**model):
        w = _workload(**model)
        par = dataclasses.replace(
            w.parallel, pp=pp, dp=8 // pp, schedule=schedule, virtual_stages=v
        )
        w = validate(dataclasses.replace(w, parallel=par), "t")
        r = run(w, H100)
        if exact:
            assert abs(estimate(w, H100).iteration_time_s / r.iteration_time_s - 1) < 1e-12
        return r.iteration_time_s

    dense = timed()
    mixed = timed(sliding_window=2048, global_every=2)
    local = timed(sliding_window=2048)
    assert local < mixed < dense


def test_window_rules():
    with pytest.raises(InputError, match="global_every=2: needs model.sliding_window"):
        _workload(global_every=2)
    with pytest.raises(InputError, match="needs model.attention: flash"):
        _workload(sliding_window=4096, attention="unfused")
    w = _workload(sliding_window=4096)
    cp = dataclasses.replace(w.parallel, cp=2, dp=4)
    with pytest.raises(InputError, match="context parallelism"):
        validate(dataclasses.replace(w, parallel=cp), "t")


def test_a_timeline_lays_out_each_layer_with_its_own_ops():
    """A chunk of local and global layers expands into ops that fill its span exactly, local
    layers' flash attention shorter than global ones'."""
    from simsp.present.timeline.expand import expand_span

    w = _workload(sliding_window=2048, global_every=2)
    w = validate(dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, pp=4, dp=2)), "t")
    r = run(w, H100)
    span = next(s for s in r.sim.spans if s.kind == "forward" and s.stage == 1)
    ops = expand_span(r.plan, span)
    assert sum(o.dur_s for o in ops) == pytest.approx(span.dur_s, rel=1e-12)
    flash = {o.first_layer: o.dur_s for o in ops if o.name == "flash attention"}
    local, whole = flash[span.first_layer], flash[span.first_layer + 1]
    assert local < whole


@pytest.mark.parametrize("layers", [1, 5, 6, 12])
@pytest.mark.parametrize("window, every", [(0, 0), (4096, 0), (4096, 1), (4096, 2), (4096, 6)])
def test_uniform_is_read_from_the_settings_as_the_kinds_say(layers, window, every):
    model = dataclasses.replace(
        _workload().model, layers=layers, sliding_window=window, global_every=every
    )
    assert stack.uniform(model) == (len(set(stack.kinds(model))) == 1)


def test_a_chunked_layers_attention_flops_follow_its_chunks():
    """Llama-4's chunked attention, chunk c = 4096 at s = 8192: two chunks, each query seeing its
    own chunk up to itself, c (c + 1) / 2 = 8,390,656 pairs a chunk; every 4th layer global."""
    model = _workload(attention_chunk=4096, global_every=4).model
    assert [k.chunk > 0 for k in stack.kinds(model)[:4]] == [True, True, True, False]
    (att,) = [
        op.attention for op in build_layer(stack.kinds(model)[0], ParallelSpec(), 1) if op.attention
    ]
    pairs = 2 * (4096 * 4097 // 2)
    assert att.local_pairs == pairs == 16_781_312
    assert att.flops == 2 * 4 * 128 * 32 * pairs
    with pytest.raises(InputError, match="attention_chunk"):
        _workload(attention_chunk=4096, sliding_window=1024)


def test_run_reports_each_kind_of_layer_it_stacks():
    """DeepSeek-V3's three dense layers and 58 expert layers each get their own per-layer time
    in run --json's layer_kinds (the model's own per_layer_ms is the expert layer), and the text
    report prints them; a stack of one kind has one entry and no line."""
    from simsp.api import load_hardware, load_workload, run
    from simsp.present.report import result_json, run_summary

    hw = load_hardware("hardware/dgx-h100.yaml")
    r = run(load_workload("workloads/deepseek-v3.yaml"), hw)
    kinds = result_json(r)["layer_kinds"]
    assert [(k["first_layer"], k["layers"], bool(k["experts"])) for k in kinds] == [
        (0, 3, False),
        (3, 58, True),
    ]
    assert kinds[1]["forward_ms"] == r.to_dict()["per_layer_ms"]["forward"]
    assert kinds[0]["backward_ms"] < kinds[1]["backward_ms"]
    assert "by layer kind: 3 dense from layer 0" in run_summary(r)
    dense = run(load_workload("workloads/llama-3.1-8b.yaml"), hw)
    assert len(result_json(dense)["layer_kinds"]) == 1 and "by layer kind" not in run_summary(dense)
