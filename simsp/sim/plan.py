"""The program the engine replays: per-stage actions with their durations and allocations.

Pure: built from the workload, the schedule and the cost model, testable without simpy. Each
kind of layer in the model's stack (model/stack.py) is costed once, and a chunk's cost is the sum
over the layers of its slice of the stack (n times one layer where they are alike), plus the
embedding on the first virtual stage and the output layer on the last.
"""

import dataclasses
from dataclasses import dataclass
from functools import cached_property, partial

from simsp.cost import CostModel, fsdp
from simsp.cost import stage_time as st
from simsp.cost.gradient_sync import chunk_gradients
from simsp.cost.layer_entries import LayerTime
from simsp.cost.layer_time import layer_time
from simsp.errors import InputError
from simsp.model import stack
from simsp.model.layer import build_layer
from simsp.sim import schedule
from simsp.sim.chunk_costs import ChunkCost, KindTimes, chunk_costs
from simsp.sim.memory import static_bytes
from simsp.sim.stage_terms import by_stage, param_gather, stage_terms
from simsp.spec.layout import LAYER_GROUPS, Layout, layout
from simsp.spec.precision import precision_rules
from simsp.spec.workload import Workload


@dataclass(frozen=True)
class StageCosts:
    """What a pipeline's timing depends on: chunk costs and end-of-iteration work, per stage.
    The closed form (closed_form.py) reads only this; the engine also needs the schedule."""

    p: int
    v: int
    m: int
    chunks: tuple[ChunkCost, ...]
    """Indexed by virtual stage (schedule.virtual_stage of a stage and chunk)."""
    p2p_s: float
    dp_s: tuple[float, ...]
    overlap_dp: bool
    dp_buckets: tuple[int, ...]
    """Gradient buckets per stage (the overlapped all-reduce sends them one by one)."""
    embedding_sync_s: float
    optimizer_s: tuple[float, ...]
    dp_chunks: tuple[tuple[tuple[float, int], ...], ...] = ()
    """Per stage, per model chunk on it (local index): (share of dp_s, buckets). Each chunk's
    reduction starts with its own last backward (chunk_gradients); empty: one window, the
    stage's last backward, with dp_buckets."""
    comm_sm_share: float = 0.0
    """Share of the SMs an overlapped DP collective holds while it runs
    (calibration.collective_sm_share): the compute beside it runs at 1 - share."""
    param_gather_s: tuple[float, ...] = ()
    """Exposed all-gather of the updated parameters (distributed optimizer) per stage: all of it
    after the step, or with overlap_param_gather what the next forward cannot hide."""
    schedule: str = "1f1b"
    """The schedule's name (simsp.sim.schedule.REGISTRY): its placement maps chunks to virtual
    stages, and the closed form walks its actions where it has no formula."""
    alike_stages: bool = True
    """Every stage does the same layer work (no per-stage recompute): the pipeline formula's
    assumption; the closed form walks the schedule otherwise."""
    paired: bool = False
    """The schedule runs its steady state's forwards and backwards as overlapped pairs (EP
    all-to-all overlap: schedule.build's `paired`), which take the chunks' paired_* seconds;
    the closed form walks the schedule then."""

    @property
    def placement(self) -> str:
        return schedule.REGISTRY[self.schedule].placement

    @cached_property
    def gather_s(self) -> tuple[float, ...]:
        """param_gather_s, zeros without the distributed optimizer."""
        return self.param_gather_s or (0.0,) * self.p

    @property
    def dp_label(self) -> str:
        """What the gradient reduction is called on the timeline."""
        return "DP gradient reduce-scatter" if self.param_gather_s else "DP gradient all-reduce"

    @cached_property
    def step_s(self) -> tuple[float, ...]:
        """What follows the gradient barrier on each stage: the optimizer step and the exposed
        parameter all-gather; the iteration ends with the slowest."""
        return tuple(o + g for o, g in zip(self.optimizer_s, self.gather_s, strict=True))

    @cached_property
    def last_stage(self) -> int:
        """The stage holding the last virtual stage (p - 1, or 0 under a V placement)."""
        return schedule.stage_and_chunk(self.p, self.p * self.v - 1, self.placement)[0]


@dataclass(frozen=True, kw_only=True)
class Plan(StageCosts):
    """Everything the engine needs, as plain data: the costs plus each stage's actions."""

    actions: tuple[tuple[schedule.Action, ...], ...]
    chunk_layers: tuple[int, ...]
    """Transformer layers of each virtual stage."""
    weights_bytes: tuple[float, ...]
    layer: LayerTime
    """One layer's per-op entries, for timelines that expand chunk spans into ops."""
    layers: tuple[LayerTime, ...] = ()
    """Where the model's layers differ (model/stack.py): each layer's entries, in order."""

    def layer_at(self, index: int) -> LayerTime:
        """The entries of layer `index` of the model."""
        return self.layers[index] if self.layers else self.layer


