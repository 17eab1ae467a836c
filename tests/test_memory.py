"""Memory derived from the op list reproduces the paper's Table 2, Eq. 5/6, Figure 7 and §3."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsp.model.params import total_params
from simsp.model.saved_bytes import activation_per_layer_bytes
from simsp.sim import schedule
from simsp.sim.memory import in_flight_chunks, memory_report, stage_activation_bytes
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec

from .conftest import PAPER_MODELS


def table2(s, b, h, a, t):
    """The six rows of the paper's Table 2 (bytes per layer per GPU), typed from the paper."""
    return {
        ("none", False, 1): s * b * h * (34 + 5 * a * s / h),
        ("none", False, t): s * b * h * (10 + 24 / t + 5 * a * s / (h * t)),
        ("none", True, t): s * b * h * (34 / t + 5 * a * s / (h * t)),
        ("selective", False, t): s * b * h * (10 + 24 / t),
        ("selective", True, t): s * b * h * 34 / t,
        ("full", False, t): 2 * s * b * h,
    }


@settings(max_examples=1000, deadline=None)
@given(
    s=st.sampled_from([128, 256, 512, 1024, 2048, 4096, 8192]),
    b=st.integers(1, 16),
    head_dim=st.sampled_from([32, 64, 80, 96, 128, 160]),
    a_mult=st.integers(1, 24),
    t=st.sampled_from([1, 2, 4, 8, 16]),
)
def test_table2_rows_come_out_of_the_op_list_to_the_byte(s, b, head_dim, a_mult, t):
    a = t * a_mult
    h = a * head_dim
    model = ModelSpec(layers=1, hidden=h, heads=a, seq_len=s, vocab=1024 * t)
    for (recompute, sp, tp), expected in table2(s, b, h, a, t).items():
        par = ParallelSpec(tp=tp, sequence_parallel=sp, recompute=recompute)
        got = activation_per_layer_bytes(model, par, b)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-6), (recompute, sp, tp)


# Per-layer MiB worked out in reference/paper.md §1 for the Table 3 models (s=2048, t=8).
PAPER_MIB = {
    "gpt-22b": (1264.0, 844.0, 624.0, 204.0, 96.0),
    "gpt3-175b": (552.0, 342.0, 312.0, 102.0, 48.0),
    "mt-nlg-530b": (840.0, 490.0, 520.0, 170.0, 80.0),
    "gpt-1t": (1050.0, 612.5, 650.0, 212.5, 100.0),
}
ROWS = (("none", False), ("none", True), ("selective", False), ("selective", True), ("full", False))


@pytest.mark.parametrize("name", PAPER_MODELS)
def test_per_layer_mib_for_the_four_models(workloads, name):
    w = workloads[name]
    for (recompute, sp), mib in zip(ROWS, PAPER_MIB[name], strict=True):
        par = dataclasses.replace(w.parallel, recompute=recompute, sequence_parallel=sp)
        assert activation_per_layer_bytes(w.model, par, w.training.micro_batch) / 2**20 == mib


# Figure 7 of the paper, read off the figure (reference/paper.md §7): % of the TP baseline.
FIGURE7 = {
    "gpt-22b": (66.8, 49.4, 16.1, 7.5),
    "gpt3-175b": (61.9, 56.6, 18.4, 8.5),
    "mt-nlg-530b": (58.3, 61.9, 20.2, 9.3),
    "gpt-1t": (58.3, 61.9, 20.2, 9.3),
}
# The figure is the ratio of Table 2 rows (paper.md §7 [derived]); the full-recompute bar is
# read ~0.1-0.2 pt low off the pixels, so that column is checked against the ratio itself.
FIGURE7_DERIVED_FULL = {"gpt-22b": 7.6, "gpt3-175b": 8.7, "mt-nlg-530b": 9.5, "gpt-1t": 9.5}


@pytest.mark.parametrize("name", PAPER_MODELS)
def test_figure7_percentages(workloads, name):
    w = workloads[name]
    per = {
        row: activation_per_layer_bytes(
            w.model,
            dataclasses.replace(w.parallel, recompute=row[0], sequence_parallel=row[1]),
            w.training.micro_batch,
        )
        for row in ROWS
    }
    base = per[("none", False)]
    pct = [100 * per[r] / base for r in ROWS[1:]]
    sp, sel, both, _ = FIGURE7[name]
    assert pct[0] == pytest.approx(sp, abs=0.1)
    assert pct[1] == pytest.approx(sel, abs=0.1)
    assert pct[2] == pytest.approx(both, abs=0.1)
    assert pct[3] == pytest.approx(FIGURE7_DERIVED_FULL[name], abs=0.1)


