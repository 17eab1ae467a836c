"""A layer's memory-bound ops as the run's stack executes them (training.elementwise).

simsp's ops carry the bytes a fused kernel moves (Transformer Engine, Apex and Megatron's
fusions: one read of each input, one write of each output). Run as eager torch ops, the same
op is several kernels, each reading and writing its whole tensor, some in fp32 where the model
code upcasts; under torch.compile Inductor fuses each chain of pointwise and reduction ops
between two GEMMs into one generated kernel, moving what the fused kernel moves
(pytorch/torchtitan@b5bcd76 torchtitan/distributed/compile.py: each TransformerBlock compiled
with fullgraph; GEMMs stay cuBLAS, SDPA stays its own kernel).

EAGER holds, per op kind, the bytes the eager ops move as a multiple of the fused op's bytes and
how many kernels move them, counted from the model code op by op (each count below). The cost
model (cost/compute.py memory_bound) times them at the hardware's measured eager rate of the
kind where it has one (Liger-Kernel's eager-against-fused measurements, hardware/calibration/
sources/liger-kernel/, or `simsp profile memory`), else kernel by kernel on the element-wise
curve, which tests/test_torch_kernel_sources.py shows is 1.2-2.9x optimistic against those
measurements. Kinds not listed run as one torch kernel moving the fused bytes (residual adds,
torch's own layer_norm and GeLU kernels).
"""

import dataclasses
from dataclasses import dataclass

from simsp.model.ops import Op


@dataclass(frozen=True)
class Eager:
    """An op kind as eager torch ops: bytes as a multiple of the fused op's, and kernels."""

    fwd_factor: float
    fwd_kernels: int
    bwd_factor: float
    bwd_kernels: int
    source: str


EAGER = {
    # RMSNorm with an fp32 upcast (torchtitan@3f20451 torchtitan/models/norms.py RMSNorm, as
    # Hugging Face's LlamaRMSNorm), bytes per element. Forward: x.float() 2 + 4, pow(2) 4 + 4,
    # mean 4, x * rsqrt 4 + 4, type_as 4 + 2, * weight 2 + 2 = 36 against the fused 2 + 2; five
    # kernels (the [s, 1] rsqrt is too small to count). Backward by autograd: * weight 2 + 2 and
    # its weight gradient 2 + 2, type_as 2 + 4, x * rsqrt 4 + 4 and its rsqrt gradient 4 + 4,
    # mean 4, pow 4 + 4 + 4, the two gradients of x summed 4 + 4 + 4, back to bf16 4 + 2 = 64
    # against the fused 2 + 2 + 2; nine kernels.
    "rmsnorm": Eager(
        36 / 4,
        5,
        64 / 6,
        9,
        "pytorch/torchtitan@3f20451 torchtitan/models/norms.py RMSNorm._norm",
    ),
    # Rotary embedding in complex form on q and k (torchtitan models/common/rope.py:
    # view_as_complex(q.float()), * freqs_cis, view_as_real, type_as): per element .float()
    # 2 + 4, complex multiply 4 + 4, back 4 + 2 = 20 against the fused 2 + 2, three kernels
    # each for q and k; backward the same three in reverse.
    "rope": Eager(
        20 / 4,
        6,
        20 / 4,
        6,
        "pytorch/torchtitan@b5bcd76 torchtitan/models/common/rope.py apply_rotary_emb",
    ),
    # w2(F.silu(w1(x)) * w3(x)) (torchtitan feed_forward.py): silu 2 + 2 and the product
    # 2 + 2 + 2 over the f-wide tensors = 10 against the fused 6 (read gate and up, write);
    # backward: the product's two gradients 6 each and silu's 6 = 18 against the fused 10.
    "swiglu": Eager(
        10 / 6, 2, 18 / 10, 3, "pytorch/torchtitan@b5bcd76 torchtitan/models/common/feed_forward.py"
    ),
    "geglu": Eager(10 / 6, 2, 18 / 10, 3, "the same as swiglu with F.gelu for F.silu"),
    # relu(x) then square (2 + 2 each); backward: pow and relu gradients (2 + 2 + 2 each).
    "squared_relu": Eager(8 / 4, 2, 12 / 6, 2, "torch.relu(x).square(), autograd's gradients"),
}
"""Per op kind, what eager torch moves beyond the fused kernel, and in how many kernels."""


def elementwise_layer(ops: tuple[Op, ...], mode: str) -> tuple[Op, ...]:
    """The layer's ops with their memory-bound kernels as `mode` runs them: fused and compiled
    as built (Inductor's fusions move the fused bytes), eager per EAGER."""
    if mode != "eager":
        return ops
    return tuple(eager(op) for op in ops)


def eager(op: Op) -> Op:
    """One op as eager torch ops (unchanged for kinds EAGER does not list)."""
    e = EAGER.get(op.kind)
    if e is None:
        return op
    return dataclasses.replace(
        op,
        fwd_bytes=op.fwd_bytes * e.fwd_factor,
        bwd_bytes=op.bwd_bytes * e.bwd_factor,
        fwd_kernels=e.fwd_kernels,
        bwd_kernels=e.bwd_kernels,
    )
