"""A pipeline's work outside its chunks, per stage: the parameters a rank holds, the gradient
buckets and the DP reduction, the optimizer step, the tied embedding's sync and the exposed
parameter all-gather. plan.stage_costs reads them beside the chunks; the closed form over
columns (closed_form_columns.py) takes them once per distinct layout."""

from dataclasses import dataclass

from simsp.cost import CostModel
from simsp.cost import stage_time as st
from simsp.cost.gradient_sync import (
    gather_beside_forwards_s,
    gradient_buckets,
    interleaved_gather_exposed_s,
    param_gather_exposed_s,
)
from simsp.model.params import stage_expert_params, stage_params
from simsp.sim import schedule
from simsp.spec.layout import Layout
from simsp.spec.workload import Workload


@dataclass(frozen=True)
class StageTerms:
    """A pipeline's work outside its chunks, per stage (by_stage): what stage_costs reads besides
    the chunks, and what the closed form over columns (closed_form_columns.py) takes once per
    distinct layout."""

    params: tuple
    """Parameters one rank of each stage holds."""
    experts: tuple
    """Of them the routed experts' (0 for a dense model)."""
    buckets: tuple[int, ...]
    """Gradient buckets (gradient_buckets)."""
    dp_s: tuple[float, ...]
    """The DP gradient reduction (none under FSDP, which reduces each layer's gradients as its
    backward ends)."""
    optimizer_s: tuple[float, ...]
    embedding_sync_s: float


def stage_terms(w: Workload, cost: CostModel, lay: Layout) -> StageTerms:
    """The parameters, gradient buckets, DP reduction and optimizer step of every stage, and the
    tied embedding's sync."""
    par, p = w.parallel, w.parallel.pp
    params = by_stage(p, lambda s: stage_params(w.model, par, s))
    experts = (
        by_stage(p, lambda s: stage_expert_params(w.model, par, s)) if w.model.experts else (0,) * p
    )
    return StageTerms(
        params=params,
        experts=experts,
        buckets=tuple(gradient_buckets(n, par, s) for s, n in enumerate(params)),
        dp_s=(0.0,) * p
        if par.fsdp
        else by_stage(p, lambda s: st.dp_allreduce_s(w, cost, lay, params[s], experts[s])),
        optimizer_s=by_stage(p, lambda s: st.optimizer_s(w, cost, s)),
        embedding_sync_s=st.embedding_sync_s(w, cost),
    )


def param_gathers(w: Workload, cost: CostModel, lay: Layout, params, experts) -> tuple:
    """Each stage's whole parameter all-gather under the distributed optimizer (before what of
    it is hidden: param_gather)."""
    return by_stage(
        w.parallel.pp,
        lambda s: st.param_gather_s(w, cost, lay, params[s], s, experts[s]),
    )


def param_gather(
    w: Workload, cost: CostModel, lay: Layout, params, chunks, buckets, p2p_s: float, experts
) -> tuple:
    """The exposed parameter all-gather of each stage: with interleaving and overlap, each
    chunk's gather against that chunk's first forward (interleaved_gather_exposed_s); otherwise
    param_gather_exposed_s, the forward before the last bucket one chunk's (v = 1) or the
    warm-up's p forwards of the chunk before (other schedules with chunks); the fill is the
    forwards and sends of the stages before; the forwards beside the hidden part run on the SMs
    the gather leaves (gather_beside_forwards_s)."""
    par, p = w.parallel, w.parallel.pp
    gathers = param_gathers(w, cost, lay, params, experts)
    warmup = 1 if par.chunks == 1 else min(p, w.microbatches)
    per_chunk = par.overlap_param_gather and par.chunks > 1 and par.schedule == "interleaved"
    fill, out, share = 0.0, [], cost.hw.calibration.collective_sm_share
    for s in range(p):
        forwards = tuple(
            chunks[schedule.virtual_stage(p, s, k, par.placement)].forward_s
            for k in range(par.chunks)
        )
        if per_chunk:
            split = st.chunk_param_gather_s(w, cost, lay, params[s], s)
            total, exposed = sum(split), interleaved_gather_exposed_s(split, forwards, p, s, fill)
        else:
            overlap = par.overlap_param_gather
            total = gathers[s]
            exposed = param_gather_exposed_s(total, buckets[s], overlap, forwards[0] * warmup, fill)
        out.append(gather_beside_forwards_s(total, exposed, fill, share))
        fill += forwards[0] + p2p_s
    return tuple(out)


def by_stage(p: int, value) -> tuple:
    """value(stage) for every stage, computed for the first, one middle and the last: the middle
    stages hold the same layers and no end-stage work, so they are alike."""
    first, last = value(0), value(p - 1) if p > 1 else None
    middle = value(1) if p > 2 else None
    return tuple(first if s == 0 else last if s == p - 1 else middle for s in range(p))
