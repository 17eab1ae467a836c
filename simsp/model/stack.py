"""The model as a stack of layer kinds: what each layer of the model is, in order.

A layer kind is a `ModelSpec` with that layer's own settings resolved: a local layer keeps the
sliding window, a global one has none. Layers of one kind share one op list (`layer.build_layer`),
so a model of identical layers has one kind and every sum over the stack is n copies of one
layer. Parameters, FLOPs and a pipeline chunk's time sum over the stack, or over the slice of it
a chunk holds. The embedding and the loss stay the ends of a stage (blocks/ends.py).
"""

import dataclasses
from collections import Counter
from functools import lru_cache

from simsp.spec.model import ModelSpec


@lru_cache(maxsize=4096)
def kinds(model: ModelSpec) -> tuple[ModelSpec, ...]:
    """One kind per layer, in order (a tuple of at most two distinct specs: local, global)."""
    local = dataclasses.replace(model, global_every=0)
    whole = dataclasses.replace(model, sliding_window=0, global_every=0)
    return tuple(local if model.local(i) else whole for i in range(model.layers))


def uniform(model: ModelSpec) -> bool:
    """Whether every layer is of one kind: no window, every layer local (global_every 0, or
    fewer layers than it), or every layer global (global_every 1). Read from the settings, not
    the kinds, as sweeps ask it of every configuration."""
    every = model.global_every
    return not model.window or every in (0, 1) or model.layers < every


@lru_cache(maxsize=4096)
def counts(model: ModelSpec) -> tuple[tuple[ModelSpec, int], ...]:
    """The model's kinds and how many layers of each, in order of first use."""
    return tuple(Counter(kinds(model)).items())
