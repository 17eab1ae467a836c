"""Cost model: ops, layers and whole-stage work turned into seconds on a given hardware file.

* `compute`: GEMMs from measured per-shape tables (roofline fallback) and memory-bound kernels
  from bytes over achieved bandwidth;
* `network`: collectives and point-to-point sends from nccl-tests tables by size, group and link;
* `layer_time`: one layer's forward, backward and recompute as per-op entries (the records:
  `layer_entries`), with the backward overlap of TP communication and weight-gradient GEMMs
  (`overlap`) and the context-parallel ring (`ring_attention`);
* `stage_time`: the work outside the layers: embedding, logits and loss, optimizer, gradients.
"""

from functools import lru_cache

from simsp.cost.compute import ComputeModel
from simsp.cost.network import NetworkModel


class CostModel:
    """Compute and network costs of one hardware file, built once and shared.

    The lookups are pure functions of their (hashable) arguments, so each is memoised: a plan
    or a sweep asks for the same few shapes and message sizes many times.
    """

    def __init__(self, hw):
        self.hw = hw
        self.compute = ComputeModel(hw)
        self.network = NetworkModel(hw)
        _memoise(self.compute, ("gemm", "memory_bound", "flash_attention"))
        _memoise(self.network, ("collective_s", "p2p_s"))


def _memoise(obj, methods: tuple[str, ...]) -> None:
    """Replace the named bound methods of obj by memoised ones."""
    for name in methods:
        setattr(obj, name, lru_cache(maxsize=None)(getattr(obj, name)))


_CACHE: dict = {}


def cost_model(hw) -> CostModel:
    """The cost model of a hardware spec, read from its calibration files once per process."""
    if hw not in _CACHE:
        _CACHE[hw] = CostModel(hw)
    return _CACHE[hw]
