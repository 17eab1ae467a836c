"""The software stack as an input (simsp/spec/stack.py): the presets and their sources, the
eager and compiled element-wise kernels (model/blocks/elementwise.py), torchtitan's per-op
checkpointing (model/blocks/checkpoint.py), torchao's float8 casts, FSDP2's copy-out and the
torch loss."""

import dataclasses
import re

import pytest

from simsp.api import run
from simsp.cli.main import main
from simsp.cost import CostModel, fsdp
from simsp.errors import InputError
from simsp.io.config import load_hardware, load_workload
from simsp.model.blocks import checkpoint
from simsp.model.blocks.elementwise import EAGER
from simsp.model.layer import Dims, build_layer, stored_bytes
from simsp.model.saved_bytes import activation_per_layer_bytes
from simsp.spec.layout import layout
from simsp.spec.rules import validate
from simsp.spec.stack import STACK_KNOBS, STACKS
from simsp.spec.workload import TrainingSpec
from tests.conftest import ROOT

H100 = ROOT / "hardware" / "dgx-h100.yaml"
SOURCE = re.compile(r"[\w.-]+/[\w.-]+.*(\.py|\.cpp|\.md|@[0-9a-f]{7}|PR #\d+)|\.py\b")
"""A setting's source names a file of a repository (or a pinned commit, or a PR)."""


@pytest.fixture(scope="module")
def llama():
    return load_workload(ROOT / "workloads" / "llama-3.1-8b.yaml")


@pytest.fixture(scope="module")
def h100():
    return load_hardware(H100)


def _with(w, training=None, **parallel):
    return dataclasses.replace(
        w,
        training=dataclasses.replace(w.training, **(training or {})),
        parallel=dataclasses.replace(w.parallel, **parallel),
    )


def _fsdp(w, training):
    """The workload on 8 GPUs under FSDP (no distributed optimizer, no CP), `training` set."""
    return _with(
        w,
        training,
        fsdp=True,
        distributed_optimizer=False,
        overlap_grad_reduce=False,
        overlap_param_gather=False,
        cp=1,
        dp=8,
    )


@pytest.mark.parametrize("name", sorted(STACKS))
def test_every_preset_setting_cites_its_source(name):
    """Each stack knob of each preset says where its value was read: a file, commit or PR."""
    for knob, setting in STACKS[name].settings().items():
        assert knob in STACK_KNOBS
        assert SOURCE.search(setting.source), f"{name}.{knob}: {setting.source!r}"


def test_megatron_is_todays_behaviour():
    """An empty knob under the default stack is what simsp priced before stacks existed."""
    t = TrainingSpec(8, 1)
    assert (t.stack, t.knob("fp8_recipe"), t.knob("cross_entropy")) == (
        "megatron",
        "delayed",
        "unfused",
    )
    assert (t.knob("elementwise"), t.knob("attention_kernel")) == ("fused", "")


def test_a_knob_set_by_the_run_wins_over_its_stack():
    t = TrainingSpec(8, 1, stack="torchtitan", elementwise="compiled", cross_entropy="te")
    assert t.knob("elementwise") == "compiled" and t.knob("cross_entropy") == "te"
    assert t.knob("fp8_recipe") == STACKS["torchtitan"].fp8_recipe.value  # empty: the stack's
    assert t.as_run()["fsdp_impl"] == "fsdp2"


def test_an_unknown_stack_is_one_line_naming_the_key(llama):
    with pytest.raises(InputError) as e:
        validate(_with(llama, {"stack": "jax"}), "w.yaml")
    assert "training.stack" in str(e.value) and "\n" not in str(e.value)


