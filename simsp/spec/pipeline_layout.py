"""Megatron-Core's `pipeline_model_parallel_layout`: which layers each virtual stage holds, as the
DeepSeek-V3 recipes write it (megatron/core/transformer/pipeline_parallel_layer_layout.py
@d98e8a64dd, PipelineParallelLayerLayout.from_str): virtual stages separated by `|`, each a run
of E (the embedding), t (a transformer layer), m (a multi-token-prediction layer) and L (the loss),
`x*n` repeating a letter and `(...)*n` a group, e.g. "Et|(tt|)*30mL" (1 + 30 x 2 layers over 32
virtual stages, MTP and loss on the last).
"""

import re
from dataclasses import dataclass
from functools import lru_cache

LETTERS = frozenset("EtmL")
_GROUP = re.compile(r"\(([^()]*)\)\*(\d+)")
_REPEAT = re.compile(r"([EtmL])\*(\d+)")


@dataclass(frozen=True)
class Stage:
    """One virtual stage of a layout."""

    layers: int
    """Transformer layers (t)."""
    mtp: int = 0
    """Multi-token-prediction layers (m)."""
    embedding: bool = False
    loss: bool = False


@lru_cache(maxsize=256)
def parse(layout: str) -> tuple[Stage, ...] | None:
    """The virtual stages of a layout string, first to last; None where it is malformed."""
    text = layout.replace(" ", "")
    for _ in range(16):  # nested groups, innermost first
        expanded = _GROUP.sub(lambda g: g.group(1) * int(g.group(2)), text)
        if expanded == text:
            break
        text = expanded
    text = _REPEAT.sub(lambda g: g.group(1) * int(g.group(2)), text)
    if not text or set(text) - LETTERS - {"|"}:
        return None
    return tuple(Stage(s.count("t"), s.count("m"), "E" in s, "L" in s) for s in text.split("|"))
