"""Data-parallel gradient reduction and parameter all-gather over an iteration: Megatron-Core's
buckets, each model chunk's reduction window, and when the last of them finishes.

Pure functions over the numbers the plan (sim/plan.py) holds; the engine and the closed
form (sim/closed_form.py) both call them, so the two tiers cannot drift apart.
"""

import math

from simsp.model.params import chunk_params
from simsp.spec import schedules as schedule
from simsp.spec.workload import Workload

MIN_BUCKET_PARAMS = 40_000_000
"""Megatron-LM training.py: `bucket_size = max(40000000, 1000000 * dp_size)` parameters, dp_size
counting the context-parallel ranks."""


def gradient_buckets(params: float, par, stage: int) -> int:
    """Buckets a stage's gradients are reduced in (Megatron-Core r0.13
    distributed_data_parallel.py): one per model chunk, unless the reduction overlaps backward,
    on the first stage, whose first chunk is cut into buckets of bucket_params (the others'
    reduction is off the critical path, their backward ending earlier)."""
    if not par.overlap_grad_reduce or stage != 0:
        return par.chunks
    return par.chunks - 1 + first_chunk_buckets(params / par.chunks, par)


def first_chunk_buckets(params: float, par) -> int:
    """Buckets of model chunk 0's `params` gradients: bucket_params each, default Megatron-Core's
    max(40M, 1M x dp x cp); one without overlap_grad_reduce."""
    if not par.overlap_grad_reduce:
        return 1
    size = par.bucket_params or max(MIN_BUCKET_PARAMS, 1_000_000 * par.dp * par.cp)
    return max(1, math.ceil(params / size))


def param_gather_exposed_s(
    gather_s: float, buckets: int, overlap: bool, forward_s: float, fill_s: float
) -> float:
    """The part of the parameter all-gather a stage waits for. Not overlapped: all of it, after
    the step. Overlapped (Megatron-Core --overlap-param-gather): the first bucket is issued by
    the next forward's pre-hook and waited for; each later one is prefetched while the one
    before is used, so only what the forward before it cannot cover (forward_s: the stage's
    forward work before its last bucket is needed) shows, less the pipeline fill a later stage
    waits anyway (fill_s)."""
    if not overlap or gather_s <= 0:
        return gather_s
    first = gather_s / buckets
    return max(0.0, first + max(0.0, gather_s - first - forward_s) - fill_s)


def gather_beside_forwards_s(
    gather_s: float, exposed_s: float, idle_s: float, sm_share: float
) -> float:
    """What a stage loses to its overlapped parameter all-gather: the exposed part, and the
    forwards beside the rest (all of it but what the stage waited or idled through in the
    pipeline fill, idle_s) running on the SMs the gather leaves, u x that part longer
    (shared_sms_done_s's rule)."""
    return exposed_s + sm_share * max(0.0, gather_s - exposed_s - idle_s)


def chunk_gradients(w: Workload, stage: int) -> tuple[tuple[float, int], ...]:
    """(share of the stage's gradient bytes, buckets) of each model chunk on a stage, by local
    chunk index. Megatron-Core wraps each chunk in its own DDP, whose reduction starts in that
    chunk's last backward; only chunk 0 is cut into buckets of bucket_params
    (megatron/training/training.py get_model: `disable_bucketing=(model_chunk_idx > 0)`, "since
    communication for these model chunks is overlapped with compute anyway")."""
    par = w.parallel
    shares = [
        chunk_params(w.model, par, schedule.virtual_stage(par.pp, stage, k, par.placement))
        for k in range(par.chunks)
    ]
    total = sum(shares)
    first = first_chunk_buckets(shares[0], par)
    return tuple(
        (n / total if total else 1 / par.chunks, first if k == 0 else 1)
        for k, n in enumerate(shares)
    )


def gradient_windows(c, stage: int, last_w: tuple, last_by_chunk) -> tuple:
    """(start, end, comm_s, buckets) of each model chunk's reduction on a stage, from the
    (start, end) of each chunk's last backward; one window, the stage's last backward, where
    the costs keep no per-chunk split."""
    dp = c.dp_s[stage]
    if not c.dp_chunks:
        return ((*last_w, dp, c.dp_buckets[stage]),)
    return tuple(
        (*last_by_chunk[k], dp * share, buckets)
        for k, (share, buckets) in enumerate(c.dp_chunks[stage])
    )


