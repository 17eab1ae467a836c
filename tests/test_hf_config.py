"""simsp.io.hf_config.model_fields on the shipped Hugging Face configs
(workloads/models/*/config.json), their parameter counts against the published ones, and the
errors it raises."""

import json
from pathlib import Path

import pytest
import yaml

from simsp.errors import InputError
from simsp.io.hf_config import MOE_REFUSED, model_fields
from simsp.io.hf_families import FAMILIES
from simsp.model.params import total_params
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import TrainingSpec, Workload

WORKLOADS = Path(__file__).resolve().parents[1] / "workloads"
MODELS = WORKLOADS / "models"
HF_WORKLOADS = {
    # name: GPUs (tp x cp x pp x dp), the recipe's count
    "llama-3.1-8b": 8,
    "llama-3.1-70b": 64,
    "llama-3.1-405b": 1024,
    "llama-3.1-405b-18k": 16384,
    "llama-2-7b": 8,
    "llama-2-70b": 64,
    "mistral-7b": 8,
    "qwen2.5-72b": 32,
    "nemotron-4-340b": 128,
}

LLAMA = {
    "mlp": "swiglu",
    "norm": "rmsnorm",
    "position": "rope",
    "bias": False,
    "tied_embeddings": False,
}
NEMOTRON = {
    "mlp": "squared_relu",
    "norm": "layernorm",
    "position": "rope",
    "bias": False,
    "tied_embeddings": False,
}
QWEN = {**LLAMA, "bias": "qkv"}
COMMON = {
    "head_dim": 0,
    "dropout": 0.0,
    "attention": "flash",
    "qk_norm": "none",
    "norm_placement": "pre",
}
MISTRAL = {**LLAMA, "sliding_window": 4096, "global_every": 0}
GEMMA = {**LLAMA, "mlp": "geglu", "tied_embeddings": True, "norm_placement": "sandwich"}
QWEN3_MOE = {
    **LLAMA,
    "head_dim": 128,
    "qk_norm": "head",
    "experts": 128,
    "router_topk": 8,
    "moe_every": 1,
}

# name: (layers, hidden, heads, kv_heads, ffn_hidden, vocab, family traits)
EXPECTED = {
    "llama-2-7b": (32, 4096, 32, 32, 11008, 32000, LLAMA),
    "llama-2-13b": (40, 5120, 40, 40, 13824, 32000, LLAMA),
    "llama-2-70b": (80, 8192, 64, 8, 28672, 32000, LLAMA),
    "llama-3.1-8b": (32, 4096, 32, 8, 14336, 128256, LLAMA),
    "llama-3.1-70b": (80, 8192, 64, 8, 28672, 128256, LLAMA),
    "llama-3.1-405b": (126, 16384, 128, 8, 53248, 128256, LLAMA),
    "mistral-7b": (32, 4096, 32, 8, 14336, 32000, MISTRAL),
    "qwen2.5-7b": (28, 3584, 28, 4, 18944, 152064, QWEN),
    "qwen2.5-72b": (80, 8192, 64, 8, 29568, 152064, QWEN),
    "nemotron-4-15b": (32, 6144, 48, 8, 24576, 256000, NEMOTRON),
    "nemotron-4-340b": (96, 18432, 96, 8, 73728, 256000, {**NEMOTRON, "head_dim": 192}),
    "gemma-2-9b": (
        42,
        3584,
        16,
        8,
        14336,
        256000,
        {**GEMMA, "head_dim": 256, "sliding_window": 4096, "global_every": 2},
    ),
    "gemma-3-4b-text": (
        34,
        2560,
        8,
        4,
        10240,
        262208,
        {**GEMMA, "head_dim": 256, "qk_norm": "head", "sliding_window": 1024, "global_every": 6},
    ),
    "qwen3-8b": (36, 4096, 32, 8, 12288, 151936, {**LLAMA, "head_dim": 128, "qk_norm": "head"}),
    "olmo-2-7b": (
        32,
        4096,
        32,
        32,
        11008,
        100352,
        {**LLAMA, "qk_norm": "full", "norm_placement": "post"},
    ),
    "mixtral-8x7b": (32, 4096, 32, 8, 14336, 32000, {**LLAMA, "experts": 8, "router_topk": 2}),
    "qwen3-30b-a3b": (
        48,
        2048,
        32,
        4,
        6144,
        151936,
        {**QWEN3_MOE, "moe_ffn": 768},
    ),
    "qwen3-235b-a22b": (
        94,
        4096,
        64,
        4,
        12288,
        151936,
        {**QWEN3_MOE, "moe_ffn": 1536},
    ),
    "gpt-oss-120b": (
        36,
        2880,
        64,
        8,
        2880,
        201088,
        {
            **LLAMA,
            "head_dim": 64,
            "bias": True,
            "sliding_window": 128,
            "global_every": 2,
            "experts": 128,
            "router_topk": 4,
            "attention_sinks": True,
        },
    ),
    "llama-4-maverick": (
        48,
        5120,
        40,
        8,
        16384,
        202048,
        {
            **LLAMA,
            "head_dim": 128,
            "experts": 128,
            "router_topk": 1,
            "router_score": "sigmoid",
            "moe_ffn": 8192,
            "moe_every": 2,
            "shared_expert_ffn": 8192,
            "attention_chunk": 8192,
            "global_every": 4,
        },
    ),
    "deepseek-v3": (
        61,
        7168,
        128,
        128,
        18432,
        129280,
        {
            **LLAMA,
            "head_dim": 128,
            "experts": 256,
            "router_topk": 8,
            "moe_ffn": 2048,
            "dense_layers": 3,
            "shared_expert_ffn": 2048,
            "router_score": "sigmoid",
            "q_lora_rank": 1536,
            "kv_lora_rank": 512,
            "qk_rope_dim": 64,
            "v_head_dim": 128,
        },
    ),
    "kimi-k2": (
        61,
        7168,
        64,
        64,
        18432,
        163840,
        {
            **LLAMA,
            "head_dim": 128,
            "experts": 384,
            "router_topk": 8,
            "moe_ffn": 2048,
            "dense_layers": 1,
            "shared_expert_ffn": 2048,
            "router_score": "sigmoid",
            "q_lora_rank": 1536,
            "kv_lora_rank": 512,
            "qk_rope_dim": 64,
            "v_head_dim": 128,
        },
    ),
}


