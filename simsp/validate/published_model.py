"""A published run's model from its row of the runs files (published_runs.py, moe_runs.py,
torch_native.py): the architecture decides the MLP, norm, position and biases (NeMo, MPT and
Megatron-Bridge configs, each cited), a mixture of experts adds its experts, MLA and MTP."""

from simsp.spec.model import GATED_MLPS, ModelSpec
from simsp.spec.pipeline_layout import parse as parse_layout
from simsp.validate.moe_recipes import LAYOUTS


def cell_int(value: str, default: int = 0) -> int:
    """A cell as an integer ("" or None: `default`; "4.0": 4)."""
    return int(float(value)) if value not in ("", None) else default


def row_model(row: dict) -> ModelSpec:
    """The row's model: arch decides MLP, norm, position and biases (NeMo / MPT configs); a
    mixture of experts adds its experts (_experts)."""
    arch = row["model.arch"].split()[0]
    kinds = {
        # mixtral.py, qwen3.py (qwen3-moe), gpt_oss.py in NeMo @8cfedd7203 and dgxc-benchmarking
        # grok1/cfg/grok1_314b.yaml @741c886 (fast-geglu, RMSNorm, RoPE, no bias)
        "mixtral": ("swiglu", "rmsnorm", "rope", False),
        "qwen3-moe": ("swiglu", "rmsnorm", "rope", False),
        "grok-1": ("geglu", "rmsnorm", "rope", False),
        "gpt-oss": ("swiglu", "rmsnorm", "rope", True),  # q, k, v, o, router and expert biases
        # NeMo deepseek.py @8cfedd7203 DeepSeekV3Config; Kimi-K2 the same layout
        "deepseek-v3": ("swiglu", "rmsnorm", "rope", False),
        "kimi-k2": ("swiglu", "rmsnorm", "rope", False),
        "gpt": ("gelu", "layernorm", "learned", True),  # NeMo GPTConfig: add_bias_linear
        "llama": ("swiglu", "rmsnorm", "rope", False),
        "nemotron": ("squared_relu", "layernorm", "rope", False),  # nemotron.py add_bias_linear
        # llm-foundry's benchmark yamls leave configuration_mpt.py's defaults (b2a43a147):
        # learned_pos_emb True, attn_config alibi False, no_bias False
        "mpt": ("gelu", "layernorm", "learned", True),
    }
    mlp, norm, position, bias = kinds[arch]
    if row["model.glu"] == "true" and mlp not in GATED_MLPS:  # Grok-1's gate is GeLU
        mlp = "swiglu"
    return ModelSpec(
        layers=cell_int(row["model.layers"]),
        hidden=cell_int(row["model.hidden"]),
        heads=cell_int(row["model.heads"]),
        seq_len=cell_int(row["model.seq"]),
        vocab=cell_int(row["model.vocab"]),
        ffn_hidden=cell_int(row["model.ffn"]),
        kv_heads=0 if "MLA" in row["model.kv_heads"] else cell_int(row["model.kv_heads"]),
        mlp=mlp,
        norm=norm,
        position=position,
        bias=bias,
        dropout=0.0,  # NeMo GPT/Llama/Nemotron configs and MPT yamls: dropout 0
        attention="flash",
        tied_embeddings=row["model.tied_embeddings"] == "true",
        **_experts(row, arch),
    )


def _experts(row: dict, arch: str) -> dict:
    """A mixture of experts' settings (none for a dense row): experts, top-k, the expert's inner
    size, shared experts, dense first layers; Qwen3's QK-norm and gpt-oss's alternating
    128-token window (NeMo gpt_oss.py: window_size (128, 0), every other layer)."""
    if not row["model.experts"]:
        return {}
    out = {
        "experts": cell_int(row["model.experts"]),
        "router_topk": cell_int(row["model.topk"]),
        "moe_ffn": cell_int(row.get("model.moe_ffn")),
        "shared_expert_ffn": cell_int(row.get("model.shared_expert_ffn"))
        * max(1, cell_int(row.get("model.shared_experts"))),
        "dense_layers": cell_int(row.get("model.dense_layers")),
        "head_dim": cell_int(row.get("model.head_dim")),
    }
    if row.get("model.qk_layernorm") == "true":
        out["qk_norm"] = "head"
    if row.get("model.kv_lora_rank"):  # multi-head latent attention, sigmoid router
        out.update(
            q_lora_rank=cell_int(row["model.q_lora_rank"]),
            kv_lora_rank=cell_int(row["model.kv_lora_rank"]),
            qk_rope_dim=cell_int(row["model.qk_rope_dim"]),
            v_head_dim=cell_int(row["model.v_head_dim"]),
            mtp_layers=_mtp(row),
            router_score="sigmoid",
        )
    if arch == "gpt-oss":
        out.update(sliding_window=128, global_every=2, attention_sinks=True)
    return out


def _mtp(row: dict) -> int:
    """The row's multi-token-prediction depth; where the table is silent, the m's of the
    layout its release's code ran (Megatron-Bridge's DeepSeek-V3 recipes: mtp_num_layers 1)."""
    if row.get("model.mtp_layers"):
        return cell_int(row["model.mtp_layers"])
    return sum(s.mtp for s in parse_layout(LAYOUTS[row["id"]][0])) if row["id"] in LAYOUTS else 0
