"""Sanity checks of tests/megatron_oracle.py against facts independent of both simsp and Megatron:
the Korthikanti et al. (arXiv 2205.05198) model-FLOPs formula (Eq. 7), per-GEMM FLOP counting,
a hand count of GPT-3 175B's parameters, and the paper's Table 2 activation bytes. No simsp import.
"""

import pytest

from tests.megatron_oracle import (
    MEGATRON_COMMIT,
    megatron_activation_memory,
    megatron_default_ffn_hidden_size,
    megatron_default_kv_channels,
    megatron_flops,
    megatron_in_flight_microbatches,
    megatron_parameter_counts,
    megatron_theoretical_activation_memory_applies,
    megatron_vocab_size_with_padding,
    megatron_weight_and_optimizer_memory,
)

# GPT-3 175B as in Korthikanti et al. Table 3: a=96, h=12288, L=96, s=2048, t=8, p=16.
GPT3 = dict(num_layers=96, hidden_size=12288, num_attention_heads=96)
GPT3_VOCAB = 51200  # 50257 padded to a multiple of 128*8 (checked below)


def test_pinned_commit():
    assert MEGATRON_COMMIT == "baf94af3c667248865f23df73b9fb8e2395e6fd0"


# --- (a) FLOPs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "B,L,s,h,a,v",
    [
        (1536, 96, 2048, 12288, 96, 51200),  # GPT-3 175B
        (8, 24, 1024, 2048, 16, 50304),
        (1, 2, 4096, 256, 4, 32000),  # s >> h: the attention-score term dominates
    ],
)
def test_flops_equal_korthikanti_eq7_for_mha_gelu_4h(B, L, s, h, a, v):
    got = megatron_flops(
        batch_size=B,
        seq_length=s,
        num_layers=L,
        hidden_size=h,
        num_attention_heads=a,
        ffn_hidden_size=4 * h,
        swiglu=False,
        padded_vocab_size=v,
    )
    eq7 = 72 * B * L * s * h**2 * (1 + s / (6 * h) + v / (12 * h * L))
    assert got == pytest.approx(eq7, rel=1e-12)


def _gemm_count(*, B, s, L, h, a, g, d, f, swiglu, v):
    """Independent count: a GEMM (m,k)x(k,n) costs 2mkn fwd, backward is 2x forward."""
    tokens = B * s
    per_layer_fwd = (
        2 * tokens * h * (a * d)  # Q projection
        + 2 * 2 * tokens * h * (g * d)  # K and V projections (g groups)
        + 2 * B * a * s * s * d  # Q K^T scores (no causal halving)
        + 2 * B * a * s * s * d  # scores x V
        + 2 * tokens * (a * d) * h  # output projection
        + (3 if swiglu else 2) * 2 * tokens * h * f  # MLP: gate+up+down, or up+down
    )
    logits_fwd = 2 * tokens * h * v
    return 3 * (L * per_layer_fwd + logits_fwd)


@pytest.mark.parametrize(
    "a,g,d,swiglu,f",
    [
        (32, None, None, True, 11008),  # Llama-2-7B-like, MHA
        (64, 8, 128, True, 28672),  # Llama-2-70B-like, GQA
        (16, 4, 96, False, 5000),  # kv_channels != h/a, odd ffn
    ],
)
def test_flops_match_an_independent_per_gemm_count(a, g, d, swiglu, f):
    B, s, L, h, v = 4, 4096, 3, (8192 if a == 64 else 4096), 32000
    got = megatron_flops(
        batch_size=B,
        seq_length=s,
        num_layers=L,
        hidden_size=h,
        num_attention_heads=a,
        num_query_groups=g,
        kv_channels=d,
        ffn_hidden_size=f,
        swiglu=swiglu,
        padded_vocab_size=v,
    )
    ref = _gemm_count(
        B=B,
        s=s,
        L=L,
        h=h,
        a=a,
        g=a if g is None else g,
        d=h // a if d is None else d,
        f=f,
        swiglu=swiglu,
        v=v,
    )
    assert got == pytest.approx(ref, rel=1e-12)


def test_flops_r08_does_not_halve_causal_attention():
    kw = dict(
        batch_size=1,
        seq_length=2048,
        num_layers=1,
        hidden_size=1024,
        num_attention_heads=16,
        ffn_hidden_size=4096,
        swiglu=False,
        padded_vocab_size=0,
    )
    full = megatron_flops(**kw)
    # The score+context term is 12 B s L h^2 * (s/h): present at full size here.
    no_attn_scores = 12 * 2048 * 1024**2 * (1 + 1 + 4)
    assert full - no_attn_scores == pytest.approx(12 * 2048 * 1024**2 * (2048 / 1024))


