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
from simsp.model.saved_bytes import (
    chunk_activation_bytes,
    end_stage_bytes,
    stage_output_bytes,
    weight_grad_bytes,
)
from simsp.sim import schedule
from simsp.sim.memory import sends_output, static_bytes
from simsp.sim.stage_terms import by_stage, param_gather, stage_terms
from simsp.spec.layout import LAYER_GROUPS, Layout, layout
from simsp.spec.precision import precision_rules
from simsp.spec.workload import Workload


@dataclass(frozen=True)
class SideComm:
    """Communication a chunk's passes run on a stream of its own beside their compute (the CP
    ring or all-to-alls, FSDP's gathers and reduce-scatters), for the timeline to draw beside
    each pass (present.timeline's side_spans); what of it is exposed is already inside the
    pass's time."""

    stream: str
    """cp_comm or fsdp_comm (trace.STREAMS)."""
    name: str
    forward_s: float
    """Busy seconds beside one forward."""
    backward_s: float
    """Busy seconds beside one backward or I pass, recompute included."""


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
    input_s: float = 0.0
    """An I pass (zero-bubble schedules): recompute and the backward but its weight gradients;
    the end stages' embedding and output-layer backward count here whole."""
    weight_s: float = 0.0
    """A W pass: the layers' weight-gradient GEMMs."""
    input_tp_s: float = 0.0
    """Exposed TP communication inside input_s."""
    weight_bytes: float = 0.0
    """What an I pass leaves held until its W: the linear layers' inputs and output gradients."""
    weight_tp_s: float = 0.0
    """Exposed TP communication inside weight_s (none: a W pass only runs GEMMs)."""
    forward_fsdp_s: float = 0.0
    """What FSDP adds inside forward_s (cost/fsdp.py): exposed parameter all-gathers and the
    compute slowed beside them."""
    backward_fsdp_s: float = 0.0
    """What FSDP adds inside backward_s and input_s: exposed all-gathers and gradient
    reduce-scatters, and the compute slowed beside them."""
    side: tuple[SideComm, ...] = ()
    """Communication on streams of its own during the passes (drawn, not timed again)."""
    paired_forward_s: float | None = None
    """forward_s in a schedule's overlapped pair (EP all-to-all overlap: LayerTime.paired);
    None: as forward_s."""
    paired_backward_s: float | None = None
    """backward_s in an overlapped pair; None: as backward_s."""


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


LAYER_FIELDS = (
    "forward_s",
    "backward_s",
    "forward_tp_s",
    "backward_tp_s",
    "recompute_s",
    "input_s",
    "weight_s",
    "input_tp_s",
    "paired_forward_s",
    "paired_backward_s",
)
"""The LayerTime figures a chunk sums over its layers."""


@dataclass(frozen=True)
class KindTimes:
    """A stack of differing layers: each kind's LayerTime (and without recompute, `rest`)."""

    kinds: tuple
    """model/stack.py's kinds, one per layer of the model."""
    times: dict
    """kind -> LayerTime."""
    rest: dict | None = None
    """kind -> LayerTime without recompute, where some layers keep their activations."""

    def layers(self, start: int, n: int, full: int) -> list[LayerTime]:
        """The LayerTime of each layer of a chunk of n from `start`, its first `full` recomputing
        (Megatron-Core recomputes a chunk's first recompute_num_layers layers)."""
        out = []
        for i, kind in enumerate(self.kinds[start : start + n]):
            keeps = self.rest is not None and i >= full
            out.append((self.rest if keeps else self.times)[kind])
        return out