@dataclass(frozen=True)
class Parts:
    """The costly pieces a pipeline's costs are assembled from, each a function of the workload
    and cost model: `build_plan` computes them directly, the closed form (closed_form.py) memoises
    them on what they depend on. Same pieces, one assembly (`stage_costs`)."""

    layer: object
    """(w, cost, layout) -> LayerTime of one layer, one microbatch."""
    ends: object
    """(w, cost, layout) -> (embedding forward, backward, output forward, backward, p2p send) s."""


def _direct_layer(w: Workload, cost: CostModel, lay: Layout) -> LayerTime:
    return layer_time(
        build_layer(w.model, w.parallel, w.training.micro_batch, w.training.numerics),
        cost,
        w.parallel,
        lay.placement(*LAYER_GROUPS),
    )


def _direct_ends(w: Workload, cost: CostModel, lay: Layout) -> tuple[float, ...]:
    return (*st.embedding_s(w, cost, lay), *st.output_s(w, cost, lay), st.p2p_s(w, cost, lay))


DIRECT = Parts(layer=_direct_layer, ends=_direct_ends)


def _kind_times(w: Workload, cost: CostModel, lay: Layout, parts: Parts, rest: bool) -> KindTimes:
    """Each layer kind of a stack of differing layers costed once (and without recompute, where
    some layers keep their activations)."""
    kinds = stack.kinds(w.model)

    def times(workload: Workload) -> dict:
        return {
            k: parts.layer(dataclasses.replace(workload, model=k), cost, lay) for k in set(kinds)
        }

    keep = dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, recompute="none"))
    return KindTimes(kinds, times(w), times(keep) if rest else None)


def stage_costs(
    w: Workload, cost: CostModel, parts: Parts = DIRECT
) -> tuple[StageCosts, LayerTime, tuple, "KindTimes | None"]:
    """The costs a pipeline's timing depends on, the layer they came from, the per-stage
    parameter counts (for the plan's weights) and, where the layers differ, each kind's times."""
    check_numerics(w, cost.hw)
    par = w.parallel
    p = par.pp
    lay = layout(par, cost.hw.node.gpus)
    lt = parts.layer(w, cost, lay)
    rest = None
    if par.recompute == "full" and any(
        par.recomputed_layers(n, schedule.stage_and_chunk(p, vs, par.placement)[0]) < n
        for vs, n in enumerate(w.chunk_layers)
    ):
        rest = parts.layer(
            dataclasses.replace(w, parallel=dataclasses.replace(par, recompute="none")), cost, lay
        )
    ends = parts.ends(w, cost, lay)
    terms = stage_terms(w, cost, lay)
    params, experts, buckets = terms.params, terms.experts, terms.buckets
    sharded = fsdp.layer_comm(w, cost, lay) if par.fsdp else None
    amax = partial(st.amax_reduction_s, w, cost, lay)
    mixed = None if stack.uniform(w.model) else _kind_times(w, cost, lay, parts, rest is not None)
    chunks = chunk_costs(w, lt, ends, rest, sharded, amax, mixed)
    p2p = ends[4] if p > 1 else 0.0
    costs = StageCosts(
        p=p,
        v=par.chunks,
        m=w.microbatches,
        chunks=chunks,
        p2p_s=p2p,
        dp_s=terms.dp_s,
        overlap_dp=par.overlap_grad_reduce,
        comm_sm_share=cost.hw.calibration.collective_sm_share,
        dp_buckets=buckets,
        dp_chunks=by_stage(p, lambda s: chunk_gradients(w, s))
        if par.chunks > 1 and par.overlap_grad_reduce and par.dp * par.cp > 1
        else (),
        embedding_sync_s=terms.embedding_sync_s,
        optimizer_s=terms.optimizer_s,
        param_gather_s=param_gather(w, cost, lay, params, chunks, buckets, p2p, experts)
        if par.distributed_optimizer
        else (),
        schedule=par.schedule,
        alike_stages=not (par.recompute_per_stage or par.uneven),
        paired=par.moe_a2a_overlap,
    )
    return costs, lt, params, mixed


def check_numerics(w: Workload, hw) -> None:
    """InputError naming the hardware file where the run's precision and kernels cannot run on
    its GPU (spec/precision.py's rules)."""
    for key, value, holds, rule in precision_rules(w.training.numerics, hw.gpu):
        if not holds:
            raise InputError(hw.source or hw.name, key, value, rule)


def build_plan(w: Workload, cost: CostModel) -> Plan:
    """Cost every chunk, schedule every stage and collect the end-of-iteration work."""
    costs, lt, _, mixed = stage_costs(w, cost)
    par = w.parallel
    layers = () if mixed is None else tuple(mixed.times[k] for k in mixed.kinds)
    return Plan(
        **{f.name: getattr(costs, f.name) for f in dataclasses.fields(StageCosts)},
        actions=schedule.build(
            par.schedule, par.pp, w.microbatches, par.chunks, paired=par.moe_a2a_overlap
        ),
        chunk_layers=w.chunk_layers,
        weights_bytes=by_stage(par.pp, lambda s: static_bytes(w, s)),
        layer=lt,
        layers=layers,
    )
