"""FP8 training (spec/precision.py, model/blocks/fp8.py): what Transformer Engine changes in a
layer's ops, its memory and its GEMM costs; BF16 runs stay as they were."""

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from simsp.api import run
from simsp.cost.compute import ComputeModel
from simsp.errors import InputError
from simsp.io.config import load_hardware, load_workload
from simsp.model import layer as L
from simsp.model.params import linear_params_per_rank
from simsp.model.saved_bytes import activation_per_layer_bytes
from simsp.sim.memory import stage_memory
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.precision import BF16, RECIPES, Numerics, cast_bytes

ROOT = Path(__file__).resolve().parents[1]
LLAMA = ModelSpec(
    layers=4,
    hidden=1024,
    heads=16,
    kv_heads=4,
    seq_len=2048,
    vocab=32000,
    ffn_hidden=3584,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    attention="flash",
    bias=False,
    dropout=0.0,
    tied_embeddings=False,
)
SP = ParallelSpec(tp=2, sequence_parallel=True, recompute="none")
FP8 = Numerics("fp8", "delayed")


def _ops(numerics, parallel=SP):
    return {op.name: op for op in L.build_layer(LLAMA, parallel, 1, numerics)}


def test_bf16_leaves_the_layer_as_it_was():
    assert L.build_layer(LLAMA, SP, 1) == L.build_layer(LLAMA, SP, 1, BF16)
    assert all(op.gemm is None or op.gemm.dtype == "bf16" for op in L.build_layer(LLAMA, SP, 1))


def test_fp8_linear_layers_only():
    bf, f8 = _ops(BF16), _ops(FP8)
    linear = {n for n, op in bf.items() if op.kind == "gemm"}
    assert linear == {"qkv", "projection", "fc1", "fc2"}
    for name, op in f8.items():
        if op.gemm is not None:
            assert op.gemm.dtype == ("fp8" if name in linear else "bf16")
        if name not in linear and op.kind != "flash_attention" and op.kind != "comm":
            assert op == bf[name]  # norms, activations, attention: unchanged


def test_fp8_saved_inputs_are_one_byte_and_flash_keeps_its_output():
    bf, f8 = _ops(BF16), _ops(FP8)
    for name in ("qkv", "projection", "fc1", "fc2"):
        assert f8[name].saves[0].bytes == bf[name].saves[0].bytes / 2
    flash = next(op for op in f8.values() if op.kind == "flash_attention")
    extra = [s for s in flash.saves if s.name == "attention output"]
    assert extra and extra[0].bytes == bf["projection"].saves[0].bytes


