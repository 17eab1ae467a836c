"""The cross-entropy implementations (simsp/model/blocks/loss.py): their bytes, collectives and what
they keep, the measured B200 rates, and the recipes that pick them."""

import dataclasses
import importlib.util

import pytest

from simsp.cost import CostModel
from simsp.cost import stage_time as st
from simsp.io.config import load_hardware, load_workload
from simsp.model.blocks.loss import CROSS_ENTROPIES, CROSS_ENTROPY
from simsp.model.saved_bytes import end_stage_bytes
from simsp.spec.layout import layer_placement
from tests.conftest import ROOT

B200 = ROOT / "hardware" / "dgx-b200.yaml"


def _with(w, cross_entropy: str, **parallel):
    return dataclasses.replace(
        w,
        training=dataclasses.replace(w.training, cross_entropy=cross_entropy),
        parallel=dataclasses.replace(w.parallel, **parallel),
    )


@pytest.fixture(scope="module")
def llama():
    return load_workload(ROOT / "workloads" / "llama-3.1-8b.yaml")


def _logits(w) -> float:
    m, t = w.model, w.parallel.tp
    return m.seq_len // w.parallel.cp * w.training.micro_batch * m.padded_vocab(t) / t


def test_the_implementations_as_their_sources_count_them():
    """Bytes a logit forward / backward, bytes kept, per-token collectives, as loss.py's
    docstrings read them from Megatron-Core and Transformer Engine: a changed count must change
    here too, with its source."""
    got = {
        n: (c.forward_bytes, c.backward_bytes, c.saved_bytes, c.all_reduce_floats)
        for n, c in CROSS_ENTROPY.items()
    }
    assert got == {
        "unfused": (38.0, 14.0, 4, (1, 1, 1)),
        "native": (22.0, 10.0, 4, (1, 2)),
        "te": (6.0, 4.0, 2, ()),
        "torch_fp32": (14.0, 22.0, 4, (1, 1, 1)),
        "liger": (6.0, 0.0, 0.0, ()),
        "flash_attn": (2.0, 4.0, 2, (1,)),
    }
    assert [c.all_gather_floats for c in CROSS_ENTROPY.values()] == [0, 0, 3, 0, 0, 1]


def test_each_implementation_keeps_what_its_backward_reads(llama):
    """Megatron's kernels keep the fp32 softmax (4 bytes a logit), TE's the bf16 gradient it
    wrote over the logits (2): the last stage's activations differ by exactly 2 bytes a logit."""
    out = {ce: end_stage_bytes(llama.model, llama.parallel, 1, ce)[1] for ce in CROSS_ENTROPIES}
    assert out["unfused"] == out["native"]
    assert out["unfused"] - out["te"] == pytest.approx(2 * _logits(llama), rel=1e-12)


@pytest.mark.parametrize("name", CROSS_ENTROPIES)
def test_one_rank_moves_the_implementations_bytes_on_the_curve(llama, hardware, name):
    """Without TP there are no collectives: forward and backward are the kernels' bytes a logit
    at the element-wise curve (the A100 file measures no cross-entropy)."""
    w = _with(llama, name, tp=1, cp=1, dp=8)
    cost = CostModel(hardware)
    ce, logits = CROSS_ENTROPY[name], _logits(w)
    fwd, bwd = st.cross_entropy_s(w, cost, layer_placement(w.parallel, 8), logits)
    mb = cost.compute.memory_bound
    assert fwd == mb(ce.forward_bytes * logits).seconds
    assert bwd == mb(ce.backward_bytes * logits).seconds


def test_tp_collectives_follow_the_implementation(llama, hardware):
    """Under TP, Megatron's unfused kernel all-reduces three values a token and the native
    fusion two all-reduces (one of two values); TE all-gathers three values a token."""
    cost = CostModel(hardware)
    w = {ce: _with(llama, ce, tp=8, cp=1, dp=1, sequence_parallel=True) for ce in CROSS_ENTROPIES}
    place = layer_placement(w["te"].parallel, 8)
    sb = llama.model.seq_len
    group = place.group("tp")
    ar = lambda n: cost.network.group_s("all_reduce", 4.0 * n * sb, group)  # noqa: E731
    kernels = {
        ce: cost.compute.memory_bound(CROSS_ENTROPY[ce].forward_bytes * _logits(w[ce])).seconds
        for ce in CROSS_ENTROPIES
    }
    fwd = {ce: st.cross_entropy_s(w[ce], cost, place, _logits(w[ce]))[0] for ce in w}
    assert fwd["unfused"] == pytest.approx(kernels["unfused"] + 3 * ar(1), rel=1e-12)
    assert fwd["native"] == pytest.approx(kernels["native"] + ar(1) + ar(2), rel=1e-12)
    gather = cost.network.group_s("all_gather", 4.0 * 3 * sb * 8, group)
    assert fwd["te"] == pytest.approx(kernels["te"] + gather, rel=1e-12)