def chunk_costs(
    w: Workload,
    lt: LayerTime,
    ends: tuple[float, ...],
    rest: LayerTime | None = None,
    sharded: fsdp.LayerComm | None = None,
    amax=None,
    mixed: KindTimes | None = None,
) -> tuple[ChunkCost, ...]:
    """Every virtual stage's chunk: its layers, plus the embedding on the first and the output
    layer on the last (middle chunks are one shared object where they are alike). `rest` is the
    layer without recompute, for the layers that recompute_num_layers or recompute_per_stage
    leave out; `amax(n)`, the (forward, backward) amax reductions of a chunk of n layers
    (stage_time.amax_reduction_s). `mixed`: the model's layers differ (a sliding window on some
    of them), and each chunk sums its own layers' times."""
    par, b = w.parallel, w.training.micro_batch
    counts, last = w.chunk_layers, par.pp * par.chunks - 1
    placement = par.placement

    def layers(field: str, n: int, full: int) -> float:  # n layers, split where some recompute
        if rest is None or full == n:
            return n * getattr(lt, field)
        return full * getattr(lt, field) + (n - full) * getattr(rest, field)

    def sums(vs: int, n: int, full: int) -> tuple[tuple[float, ...], tuple[float, float]]:
        """The chunk's LAYER_FIELDS and FSDP's exposed (forward, backward) seconds."""
        if mixed is None:
            exposed = fsdp.exposed_s(sharded, n, lt.forward_s, lt.backward_s) if sharded else (0, 0)
            return tuple(layers(f, n, full) for f in LAYER_FIELDS), exposed
        each = mixed.layers(sum(counts[:vs]), n, full)
        totals = tuple(sum(getattr(x, f) for x in each) for f in LAYER_FIELDS)
        exposed = (
            fsdp.exposed_layers_s(
                sharded, [x.forward_s for x in each], [x.backward_s for x in each]
            )
            if sharded
            else (0, 0)
        )
        return totals, exposed

    emb_f, emb_b, out_f, out_b = ends[:4]
    emb_bytes, out_bytes = end_stage_bytes(w.model, par, b, w.training.knob("cross_entropy"))
    output = stage_output_bytes(w.model, par, b)
    sent = sends_output(par, last, placement)
    per_layer_for_w = weight_grad_bytes(w.model, par, b, w.training.numerics)

    mtp = w.model.mtp_layers
    mtp_lt = (mixed.times[mixed.kinds[-1]] if mixed else lt) if mtp else None

    def chunk(vs: int) -> ChunkCost:
        stage, n = schedule.stage_and_chunk(par.pp, vs, placement)[0], counts[vs]
        full = par.recomputed_layers(n, stage)
        (fwd, bwd, tp_f, tp_b, rc, i, wt, i_tp, pf, pb), (f_fsdp, b_fsdp) = sums(vs, n, full)
        first, final = vs == 0, vs == last
        if final and mtp:  # each MTP depth: a layer of the last kind, the output layer again
            fields = (fwd, bwd, tp_f, tp_b, rc, i, wt, i_tp, pf, pb)
            more = tuple(mtp * getattr(mtp_lt, f) for f in LAYER_FIELDS)
            fwd, bwd, tp_f, tp_b, rc, i, wt, i_tp, pf, pb = (
                x + y for x, y in zip(fields, more, strict=True)
            )
            fwd, bwd, i = fwd + mtp * out_f, bwd + mtp * out_b, i + mtp * out_b
            pf, pb = pf + mtp * out_f, pb + mtp * out_b
        a_f, a_b = amax(n) if amax else (0.0, 0.0)
        fwd, bwd, i = fwd + f_fsdp + a_f, bwd + b_fsdp + a_b, i + b_fsdp + a_b
        pf, pb = pf + f_fsdp + a_f, pb + b_fsdp + a_b
        ends_f = (emb_f if first else 0.0) + (out_f if final else 0.0)
        ends_b = (emb_b if first else 0.0) + (out_b if final else 0.0)
        side = _side_comms(lt if rest is None or full == n else rest, n, sharded)
        return ChunkCost(
            forward_s=fwd + ends_f,
            backward_s=bwd + ends_b,
            forward_tp_s=tp_f,
            backward_tp_s=tp_b,
            recompute_s=rc,
            activation_bytes=chunk_activation_bytes(w, stage, n, vs)
            + ((emb_bytes if first else 0.0) + (out_bytes if final else 0.0))
            + (output if vs in sent else 0.0),
            input_s=i + ends_b,
            weight_s=wt,
            input_tp_s=i_tp,
            weight_bytes=n * per_layer_for_w,
            forward_fsdp_s=f_fsdp,
            backward_fsdp_s=b_fsdp,
            side=side,
            paired_forward_s=pf + ends_f if w.parallel.moe_a2a_overlap else None,
            paired_backward_s=pb + ends_b if w.parallel.moe_a2a_overlap else None,
        )

    alike = mixed is None and not par.recompute_per_stage and not par.uneven
    if not alike or (sent and not sent >= set(range(1, last))):
        return tuple(chunk(vs) for vs in range(last + 1))  # middle chunks differ: each its own
    middle = chunk(1) if last > 1 else None
    return tuple(chunk(vs) if vs in (0, last) else middle for vs in range(last + 1))


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


def _side_comms(lt: LayerTime, n: int, sharded) -> tuple[SideComm, ...]:
    """A chunk's CP and FSDP communication as drawn beside its passes (lt: its layers' costs;
    with partial recompute the layers that keep their activations, whose recompute re-sends
    nothing, a lower bound)."""
    out = []
    cp = lt.busy_s("cp_comm", "forward"), lt.busy_s("cp_comm", "recompute", "backward")
    if any(cp):
        out.append(SideComm("cp_comm", "CP exchanges", n * cp[0], n * cp[1]))
    if sharded is not None:
        gather_b = sharded.gather_s if sharded.backward_gathers else 0.0
        out.append(
            SideComm(
                "fsdp_comm",
                "FSDP all-gathers / reduce-scatters",
                n * sharded.gather_s,
                n * (gather_b + sharded.reduce_s),
            )
        )
    return tuple(out)


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