def test_fp8_activation_bytes_by_hand():
    """One layer, tp=2 with SP, b=1: the four linear inputs lose half their bytes, and the
    attention output (the projection input under BF16) comes back in BF16."""
    s, h, a, f, t = 2048, 1024, 16, 3584, 2
    x_sp = 2 * s * h / t  # qkv and fc1 inputs, sequence-sharded
    proj = 2 * s * h / t  # [s, b, a d] / t
    fc2 = 2 * s * f / t
    saved_half = (2 * x_sp + proj + fc2) / 2
    expected = activation_per_layer_bytes(LLAMA, SP, 1) - saved_half + proj
    assert activation_per_layer_bytes(LLAMA, SP, 1, FP8) == pytest.approx(expected)
    assert a * (h // a) == h


def test_sp_entry_all_gather_carries_fp8():
    bf, f8 = _ops(BF16), _ops(FP8)
    for name in ("attention entry", "mlp entry"):
        assert f8[name].fwd_comm.bytes == bf[name].fwd_comm.bytes / 2
        assert f8[name].bwd_comm == bf[name].bwd_comm  # the reduce-scatter of dgrad: BF16
    assert f8["attention exit"] == bf["attention exit"]


def test_current_scaling_agrees_on_amax_over_tp_under_sp():
    """Current scaling casts SP-sharded tensors before their gathers: each entry's input (forward)
    and each exit's output gradient (backward) all-reduce one fp32 amax over TP, blocking; delayed
    scaling, or no SP, adds none."""
    current = Numerics("fp8", "current")
    amax = [op for op in L.build_layer(LLAMA, SP, 1, current) if op.kind == "amax"]
    assert [op.name for op in amax] == [
        "attention input amax",
        "attention output-gradient amax",
        "mlp input amax",
        "mlp output-gradient amax",
    ]
    assert all((op.fwd_comm or op.bwd_comm).bytes == 4 for op in amax)
    assert [op.fwd_comm is not None for op in amax] == [True, False, True, False]
    no_sp = dataclasses.replace(SP, sequence_parallel=False)
    for numerics, par in ((FP8, SP), (current, no_sp)):
        assert not [op for op in L.build_layer(LLAMA, par, 1, numerics) if op.kind == "amax"]
    hw = load_hardware(ROOT / "hardware/dgx-h100.yaml")
    from simsp.cost import cost_model
    from simsp.cost.layer_time import layer_time
    from simsp.spec.layout import layer_placement

    place = layer_placement(SP, hw.node.gpus)
    lt = layer_time(L.build_layer(LLAMA, SP, 1, current), cost_model(hw), SP, place)
    each = cost_model(hw).network.group_s("all_reduce", 4, place.group("tp"))
    shown = [e for e in lt.entries if "amax" in e.op]
    assert len(shown) == 4 and all(e.seconds == each > 0 for e in shown)


@pytest.mark.parametrize(
    ("recipe", "per_element"),
    [
        ("delayed", 2 + 2),  # read BF16, write row-wise and transposed FP8
        ("current", 4 + 2),  # an amax pass first
        ("mxfp8", 2 + 2 * (1 + 1 / 32)),  # E8M0 scale per 32 elements, each copy
        ("blockwise", 2 + 2 * (1 + 4 / 128)),  # FP32 scale per 128 elements
    ],
)
def test_cast_bytes(recipe, per_element):
    assert cast_bytes(1000, RECIPES[recipe]) == pytest.approx(1000 * per_element)


def test_quantize_kernels_by_recipe():
    """Delayed scaling takes the norm's fused FP8 output for QKV and fc1 and transposes it in
    backward; current scaling casts every input; both cast every output gradient."""
    d, c = _ops(FP8), _ops(Numerics("fp8", "current"))
    elems_x = 2048 * 1024 / 2  # qkv input on one rank under SP
    assert d["qkv"].fwd_bytes == 0.0
    grad_qkv = d["qkv"].gemm.m * d["qkv"].gemm.n
    assert d["qkv"].bwd_bytes == pytest.approx(4 * grad_qkv + 2 * elems_x)
    assert c["qkv"].fwd_bytes == pytest.approx(6 * elems_x)
    assert c["qkv"].bwd_bytes == pytest.approx(6 * grad_qkv)
    fc2_in = 2048 * 3584 / 2
    assert d["fc2"].fwd_bytes == pytest.approx(4 * fc2_in)


def _workload(precision="fp8", recipe="delayed", **parallel):
    w = load_workload(ROOT / "workloads" / "llama-3.1-8b.yaml")
    t = dataclasses.replace(w.training, precision=precision, fp8_recipe=recipe)
    return dataclasses.replace(w, training=t, parallel=dataclasses.replace(w.parallel, **parallel))


def test_fp8_weight_copies_in_memory():
    bf, f8 = _workload("bf16"), _workload()
    layers = bf.parallel.stage_layers(bf.model.layers, 0)
    copies = 2 * layers * linear_params_per_rank(bf.model, bf.parallel.tp)
    extra = stage_memory(f8, 0).weights_and_optimizer_bytes
    assert extra - stage_memory(bf, 0).weights_and_optimizer_bytes == pytest.approx(copies)


def _h100():
    return load_hardware(ROOT / "hardware" / "dgx-h100.yaml")


def test_fp8_gemm_needs_fp8_tensor_cores():
    cm = ComputeModel(load_hardware(ROOT / "hardware" / "dgx-a100-80gb.yaml"))
    with pytest.raises(InputError, match="gpu.peak_fp8_tflops"):
        cm.gemm(L.Gemm(4096, 4096, 4096, dtype="fp8"))


def test_fp8_roofline_at_the_fp8_rate():
    hw = _h100()
    hw = dataclasses.replace(
        hw,
        gpu=dataclasses.replace(hw.gpu, gemm_max_fp8_tflops=1400),
        calibration=dataclasses.replace(hw.calibration, gemm_fp8="", gemm_model_fp8=""),
    )
    cm = ComputeModel(hw)
    g = L.Gemm(16384, 16384, 16384, dtype="fp8")
    timed = cm.gemm(g)
    assert timed.source == "roofline"
    eff = 0.95  # the fallback curve's top step (dgx-h100.yaml)
    assert timed.seconds == pytest.approx(g.flops / (1400e12 * eff))


def test_fp8_gemms_read_the_fp8_tables():
    """An FP8 GEMM's rate comes from the FP8 tables, above the BF16 rate of the same shape."""
    cm = ComputeModel(_h100())
    bf, f8 = cm.gemm(L.Gemm(8192, 8192, 8192)), cm.gemm(L.Gemm(8192, 8192, 8192, dtype="fp8"))
    assert f8.source in ("table", "model") and f8.seconds < bf.seconds
    assert cm.tables["fp8"].tflops(L.Gemm(8192, 8192, 8192, dtype="fp8"), "TN")[0] <= 1402.6


def test_fp8_run_reports_both_peaks():
    hw = _h100()
    bf, f8 = run(_workload("bf16"), hw), run(_workload(), hw)
    d = f8.to_dict()
    assert d["precision"] == "fp8" and d["fp8_recipe"] == "delayed"
    assert d["mfu_fp8_peak"] == pytest.approx(d["mfu"] * 989 / 1979)
    assert f8.iteration_time_s < bf.iteration_time_s
    assert bf.to_dict()["fp8_recipe"] is None


def test_cli_fp8_on_a100_is_one_line(tmp_path):
    out = tmp_path / "t.html"
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "run", str(ROOT / "workloads" / "llama-3.1-8b.yaml")]
        + ["--hardware", "dgx-a100-80gb", "--precision", "fp8", "--timeline", str(out)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "gpu.peak_fp8_tflops" in proc.stderr and "fp8" in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("flag", [["--precision", "fp4"], ["--fp8-recipe", "nvfp4"]])
def test_cli_unknown_precision_is_one_line(flag):
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "run", str(ROOT / "workloads" / "llama-3.1-8b.yaml")]
        + flag,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1