@pytest.mark.parametrize("name", PAPER_MODELS)
def test_first_stage_layer_activations_equal_eq6_with_interleave_factor(workloads, name):
    w = workloads[name]
    m, s, b, h, t, p = (
        w.model,
        w.model.seq_len,
        w.training.micro_batch,
        w.model.hidden,
        w.parallel.tp,
        w.parallel.pp,
    )
    v = w.parallel.chunks
    factor = 1 + (p - 1) / (p * v) if v > 1 else 1.0
    eq6 = 34 * s * b * h * m.layers / t * factor
    count = in_flight_chunks(w.parallel.schedule, p, w.microbatches, v, 0)
    per_layer = activation_per_layer_bytes(m, w.parallel, b)
    assert count * w.layers_per_chunk * per_layer == pytest.approx(eq6, rel=1e-12)
    # Eq. 5 (TP + SP, no recompute) with the same factor
    par5 = dataclasses.replace(w.parallel, recompute="none")
    eq5 = s * b * h * m.layers / t * (34 + 5 * m.heads * s / h) * factor
    assert count * w.layers_per_chunk * activation_per_layer_bytes(m, par5, b) == pytest.approx(
        eq5, rel=1e-12
    )


@pytest.mark.parametrize("name", ["gpt-22b", "gpt-1t"])
def test_first_stage_extras_match_the_paper_for_plain_1f1b(workloads, name):
    """§4.3: extras (sbhL/t)(p/L + δ_{p=1}(4/L)(1 + v/h)) on top of Eq. 6."""
    w = workloads[name]
    s, b, h, t, p, L, v = (
        w.model.seq_len,
        w.training.micro_batch,
        w.model.hidden,
        w.parallel.tp,
        w.parallel.pp,
        w.model.layers,
        w.model.vocab,
    )
    eq6 = 34 * s * b * h * L / t
    extra = s * b * h * L / t * (p / L + (4 / L) * (1 + v / h) * (p == 1))
    assert stage_activation_bytes(w, 0) == pytest.approx(eq6 + extra, rel=1e-12)


@pytest.mark.parametrize(
    "schedule_name,v", [("1f1b", 1), ("gpipe", 1), ("interleaved", 3), ("interleaved", 2)]
)
@pytest.mark.parametrize("p,m", [(4, 8), (8, 16), (4, 4)])
def test_closed_form_in_flight_matches_the_schedule(schedule_name, v, p, m):
    stages = schedule.build(schedule_name, p, m, v)
    for s, actions in enumerate(stages):
        assert in_flight_chunks(schedule_name, p, m, v, s) == schedule.max_in_flight(actions)


PAPER_PARAMS_B = {"gpt-22b": 22.07, "gpt3-175b": 174.6, "mt-nlg-530b": 529.6, "gpt-1t": 1008.0}


@pytest.mark.parametrize("name", PAPER_MODELS)
def test_parameter_counts(workloads, name):
    assert total_params(workloads[name].model) / 1e9 == pytest.approx(
        PAPER_PARAMS_B[name], rel=0.005
    )


@pytest.mark.parametrize("name", ["gpt3-175b", "mt-nlg-530b", "gpt-1t"])
def test_tp_only_does_not_fit(workloads, hardware, name):
    w = workloads[name]
    w = dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, sequence_parallel=False, recompute="none")
    )
    assert not memory_report(w, hardware).fits


@pytest.mark.parametrize("name", PAPER_MODELS)
def test_present_work_fits(workloads, hardware, name):
    assert memory_report(workloads[name], hardware).fits


def test_weights_18_bytes_or_distributed(workloads, hardware):
    w = workloads["gpt-22b"]
    r18 = memory_report(w, hardware).stages[0].weights_and_optimizer_bytes
    dist = dataclasses.replace(
        w,
        parallel=dataclasses.replace(w.parallel, dp=4, distributed_optimizer=True),
        training=dataclasses.replace(w.training, global_batch=16),
    )
    assert memory_report(dist, hardware).stages[0].weights_and_optimizer_bytes == pytest.approx(
        r18 * (6 + 3) / 18
    )


