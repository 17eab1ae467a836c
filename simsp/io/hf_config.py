"""A Hugging Face `config.json` (already parsed to a dict) -> ModelSpec keyword values.

Pure: no file I/O, no YAML, standard library only. The caller reads the JSON and adds seq_len
(a config.json does not hold the training sequence length; `max_position_embeddings` is the
longest context the positions support, not what a run trains at).

Each supported model_type has one table, `hf_families.FAMILIES[model_type]`, written from the
transformers configuration class of that family and the modeling file that consumes it.
Citations are to huggingface/transformers v4.46.3 (the last 4.x release before the v5 config
rewrite), paths under src/transformers/models/; the defaults quoted were re-read at main
@008e5743 (v5 dataclass configs) for llama, mistral, qwen2 and gpt_neox and are unchanged there.

Choices that are this module's, not transformers':

* attention is always 'flash'. config.json does not say how a model is trained; every framework
  that trains these models at scale (Megatron-LM/NeMo, torchtitan) runs FlashAttention, and so
  does HF when `attn_implementation="flash_attention_2"/"sdpa"`. GPT-2 gets 'flash' too: the
  paper's unfused softmax is a property of 2022 Megatron, not of GPT-2's weights. A workload that
  wants the paper's kernels sets `attention: unfused` itself.
* dropout is the family's *attention* dropout key (`attention_dropout`; GPT-2 `attn_pdrop`).
  ModelSpec has one rate for hidden and attention dropout. GPT-2 ships 0.1 for all of
  resid/embd/attn_pdrop, so taking attn_pdrop loses nothing there; GPT-NeoX's hidden_dropout
  (default 0.0, like attention_dropout) is not read.
* vocab is `vocab_size` as shipped; Megatron's padding (`vocab_divisible_by`) is a training
  framework setting, so that key is left to ModelSpec's default and not returned.
* Shape fields (layers, hidden, heads, vocab, MLP size) are required although the transformers
  classes default them (to a 7B-ish shape): a config.json without them is not a checkpoint's.
  Every other field falls back to that class's default, as `from_pretrained` would.
* Not represented, read and ignored: rope_theta / rope_scaling / partial_rotary_factor (they
  change the rotary angles, not the shapes or FLOPs simsp models beyond an elementwise op),
  GPT-NeoX's use_parallel_residual (same ops, different wiring), Nemotron's and Gemma's
  offset gammas (`weight + 1`, same parameters), Gemma's softcaps and query scalar (values,
  not shapes).
* Read since transformers v4.57.1 (the test extra's pin): the sliding window and which layers
  use it (`_window`), QK norms and where a layer's norms sit (the family's table).
"""

import math

from simsp.errors import InputError
from simsp.io.hf_families import (
    FAMILIES,
    GATED_ACTS,
    MOE_KEYS,
    MOE_TYPES,
    PLAIN_ACTS,
    ROPE_FRACTION_KEYS,
    Family,
)
from simsp.spec.fields import MAX_INT

MOE_REFUSED = (
    "is a mixture of experts whose layers simsp does not model yet "
    "(it reads mixtral, qwen3_moe, deepseek_v3, kimi_k2, gpt_oss and llama4_text configs)"
)


def model_fields(config: dict, source: str) -> dict:
    """ModelSpec keyword values (all but seq_len and vocab_divisible_by) for a parsed
    Hugging Face config.json; `source` names it in errors. Raises InputError naming source,
    key, value and rule for a non-dict, an unsupported or MoE model_type, or a missing or
    malformed field. Follows the transformers file named in FAMILIES[model_type].source."""
    if not isinstance(config, dict):
        raise InputError(
            source,
            "file",
            type(config).__name__,
            "must be a JSON object (a Hugging Face config.json)",
        )
    fam = _family(config, source)
    config = {**dict(fam.class_defaults), **config}
    if fam.experts is None:
        _refuse_moe(config, source)
    heads = _positive(config, source, fam.heads)
    hidden = _positive(config, source, fam.hidden)
    _check_rope(config, source)
    return {
        "layers": _positive(config, source, fam.layers),
        "hidden": hidden,
        "heads": heads,
        "vocab": _positive(config, source, fam.vocab),
        "ffn_hidden": _ffn(config, source, fam, hidden),
        "kv_heads": _kv_heads(config, source, fam, heads),
        "head_dim": _head_dim(config, source, fam),
        "mlp": _mlp(config, source, fam),
        "norm": fam.norm,
        "position": fam.position,
        "bias": _bias(config, source, fam),
        "dropout": _dropout(config, source, fam),
        "attention": "flash",
        "tied_embeddings": _tied(config, source, fam),
        "qk_norm": fam.qk_norm,
        "norm_placement": fam.norm_placement,
        **_window(config, source, fam),
        **_experts(config, source, fam),
        **_mla(config, source, fam),
        **({"attention_sinks": True} if fam.sinks else {}),
        **_chunk(config, source, fam),
    }


