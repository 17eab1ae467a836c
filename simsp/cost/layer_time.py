"""One transformer layer's forward, recompute and backward as per-op entries on one TP rank.

Forward runs the op list in order; TP/SP collectives block the compute stream, as Megatron-LM's
forward does. Backward runs it in reverse: each linear layer's data-gradient GEMM, then its
weight-gradient GEMM. The collective on the gradient of a column-parallel layer's input runs
alongside that layer's weight-gradient GEMM (Megatron's async TP all-reduce, paper §6.2); under
SP the all-gather of the saved sequence-sharded input runs alongside the data-gradient GEMM
(paper §4.2.2). With tp_comm_overlap (Transformer Engine's userbuffers) the collectives that
block the stream overlap the GEMM beside them instead: the all-gather before a column-parallel
GEMM and the all-gather of a row-parallel layer's output gradient by ring exchange
(`split_overlap_ag_s`), the reduce-scatter after a row-parallel GEMM pipelined with it
(`split_overlap_rs_s`); the backward's other two are the bulk overlaps above. An entry's
`seconds` is what it adds to the critical path, so the entries of a pass sum to the pass exactly;
`busy_s` is how long it occupies its stream.
"""

import dataclasses

from simsp.cost import CostModel
from simsp.cost.compute import FORWARD, Timed, attention_grad_shapes, gemm_grad_shapes
from simsp.cost.layer_entries import Entry, LayerTime
from simsp.cost.overlap import (
    RS_SPLITS,
    paired_1f1b_s,
    shared_sms_s,
    split_overlap_ag_s,
    split_overlap_rs_s,
)
from simsp.cost.ring_attention import ring_attention_entries
from simsp.model.blocks import checkpoint
from simsp.model.layer import Op, reruns
from simsp.spec.layout import Placement
from simsp.spec.parallel import ParallelSpec

COMM_KINDS = {"cp": "cp_comm", "ep": "ep_comm", "etp": "ep_comm", "etp-ep": "ep_comm"}
"""The entry kind of a collective by the group it runs over (other groups: comm)."""


