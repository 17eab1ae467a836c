"""The layer composed from the model's choices: shapes, weights and saved tensors per choice,
against the sources each choice cites (FlashAttention, GQA, SwiGLU), and the paper's §3 count."""

import dataclasses

import pytest

from simsp.model import layer as L
from simsp.model.params import layer_params, total_params
from simsp.model.saved_bytes import activation_per_layer_bytes
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec

LLAMA_8B = ModelSpec(
    layers=32,
    hidden=4096,
    heads=32,
    kv_heads=8,
    seq_len=8192,
    vocab=128256,
    ffn_hidden=14336,
    mlp="swiglu",
    norm="rmsnorm",
    position="rope",
    bias=False,
    dropout=0.0,
    attention="flash",
    tied_embeddings=False,
)


def ops(model, tp=1, sp=False, recompute="none", b=1):
    return {
        op.name: op
        for op in L.build_layer(
            model, ParallelSpec(tp=tp, sequence_parallel=sp, recompute=recompute), b
        )
    }


def test_gqa_and_swiglu_shapes():
    o = ops(LLAMA_8B, tp=4)
    s, h, a, g, d, f = 8192, 4096, 32, 8, 128, 14336
    assert (o["qkv"].gemm.m, o["qkv"].gemm.n, o["qkv"].gemm.k) == (s, (a + 2 * g) * d // 4, h)
    assert (o["projection"].gemm.n, o["projection"].gemm.k) == (h, a * d // 4)
    assert (o["fc1"].gemm.n, o["fc2"].gemm.k) == (2 * f // 4, f // 4)
    assert o["flash attention"].attention == L.Attention(a // 4, s, d, causal=True)


def test_llama_layer_parameters():
    """h(a + 2g)d (QKV) + a d h (projection) + 3hf (gate, up, down) + 2h (two RMSNorms)."""
    h, a, g, d, f = 4096, 32, 8, 128, 14336
    assert (
        layer_params(LLAMA_8B) == h * (a + 2 * g) * d + a * d * h + 3 * h * f + 2 * h == 218_112_000
    )


def test_paper_parameter_formula_section_3():
    """12 L h² (1 + 13/(12h) + (v + s)/(12 L h)), plus the final layer-norm the formula leaves
    out."""
    for L_, h, a in ((96, 12288, 96), (48, 6144, 64), (128, 25600, 160)):
        m = ModelSpec(layers=L_, hidden=h, heads=a, seq_len=2048, vocab=51200)
        assert total_params(m) - 2 * h == L_ * (12 * h * h + 13 * h) + (51200 + 2048) * h


def test_no_dropout_means_no_dropout_kernels_and_no_masks():
    o = ops(LLAMA_8B)
    assert not any(op.kind in ("dropout", "bias_dropout_add") for op in o.values())
    assert not any("mask" in s.name for op in o.values() for s in op.saves)
    assert not L.embedding_saves(LLAMA_8B, 1)


def test_flash_attention_saves_what_the_flashattention_paper_says():
    """FlashAttention-2 (arXiv 2307.08691 §3.1.1) keeps Q, K, V, the output O and the logsumexp
    L (one fp32 per query row and head) for backward, nothing s x s. The output is the
    projection's saved input here, counted once."""
    s, b, a, g, d = 8192, 2, 32, 8, 128
    fa = ops(LLAMA_8B, b=b)["flash attention"]
    saved = {x.name: x.bytes for x in fa.saves}
    assert saved == {
        "Q": 2 * s * b * a * d,
        "K, V": 2 * 2 * s * b * g * d,
        "log-sum-exp": 4 * s * b * a,
    }
    assert ops(LLAMA_8B, b=b)["projection"].saves[0].bytes == 2 * s * b * a * d  # O


@pytest.mark.parametrize("recompute", ["none", "selective"])
def test_flash_attention_memory_is_linear_in_the_sequence(recompute):
    par = ParallelSpec(tp=2, sequence_parallel=True, recompute=recompute)
    short = dataclasses.replace(LLAMA_8B, seq_len=4096)
    assert activation_per_layer_bytes(LLAMA_8B, par, 1) == 2 * activation_per_layer_bytes(
        short, par, 1
    )


def test_selective_recompute_with_flash_drops_only_the_logsumexp():
    """Megatron-Core checkpoints core attention whatever its kernel: Q, K, V stay (the
    checkpoint's inputs), the LSE is rebuilt; the forward re-runs in backward."""
    par = dict(tp=1, sequence_parallel=False)
    none = activation_per_layer_bytes(LLAMA_8B, ParallelSpec(recompute="none", **par), 1)
    sel = activation_per_layer_bytes(LLAMA_8B, ParallelSpec(recompute="selective", **par), 1)
    assert none - sel == 4 * 8192 * 32
    assert ops(LLAMA_8B)["flash attention"].selective


def test_unfused_gqa_repeats_kv_to_all_heads():
    m = dataclasses.replace(LLAMA_8B, attention="unfused", seq_len=2048)
    o = ops(m)
    assert "repeat K, V" in o and o["repeat K, V"].selective
    assert o["qk^T"].gemm.batch == 32 and o["qk^T"].saves[0].bytes == 2 * 2 * 2048 * 32 * 128


def test_bias_choices():
    qwen = dataclasses.replace(LLAMA_8B, bias="qkv")
    names = {w.name for op in ops(qwen).values() for w in op.weights}
    assert "qkv bias" in names and not names & {"projection bias", "fc1 bias", "fc2 bias"}
    assert "qkv bias" in ops(qwen)
    gpt = ModelSpec(layers=1, hidden=1024, heads=16, seq_len=512, vocab=1024)
    names = {w.name for op in ops(gpt).values() for w in op.weights}
    assert {"qkv bias", "projection bias", "h->4h bias", "4h->h bias"} <= names


def test_rope_only_with_rotary_positions():
    assert "rotary embedding" in ops(LLAMA_8B)
    assert "rotary embedding" not in ops(dataclasses.replace(LLAMA_8B, position="learned"))
    assert [w.name for w in L.embedding_weights(LLAMA_8B, 1)] == ["word embeddings"]


def test_rmsnorm_has_one_vector_layernorm_two():
    assert [w.numel for w in ops(LLAMA_8B)["rmsnorm_1"].weights] == [4096]
    ln = dataclasses.replace(LLAMA_8B, norm="layernorm")
    assert [w.numel for w in ops(ln)["layernorm_1"].weights] == [8192]