def test_flops_moe_topk_scales_mlp_only_when_num_experts_set():
    kw = dict(
        batch_size=1,
        seq_length=1024,
        num_layers=2,
        hidden_size=1024,
        num_attention_heads=8,
        ffn_hidden_size=4096,
        swiglu=False,
        padded_vocab_size=0,
    )
    dense = megatron_flops(**kw, moe_router_topk=4)  # topk ignored without experts
    assert dense == megatron_flops(**kw)
    moe = megatron_flops(**kw, num_experts=8, moe_router_topk=2)
    assert moe - dense == pytest.approx(12 * 1024 * 2 * 1024**2 * 4)


# --- (3) defaults -----------------------------------------------------------------------------


def test_vocab_padding():
    assert megatron_vocab_size_with_padding(orig_vocab_size=50257) == 50304
    assert (
        megatron_vocab_size_with_padding(orig_vocab_size=50257, tensor_model_parallel_size=8)
        == GPT3_VOCAB
    )
    assert (
        megatron_vocab_size_with_padding(orig_vocab_size=32000, tensor_model_parallel_size=2)
        == 32000
    )
    assert (
        megatron_vocab_size_with_padding(
            orig_vocab_size=32001, make_vocab_size_divisible_by=64, tensor_model_parallel_size=3
        )
        == 32064
    )


def test_default_ffn_and_kv_channels():
    assert megatron_default_ffn_hidden_size(hidden_size=4096, swiglu=False) == 16384
    # int(4*4096*2/3 / 64) * 64 = 170 * 64: NOT Llama-2-7B's 11008.
    assert megatron_default_ffn_hidden_size(hidden_size=4096, swiglu=True) == 10880
    assert megatron_default_ffn_hidden_size(hidden_size=8192, swiglu=True) == 21824
    assert megatron_default_kv_channels(hidden_size=12288, num_attention_heads=96) == 128
    with pytest.raises(AssertionError):
        megatron_default_kv_channels(hidden_size=1000, num_attention_heads=3)


# --- (b) weights + optimizer --------------------------------------------------------------------


def _gpt3_counts(**kw):
    return megatron_parameter_counts(
        **GPT3, ffn_hidden_size=4 * 12288, swiglu=False, padded_vocab_size=GPT3_VOCAB, **kw
    )


def test_gpt3_175b_parameter_count_by_hand():
    h, L, V = 12288, 96, GPT3_VOCAB
    # per layer: QKV 3h^2 + proj h^2 + MLP 8h^2; two LayerNorms of (gamma, beta) = 4h; no biases.
    layers = L * (12 * h * h + 4 * h) + 2 * h  # + final LayerNorm
    c = _gpt3_counts()
    assert c.num_parameters_in_transformer_layers == pytest.approx(layers, rel=1e-12)
    assert c.num_parameters_in_embedding_layers == V * h  # tied
    assert 174.5e9 < c.num_total_parameters < 175.5e9


@pytest.mark.parametrize(
    "t,p,dp,distopt,untie",
    [
        (8, 16, 8, False, False),
        (8, 16, 8, True, False),
        (8, 1, 4, True, True),  # untied, pp=1: both embedding and output layer on the one stage
        (8, 16, 8, False, True),  # untied, pp>1: the first stage holds only the input embedding
        (1, 1, 1, False, False),
    ],
)
def test_gpt3_175b_weight_memory_by_hand(t, p, dp, distopt, untie):
    h, L, V = 12288, 96, GPT3_VOCAB
    layers = L * (12 * h * h + 4 * h) + 2 * h
    emb = V * h
    shard = (layers / p + emb) / t + (emb / t if (untie and p == 1) else 0)
    bytes_per_param = 6 + 12 / dp if distopt else 18  # bf16 w + fp32 grad/master/m/v (2+4+4+4+4)
    got = megatron_weight_and_optimizer_memory(
        **GPT3,
        ffn_hidden_size=4 * h,
        swiglu=False,
        padded_vocab_size=V,
        untie_embeddings_and_output_weights=untie,
        pipeline_model_parallel_size=p,
        tensor_model_parallel_size=t,
        data_parallel_size=dp,
        use_distributed_optimizer=distopt,
    )
    assert got == pytest.approx(shard * bytes_per_param, rel=1e-12)
    c = _gpt3_counts(
        untie_embeddings_and_output_weights=untie,
        pipeline_model_parallel_size=p,
        tensor_model_parallel_size=t,
    )
    assert c.num_parameters_on_other_model_shards == (None if p == 1 else layers / (p * t))


