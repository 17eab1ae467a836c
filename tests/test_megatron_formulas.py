"""simsp's op-list counts against Megatron's own closed forms (tests/megatron_oracle.py,
transcribed from NVIDIA/Megatron-LM core_r0.8.0): model FLOPs exactly; weights-and-optimizer and
activation bytes exactly, once the named differences between the formula and the layer Megatron
really runs are added, each written out below. Run with -s to see the tables."""

import dataclasses
from pathlib import Path

import pytest

from simsp.io.config import load_workload
from simsp.model.flops import model_flops
from simsp.model.params import stage_params
from simsp.sim.memory import stage_activation_bytes, weight_bytes_per_param
from simsp.spec.model import ModelSpec

from . import megatron_oracle as mo
from .test_layer import LLAMA_8B

ROOT = Path(__file__).resolve().parents[1]

FLOP_CASES = {
    # name: ModelSpec (MHA / GQA x GeLU / SwiGLU / squared-ReLU, tied / untied, d x a != h)
    "gpt3-175b (MHA, GeLU, tied)": ModelSpec(
        layers=96, hidden=12288, heads=96, seq_len=2048, vocab=51200
    ),
    "MHA, SwiGLU, untied": ModelSpec(
        layers=32,
        hidden=4096,
        heads=32,
        seq_len=4096,
        vocab=32000,
        mlp="swiglu",
        ffn_hidden=11008,
        tied_embeddings=False,
        attention="flash",
    ),
    "GQA, GeLU, tied": ModelSpec(
        layers=24, hidden=2048, heads=16, kv_heads=4, seq_len=2048, vocab=50257
    ),
    "GQA, SwiGLU, untied (Llama-3.1-8B)": LLAMA_8B,
    "GQA, SwiGLU, untied (Llama-3.1-70B)": ModelSpec(
        layers=80,
        hidden=8192,
        heads=64,
        kv_heads=8,
        seq_len=8192,
        vocab=128256,
        ffn_hidden=28672,
        mlp="swiglu",
        tied_embeddings=False,
        attention="flash",
    ),
    "MQA, squared-ReLU, untied": ModelSpec(
        layers=8,
        hidden=1024,
        heads=8,
        kv_heads=1,
        seq_len=1024,
        vocab=256000,
        ffn_hidden=4096,
        mlp="squared_relu",
        tied_embeddings=False,
    ),
    "GQA, SwiGLU, head_dim 128 with a x d != h": ModelSpec(
        layers=40,
        hidden=5120,
        heads=32,
        kv_heads=8,
        head_dim=128,
        seq_len=4096,
        vocab=131072,
        ffn_hidden=14336,
        mlp="swiglu",
        attention="flash",
    ),
}


@pytest.mark.parametrize("name", FLOP_CASES)
@pytest.mark.parametrize("tp", [1, 8])
def test_model_flops_equal_megatron_core_r08(name, tp):
    """12 B s L h² [(1 + g/a + s/h)(d a/h) + (f/h) m + V/(2 L h)], m = 3/2 for SwiGLU,
    V the vocabulary padded to 128 t (training.py L73-107 @ core_r0.8.0)."""
    m, batch = FLOP_CASES[name], 64
    expected = mo.megatron_flops(
        batch_size=batch,
        seq_length=m.seq_len,
        num_layers=m.layers,
        hidden_size=m.hidden,
        num_attention_heads=m.heads,
        num_query_groups=m.groups,
        kv_channels=m.head_size,
        ffn_hidden_size=m.ffn,
        swiglu=m.mlp == "swiglu",
        padded_vocab_size=mo.megatron_vocab_size_with_padding(
            orig_vocab_size=m.vocab, tensor_model_parallel_size=tp
        ),
    )
    got = model_flops(m, batch, tp)
    print(f"{name:45s} tp={tp}: simsp {got:.6e}  megatron {expected:.6e}")
    assert got == pytest.approx(expected, rel=1e-12)


