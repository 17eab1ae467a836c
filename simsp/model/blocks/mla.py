"""Multi-head latent attention (DeepSeek-V2/V3, arXiv 2412.19437 §2.1.1), as Megatron-Core runs
it (megatron/core/transformer/multi_latent_attention.py, MLASelfAttention @d98e8a64dd):

    norm -> q down (h -> q_lora) and kv down (h -> kv_lora + r), duplicated on every TP rank
         -> the latents gathered along the sequence under SP -> q norm, kv norm
         -> q up (q_lora -> a (d + r)) and kv up (kv_lora -> a (d + v)), split over TP heads
         -> rotary positions on the r-wide parts -> core attention -> projection (a v -> h)

Notation (spec/model.py): d = head_dim (the non-rotary part), r = qk_rope_dim, v = v_head_dim,
a heads; the scores use d + r channels, the values v, so the fused kernel's FLOPs are those of a
head of (d + r + v) / 2 on both products (4 s² ((d + r + v) / 2) = 2 s² (d + r) + 2 s² v).
"""

import dataclasses

from simsp.model.blocks.shared import linear, post_norm, pre_norm, residual, residual_grad, tp_comms
from simsp.model.ops import SP, TP, WHOLE, Attention, Collective, Dims, Gemm, Op, Saved, Weight
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.units import BYTES_16BIT, BYTES_FP32

UP = "mla_up_proj"
"""The recompute module that drops Q, K and V and re-runs the up-projections and rotary
positions (Megatron-Core's output-discarding `mla_up_proj`)."""


def mla_ops(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """The attention block of an MLA layer on one rank for one microbatch."""
    sb, t, x, a, d = dm.s * dm.b, dm.t, dm.x, dm.a, dm.d
    r, v = model.qk_rope_dim, model.v_head_dim or d
    q_lora, kv_lora = model.q_lora_rank, model.kv_lora_rank
    local = sb // dm.seq  # tokens of this rank before the gather (SP)
    latent = (q_lora or 0) + kv_lora + r
    ops = [
        *pre_norm(model, 1, "attention", dm),
        residual_grad("residual 1", "attention", x / dm.seq),
    ]
    if q_lora:
        ops.append(
            _down("q down", local, q_lora, dm, Saved("q down input", x, SP, recompute="layernorm"))
        )
    # the norm's output x is saved once: by the q down-projection, or by q itself without one
    kv_saved = Saved("kv down input", 0.0 if q_lora else x, SP, recompute="layernorm")
    ops.append(_down("kv down", local, kv_lora + r, dm, kv_saved))
    ops.append(_latent_gather(BYTES_16BIT * sb * latent, parallel))
    if q_lora:
        ops.append(_latent_norm(model, "q", q_lora, dm))
    ops.append(_latent_norm(model, "kv", kv_lora, dm))
    q_in = (
        q_lora or dm.h,
        Saved("q up input", BYTES_16BIT * sb * q_lora, WHOLE) if q_lora else None,
    )
    up = [
        linear(
            "q up" if q_lora else "q",
            "attention",
            sb,
            a * (d + r),
            q_in[0],
            False,
            True,
            q_in[1] or Saved("q input", x, SP),
            t,
        ),
        linear(
            "kv up",
            "attention",
            sb,
            a * (d + v),
            kv_lora,
            False,
            True,
            Saved("kv up input", BYTES_16BIT * sb * kv_lora, WHOLE),
            t,
        ),
        _rope(dm, r),
    ]
    ops += [dataclasses.replace(op, recompute=UP) for op in up]  # re-run by mla_up_proj
    ops += [
        _core(model, dm, r, v),
        linear(
            "projection",
            "attention",
            sb,
            dm.h,
            a * v,
            False,
            False,
            Saved("projection input", BYTES_16BIT * sb * a * v, TP),
            t,
        ),
        tp_comms("attention exit", "attention", x, parallel, entry=False),
        *post_norm(model, 1, "attention", dm),
        residual(model, 1, "attention", dm),
    ]
    return tuple(ops)


def _down(name: str, tokens: int, width: int, dm: Dims, saved: Saved) -> Op:
    """A down-projection, duplicated on every TP rank over its own tokens (Megatron-Core builds
    linear_q_down_proj and linear_kv_down_proj with parallel_mode 'duplicated')."""
    return Op(
        name,
        "gemm",
        "attention",
        gemm=Gemm(tokens, width, dm.h),
        saves=(saved,),
        weights=(Weight(name, width * dm.h, WHOLE),),
    )


def _latent_gather(nbytes: float, parallel: ParallelSpec) -> Op:
    """Under SP the latents, not the hidden states, are gathered along the sequence before the
    up-projections (narrower: q_lora + kv_lora + r against h) and their gradient
    reduce-scattered; without SP the duplicated down-projections' input gradients are summed
    over TP."""
    if parallel.tp == 1:
        return Op("latent gather", "comm", "attention")
    if parallel.sequence_parallel:
        fwd = Collective("all_gather", nbytes)
        bwd = Collective("reduce_scatter", nbytes)
    else:
        fwd, bwd = None, Collective("all_reduce", nbytes)
    return Op("latent gather", "comm", "attention", fwd_comm=fwd, bwd_comm=bwd)


def _latent_norm(model: ModelSpec, which: str, width: int, dm: Dims) -> Op:
    """RMSNorm over a latent (q_a_layernorm, kv_a_layernorm): read and write it forward, three
    tensors backward, on every TP rank; saves its input."""
    nbytes = BYTES_16BIT * dm.s * dm.b * width
    return Op(
        f"{which} latent norm",
        model.norm,
        "attention",
        fwd_bytes=2 * nbytes,
        bwd_bytes=3 * nbytes,
        saves=(Saved(f"{which} latent norm input", nbytes, WHOLE),),
        weights=(Weight(f"{which} latent norm", width, WHOLE),),
    )


def _rope(dm: Dims, r: int) -> Op:
    """Rotary positions on the queries' r-wide parts (a heads) and the shared key part: read and
    write them, forward and backward."""
    nbytes = BYTES_16BIT * dm.s * dm.b * r * (dm.a / dm.t + 1)
    return Op("rotary embedding", "rope", "attention", fwd_bytes=2 * nbytes, bwd_bytes=2 * nbytes)


def _core(model: ModelSpec, dm: Dims, r: int, v: int) -> Op:
    """The fused kernel over heads of d + r (scores) and v (values); saves Q, K, V and the
    log-sum-exp (selective recompute drops the LSE, as for other attention)."""
    d = dm.d
    heads = dm.b * dm.a // dm.t
    width = (d + r + v) // 2
    lse = BYTES_FP32 * dm.s * dm.b * dm.a
    return Op(
        "flash attention",
        "flash_attention",
        "attention",
        attention=Attention(heads, dm.s, width, causal=True),
        selective=True,
        saves=(
            Saved("Q, K", 2 * BYTES_16BIT * dm.s * dm.b * dm.a * (d + r), TP, recompute=UP),
            Saved("V", BYTES_16BIT * dm.s * dm.b * dm.a * v, TP, recompute=UP),
            Saved("log-sum-exp", lse, TP, selective=True),
        ),
    )