class _Pass:
    """Builds the entries of a layer with one cost model and parallel plan."""

    def __init__(
        self,
        cost: CostModel,
        parallel: ParallelSpec,
        place: Placement,
        deferred_wgrad: bool = False,
    ):
        self.cost, self.par, self.place = cost, parallel, place
        self.deferred_wgrad = deferred_wgrad

    def collective_s(self, collective) -> float:
        """A collective over the layout group it names."""
        group = self.place.group(collective.group)
        net = self.cost.network
        if collective.op == "send_recv":
            return net.p2p_s(collective.bytes, group.nodes == 1)
        if collective.node_dedup:  # DeepEP / HybridEP: once per destination node
            return net.all_to_all_s(
                collective.bytes, group.size, group.ranks_per_node, collective.node_dedup
            )
        return net.group_s(collective.op, collective.bytes, group)

    def comm(self, op: Op, collective, phase: str, hidden_behind: float = 0.0) -> Entry:
        t = self.collective_s(collective)
        name = f"{op.name}: {collective.op.replace('_', '-')}"
        kind = COMM_KINDS.get(collective.group, "comm")
        return Entry(name, phase, kind, "comm", max(0.0, t - hidden_behind), t, "nccl")

    def compute(self, name: str, phase: str, kind: str, timed: Timed) -> Entry:
        return Entry(name, phase, kind, "compute", timed.seconds, timed.seconds, timed.source)

    def userbuffers(self, comm_op: Op | None, collective, gemm_op: Op | None) -> bool:
        """Whether Transformer Engine overlaps this collective with that neighbouring GEMM
        (tp_comm_overlap): SP's all-gathers and reduce-scatters beside a TP linear layer, over a
        group inside one node (userbuffers' copy-engine sends assert an intra-node peer,
        userbuffers.cu); anything else stays a plain NCCL collective."""
        return (
            self.par.tp_comm_overlap
            and comm_op is not None
            and comm_op.kind == "comm"
            and collective is not None
            and collective.group == "tp"
            and collective.op in ("all_gather", "reduce_scatter")
            and gemm_op is not None
            and gemm_op.kind == "gemm"
            and self.place.group(collective.group).nodes == 1
        )

    def ring_exchange(
        self, name: str, phase: str, gemm: Timed, comm_op: Op, collective
    ) -> list[Entry]:
        """An all-gather and the GEMM that consumes it, by ring exchange (split_overlap_ag_s)."""
        comm = self.comm(comm_op, collective, phase)
        t = self.place.group(collective.group).size
        exposed = split_overlap_ag_s(gemm.seconds, comm.busy_s, t)
        return [
            dataclasses.replace(comm, seconds=exposed),
            Entry(name, phase, "gemm", "compute", gemm.seconds, gemm.seconds, gemm.source),
        ]

    def pipelined_rs(
        self, name: str, phase: str, gemm: Timed, comm_op: Op, collective
    ) -> list[Entry]:
        """A GEMM and the reduce-scatter of its output, pipelined (split_overlap_rs_s)."""
        comm = self.comm(comm_op, collective, phase)
        u = self.cost.hw.calibration.collective_sm_share
        gemm_s, exposed = split_overlap_rs_s(gemm.seconds, comm.busy_s, RS_SPLITS, u)
        return [
            Entry(name, phase, "gemm", "compute", gemm_s, gemm_s, gemm.source),
            dataclasses.replace(comm, seconds=exposed),
        ]

    def quantize(self, op: Op, phase: str, backward: bool) -> list[Entry]:
        """An FP8 linear layer's quantize kernels (cast, transpose, amax) in one direction, by
        their bytes (model/blocks/fp8.py); none under BF16."""
        nbytes = op.bwd_bytes if backward else op.fwd_bytes
        if not (op.gemm and nbytes):
            return []
        timed = self.cost.compute.memory_bound(nbytes, "fp8_cast", backward)
        return [self.compute(f"{op.name} fp8 cast", phase, "fp8_cast", timed)]

    def forward(
        self, op: Op, phase: str, before: Op | None = None, after: Op | None = None
    ) -> list[Entry]:
        """One op's forward; `before` and `after` are its neighbours in the op list, for the
        collectives tp_comm_overlap prices together with their GEMM."""
        return (self.quantize(op, phase, False) if op.gemm else []) + self._forward(
            op, phase, before, after
        )

    def _forward(self, op: Op, phase: str, before: Op | None, after: Op | None) -> list[Entry]:
        if op.kind == "amax":
            return [self.comm(op, op.fwd_comm, phase)] if op.fwd_comm else []
        if op.kind == "comm":
            if self.userbuffers(op, op.fwd_comm, after if op.overlaps_wgrad else before):
                return []  # with its GEMM
            return [self.comm(op, op.fwd_comm, phase)] if op.fwd_comm else []
        if not op.fwd_bytes and not op.gemm and not op.attention:
            return []  # backward-only op
        cm = self.cost.compute
        if op.attention and op.attention.ring:
            return ring_attention_entries(self, op, phase, backward=False)
        if op.attention:
            timed = cm.flash_attention(op.attention)
        else:
            timed = (
                cm.gemm(op.gemm, FORWARD)
                if op.gemm
                else cm.memory_bound(op.fwd_bytes, op.kind, kernels=op.fwd_kernels)
            )
        if (
            before is not None
            and before.overlaps_wgrad
            and self.userbuffers(before, before.fwd_comm, op)
        ):
            return self.ring_exchange(op.name, phase, timed, before, before.fwd_comm)
        if (
            after is not None
            and not after.overlaps_wgrad
            and self.userbuffers(after, after.fwd_comm, op)
        ):
            return self.pipelined_rs(op.name, phase, timed, after, after.fwd_comm)
        return [self.compute(op.name, phase, op.kind, timed)]

    def backward(self, op: Op, before: Op | None = None, after: Op | None = None) -> list[Entry]:
        """One op's backward; `before` and `after` are its neighbours in the op list: a
        collective before a linear layer is its entry, one after it its exit."""
        cm = self.cost.compute
        if op.kind == "amax":
            return [self.comm(op, op.bwd_comm, "backward")] if op.bwd_comm else []
        if op.kind == "comm":
            if not op.bwd_comm or op.overlaps_wgrad:
                return []
            if self.userbuffers(op, op.bwd_comm, before):
                return []  # with the dgrad before it
            return [self.comm(op, op.bwd_comm, "backward")]
        if op.attention and op.attention.ring:
            return ring_attention_entries(self, op, "backward", backward=True)
        if op.attention:
            return [
                self.compute(
                    op.name + " grad", "backward", op.kind, cm.flash_attention(op.attention, True)
                )
            ]
        if op.kind == "attention_gemm":
            return [
                self.compute(f"{op.name} grad {i}", "backward", op.kind, cm.gemm(g))
                for i, g in enumerate(attention_grad_shapes(op.gemm), 1)
            ]
        if op.kind != "gemm":
            if not op.bwd_bytes:
                return []  # e.g. a residual add without bias: its gradient passes through
            return [
                self.compute(
                    op.name + " grad",
                    "backward",
                    op.kind,
                    cm.memory_bound(op.bwd_bytes, op.kind, True, op.bwd_kernels),
                )
            ]
        entry_comm = before if before is not None and before.kind == "comm" else None
        exit_comm = (
            after if after is not None and self.userbuffers(after, after.bwd_comm, op) else None
        )
        return self.quantize(op, "backward", True) + self._linear_backward(
            op, entry_comm, exit_comm
        )

    def _linear_backward(self, op: Op, entry_comm: Op | None, exit_comm: Op | None) -> list[Entry]:
        """dgrad (with SP's input all-gather alongside), then wgrad with the input-gradient
        collective. With the weight gradient deferred (a W pass of its own), nothing hides the
        collective: the input-gradient pass waits for all of it, and the wgrad runs alone later.
        `exit_comm`, with tp_comm_overlap only: the collective after the layer, whose backward
        all-gather of the output gradient runs by ring exchange with the dgrad (TE 2.5's
        proj_dgrad / fc2_dgrad); the bulk overlaps of the entry collective are the ones above."""
        (dg, dl), (wg, wl) = gemm_grad_shapes(op.gemm)
        dgrad = self.cost.compute.gemm(dg, dl)
        wgrad = self.cost.compute.gemm(wg, wl)
        overlapped = (
            entry_comm is not None and entry_comm.bwd_comm is not None and entry_comm.overlaps_wgrad
        )
        dname = op.name + " dgrad"
        if exit_comm is not None:
            out = self.ring_exchange(dname, "backward", dgrad, exit_comm, exit_comm.bwd_comm)
        elif overlapped and entry_comm.fwd_comm is not None:
            # SP: re-gather the sequence-sharded saved input
            out = self.overlap(dname, dgrad, entry_comm, entry_comm.fwd_comm)
        else:
            out = [self.compute(dname, "backward", "gemm", dgrad)]
        if self.deferred_wgrad:
            if overlapped:
                out.append(self.comm(entry_comm, entry_comm.bwd_comm, "backward"))
            return out + [self.compute(op.name + " wgrad", "weight", "gemm", wgrad)]
        if not overlapped:
            return out + [self.compute(op.name + " wgrad", "backward", "gemm", wgrad)]
        return out + self.overlap(op.name + " wgrad", wgrad, entry_comm, entry_comm.bwd_comm)

    def overlap(self, name: str, gemm: Timed, comm_op: Op, collective) -> list[Entry]:
        """A GEMM alongside a collective on the SMs it leaves (overlap.shared_sms_s); what the
        collective outlasts of the GEMM is exposed."""
        comm = self.comm(comm_op, collective, "backward")
        c = comm.busy_s
        compute_s = shared_sms_s(gemm.seconds, c, self.cost.hw.calibration.collective_sm_share)
        return [
            Entry(name, "backward", "gemm", "compute", compute_s, compute_s, gemm.source),
            Entry(comm.op, "backward", "comm", "comm", max(0.0, c - compute_s), c, "nccl"),
        ]