def test_weights_gqa_swiglu_by_hand():
    h, a, g, d, f, L, V = 4096, 32, 8, 128, 14336, 32, 128256  # Llama-3-8B-like, untied
    c = megatron_parameter_counts(
        num_layers=L,
        hidden_size=h,
        num_attention_heads=a,
        num_query_groups=g,
        kv_channels=d,
        ffn_hidden_size=f,
        swiglu=True,
        padded_vocab_size=V,
        untie_embeddings_and_output_weights=True,
    )
    per_layer = h * a * d + 2 * h * g * d + a * d * h + 3 * h * f + 4 * h
    assert c.num_parameters_in_transformer_layers == pytest.approx(L * per_layer + 2 * h)
    assert c.num_total_parameters == pytest.approx(L * per_layer + 2 * h + 2 * V * h)


# --- (c) activations ----------------------------------------------------------------------------


def test_guard_only_sp_and_selective():
    assert megatron_theoretical_activation_memory_applies(
        sequence_parallel=True, recompute_granularity="selective"
    )
    assert not megatron_theoretical_activation_memory_applies(
        sequence_parallel=False, recompute_granularity="selective"
    )
    assert not megatron_theoretical_activation_memory_applies(
        sequence_parallel=True, recompute_granularity="full"
    )
    assert not megatron_theoretical_activation_memory_applies(
        sequence_parallel=True, recompute_granularity=None
    )


@pytest.mark.parametrize("b,t,p,m", [(1, 8, 16, 64), (1, 8, 16, 16), (2, 4, 8, 100)])
def test_activation_sp_selective_is_table2_34sbh_over_t(b, t, p, m):
    s, h, L, V = 2048, 12288, 96, GPT3_VOCAB
    got = megatron_activation_memory(
        seq_length=s,
        micro_batch_size=b,
        hidden_size=h,
        ffn_hidden_size=4 * h,
        num_layers=L,
        padded_vocab_size=V,
        tensor_model_parallel_size=t,
        pipeline_model_parallel_size=p,
        num_microbatches=m,
    )
    # Table 2, SP + selective: 34 s b h / t bytes per layer. First stage under 1F1B: L/p layers
    # times p microbatches in flight.
    layers = 34 * s * b * h / t * (L / p) * p
    # Code's extras (p microbatches in flight): 8-byte token ids, 1-byte embedding dropout mask.
    extras = (8 * s * b * p + s * b * h * p) / t
    assert got == pytest.approx(layers + extras, rel=1e-12)


def test_activation_pp1_adds_output_layer_and_ce_inputs():
    s, b, h, L, V, t = 2048, 1, 4096, 32, 50304, 4
    got = megatron_activation_memory(
        seq_length=s,
        micro_batch_size=b,
        hidden_size=h,
        ffn_hidden_size=4 * h,
        num_layers=L,
        padded_vocab_size=V,
        tensor_model_parallel_size=t,
    )
    expected = (34 * s * b * h * L + 8 * s * b + s * b * h + 4 * s * b * h + 4 * s * b * V) / t
    assert got == pytest.approx(expected, rel=1e-12)


def test_activation_pipeline_discount_and_interleaving():
    s, b, h, L, V, t, p = 1024, 1, 2048, 24, 50304, 2, 4
    kw = dict(
        seq_length=s,
        micro_batch_size=b,
        hidden_size=h,
        ffn_hidden_size=4 * h,
        num_layers=L,
        padded_vocab_size=V,
        tensor_model_parallel_size=t,
        pipeline_model_parallel_size=p,
    )
    base = (34 * s * b * h * L + 8 * s * b * p + s * b * h * p) / t
    assert megatron_activation_memory(**kw) == pytest.approx(base)  # m unknown
    assert megatron_activation_memory(**kw, num_microbatches=8) == pytest.approx(base)
    assert megatron_activation_memory(**kw, num_microbatches=2) == pytest.approx(base * 2 / 4)
    # Interleaved: penalty 1 + (p-1)/(p v) on everything, no m discount.
    got = megatron_activation_memory(
        **kw, virtual_pipeline_model_parallel_size=3, num_microbatches=2
    )
    assert got == pytest.approx(base * (1 + 3 / 12))
    assert (
        megatron_in_flight_microbatches(
            pipeline_model_parallel_size=4, virtual_pipeline_model_parallel_size=3
        )
        == 5
    )
    assert megatron_in_flight_microbatches(pipeline_model_parallel_size=4, num_microbatches=2) == 2


def test_activation_ignores_gqa_and_swiglu_but_not_ffn_size():
    kw = dict(
        seq_length=512, micro_batch_size=1, hidden_size=1024, num_layers=2, padded_vocab_size=0
    )
    # 18 + 4 f/h: f = 4h gives Table 2's 34; f = 8h/3 (a SwiGLU size) gives 18 + 32/3.
    a = megatron_activation_memory(**kw, ffn_hidden_size=4096)
    c = megatron_activation_memory(**kw, ffn_hidden_size=2048)
    per_layer_diff = 512 * 1024 * 4 * (4096 - 2048) / 1024
    assert a - c == pytest.approx(2 * per_layer_diff)