def test_swiglu_default_inner_size_is_megatrons():
    assert (
        ModelSpec(layers=1, hidden=4096, heads=32, seq_len=1, vocab=1, mlp="swiglu").ffn
        == mo.megatron_default_ffn_hidden_size(hidden_size=4096, swiglu=True)
        == 10880
    )


def test_padded_vocab_is_megatrons():
    for v in (50257, 128256, 32000, 151936):
        for t in (1, 2, 4, 8):
            m = ModelSpec(layers=1, hidden=64, heads=1, seq_len=1, vocab=v)
            assert m.padded_vocab(t) == mo.megatron_vocab_size_with_padding(
                orig_vocab_size=v, tensor_model_parallel_size=t
            )


# ---------------------------------------------------------------------------- memory
SETTINGS = {
    # (tp, pp, dp, schedule, virtual stages, global batch); SP on and selective recompute, where
    # Megatron's theoretical_memory_usage applies
    "llama-3.1-8b": (
        (1, 1, 8, "1f1b", 1, 64),
        (2, 2, 4, "1f1b", 1, 64),
        (4, 2, 2, "interleaved", 4, 32),
    ),
    "llama-3.1-70b": (
        (8, 4, 2, "1f1b", 1, 128),
        (4, 8, 2, "interleaved", 5, 128),
        (8, 2, 4, "1f1b", 1, 8),
    ),
}
CASES = [
    (name, s, dist)
    for name, settings in SETTINGS.items()
    for s in settings
    for dist in (False, True)
]


def _workload(name, tp, pp, dp, schedule, v, global_batch, distributed):
    w = load_workload(ROOT / "workloads" / f"{name}.yaml")
    par = dataclasses.replace(
        w.parallel,
        tp=tp,
        pp=pp,
        dp=dp,
        cp=1,  # Megatron's theoretical_memory_usage has no context parallelism
        schedule=schedule,
        virtual_stages=v,
        sequence_parallel=True,
        recompute="selective",
        distributed_optimizer=distributed,
    )
    return dataclasses.replace(
        w, parallel=par, training=dataclasses.replace(w.training, global_batch=global_batch)
    )


def _megatron_args(w):
    m, p = w.model, w.parallel
    return dict(
        num_layers=m.layers,
        hidden_size=m.hidden,
        num_attention_heads=m.heads,
        num_query_groups=m.groups,
        kv_channels=m.head_size,
        ffn_hidden_size=m.ffn,
        swiglu=m.mlp == "swiglu",
        padded_vocab_size=m.padded_vocab(p.tp),
    )


@pytest.mark.parametrize("name,setting,distributed", CASES)
def test_weights_and_optimizer_equal_megatron_plus_the_norms(name, setting, distributed):
    """Megatron's most loaded shard is stage 0: (P_layers / p + V h) / t, P_layers counting two
    2h LayerNorms a layer and a 2h final one, all divided by t. The layer Megatron runs for
    Llama has two RMSNorms of h each, replicated over TP, and its final norm on the last stage:
    simsp = formula + L/p (2h - 4h/t) - 2h/(p t) (+ h on stage 0 when p = 1)."""
    w = _workload(name, *setting, distributed)
    m, par = w.model, w.parallel
    h, t, p = m.hidden, par.tp, par.pp
    formula = mo.megatron_weight_and_optimizer_memory(
        **_megatron_args(w),
        untie_embeddings_and_output_weights=not m.tied_embeddings,
        pipeline_model_parallel_size=p,
        tensor_model_parallel_size=t,
        # the distributed optimizer shards over dp x cp (Megatron-Core r0.13 DDP's
        # data-parallel group with its context-parallel ranks); the r0.8 report names only dp
        data_parallel_size=par.dp * par.cp,
        use_distributed_optimizer=distributed,
    )
    norms = m.layers / p * (2 * h - 4 * h / t) - 2 * h / (p * t) + (h if p == 1 else 0)
    simsp = stage_params(m, par, 0) * weight_bytes_per_param(par)
    expected = formula + norms * weight_bytes_per_param(par)
    print(
        f"{name} tp={t} pp={p} dp={par.dp} dist={distributed}: simsp {simsp / 2**30:.4f} GiB, "
        f"megatron {formula / 2**30:.4f} GiB, norms "
        f"{norms * weight_bytes_per_param(par) / 2**20:+.3f} MiB"
    )
    assert simsp == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("name,setting", [(n, s) for n, ss in SETTINGS.items() for s in ss])
