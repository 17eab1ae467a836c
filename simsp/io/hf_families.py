"""The Hugging Face model families simsp reads (`hf_config.model_fields`): for each supported
`model_type`, which config.json keys hold the shape and the switches, and the defaults of its
transformers configuration class, each with the file it was read from (transformers v4.46.3,
src/transformers/models/). A family is one entry here; hf_config.py reads a config.json through
it."""

import dataclasses
from dataclasses import dataclass

TF = "transformers v4.46.3 src/transformers/models/"
"""Prefix of every citation below."""

MOE_TYPES = frozenset(
    {
        "qwen2_moe",
        "qwen3_next",
        "deepseek_v2",
        "dbrx",
        "olmoe",
        "granitemoe",
        "granitemoeshared",
        "jetmoe",
        "phimoe",
        "jamba",
        "llama4",
        "switch_transformers",
        "nllb_moe",
        "minimax",
        "glm4_moe",
        "ernie4_5_moe",
        "hunyuan_v1_moe",
        "dots1",
        "bailing_moe",
    }
)
"""Mixture-of-experts model_types not read yet, refused by name (mixtral and qwen3_moe are
FAMILIES with `experts`)."""

MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
"""Expert-count keys (Mixtral, Qwen-MoE, DeepSeek, Megatron exports): more than one expert is
MoE."""

GATED_ACTS = {
    "silu": "swiglu",
    "swish": "swiglu",
    "gelu_pytorch_tanh": "geglu",
    "gelu": "geglu",
}
"""Activation of a gated (gate_proj * act(up_proj)) MLP -> ModelSpec.mlp. transformers'
activations.py ACT2CLS maps both 'silu' and 'swish' to nn.SiLU; SiLU-gated = SwiGLU, GeLU-gated
(Gemma's gelu_pytorch_tanh) = GeGLU."""

PLAIN_ACTS = {
    "relu2": "squared_relu",
    "gelu": "gelu",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
}
"""Activation of a two-matrix (up, act, down) MLP -> ModelSpec.mlp. relu2 is
ReLUSquaredActivation (activations.py); the gelu variants differ only in their approximation."""


@dataclass(frozen=True)
class Experts:
    """How a mixture-of-experts family spells its experts (keys, and its class's defaults)."""

    count: str
    count_default: int
    topk: str
    topk_default: int
    ffn: str | None = None
    """Key of one routed expert's inner size; None: the family's MLP size key (Mixtral)."""
    ffn_default: int = 0
    every: str | None = None
    """Key of the MoE-layer step (Qwen3-MoE decoder_sparse_step: every n-th layer from 1)."""
    every_default: int = 1
    dense_list: str | None = None
    """Key of a list of dense layers (Qwen3-MoE mlp_only_layers), read as ModelSpec.dense_layers
    where it is the first k layers."""
    dense_first: str | None = None
    """Key of the count of dense first layers (DeepSeek-V3 first_k_dense_replace)."""
    shared: str | None = None
    """Key of the shared experts' count, each of the routed experts' size (DeepSeek-V3
    n_shared_experts)."""
    score: str = "softmax"
    """The router's score function (DeepSeek-V3's gate: sigmoid)."""
    shared_fixed: int = 0
    """Shared experts of the routed experts' size a family always builds (Llama-4: one)."""


