"""Plain trace records: the contract between the engine and everything that presents results.

The engine keeps them as columns (sim/columns.py: SpanTable, MemoryTable), which read as
sequences of these; reports, timelines and Perfetto traces read them.
"""

from dataclasses import dataclass

STREAMS = ("compute", "tp_comm", "ep_comm", "cp_comm", "fsdp_comm", "pp_comm", "dp_comm")
KINDS = (
    "forward",
    "backward",
    "backward_input",
    "backward_weight",
    "recompute",
    "tp_comm",
    "pp_send",
    "pp_recv",
    "dp_allreduce",
    "param_gather",
    "cp_comm",
    "ep_comm",
    "fsdp_comm",
    "optimizer",
    "embedding",
    "loss",
)


@dataclass(frozen=True)
class Span:
    """Something that occupied one stream of one stage's representative rank."""

    stage: int
    stream: str
    kind: str
    name: str
    start_s: float
    dur_s: float
    microbatch: int = -1
    """-1 where not tied to a microbatch (DP all-reduce, optimizer)."""
    chunk: int = -1
    first_layer: int = -1
    """Global index of the first transformer layer the span covers; -1 for none."""
    layers: int = 0

    @property
    def end_s(self) -> float:
        return self.start_s + self.dur_s


@dataclass(frozen=True)
class MemorySample:
    """HBM held by one stage's rank from time_s on."""

    stage: int
    time_s: float
    bytes: float
