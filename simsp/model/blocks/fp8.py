"""A layer's ops under FP8 (simsp/spec/precision.py says what Transformer Engine changes and why):
linear layers on FP8 GEMMs with their quantize kernels and FP8 saved inputs, SP's input
all-gathers in FP8, and FlashAttention keeping its own BF16 output."""

import dataclasses

from simsp.model.ops import SP, Collective, Op, stored_bytes
from simsp.spec.parallel import ParallelSpec
from simsp.spec.precision import (
    BYTES_FP8,
    Numerics,
    Recipe,
    cast_bytes,
    saved_fp8_bytes,
    transpose_bytes,
)
from simsp.units import BYTES_16BIT, BYTES_FP32

WEIGHT_SECOND_CAST = BYTES_16BIT + BYTES_FP8
"""Bytes per weight element of the cast a torchao Float8Linear's backward runs for the weight's
second layout (read BF16, write FP8); the rest of its weight casts run in forward."""


def fp8_layer(ops: tuple[Op, ...], numerics: Numerics, parallel: ParallelSpec) -> tuple[Op, ...]:
    """The layer's ops as an FP8 run has them (unchanged under BF16)."""
    if not numerics.fp8:
        return ops
    recipe = numerics.fp8_recipe
    gathered_fp8 = numerics.fp8_param_gather  # the weights arrive in FP8: no cast per call
    out = []
    for i, op in enumerate(ops):
        if op.kind == "gemm" and not op.keeps_precision:
            stored = stored_bytes(op.saves[0], parallel)
            out.append(fp8_linear(op, recipe, stored, cast_weights=not gathered_fp8))
        elif op.kind == "comm" and op.overlaps_wgrad:
            out.append(fp8_entry(op))
        elif op.name == DISPATCH and parallel.moe_fp8_dispatch:
            out.append(fp8_dispatch(op))
        elif op.kind == "flash_attention":
            out.append(flash_output(op, _next_linear(ops, i)))
        else:
            out.append(op)
    if recipe.amax_pass and parallel.sequence_parallel and parallel.tp > 1:
        return tp_amax_reductions(tuple(out))
    return tuple(out)


def tp_amax_reductions(ops: tuple[Op, ...]) -> tuple[Op, ...]:
    """Per-tensor current scaling's amax all-reduces over TP under SP: a column-parallel layer
    casts its sequence-sharded input to FP8 before the all-gather, so the shards first agree on
    one amax (forward, before the entry's gather); a row-parallel layer does the same with its
    sequence-sharded output gradient before the backward gather (after the exit in op order).
    One fp32 value each, blocking (TE 8382eed, pytorch/module/linear.py lines 1437-1461, the
    same in layernorm_linear.py and layernorm_mlp.py: the quantizer's with_amax_reduction over
    the TP group)."""
    out = []
    for op in ops:
        gathers = op.kind == "comm" and op.overlaps_wgrad and op.fwd_comm is not None
        if gathers and op.fwd_comm.op == "all_gather":
            out.append(_amax(f"{op.block} input amax", op.block, forward=True))
        out.append(op)
        scatters = op.kind == "comm" and not op.overlaps_wgrad and op.bwd_comm is not None
        if scatters and op.bwd_comm.op == "all_gather":
            out.append(_amax(f"{op.block} output-gradient amax", op.block, forward=False))
    return tuple(out)


def _amax(name: str, block: str, forward: bool) -> Op:
    amax = Collective("all_reduce", BYTES_FP32, "tp")
    return Op(name, "amax", block, **{"fwd_comm" if forward else "bwd_comm": amax})


def _next_linear(ops: tuple[Op, ...], i: int) -> Op:
    return next(op for op in ops[i + 1 :] if op.kind == "gemm")


def fp8_linear(op: Op, recipe: Recipe, stored_input_bytes: float, cast_weights: bool = True) -> Op:
    """A linear layer under FP8: FP8 GEMMs; its quantize kernels as the op's bytes (forward: its
    input, unless the norm before it wrote it; backward: its output gradient, plus a transpose
    of a fused input that has only its row-wise copy); its saved input in FP8.

    `stored_input_bytes`: the saved input as one rank keeps it (sequence-sharded under SP),
    which is what the forward quantizes. A column-parallel layer (input sharded like `sp`)
    follows a norm. `cast_weights` false: the weight arrives in FP8 (an FP8 all-gather), so a
    torchao layer casts no weight per call."""
    column = op.saves[0].shard == SP
    elements = stored_input_bytes / BYTES_16BIT
    fused = column and recipe.fused_norm
    fwd = 0.0 if fused else cast_bytes(elements, recipe)
    bwd = cast_bytes(op.gemm.m * op.gemm.n * op.gemm.batch, recipe)
    if fused and not recipe.both_layouts:
        bwd += transpose_bytes(elements)
    if recipe.weight_cast_bytes and cast_weights:  # torchao: the weight cast each call, its second
        weights = op.gemm.n * op.gemm.k * op.gemm.batch  # layout (2 + 1) in backward
        fwd += (recipe.weight_cast_bytes - WEIGHT_SECOND_CAST) * weights
        bwd += WEIGHT_SECOND_CAST * weights
    saves = tuple(dataclasses.replace(s, bytes=saved_fp8_bytes(s.bytes, recipe)) for s in op.saves)
    return dataclasses.replace(
        op,
        gemm=dataclasses.replace(op.gemm, dtype="fp8"),
        fwd_bytes=fwd,
        bwd_bytes=bwd,
        saves=saves,
    )


def fp8_entry(op: Op) -> Op:
    """A TP region's entry: under SP its forward all-gather (which the backward re-gather of the
    saved input reuses) carries FP8, half the bytes."""
    if op.fwd_comm is None or op.fwd_comm.op != "all_gather":
        return op
    gather = dataclasses.replace(op.fwd_comm, bytes=op.fwd_comm.bytes * BYTES_FP8 / BYTES_16BIT)
    return dataclasses.replace(op, fwd_comm=gather)


DISPATCH = "dispatch all-to-all"
"""The op that carries a mixture of experts' tokens to their experts (model/blocks/moe.py)."""
DISPATCH_FP8_BYTES = BYTES_FP8 + BYTES_FP32 / 128
"""Bytes an element of a token takes in an FP8 dispatch: E4M3, and an fp32 scale per 1 x 128
tile (DeepSeek-V3, arXiv 2412.19437 §3.3.2)."""


def fp8_dispatch(op: Op) -> Op:
    """The dispatch all-to-all with its forward tokens in FP8 (parallel.moe_fp8_dispatch); its
    backward, the gradients' way back, stays BF16."""
    tokens = dataclasses.replace(
        op.fwd_comm, bytes=op.fwd_comm.bytes * DISPATCH_FP8_BYTES / BYTES_16BIT
    )
    return dataclasses.replace(op, fwd_comm=tokens)


def flash_output(op: Op, projection: Op) -> Op:
    """FlashAttention keeps its BF16 output for its own backward once the projection saves an
    FP8 copy instead (under BF16 they are one tensor, the projection's saved input)."""
    out = dataclasses.replace(projection.saves[0], name="attention output")
    return dataclasses.replace(op, saves=(*op.saves, out))