def chunked_gradients_done_s(now: float, windows, overlap: bool, sm_share: float = 0.0) -> float:
    """When a stage's gradient reduction has finished, its model chunks reducing one after
    another on one stream: windows = (backward_start, backward_end, comm_s, buckets) of each
    chunk's last backward. Not overlapped: all of it after now. Overlapped: a chunk's buckets
    are ready evenly over its last backward and each goes as soon as it is ready and the one
    before it has gone, so after each chunk the stream is free at max(t + comm_s, end + c,
    start + d + comm_s), c = comm_s / buckets, d = (end - start) / buckets; the compute beside
    it ran on the SMs the reduction left (shared_sms_done_s)."""
    comm_s = sum(w[2] for w in windows)
    if not overlap:
        return now + comm_s
    if len(windows) == 1:  # the usual case, without the sort
        start, end, comm, k = windows[0]
        t = max(now, end + comm / k, start + (end - start) / k + comm)
        return shared_sms_done_s(now, t, comm_s, sm_share)
    t = -math.inf
    for start, end, comm, k in sorted(windows, key=lambda w: w[1]):
        c, d = comm / k, (end - start) / k
        t = max(t + comm, end + c, start + d + comm)
    return shared_sms_done_s(now, max(now, t), comm_s, sm_share)


def shared_sms_done_s(now: float, comm_end: float, comm_s: float, sm_share: float) -> float:
    """When compute that ended at `now` and a collective that ended at `comm_end` are both done,
    once the compute is charged for the SMs the collective held beside it: while an NCCL kernel
    runs it holds a share u of the SMs (calibration.collective_sm_share, one CTA a channel a
    whole SM), so the compute it overlapped took u x (the collective's seconds before `now`)
    longer (cost.overlap.shared_sms_s's W + uC); the collective's own end does not move."""
    hidden = max(0.0, comm_s - max(0.0, comm_end - now))
    return max(comm_end, now + sm_share * hidden)


def gradients_done_s(
    now: float,
    backward_start: float,
    backward_end: float,
    comm_s: float,
    buckets: int,
    overlap: bool,
    sm_share: float = 0.0,
) -> float:
    """When a stage's DP gradient all-reduce has finished.

    Not overlapped: it starts once the stage is otherwise done (now). Overlapped: the last
    backward makes its buckets ready evenly over its span and each is all-reduced, one at a
    time, as soon as it is ready, so the last ends at max(backward_end + c, backward_start + d +
    comm_s) with c = comm_s / buckets and d = (backward_end - backward_start) / buckets, the
    backward beside it slowed by the SMs it holds (sm_share, shared_sms_done_s).
    """
    return chunked_gradients_done_s(
        now, ((backward_start, backward_end, comm_s, buckets),), overlap, sm_share
    )


def interleaved_gather_exposed_s(
    gathers_s: tuple[float, ...], forwards_s: tuple[float, ...], p: int, stage: int, fill_s: float
) -> float:
    """What a stage waits for the distributed optimizer's overlapped, aligned parameter
    all-gather under the interleaved schedule (Megatron-Core r0.13, --overlap-param-gather with
    its default --align-param-gather), gathers_s and forwards_s by local chunk: chunk k's
    all-gather and one of its forwards.

    Launches (megatron/core/pipeline_parallel/schedules.py @c550cf6, core_v0.13.0,
    forward_backward_pipelining_with_interleaving): chunks 0 and 1 before the stage's first
    forward (lines 873-875: "Synchronize params for first two model chunks"), at once on every
    stage, so the pipeline fill (fill_s) covers them; chunk k >= 2 at the start of the stage's
    forward j with j + stage the first microbatch of chunk k - 1 (forward_step_helper, lines
    999-1011), forwards going through the chunks in groups of p (schedule.interleaved_action),
    i.e. forward (k - 1) p - stage. Each launch gathers all of the chunk's bucket groups
    (distributed_data_parallel.py start_param_sync, lines 546-547) on the one DP communicator,
    so the gathers run one after another; a chunk's first-used bucket group is launched last
    (its buckets hold the parameters in reverse, param_and_grad_buffer.py line 588), so its
    first forward (forward k p) waits for all of its gather (the forward pre-hook,
    distributed_data_parallel.py lines 466-482, with skip_next_bucket_dispatch). Forwards are
    timed back to back from fill_s: a wait for a previous stage's output beyond the fill, which
    would hide some of a gather, is left out, and so is the delay a wait passes on downstream."""
    v = len(gathers_s)
    launch_at = {(k - 1) * p - stage: k for k in range(2, v)}
    stream, ready = 0.0, {}
    for k in range(min(2, v)):
        stream += gathers_s[k]
        ready[k] = stream
    clock, waited = fill_s, 0.0
    for j in range((v - 1) * p + 1):  # the stage's forwards up to the last chunk's first
        if j in launch_at:
            stream = max(stream, clock) + gathers_s[launch_at[j]]
            ready[launch_at[j]] = stream
        if j % p == 0:  # chunk j // p's first forward
            wait = max(0.0, ready[j // p] - clock)
            clock, waited = clock + wait, waited + wait
        clock += forwards_s[j // p]
    return waited
