"""What a pipeline schedule is made of: actions on one stage, in order.

The kinds form an open set (torch.distributed.pipelining's names): F forward, B full backward
(input and weight gradients together, recompute included), I the input-gradient part of a
backward (what the previous stage waits for), W its weight-gradient part (what nothing waits
for, so a schedule may defer it into a bubble).
"""

from dataclasses import dataclass, field

KINDS = ("F", "B", "I", "W")
GRADIENT_KINDS = ("B", "I")
"""Kinds that send a gradient to the previous virtual stage."""


@dataclass(frozen=True, slots=True)
class Action:
    """One unit of work on one pipeline stage: one kind of pass of one microbatch chunk."""

    kind: str
    """F, B, I or W (see KINDS)."""
    microbatch: int
    """Microbatch index, 0-based."""
    chunk: int = 0
    """Model chunk on this stage, 0-based; which virtual stage it is follows the schedule's
    placement (looped or V)."""
    overlapped: bool = field(default=False, compare=False)
    """One half of a forward and a backward (of other microbatches) the stage runs as one
    overlapped pair, the forward listed first (Megatron-Core's combined 1F1B under EP
    all-to-all overlap; DualPipe's overlapped chunks): each takes its chunk's paired seconds
    (sim/walk.py). Not part of the action's identity: dependencies and equality ignore it."""


Actions = tuple[Action, ...]
"""One pipeline stage's actions, in the order the stage runs them."""
Schedule = tuple[Actions, ...]
"""One `Actions` list per pipeline stage, stage 0 first."""
Dependency = tuple[int, Action]
"""(stage, action) that has to finish first."""


def check_positive(**values: int) -> None:
    """Raise ValueError unless every named value is an int >= 1."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r}: must be an integer >= 1")