def host_us(cal, recompute: str) -> tuple[float, float]:
    """(forward, backward) host time of one layer, microseconds (profiled: `simsp profile host`)."""
    extra = {"full": cal.host_recompute_full_us, "selective": cal.host_recompute_selective_us}.get(
        recompute, 0.0
    )
    return cal.host_forward_us, cal.host_backward_us + extra


def _host_wait(entries: list[Entry], phases: tuple[str, ...], host_s: float) -> list[Entry]:
    """The GPU waits for the host where issuing a pass takes longer than running it: the pass
    takes max(device time, host time), and the difference shows as an idle entry."""
    device_s = sum(e.seconds for e in entries if e.phase in phases)
    if host_s <= device_s:
        return []
    return [
        Entry(
            "waiting for the host to issue work",
            phases[-1],
            "host",
            "compute",
            host_s - device_s,
            host_s - device_s,
            "host",
        )
    ]


def layer_time(
    ops: tuple[Op, ...], cost: CostModel, parallel: ParallelSpec, place: Placement
) -> LayerTime:
    """Forward, recompute and backward entries of one layer for one microbatch; `place` holds
    the groups its collectives run over (layout.LAYER_GROUPS)."""
    p = _Pass(cost, parallel, place)
    entries = _forward(ops, p, "forward")
    rerun = (
        ops
        if parallel.recompute == "full"
        else tuple(checkpoint.rerun(o) for o in ops if reruns(o, parallel))
        if parallel.recompute in ("selective", "op")
        else ()
    )
    host_f, host_b = (us * 1e-6 for us in host_us(cost.hw.calibration, parallel.recompute))
    entries += _host_wait(entries, ("forward",), host_f)
    recompute = _forward(rerun, p, "recompute")
    backward = recompute + _backward(ops, p)
    backward += _host_wait(backward, ("recompute", "backward"), host_b)
    split = _backward(ops, _Pass(cost, parallel, place, deferred_wgrad=True))
    split = recompute + [
        dataclasses.replace(e, phase="input") if e.phase == "backward" else e for e in split
    ]
    split += _host_wait(split, ("recompute", "input"), host_b)
    paired = ()
    if parallel.moe_a2a_overlap:  # alone in warm-up and cool-down, paired in between
        share = cost.hw.calibration.collective_sm_share
        forward, back = _beside_other_microbatch(entries, backward, share)
        paired = tuple(forward + back)
    return LayerTime(tuple(entries + backward), tuple(split), paired)


