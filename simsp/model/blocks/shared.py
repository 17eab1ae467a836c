"""Pieces both blocks of a layer use: the pre-norm, TP linear layers, the TP/SP collectives at a
region's entry and exit, and the exit into the residual stream."""

import dataclasses

from simsp.model.ops import SP, TP, WHOLE, Collective, Dims, Gemm, Op, Saved, Weight
from simsp.spec.model import ModelSpec
from simsp.units import BYTES_MASK


def tp_comms(name, block, act_bytes, parallel, entry: bool) -> Op:
    """The conjugate collectives at a TP region's entry (f / g) or exit (g / ḡ), paper Fig. 4-5."""
    ar, ag, rs = (Collective(o, act_bytes) for o in ("all_reduce", "all_gather", "reduce_scatter"))
    if parallel.tp == 1:
        fwd = bwd = None
    elif parallel.sequence_parallel:
        fwd, bwd = (ag, rs) if entry else (rs, ag)
    else:
        fwd, bwd = (None, ar) if entry else (ar, None)
    return Op(name, "comm", block, fwd_comm=fwd, bwd_comm=bwd, overlaps_wgrad=entry)


def inside(modules: tuple[str, ...], ops, inputs: tuple[str, ...] = ()) -> tuple[Op, ...]:
    """`ops` as parts of the checkpointed submodules `modules` (Megatron-Core's mlp, moe,
    shared_experts): recomputing one re-runs them in backward and drops what they save, except
    the tensors named in `inputs`, the submodule's input, which the checkpoint keeps."""
    return tuple(
        dataclasses.replace(
            op,
            checkpoint=op.checkpoint + modules,
            saves=tuple(
                s if s.name in inputs else dataclasses.replace(s, checkpoint=s.checkpoint + modules)
                for s in op.saves
            ),
        )
        for op in ops
    )


def residual_grad(name: str, block: str, x_rank: float) -> Op:
    """Backward-only: autograd sums the two gradients of a tensor that feeds both a norm and the
    residual branch (read two, write one)."""
    return Op(name, "residual_grad", block, bwd_bytes=3 * x_rank)


def norm(model: ModelSpec, n: int, block: str, dm: Dims, after: bool = False) -> Op:
    """A block's norm, on its input (pre) or, `after`, on its output before the residual add
    (OLMo-2's and Gemma's post-norms): one read and one write forward, three tensors backward;
    saves its input. LayerNorm has a weight and a bias, RMSNorm a weight only; both replicated
    over TP."""
    params = (2 if model.norm == "layernorm" else 1) * dm.h
    name = f"{model.norm}_{n}" + (" post" if after else "")
    return Op(
        name,
        model.norm,
        block,
        fwd_bytes=2 * dm.x / dm.seq,
        bwd_bytes=3 * dm.x / dm.seq,
        saves=(Saved(f"{name} input", dm.x, SP),),
        weights=(Weight(name, params, WHOLE),),
        recompute="" if after else "layernorm",
    )


def pre_norm(model: ModelSpec, n: int, block: str, dm: Dims) -> tuple[Op, ...]:
    """The norm on a block's input, unless the model places its norms after (post)."""
    return () if model.norm_placement == "post" else (norm(model, n, block, dm),)


def post_norm(model: ModelSpec, n: int, block: str, dm: Dims) -> tuple[Op, ...]:
    """The norm on a block's output (post, sandwich), after its TP exit, before the residual."""
    return () if model.norm_placement == "pre" else (norm(model, n, block, dm, after=True),)


def linear(
    name: str,
    block: str,
    m: int,
    n_full: int,
    k_full: int,
    bias: bool,
    column: bool,
    saved: Saved,
    t: int,
) -> Op:
    """A TP linear layer: column-parallel splits its output n, row-parallel its input k (Megatron
    mpu/layers.py). A column layer's bias is split with it; a row layer's is whole and added
    after the reduction (by the residual kernel, not here)."""
    gemm = Gemm(m, n_full // t, k_full) if column else Gemm(m, n_full, k_full // t)
    weights = (Weight(name, n_full * k_full, TP),)
    if bias:
        weights += (Weight(name + " bias", n_full, TP if column else WHOLE),)
    return Op(name, "gemm", block, gemm=gemm, saves=(saved,), weights=weights)


def residual(model: ModelSpec, n: int, block: str, dm: Dims) -> Op:
    """The block's exit into the residual stream. With dropout: Megatron's fused
    bias-dropout-add (read the branch and the residual, write the sum and a 1-byte mask; its
    backward reads the gradient and mask, writes the branch gradient). Without dropout: a plain
    residual add (read two, write one) whose backward only reduces a bias gradient, if any."""
    x = dm.x / dm.seq
    if model.dropout > 0:
        mask = Saved(f"{block} dropout mask", BYTES_MASK * dm.s * dm.b * dm.h, SP)
        return Op(
            f"bias-dropout-add {n}",
            "bias_dropout_add",
            block,
            fwd_bytes=3 * x + x / 2,
            bwd_bytes=3 * x + x / 2,
            saves=(mask,),
        )
    bias = model.linear_bias("projection" if block == "attention" else "mlp")
    return Op(
        f"residual add {n}", "residual_add", block, fwd_bytes=3 * x, bwd_bytes=x if bias else 0.0
    )