def test_master_remainders_save_two_bytes_of_each_shard(workloads, hardware):
    """store_param_remainders: the optimizer keeps 16-bit remainders of its fp32 masters, 6 +
    10/d bytes a parameter instead of 6 + 12/d; it needs the distributed optimizer and no FP8
    primary weights (one-line errors naming the key)."""
    from simsp.errors import InputError
    from simsp.spec.rules import validate

    w = workloads["gpt-22b"]
    par = dataclasses.replace(w.parallel, dp=4, distributed_optimizer=True)
    full = dataclasses.replace(
        w, parallel=par, training=dataclasses.replace(w.training, global_batch=16)
    )
    rem = dataclasses.replace(full, parallel=dataclasses.replace(par, store_param_remainders=True))

    def bytes_of(x):
        return memory_report(x, hardware).stages[0].weights_and_optimizer_bytes

    assert bytes_of(rem) == pytest.approx(bytes_of(full) * (6 + 10 / 4) / (6 + 12 / 4))
    alone = dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, store_param_remainders=True)
    )
    with pytest.raises(InputError, match="store_param_remainders.*needs distributed_optimizer"):
        validate(alone, "w.yaml")
    fp8 = dataclasses.replace(
        rem, training=dataclasses.replace(rem.training, precision="fp8", fp8_param_gather=True)
    )
    with pytest.raises(InputError, match="store_param_remainders.*fp8_param_gather"):
        validate(fp8, "w.yaml")


def test_cached_dummy_wgrads_hold_one_16_bit_tensor_of_each_linear_shape(hardware):
    """cached_dummy_wgrads (TE >= 2.3 get_dummy_wgrad): a stage keeps one bf16 tensor of each
    distinct linear weight shape its rank holds (Llama: QKV, projection, fc1, fc2 are four), and
    the output layer's [v / t, h] on the last stage; nothing when off."""
    from simsp.io.config import load_workload
    from simsp.sim.memory import dummy_wgrad_bytes

    w = load_workload("workloads/llama-3.1-70b.yaml")
    par = dataclasses.replace(w.parallel, tp=4, pp=2, cp=1, virtual_stages=1, schedule="1f1b")
    w = dataclasses.replace(w, parallel=par)
    on = dataclasses.replace(w, parallel=dataclasses.replace(par, cached_dummy_wgrads=True))
    h, kv, d, f, t = 8192, 8, 128, 28672, 4
    layer = (h + 2 * kv * d) * h / t + h * h / t + 2 * f * h / t + h * f / t
    assert dummy_wgrad_bytes(w, 0) == 0.0
    assert dummy_wgrad_bytes(on, 0) == 2 * layer
    assert dummy_wgrad_bytes(on, 1) == 2 * (layer + w.model.padded_vocab(t) / t * h)
    before = memory_report(w, hardware).stages[1].weights_and_optimizer_bytes
    after = memory_report(on, hardware).stages[1].weights_and_optimizer_bytes
    assert after - before == dummy_wgrad_bytes(on, 1)


def test_output_deallocation_saves_sbh_per_in_flight_microbatch(workloads, hardware):
    """Appendix B: 530B first stage saves 2sbh x p bytes when SP is off (2.73 GiB)."""
    w = workloads["mt-nlg-530b"]
    base = dataclasses.replace(
        w.parallel, sequence_parallel=False, recompute="full", schedule="1f1b", virtual_stages=1
    )
    on = dataclasses.replace(w, parallel=base)
    off = dataclasses.replace(
        w, parallel=dataclasses.replace(base, deallocate_pipeline_outputs=False)
    )
    saved = stage_activation_bytes(off, 0) - stage_activation_bytes(on, 0)
    assert saved / 2**30 == pytest.approx(2 * 2048 * 20480 * 35 / 2**30)
    assert round(saved / 2**30, 2) == 2.73


@pytest.mark.parametrize("p,v", [(2, 2), (4, 3), (8, 2), (8, 4), (9, 7), (16, 3)])
def test_interleaved_walk_of_a_steady_few_microbatches_finds_every_peak(p, v):
    """memory.steady_microbatches: walking 3p microbatches gives the held-count triples the
    whole walk of a long run gives, on both end stages."""
    from simsp.sim.memory import interleaved_counts, steady_microbatches

    for m in (4 * p, 7 * p):
        assert steady_microbatches(p, m) == 3 * p
        for stage in (0, p - 1):
            assert set(interleaved_counts(p, m, v, stage)) == set(
                interleaved_counts(p, 3 * p, v, stage)
            )


def test_cached_dummy_wgrads_do_not_combine_with_fsdp():
    from simsp.errors import InputError
    from simsp.io.config import load_workload
    from simsp.spec.rules import validate

    w = load_workload("workloads/llama-3.1-8b.yaml")
    par = dataclasses.replace(
        w.parallel, fsdp=True, distributed_optimizer=False, cached_dummy_wgrads=True
    )
    with pytest.raises(InputError, match="cached_dummy_wgrads.*fsdp"):
        validate(dataclasses.replace(w, parallel=par), "w.yaml")
