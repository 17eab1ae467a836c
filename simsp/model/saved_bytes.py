"""What a layer, a pipeline chunk and the end stages keep for backward, per microbatch and GPU:
the tensors the op list saves (model/layer.py) under the run's recompute mode, so the paper's
Table 2 rows follow from the op list, and the embedding and output layer's (paper §4.3). The
memory model (sim/memory.py) multiplies them by what a schedule holds in flight; the plan
(sim/plan.py) reads the deferred weight-gradient operands and a stage's output from here too.
"""

import dataclasses
from functools import lru_cache

from simsp.model import layer as L
from simsp.model import stack
from simsp.model.blocks import checkpoint
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.precision import BF16, Numerics
from simsp.spec.workload import Workload
from simsp.units import BYTES_16BIT

_CACHE_SIZE = 4096


def saved_tensors(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics = BF16
) -> tuple[L.Saved, ...]:
    """The tensors one layer keeps for backward under the run's recompute mode (paper §5)."""
    if parallel.recompute == "full":
        return (L.layer_input(model, micro_batch, parallel.cp),)
    if parallel.recompute == "op":
        return checkpoint.kept(model, L.Dims.of(model, parallel, micro_batch))
    saves = (s for op in L.build_layer(model, parallel, micro_batch, numerics) for s in op.saves)
    return tuple(s for s in saves if not L.dropped(s, parallel))


def activation_per_layer_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics = BF16
) -> float:
    """One layer, one microbatch, one GPU: the rows of the paper's Table 2, from the op list."""
    return _per_layer_bytes(model, parallel.for_layer(), micro_batch, numerics)


@lru_cache(maxsize=_CACHE_SIZE)
def _per_layer_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics
) -> float:
    saved = saved_tensors(model, parallel, micro_batch, numerics)
    return sum(L.stored_bytes(s, parallel) for s in saved)


def chunk_activation_bytes(
    w: Workload, stage: int = 0, layers: int | None = None, vs: int | None = None
) -> float:
    """One of a stage's chunks of `layers` layers (a middle chunk's by default), one microbatch:
    with recompute full on only its first N layers (recompute_num_layers, recompute_per_stage),
    those keep their inputs, the rest all they save. Where the model's layers differ (model/
    stack.py) and the virtual stage `vs` is given, each layer of its slice of the stack saves
    what its own kind saves."""
    par, b, num = w.parallel, w.training.micro_batch, w.training.numerics
    n = w.layers_per_chunk if layers is None else layers
    full = par.recomputed_layers(n, stage)
    if vs is not None and not stack.uniform(w.model):
        start = sum(w.chunk_layers[:vs])
        # with recompute full on the first `full` layers only, the rest keep what they save
        rest = dataclasses.replace(par, recompute="none") if par.recompute == "full" else par
        return sum(
            activation_per_layer_bytes(kind, par if i < full else rest, b, num)
            for i, kind in enumerate(stack.kinds(w.model)[start : start + n])
        )
    if par.recompute != "full" or full == n:
        return n * activation_per_layer_bytes(w.model, par, b, num)
    rest = dataclasses.replace(par, recompute="none")
    return full * activation_per_layer_bytes(w.model, par, b, num) + (
        n - full
    ) * activation_per_layer_bytes(w.model, rest, b, num)


def weight_grad_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics = BF16
) -> float:
    """What one layer keeps from its I pass to its deferred W pass, one GPU: each linear layer's
    saved input and its output gradient, the two operands of dW = dYᵀ X (Qi et al. 2024, §2).
    Both are counted as they are stored: under SP sequence-sharded (the column layers' inputs
    and the row layers' [s, b, h] output gradients), to be gathered again for the W pass; that
    re-gather's time is not modelled."""
    return _weight_grad_bytes(model, parallel.for_layer(), micro_batch, numerics)


@lru_cache(maxsize=_CACHE_SIZE)
def _weight_grad_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, numerics: Numerics
) -> float:
    total = 0.0
    for op in L.build_layer(model, parallel, micro_batch, numerics):
        if op.kind == "gemm":
            total += sum(L.stored_bytes(s, parallel) for s in op.saves)
            row = bool(op.saves) and op.saves[0].shard == L.TP  # a row layer's input: TP-split
            split = parallel.tp if row and parallel.sequence_parallel else 1
            total += BYTES_16BIT * op.gemm.m * op.gemm.n / split
    return total


def end_stage_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, cross_entropy: str
) -> tuple[float, float]:
    """(first stage's embedding, last stage's output layer) activation bytes per microbatch
    (§4.3), the loss kept as training.cross_entropy keeps it."""
    return _end_stage_bytes(model, parallel.for_layer(), micro_batch, cross_entropy)


@lru_cache(maxsize=_CACHE_SIZE)
def _end_stage_bytes(
    model: ModelSpec, parallel: ParallelSpec, micro_batch: int, cross_entropy: str
) -> tuple[float, float]:
    emb, out = (
        sum(L.stored_bytes(s, parallel) for s in saves)
        for saves in (
            L.embedding_saves(model, micro_batch, parallel.cp),
            L.output_saves(model, parallel.tp, micro_batch, parallel.cp, cross_entropy),
        )
    )
    if model.mtp_layers:  # each MTP depth: a layer of the last kind and the output layer again
        last = stack.kinds(model)[-1]
        out += model.mtp_layers * (_per_layer_bytes(last, parallel, micro_batch, BF16) + out)
    return emb, out


def stage_output_bytes(model: ModelSpec, parallel: ParallelSpec, micro_batch: int) -> float:
    """A stage's output tensor, 2sbh (/t under SP): what Appendix B deallocates after sending."""
    return L.stored_bytes(L.layer_input(model, micro_batch, parallel.cp), parallel)