PUBLISHED_STACKED = {
    "gemma-2-9b": 9_241_705_984,
    "qwen3-8b": 8_190_735_360,
    "olmo-2-7b": 7_298_617_344,
}
"""Counts published to the parameter (the checkpoints' safetensors metadata, cited in
workloads/models/README.md), for models whose layers have QK norms, post or
sandwich norms or GeGLU, which hand_count does not spell out."""

PUBLISHED_EXACT = {
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "mistral-7b": 7_241_732_096,
    "qwen2.5-7b": 7_615_616_512,
}
"""Parameter counts published to the parameter (see workloads/models/README.md)."""

DERIVED = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-13b": 13_015_864_320,
    "llama-2-70b": 68_976_648_192,
    "qwen2.5-72b": 72_706_203_648,
    "nemotron-4-15b": 15_628_775_424,
    "nemotron-4-340b": 341_029_195_776,
}
"""Counts derived from the config, published only rounded (README table)."""

LLAMA_MIN = {
    "model_type": "llama",
    "num_hidden_layers": 2,
    "hidden_size": 64,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "vocab_size": 1000,
}


def load(name):
    with open(MODELS / name / "config.json") as f:
        return json.load(f)


def hand_count(f):
    """Parameters of the mapped fields, by hand: embedding + layers + final norm + untied output."""
    h, a, g, v, f_ = f["hidden"], f["heads"], f["kv_heads"], f["vocab"], f["ffn_hidden"]
    d = f["head_dim"] or h // a
    attention = h * a * d + 2 * h * g * d + a * d * h
    if f["bias"] in (True, "qkv"):
        attention += a * d + 2 * g * d
    if f["bias"] is True:
        attention += h
    mlp = (3 if f["mlp"] == "swiglu" else 2) * h * f_
    if f["bias"] is True:
        mlp += (2 if f["mlp"] == "swiglu" else 1) * f_ + h
    norm = h if f["norm"] == "rmsnorm" else 2 * h
    output = 0 if f["tied_embeddings"] else v * h
    return v * h + f["layers"] * (attention + mlp + 2 * norm) + norm + output


