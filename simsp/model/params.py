"""Parameter counts, summed over the weights the op list's ops own (layer.py).

Whole-model counts use the tokenizer's vocabulary, as published model cards do; what one GPU
holds uses Megatron's padded vocabulary and its tensor-parallel split.
"""

import dataclasses
from functools import lru_cache

from simsp.model import layer as L
from simsp.model import stack
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.schedules import virtual_stage


@lru_cache(maxsize=4096)
def layer_weights(model: ModelSpec) -> tuple[L.Weight, ...]:
    """Every weight of one layer (micro batch and parallelism do not change them)."""
    return tuple(w for op in L.build_layer(model, ParallelSpec(), 1) for w in op.weights)


def layer_params(model: ModelSpec) -> int:
    """Parameters of one layer. For the paper's GPT (f = 4h) this is 12h² + 13h (§3)."""
    return sum(w.numel for w in layer_weights(model))


Mesh = tuple[int, int, int]
"""What a weight's split reads of the parallel settings: (tp, etp, ep); etp 0 means tp."""


def mesh_of(parallel: ParallelSpec | int) -> Mesh:
    """The mesh key of parallel settings, or of a bare TP size."""
    if isinstance(parallel, int):
        return (parallel, 0, 1)
    return (parallel.tp, parallel.etp, parallel.ep)


@lru_cache(maxsize=256)
def _mesh_spec(mesh: Mesh) -> ParallelSpec:
    return ParallelSpec(tp=mesh[0], etp=mesh[1], ep=mesh[2])


def layer_params_per_rank(model: ModelSpec, parallel: ParallelSpec | int) -> float:
    """One layer on one rank: each weight over the ranks of the mesh dimensions that split it
    (TP weights / t, routed experts / (etp x ep)), replicated norms and row biases whole."""
    return _layer_params(model, mesh_of(parallel), False)


def expert_params_per_rank(model: ModelSpec, parallel: ParallelSpec | int) -> float:
    """The routed experts' share of layer_params_per_rank (0 for a dense layer)."""
    return _layer_params(model, mesh_of(parallel), True)


@lru_cache(maxsize=4096)
def _layer_params(model: ModelSpec, mesh: Mesh, experts_only: bool) -> float:
    spec = _mesh_spec(mesh)
    return sum(
        L.stored_params(w, spec) for w in layer_weights(model) if w.expert or not experts_only
    )


def linear_params_per_rank(model: ModelSpec, parallel: ParallelSpec | int) -> float:
    """One layer's linear-layer weights (biases, norms excepted) on one rank: the tensors an
    FP8 run keeps FP8 copies of."""
    return _linear_params(model, mesh_of(parallel))


@lru_cache(maxsize=4096)
def _linear_params(model: ModelSpec, mesh: Mesh) -> float:
    ops = L.build_layer(model, ParallelSpec(), 1)
    spec = _mesh_spec(mesh)
    return sum(
        L.stored_params(w, spec)
        for op in ops
        if op.kind == "gemm"
        for w in op.weights
        if not w.name.endswith(" bias")
    )


def total_params(model: ModelSpec) -> int:
    """All parameters of the model with its own (unpadded) vocabulary: layers, embeddings,
    final norm and, if untied, the output layer (one copy: tied weights are one tensor)."""
    unpadded = dataclasses.replace(model, vocab_divisible_by=1)
    ends = L.embedding_weights(unpadded, 1) + L.output_weights(unpadded, 1, pipelined=False)
    if stack.uniform(model):
        layers = model.layers * layer_params(model)
    else:
        layers = sum(n * layer_params(kind) for kind, n in stack.counts(model))
    return layers + sum(w.numel for w in ends)


def active_params(model: ModelSpec) -> int:
    """Parameters one token passes through: total_params less the routed experts it is not
    sent to, (E - k) / E of each mixture-of-experts layer's routed weights."""
    if not model.experts:
        return total_params(model)
    routed = sum(
        n * sum(w.numel for w in layer_weights(kind) if w.expert) for kind, n in stack.counts(model)
    )
    return total_params(model) - round(routed * (model.experts - model.router_topk) / model.experts)