def test_eager_ops_move_the_counted_bytes_in_their_kernels(llama):
    """Under eager each listed kind moves EAGER's multiple of the fused bytes in its kernels;
    the GEMMs and attention are the same ops."""
    w = llama
    fused = build_layer(w.model, w.parallel, 1, _with(w).training.numerics)
    eager = build_layer(
        w.model, w.parallel, 1, _with(w, {"elementwise": "eager"}).training.numerics
    )
    for f, e in zip(fused, eager, strict=True):
        if f.kind in EAGER:
            k = EAGER[f.kind]
            assert e.fwd_bytes == pytest.approx(f.fwd_bytes * k.fwd_factor)
            assert e.bwd_bytes == pytest.approx(f.bwd_bytes * k.bwd_factor)
            assert (e.fwd_kernels, e.bwd_kernels) == (k.fwd_kernels, k.bwd_kernels)
        else:
            assert e == f
    assert {op.kind for op in fused} >= {"rmsnorm", "rope", "swiglu"}


def test_compiled_prices_the_fused_bytes(llama, h100):
    """Inductor's fusions move what the fused kernels move: compiled and fused layers cost the
    same, eager more."""
    times = {
        mode: run(_with(llama, {"elementwise": mode}), h100).plan.layer.forward_s
        for mode in ("fused", "compiled", "eager")
    }
    assert times["compiled"] == times["fused"] < times["eager"]


def test_sac_reruns_wk_wo_w3_and_every_memory_bound_op(llama):
    """torchtitan's policy: every second matrix multiply of wq, wk, wv, wo, w1, w3, w2 (wk,
    wo, w3) and every op that is not a GEMM, attention or collective."""
    w = _with(llama, recompute="op", cp=1)
    ops = build_layer(w.model, w.parallel, 1)
    rerun = {op.name: checkpoint.rerun(op) for op in ops if op.recompute == "op"}
    m = w.model
    qkv = next(op for op in ops if op.name == "qkv")
    assert rerun["qkv"].gemm.n == round(qkv.gemm.n * m.groups / (m.heads + 2 * m.groups))
    assert rerun["projection"].gemm == next(op.gemm for op in ops if op.name == "projection")
    assert rerun["fc1"].gemm.n * 2 == next(op.gemm.n for op in ops if op.name == "fc1")
    assert "fc2" not in rerun and "flash attention" not in rerun
    assert {"rmsnorm_1", "rotary embedding", "swiglu", "residual add 2"} <= set(rerun)


def test_sac_keeps_the_saved_ops_outputs(llama):
    """What a layer keeps: its input, wq's, wv's, SDPA's (with its fp32 log-sum-exp), w1's and
    w2's outputs, 2sb(4h + g d + f) + 4sba bytes."""
    w = _with(llama, recompute="op", cp=1)
    m, s = w.model, w.model.seq_len
    expected = 2 * s * (4 * m.hidden + m.groups * m.head_size + m.ffn) + 4 * s * m.heads
    assert activation_per_layer_bytes(m, w.parallel, 1) == expected
    full = activation_per_layer_bytes(m, _with(w, recompute="none").parallel, 1)
    assert expected < full


def test_torchao_tensorwise_casts_six_bytes_an_element_and_its_weights_each_call(llama):
    """torchao's roofline counts: 6 bytes an input element (amax read, one cast writing both
    layouts), no norm fusion; the weight cast in each call (8 bytes an element), nothing
    cached for the iteration."""
    w = _with(llama, {"precision": "fp8", "stack": "torchtitan", "fp8_recipe": "tensorwise"}, cp=1)
    num = w.training.numerics
    ops = build_layer(w.model, w.parallel, 1, num)
    qkv = next(op for op in ops if op.name == "qkv")
    x = stored_bytes(qkv.saves[0], w.parallel) / 2 * 2  # the saved input is FP8 now: 1 B
    weights = qkv.gemm.n * qkv.gemm.k
    assert qkv.fwd_bytes == pytest.approx(6 * x + (8 - 3) * weights)
    assert qkv.bwd_bytes == pytest.approx(6 * qkv.gemm.m * qkv.gemm.n + 3 * weights)
    assert num.weight_copy_bytes() == 0.0


