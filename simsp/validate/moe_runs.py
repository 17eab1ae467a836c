"""The mixture-of-experts runs: `data/sources/moe-runs/runs.yaml` (57 measured runs, read as
shipped; its README says how each source counts) and the 13 MoE rows of
`data/published_runs.csv`, as rows of the published runs' flat form (section.key), for
published.py to turn into the cases of the set `moe`.

What the flat form lacks for experts comes from the row where runs.yaml states it, else from the
model's architecture (MOE_ARCH, each from the config class the row's `arch_source` names).
"""

from pathlib import Path

from simsp.validate.published_runs import COLUMNS, cell

SET = "moe"
RUNS = Path("sources") / "moe-runs" / "runs.yaml"

MOE_COLUMNS = (
    "model.moe_ffn",
    "model.head_dim",
    "model.shared_experts",
    "model.shared_expert_ffn",
    "model.dense_layers",
    "model.qk_layernorm",
    "model.layers_full_model",
    "model.mtp_layers",
    "model.q_lora_rank",
    "model.kv_lora_rank",
    "model.qk_rope_dim",
    "model.v_head_dim",
    "parallel.etp",
    "moe.routing",
    "moe.dispatcher",
    "moe.a2a_overlap",
    "moe.grouped_gemm",
)
"""runs.yaml keys beyond published_runs.COLUMNS that a mixture of experts needs."""

MOE_ARCH = {
    # model name -> settings the published_runs.csv rows do not carry
    # Mixtral: mistralai/Mixtral-8x7B-v0.1 and 8x22B config.json (the csv's ffn is the expert's)
    "mixtral-8x7b": {"moe_ffn": 14336, "head_dim": 128},
    "mixtral-8x22b": {"moe_ffn": 16384, "head_dim": 128},
    # NeMo qwen3.py @8cfedd7203 Qwen3Config30B_A3B / 235B_A22B: moe_ffn_hidden_size, kv_channels,
    # qk_layernorm (runs.yaml's rows of the same models state the same)
    "qwen3-30b-a3b": {"moe_ffn": 768, "head_dim": 128, "qk_layernorm": True},
    "qwen3-235b-a22b": {"moe_ffn": 1536, "head_dim": 128, "qk_layernorm": True},
    # NeMo gpt_oss.py @8cfedd7203 GPTOSSConfig120B
    "gpt-oss-120b": {"moe_ffn": 2880, "head_dim": 64},
    # NeMo deepseek.py @8cfedd7203 DeepSeekV3Config (the csv row: the same as runs.yaml's rows)
    "deepseek-v3": {
        "moe_ffn": 2048,
        "shared_experts": 1,
        "shared_expert_ffn": 2048,
        "dense_layers": 3,
        "head_dim": 128,
        "q_lora_rank": 1536,
        "kv_lora_rank": 512,
        "qk_rope_dim": 64,
        "v_head_dim": 128,
        "mtp_layers": 1,
    },
}


MLA_KEYS = {
    "q_lora_rank": "q_lora_rank",
    "kv_lora_rank": "kv_lora_rank",
    "qk_rope_dim": "qk_rope_head_dim",
    "v_head_dim": "v_head_dim",
}
"""ModelSpec's MLA keys and runs.yaml's (its `mla:` mapping)."""


def _flat(run: dict) -> dict:
    """One runs.yaml entry in published_runs.csv's flat form, with the MOE_COLUMNS."""
    from simsp.validate.published_runs import flat_run as flat

    row = flat(run)
    mla = run["model"].get("mla") or {}
    for col in MOE_COLUMNS:
        section, _, key = col.partition(".")
        row[col] = cell((run.get(section) or {}).get(key, mla.get(MLA_KEYS.get(key, ""))))
    if mla:
        row["model.head_dim"] = cell(mla["qk_nope_head_dim"])
    row["hardware.nvlink_domain"] = cell(run["hardware"].get("nvlink_domain"))
    return row


def read_moe_runs(data_dir=None) -> list[dict]:
    """runs.yaml's entries as flat rows, in file order."""
    from simsp.io.config import parse_yaml, read_text
    from simsp.validate.data import DATA_DIR

    runs = parse_yaml(read_text(Path(data_dir or DATA_DIR) / RUNS))
    return [_flat(run) for run in runs]


def with_architecture(row: dict) -> dict:
    """A published_runs.csv MoE row with the MOE_COLUMNS it lacks, from MOE_ARCH."""
    arch = MOE_ARCH.get(row["model.name"], {})
    out = dict(row)
    for col in MOE_COLUMNS:
        key = col.partition(".")[2]
        if not out.get(col) and key in arch:
            out[col] = cell(arch[key])
    return out


__all__ = ["COLUMNS", "MOE_ARCH", "MOE_COLUMNS", "SET", "read_moe_runs", "with_architecture"]