def mtp_params(model: ModelSpec, parallel: ParallelSpec | int = 1, experts_only=False) -> float:
    """The multi-token-prediction layers' parameters on one rank (0 without them): each a layer
    of the model's last kind, its two input norms and the projection of [h; embedding] to h,
    split over TP (Megatron-Core multi_token_prediction.py: enorm, hnorm, eh_proj); the output
    layer is shared. Not in total_params, as transformers builds none."""
    if not model.mtp_layers:
        return 0.0
    mesh = mesh_of(parallel)
    last = stack.kinds(model)[-1]
    if experts_only:
        return model.mtp_layers * _layer_params(last, mesh, True)
    proj = 2 * model.hidden * model.hidden / mesh[0] + 2 * model.hidden
    return model.mtp_layers * (_layer_params(last, mesh, False) + proj)


def stage_params(model: ModelSpec, parallel: ParallelSpec, stage: int) -> float:
    """Parameters one rank of a pipeline stage holds: its layers (the slices of the stack its
    model chunks hold), plus the embedding tables on the first stage and the final norm, output
    layer and multi-token-prediction layers on the last."""
    last = parallel.last_stage
    if model.mtp_layers and stage == last:
        plain = dataclasses.replace(model, mtp_layers=0)
        return stage_params(plain, parallel, stage) + mtp_params(model, parallel)
    if stack.uniform(model):
        layers = parallel.stage_layers(model.layers, stage)
        return _stage_params(model, mesh_of(parallel), layers, stage == 0, stage == last, last != 0)
    return sum(chunk_params(model, parallel, vs) for vs in _stage_chunks(parallel, stage))


def stage_expert_params(model: ModelSpec, parallel: ParallelSpec, stage: int) -> float:
    """The routed experts' share of stage_params: their gradients reduce, and their optimizer
    state shards, over the expert-data-parallel group."""
    if not model.experts:
        return 0.0
    mtp = mtp_params(model, parallel, experts_only=True) if stage == parallel.last_stage else 0.0
    return mtp + sum(
        _chunk_params(model, mesh_of(parallel), *_chunk_slice(model, parallel, vs), True)
        for vs in _stage_chunks(parallel, stage)
    )


def chunk_params(model: ModelSpec, parallel: ParallelSpec, vs: int) -> float:
    """Parameters one rank holds for virtual stage vs (one model chunk): its slice of the stack,
    plus the embedding on the first and the final norm and output layer on the last."""
    last = parallel.pp * parallel.chunks - 1
    start, n = _chunk_slice(model, parallel, vs)
    mesh = mesh_of(parallel)
    if stack.uniform(model):
        return _stage_params(model, mesh, n, vs == 0, vs == last, last != 0)
    layers = _chunk_params(model, mesh, start, n, False)
    return layers + _stage_params(model, mesh, 0, vs == 0, vs == last, last != 0)


def _stage_chunks(parallel: ParallelSpec, stage: int) -> tuple[int, ...]:
    """The virtual stages a pipeline stage holds."""
    return tuple(
        virtual_stage(parallel.pp, stage, c, parallel.placement) for c in range(parallel.chunks)
    )


def _chunk_slice(model: ModelSpec, parallel: ParallelSpec, vs: int) -> tuple[int, int]:
    """(first layer, layers) of virtual stage vs."""
    counts = parallel.chunk_layers(model.layers)
    return sum(counts[:vs]), counts[vs]


@lru_cache(maxsize=4096)
def _chunk_params(model: ModelSpec, mesh: Mesh, start: int, n: int, experts_only: bool) -> float:
    """Layers start to start + n on one rank (only the routed experts' weights if experts_only)."""
    if stack.uniform(model):
        return n * _layer_params(model, mesh, experts_only)
    kinds = stack.kinds(model)[start : start + n]
    return sum(_layer_params(kind, mesh, experts_only) for kind in kinds)


@lru_cache(maxsize=4096)
def _stage_params(
    model: ModelSpec, mesh: Mesh, layers: int, first: bool, last: bool, apart: bool
) -> float:
    """`layers` identical layers; first / last: the stage holds the embedding / the output
    layer; apart: they are on different stages (then a tied output layer is a copy of its own)."""
    t, spec = mesh[0], _mesh_spec(mesh)
    params = layers * _layer_params(model, mesh, False)
    if first:
        params += sum(L.stored_params(w, spec) for w in L.embedding_weights(model, t))
    if last:
        params += sum(L.stored_params(w, spec) for w in L.output_weights(model, t, pipelined=apart))
    return params
