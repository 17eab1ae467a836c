"""A pipeline chunk's costs for one microbatch (ChunkCost): the sum over the layers of its slice
of the model's stack (n times one layer where they are alike, each kind's own times where they
differ), with recompute on the chunk's first layers only where asked, plus the embedding on the
first virtual stage and the output layer (and MTP depths) on the last, FSDP's exposed gathers and
reduce-scatters, FP8 amax reductions, and the bytes the chunk holds; and what it runs beside its
passes on streams of their own (SideComm). sim/plan.py assembles them into StageCosts.
"""

from dataclasses import dataclass

from simsp.cost import fsdp
from simsp.cost.layer_entries import LayerTime
from simsp.model.saved_bytes import (
    chunk_activation_bytes,
    end_stage_bytes,
    stage_output_bytes,
    weight_grad_bytes,
)
from simsp.sim import schedule
from simsp.sim.memory import sends_output
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
        side = side_comms(lt if rest is None or full == n else rest, n, sharded)
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


def side_comms(lt: LayerTime, n: int, sharded) -> tuple[SideComm, ...]:
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