def _chunk(config, source, fam) -> dict:
    """Chunked attention (configuration_llama4.py attention_chunk_size; null: none) and its
    global layers, every no_rope_layer_interval-th (modeling_llama4.py: the no-RoPE layers attend
    to the whole prefix, the others within their chunk)."""
    if fam.chunk is None or config.get(fam.chunk) is None:
        return {}
    key, default = fam.chunk_global_every
    return {
        "attention_chunk": _as_positive(source, fam.chunk, config[fam.chunk]),
        "global_every": _as_positive(source, key, config.get(key, default)),
    }


def _experts(config, source, fam) -> dict:
    """A mixture of experts' ModelSpec fields (none for a dense family): the routed experts and
    top-k, one expert's inner size, which layers are sparse (every n-th; a list of dense
    layers must be the first k)."""
    moe = fam.experts
    if moe is None:
        return {}
    count = _as_positive(source, moe.count, config.get(moe.count, moe.count_default))
    topk = _as_positive(source, moe.topk, config.get(moe.topk, moe.topk_default))
    if topk > count:
        raise InputError(source, moe.topk, topk, f"must be at most {moe.count} ({count})")
    out = {"experts": count, "router_topk": topk}
    if moe.score != "softmax":
        out["router_score"] = moe.score
    if moe.ffn:
        out["moe_ffn"] = _as_positive(source, moe.ffn, config.get(moe.ffn, moe.ffn_default))
    if moe.every:
        out["moe_every"] = _as_positive(source, moe.every, config.get(moe.every, moe.every_default))
    dense = config.get(moe.dense_list) if moe.dense_list else None
    if dense:
        if not isinstance(dense, list) or dense != list(range(len(dense))):
            raise InputError(
                source, moe.dense_list, dense, "must list the first k layers (0, 1, ..., k - 1)"
            )
        if out.get("moe_every", 1) > 1:
            raise InputError(
                source, moe.every, out["moe_every"], f"must be 1 where {moe.dense_list} is set"
            )
        out["dense_layers"] = len(dense)
    if moe.dense_first:
        out["dense_layers"] = _count(config, source, moe.dense_first)
    if moe.shared or moe.shared_fixed:
        shared = _count(config, source, moe.shared) if moe.shared else moe.shared_fixed
        out["shared_expert_ffn"] = shared * out.get("moe_ffn", 0)
    return out


def _count(config, source, key) -> int:
    """A non-negative integer count (first_k_dense_replace, n_shared_experts), 0 when absent."""
    value = config.get(key) or 0
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(source, key, value, "must be a non-negative integer")
    return value


def _mla(config, source, fam) -> dict:
    """Multi-head latent attention's widths (configuration_deepseek_v3.py: q_lora_rank, null for
    queries projected directly; kv_lora_rank; qk_rope_head_dim; v_head_dim)."""
    if not fam.mla:
        return {}
    return {
        "q_lora_rank": _count(config, source, "q_lora_rank"),
        "kv_lora_rank": _positive(config, source, "kv_lora_rank"),
        "qk_rope_dim": _positive(config, source, "qk_rope_head_dim"),
        "v_head_dim": _positive(config, source, "v_head_dim"),
    }


def _family(config, source) -> Family:
    """The table for config['model_type'] (the `model_type` class attribute of each
    configuration_<family>.py, e.g. LlamaConfig.model_type = "llama"); MoE types
    (configuration_mixtral.py "mixtral", configuration_qwen2_moe.py "qwen2_moe", ...) are
    refused."""
    kind = config.get("model_type")
    if isinstance(kind, str) and kind in MOE_TYPES:
        raise InputError(source, "model_type", kind, MOE_REFUSED)
    if not isinstance(kind, str) or kind not in FAMILIES:
        rule = f"must be one of {', '.join(FAMILIES)}"
        raise InputError(
            source, "model_type", kind, rule if "model_type" in config else "is required; " + rule
        )
    return FAMILIES[kind]


def _refuse_moe(config, source):
    """An expert count above one under any key, or experts routed a token, is a mixture of
    experts; a count that is not an integer is refused as such:
    configuration_mixtral.py num_local_experts, configuration_qwen2_moe.py num_experts,
    configuration_deepseek_v3.py n_routed_experts."""
    for key in MOE_KEYS:
        value = config.get(key)
        if value is None or (type(value) is int and value in (0, 1)):
            continue
        if type(value) is not int:  # 8.0, "64", true: an expert count, mistyped
            raise InputError(source, key, value, "must be an integer (an expert count)")
        raise InputError(source, key, value, MOE_REFUSED)
    topk = config.get("num_experts_per_tok")
    if topk is not None and not (type(topk) is int and topk in (0, 1)):
        raise InputError(source, "num_experts_per_tok", topk, MOE_REFUSED)


