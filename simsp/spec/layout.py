"""Where a run's parallel groups sit on the machine: the parallel layout.

Megatron-Core numbers the GPUs of a run by walking its parallel dimensions in one order,
`order="tp-cp-ep-dp-pp"` by default (parallel_state.initialize_model_parallel feeding its
RankGenerator): a rank's tp coordinate varies fastest, its pp coordinate slowest. A group of
one dimension (or of several, as the gradient reduction's dp x cp) is the set of ranks that
differ only in those coordinates. How many of its ranks share a node decides whether a
collective runs on NVLink, on InfiniBand or hierarchically (cost/network.py), so this is the
one place that knows it; the cost model asks `Layout.group(name)`.

Notation as in spec/model.py: t = tp, c = cp, d = dp, p = pp.

The expert layers of a mixture of experts are laid over the same GPUs in a second order, as
Megatron-Core's second RankGenerator does ("MoE parallel folding", arXiv 2504.14960): the same
order string with tp read as etp (expert tensor parallel), cp as 1, ep as ep and dp as edp
(expert data parallel), pp shared. A group names dense dimensions (tp, cp, ep, dp, pp) or expert
ones (etp, ep, edp, pp), not both; `Layout.group` walks the order its names belong to. The
dense order's ep is 1 (Megatron-Core's decoder RankGenerator is built with ep=1).
"""

import math
from dataclasses import dataclass
from functools import lru_cache

from simsp.spec.parallel import DIMENSIONS, EXPERT_DIMENSIONS, ParallelSpec

EXPERT_ONLY = frozenset(("etp", "ep", "edp"))
"""Dimensions a group has only in the expert layout (the dense order's ep is always 1)."""
GRADIENT_GROUP = ("dp", "cp")
"""The ranks that reduce each other's gradients: the data-parallel replicas and, since every
context-parallel rank saw different tokens of the same sequences, its CP peers too (Megatron-Core
`get_data_parallel_group(with_context_parallel=True)`)."""


@dataclass(frozen=True)
class Group:
    """One parallel group as one of its ranks sees it."""

    name: str
    """A dimension (tp, cp, ep, dp, pp) or several joined by '-' ('dp-cp')."""
    size: int
    ranks_per_node: int
    """Members of the group on each node it spans (all of them: the layout is regular)."""

    @property
    def nodes(self) -> int:
        """Nodes the group spans."""
        return self.size // self.ranks_per_node


@dataclass(frozen=True)
class Layout:
    """The sizes and node placement of every group of one run."""

    order: tuple[str, ...]
    sizes: tuple[int, ...]
    """Size of each dimension of `order`."""
    gpus_per_node: int
    expert_sizes: tuple[int, ...] = ()
    """Size of each dimension of `expert_order` (the same order, expert names); empty: all 1
    but edp and pp, as a dense model has them."""

    @property
    def expert_order(self) -> tuple[str, ...]:
        return tuple(EXPERT_DIMENSIONS[d] for d in self.order)

    def expert(self) -> "Layout":
        """The expert layers' layout over the same GPUs (module docstring)."""
        return Layout(self.expert_order, self.expert_sizes, self.gpus_per_node)

    def size(self, dim: str) -> int:
        return self.sizes[self.order.index(dim)]

    def stride(self, dim: str) -> int:
        """Rank distance between neighbours along one dimension."""
        return math.prod(self.sizes[: self.order.index(dim)])

    def group(self, name: str) -> Group:
        """The group over the '-'-joined dimensions in `name`, e.g. 'tp', 'dp-cp' or, of the
        expert layout, 'edp' or 'etp-ep'."""
        dims = tuple(name.split("-"))
        if EXPERT_ONLY.isdisjoint(dims):
            return _group(self, dims)
        if not self.expert_sizes or not all(d in self.expert_order for d in dims):
            raise KeyError(f"{name} mixes dense and expert dimensions, or names neither")
        return _group(self.expert(), dims)

    @property
    def pp_neighbours_share_node(self) -> bool:
        """Whether a stage's pipeline neighbour is on its own node (its sends use NVLink)."""
        return self.stride("pp") < self.gpus_per_node

    def placement(self, *names: str) -> "Placement":
        """The named groups and the pipeline neighbours' node alone: what a layer's or an end
        stage's cost depends on, small enough to memoise costs on (a sweep over dp and pp then
        costs each layer once)."""
        return _placement(self, names)


@dataclass(frozen=True)
class Placement:
    """Some groups of a layout, with the same `group` and `pp_neighbours_share_node`."""

    groups: tuple[Group, ...]
    pp_neighbours_share_node: bool

    def group(self, name: str) -> Group:
        for g in self.groups:
            if g.name == name:
                return g
        raise KeyError(f"{name} is not among this placement's groups")


@lru_cache(maxsize=4096)
def _placement(layout: Layout, names: tuple[str, ...]) -> Placement:
    """Layout.placement, once per layout (a sweep asks it of every configuration)."""
    return Placement(tuple(layout.group(n) for n in names), layout.pp_neighbours_share_node)


@lru_cache(maxsize=4096)
def _group(layout: Layout, dims: tuple[str, ...]) -> Group:
    """Count the members of rank 0's group that sit on node 0 by walking their coordinates:
    at most the group's size, once per layout (cached), so it does not grow the simulation."""
    strides = [layout.stride(d) for d in dims]
    sizes = [layout.size(d) for d in dims]
    members = [0]
    for stride, size in zip(strides, sizes, strict=True):
        members = [
            r + i * stride
            for r in members
            for i in range(size)
            if r + i * stride < layout.gpus_per_node
        ]
    return Group("-".join(dims), math.prod(sizes), len(members))


def layout(parallel: ParallelSpec, gpus_per_node: int) -> Layout:
    """The run's layout on nodes of `gpus_per_node` GPUs, in the spec's rank order."""
    order = tuple(parallel.order.split("-"))
    expert = tuple(1 if d == "cp" else parallel.size(EXPERT_DIMENSIONS[d]) for d in order)
    dense = tuple(1 if d == "ep" else parallel.size(d) for d in order)
    return Layout(order, dense, gpus_per_node, expert)


LAYER_GROUPS = ("tp", "cp", "ep", "etp", "etp-ep")
"""The groups one layer's collectives run over."""


def layer_placement(parallel: ParallelSpec, gpus_per_node: int) -> Placement:
    """What one layer's cost depends on of the layout: its groups (LAYER_GROUPS)."""
    return layout(parallel, gpus_per_node).placement(*LAYER_GROUPS)


__all__ = [
    "DIMENSIONS",
    "GRADIENT_GROUP",
    "LAYER_GROUPS",
    "Group",
    "Layout",
    "Placement",
    "layer_placement",
    "layout",
]