def test_b200_prices_the_kernels_at_their_measured_rates(llama):
    """dgx-b200.yaml's measured rates replace the curve for the implementations they name;
    the unmeasured native fusion takes the unfused rate."""
    hw = load_hardware(B200)
    cost = CostModel(hw)
    w = {ce: _with(llama, ce, tp=1, cp=1, dp=8) for ce in CROSS_ENTROPIES}
    place = layer_placement(w["te"].parallel, 8)
    logits = _logits(w["te"])
    rates = {"unfused": hw.memory_bound.unfused_cross_entropy_gbps}
    rates["te"] = hw.memory_bound.te_cross_entropy_gbps
    for ce, rate in rates.items():
        fwd, bwd = st.cross_entropy_s(w[ce], cost, place, logits)
        spec = CROSS_ENTROPY[ce]
        assert fwd == pytest.approx(spec.forward_bytes * logits / (rate * 1e9), rel=1e-12)
        assert bwd == pytest.approx(spec.backward_bytes * logits / (rate * 1e9), rel=1e-12)
    # the native fusion has no rate of its own: it takes the unfused kernels'
    fwd, _ = st.cross_entropy_s(w["native"], cost, place, logits)
    native = CROSS_ENTROPY["native"].forward_bytes * logits
    assert fwd == pytest.approx(native / (rates["unfused"] * 1e9), rel=1e-12)
    assert fwd > 2 * cost.compute.memory_bound(native).seconds  # the curve is over twice as fast


def test_b200_rates_rederive_from_simumax():
    """The two rates in dgx-b200.yaml (and gb200-nvl72.yaml, which reuses them) are what
    hardware/calibration/derive_cross_entropy.py computes from the vendored SimuMax file."""
    path = ROOT / "hardware" / "calibration" / "derive_cross_entropy.py"
    spec = importlib.util.spec_from_file_location("derive_cross_entropy", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    derived = module.cross_entropy_gbps()
    for name in ("dgx-b200", "gb200-nvl72"):
        mb = load_hardware(ROOT / "hardware" / f"{name}.yaml").memory_bound
        assert mb.unfused_cross_entropy_gbps == derived["unfused"]
        assert mb.te_cross_entropy_gbps == derived["te"]


def test_recipes_pick_the_loss_their_framework_runs():
    """NeMo 25.02 turns on Megatron's native loss fusion, NeMo 25.04 and Megatron-Bridge pick
    TE's (as do the SimuMax `_cef` runs), NeMo 1.x leaves Megatron's unfused kernels."""
    from simsp.validate.recipes import RECIPES
    from simsp.validate.simumax import read_simumax, simumax_workload

    picks = {name: r.cross_entropy for name, r in RECIPES.items()}
    assert picks["NeMo 24.07"] == picks["NeMo 24.03"] == "unfused"
    assert picks["NeMo 25.02"] == "native" and picks["NeMo 25.04"] == "te"
    assert {v for k, v in picks.items() if k.startswith("Megatron-Bridge")} == {"te"}
    rows = read_simumax(ROOT / "simsp" / "validate" / "data")
    assert {simumax_workload(r).training.cross_entropy for r in rows if "llama" in r["model"]} == {
        "te"
    }


def test_an_unknown_cross_entropy_is_a_one_line_error(tmp_path, capsys):
    from simsp.cli.main import main

    text = (ROOT / "workloads" / "llama-3.1-8b.yaml").read_text()
    bad = text.replace("micro_batch: 1}", "micro_batch: 1, cross_entropy: fused}")
    path = tmp_path / "w.yaml"
    path.write_text(bad.replace("models/", str(ROOT / "workloads" / "models") + "/"))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "training.cross_entropy='fused'" in err and "unfused, native, te" in err


def test_the_loss_kernels_named_are_the_ones_priced():
    from simsp.model.blocks.loss import CROSS_ENTROPY
    from simsp.spec.workload import CROSS_ENTROPIES

    assert tuple(CROSS_ENTROPY) == CROSS_ENTROPIES