def _positive(config, source, key) -> int:
    """A required positive integer shape field (num_hidden_layers, hidden_size, ... of
    configuration_<family>.py; GPT-2's n_layer, n_embd, n_head of configuration_gpt2.py)."""
    if key not in config or config[key] is None:
        raise InputError(source, key, None, "is required")
    return _as_positive(source, key, config[key])


def _as_positive(source, key, value) -> int:
    """value as a positive int (the transformers configuration classes type these `int`)."""
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(source, key, value, "must be a positive integer")
    if value > MAX_INT:  # checked here, so the error names config.json, not the workload
        raise InputError(source, key, value, f"must be at most 2**53 ({MAX_INT:,})")
    return value


def _ffn(config, source, fam, hidden) -> int:
    """MLP inner size f: intermediate_size (configuration_llama/mistral/qwen2/nemotron/gpt_neox.py;
    required), or configuration_gpt2.py n_inner, where null or absent means 4h (modeling_gpt2.py
    GPT2Block: `inner_dim = config.n_inner if config.n_inner is not None else 4 * hidden_size`)."""
    if fam.ffn_default_4h and config.get(fam.ffn) is None:
        return 4 * hidden
    return _positive(config, source, fam.ffn)


def _kv_heads(config, source, fam, heads) -> int:
    """Key/value heads g: num_key_value_heads; absent, the class default (configuration_mistral.py
    8, configuration_qwen2.py 32, configuration_llama.py and configuration_nemotron.py None);
    None, in every class, means num_attention_heads. configuration_gpt2.py and
    configuration_gpt_neox.py have no such key: g = a. g must divide a."""
    if fam.kv is None:
        value = heads
    else:
        value = config.get(fam.kv, fam.kv_default)
        value = heads if value is None else value
    kv = _as_positive(source, fam.kv or "num_key_value_heads", value)
    if heads % kv:
        raise InputError(source, fam.kv, kv, f"must divide {fam.heads} ({heads})")
    return kv


def _head_dim(config, source, fam) -> int:
    """Head size d where the family reads `head_dim` (configuration_llama.py,
    configuration_mistral.py, configuration_nemotron.py: head_dim=None -> hidden_size //
    num_attention_heads) and config.json sets it; 0 (ModelSpec: h / a) otherwise, which is also
    what modeling_qwen2.py, modeling_gpt2.py and modeling_gpt_neox.py always compute."""
    if fam.head_dim is None or config.get(fam.head_dim) is None:
        return 0
    return _as_positive(source, fam.head_dim, config[fam.head_dim])


def _mlp(config, source, fam) -> str:
    """ModelSpec.mlp from hidden_act (configuration_gpt2.py: activation_function) and the MLP's
    shape: the gate/up/down MLP of modeling_llama/mistral/qwen2.py with silu is SwiGLU; the
    up/down MLP of modeling_nemotron.py (relu2), modeling_gpt2.py and modeling_gpt_neox.py (gelu
    variants) is squared_relu or gelu (names: ACT2CLS in activations.py). Other pairs (GeGLU,
    ReLU, ...) are refused."""
    act = config.get(fam.act, fam.act_default)
    table = GATED_ACTS if fam.gated else PLAIN_ACTS
    if not isinstance(act, str) or act not in table:
        shape = "a gated (gate/up/down) MLP" if fam.gated else "a two-matrix (up/down) MLP"
        raise InputError(source, fam.act, act, f"must be one of {', '.join(table)} for {shape}")
    return table[act]


def _flag(config, source, key_default) -> bool:
    """A bias flag (configuration_llama.py / configuration_nemotron.py attention_bias and
    mlp_bias, configuration_gpt_neox.py attention_bias) from config.json, or its fixed/default
    value."""
    key, default = key_default
    if key is None or key not in config:
        return default
    if not isinstance(config[key], bool):
        raise InputError(source, key, config[key], "must be true or false")
    return config[key]


def _bias(config, source, fam) -> bool | str:
    """ModelSpec.bias: 'qkv' for Qwen2 (modeling_qwen2.py: q/k/v_proj bias=True, o_proj and MLP
    False); True when attention and MLP both carry biases (modeling_gpt2.py Conv1D;
    modeling_gpt_neox.py with attention_bias); False when neither (modeling_mistral.py; Llama and
    Nemotron defaults).
    Attention-only or MLP-only biases are not representable (modeling_llama.py's attention_bias
    also biases o_proj, which 'qkv' does not) and are refused."""
    if fam.qkv_bias_only:
        return "qkv"
    attn, mlp = _flag(config, source, fam.attention_bias), _flag(config, source, fam.mlp_bias)
    if attn == mlp:
        return attn
    key = next(k for k in (fam.attention_bias[0], fam.mlp_bias[0]) if k and k in config)
    where = "attention (q, k, v, o) but not the MLP" if attn else "the MLP but not attention"
    raise InputError(
        source,
        key,
        config[key],
        f"biases on {where} are not representable; "
        "ModelSpec.bias is true (all), false (none) or qkv",
    )


