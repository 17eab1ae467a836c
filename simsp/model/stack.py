"""The model as a stack of layer kinds: what each layer of the model is, in order.

A layer kind is a `ModelSpec` with that layer's own settings resolved: a local layer keeps the
sliding window, a global one has none; a mixture-of-experts layer keeps its experts, a dense one
(DeepSeek-V3's first three, Llama-4's every other) has none. Layers of one kind share one op list
(`layer.build_layer`), so a model of identical layers has one kind and every sum over the stack
is n copies of one layer. Parameters, FLOPs and a pipeline chunk's time sum over the stack, or
over the slice of it a chunk holds. The embedding and the loss stay the ends of a stage
(blocks/ends.py).
"""

import dataclasses
from collections import Counter
from functools import lru_cache

from simsp.spec.model import ModelSpec

_DENSE = {"experts": 0, "moe_ffn": 0, "router_topk": 2, "shared_expert_ffn": 0}
"""A dense layer's expert settings: those of a model without experts."""


def kind(model: ModelSpec, layer: int) -> ModelSpec:
    """Layer `layer`'s kind: the model with that layer's window and experts resolved and the
    patterns that chose them cleared."""
    pattern = {"global_every": 0, "dense_layers": 0, "moe_every": 1}
    window = {} if model.local(layer) else {"sliding_window": 0, "attention_chunk": 0}
    experts = {} if model.moe_layer(layer) else _DENSE
    return dataclasses.replace(model, **pattern, **window, **experts)


@lru_cache(maxsize=4096)
def kinds(model: ModelSpec) -> tuple[ModelSpec, ...]:
    """One kind per layer, in order (a few distinct specs: local or global, dense or experts)."""
    return tuple(kind(model, i) for i in range(model.layers))


def uniform(model: ModelSpec) -> bool:
    """Whether every layer is of one kind: no window, every layer local (global_every 0, or
    fewer layers than it), or every layer global (global_every 1); and no experts, or experts in
    every layer. Read from the settings, not the kinds, as sweeps ask it of every
    configuration."""
    if not (model.experts or model.sliding_window or model.attention_chunk):
        return True
    every = model.global_every
    windows = not (model.window or model.chunk) or every in (0, 1) or model.layers < every
    experts = not model.experts or (model.dense_layers == 0 and model.moe_every == 1)
    return windows and experts


@lru_cache(maxsize=4096)
def counts(model: ModelSpec) -> tuple[tuple[ModelSpec, int], ...]:
    """The model's kinds and how many layers of each, in order of first use."""
    return tuple(Counter(kinds(model)).items())