@dataclass(frozen=True)
class Family:
    """How one transformers model_type spells and defaults the fields ModelSpec needs."""

    source: str
    """The configuration (and modeling) file this table follows, under TF."""
    layers: str
    hidden: str
    heads: str
    vocab: str
    ffn: str
    """Key of the MLP inner size; required unless ffn_default_4h."""
    act: str
    act_default: str
    gated: bool
    """The MLP has gate_proj, up_proj and down_proj (Llama style) rather than up and down."""
    norm: str
    position: str
    tied_default: bool
    """`tie_word_embeddings` when config.json omits it: the class's own default."""
    dropout: str
    kv: str | None = "num_key_value_heads"
    """Key of the key/value head count; None: the family has no GQA (g = a)."""
    kv_default: int | None = None
    """The class's default for a missing kv key; None means 'same as heads'."""
    head_dim: str | None = None
    """Key of an explicit head size the modeling file reads; None: it always uses h / a."""
    attention_bias: tuple[str | None, bool] = (None, False)
    """(key, default) of the bias on q, k, v and o projections; key None: fixed."""
    mlp_bias: tuple[str | None, bool] = (None, False)
    """(key, default) of the bias on the MLP projections; key None: fixed."""
    qkv_bias_only: bool = False
    """Bias on q, k, v only, never on o or the MLP (Qwen2)."""
    ffn_default_4h: bool = False
    """A missing or null MLP size means 4h (GPT-2's n_inner)."""
    qk_norm: str = "none"
    """ModelSpec.qk_norm: the modeling file's q_norm / k_norm, per head or over the projection."""
    norm_placement: str = "pre"
    """ModelSpec.norm_placement: which of input_layernorm, post_attention_layernorm,
    pre_/post_feedforward_layernorm the decoder layer has."""
    window: str | None = None
    """Key of the sliding window the attention reads; None: the family has none."""
    window_default: int | None = None
    """The class's default for a missing window key (None: no window)."""
    window_switch: str | None = None
    """A flag that must be true for the window to apply (Qwen's use_sliding_window)."""
    global_every: str | int = 0
    """Which layers stay global when config.json has no `layer_types`: a number (every n-th
    layer from 1; 0, none), or the key holding it (Gemma-3's sliding_window_pattern)."""
    global_every_default: int = 0
    """The default of that key."""
    class_defaults: tuple[tuple[str, object], ...] = ()
    """Shape keys the family's own config.json files leave to the class (Gemma-3's text_config
    names neither its heads nor its vocabulary), with the class's defaults."""
    experts: Experts | None = None
    """A mixture of experts' keys; None: a dense family."""
    sinks: bool = False
    """Attention sinks, a learned logit per head (gpt-oss)."""
    chunk: str | None = None
    """Key of the attention chunk of local layers (Llama-4 attention_chunk_size); its global
    layers every `chunk_global_every` (key, default)."""
    chunk_global_every: tuple[str, int] = ("", 0)
    mla: bool = False
    """Multi-head latent attention, read from q_lora_rank, kv_lora_rank, qk_rope_head_dim and
    v_head_dim (DeepSeek-V2/V3)."""


HF_SHAPE_KEYS = {
    "layers": "num_hidden_layers",
    "hidden": "hidden_size",
    "heads": "num_attention_heads",
    "vocab": "vocab_size",
    "ffn": "intermediate_size",
}
"""The shape keys every family but GPT-2 spells alike (PretrainedConfig subclasses since
Llama)."""

LLAMA_STYLE = {
    **HF_SHAPE_KEYS,
    "act": "hidden_act",
    "act_default": "silu",
    "gated": True,
    "norm": "rmsnorm",
    "position": "rope",
    "tied_default": False,
    "dropout": "attention_dropout",
}
"""What Llama's descendants share: HF's shape keys, a SiLU-gated MLP under hidden_act, RMSNorm,
rotary positions, untied embeddings by default, attention_dropout."""

