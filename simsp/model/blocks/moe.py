"""The mixture-of-experts block, in place of the MLP in a layer with experts, as Megatron-Core
runs it (megatron/core/transformer/moe/ @d98e8a64dd: moe_layer.py, router.py, token_dispatcher.py,
experts.py TEGroupedMLP, shared_experts.py):

    norm -> router (fp32 GEMM h x E, top-k) -> permute -> dispatch -> grouped fc1 -> activation
         -> grouped fc2 -> combine -> unpermute (x probs) -> (+ shared expert) -> residual

Notation (spec/model.py): T = s b / t tokens a rank routes (sequence-sharded: Megatron-Core needs
SP with tp > 1 and experts), E routed experts, k = router_topk, f_e one expert's inner size,
ep and etp the expert layout (spec/layout.py), E / ep local experts. Balanced, each rank of the
expert layout computes T k etp rows (its ETP peers' tokens gathered): those its ep peers route
to its experts, T k on average. `parallel.moe_load` scales them to the busiest rank's.

Dispatchers (moe_dispatcher): alltoall sends each routed copy to its expert's rank and back
(an all-to-all over ep of T k h, then an all-gather / reduce-scatter over etp, and with more
than one local expert a copy that sorts the received rows by expert, undone before combine);
allgather gathers every token of the etp x ep group (T h etp ep) and reduce-scatters the outputs;
flex (DeepEP, HybridEP) is an all-to-all of tokens, each sent once to each rank it has experts on
and across the network once per destination node (`Collective.node_dedup`; cost/network.py
prices it), then permuted by the receiver (DeepEP) or inside the dispatch kernel (HybridEP).
"""

import dataclasses
import math

from simsp.model.blocks.mlp import ACTIVATIONS
from simsp.model.blocks.shared import (
    inside,
    linear,
    post_norm,
    pre_norm,
    residual,
    residual_grad,
    tp_comms,
)
from simsp.model.ops import EXPERTS, SP, TP, WHOLE, Collective, Dims, Gemm, Op, Saved, Weight
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.units import BYTES_16BIT, BYTES_FP32, BYTES_MASK