def test_first_stage_activations_equal_megatron_plus_the_modern_layer(name, setting):
    """Megatron's formula is the paper's Table 2 for GPT: sbh(18 + 4f/h) a layer with SP and
    selective recompute, on L layers' worth of in-flight microbatches (x the interleaving
    penalty 1 + (p-1)/(pv), or x min(1, m/p)), plus token ids 8sbp and the embedding dropout
    mask sbhp, plus 4sbh(1 + V/h) when p = 1, all over t. Llama's layer differs, per layer, by
    sbh x (-2: no dropout masks; -4(1 - g d/h): K and V are g heads wide; +2f/h: SwiGLU saves its
    2f-wide input), with a d = h; and simsp holds no token ids and (no dropout) no mask."""
    w = _workload(name, *setting, False)
    m, par = w.model, w.parallel
    s, b, h, t, p = m.seq_len, w.training.micro_batch, m.hidden, par.tp, par.pp
    v = par.virtual_stages if par.schedule == "interleaved" else None
    formula = mo.megatron_activation_memory(
        seq_length=s,
        micro_batch_size=b,
        hidden_size=h,
        ffn_hidden_size=m.ffn,
        num_layers=m.layers,
        padded_vocab_size=m.padded_vocab(t),
        tensor_model_parallel_size=t,
        pipeline_model_parallel_size=p,
        virtual_pipeline_model_parallel_size=v,
        num_microbatches=w.microbatches,
    )
    factor = (1 + (p - 1) / (p * v)) if v else (min(1, w.microbatches / p) if p > 1 else 1)
    assert m.heads * m.head_size == h
    per_layer = s * b * h * (-2 - 4 * (1 - m.groups * m.head_size / h) + 2 * m.ffn / h)
    ends = -(8 * s * b * p + s * b * h * p)
    expected = formula + (m.layers * per_layer + ends) * factor / t
    simsp = stage_activation_bytes(w, 0)
    print(
        f"{name} tp={t} pp={p} v={v}: simsp {simsp / 2**30:.4f} GiB, megatron "
        f"{formula / 2**30:.4f} GiB"
    )
    assert simsp == pytest.approx(expected, rel=1e-12)


def test_megatron_formula_exactly_for_the_papers_gpt():
    """Where the formula's assumptions hold (GeLU, MHA, dropout, learned positions, layer-norm),
    simsp equals it with only the token ids (8 s b p / t, not modelled) added."""
    w = load_workload(ROOT / "workloads" / "gpt3-175b.yaml")
    w = dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, schedule="1f1b", virtual_stages=1)
    )
    m, par = w.model, w.parallel
    s, b, t, p = m.seq_len, w.training.micro_batch, par.tp, par.pp
    formula = mo.megatron_activation_memory(
        seq_length=s,
        micro_batch_size=b,
        hidden_size=m.hidden,
        ffn_hidden_size=m.ffn,
        num_layers=m.layers,
        padded_vocab_size=m.padded_vocab(t),
        tensor_model_parallel_size=t,
        pipeline_model_parallel_size=p,
        num_microbatches=w.microbatches,
    )
    assert stage_activation_bytes(w, 0) == pytest.approx(formula - 8 * s * b * p / t, rel=1e-12)
