"""torchtitan's per-op selective activation checkpointing (parallel.recompute: op).

torchtitan wraps each transformer block in torch.utils.checkpoint with a policy over the ATen
ops its forward runs (pytorch/torchtitan@b5bcd76 torchtitan/distributed/activation_checkpoint.py
`_get_custom_policy`, lines 255-280; the same rule at 3f20451 parallelisms/
parallelize_llama.py:253-258): the outputs of ops on a save list (matrix multiplies, the SDPA
kernels, reduce-scatters) are kept, every other op is re-run in backward, and of the matrix
multiplies every second one (in forward order) is re-run too (`mm_count % 2 == 0`:
PREFER_RECOMPUTE). Llama's block runs its linears as wq, wk, wv, wo, w1, w3, w2
(models/llama3/model.py): wk, wo and w3 are re-run, and every norm, rotary embedding,
activation and residual add.

simsp's ops fuse wq, wk and wv into one `qkv` GEMM and w1 with w3 into `fc1`: their re-run
shares are the key columns of qkv and half of a gated fc1. What is kept per layer: the block's
input (checkpoint's own), the outputs of wq, wv, SDPA (with its log-sum-exp), w1 and w2.
"""

import dataclasses

from simsp.model.ops import SP, TP, Dims, Op, Saved
from simsp.spec.model import ModelSpec
from simsp.units import BYTES_16BIT, BYTES_FP32

NOT_RERUN = ("amax", "flash_attention", "attention_gemm", "residual_grad")
"""Op kinds the policy keeps: attention (its SDPA output is saved) and backward-only work.
Of the collectives only reduce-scatters are on the save list: a forward all-gather (sequence
parallelism's at a TP region's entry) is re-run (`_rerun_collective`)."""


def _share(op: Op, model: ModelSpec, dm: Dims) -> float:
    """The share of a GEMM op's forward the policy re-runs: wk's columns of qkv, wo whole, w3's
    half of a gated fc1; none of w2."""
    if op.name == "qkv":
        return dm.g / (dm.a + 2 * dm.g)
    if op.name == "projection":
        return 1.0
    if op.name == "fc1" and model.gated:
        return 0.5
    return 0.0


def tagged(ops: tuple[Op, ...], model: ModelSpec, dm: Dims) -> tuple[Op, ...]:
    """The layer's ops with what the policy re-runs marked (`recompute="op"`, and for a GEMM
    the share of its columns, `rerun_share`)."""
    out = []
    for op in ops:
        if op.kind == "comm":
            share = 1.0 if _rerun_collective(op) else 0.0
        elif op.kind in NOT_RERUN:
            share = 0.0
        else:
            share = _share(op, model, dm) if op.gemm else 1.0
        out.append(dataclasses.replace(op, recompute="op", rerun_share=share) if share else op)
    return tuple(out)


def _rerun_collective(op: Op) -> bool:
    """A collective whose forward the policy re-runs: an all-gather (funcol
    all_gather_into_tensor is not on the save list; reduce_scatter_tensor is)."""
    return op.fwd_comm is not None and op.fwd_comm.op == "all_gather"


def rerun(op: Op) -> Op:
    """What the policy re-runs of a marked op: all of it, or a GEMM's share of columns."""
    if op.gemm is None or op.rerun_share >= 1.0:
        return op
    gemm = dataclasses.replace(op.gemm, n=max(1, round(op.gemm.n * op.rerun_share)))
    return dataclasses.replace(op, gemm=gemm, fwd_bytes=op.fwd_bytes * op.rerun_share)


def kept(model: ModelSpec, dm: Dims) -> tuple[Saved, ...]:
    """What a layer keeps under per-op SAC, one microbatch: its input, wq's and wv's outputs,
    SDPA's output and log-sum-exp, w1's and w2's outputs."""
    sb = dm.s * dm.b
    return (
        Saved("layer input", dm.x, SP),
        Saved("wq output", dm.heads_bytes(dm.a), TP),
        Saved("wv output", dm.heads_bytes(dm.g), TP),
        Saved("attention output", dm.heads_bytes(dm.a), TP),
        Saved("log-sum-exp", BYTES_FP32 * sb * dm.a, TP),
        Saved("w1 output", BYTES_16BIT * sb * dm.f, TP),
        Saved("w2 output", dm.x, SP),
    )
