"""The Hugging Face model families simsp reads (`hf_config.model_fields`): for each supported
`model_type`, which config.json keys hold the shape and the switches, and the defaults of its
transformers configuration class, each with the file it was read from (transformers v4.46.3,
src/transformers/models/). A family is one entry here; hf_config.py reads a config.json through
it."""

from dataclasses import dataclass

TF = "transformers v4.46.3 src/transformers/models/"
"""Prefix of every citation below."""

MOE_TYPES = frozenset(
    {
        "mixtral",
        "qwen2_moe",
        "qwen3_moe",
        "qwen3_next",
        "deepseek_v2",
        "deepseek_v3",
        "dbrx",
        "olmoe",
        "granitemoe",
        "granitemoeshared",
        "jetmoe",
        "phimoe",
        "jamba",
        "gpt_oss",
        "llama4",
        "llama4_text",
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
"""Mixture-of-experts model_types, refused by name."""

MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
"""Expert-count keys (Mixtral, Qwen-MoE, DeepSeek, Megatron exports): more than one expert is
MoE."""

GATED_ACTS = {"silu": "swiglu", "swish": "swiglu"}
"""Activation of a gated (gate_proj * act(up_proj)) MLP -> ModelSpec.mlp. transformers'
activations.py ACT2CLS maps both 'silu' and 'swish' to nn.SiLU; SiLU-gated = SwiGLU."""

PLAIN_ACTS = {
    "relu2": "squared_relu",
    "gelu": "gelu",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
}
"""Activation of a two-matrix (up, act, down) MLP -> ModelSpec.mlp. relu2 is
ReLUSquaredActivation (activations.py); the gelu variants differ only in their approximation."""


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


FAMILIES = {
    # configuration_llama.py: tie_word_embeddings=False, num_key_value_heads=None (-> heads),
    # attention_bias=False, mlp_bias=False, head_dim=None, hidden_act="silu", attention_dropout=0.0.
    # modeling_llama.py: q/k/v/o_proj bias=config.attention_bias, gate/up/down_proj
    # bias=config.mlp_bias, head_dim = getattr(config, "head_dim", h // a), LlamaRMSNorm.
    "llama": Family(
        source="llama/configuration_llama.py, llama/modeling_llama.py",
        layers="num_hidden_layers",
        hidden="hidden_size",
        heads="num_attention_heads",
        vocab="vocab_size",
        ffn="intermediate_size",
        act="hidden_act",
        act_default="silu",
        gated=True,
        norm="rmsnorm",
        position="rope",
        tied_default=False,
        dropout="attention_dropout",
        head_dim="head_dim",
        attention_bias=("attention_bias", False),
        mlp_bias=("mlp_bias", False),
    ),
    # configuration_mistral.py: tie_word_embeddings=False, num_key_value_heads=8, head_dim=None,
    # hidden_act="silu", attention_dropout=0.0. modeling_mistral.py: every Linear bias=False,
    # head_dim = config.head_dim, MistralRMSNorm.
    "mistral": Family(
        source="mistral/configuration_mistral.py, mistral/modeling_mistral.py",
        layers="num_hidden_layers",
        hidden="hidden_size",
        heads="num_attention_heads",
        vocab="vocab_size",
        ffn="intermediate_size",
        act="hidden_act",
        act_default="silu",
        gated=True,
        norm="rmsnorm",
        position="rope",
        tied_default=False,
        dropout="attention_dropout",
        kv_default=8,
        head_dim="head_dim",
    ),
    # configuration_qwen2.py: tie_word_embeddings=False, num_key_value_heads=32, hidden_act="silu",
    # attention_dropout=0.0, no head_dim. modeling_qwen2.py: q/k/v_proj bias=True, o_proj and MLP
    # bias=False, head_dim = hidden_size // num_heads, Qwen2RMSNorm.
    "qwen2": Family(
        source="qwen2/configuration_qwen2.py, qwen2/modeling_qwen2.py",
        layers="num_hidden_layers",
        hidden="hidden_size",
        heads="num_attention_heads",
        vocab="vocab_size",
        ffn="intermediate_size",
        act="hidden_act",
        act_default="silu",
        gated=True,
        norm="rmsnorm",
        position="rope",
        tied_default=False,
        dropout="attention_dropout",
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
        layers="num_hidden_layers",
        hidden="hidden_size",
        heads="num_attention_heads",
        vocab="vocab_size",
        ffn="intermediate_size",
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
        layers="num_hidden_layers",
        hidden="hidden_size",
        heads="num_attention_heads",
        vocab="vocab_size",
        ffn="intermediate_size",
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

ROPE_FRACTION_KEYS = ("partial_rotary_factor", "rotary_pct")
"""Fraction of each head's channels that are rotated (Nemotron 0.5, GPT-NeoX 0.25)."""
