"""One transformer layer's forward, recompute and backward as per-op entries on one TP rank.

Forward runs the op list in order; TP/SP collectives block the compute stream, as Megatron-LM's
forward does. Backward runs it in reverse: each linear layer's data-gradient GEMM, then its
weight-gradient GEMM. The collective on the gradient of a column-parallel layer's input runs
alongside that layer's weight-gradient GEMM (Megatron's async TP all-reduce, paper §6.2); under
SP the all-gather of the saved sequence-sharded input runs alongside the data-gradient GEMM
(paper §4.2.2). With tp_comm_overlap (Transformer Engine's userbuffers) the collectives that
block the stream overlap the GEMM beside them instead: the all-gather before a column-parallel
GEMM and the all-gather of a row-parallel layer's output gradient by ring exchange
(`split_overlap_ag_s`), the reduce-scatter after a row-parallel GEMM pipelined with it
(`split_overlap_rs_s`); the backward's other two are the bulk overlaps above. An entry's
`seconds` is what it adds to the critical path, so the entries of a pass sum to the pass exactly;
`busy_s` is how long it occupies its stream.
"""

import dataclasses

from simsp.cost import CostModel
from simsp.cost.layer_entries import Entry, LayerTime
from simsp.cost.op_entries import OpEntries
from simsp.cost.overlap import (
    paired_1f1b_s,
    shared_sms_s,
)
from simsp.model.blocks import checkpoint
from simsp.model.layer import Op, reruns
from simsp.spec.layout import Placement
from simsp.spec.parallel import ParallelSpec


def host_us(cal, recompute: str) -> tuple[float, float]:
    """(forward, backward) host time of one layer, microseconds (profiled: `simsp profile host`)."""
    extra = {"full": cal.host_recompute_full_us, "selective": cal.host_recompute_selective_us}.get(
        recompute, 0.0
    )
    return cal.host_forward_us, cal.host_backward_us + extra


def _host_wait(entries: list[Entry], phases: tuple[str, ...], host_s: float) -> list[Entry]:
    """The GPU waits for the host where issuing a pass takes longer than running it: the pass
    takes max(device time, host time), and the difference shows as an idle entry."""
    device_s = sum(e.seconds for e in entries if e.phase in phases)
    if host_s <= device_s:
        return []
    return [
        Entry(
            "waiting for the host to issue work",
            phases[-1],
            "host",
            "compute",
            host_s - device_s,
            host_s - device_s,
            "host",
        )
    ]


def layer_time(
    ops: tuple[Op, ...], cost: CostModel, parallel: ParallelSpec, place: Placement
) -> LayerTime:
    """Forward, recompute and backward entries of one layer for one microbatch; `place` holds
    the groups its collectives run over (layout.LAYER_GROUPS)."""
    p = OpEntries(cost, parallel, place)
    entries = _forward(ops, p, "forward")
    rerun = (
        ops
        if parallel.recompute == "full"
        else tuple(checkpoint.rerun(o) for o in ops if reruns(o, parallel))
        if parallel.recompute in ("selective", "op")
        else ()
    )
    host_f, host_b = (us * 1e-6 for us in host_us(cost.hw.calibration, parallel.recompute))
    entries += _host_wait(entries, ("forward",), host_f)
    recompute = _forward(rerun, p, "recompute")
    backward = recompute + _backward(ops, p)
    backward += _host_wait(backward, ("recompute", "backward"), host_b)
    split = _backward(ops, OpEntries(cost, parallel, place, deferred_wgrad=True))
    split = recompute + [
        dataclasses.replace(e, phase="input") if e.phase == "backward" else e for e in split
    ]
    split += _host_wait(split, ("recompute", "input"), host_b)
    paired = ()
    if parallel.moe_a2a_overlap:  # alone in warm-up and cool-down, paired in between
        share = cost.hw.calibration.collective_sm_share
        forward, back = _beside_other_microbatch(entries, backward, share)
        paired = tuple(forward + back)
    return LayerTime(tuple(entries + backward), tuple(split), paired)