def test_fsdp2_copies_out_each_gather_and_fsdp1_does_not(llama, h100):
    w = _fsdp(llama, {"stack": "torchtitan"})
    cost, lay = CostModel(h100), layout(w.parallel, h100.node.gpus)
    two = fsdp.layer_comm(w, cost, lay)
    one = fsdp.layer_comm(_with(w, {"fsdp_impl": "fsdp1"}), cost, lay)
    assert one.copy_out_s == 0.0 < two.copy_out_s
    f1, b1 = fsdp.exposed_s(one, 4, 1e-3, 2e-3)
    f2, b2 = fsdp.exposed_s(two, 4, 1e-3, 2e-3)
    assert f2 - f1 == pytest.approx(4 * two.copy_out_s)
    assert b2 - b1 == pytest.approx(4 * two.copy_out_s)


def test_torch_loss_keeps_fp32_log_probs_and_moves_more_than_te(llama, h100):
    """F.cross_entropy(pred.float()) moves 14 + 22 bytes a logit against TE's 6 + 4."""
    from simsp.cost import stage_time as st
    from simsp.spec.layout import layer_placement

    place = layer_placement(llama.parallel, h100.node.gpus)
    cost = CostModel(h100)
    te = st.output_s(_with(llama, {"cross_entropy": "te"}), cost, place)
    torch = st.output_s(_with(llama, {"cross_entropy": "torch_fp32"}), cost, place)
    assert torch[0] > te[0] and torch[1] > te[1]


def test_run_prints_the_layer_by_kind_beside_the_other_stack(capsys):
    """`--stack torchtitan` beside the default: the by-kind line says which kernels differ."""
    w = str(ROOT / "workloads" / "llama-3.1-8b.yaml")
    lines = {}
    for stack in ("megatron", "torchtitan"):
        assert main(["run", w, "--hardware", str(H100), "--stack", stack]) == 0
        out = capsys.readouterr().out
        lines[stack] = next(x for x in out.splitlines() if "by kind" in x)

    def kinds(line):
        return dict((k, float(v)) for k, v in re.findall(r"(\w+) ([\d.]+)", line.split(":")[1]))

    mega, titan = kinds(lines["megatron"]), kinds(lines["torchtitan"])
    assert titan["gemm"] == mega["gemm"]
    assert titan["rmsnorm"] > 5 * mega["rmsnorm"] and titan["rope"] > 3 * mega["rope"]


def test_per_op_sac_is_for_dense_layers(llama):
    moe = dataclasses.replace(llama.model, experts=8, router_topk=2, moe_ffn=1024)
    with pytest.raises(InputError, match="parallel.recompute"):
        validate(dataclasses.replace(_with(llama, recompute="op"), model=moe), "w.yaml")


def test_dims_of_the_kept_set_follow_tp(llama):
    """Under TP the heads and the MLP split; the input and w2's output split by SP."""
    w = _with(llama, recompute="op", cp=1, tp=2, sequence_parallel=True, dp=2)
    dm = Dims.of(w.model, w.parallel, 1)
    kept = checkpoint.kept(w.model, dm)
    total = sum(stored_bytes(s, w.parallel) for s in kept)
    one = activation_per_layer_bytes(w.model, _with(w, tp=1, sequence_parallel=False).parallel, 1)
    assert total == pytest.approx(one / 2)


def test_torch_loss_working_set_counts_once_on_the_last_stage(llama):
    """F.cross_entropy(pred.float()) holds two more fp32 tensors of the logits for a moment (the
    copy, then the gradients): 8 bytes a logit on the last stage's peak, once; Megatron's
    in-place kernels hold nothing beyond what they keep."""
    from simsp.model.saved_bytes import end_stage_bytes
    from simsp.sim.memory import stage_activation_bytes

    w = _with(llama, cp=1)
    m, b = w.model, w.training.micro_batch
    logits = m.seq_len * b * m.padded_vocab(1)
    torch_w = _with(w, {"cross_entropy": "torch_fp32"})
    kept = (
        end_stage_bytes(m, w.parallel, b, "torch_fp32")[1]
        - end_stage_bytes(m, w.parallel, b, "unfused")[1]
    )
    assert kept == 0  # both keep an fp32 tensor of the logits
    diff = stage_activation_bytes(torch_w, 0) - stage_activation_bytes(w, 0)
    assert diff == 8 * logits