def moe_ops(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """The block's ops on one rank for one microbatch (module docstring). Router to unpermute,
    shared experts included, is the MoE layer the `moe` recompute module checkpoints (its
    dispatch and combine re-run with it), the shared experts the `shared_experts` one."""
    x = dm.x
    tokens = dm.s * dm.b // dm.seq  # T: the tokens this rank routes
    return (
        *pre_norm(model, 2, "mlp", dm),
        residual_grad("residual 2", "mlp", x / dm.seq),
        *inside(
            ("moe",),
            (
                *_router(model, dm, tokens),
                *_routed_experts(model, parallel, dm, tokens),
                *inside(("shared_experts",), _shared_expert(model, parallel, dm), SUBMODULE_INPUTS),
            ),
            SUBMODULE_INPUTS,
        ),
        *post_norm(model, 2, "mlp", dm),
        residual(model, 2, "mlp", dm),
    )


SUBMODULE_INPUTS = ("router input", "shared fc1 input")
"""The norm's output, saved by the router or the shared expert's first linear: the input the
`moe` and `shared_experts` recompute modules' checkpoints keep."""


def _router(model: ModelSpec, dm: Dims, tokens: int) -> tuple[Op, ...]:
    """The router's logits, a GEMM of T x E x h replicated over TP (router.py TopKRouter, its
    weight `E x h` in fp32 with --moe-router-dtype fp32: priced at the BF16 rate, a small GEMM),
    and its score, top-k and probability kernels: read the E logits, write the scores and
    the top-k probabilities and indices (fp32), twice the bytes backward."""
    e = model.experts
    score = 3 * BYTES_FP32 * tokens * e + 2 * BYTES_FP32 * tokens * model.router_topk
    return (
        Op(
            "router",
            "gemm",
            "mlp",
            gemm=Gemm(tokens, e, dm.h),
            # the norm's output, saved once: by the shared expert's first linear where there is one
            saves=()
            if model.shared_expert_ffn
            else (Saved("router input", dm.x, SP, recompute="layernorm"),),
            weights=(Weight("router", e * dm.h, WHOLE),)
            + ((Weight("router bias", e, WHOLE),) if model.linear_bias("mlp") else ()),
            keeps_precision=True,
        ),
        Op(
            "router top-k",
            "router",
            "mlp",
            fwd_bytes=score,
            bwd_bytes=2 * score,
            saves=(
                Saved("router probabilities", BYTES_FP32 * tokens * e, WHOLE),
                Saved("routing map", BYTES_MASK * tokens * e, WHOLE),
            ),
        ),
    )


def destinations(slots: int, k: int) -> float:
    """Expected distinct slots (ranks or nodes, holding equal shares of the experts) a token's k
    routed copies reach, the experts drawn uniformly (with replacement, E taken large):
    slots (1 - (1 - 1 / slots)^k). DeepEP and HybridEP send a token once to each (arXiv
    2412.19437 section 3.2.2; DeepEP get_dispatch_layout's is_token_in_rank)."""
    return slots * (1.0 - (1.0 - 1.0 / slots) ** k) if slots > 1 else 1.0


def _routed_experts(
    model: ModelSpec, parallel: ParallelSpec, dm: Dims, tokens: int
) -> tuple[Op, ...]:
    """Permute, dispatch, the local experts' grouped GEMMs and activation, combine, unpermute.
    The flex dispatcher sends tokens, not copies, and permutes on the receiving rank (deepep) or
    inside its dispatch and combine kernels (hybridep)."""
    k, h = model.router_topk, dm.h
    bias = model.linear_bias("mlp")  # gpt-oss's experts carry biases
    ep, etp = parallel.ep, parallel.size("etp")
    local = model.experts // ep
    rows = tokens * k * etp * parallel.moe_load  # the busiest rank's routed copies
    per_expert = max(1, math.ceil(rows / local))
    f = model.expert_ffn // etp
    gated = model.gated
    copies = BYTES_16BIT * tokens * k * h  # this rank's routed copies, [T k, h]
    received = BYTES_16BIT * rows * h
    fwd_act, bwd_act, width = ACTIVATIONS[model.mlp]
    act = BYTES_16BIT * rows * f
    fc1 = Gemm(per_expert, (2 if gated else 1) * f, h, batch=local, grouped=True)
    fc2 = Gemm(per_expert, h, f, batch=local, grouped=True)
    fc1_width = (2 if gated else 1) * model.expert_ffn
    expert_w = (
        (Weight("experts fc1", model.experts * fc1_width * h, EXPERTS),)
        + ((Weight("experts fc1 bias", model.experts * fc1_width, EXPERTS),) if bias else ()),
        (Weight("experts fc2", model.experts * model.expert_ffn * h, EXPERTS),)
        + ((Weight("experts fc2 bias", model.experts * h, EXPERTS),) if bias else ()),
    )
    flex = parallel.moe_dispatcher == "flex"
    # the tokens a permute reads: this rank's own, or under flex those it received, one a
    # (token, rank) pair of its ep peers' tokens
    inputs = BYTES_16BIT * tokens * h * (destinations(ep, k) if flex else 1)
    permute = Op(
        # gather each token's k copies, grouped by expert (moe_utils.permute)
        "permute",
        "permute",
        "mlp",
        fwd_bytes=inputs + copies,
        bwd_bytes=inputs + copies,
    )
    unpermute = Op(
        # scale each copy by its probability and sum a token's copies
        "unpermute",
        "permute",
        "mlp",
        fwd_bytes=copies + inputs,
        bwd_bytes=2 * copies + inputs,
    )
    fused = flex and parallel.moe_flex_backend == "hybridep"
    before, after = ((), (permute,)) if flex else ((permute,), ())
    return (
        *before,
        *_dispatch(model, parallel, dm, tokens, copies, received, "dispatch"),
        *(() if fused else after),
        Op(
            "experts fc1",
            "gemm",
            "mlp",
            gemm=fc1,
            weights=expert_w[0],
            saves=(Saved("experts fc1 input", received, WHOLE),),
        ),
        Op(
            f"experts {model.mlp}",
            model.mlp,
            "mlp",
            fwd_bytes=fwd_act * act,
            bwd_bytes=bwd_act * act,
            saves=(Saved(f"experts {model.mlp} input", width * act, WHOLE),),
            recompute="moe_act",
        ),
        Op(
            "experts fc2",
            "gemm",
            "mlp",
            gemm=fc2,
            weights=expert_w[1],
            saves=(Saved("experts fc2 input", act, WHOLE, recompute="moe_act"),),
        ),
        *(() if fused or not flex else (unpermute,)),
        *_dispatch(model, parallel, dm, tokens, copies, received, "combine"),
        *(() if flex else (unpermute,)),
    )


def _dispatch(
    model: ModelSpec,
    parallel: ParallelSpec,
    dm: Dims,
    tokens: int,
    copies: float,
    received: float,
    which: str,
) -> tuple[Op, ...]:
    """The collectives that carry tokens to their experts (`which` dispatch) or back (combine),
    forward and backward (a dispatch's backward is a combine's forward, and the other way)."""
    ep, etp = parallel.ep, parallel.size("etp")
    if parallel.moe_dispatcher == "allgather":
        gathered = BYTES_16BIT * tokens * dm.h * etp * ep
        ag, rs = (
            Collective("all_gather", gathered, "etp-ep"),
            Collective("reduce_scatter", gathered, "etp-ep"),
        )
        fwd, bwd = (ag, rs) if which == "dispatch" else (rs, ag)
        return (
            Op(f"{which} ({parallel.moe_dispatcher})", "comm", "mlp", fwd_comm=fwd, bwd_comm=bwd),
        )
    a2a = Collective(
        "all_to_all",
        copies * parallel.moe_load,
        "ep",
        node_dedup=model.router_topk if parallel.moe_dispatcher == "flex" else 0,
    )
    ops = [Op(f"{which} all-to-all", "comm", "mlp", fwd_comm=a2a, bwd_comm=a2a)]
    if etp > 1:  # ETP peers gather each other's received tokens, reduce-scatter the outputs
        ag = Collective("all_gather", received, "etp")
        rs = Collective("reduce_scatter", received, "etp")
        fwd, bwd = (ag, rs) if which == "dispatch" else (rs, ag)
        ops.append(Op(f"{which} etp", "comm", "mlp", fwd_comm=fwd, bwd_comm=bwd))
    if parallel.moe_dispatcher == "alltoall" and model.experts // ep > 1:
        # the received chunks come [source rank][local expert]; the grouped GEMM wants them by
        # local expert, and combine restores the order (token_dispatcher.py
        # MoEAlltoAllTokenDispatcher sort_chunks_by_idxs, "permutation 2", @60e039626)
        name = "sort by local expert" if which == "dispatch" else "restore rank order"
        ops.append(Op(name, "sort_chunks", "mlp", fwd_bytes=2 * received, bwd_bytes=2 * received))
    return tuple(ops if which == "dispatch" else reversed(ops))


def _shared_expert(model: ModelSpec, parallel: ParallelSpec, dm: Dims) -> tuple[Op, ...]:
    """The shared experts: a dense, tensor-parallel MLP of shared_expert_ffn over every token
    (shared_experts.py SharedExpertMLP), its own TP entry and exit."""
    if not model.shared_expert_ffn:
        return ()
    sb, t, x, f = dm.s * dm.b, dm.t, dm.x, model.shared_expert_ffn
    fwd_act, bwd_act, width = ACTIVATIONS[model.mlp]
    act = BYTES_16BIT * dm.s * dm.b * f
    ops = (
        tp_comms("shared expert entry", "mlp", x, parallel, entry=True),
        linear(
            "shared fc1",
            "mlp",
            sb,
            (2 if model.gated else 1) * f,
            dm.h,
            False,
            True,
            Saved("shared fc1 input", x, SP, recompute="layernorm"),
            t,
        ),
        Op(
            f"shared {model.mlp}",
            model.mlp,
            "mlp",
            fwd_bytes=fwd_act * act / t,
            bwd_bytes=bwd_act * act / t,
            saves=(Saved(f"shared {model.mlp} input", width * act, TP),),
        ),
        linear(
            "shared fc2", "mlp", sb, dm.h, f, False, False, Saved("shared fc2 input", act, TP), t
        ),
        tp_comms("shared expert exit", "mlp", x, parallel, entry=False),
    )
    if not parallel.moe_shared_expert_overlap:
        return ops
    # token_dispatcher.py MoEAlltoAllTokenDispatcher: pre_forward_comm and
    # linear_fc1_forward_and_act after the dispatch all-to-all is issued, linear_fc2_forward and
    # post_forward_comm after the combine's, all on SharedExpertMLP.stream
    return tuple(
        dataclasses.replace(op, beside="dispatch" if i < 3 else "combine")
        for i, op in enumerate(ops)
    )
