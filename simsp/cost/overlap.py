"""Communication beside computation: how long a collective and the kernels it overlaps take
together, and what of the collective is left exposed. Pure formulas; layer_time.py applies them
to a layer's ops.

Four mechanisms: a collective sharing the SMs with a GEMM (Megatron's async TP all-reduce and
SP re-gather, Transformer Engine's bulk overlap); a GEMM split into chunks with the transfers
between them (TE userbuffers' ring exchange and pipelined reduce-scatter); context
parallelism's ring, whose steps each wait for the send beside the step before; and a mixture of
experts' forward of one microbatch beside the backward of another (EP overlap).
"""

RS_SPLITS = 4
"""GEMM chunks of a pipelined reduce-scatter overlap (TE 2.5 module/base.py
get_default_config: num_splits 4 for the pipeline method)."""


def split_overlap_ag_s(gemm_s: float, comm_s: float, t: int) -> float:
    """Exposed seconds of an all-gather overlapped with the GEMM that consumes it by ring
    exchange (TE 2.5 comm_gemm_overlap.cpp CommOverlapP2PBase::split_overlap_ag): the GEMM is
    split into t chunks (num_splits = tp size); while it computes on the chunk a rank holds, that
    chunk goes to the next rank and the next one comes from the previous: t - 1 transfers of 1/t
    of the gathered input each, on copy engines (use_ce, so the GEMM keeps all its SMs). Each of
    the first t - 1 steps lasts the longer of a GEMM chunk (g/t) and a transfer (c/(t - 1), c the
    whole all-gather's time), the last chunk computes alone: the pair takes
    g/t + (t - 1) max(g/t, c/(t - 1)), of which (t - 1) max(0, c/(t - 1) - g/t) exceeds the GEMM."""
    if t < 2:
        return comm_s
    return (t - 1) * max(0.0, comm_s / (t - 1) - gemm_s / t)


def split_overlap_rs_s(
    gemm_s: float, comm_s: float, splits: int = RS_SPLITS, sm_share: float = 0.0
) -> tuple[float, float]:
    """(GEMM seconds, exposed seconds) of a GEMM whose output is reduce-scattered by the
    pipeline method (TE 2.5 comm_gemm_overlap.cpp CommOverlapBase::split_overlap_rs): the GEMM
    is split into n = `splits` chunks along its output features; the reduce-scatter of chunk
    i - 1, an SM kernel on the comm stream, runs while GEMM chunk i computes, and the last
    chunk's goes alone. With set_sm_margin (the default for this method) every GEMM chunk runs on
    the SMs the kernel leaves, so the GEMM takes g' = g / (1 - u) with u = `sm_share`. A
    two-stage pipeline of equal chunks: g'/n + (n - 1) max(g'/n, c/n) + c/n, of which
    (n - 1) max(0, c/n - g'/n) + c/n exceeds g'."""
    g, c = gemm_s / (1 - sm_share), comm_s / splits
    return g, (splits - 1) * max(0.0, c - g / splits) + c


def shared_sms_s(gemm_s: float, comm_s: float, sm_share: float) -> float:
    """The GEMM's seconds beside a collective of `comm_s` that holds a share u of the SMs while
    it runs, the GEMM running at 1 - u meanwhile: W + uC when the GEMM outlasts the collective,
    else all of it at 1 - u, W / (1 - u). The pair takes the longer of that and C."""
    if gemm_s >= comm_s * (1 - sm_share):
        return gemm_s + sm_share * comm_s
    return gemm_s / (1 - sm_share)


def ring_exposed_s(steps: list[float], sends: list[float]) -> float:
    """Seconds a ring of compute steps waits for its sends: send i travels beside step i and
    step i + 1 needs it, so each step shorter than its send exposes the difference (Transformer
    Engine 2.5 AttnFuncWithCPAndKVP2P: `req.wait()` before each step's compute)."""
    return sum(max(0.0, send - step) for send, step in zip(sends, steps, strict=False))


def paired_1f1b_s(f: list[float], b: list[float]) -> float:
    """The span of one layer's forward beside another microbatch's backward of the same layer,
    in schedule_layer_1f1b's order on two streams (Megatron-Core
    models/common/model_chunk_schedule_plan.py, --overlap-moe-expert-parallel-comm):
    f = forward attn, dispatch, mlp, combine, post_combine and b = backward post_combine,
    combine, mlp, dispatch, attn, in seconds, computation and all-to-alls alternating. Compute
    stream B.post_combine, F.attn, B.mlp, F.mlp, B.attn, F.post_combine; communication stream
    B.combine, F.dispatch, B.dispatch, F.combine; each after what it reads. The experts' weight
    gradients, which delay_wgrad_compute runs beside B.dispatch, are counted in B.mlp (a little
    pessimistic)."""
    fa, fd, fm, fc, fp = f
    bp, bc, bm, bd, ba = b
    compute = bp + fa
    fa_end = compute
    comm = bp + bc  # B.combine after B.post_combine
    bc_end = comm
    comm = max(comm, fa_end) + fd  # F.dispatch after F.attn
    fd_end = comm
    compute = max(compute, bc_end) + bm  # B.mlp after B.combine
    bm_end = compute
    compute = max(compute, fd_end) + fm  # F.mlp after F.dispatch
    fm_end = compute
    comm = max(comm, bm_end) + bd  # B.dispatch after B.mlp
    bd_end = comm
    comm = max(comm, fm_end) + fc  # F.combine after F.mlp
    compute = max(compute, bd_end) + ba  # B.attn after B.dispatch
    return max(compute, comm) + fp  # F.post_combine after F.combine