FAMILIES = {
    # configuration_llama.py: tie_word_embeddings=False, num_key_value_heads=None (-> heads),
    # attention_bias=False, mlp_bias=False, head_dim=None, hidden_act="silu", attention_dropout=0.0.
    # modeling_llama.py: q/k/v/o_proj bias=config.attention_bias, gate/up/down_proj
    # bias=config.mlp_bias, head_dim = getattr(config, "head_dim", h // a), LlamaRMSNorm.
    "llama": Family(
        source="llama/configuration_llama.py, llama/modeling_llama.py",
        **LLAMA_STYLE,
        head_dim="head_dim",
        attention_bias=("attention_bias", False),
        mlp_bias=("mlp_bias", False),
    ),
    # configuration_mistral.py: tie_word_embeddings=False, num_key_value_heads=8, head_dim=None,
    # hidden_act="silu", attention_dropout=0.0. modeling_mistral.py: every Linear bias=False,
    # head_dim = config.head_dim, MistralRMSNorm.
    "mistral": Family(
        source="mistral/configuration_mistral.py, mistral/modeling_mistral.py",
        **LLAMA_STYLE,
        kv_default=8,
        head_dim="head_dim",
    ),
    # configuration_qwen2.py: tie_word_embeddings=False, num_key_value_heads=32, hidden_act="silu",
    # attention_dropout=0.0, no head_dim. modeling_qwen2.py: q/k/v_proj bias=True, o_proj and MLP
    # bias=False, head_dim = hidden_size // num_heads, Qwen2RMSNorm.
    "qwen2": Family(
        source="qwen2/configuration_qwen2.py, qwen2/modeling_qwen2.py",
        **LLAMA_STYLE,
        kv_default=32,
        qkv_bias_only=True,
    ),
    # configuration_nemotron.py: tie_word_embeddings=False, hidden_act="relu2",
    # num_key_value_heads=None (-> heads), head_dim=None, partial_rotary_factor=0.5,
    # attention_bias=False, mlp_bias=False, attention_dropout=0.0. modeling_nemotron.py:
    # NemotronMLP is up_proj/down_proj (no gate), NemotronLayerNorm1P is an nn.LayerNorm with
    # weight and bias, head_dim = config.head_dim.
    "nemotron": Family(
        source="nemotron/configuration_nemotron.py, nemotron/modeling_nemotron.py",
        **HF_SHAPE_KEYS,
        act="hidden_act",
        act_default="relu2",
        gated=False,
        norm="layernorm",
        position="rope",
        tied_default=False,
        dropout="attention_dropout",
        head_dim="head_dim",
        attention_bias=("attention_bias", False),
        mlp_bias=("mlp_bias", False),
    ),
    # configuration_gpt2.py: n_layer/n_embd/n_head/n_inner (None -> 4 x n_embd, modeling_gpt2.py
    # GPT2Block inner_dim), activation_function="gelu_new", attn_pdrop=0.1; no
    # tie_word_embeddings argument, so configuration_utils.py PretrainedConfig's default True.
    # modeling_gpt2.py: Conv1D layers (always biased), nn.LayerNorm, learned wpe positions.
    "gpt2": Family(
        source="gpt2/configuration_gpt2.py, gpt2/modeling_gpt2.py, ../configuration_utils.py",
        layers="n_layer",
        hidden="n_embd",
        heads="n_head",
        vocab="vocab_size",
        ffn="n_inner",
        act="activation_function",
        act_default="gelu_new",
        gated=False,
        norm="layernorm",
        position="learned",
        tied_default=True,
        dropout="attn_pdrop",
        kv=None,
        attention_bias=(None, True),
        mlp_bias=(None, True),
        ffn_default_4h=True,
    ),
    # configuration_gpt_neox.py: tie_word_embeddings=False, hidden_act="gelu", rotary_pct=0.25,
    # attention_bias=True, attention_dropout=0.0, no GQA. modeling_gpt_neox.py:
    # query_key_value/dense bias=config.attention_bias, dense_h_to_4h/dense_4h_to_h always
    # biased, nn.LayerNorm, separate embed_out.
    "gpt_neox": Family(
        source="gpt_neox/configuration_gpt_neox.py, gpt_neox/modeling_gpt_neox.py",
        **HF_SHAPE_KEYS,
        act="hidden_act",
        act_default="gelu",
        gated=False,
        norm="layernorm",
        position="rope",
        tied_default=False,
        dropout="attention_dropout",
        kv=None,
        attention_bias=("attention_bias", True),
        mlp_bias=(None, True),
    ),
}

