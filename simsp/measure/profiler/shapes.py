"""The GEMMs a workload makes the cost model look up, by shape and layout (no torch here).

One row per distinct (m, n, k, batch, layout), named by the first op that needs it:

* each linear layer (kind `gemm`): forward TN, dgrad NN and wgrad NT, as
  `simsp.cost.compute.gemm_grad_shapes` derives them;
* each attention GEMM (kind `attention_gemm`, batched over b x a / t heads): forward and both
  backward GEMMs of `attention_grad_shapes`, all looked up in the TN layout, as `layer_time` does;
* the logits GEMM of the last stage, C[s*b, v/t] = X[s*b, h] Eᵀ, in its three layouts.
"""

from dataclasses import dataclass

from simsp.cost.compute import DGRAD, FORWARD, WGRAD, attention_grad_shapes, gemm_grad_shapes
from simsp.model.layer import Gemm, build_layer
from simsp.spec.workload import Workload

GRID_GPU = (256, 1024, 4096, 16384)
"""Grid values of m, n and k on a GPU: factor-4 steps, so every shape between is within a factor
of 2 of a grid point in each dimension (the GemmTable's coverage rule)."""
GRID_CPU = (64, 256, 1024)
"""The same on a CPU, where large fp32 GEMMs take seconds each."""


@dataclass(frozen=True)
class Shape:
    """One GEMM to time."""

    name: str
    """The op (and pass) that needs it, e.g. 'qkv dgrad'."""
    gemm: Gemm
    layout: str
    """TN (forward), NN (dgrad) or NT (wgrad)."""

    @property
    def key(self) -> tuple[int, int, int, int, str]:
        return (self.gemm.m, self.gemm.n, self.gemm.k, self.gemm.batch, self.layout)


def linear_shapes(name: str, g: Gemm) -> list[Shape]:
    """Forward, dgrad and wgrad of a linear layer."""
    (dg, dl), (wg, wl) = gemm_grad_shapes(g)
    return [Shape(name, g, FORWARD), Shape(name + " dgrad", dg, dl), Shape(name + " wgrad", wg, wl)]


def attention_shapes(name: str, g: Gemm) -> list[Shape]:
    """Forward and the two backward GEMMs of a batched attention GEMM (all TN, as layer_time
    asks)."""
    g1, g2 = attention_grad_shapes(g)
    return [
        Shape(name, g, FORWARD),
        Shape(name + " grad 1", g1, FORWARD),
        Shape(name + " grad 2", g2, FORWARD),
    ]


def logits_gemm(w: Workload) -> Gemm:
    """The output layer on one TP rank: m = s*b, n = padded vocab / tp, k = hidden (the GEMM
    stage_time.output_s costs)."""
    m, t = w.model, w.parallel.tp
    return Gemm(m.seq_len * w.training.micro_batch, m.padded_vocab(t) // t, m.hidden)


def workload_shapes(w: Workload) -> list[Shape]:
    """Every distinct GEMM of one layer and the logits, in op order."""
    shapes = []
    for op in build_layer(w.model, w.parallel, w.training.micro_batch):
        if op.kind == "gemm":
            shapes += linear_shapes(op.name, op.gemm)
        elif op.kind == "attention_gemm":
            shapes += attention_shapes(op.name, op.gemm)
    shapes += linear_shapes("logits", logits_gemm(w))
    return unique(shapes)


def grid_shapes(values=GRID_GPU) -> list[Shape]:
    """Every (m, n, k) of `values`^3 in the three layouts, batch 1."""
    return [
        Shape(f"grid {layout}", Gemm(m, n, k), layout)
        for layout in (FORWARD, DGRAD, WGRAD)
        for m in values
        for n in values
        for k in values
    ]


def unique(shapes: list[Shape]) -> list[Shape]:
    """The first of each (m, n, k, batch, layout)."""
    seen, out = set(), []
    for s in shapes:
        if s.key not in seen:
            seen.add(s.key)
            out.append(s)
    return out
