"""Activation recomputation: the mode (Megatron's selective and full, torchtitan's per-op), the
modules Megatron-Core recomputes, and the layer counts of partial recompute."""

from simsp.spec.parallel import RECOMPUTE_MODES, RECOMPUTE_MODULES
from simsp.spec.workload import Workload


def mode_rules(w: Workload):
    """(key, value, holds, rule) for the recompute mode."""
    m, p = w.model, w.parallel
    yield (
        "parallel.recompute",
        p.recompute,
        p.recompute in RECOMPUTE_MODES,
        f"must be one of {', '.join(RECOMPUTE_MODES)}",
    )
    yield (
        "parallel.recompute",
        p.recompute,
        p.recompute != "op" or not (m.experts or m.mla),
        "op (torchtitan's per-op checkpointing) is modelled for dense layers without latent "
        "attention only",
    )


def rules(w: Workload):
    """(key, value, holds, rule) for what is recomputed: modules, layer counts, per stage."""
    p = w.parallel
    modules = [m.strip() for m in p.recompute_modules.split(",")]
    yield (
        "parallel.recompute_modules",
        p.recompute_modules,
        all(m in RECOMPUTE_MODULES for m in modules),
        f"must list modules of {', '.join(RECOMPUTE_MODULES)}, comma-separated",
    )
    yield (
        "parallel.recompute_modules",
        p.recompute_modules,
        p.recompute_modules == "core_attn" or p.recompute == "selective",
        "needs recompute: selective (Megatron-Core's --recompute-modules)",
    )
    yield (
        "parallel.recompute_num_layers",
        p.recompute_num_layers,
        p.recompute_num_layers == 0 or p.recompute == "full",
        "needs recompute: full (Megatron's --recompute-method block)",
    )
    if p.recompute_per_stage:
        yield from _per_stage_rules(w)


def _per_stage_rules(w: Workload):
    """(key, value, holds, rule) for recompute_per_stage: pp counts within a chunk's layers."""
    p, key = w.parallel, "parallel.recompute_per_stage"
    items = p.recompute_per_stage.split(",")
    ints = all(x.strip().isdecimal() and x.strip().isascii() for x in items)
    yield key, p.recompute_per_stage, p.recompute == "full", "needs recompute: full"
    yield (
        key,
        p.recompute_per_stage,
        ints and len(items) == p.pp,
        f"must list pp ({p.pp}) whole numbers, comma-separated",
    )
    yield (
        key,
        p.recompute_per_stage,
        max(int(x) for x in items) <= w.layers_per_chunk,
        f"each must be at most the layers of a chunk ({w.layers_per_chunk})",
    )