TF457 = "transformers v4.57.1 src/transformers/models/"
"""The families below read at the release the test extra pins (their configurations are newer
than v4.46.3, or gained `layer_types` since)."""

# configuration_qwen3.py: tie_word_embeddings=False, num_key_value_heads=32, head_dim=128,
# attention_bias=False, use_sliding_window=False (layer_types: sliding only where it is true and
# the layer index >= max_window_layers), attention_dropout=0.0. modeling_qwen3.py: q_norm and
# k_norm are Qwen3RMSNorm(head_dim), applied per head before RoPE; gate/up/down_proj, no bias.
FAMILIES["qwen3"] = Family(
    source=TF457 + "qwen3/configuration_qwen3.py, qwen3/modeling_qwen3.py",
    **LLAMA_STYLE,
    kv_default=32,
    head_dim="head_dim",
    class_defaults=(("head_dim", 128),),
    attention_bias=("attention_bias", False),
    qk_norm="head",
    window_switch="use_sliding_window",
)
# configuration_olmo2.py: tie_word_embeddings=False, num_key_value_heads=None (-> heads),
# attention_bias=False, attention_dropout=0.0. modeling_olmo2.py: q_norm = Olmo2RMSNorm(heads x
# head_dim), k_norm = Olmo2RMSNorm(kv_heads x head_dim) over the whole projections; the layer has
# post_attention_layernorm and post_feedforward_layernorm on each block's output and no input
# norm (arXiv 2501.00656 §3.2).
FAMILIES["olmo2"] = Family(
    source=TF457 + "olmo2/configuration_olmo2.py, olmo2/modeling_olmo2.py",
    **LLAMA_STYLE,
    attention_bias=("attention_bias", False),
    qk_norm="full",
    norm_placement="post",
)
# configuration_gemma2.py: tie_word_embeddings=True, num_key_value_heads=4, head_dim=256,
# hidden_activation="gelu_pytorch_tanh", attention_bias=False, sliding_window=4096, layer_types
# default sliding where (i + 1) % 2, attention_dropout=0.0. modeling_gemma2.py: input_layernorm,
# post_attention_layernorm, pre_feedforward_layernorm, post_feedforward_layernorm (Gemma2RMSNorm,
# weight of h); the softcaps and query_pre_attn_scalar change values, not shapes.
FAMILIES["gemma2"] = Family(
    source=TF457 + "gemma2/configuration_gemma2.py, gemma2/modeling_gemma2.py",
    **HF_SHAPE_KEYS,
    act="hidden_activation",
    act_default="gelu_pytorch_tanh",
    gated=True,
    norm="rmsnorm",
    position="rope",
    tied_default=True,
    dropout="attention_dropout",
    kv_default=4,
    head_dim="head_dim",
    class_defaults=(("head_dim", 256),),
    attention_bias=("attention_bias", False),
    norm_placement="sandwich",
    window="sliding_window",
    window_default=4096,
    global_every=2,
)
# configuration_gemma3.py Gemma3TextConfig: as Gemma-2 (num_attention_heads=8,
# num_key_value_heads=4, head_dim=256, vocab_size=262208), plus sliding_window_pattern (kwargs,
# default 6) giving layer_types sliding where (i + 1) % 6. modeling_gemma3.py: q_norm and k_norm
# are Gemma3RMSNorm(head_dim), per head.
FAMILIES["gemma3_text"] = dataclasses.replace(
    FAMILIES["gemma2"],
    source=TF457 + "gemma3/configuration_gemma3.py, gemma3/modeling_gemma3.py",
    class_defaults=(("num_attention_heads", 8), ("head_dim", 256), ("vocab_size", 262208)),
    qk_norm="head",
    global_every="sliding_window_pattern",
    global_every_default=6,
)
# configuration_phi3.py: tie_word_embeddings=False, num_key_value_heads=None (-> heads),
# sliding_window=None, attention_dropout=0.0. modeling_phi3.py: qkv_proj and gate_up_proj fused
# (the same weights as separate q, k, v and gate, up), no biases, every layer through the window.
FAMILIES["phi3"] = Family(
    source=TF457 + "phi3/configuration_phi3.py, phi3/modeling_phi3.py",
    **LLAMA_STYLE,
    window="sliding_window",
)
# Mistral reads its window (configuration_mistral.py sliding_window=4096), every layer local.
FAMILIES["mistral"] = dataclasses.replace(
    FAMILIES["mistral"], window="sliding_window", window_default=4096
)