def test_mxfp8_needs_blackwell():
    """TE's MXFP8 recipe runs on compute capability 10.0 and later only."""
    with pytest.raises(InputError, match="gpu.compute_capability.*mxfp8"):
        run(_workload(recipe="mxfp8"), _h100())
    b200 = load_hardware(ROOT / "hardware" / "dgx-b200.yaml")
    assert run(_workload(recipe="mxfp8"), b200).iteration_time_s > 0


def test_fp8_primary_weights_drop_the_bf16_copy_and_gather_in_fp8():
    """--fp8-param-gather: a linear weight keeps FP8 row-wise + transposed copies instead of its
    BF16 copy beside them (2 bytes less a parameter), and the distributed optimizer's all-gather
    moves 1 byte a linear parameter instead of 2."""
    from simsp.cost.stage_time import gathered_bytes
    from simsp.model.params import stage_params

    plain, primary = _workload(), _workload()
    primary = dataclasses.replace(
        primary, training=dataclasses.replace(primary.training, fp8_param_gather=True)
    )
    layers = plain.parallel.stage_layers(plain.model.layers, 0)
    linear = layers * linear_params_per_rank(plain.model, plain.parallel.tp)
    saved = stage_memory(plain, 0).weights_and_optimizer_bytes
    saved -= stage_memory(primary, 0).weights_and_optimizer_bytes
    assert saved == pytest.approx(2 * linear)
    params = stage_params(plain.model, plain.parallel, 0)
    assert gathered_bytes(plain, 0, params) == pytest.approx(2 * params)
    assert gathered_bytes(primary, 0, params) == pytest.approx(2 * params - linear)


def test_fp8_param_gather_needs_fp8():
    w = _workload("bf16")
    bad = dataclasses.replace(w, training=dataclasses.replace(w.training, fp8_param_gather=True))
    from simsp.spec.rules import validate

    with pytest.raises(InputError, match="training.fp8_param_gather"):
        validate(bad, "w")


def test_delayed_scaling_reduces_amaxes_once_a_chunk_pass():
    """Delayed scaling all-reduces the chunk's amaxes over tp x dp x cp when its forward and its
    backward end (48 and 32 fp32 bytes a layer), on the measured all-reduce table; current
    scaling and a group of one add nothing."""
    from simsp.cost import cost_model
    from simsp.cost import stage_time as st
    from simsp.sim.chunk_costs import chunk_costs
    from simsp.sim.plan import DIRECT, stage_costs
    from simsp.spec.layout import layout

    hw = _h100()
    cost = cost_model(hw)
    w = _workload()
    lay = layout(w.parallel, hw.node.gpus)
    group = lay.group("tp-dp-cp")
    assert group.size == w.parallel.tp * w.parallel.dp * w.parallel.cp > 1
    fwd, bwd = st.amax_reduction_s(w, cost, lay, 4)
    assert fwd == cost.network.group_s("all_reduce", 4 * 48, group) > 0
    assert bwd == cost.network.group_s("all_reduce", 4 * 32, group) > 0
    assert st.amax_reduction_s(_workload(recipe="current"), cost, lay, 4) == (0.0, 0.0)
    alone = _workload(tp=1, pp=1, dp=1, cp=1)
    assert st.amax_reduction_s(alone, cost, layout(alone.parallel, 8), 4) == (0.0, 0.0)
    costs, lt, _, _ = stage_costs(w, cost)
    without = chunk_costs(w, lt, DIRECT.ends(w, cost, lay))[0]
    fwd, bwd = st.amax_reduction_s(w, cost, lay, w.chunk_layers[0])
    assert costs.chunks[0].forward_s == pytest.approx(without.forward_s + fwd)
    assert costs.chunks[0].backward_s == pytest.approx(without.backward_s + bwd)