def _dropout(config, source, fam) -> float:
    """The family's attention dropout (see module docstring), 0 <= p < 1; absent, the class
    default: attention_dropout=0.0 in configuration_llama/mistral/qwen2/nemotron/gpt_neox.py,
    attn_pdrop=0.1 in configuration_gpt2.py."""
    value = config.get(fam.dropout, 0.1 if fam.dropout == "attn_pdrop" else 0.0)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < 1:
        raise InputError(source, fam.dropout, value, "must be a number in [0, 1)")
    return float(value)


def _tied(config, source, fam) -> bool:
    """tie_word_embeddings, else the class default: False in configuration_llama/mistral/qwen2/
    nemotron/gpt_neox.py; GPT2Config takes no such argument, so configuration_utils.py
    PretrainedConfig's `kwargs.pop("tie_word_embeddings", True)` applies."""
    value = config.get("tie_word_embeddings", fam.tied_default)
    if not isinstance(value, bool):
        raise InputError(source, "tie_word_embeddings", value, "must be true or false")
    return value


def _window(config, source, fam) -> dict:
    """sliding_window and global_every. The window is the family's key (configuration_mistral.py,
    configuration_gemma2.py, configuration_phi3.py; null: none); which layers use it is
    `layer_types` where config.json lists it (transformers >= 4.54: "sliding_attention" or
    "full_attention" a layer), which must be periodic with the full layers last in each period,
    else the family's rule (Gemma-2 every 2nd, Gemma-3 every sliding_window_pattern-th layer
    global, Mistral none). Qwen's window (use_sliding_window, from max_window_layers on) is
    refused: its first layers global and the rest local is not that pattern."""
    if fam.window_switch and config.get(fam.window_switch):
        raise InputError(
            source,
            fam.window_switch,
            config[fam.window_switch],
            "a window on the layers from max_window_layers on is not supported; must be false",
        )
    if fam.window is None:
        return {}
    value = config.get(fam.window, fam.window_default)
    if value is None:
        return {}
    window = _as_positive(source, fam.window, value)
    types = config.get("layer_types")
    if types is None:
        every = fam.global_every
        if isinstance(every, str):
            every = _as_positive(source, every, config.get(every, fam.global_every_default))
        return {"sliding_window": window, "global_every": every}
    return {"sliding_window": window, **_pattern(types, source)}


def _pattern(types, source) -> dict:
    """global_every from a `layer_types` list: every layer full (no window), none (0), or every
    n-th (the first full layer's position n, repeated)."""
    known = ("sliding_attention", "full_attention")
    if not isinstance(types, list) or not types or any(k not in known for k in types):
        raise InputError(source, "layer_types", types, f"must be a list of {' or '.join(known)}")
    full = [i for i, k in enumerate(types) if k == "full_attention"]
    if len(full) == len(types):
        return {"sliding_window": 0}
    if not full:
        return {"global_every": 0}
    every = full[0] + 1
    expected = [
        "full_attention" if (i + 1) % every == 0 else "sliding_attention" for i in range(len(types))
    ]
    if types != expected:
        raise InputError(
            source,
            "layer_types",
            "...",
            "must repeat sliding layers then one full layer (every n-th layer global)",
        )
    return {"global_every": every}


def _check_rope(config, source):
    """Rotary settings are accepted, not modelled: rope_theta and rope_scaling
    (configuration_llama/mistral/qwen2/nemotron.py), partial_rotary_factor
    (configuration_nemotron.py, 0.5) and rotary_pct (configuration_gpt_neox.py, 0.25) are only
    checked for sanity (theta > 0, scaling an object or null, fraction in (0, 1])."""
    theta = config.get("rope_theta")
    if theta is not None and (
        not isinstance(theta, (int, float))
        or isinstance(theta, bool)
        or not math.isfinite(theta)
        or theta <= 0
    ):
        raise InputError(source, "rope_theta", theta, "must be a positive, finite number")
    scaling = config.get("rope_scaling")
    if scaling is not None and not isinstance(scaling, dict):
        raise InputError(source, "rope_scaling", scaling, "must be an object or null")
    for key in ROPE_FRACTION_KEYS:
        frac = config.get(key)
        if frac is not None and (
            not isinstance(frac, (int, float)) or isinstance(frac, bool) or not 0 < frac <= 1
        ):
            raise InputError(source, key, frac, "must be a number in (0, 1]")