def _beside_other_microbatch(
    forward: list[Entry], backward: list[Entry], sm_share: float
) -> tuple[list[Entry], list[Entry]]:
    """A mixture of experts' all-to-alls under EP overlap (Megatron-Core
    --overlap-moe-expert-parallel-comm with --delay-wgrad-compute, combined_1f1b.py): in the
    steady state the forward of one microbatch runs layer by layer beside the backward of
    another, on a compute and a communication stream, in the order of
    fine_grained_schedule.schedule_layer_1f1b: compute B.post_combine, F.attn, B.mlp, F.mlp,
    B.attn, F.post_combine; communication B.combine, F.dispatch, B.dispatch, F.combine; each
    waiting for what it reads (`_paired_layer_s`). The pair takes that schedule's span, its
    compute slowed by the SMs the all-to-alls hold while both streams run; what it adds to the
    layer's compute shows as one entry at the end of the backward. These are LayerTime.paired:
    a schedule's overlapped pairs (Action.overlapped) take them, its warm-up forwards and
    cool-down backwards the layer alone (all-to-alls exposed), as are the zero-bubble split's
    I and W passes, which no schedule pairs."""
    ep = [e for e in forward + backward if e.kind == "ep_comm"]
    if not ep:
        return forward, backward
    comm_s = sum(e.busy_s for e in ep)
    compute_s = sum(e.seconds for e in forward + backward if e.kind != "ep_comm")
    span = _paired_layer_s(forward, backward)
    if span is None:  # not the dispatch / combine pattern: every all-to-all beside all compute
        span = max(shared_sms_s(compute_s, comm_s, sm_share), comm_s)
    else:
        span += sm_share * max(0.0, compute_s + comm_s - span)

    def hidden(entries):
        return [dataclasses.replace(e, seconds=0.0) if e.kind == "ep_comm" else e for e in entries]

    extra = span - compute_s
    phase = backward[-1].phase if backward else "backward"
    wait = Entry(
        "all-to-alls beside the other microbatch", phase, "ep_comm", "comm", extra, extra, "nccl"
    )
    return hidden(forward), hidden(backward) + ([wait] if extra > 0 else [])


def _runs(entries: list[Entry]) -> list[float]:
    """The entries as alternating runs of computation (every entry but the all-to-alls, as
    long as it holds the compute stream) and of expert-parallel communication (as long as it
    runs), computation first."""
    runs = [0.0]
    for e in entries:
        comm = e.kind == "ep_comm"
        if comm != (len(runs) % 2 == 0):
            runs.append(0.0)
        runs[-1] += e.busy_s if comm else e.seconds
    return runs


def _paired_layer_s(forward: list[Entry], backward: list[Entry]) -> float | None:
    """overlap.paired_1f1b_s of the layer's computation and all-to-all runs (forward attn |
    dispatch | mlp | combine | post_combine, backward post_combine | combine | mlp | dispatch |
    attn); None for another pattern."""
    f, b = _runs(forward), _runs(backward)
    if len(f) != 5 or len(b) != 5:
        return None
    return paired_1f1b_s(f, b)


def _neighbours(ops: tuple[Op, ...], i: int) -> tuple[Op | None, Op | None]:
    """The ops before and after ops[i], None past either end."""
    return (ops[i - 1] if i > 0 else None, ops[i + 1] if i + 1 < len(ops) else None)


def _forward(ops: tuple[Op, ...], p: OpEntries, phase: str) -> list[Entry]:
    """The forward (or recompute) entries of the ops, in order; ops on a side stream beside an
    all-to-all with it (`_beside`)."""
    out, side = [], {}
    for i, op in enumerate(ops):
        entries = p.forward(op, phase, *_neighbours(ops, i))
        (side.setdefault(op.beside, []) if op.beside else out).extend(entries)
    return _beside(out, side, p.cost.hw.calibration.collective_sm_share)


def _backward(ops: tuple[Op, ...], p: OpEntries) -> list[Entry]:
    """The backward entries of the ops, last op first; side-stream ops as in `_forward`."""
    out, side = [], {}
    for i in range(len(ops) - 1, -1, -1):
        entries = p.backward(ops[i], *_neighbours(ops, i))
        (side.setdefault(ops[i].beside, []) if ops[i].beside else out).extend(entries)
    return _beside(out, side, p.cost.hw.calibration.collective_sm_share)


def _beside(entries: list[Entry], side: dict[str, list[Entry]], sm_share: float) -> list[Entry]:
    """Ops run on a side stream beside the `which all-to-all` of a pass (the shared experts
    under moe_shared_expert_overlap): the pair takes the longer of the all-to-all and the ops,
    slowed by the SMs the all-to-all holds (overlap.shared_sms_s); the ops keep their seconds
    and the all-to-all adds what the pair takes beyond them. Entries of another phase (a
    deferred weight gradient) run in turn, as do ops with no all-to-all of that name."""
    for which, extra in side.items():
        prefix = f"{which} all-to-all: "
        at = [i for i, e in enumerate(entries) if e.op.startswith(prefix)]
        if not at:
            entries += extra
            continue
        comm = entries[at[-1]]
        paired = [e for e in extra if e.phase == comm.phase]
        work_s = sum(e.seconds for e in paired)
        span = max(shared_sms_s(work_s, comm.busy_s, sm_share), comm.busy_s)
        entries[at[-1] : at[-1] + 1] = [dataclasses.replace(comm, seconds=span - work_s), *paired]
        entries += [e for e in extra if e.phase != comm.phase]
    return entries