def test_every_model_directory_is_covered():
    assert sorted(p.name for p in MODELS.iterdir() if p.is_dir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shipped_config_maps(name):
    layers, hidden, heads, kv, ffn, vocab, traits = EXPECTED[name]
    fields = model_fields(load(name), f"models/{name}/config.json")
    assert fields == {
        **COMMON,
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv,
        "ffn_hidden": ffn,
        "vocab": vocab,
        **traits,
    }
    spec = ModelSpec(seq_len=4096, **fields)
    assert spec.ffn == ffn and spec.groups == kv
    assert spec.head_size == (fields["head_dim"] or hidden // heads)


@pytest.mark.parametrize("name", sorted(PUBLISHED_EXACT))
def test_parameter_count_matches_published(name):
    assert hand_count(model_fields(load(name), name)) == PUBLISHED_EXACT[name]


@pytest.mark.parametrize("name", sorted(PUBLISHED_STACKED))
def test_parameter_count_of_newer_layers_matches_published(name):
    spec = ModelSpec(seq_len=4096, **model_fields(load(name), name))
    assert total_params(spec) == PUBLISHED_STACKED[name]


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_parameter_count_derived(name):
    assert hand_count(model_fields(load(name), name)) == DERIVED[name]


def test_gpt2_defaults():
    """GPT-2: n_* keys, n_inner null -> 4h, tied (PretrainedConfig default), biases, learned
    positions, gelu_new, attn_pdrop as the dropout."""
    config = {
        "model_type": "gpt2",
        "n_layer": 12,
        "n_embd": 768,
        "n_head": 12,
        "n_inner": None,
        "vocab_size": 50257,
        "activation_function": "gelu_new",
        "attn_pdrop": 0.1,
    }
    assert model_fields(config, "gpt2.json") == {
        "layers": 12,
        "hidden": 768,
        "heads": 12,
        "vocab": 50257,
        "ffn_hidden": 3072,
        "kv_heads": 12,
        "head_dim": 0,
        "mlp": "gelu",
        "norm": "layernorm",
        "position": "learned",
        "bias": True,
        "dropout": 0.1,
        "attention": "flash",
        "tied_embeddings": True,
        "qk_norm": "none",
        "norm_placement": "pre",
    }


def test_gpt_neox_defaults():
    config = {
        "model_type": "gpt_neox",
        "num_hidden_layers": 44,
        "hidden_size": 6144,
        "num_attention_heads": 64,
        "intermediate_size": 24576,
        "vocab_size": 50432,
        "rotary_pct": 0.25,
        "use_parallel_residual": True,
    }
    fields = model_fields(config, "neox.json")
    assert (
        fields["mlp"],
        fields["norm"],
        fields["position"],
        fields["bias"],
        fields["tied_embeddings"],
        fields["kv_heads"],
    ) == ("gelu", "layernorm", "rope", True, False, 64)


def test_class_defaults_for_missing_optional_keys():
    """Absent keys take the transformers class default: Mistral 8 KV heads, Llama a KV heads,
    Llama silu (-> swiglu) and untied."""
    mistral = {**LLAMA_MIN, "model_type": "mistral", "num_attention_heads": 32, "hidden_size": 4096}
    assert model_fields(mistral, "m.json")["kv_heads"] == 8
    fields = model_fields(LLAMA_MIN, "l.json")
    assert (fields["kv_heads"], fields["mlp"], fields["tied_embeddings"]) == (4, "swiglu", False)


def test_llama_biases_everywhere_map_to_true():
    assert (
        model_fields({**LLAMA_MIN, "attention_bias": True, "mlp_bias": True}, "l.json")["bias"]
        is True
    )


def error(config, source="cfg.json"):
    with pytest.raises(InputError) as e:
        model_fields(config, source)
    return e.value


def test_unknown_model_type_names_key_value_and_rule():
    e = error({**LLAMA_MIN, "model_type": "bert"}, "models/x/config.json")
    assert (e.file, e.key, e.value) == ("models/x/config.json", "model_type", "bert")
    assert str(e) == (
        "models/x/config.json: model_type='bert': must be one of " + ", ".join(FAMILIES)
    )


def test_missing_model_type():
    e = error({k: v for k, v in LLAMA_MIN.items() if k != "model_type"})
    assert e.key == "model_type" and e.value is None and "is required" in e.rule


def test_missing_num_attention_heads():
    e = error({k: v for k, v in LLAMA_MIN.items() if k != "num_attention_heads"})
    assert (e.key, e.value, e.rule) == ("num_attention_heads", None, "is required")
    assert "cfg.json: num_attention_heads=None: is required" == str(e)


@pytest.mark.parametrize("config", [[], "llama", None, 3])
def test_non_dict(config):
    e = error(config)
    assert e.file == "cfg.json" and e.key == "file" and "JSON object" in e.rule


@pytest.mark.parametrize(
    "config",
    [
        {"model_type": "qwen2_moe", "num_experts": 60},
        {"model_type": "deepseek_v2", "n_routed_experts": 160},
        {**LLAMA_MIN, "num_local_experts": 8},
    ],
)
def test_moe_is_refused(config):
    e = error(config)
    assert e.rule == MOE_REFUSED
    assert e.key in ("model_type", "num_local_experts", "num_experts")


@pytest.mark.parametrize(
    "change, key",
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"hidden_size": "4096"}, "hidden_size"),
        ({"num_key_value_heads": 3}, "num_key_value_heads"),
        ({"hidden_act": "relu"}, "hidden_act"),
        ({"attention_bias": True}, "attention_bias"),
        ({"mlp_bias": True}, "mlp_bias"),
        ({"tie_word_embeddings": "no"}, "tie_word_embeddings"),
        ({"attention_dropout": 1.5}, "attention_dropout"),
        ({"rope_theta": -1}, "rope_theta"),
        ({"rope_scaling": 8}, "rope_scaling"),
    ],
)
def test_bad_field_names_its_key(change, key):
    e = error({**LLAMA_MIN, **change})
    assert e.key == key and e.value == change[key]