def _beside_other_microbatch(
    forward: list[Entry], backward: list[Entry], sm_share: float
) -> tuple[list[Entry], list[Entry]]:
    """A mixture of experts' all-to-alls under EP overlap (Megatron-Core
    --overlap-moe-expert-parallel-comm with --delay-wgrad-compute, combined_1f1b.py): in the
    steady state the forward of one microbatch runs layer by layer beside the backward of
    another, on a compute and a communication stream, in the order of
    fine_grained_schedule.schedule_layer_1f1b: compute B.post_combine, F.attn, B.mlp, F.mlp,
    B.attn, F.post_combine; communication B.combine, F.dispatch, B.dispatch, F.combine; each
    waiting for what it reads (`_paired_layer_s`). The pair takes that schedule's span, its
    compute slowed by the SMs the all-to-alls hold while both streams run; what it adds to the
    layer's compute shows as one entry at the end of the backward. These are LayerTime.paired:
    a schedule's overlapped pairs (Action.overlapped) take them, its warm-up forwards and
    cool-down backwards the layer alone (all-to-alls exposed), as are the zero-bubble split's
    I and W passes, which no schedule pairs."""
    ep = [e for e in forward + backward if e.kind == "ep_comm"]
    if not ep:
        return forward, backward
    comm_s = sum(e.busy_s for e in ep)
    compute_s = sum(e.seconds for e in forward + backward if e.kind != "ep_comm")
    span = _paired_layer_s(forward, backward)
    if span is None:  # not the dispatch / combine pattern: every all-to-all beside all compute
        span = max(shared_sms_s(compute_s, comm_s, sm_share), comm_s)
    else:
        span += sm_share * max(0.0, compute_s + comm_s - span)

    def hidden(entries):
        return [dataclasses.replace(e, seconds=0.0) if e.kind == "ep_comm" else e for e in entries]

    extra = span - compute_s
    phase = backward[-1].phase if backward else "backward"
    wait = Entry(
        "all-to-alls beside the other microbatch", phase, "ep_comm", "comm", extra, extra, "nccl"
    )
    return hidden(forward), hidden(backward) + ([wait] if extra > 0 else [])


