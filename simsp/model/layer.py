"""One transformer layer as data: an ordered list of ops per tensor-parallel rank.

Each op carries its FLOPs, the bytes it moves, its GEMM shape and weights, the tensors it saves
for backward (with how tensor and sequence parallelism shard them), whether selective recompute
re-runs it, and the TP/SP collectives around it. Memory (sim/memory.py), time (cost/), parameter
counts and FLOPs (params.py, flops.py) are all derived from this list, so the paper's Table 2 is a
consequence, not an input.

A layer is its attention block then its MLP block, each composed from the model's choices
(`ModelSpec`): norm, QKV with grouped-query heads, rotary positions, unfused or flash core
attention, gated or plain MLP, biases and dropout. With the paper's GPT choices the list is the
one of Megatron-LM as of the paper (fused scale-mask-softmax, bias-GeLU, bias-dropout-add).
Notation: see spec/model.py. Where things live: `ops.py` the data (Op, Gemm, Attention, Saved,
Weight, Dims), `blocks/shared.py` the pieces both blocks use (norm, TP linear, collectives,
residual), `blocks/attention.py` and `blocks/mlp.py` the two blocks, `blocks/ends.py` the
embedding and output layer. A new layer kind is a new block function and one line in `build_layer`.
"""

import dataclasses

from simsp.model.blocks import checkpoint
from simsp.model.blocks.attention import attention_ops
from simsp.model.blocks.elementwise import elementwise_layer
from simsp.model.blocks.ends import (
    embedding_saves,
    embedding_weights,
    layer_input,
    output_saves,
    output_weights,
)
from simsp.model.blocks.fp8 import fp8_layer
from simsp.model.blocks.mla import mla_ops
from simsp.model.blocks.mlp import ACTIVATIONS, mlp_ops
from simsp.model.blocks.moe import moe_ops
from simsp.model.ops import (
    EXPERTS,
    SHARDS,
    SP,
    TP,
    WHOLE,
    Attention,
    Collective,
    Dims,
    Gemm,
    Op,
    Saved,
    Weight,
    dropped,
    reruns,
    stored_bytes,
    stored_params,
)
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.precision import BF16, Numerics

__all__ = [
    "ACTIVATIONS",
    "EXPERTS",
    "SHARDS",
    "SP",
    "TP",
    "WHOLE",
    "Attention",
    "Collective",
    "Dims",
    "Gemm",
    "Op",
    "Saved",
    "Weight",
    "attention_ops",
    "build_layer",
    "dropped",
    "embedding_saves",
    "embedding_weights",
    "layer_input",
    "mlp_ops",
    "output_saves",
    "output_weights",
    "reruns",
    "stored_bytes",
    "stored_params",
]


def build_layer(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics = BF16
) -> tuple[Op, ...]:
    """The ops of one layer on one rank for one microbatch: the attention block (multi-head
    latent attention's where the model has it), then the MLP block (a mixture of experts' where
    the layer kind has experts: model/stack.py), in the run's precision."""
    dm = Dims.of(model, parallel, micro_batch)
    attention = mla_ops if model.mla else attention_ops
    mlp = moe_ops if model.experts else mlp_ops
    ops = (*attention(model, parallel, dm), *mlp(model, parallel, dm))
    ops = elementwise_layer(_attention_kernel(ops, numerics.attention_kernel), numerics.elementwise)
    if parallel.recompute == "op":
        ops = checkpoint.tagged(ops, model, dm)
    return fp8_layer(ops, numerics, parallel)


def _attention_kernel(ops: tuple[Op, ...], kernel: str) -> tuple[Op, ...]:
    """The fused-attention ops, told which kernel the run's framework uses (none: the
    hardware's)."""
    if not kernel:
        return ops
    return tuple(
        dataclasses.replace(op, attention=dataclasses.replace(op.attention, kernel=kernel))
        if op.attention
        else op
        for op in ops
    )