def test_nemotron_gated_act_refused():
    config = {**LLAMA_MIN, "model_type": "nemotron", "hidden_act": "silu"}
    assert error(config).key == "hidden_act"


@pytest.mark.parametrize("name", sorted(HF_WORKLOADS))
def test_hf_workload_obeys_the_rules(name):
    """Each workload naming an hf_config builds and passes simsp.spec.rules.validate (layers
    into pp x virtual_stages chunks, batch into micro x dp, microbatches into pp, tp into heads)."""
    data = yaml.safe_load((WORKLOADS / f"{name}.yaml").read_text())
    model = dict(data["model"])
    path = model.pop("hf_config")
    fields = model_fields(json.loads((WORKLOADS / path).read_text()), path)
    w = Workload(
        name=data["name"],
        model=ModelSpec(**fields, **model),
        training=TrainingSpec(**data["training"]),
        parallel=ParallelSpec(**data["parallel"]),
    )
    assert validate(w, name) is w
    assert w.parallel.gpus == HF_WORKLOADS[name]
    assert data["name"] == name
    assert w.model.kv_heads % w.parallel.tp == 0


@pytest.mark.parametrize("name", sorted({**PUBLISHED_EXACT, **DERIVED}))
def test_simsp_op_list_count_agrees(name):
    """simsp.model.params.total_params (summed over the op list) gives the same count as by hand."""
    from simsp.model.params import total_params

    spec = ModelSpec(seq_len=4096, **model_fields(load(name), name))
    assert total_params(spec) == {**PUBLISHED_EXACT, **DERIVED}[name]


def test_explicit_null_kv_heads_means_multi_head():
    """num_key_value_heads: null is a: every class maps None to num_attention_heads (only an
    absent key takes Mistral's 8)."""
    mistral = {**LLAMA_MIN, "model_type": "mistral", "num_key_value_heads": None}
    assert model_fields(mistral, "m.json")["kv_heads"] == 4


@pytest.mark.parametrize(
    "patch, key, words",
    [
        ({"hidden_act": ["silu"]}, "hidden_act", "must be one of"),
        ({"num_local_experts": 8.0, "num_experts_per_tok": 2}, "num_local_experts", "integer"),
        ({"num_local_experts": "64"}, "num_local_experts", "integer"),
        ({"num_experts_per_tok": 2}, "num_experts_per_tok", "mixture of experts"),
        ({"rope_theta": float("nan")}, "rope_theta", "finite"),
        ({"rope_theta": float("inf")}, "rope_theta", "finite"),
    ],
)
def test_a_mistyped_dense_config_is_one_input_error(patch, key, words):
    """Issue 32's HF reproducers: a list where a name goes, an expert count as a float or a
    string or only a top-k (a mixture of experts read as dense otherwise), a rope_theta that is
    not finite."""
    import json

    config = json.loads((MODELS / "llama-3.1-8b" / "config.json").read_text())
    config.update(patch)
    with pytest.raises(InputError) as e:
        model_fields(config, "c.json")
    assert e.value.key == key and words in e.value.rule and e.value.file == "c.json"


def test_a_size_past_two_to_the_53_names_the_config():
    """Issue 32: the bound on every count is checked where config.json is read, so the error
    names that file and its key, not the workload the model was merged into."""
    e = error({**LLAMA_MIN, "hidden_size": 10**20})
    assert e.file == "cfg.json" and e.key == "hidden_size" and "2**53" in e.rule
