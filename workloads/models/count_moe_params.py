"""Parameter counts of the seven mixture-of-experts configs here, as transformers builds them.

Each config.json is built with transformers on the meta device (no weights, no download) and
every parameter is counted from `named_parameters()` (tied tensors once). Llama-4's file is a
standalone text config, built with Llama4TextConfig / Llama4ForCausalLM.

    total   sum of every parameter transformers builds
    active  total - sum over MoE layers of (E - k) * (params of one routed expert):
            everything one token passes through, with only its top-k routed experts
    routed  every routed-expert parameter (weights, and biases where the model has them)
    shared  every shared-expert parameter (DeepSeek-V3, Llama-4)

Run with the project's venv (torch CPU and transformers 4.57.1):

    python workloads/models/count_moe_params.py > /tmp/counts.md

It prints markdown: the summary table, the layer kinds, and one breakdown table per model by
module (name with its layer and expert indices removed). Takes about a minute on 2 cores; the
DeepSeek-V3 and Qwen3 experts are ModuleLists of tens of thousands of modules.
"""

import json
import re
import sys
import warnings
from collections import defaultdict
from pathlib import Path

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM, Llama4ForCausalLM, Llama4TextConfig

HERE = Path(__file__).resolve().parent
FILES = [
    "mixtral-8x7b/config.json",
    "qwen3-30b-a3b/config.json",
    "qwen3-235b-a22b/config.json",
    "deepseek-v3/config.json",
    "gpt-oss-120b/config.json",
    "llama-4-maverick/config.json",
    "kimi-k2/config.json",
]
LAYER = re.compile(r"^model\.layers\.(\d+)\.")


def build(path: Path):
    """The config transformers reads from the file, and the model it builds on the meta device."""
    raw = json.loads(path.read_text())
    if raw["model_type"] == "llama4_text":
        cfg = Llama4TextConfig(**raw)
        with torch.device("meta"):
            return cfg, Llama4ForCausalLM(cfg)
    if raw["model_type"] == "kimi_k2":  # DeepSeek-V3's architecture (Moonshot's deploy guide)
        raw = {**raw, "model_type": "deepseek_v3"}
    cfg = AutoConfig.for_model(**raw)
    with torch.device("meta"):
        return cfg, AutoModelForCausalLM.from_config(cfg)


def experts_and_topk(cfg) -> tuple[int, int]:
    for key in ("n_routed_experts", "num_experts", "num_local_experts"):
        if getattr(cfg, key, None):
            return getattr(cfg, key), cfg.num_experts_per_tok
    raise ValueError("no expert count in config")


def category(local: str) -> str:
    """What a parameter is, from its name inside the decoder layer (or the whole name outside)."""
    if local == "model.embed_tokens.weight":
        return "embedding"
    if local == "lm_head.weight":
        return "head"
    if local == "model.norm.weight":
        return "final_norm"
    if ".experts." in local:
        return "routed"
    if ".shared_expert" in local:
        return "shared"
    if local.endswith(("mlp.gate.weight", "block_sparse_moe.gate.weight")) or ".router." in local:
        return "router"
    if local.startswith("self_attn."):
        return "attention"
    if local.endswith("layernorm.weight"):
        return "layer_norms"
    if local.startswith(("mlp.", "feed_forward.")):
        return "dense_mlp"
    raise ValueError(local)


