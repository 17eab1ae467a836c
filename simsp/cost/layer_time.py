"""One transformer layer's forward, recompute and backward as per-op entries on one TP rank.

Forward runs the op list in order; TP/SP collectives block the compute stream, as Megatron-LM's
forward does. Backward runs it in reverse: each linear layer's data-gradient GEMM, then its
weight-gradient GEMM. The collective on the gradient of a column-parallel layer's input runs
alongside that layer's weight-gradient GEMM (Megatron's async TP all-reduce, paper §6.2); under
SP the all-gather of the saved sequence-sharded input runs alongside the data-gradient GEMM
(paper §4.2.2). An entry's `seconds` is what it adds to the critical path, so the entries of a
pass sum to the pass exactly; `busy_s` is how long it occupies its stream.
"""

import dataclasses
from dataclasses import dataclass
from functools import cached_property

from simsp.cost import CostModel
from simsp.cost.compute import FORWARD, Timed, attention_grad_shapes, gemm_grad_shapes
from simsp.layer import Attention, Op
from simsp.layout import Placement
from simsp.parallel import ParallelSpec

PHASES = ("forward", "recompute", "backward", "input", "weight")


@dataclass(frozen=True)
class Entry:
    """One op's part of one pass of one layer."""

    op: str
    phase: str
    kind: str
    stream: str
    """compute or comm."""
    seconds: float
    """Added to the pass's critical path."""
    busy_s: float
    """Time the op occupies its stream (> seconds when hidden behind compute)."""
    source: str
    """table, roofline, bandwidth or nccl."""


