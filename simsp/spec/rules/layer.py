"""A layer's shape: heads and key/value groups, dropout, sliding windows and chunked
attention, multi-head latent attention."""

from simsp.spec.workload import Workload


def head_rules(w: Workload):
    """(key, value, holds, rule) for the heads and the dropout rate."""
    m = w.model
    yield (
        "model.kv_heads",
        m.kv_heads,
        m.heads % m.groups == 0,
        f"must divide model.heads ({m.heads})",
    )
    yield "model.dropout", m.dropout, 0 <= m.dropout < 1, "must be a rate in [0, 1)"


def window_rules(w: Workload):
    """(key, value, holds, rule) for a sliding window and its pattern of local layers."""
    m, p = w.model, w.parallel
    yield (
        "model.global_every",
        m.global_every,
        not m.global_every or m.sliding_window > 0 or m.attention_chunk > 0,
        "needs model.sliding_window or attention_chunk: it says which layers are global",
    )
    if m.chunk:
        yield (
            "model.attention_chunk",
            m.attention_chunk,
            not m.window and m.attention == "flash" and p.cp == 1 and not m.mla,
            "needs model.attention flash, cp 1, no sliding_window and no MLA",
        )
    if not m.window:
        return
    yield (
        "model.sliding_window",
        m.sliding_window,
        m.attention == "flash",
        "needs model.attention: flash (the unfused kernels hold the whole s x s square)",
    )
    yield (
        "model.sliding_window",
        m.sliding_window,
        p.cp == 1,
        f"is not modelled under context parallelism (cp {p.cp}): use cp 1 or no window",
    )


def mla_rules(w: Workload):
    """(key, value, holds, rule) for multi-head latent attention."""
    m, p = w.model, w.parallel
    if not m.mla:
        for key in ("q_lora_rank", "qk_rope_dim", "v_head_dim"):
            yield (
                f"model.{key}",
                getattr(m, key),
                getattr(m, key) == 0,
                "needs model.kv_lora_rank (multi-head latent attention)",
            )
        return
    yield "model.attention", m.attention, m.attention == "flash", "must be flash with MLA"
    yield "parallel.cp", p.cp, p.cp == 1, "is not modelled with MLA yet (use cp 1)"
    yield "model.qk_norm", m.qk_norm, m.qk_norm == "none", "must be none with MLA"
    yield "model.sliding_window", m.sliding_window, not m.window, "is not modelled with MLA"
    yield (
        "model.qk_rope_dim",
        m.qk_rope_dim,
        (m.head_size + m.qk_rope_dim + (m.v_head_dim or m.head_size)) % 2 == 0,
        "head_dim + qk_rope_dim + v_head_dim must be even (the fused kernel's mean head)",
    )
