"""The attention block: norm, QKV with grouped-query heads, rotary positions, unfused or flash
core attention, output projection, residual."""

import dataclasses

from simsp.model.blocks.shared import linear, post_norm, pre_norm, residual, residual_grad, tp_comms
from simsp.model.ops import SP, TP, WHOLE, Attention, Collective, Dims, Gemm, Op, Saved, Weight
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.units import BYTES_16BIT, BYTES_FP32, BYTES_MASK


def _core_unfused(model: ModelSpec, dm: Dims) -> tuple[Op, ...]:
    """Megatron's unfused core attention: QKᵀ, fused scale-mask-softmax, dropout, attention over
    V, permute back to [s, b, h]. Saves the s x s softmax output (and dropout mask and output).
    With g < a, Megatron-Core repeats K and V to a heads first (`repeat_interleave`, attention.py),
    so what the batched GEMMs save is a heads wide."""
    s, b, a, d, t = dm.s, dm.b, dm.a, dm.d, dm.t
    as2b = a * s * s * b
    dropout = model.dropout > 0
    ops = []
    if dm.g < a:
        kv, wide = 2 * dm.heads_bytes(dm.g), 2 * dm.heads_bytes(a)
        ops.append(
            Op(
                "repeat K, V",
                "copy",
                "attention",
                fwd_bytes=(kv + wide) / t,
                bwd_bytes=(kv + wide) / t,
                selective=True,
            )
        )
    ops += [
        Op(
            "qk^T",
            "attention_gemm",
            "attention",
            gemm=Gemm(s, s, d, b * a // t),
            selective=True,
            saves=(Saved("Q, K", 2 * dm.heads_bytes(a), TP),),
        ),
        Op(
            "softmax",
            "softmax",
            "attention",
            fwd_bytes=2 * BYTES_16BIT * as2b / t,
            bwd_bytes=3 * BYTES_16BIT * as2b / t,
            selective=True,
            saves=(Saved("softmax output", BYTES_16BIT * as2b, TP, selective=True),),
        ),
    ]
    if dropout:
        ops.append(
            Op(
                "attention dropout",
                "dropout",
                "attention",
                fwd_bytes=(2 * BYTES_16BIT + BYTES_MASK) * as2b / t,
                bwd_bytes=(2 * BYTES_16BIT + BYTES_MASK) * as2b / t,
                selective=True,
                saves=(Saved("softmax dropout mask", BYTES_MASK * as2b, TP, selective=True),),
            )
        )
    # attention over V saves its probabilities: the dropout output, or (no dropout) the softmax
    # output already counted above.
    probs = (Saved("dropout output", BYTES_16BIT * as2b, TP, selective=True),) if dropout else ()
    ops += [
        Op(
            "attention over V",
            "attention_gemm",
            "attention",
            gemm=Gemm(s, d, s, b * a // t),
            selective=True,
            saves=probs + (Saved("V", dm.heads_bytes(a), TP),),
        ),
        Op(
            "context permute",
            "copy",
            "attention",
            fwd_bytes=2 * dm.heads_bytes(a) / t,
            bwd_bytes=2 * dm.heads_bytes(a) / t,
            selective=True,
        ),
    ]
    return tuple(ops)


def _core_flash(model: ModelSpec, dm: Dims) -> tuple[Op, ...]:
    """FlashAttention (Dao et al. 2022, §3.1; FA2 arXiv 2307.08691): no s x s tensor exists;
    backward recomputes the scores from Q, K, V and the saved log-sum-exp (fp32, one per query
    row and head). Saved: Q, K, V (g heads wide: GQA is native) and the LSE; its output is saved
    by the projection that consumes it. Megatron-Core's selective recompute checkpoints core
    attention whatever its kernel, keeping Q, K, V and re-running the forward, so only the LSE is
    dropped."""
    att = Attention(
        dm.b * dm.a // dm.t, dm.s, dm.d, causal=True, window=model.window, chunk=model.chunk
    )
    if dm.c > 1:
        att = _context_parallel(att, dm)
    lse = BYTES_FP32 * dm.s * dm.b * dm.a
    sinks = (Weight("attention sinks", dm.a, TP),) if model.attention_sinks else ()
    return (
        Op(
            "flash attention",
            "flash_attention",
            "attention",
            attention=att,
            weights=sinks,
            selective=True,
            saves=(
                Saved("Q", dm.heads_bytes(dm.a), TP),
                Saved("K, V", 2 * dm.heads_bytes(dm.g), TP),
                Saved("log-sum-exp", lse, TP, selective=True),
            ),
        ),
    )


def _context_parallel(att: Attention, dm: Dims) -> Attention:
    """A context-parallel rank's core attention over a ring (cp_comm_type p2p; Transformer Engine
    AttnFuncWithCPAndKVP2P, Liu et al. arXiv 2310.01889 with causal load balancing): the
    sequence is cut into 2c chunks and rank r holds chunks r and 2c - 1 - r, so every rank does
    1/c of the causal work. Its s/c queries meet all s keys over c ring steps, each receiving
    the next rank's K and V (g heads on this TP rank) while attending to the ones it has."""
    kv = 2 * dm.heads_bytes(dm.g) / dm.t
    ring = Collective("send_recv", kv, "cp")
    return Attention(
        att.batch_heads, dm.s, dm.d, True, kv_len=dm.s * dm.c, ring=ring, ring_steps=dm.c
    )


def _all_to_all(name: str, nbytes: float) -> Op:
    """DeepSpeed-Ulysses's exchange (Jacobs et al. arXiv 2309.14509; Megatron-Core cp_comm_type
    a2a): an all-to-all over the context-parallel group that turns a sequence split into a head
    split (or back); its backward is the same all-to-all of the gradients."""
    a2a = Collective("all_to_all", nbytes, "cp")
    # Inside Transformer Engine's attention: selective recompute re-runs it with the kernel.
    return Op(name, "comm", "attention", fwd_comm=a2a, bwd_comm=a2a, selective=True)


def _qk_norm(model: ModelSpec, dm: Dims) -> Op:
    """The norm on queries and keys (Qwen3, Gemma-3: per head, one weight of d; OLMo-2: over the
    whole projections, a weight per channel, split with the heads by TP): read and write Q and K
    forward, three tensors backward; saves its input."""
    qk = (dm.heads_bytes(dm.a) + dm.heads_bytes(dm.g)) / dm.t
    full = model.qk_norm == "full"
    weights = (
        Weight("q norm", dm.a * dm.d if full else dm.d, TP if full else WHOLE),
        Weight("k norm", dm.g * dm.d if full else dm.d, TP if full else WHOLE),
    )
    return Op(
        "qk norm",
        model.norm,
        "attention",
        fwd_bytes=2 * qk,
        bwd_bytes=3 * qk,
        saves=(Saved("qk norm input", dm.heads_bytes(dm.a) + dm.heads_bytes(dm.g), TP),),
        weights=weights,
    )


def _rope(dm: Dims) -> Op:
    """Rotary embedding applied to Q and K (Megatron-Core's fused RoPE): read and write both
    forward and backward; it saves nothing but the (tiny) angles."""
    qk = (dm.heads_bytes(dm.a) + dm.heads_bytes(dm.g)) / dm.t
    return Op("rotary embedding", "rope", "attention", fwd_bytes=2 * qk, bwd_bytes=2 * qk)


def _after_norm(model: ModelSpec) -> str:
    """The recompute module that drops a block's first linear input: the pre-norm's output,
    rebuilt by re-running the norm (Megatron-Core recompute module `layernorm`); none where the
    model has no pre-norm."""
    return "" if model.norm_placement == "post" else "layernorm"


def _core(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """Core attention, under context parallelism over its ring or between its all-to-alls."""
    if model.attention != "flash":
        return _core_unfused(model, dm)
    if dm.c == 1 or parallel.cp_comm_type != "a2a":
        return _core_flash(model, dm)
    # Ulysses: Q, K, V go from s/c tokens x a/t heads to s tokens x a/(t c) heads (the same bytes
    # per rank); the attention then sees the whole sequence for its heads; the output goes back.
    heads = dataclasses.replace(dm, s=dm.s * dm.c, a=dm.a // dm.c, g=dm.g // dm.c, c=1)
    flash = _core_flash(model, heads)[0]
    qkv = (dm.heads_bytes(dm.a) + 2 * dm.heads_bytes(dm.g)) / dm.t
    return (
        _all_to_all("cp all-to-all (q, k, v)", qkv),
        flash,
        _all_to_all("cp all-to-all (output)", dm.heads_bytes(dm.a) / dm.t),
    )


def attention_ops(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """Norm, QKV projection (a query and 2g key/value heads of size d, Megatron-Core's
    `query_projection_size + 2 * kv_projection_size`), positions, core attention, output
    projection, residual (paper §4.1 Fig. 2, with GQA per arXiv 2305.13245)."""
    sb, t, x = dm.s * dm.b, dm.t, dm.x
    qkv_out = dm.heads_bytes(dm.a + 2 * dm.g)
    ops = [
        *pre_norm(model, 1, "attention", dm),
        residual_grad("residual 1", "attention", x / dm.seq),
        tp_comms("attention entry", "attention", x, parallel, entry=True),
        linear(
            "qkv",
            "attention",
            sb,
            (dm.a + 2 * dm.g) * dm.d,
            dm.h,
            model.linear_bias("qkv"),
            True,
            Saved("qkv input", x, SP, recompute=_after_norm(model)),
            t,
        ),
    ]
    if model.linear_bias("qkv"):
        # Megatron's column-parallel linear adds its bias in a separate kernel (mpu/layers.py,
        # `output = output + bias`); backward reduces the output gradient for the bias gradient.
        ops.append(
            Op("qkv bias", "bias", "attention", fwd_bytes=2 * qkv_out / t, bwd_bytes=qkv_out / t)
        )
    if model.qk_norm != "none":
        ops.append(_qk_norm(model, dm))
    if model.position == "rope":
        ops.append(_rope(dm))
    ops += _core(model, parallel, dm)
    ops += [
        linear(
            "projection",
            "attention",
            sb,
            dm.h,
            dm.a * dm.d,
            model.linear_bias("projection"),
            False,
            Saved("projection input", dm.heads_bytes(dm.a), TP),
            t,
        ),
        tp_comms("attention exit", "attention", x, parallel, entry=False),
        *post_norm(model, 1, "attention", dm),
        residual(model, 1, "attention", dm),
    ]
    return tuple(ops)
