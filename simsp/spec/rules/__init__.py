"""The rules that bind a workload's model, batch and parallel plan together, each a (key, value,
holds, rule) row checked in order; `validate` raises the first broken one as an InputError
naming the file, the key, the value and the rule.

One module a concept, each yielding its rows: `choices` (named settings, size bounds),
`recompute`, `layer` (heads, windows, latent attention), `tensor` (tp, sequence parallelism),
`context` (cp, rank order), `experts`, `data_parallel` (FSDP, optimizer shards), `pipeline`
(chunks, stage splits, the batch a schedule needs). A new rule is a row in its concept's
module; `_rules` below fixes the order in which they are checked.
"""

from simsp.errors import InputError
from simsp.spec.rules import (
    choices,
    context,
    data_parallel,
    experts,
    layer,
    pipeline,
    recompute,
    tensor,
)
from simsp.spec.rules.choices import KERNEL_NAME, MAX_LAYERS
from simsp.spec.rules.pipeline import schedule_rule
from simsp.spec.workload import Workload

__all__ = ["KERNEL_NAME", "MAX_LAYERS", "first_broken", "schedule_rule", "validate"]


def _rules(w: Workload, batch: bool = True):
    """(key, value, holds, rule) for every cross-field rule, in the order they are checked;
    without the batch's rules (pipeline.batch_rules) where `batch` is false."""
    yield from choices.bound_rules(w)
    yield from recompute.mode_rules(w)
    yield from choices.rules(w)
    yield from layer.head_rules(w)
    yield from tensor.rules(w)
    yield from context.rules(w)
    yield from layer.window_rules(w)
    yield from layer.mla_rules(w)
    yield from experts.rules(w)
    yield from data_parallel.fsdp_rules(w)
    yield from data_parallel.optimizer_rules(w)
    yield from tensor.sequence_rules(w)
    yield from pipeline.rules(w)
    if batch:
        yield from pipeline.batch_rules(w)
    yield from recompute.rules(w)


def first_broken(w: Workload, batch: bool = True) -> tuple | None:
    """(key, value, rule) of the first broken rule, None where every rule holds; without the
    batch's rules (pipeline.batch_rules) where `batch` is false."""
    for key, value, holds, rule in _rules(w, batch):
        if not holds:
            return key, value, rule
    return None


def validate(w: Workload, source: str, batch: bool = True) -> Workload:
    """Raise InputError naming source, key, value and rule for the first broken rule; without
    the batch's rules (pipeline.batch_rules) where `batch` is false."""
    broken = first_broken(w, batch)
    if broken is not None:
        raise InputError(source, *broken)
    return w