# configuration_mixtral.py: num_local_experts=8, num_experts_per_tok=2, num_key_value_heads=8,
# sliding_window=None, head_dim=None, tie_word_embeddings=False. modeling_mixtral.py:
# MixtralSparseMoeBlock gate Linear(h, E, bias=False) and E experts w1, w3 (h -> intermediate_size)
# and w2 back, no bias; every layer sparse.
FAMILIES["mixtral"] = Family(
    source=TF457 + "mixtral/configuration_mixtral.py, mixtral/modeling_mixtral.py",
    **LLAMA_STYLE,
    kv_default=8,
    head_dim="head_dim",
    window="sliding_window",
    experts=Experts("num_local_experts", 8, "num_experts_per_tok", 2),
)
# configuration_qwen3_moe.py: num_experts=128, num_experts_per_tok=8, moe_intermediate_size=768,
# decoder_sparse_step=1, mlp_only_layers=[] (dense layers of intermediate_size), head_dim 128,
# num_key_value_heads=4, attention_bias=False, tie_word_embeddings=False. modeling_qwen3_moe.py:
# a layer is sparse when not in mlp_only_layers and (layer_idx + 1) % decoder_sparse_step == 0;
# gate Linear(h, E, bias=False); q_norm / k_norm over head_dim, as Qwen3.
FAMILIES["qwen3_moe"] = dataclasses.replace(
    FAMILIES["qwen3"],
    source=TF457 + "qwen3_moe/configuration_qwen3_moe.py, qwen3_moe/modeling_qwen3_moe.py",
    kv_default=4,
    experts=Experts(
        "num_experts",
        128,
        "num_experts_per_tok",
        8,
        ffn="moe_intermediate_size",
        ffn_default=768,
        every="decoder_sparse_step",
        dense_list="mlp_only_layers",
    ),
)

# configuration_deepseek_v3.py: n_routed_experts=256, num_experts_per_tok=8,
# moe_intermediate_size=2048, n_shared_experts=1, first_k_dense_replace=3, q_lora_rank=1536,
# kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
# tie_word_embeddings=False, attention_bias=False. modeling_deepseek_v3.py: layer i has
# DeepseekV3MoE when i >= first_k_dense_replace (moe_layer_freq is not read), its shared_experts a
# DeepseekV3MLP of moe_intermediate_size x n_shared_experts; the gate's weight is E x h (its
# e_score_correction_bias a buffer); DeepseekV3Attention q_a_proj, q_a_layernorm, q_b_proj,
# kv_a_proj_with_mqa (kv_lora_rank + qk_rope_head_dim), kv_a_layernorm, kv_b_proj
# (heads x (qk_nope_head_dim + v_head_dim)), o_proj, no biases. The multi-token-prediction layer
# (num_nextn_predict_layers) is not built.
FAMILIES["deepseek_v3"] = Family(
    source=TF457 + "deepseek_v3/configuration_deepseek_v3.py, deepseek_v3/modeling_deepseek_v3.py",
    **LLAMA_STYLE,
    kv=None,
    head_dim="qk_nope_head_dim",
    class_defaults=(("qk_nope_head_dim", 128),),
    experts=Experts(
        "n_routed_experts",
        256,
        "num_experts_per_tok",
        8,
        ffn="moe_intermediate_size",
        ffn_default=2048,
        dense_first="first_k_dense_replace",
        shared="n_shared_experts",
        score="sigmoid",
    ),
    mla=True,
)