def count(path: Path) -> dict:
    cfg, model = build(path)
    n_experts, topk = experts_and_topk(cfg)
    per_layer = defaultdict(lambda: defaultdict(int))  # layer -> category -> params
    modules = defaultdict(lambda: {"params": 0, "layers": set(), "shape": None})
    cats = defaultdict(int)
    sinks = biases = 0
    for name, p in model.named_parameters():
        n = p.numel()
        m = LAYER.match(name)
        local = name[m.end() :] if m else name
        key = re.sub(r"\.experts\.\d+\.", ".experts.N.", local)
        cat = category(local)
        cats[cat] += n
        if m:
            per_layer[int(m.group(1))][cat] += n
        mod = modules[key]
        mod["params"] += n
        mod["shape"] = mod["shape"] or tuple(p.shape)
        if m:
            mod["layers"].add(int(m.group(1)))
        if local.endswith("sinks"):
            sinks += n
        if local.endswith("bias"):
            biases += n
    total = sum(p.numel() for p in model.parameters())
    assert total == sum(cats.values())
    moe_layers = sorted(i for i, c in per_layer.items() if c["routed"])
    inactive = sum((n_experts - topk) * per_layer[i]["routed"] // n_experts for i in moe_layers)
    for i in moe_layers:
        assert per_layer[i]["routed"] % n_experts == 0
    attn_types = getattr(cfg, "layer_types", None) or ["full_attention"] * cfg.num_hidden_layers
    if getattr(cfg, "sliding_window", None) and not getattr(cfg, "layer_types", None):
        attn_types = ["sliding_attention"] * cfg.num_hidden_layers
    kinds = defaultdict(lambda: {"layers": [], "attention": set(), "mlp": set()})
    for i in range(cfg.num_hidden_layers):
        c = per_layer[i]
        mlp_kind = "moe" if c["routed"] else "dense"
        kind = kinds[(attn_types[i], mlp_kind)]
        kind["layers"].append(i)
        kind["attention"].add(c["attention"])
        kind["mlp"].add(c["routed"] + c["shared"] + c["router"] + c["dense_mlp"])
    return {
        "name": path.stem,
        "class": type(model).__name__,
        "total": total,
        "active": total - inactive,
        "experts": n_experts,
        "topk": topk,
        "moe_layers": moe_layers,
        "cats": dict(cats),
        "sinks": sinks,
        "biases": biases,
        "modules": modules,
        "kinds": kinds,
        "per_layer": per_layer,
        "cfg": cfg,
    }


def deepseek_mtp(r: dict) -> int:
    """Parameters of DeepSeek-V3's one MTP module, which transformers does not build: one more
    MoE decoder layer, enorm + hnorm (h each), eh_proj (2h -> h) and shared_head.norm (h). Its
    embedding and output head are the main model's (shared)."""
    h = r["cfg"].hidden_size
    layer = sum(r["per_layer"][r["moe_layers"][0]].values())
    return layer + 3 * h + 2 * h * h


def fmt(n: int) -> str:
    return f"{n:,}"


def layer_list(idx: list[int]) -> str:
    if idx == list(range(idx[0], idx[-1] + 1)):
        return f"{idx[0]}-{idx[-1]}" if len(idx) > 1 else str(idx[0])
    step = idx[1] - idx[0] if len(idx) > 1 else 1
    if idx == list(range(idx[0], idx[-1] + 1, step)):
        return f"{idx[0]},{idx[1]},...,{idx[-1]} (every {step})"
    return ",".join(map(str, idx))


def row(*cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def main() -> None:
    warnings.filterwarnings("ignore")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, meta device\n")
    results = [count(HERE / f) for f in FILES]

    print(
        row(
            "model",
            "total",
            "active",
            "routed experts",
            "shared experts",
            "embedding + head",
            "attention",
            "router",
            "dense MLP",
            "norms",
            "sinks",
            "biases",
            "E / top-k",
            "MoE layers",
        )
    )
    print("|---|" + "---:|" * 11 + "---|---|")
    for r in results:
        c = r["cats"]
        print(
            row(
                r["name"],
                fmt(r["total"]),
                fmt(r["active"]),
                fmt(c.get("routed", 0)),
                fmt(c.get("shared", 0)),
                fmt(c["embedding"] + c.get("head", 0)),
                fmt(c.get("attention", 0)),
                fmt(c.get("router", 0)),
                fmt(c.get("dense_mlp", 0)),
                fmt(c.get("layer_norms", 0) + c["final_norm"]),
                fmt(r["sinks"]),
                fmt(r["biases"]),
                f"{r['experts']} / {r['topk']}",
                f"{len(r['moe_layers'])} of {r['cfg'].num_hidden_layers}",
            )
        )
    print(
        "\nattention includes the attention biases, sinks and the Q/K (or MLA latent) norms; "
        "norms are the two per-layer RMSNorms and the final one. biases: every `*bias` "
        "parameter (attention, router and expert biases).\n"
    )

    print(row("model", "active without input embedding", "embedding", "head"))
    print("|---|---:|---:|---:|")
    for r in results:
        c = r["cats"]
        print(
            row(
                r["name"],
                fmt(r["active"] - c["embedding"]),
                fmt(c["embedding"]),
                fmt(c.get("head", 0)),
            )
        )

    ds = next(r for r in results if r["name"] == "deepseek-v3")
    mtp = deepseek_mtp(ds)
    again = ds["total"] + mtp + ds["cats"]["embedding"] + ds["cats"]["head"]
    print(
        f"\nDeepSeek-V3 multi-token prediction module (not built by transformers; computed from "
        f"the same config as one more MoE layer + 2 norms + eh_proj + shared_head.norm): "
        f"{fmt(mtp)} unique parameters; total with it {fmt(ds['total'] + mtp)}; with its "
        f"embedding and head counted again (as the checkpoint stores them) {fmt(again)}.\n"
    )

    print("## Layer kinds\n")
    print(
        row(
            "model",
            "attention",
            "MLP",
            "layers",
            "count",
            "attention params / layer",
            "MLP block params / layer",
        )
    )
    print("|---|---|---|---|---:|---:|---:|")
    for r in results:
        for (attn, mlp), k in sorted(r["kinds"].items(), key=lambda kv: kv[1]["layers"][0]):
            print(
                row(
                    r["name"],
                    attn,
                    mlp,
                    layer_list(k["layers"]),
                    len(k["layers"]),
                    " / ".join(fmt(x) for x in sorted(k["attention"])),
                    " / ".join(fmt(x) for x in sorted(k["mlp"])),
                )
            )

    for r in results:
        print(f"\n## {r['name']} ({r['class']}), by module\n")
        print(
            row(
                "parameter (in `model.layers.N.` unless outside)",
                "shape (one layer / expert)",
                "layers",
                "params",
                "category",
            )
        )
        print("|---|---|---:|---:|---|")
        for key, mod in r["modules"].items():
            print(
                row(
                    f"`{key}`",
                    "x".join(map(str, mod["shape"])),
                    len(mod["layers"]) or "-",
                    fmt(mod["params"]),
                    category(key.replace(".experts.N.", ".experts.0.")),
                )
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
