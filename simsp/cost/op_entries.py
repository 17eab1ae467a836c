"""One op's entries on one TP rank (OpEntries): its GEMM, attention or memory-bound kernel, the
TP/SP, CP or EP collective beside or around it, and how they overlap (Megatron's async TP
all-reduce and SP all-gather beside the backward GEMMs, Transformer Engine's userbuffers ring
exchange and pipelined reduce-scatter, FP8 casts). layer_time.py runs it over a layer's op list
and assembles the passes; the module docstring there says what each overlap is.
"""

import dataclasses

from simsp.cost import CostModel
from simsp.cost.compute import FORWARD, Timed, attention_grad_shapes, gemm_grad_shapes
from simsp.cost.layer_entries import Entry
from simsp.cost.overlap import (
    RS_SPLITS,
    shared_sms_s,
    split_overlap_ag_s,
    split_overlap_rs_s,
)
from simsp.cost.ring_attention import ring_attention_entries
from simsp.model.layer import Op
from simsp.spec.layout import Placement
from simsp.spec.parallel import ParallelSpec

COMM_KINDS = {"cp": "cp_comm", "ep": "ep_comm", "etp": "ep_comm", "etp-ep": "ep_comm"}
"""The entry kind of a collective by the group it runs over (other groups: comm)."""


class OpEntries:
    """Builds the entries of one op at a time (forward, recompute or backward) with one cost
    model, parallel plan and placement; layer_time runs it over a layer's op list."""

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