# Kimi-K2 is DeepSeek-V3's architecture under its own model_type: "Kimi-K2 reuses the
# DeepSeekV3CausalLM architecture ... we set "model_type": "kimi_k2" in config.json ... change
# model_type to "deepseek_v3" as a temporary solution" (MoonshotAI/Kimi-K2 docs/deploy_guidance.md;
# its config.json: architectures DeepseekV3ForCausalLM). Its file gives every key DeepSeek-V3's
# defaults would otherwise fill (384 experts, 1 dense first layer, 64 heads).
FAMILIES["kimi_k2"] = dataclasses.replace(
    FAMILIES["deepseek_v3"],
    source="MoonshotAI/Kimi-K2 docs/deploy_guidance.md (DeepSeek-V3's architecture); "
    + FAMILIES["deepseek_v3"].source,
)

# configuration_gpt_oss.py: num_local_experts=128, num_experts_per_tok=4, intermediate_size
# (each expert's), head_dim=64, num_key_value_heads=8, attention_bias=True, sliding_window=128 and
# layer_types (sliding and full alternating), tie_word_embeddings=False. modeling_gpt_oss.py:
# q/k/v/o_proj with biases, `sinks` (one a head), GptOssTopKRouter weight E x h and bias E,
# GptOssExperts gate_up_proj (E, h, 2f) + bias (E, 2f), down_proj (E, f, h) + bias (E, h).
FAMILIES["gpt_oss"] = Family(
    source=TF457 + "gpt_oss/configuration_gpt_oss.py, gpt_oss/modeling_gpt_oss.py",
    **LLAMA_STYLE,
    kv_default=8,
    head_dim="head_dim",
    attention_bias=("attention_bias", True),
    mlp_bias=(None, True),
    window="sliding_window",
    window_default=128,
    experts=Experts("num_local_experts", 128, "num_experts_per_tok", 4),
    sinks=True,
)

# configuration_llama4.py Llama4TextConfig: num_local_experts=16, num_experts_per_tok=1,
# intermediate_size (each expert's and the shared expert's) 8192, intermediate_size_mlp (a dense
# layer's) 16384, interleave_moe_layer_step=1, attention_chunk_size=8192, no_rope_layer_interval=4
# (every 4th layer no RoPE and full attention, the rest chunked), head_dim=128,
# num_key_value_heads=8, tie_word_embeddings False. modeling_llama4.py: Llama4TextMoe router
# Linear(h, E, bias=False) (sigmoid scores), experts gate_up_proj (E, h, 2f) and down_proj
# (E, f, h), one shared_expert Llama4TextMLP(intermediate_size); dense layers
# Llama4TextMLP(intermediate_size_mlp); use_qk_norm is a weightless L2 norm (its kernels are not
# priced).
FAMILIES["llama4_text"] = Family(
    source=TF457 + "llama4/configuration_llama4.py, llama4/modeling_llama4.py",
    **{**LLAMA_STYLE, "ffn": "intermediate_size_mlp"},
    kv_default=8,
    head_dim="head_dim",
    class_defaults=(("head_dim", 128), ("intermediate_size_mlp", 16384)),
    attention_bias=("attention_bias", False),
    experts=Experts(
        "num_local_experts",
        16,
        "num_experts_per_tok",
        1,
        ffn="intermediate_size",
        ffn_default=8192,
        every="interleave_moe_layer_step",
        score="sigmoid",
        shared_fixed=1,
    ),
    chunk="attention_chunk_size",
    chunk_global_every=("no_rope_layer_interval", 4),
)

ROPE_FRACTION_KEYS = ("partial_rotary_factor", "rotary_pct")
"""Fraction of each head's channels that are rotated (Nemotron 0.5, GPT-NeoX 0.25)."""