def test_a_power_capped_part_scales_its_tensor_rates(h100):
    """gpu.tensor_clock_fraction f: every GEMM and attention kernel takes 1/f as long; memory-bound
    kernels do not change; a fraction above 1 is refused in one line."""
    from simsp.cost.compute import ComputeModel
    from simsp.model.ops import Attention, Gemm

    capped = dataclasses.replace(h100, gpu=dataclasses.replace(h100.gpu, tensor_clock_fraction=0.8))
    full, slow = ComputeModel(h100), ComputeModel(capped)
    g, att = Gemm(8192, 4096, 4096), Attention(32, 8192, 128)
    assert slow.gemm(g).seconds == pytest.approx(full.gemm(g).seconds / 0.8)
    assert slow.flash_attention(att).seconds == pytest.approx(
        full.flash_attention(att).seconds / 0.8
    )
    assert slow.memory_bound(1e8).seconds == full.memory_bound(1e8).seconds
    with pytest.raises(InputError) as e:
        load_hardware(H100, sets=("gpu.tensor_clock_fraction=1.2",))
    assert "gpu.tensor_clock_fraction" in str(e.value) and "\n" not in str(e.value)


def test_float8_all_gather_sends_linear_weights_in_fp8_and_casts_none_per_call(llama, h100):
    """torchao's float8 all-gather under FSDP2 (fp8_param_gather): the layer's gather carries
    its linear weights in one byte, the rest in two; no weight is cast in each call."""
    from simsp.model.params import layer_params_per_rank, linear_params_per_rank

    w = _fsdp(llama, {"precision": "fp8", "stack": "torchtitan", "fp8_recipe": "tensorwise"})
    gathered = _with(w, {"fp8_param_gather": True})
    params = layer_params_per_rank(w.model, 1)
    linear = linear_params_per_rank(w.model, 1)
    assert fsdp.gathered_bytes(w, params) == 2 * params
    assert fsdp.gathered_bytes(gathered, params) == 2 * (params - linear) + linear
    qkv = [
        next(
            op
            for op in build_layer(x.model, x.parallel, 1, x.training.numerics)
            if op.name == "qkv"
        )
        for x in (w, gathered)
    ]
    weights = qkv[0].gemm.n * qkv[0].gemm.k
    assert qkv[0].fwd_bytes - qkv[1].fwd_bytes == pytest.approx(5 * weights)
    assert qkv[0].bwd_bytes - qkv[1].bwd_bytes == pytest.approx(3 * weights)


def test_fsdp_reshard_after_forward_decides_the_backward_gathers(llama, h100):
    """FSDP2's reshard_after_forward: default reshards without pipelining (torchtitan), never
    keeps the layer gathered from forward to backward (no backward gather, the stage's
    parameters in flight), always gathers again even under PP."""
    from simsp.model.params import layer_params_per_rank

    w = _fsdp(llama, {"stack": "torchtitan"})
    cost, lay = CostModel(h100), layout(w.parallel, h100.node.gpus)
    default = fsdp.layer_comm(w, cost, lay)
    never = fsdp.layer_comm(_with(w, fsdp_reshard_after_forward="never"), cost, lay)
    assert default.backward_gathers and not never.backward_gathers
    f_default, b_default = fsdp.exposed_s(default, 4, 1e-3, 2e-3)
    f_never, b_never = fsdp.exposed_s(never, 4, 1e-3, 2e-3)
    assert f_never == f_default and b_never < b_default
    layer = layer_params_per_rank(w.model, 1)
    stage = 32 * layer
    kept = _with(w, fsdp_reshard_after_forward="never")
    assert fsdp.in_flight_bytes(kept, stage) - fsdp.in_flight_bytes(w, stage) == 2 * (
        stage - 2 * layer
    )
    assert _with(w, pp=2, dp=4, fsdp_reshard_after_forward="always").parallel.fsdp_reshards