@dataclass(frozen=True)
class LayerTime:
    """Entries of one layer for one microbatch; recompute entries count as backward time."""

    entries: tuple[Entry, ...]
    split: tuple[Entry, ...] = ()
    """The same layer with its backward split as zero-bubble schedules run it: phases
    recompute and input (I: everything but the weight gradients, the input-gradient collectives
    fully exposed) and weight (W: the weight-gradient GEMMs alone)."""

    def seconds(self, *phases: str) -> float:
        """Sum of the entries of the given phases."""
        return sum(e.seconds for e in self.entries if e.phase in phases)

    @cached_property
    def forward_s(self) -> float:
        return self.seconds("forward")

    @cached_property
    def backward_s(self) -> float:
        """Backward including recompute, as the paper's Table 4 reports it."""
        return self.seconds("recompute", "backward")

    @cached_property
    def forward_tp_s(self) -> float:
        """Exposed TP communication of the forward."""
        return self.by_stream("comm", "forward")

    @cached_property
    def backward_tp_s(self) -> float:
        """Exposed TP communication of recompute and backward."""
        return self.by_stream("comm", "recompute", "backward")

    @cached_property
    def recompute_s(self) -> float:
        return self.seconds("recompute")

    @cached_property
    def input_s(self) -> float:
        """An I pass: recompute and the backward without the weight gradients."""
        return sum(e.seconds for e in self.split if e.phase in ("recompute", "input"))

    @cached_property
    def weight_s(self) -> float:
        """A W pass: the weight-gradient GEMMs."""
        return sum(e.seconds for e in self.split if e.phase == "weight")

    @cached_property
    def input_tp_s(self) -> float:
        """Exposed TP communication of an I pass."""
        return sum(e.seconds for e in self.split if e.stream == "comm")

    def by_stream(self, stream: str, *phases: str) -> float:
        """Critical-path seconds of one stream's entries."""
        return sum(e.seconds for e in self.entries if e.stream == stream and e.phase in phases)


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
        if collective.op == "send_recv":
            return self.cost.network.p2p_s(collective.bytes, group.nodes == 1)
        return self.cost.network.group_s(collective.op, collective.bytes, group)

    def comm(self, op: Op, collective, phase: str, hidden_behind: float = 0.0) -> Entry:
        t = self.collective_s(collective)
        name = f"{op.name}: {collective.op.replace('_', '-')}"
        return Entry(name, phase, "comm", "comm", max(0.0, t - hidden_behind), t, "nccl")

    def ring_attention(self, op: Op, phase: str, backward: bool) -> list[Entry]:
        """Context-parallel attention over a ring of c steps (Transformer Engine 2.5
        AttnFuncWithCPAndKVP2P): step 0 is the causal block of the rank's own chunks; each later
        step is a non-causal block of half the rows or half the keys (s/c x s/2c), so every step
        is half an (s/c)² block. Forward, the next rank's K/V travels while a step computes (c -
        1 sends); backward, step 0 sends K/V, the middle steps K/V with the gradients gathered
        so far, the last step the finished dK/dV (2(c - 1) K/V-sized sends in all). A step
        shorter than the transfer alongside it waits for the difference: the ring's exposed
        time."""
        att, cm = op.attention, self.cost.compute
        diagonal = cm.flash_attention(
            Attention(att.batch_heads, att.seq_len, att.head_dim, True), backward
        )
        half = cm.flash_attention(
            Attention(att.batch_heads, att.seq_len, att.head_dim, False, att.seq_len // 2),
            backward,
        )
        c, kv = att.ring_steps, self.collective_s(att.ring)
        steps = [diagonal.seconds] + [half.seconds] * (c - 1)
        sends = [kv] + [2 * kv] * (c - 2) + [kv] if backward else [kv] * (c - 1)
        exposed = sum(max(0.0, send - block) for send, block in zip(sends, steps, strict=False))
        label = op.name + (" grad" if backward else "")
        source = diagonal.source
        return [
            Entry(label, phase, op.kind, "compute", sum(steps), sum(steps), source),
            Entry(
                f"{label}: cp ring send-recv",
                phase,
                "comm",
                "comm",
                exposed,
                sum(sends),
                "nccl",
            ),
        ]

    def compute(self, name: str, phase: str, kind: str, timed: Timed) -> Entry:
        return Entry(name, phase, kind, "compute", timed.seconds, timed.seconds, timed.source)

    def forward(self, op: Op, phase: str) -> list[Entry]:
        if op.kind == "comm":
            return [self.comm(op, op.fwd_comm, phase)] if op.fwd_comm else []
        if not op.fwd_bytes and not op.gemm and not op.attention:
            return []  # backward-only op
        cm = self.cost.compute
        if op.attention and op.attention.ring:
            return self.ring_attention(op, phase, backward=False)
        if op.attention:
            timed = cm.flash_attention(op.attention)
        else:
            timed = cm.gemm(op.gemm, FORWARD) if op.gemm else cm.memory_bound(op.fwd_bytes, op.kind)
        return [self.compute(op.name, phase, op.kind, timed)]

    def backward(self, op: Op, entry_comm: Op | None) -> list[Entry]:
        cm = self.cost.compute
        if op.kind == "comm":
            return (
                [self.comm(op, op.bwd_comm, "backward")]
                if op.bwd_comm and not op.overlaps_wgrad
                else []
            )
        if op.attention and op.attention.ring:
            return self.ring_attention(op, "backward", backward=True)
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
                    cm.memory_bound(op.bwd_bytes, op.kind, backward=True),
                )
            ]
        return self._linear_backward(op, entry_comm)

    def _linear_backward(self, op: Op, entry_comm: Op | None) -> list[Entry]:
        """dgrad (with SP's input all-gather alongside), then wgrad with the input-gradient
        collective. With the weight gradient deferred (a W pass of its own), nothing hides the
        collective: the input-gradient pass waits for all of it, and the wgrad runs alone later."""
        (dg, dl), (wg, wl) = gemm_grad_shapes(op.gemm)
        dgrad = self.cost.compute.gemm(dg, dl)
        wgrad = self.cost.compute.gemm(wg, wl)
        overlapped = (
            entry_comm is not None and entry_comm.bwd_comm is not None and entry_comm.overlaps_wgrad
        )
        if self.deferred_wgrad:
            out = []
            if overlapped and entry_comm.fwd_comm is not None:
                out += self.overlap(op.name + " dgrad", dgrad, entry_comm, entry_comm.fwd_comm)
            else:
                out.append(self.compute(op.name + " dgrad", "backward", "gemm", dgrad))
            if overlapped:
                out.append(self.comm(entry_comm, entry_comm.bwd_comm, "backward"))
            return out + [self.compute(op.name + " wgrad", "weight", "gemm", wgrad)]
        if not overlapped:
            return [
                self.compute(op.name + " dgrad", "backward", "gemm", dgrad),
                self.compute(op.name + " wgrad", "backward", "gemm", wgrad),
            ]
        out = []
        if entry_comm.fwd_comm is not None:  # SP: re-gather the sequence-sharded saved input
            out += self.overlap(op.name + " dgrad", dgrad, entry_comm, entry_comm.fwd_comm)
        else:
            out.append(self.compute(op.name + " dgrad", "backward", "gemm", dgrad))
        return out + self.overlap(op.name + " wgrad", wgrad, entry_comm, entry_comm.bwd_comm)

    def overlap(self, name: str, gemm: Timed, comm_op: Op, collective) -> list[Entry]:
        """A GEMM of W seconds alongside a collective of C seconds takes max(W + uC, C).

        While the collective runs it holds a share u of the SMs, so the GEMM runs at 1 - u; the
        collective is hidden when the GEMM outlasts it, else its remainder is exposed.
        """
        comm = self.comm(comm_op, collective, "backward")
        u, w, c = self.cost.hw.calibration.collective_sm_share, gemm.seconds, comm.busy_s
        compute_s = w + u * c if w >= c * (1 - u) else w / (1 - u)
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
    entries = [e for op in ops for e in p.forward(op, "forward")]
    rerun = (
        ops
        if parallel.recompute == "full"
        else [o for o in ops if o.selective]
        if parallel.recompute == "selective"
        else []
    )
    host_f, host_b = (us * 1e-6 for us in host_us(cost.hw.calibration, parallel.recompute))
    entries += _host_wait(entries, ("forward",), host_f)
    recompute = [e for op in rerun for e in p.forward(op, "recompute")]
    backward = recompute + _backward(ops, p)
    backward += _host_wait(backward, ("recompute", "backward"), host_b)
    split = _backward(ops, _Pass(cost, parallel, place, deferred_wgrad=True))
    split = recompute + [
        dataclasses.replace(e, phase="input") if e.phase == "backward" else e for e in split
    ]
    split += _host_wait(split, ("recompute", "input"), host_b)
    return LayerTime(tuple(entries + backward), tuple(split))


def _backward(ops: tuple[Op, ...], p: _Pass) -> list[Entry]:
    """The backward entries of the ops, last op first."""
    out = []
    for i in range(len(ops) - 1, -1, -1):
        before = ops[i - 1] if i > 0 and ops[i - 1].kind == "comm" else None
        out += p.backward(ops[i], before)
    return out
