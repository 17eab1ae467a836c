"""The MLP block: norm, first projection (gated or not), activation, second projection, residual."""

from simsp.model.blocks.shared import (
    inside,
    linear,
    post_norm,
    pre_norm,
    residual,
    residual_grad,
    tp_comms,
)
from simsp.model.ops import SP, TP, Dims, Op, Saved
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.units import BYTES_16BIT

ACTIVATIONS = {
    # kind: (forward bytes, backward bytes, saved input width), in units of one 16-bit [s, b, f]
    # tensor on one rank.
    # Megatron's fused bias-GeLU: read the input, write the output; backward reads the input and
    # the gradient, recomputes tanh, writes the gradient (4, with the bias-gradient read).
    "gelu": (2, 4, 1),
    # SwiGLU (Shazeer 2020): read gate and up (2f), write f; backward reads both and the
    # gradient, writes both gradients; saves its 2f-wide input (Megatron-Core `bias_swiglu_impl`).
    "swiglu": (3, 5, 2),
    # GeGLU (ibid.): the same gate with a (tanh) GeLU, the same tensors read and written.
    "geglu": (3, 5, 2),
    # relu(x)² (So et al. 2021): read, write; backward reads input and gradient, writes one.
    "squared_relu": (2, 3, 1),
}


def _activation(model: ModelSpec, dm: Dims) -> Op:
    fwd, bwd, width = ACTIVATIONS[model.mlp]
    sbf = BYTES_16BIT * dm.s * dm.b * dm.f
    name = {"gelu": "bias-gelu" if model.linear_bias("mlp") else "gelu"}.get(model.mlp, model.mlp)
    label = {"gelu": "GeLU", "swiglu": "SwiGLU", "geglu": "GeGLU", "squared_relu": "squared-ReLU"}[
        model.mlp
    ]
    return Op(
        name,
        model.mlp,
        "mlp",
        fwd_bytes=fwd * sbf / dm.t,
        bwd_bytes=bwd * sbf / dm.t,
        saves=(Saved(f"{label} input", width * sbf, TP),),
    )


def mlp_ops(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """Norm, first projection (2f wide when gated: "If this is a gated linear unit we double the
    output width", Megatron-Core mlp.py, arXiv 2002.05202), activation, second projection,
    residual. The paper's GeLU MLP names its GEMMs h->4h and 4h->h. The pre-norm, projections,
    activation and their TP collectives are the submodule the `mlp` recompute module
    checkpoints."""
    fc1, fc2 = ("h->4h", "4h->h") if model.mlp == "gelu" else ("fc1", "fc2")
    norm = pre_norm(model, 2, "mlp", dm)
    # the checkpoint keeps the submodule's input: Transformer Engine's layer spec fuses the
    # pre-norm into fc1 (pre_mlp_layernorm is an IdentityOp, gpt_layer_specs.py), so that is
    # the norm's input, and the norm re-runs with it; without a pre-norm, fc1's own input
    kept = tuple(s.name for op in norm for s in op.saves) or (f"{fc1} input",)
    return (
        *inside(("mlp",), norm, inputs=kept),
        residual_grad("residual 2", "mlp", dm.x / dm.seq),
        *inside(("mlp",), _mlp(model, parallel, dm, fc1, fc2), inputs=kept),
        *post_norm(model, 2, "mlp", dm),
        residual(model, 2, "mlp", dm),
    )


def _mlp(model: ModelSpec, parallel: ParallelSpec, dm: Dims, fc1: str, fc2: str) -> tuple[Op, ...]:
    """Megatron-Core's MLP submodule: TP entry, first projection, activation, second
    projection, TP exit."""
    sb, t, x, f = dm.s * dm.b, dm.t, dm.x, dm.f
    bias = model.linear_bias("mlp")
    return (
        tp_comms("mlp entry", "mlp", x, parallel, entry=True),
        linear(
            fc1,
            "mlp",
            sb,
            (2 if model.gated else 1) * f,
            dm.h,
            bias,
            True,
            Saved(
                f"{fc1} input",
                x,
                SP,
                recompute="" if model.norm_placement == "post" else "layernorm",
            ),
            t,
        ),
        _activation(model, dm),
        linear(
            fc2,
            "mlp",
            sb,
            dm.h,
            f,
            bias,
            False,
            Saved(f"{fc2} input", BYTES_16BIT * dm.s * dm.b * f, TP),
            t,
        ),
        tp_comms("mlp exit", "mlp", x, parallel, entry=False),
    )
