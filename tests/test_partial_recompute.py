"""recompute_num_layers: full recompute of only the first N layers of each chunk (Megatron-LM
--recompute-method block --recompute-num-layers N), the rest keeping their activations."""

import dataclasses

import pytest

from simsp.errors import InputError
from simsp.model.flops import hardware_flops
from simsp.model.saved_bytes import activation_per_layer_bytes
from simsp.sim.closed_form import costs
from simsp.sim.memory import stage_activation_bytes
from simsp.spec.rules import validate


def _w(workloads, recompute, n=0, schedule="1f1b"):
    w = workloads["gpt3-175b"]
    par = dataclasses.replace(
        w.parallel, recompute=recompute, recompute_num_layers=n, schedule=schedule, virtual_stages=1
    )
    return validate(dataclasses.replace(w, parallel=par), "test")


@pytest.mark.parametrize("n", [1, 4, 11])
def test_a_chunk_is_n_recomputed_layers_and_the_rest_plain(workloads, hardware, n):
    full, none, part = (_w(workloads, "full"), _w(workloads, "none"), _w(workloads, "full", n))
    layers = part.layers_per_chunk
    cf, cn, cp = (costs(x, hardware).chunks[1] for x in (full, none, part))  # a middle chunk
    for field in ("forward_s", "backward_s", "recompute_s", "input_s", "weight_s"):
        per_full, per_none = getattr(cf, field) / layers, getattr(cn, field) / layers
        assert getattr(cp, field) == pytest.approx(
            n * per_full + (layers - n) * per_none, rel=1e-12
        ), field
    m, b = part.model, part.training.micro_batch
    expected = n * activation_per_layer_bytes(m, full.parallel, b) + (
        layers - n
    ) * activation_per_layer_bytes(m, none.parallel, b)
    assert cp.activation_bytes == pytest.approx(expected, rel=1e-12)
    assert (
        stage_activation_bytes(full, 1)
        < stage_activation_bytes(part, 1)
        < stage_activation_bytes(none, 1)
    )


def test_every_layer_is_the_same_as_zero(workloads, hardware):
    every = _w(workloads, "full")
    n = every.layers_per_chunk
    assert costs(every, hardware).chunks == costs(_w(workloads, "full", n), hardware).chunks


def test_hardware_flops_count_only_the_recomputed_layers(workloads):
    part = _w(workloads, "full", 3)
    m, gb = part.model, part.training.global_batch
    assert part.recomputed_layers == 3 * part.parallel.pp
    none, full = hardware_flops(m, gb, "none"), hardware_flops(m, gb, "full")
    got = hardware_flops(m, gb, "full", 1, part.recomputed_layers)
    assert got == pytest.approx(none + (full - none) * 3 / 12, rel=1e-12)


def test_it_needs_full_recompute(workloads):
    w = workloads["gpt3-175b"]
    par = dataclasses.replace(w.parallel, recompute="selective", recompute_num_layers=2)
    with pytest.raises(InputError, match="recompute_num_layers"):
        validate(dataclasses.replace(w, parallel=par), "x.yaml")


def test_it_is_a_flag():
    from simsp.cli.arguments import load
    from simsp.cli.main import parser

    w, _ = load(
        parser().parse_args(
            [
                "run",
                "workloads/gpt3-175b.yaml",
                "--recompute",
                "full",
                "--recompute-num-layers",
                "2",
            ]
        )
    )
    assert w.parallel.recompute_num_layers == 2 and w.recomputed_layers == 2 * 8 * 3


def _per_stage(workloads, spec, schedule="zb-h1"):
    w = workloads["gpt3-175b"]
    par = dataclasses.replace(
        w.parallel, recompute="full", recompute_per_stage=spec, schedule=schedule, virtual_stages=1
    )
    return validate(dataclasses.replace(w, parallel=par), "test")


def test_each_stage_recomputes_its_own_count(workloads, hardware):
    """Stage s's chunks cost s's count of recomputed layers: the engine, the closed form and
    the memory model follow it stage by stage."""
    from simsp.api import run

    w = _per_stage(workloads, "12,8,6,4,2,0,0,0")
    full, none = _w(workloads, "full", schedule="zb-h1"), _w(workloads, "none", schedule="zb-h1")
    c, cf, cn = (costs(x, hardware).chunks for x in (w, full, none))
    for s, k in enumerate((12, 8, 6, 4, 2, 0, 0, 0)):
        per_full, per_none = cf[s].backward_s / 12, cn[s].backward_s / 12
        end = s in (0, 7)  # the end stages' chunks also hold embedding / output-layer work
        if not end:
            assert c[s].backward_s == pytest.approx(k * per_full + (12 - k) * per_none, rel=1e-12)
    assert c[0].backward_s == pytest.approx(cf[0].backward_s) and c[7].backward_s == pytest.approx(
        cn[7].backward_s
    )
    r = run(w, hardware)
    assert analytic_iteration(w, hardware) == pytest.approx(r.iteration_time_s, rel=1e-12)
    for s in range(8):
        traced = max(x.bytes for x in r.sim.memory if x.stage == s)
        assert traced == pytest.approx(r.memory.stages[s].peak_bytes, rel=1e-12)
    assert w.recomputed_layers == 12 + 8 + 6 + 4 + 2


def analytic_iteration(w, hardware):
    from simsp.sim.closed_form import estimate

    return estimate(w, hardware).iteration_time_s


@pytest.mark.parametrize(
    "spec,words",
    [
        ("1,2,3", "must list pp (8)"),
        ("a,b,c,d,e,f,g,h", "whole numbers"),
        ("13,0,0,0,0,0,0,0", "at most the layers of a chunk (12)"),
    ],
)
def test_a_bad_per_stage_list_is_one_error(workloads, spec, words):
    with pytest.raises(InputError, match=r"recompute_per_stage"):
        try:
            _per_stage(workloads, spec)
        except InputError as e:
            assert words in str(e)
            raise


@pytest.mark.parametrize("name,v", [("1f1b", 1), ("interleaved", 3), ("zbv", 1)])
def test_the_closed_form_walks_where_stages_differ(workloads, hardware, name, v):
    """The pipeline formula assumes alike middle stages; with per-stage recompute the closed
    form walks the schedule instead, and equals the engine."""
    from simsp.api import run

    w = workloads["gpt3-175b"]
    par = dataclasses.replace(
        w.parallel,
        recompute="full",
        recompute_per_stage="4,0,0,0,0,0,0,0",
        schedule=name,
        virtual_stages=v,
    )
    w = validate(dataclasses.replace(w, parallel=par), "test")
    assert analytic_iteration(w, hardware) == pytest.approx(
        run(w, hardware).iteration_time_s, rel=1e-12
    )


@pytest.mark.parametrize("name,v", [("1f1b", 1), ("interleaved", 3), ("zbv", 1), ("zb-h1", 1)])
def test_kept_outputs_are_held_where_they_were_sent(workloads, hardware, name, v):
    """Without Appendix B's deallocation a chunk keeps the output it sent to another stage: the
    engine's HBM trace and the memory model agree stage by stage (no chunk that sends nothing,
    such as the last, keeps one)."""
    from simsp.api import run

    w = workloads["gpt3-175b"]
    par = dataclasses.replace(
        w.parallel, deallocate_pipeline_outputs=False, schedule=name, virtual_stages=v
    )
    w = validate(dataclasses.replace(w, parallel=par), "test")
    r = run(w, hardware)
    for s in range(w.parallel.pp):
        traced = max(x.bytes for x in r.sim.memory if x.stage == s)
        assert traced == pytest.approx(r.memory.stages[s].peak_bytes, rel=1e-12), s
