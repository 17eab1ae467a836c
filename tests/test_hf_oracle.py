"""Parameter counts against transformers itself: the model built from the same config.json on
the meta device (no weights, no download), every parameter counted once (tied embeddings are one
tensor). transformers is pinned in the test extra; torch is the profile extra, so without it
these tests skip."""

import json
from pathlib import Path

import pytest

from simsp.io.hf_config import model_fields
from simsp.model.params import total_params
from simsp.spec.model import ModelSpec
from tests.extras import needs

pytestmark = pytest.mark.slow  # builds every shipped config in transformers: about 140 s

torch = needs("torch")
transformers = needs("transformers")

MODELS = Path(__file__).resolve().parents[1] / "workloads" / "models"
SMALL = {
    "num_hidden_layers": 4,
    "hidden_size": 256,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "intermediate_size": 512,
    "vocab_size": 1000,
}
"""A small shape each family's class fills in with its own defaults."""
FAMILY_CONFIGS = {
    "llama": {"model_type": "llama", **SMALL},
    "mistral": {"model_type": "mistral", **SMALL},
    "qwen2": {"model_type": "qwen2", **SMALL},
    "qwen3": {"model_type": "qwen3", **SMALL, "head_dim": 64},
    "olmo2": {"model_type": "olmo2", **SMALL},
    "gemma2": {"model_type": "gemma2", **SMALL, "head_dim": 64},
    "gemma3_text": {"model_type": "gemma3_text", **SMALL, "head_dim": 64},
    "phi3": {"model_type": "phi3", **SMALL, "vocab_size": 32064},  # its pad token id is 32000
    "nemotron": {"model_type": "nemotron", **SMALL},
    "gpt_neox": {"model_type": "gpt_neox", **SMALL},
    "gpt2": {"model_type": "gpt2", "n_layer": 4, "n_embd": 256, "n_head": 8, "vocab_size": 1000},
    "mixtral": {"model_type": "mixtral", **SMALL, "num_local_experts": 4},
    "qwen3_moe": {
        "model_type": "qwen3_moe",
        **SMALL,
        "head_dim": 64,
        "num_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "decoder_sparse_step": 2,
    },
    "gpt_oss": {
        "model_type": "gpt_oss",
        **SMALL,
        "head_dim": 32,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
        "sliding_window": 16,
        "layer_types": ["sliding_attention", "full_attention"] * 2,
    },
    "llama4_text": {
        "model_type": "llama4_text",
        **SMALL,
        "head_dim": 32,
        "num_local_experts": 4,
        "num_experts_per_tok": 1,
        "intermediate_size_mlp": 768,
        "interleave_moe_layer_step": 2,
        "attention_chunk_size": 64,
    },
    "deepseek_v3": {
        "model_type": "deepseek_v3",
        **SMALL,
        "num_key_value_heads": 8,
        "n_routed_experts": 8,
        "num_experts_per_tok": 2,
        "moe_intermediate_size": 128,
        "n_shared_experts": 1,
        "first_k_dense_replace": 1,
        "q_lora_rank": 64,
        "kv_lora_rank": 32,
        "qk_nope_head_dim": 32,
        "qk_rope_head_dim": 16,
        "v_head_dim": 32,
        "n_group": 2,
        "topk_group": 1,
    },
}
FAMILY_CONFIGS["kimi_k2"] = {**FAMILY_CONFIGS["deepseek_v3"], "model_type": "kimi_k2"}
AS_TRANSFORMERS = {"kimi_k2": "deepseek_v3"}
"""model_types transformers does not know, and the one it builds them as (Moonshot's Kimi-K2
deployment guide: its architecture is DeepSeek-V3's, model_type renamed)."""


def _hf_config(config: dict):
    kind = AS_TRANSFORMERS.get(config["model_type"], config["model_type"])
    return transformers.AutoConfig.for_model(**{**config, "model_type": kind})


def transformers_count(config: dict) -> int:
    """What transformers builds from the config: AutoModelForCausalLM on the meta device."""
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(_hf_config(config))
    return sum(p.numel() for p in model.parameters())


def simsp_count(config: dict) -> int:
    """simsp's count for the same config; a learned position table is n_positions long there
    (GPT-2), as simsp sizes it by the sequence."""
    seq_len = config.get("n_positions", 1024) if config["model_type"] == "gpt2" else 4096
    return total_params(ModelSpec(seq_len=seq_len, **model_fields(config, "config.json")))


def test_every_family_is_checked():
    from simsp.io.hf_families import FAMILIES

    assert set(FAMILY_CONFIGS) == set(FAMILIES)


@pytest.mark.parametrize("family", sorted(FAMILY_CONFIGS))
def test_each_family_counts_as_transformers_does(family):
    config = FAMILY_CONFIGS[family]
    assert simsp_count(config) == transformers_count(config)


def _read(name: str) -> dict:
    return json.loads((MODELS / name / "config.json").read_text())


def _shipped(readable: bool) -> list[str]:
    """The shipped configs simsp reads (or, readable False, refuses by model_type)."""
    from simsp.io.hf_families import MOE_TYPES

    names = sorted(p.name for p in MODELS.iterdir() if p.is_dir())
    return [n for n in names if (_read(n)["model_type"] not in MOE_TYPES) == readable]


@pytest.mark.parametrize("name", _shipped(readable=True))
def test_each_shipped_config_counts_as_transformers_does(name):
    """Mistral-7B-v0.1, Gemma-2-9B, Gemma-3-4B's text model, Qwen3-8B and OLMo-2-7B (their QK
    norms, sandwich and post norms, GeGLU), Mixtral-8x7B, Qwen3-30B-A3B and Qwen3-235B-A22B
    (their experts) and every other shipped config."""
    config = _read(name)
    assert simsp_count(config) == transformers_count(config)


@pytest.mark.parametrize(
    "name",
    [
        "mixtral-8x7b",
        "qwen3-30b-a3b",
        "qwen3-235b-a22b",
        "deepseek-v3",
        "kimi-k2",
        "gpt-oss-120b",
        "llama-4-maverick",
    ],
)
def test_active_parameters_leave_out_the_experts_a_token_skips(name):
    """Active = total - (E - k) / E of the routed experts' weights, the routed weights counted
    from transformers' own tensors (`.experts.` in their names): Mixtral 12.9B of 46.7B,
    Qwen3-30B-A3B 3.35B of 30.5B, as published."""
    from simsp.model.params import active_params

    config = _read(name)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(_hf_config(config))
    routed = sum(p.numel() for n, p in model.named_parameters() if ".experts." in n)
    experts = (
        config.get("num_local_experts") or config.get("num_experts") or config["n_routed_experts"]
    )
    k = config["num_experts_per_tok"]
    expected = transformers_count(config) - round(routed * (experts - k) / experts)
    spec = ModelSpec(seq_len=4096, **model_fields(config, "config.json"))
    assert active_params(spec) == expected
