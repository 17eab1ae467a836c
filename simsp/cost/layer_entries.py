"""The per-op record of one layer's passes (Entry) and the layer's whole record (LayerTime): the
plain data cost/layer_time.py builds and the schedules, the engine and the reports read."""

from dataclasses import dataclass
from functools import cached_property

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
    paired: tuple[Entry, ...] = ()
    """The same layer's forward and backward when each runs beside another microbatch's pass
    of this layer (EP all-to-all overlap, in a schedule's overlapped pairs); empty where that
    changes nothing, the entries then standing for both."""

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
    def paired_forward_s(self) -> float:
        """The forward in an overlapped pair (`paired`)."""
        if not self.paired:
            return self.forward_s
        return sum(e.seconds for e in self.paired if e.phase == "forward")

    @cached_property
    def paired_backward_s(self) -> float:
        """The backward (recompute included) in an overlapped pair (`paired`)."""
        if not self.paired:
            return self.backward_s
        return sum(e.seconds for e in self.paired if e.phase in ("recompute", "backward"))

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

    def exposed_share(self, kind: str, *phases: str) -> float:
        """The share of the exposed communication (stream comm) in `phases` that is of one kind
        (ep_comm: a mixture of experts' token dispatch), 0 where none is exposed."""
        entries = self.split if "input" in phases or "weight" in phases else self.entries
        comm = [e for e in entries if e.stream == "comm" and e.phase in phases]
        total = sum(e.seconds for e in comm)
        return sum(e.seconds for e in comm if e.kind == kind) / total if total else 0.0

    def busy_s(self, kind: str, *phases: str) -> float:
        """Stream-busy seconds of one kind's entries (cp_comm: the context-parallel exchanges)."""
        return sum(e.busy_s for e in self.entries if e.kind == kind and e.phase in phases)

    def by_stream(self, stream: str, *phases: str) -> float:
        """Critical-path seconds of one stream's entries."""
        return sum(e.seconds for e in self.entries if e.stream == stream and e.phase in phases)
