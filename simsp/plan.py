"""The program the engine replays: per-stage actions with their durations and allocations.

Pure: built from the workload, the schedule and the cost model, testable without simpy. Every
layer of a model is alike, so one layer is costed once and a chunk's cost is that times its
layers, plus the embedding on the first virtual stage and the output layer on the last.
"""

import math
from dataclasses import dataclass

from simsp import schedule
from simsp.cost import CostModel
from simsp.cost import stage_time as st
from simsp.cost.layer_time import LayerTime, layer_time
from simsp.layer import build_layer
from simsp.memory import (activation_per_layer_bytes, end_stage_bytes, stage_output_bytes, stage_params,
                          weight_bytes_per_param)
from simsp.units import BYTES_FP32
from simsp.workload import Workload


@dataclass(frozen=True)
class ChunkCost:
    """One model chunk (virtual stage) for one microbatch."""

    forward_s: float
    backward_s: float
    """Includes recompute."""
    forward_tp_s: float
    """Exposed TP communication inside forward_s."""
    backward_tp_s: float
    recompute_s: float
    activation_bytes: float
    """Held from the chunk's forward until its backward ends."""


@dataclass(frozen=True)
class StageCosts:
    """What a pipeline's timing depends on: chunk costs and end-of-iteration work, per stage.
    The closed form (analytic.py) reads only this; the engine also needs the schedule."""

    p: int
    v: int
    m: int
    chunks: tuple[ChunkCost, ...]
    """Indexed by virtual stage chunk * p + stage."""
    p2p_s: float
    dp_s: tuple[float, ...]
    overlap_dp: bool
    dp_buckets: tuple[int, ...]
    """Gradient buckets per stage (the overlapped all-reduce sends them one by one)."""
    embedding_sync_s: float
    optimizer_s: tuple[float, ...]


@dataclass(frozen=True)
class Plan(StageCosts):
    """Everything the engine needs, as plain data: the costs plus each stage's actions."""

    actions: tuple[tuple[schedule.Action, ...], ...]
    layers_per_chunk: int
    weights_bytes: tuple[float, ...]
    layer: LayerTime
    """One layer's per-op entries, for timelines that expand chunk spans into ops."""


def _chunk(w: Workload, cost: CostModel, lt: LayerTime, vs: int, extra_fwd: float, extra_bwd: float,
           extra_bytes: float) -> ChunkCost:
    n = w.layers_per_chunk
    per_layer = activation_per_layer_bytes(w.model, w.parallel, w.training.micro_batch)
    out = 0.0 if w.parallel.deallocate_pipeline_outputs else stage_output_bytes(w.model, w.parallel, w.training.micro_batch)
    return ChunkCost(
        forward_s=n * lt.forward_s + extra_fwd,
        backward_s=n * lt.backward_s + extra_bwd,
        forward_tp_s=n * lt.by_stream("comm", "forward"),
        backward_tp_s=n * lt.by_stream("comm", "recompute", "backward"),
        recompute_s=n * lt.seconds("recompute"),
        activation_bytes=n * per_layer + extra_bytes + out,
    )


def gradient_buckets(params: float, bucket_mb: float) -> int:
    """fp32 gradient buckets of bucket_mb MB holding a stage's parameters."""
    return max(1, math.ceil(BYTES_FP32 * params / (bucket_mb * 1e6)))


def gradients_done_s(now: float, backward_start: float, backward_end: float, comm_s: float, buckets: int,
                     overlap: bool) -> float:
    """When a stage's DP gradient all-reduce has finished.

    Not overlapped: it starts once the stage is otherwise done (now). Overlapped: the last
    backward makes its buckets ready evenly over its span and each is all-reduced, one at a
    time, as soon as it is ready, so the last ends at max(backward_end + c, backward_start + d +
    comm_s) with c = comm_s / buckets and d = (backward_end - backward_start) / buckets.
    """
    if not overlap:
        return now + comm_s
    c, d = comm_s / buckets, (backward_end - backward_start) / buckets
    return max(now, backward_end + c, backward_start + d + comm_s)


def build_plan(w: Workload, cost: CostModel) -> Plan:
    """Cost every chunk, schedule every stage and collect the end-of-iteration work."""
    par, b = w.parallel, w.training.micro_batch
    p, v = par.pp, par.chunks
    place = st.placement(w, cost.hw.node.gpus)
    lt = layer_time(build_layer(w.model, par, b), cost, par, place.tp_ranks_per_node)
    emb_f, emb_b = st.embedding_s(w, cost, place)
    out_f, out_b = st.output_s(w, cost, place)
    emb_bytes, out_bytes = end_stage_bytes(w.model, par, b)
    last = p * v - 1
    chunks = tuple(
        _chunk(w, cost, lt, vs,
               (emb_f if vs == 0 else 0.0) + (out_f if vs == last else 0.0),
               (emb_b if vs == 0 else 0.0) + (out_b if vs == last else 0.0),
               (emb_bytes if vs == 0 else 0.0) + (out_bytes if vs == last else 0.0))
        for vs in range(p * v))
    params = [stage_params(w.model, par, s) for s in range(p)]
    return Plan(
        p=p, v=v, m=w.microbatches,
        actions=schedule.build(par.schedule, p, w.microbatches, v),
        chunks=chunks,
        layers_per_chunk=w.layers_per_chunk,
        p2p_s=st.p2p_s(w, cost, place) if p > 1 else 0.0,
        dp_s=tuple(st.dp_allreduce_s(w, cost, place, n) for n in params),
        overlap_dp=par.overlap_dp_comm,
        dp_buckets=tuple(gradient_buckets(n, par.dp_bucket_mb) for n in params),
        embedding_sync_s=st.embedding_sync_s(w, cost),
        optimizer_s=tuple(st.optimizer_s(w, cost, s) for s in range(p)),
        weights_bytes=tuple(n * weight_bytes_per_param(par) for n in params),
        layer=lt,
    )