def _runs(entries: list[Entry]) -> list[float]:
    """The entries as alternating runs of computation (every entry but the all-to-alls, as
    long as it holds the compute stream) and of expert-parallel communication (as long as it
    runs), computation first."""
    runs = [0.0]
    for e in entries:
        comm = e.kind == "ep_comm"
        if comm != (len(runs) % 2 == 0):
            runs.append(0.0)
        runs[-1] += e.busy_s if comm else e.seconds
    return runs


def _paired_layer_s(forward: list[Entry], backward: list[Entry]) -> float | None:
    """overlap.paired_1f1b_s of the layer's computation and all-to-all runs (forward attn |
    dispatch | mlp | combine | post_combine, backward post_combine | combine | mlp | dispatch |
    attn); None for another pattern."""
    f, b = _runs(forward), _runs(backward)
    if len(f) != 5 or len(b) != 5:
        return None
    return paired_1f1b_s(f, b)


def _neighbours(ops: tuple[Op, ...], i: int) -> tuple[Op | None, Op | None]:
    """The ops before and after ops[i], None past either end."""
    return (ops[i - 1] if i > 0 else None, ops[i + 1] if i + 1 < len(ops) else None)


def _forward(ops: tuple[Op, ...], p: _Pass, phase: str) -> list[Entry]:
    """The forward (or recompute) entries of the ops, in order; ops on a side stream beside an
    all-to-all with it (`_beside`)."""
    out, side = [], {}
    for i, op in enumerate(ops):
        entries = p.forward(op, phase, *_neighbours(ops, i))
        (side.setdefault(op.beside, []) if op.beside else out).extend(entries)
    return _beside(out, side, p.cost.hw.calibration.collective_sm_share)


def _backward(ops: tuple[Op, ...], p: _Pass) -> list[Entry]:
    """The backward entries of the ops, last op first; side-stream ops as in `_forward`."""
    out, side = [], {}
    for i in range(len(ops) - 1, -1, -1):
        entries = p.backward(ops[i], *_neighbours(ops, i))
        (side.setdefault(ops[i].beside, []) if ops[i].beside else out).extend(entries)
    return _beside(out, side, p.cost.hw.calibration.collective_sm_share)


def _beside(entries: list[Entry], side: dict[str, list[Entry]], sm_share: float) -> list[Entry]:
    """Ops run on a side stream beside the `which all-to-all` of a pass (the shared experts
    under moe_shared_expert_overlap): the pair takes the longer of the all-to-all and the ops,
    slowed by the SMs the all-to-all holds (overlap.shared_sms_s); the ops keep their seconds
    and the all-to-all adds what the pair takes beyond them. Entries of another phase (a
    deferred weight gradient) run in turn, as do ops with no all-to-all of that name."""
    for which, extra in side.items():
        prefix = f"{which} all-to-all: "
        at = [i for i, e in enumerate(entries) if e.op.startswith(prefix)]
        if not at:
            entries += extra
            continue
        comm = entries[at[-1]]
        paired = [e for e in extra if e.phase == comm.phase]
        work_s = sum(e.seconds for e in paired)
        span = max(shared_sms_s(work_s, comm.busy_s, sm_share), comm.busy_s)
        entries[at[-1] : at[-1] + 1] = [dataclasses.replace(comm, seconds=span - work_s), *paired]
        entries += [e for e in extra if e.phase != comm.phase]
    return entries
