"""One simulated iteration as a Chrome Trace Event Format file (ui.perfetto.dev, chrome://tracing,
speedscope).

One process per pipeline stage (pid = stage, named 'stage N'), one thread per stream that has
spans (compute, tp_comm, ep_comm, cp_comm, fsdp_comm, pp_comm, dp_comm, named so), a complete event
(`ph: 'X'`, microseconds) per span with its kind as category and its microbatch, chunk and
layers as args, and an 'HBM' counter (`ph: 'C'`, GiB) per stage from the memory samples. Where
the op-level expansion is small enough for the timeline page, it is here too: each chunk's ops
nest under it on the compute thread and the TP and CP collectives fill their threads.

Times sit on a grid of 1/8 microsecond (125 ns): every ts and dur is exact both as a decimal (whole
nanoseconds, for Perfetto) and as a binary double (for viewers that add ts + dur in floating
point, like speedscope and chrome://tracing), so an event that ends where the next begins meets
it exactly, and ops never poke out of their chunk. The same result always gives the same bytes.
"""

import json

from simsp.present.timeline import (
    BAR_BUDGET,
    embedding_share,
    expand_span,
    expanded_count,
    side_spans,
)
from simsp.sim.trace import STREAMS, Span
from simsp.textfile import GENERATOR_KEY
from simsp.units import GIB

TIDS = {stream: i + 1 for i, stream in enumerate(STREAMS)}
"""Thread id of each stream (1-based; tid 0 carries process-level records)."""


TICKS_PER_US = 8
"""Time grid: 1/8 us is a whole number of nanoseconds and a power-of-two fraction."""


def _tick(t_s: float) -> int:
    return round(t_s * 1e6 * TICKS_PER_US)


def _tid(stream: str) -> int:
    return TIDS.get(stream, len(TIDS) + 1)


def _complete(s: Span, start: int, end: int) -> dict:
    """A complete event for a span between two grid instants."""
    return {
        "name": s.name,
        "cat": s.kind,
        "ph": "X",
        "pid": s.stage,
        "tid": _tid(s.stream),
        "ts": start / TICKS_PER_US,
        "dur": max(0, end - start) / TICKS_PER_US,
        "args": {
            "microbatch": s.microbatch,
            "chunk": s.chunk,
            "first_layer": s.first_layer,
            "layers": s.layers,
        },
    }


def _span_events(result, with_ops: bool) -> list[tuple]:
    """(sort key, event) for every span and, with_ops, its ops clamped inside it."""
    plan, share = result.plan, embedding_share(result) if with_ops else 0.5
    out = []
    spans = list(result.sim.spans)  # the engine's columns read once, as Span records
    beside = side_spans(plan, spans, skip=("cp_comm",) if with_ops else ())
    for s in spans + beside:  # with ops, those draw the CP exchanges
        lo, hi = _tick(s.start_s), _tick(s.end_s)
        out.append(((s.stage, _tid(s.stream), lo, -(hi - lo)), _complete(s, lo, hi)))
        if (
            with_ops
            and s.stream == "compute"
            and s.kind in ("forward", "backward")
            and s.layers > 0
        ):
            for op in expand_span(plan, s, share):
                a, b = _tick(op.start_s), _tick(op.end_s)
                if op.stream == "compute":
                    a, b = min(max(a, lo), hi), max(min(b, hi), lo)
                out.append(((op.stage, _tid(op.stream), a, -(b - a)), _complete(op, a, b)))
    return out


def _counter_events(result) -> list[tuple]:
    """An 'HBM' counter per stage, one value per instant (the last sample at an instant wins)."""
    last: dict[tuple[int, int], float] = {}
    for m in result.sim.memory:
        last[(m.stage, _tick(m.time_s))] = m.bytes
    return [
        (
            (stage, 0, t, 0),
            {
                "name": "HBM",
                "ph": "C",
                "pid": stage,
                "tid": 0,
                "ts": t / TICKS_PER_US,
                "args": {"GiB": round(b / GIB, 6)},
            },
        )
        for (stage, t), b in sorted(last.items())
    ]


def _metadata(stages: list[int], threads: list[tuple[int, int]]) -> list[dict]:
    names = {tid: stream for stream, tid in TIDS.items()}
    out = []
    for p in stages:
        out.append(
            {
                "name": "process_name",
                "ph": "M",
                "pid": p,
                "tid": 0,
                "ts": 0,
                "args": {"name": f"stage {p}"},
            }
        )
        out.append(
            {
                "name": "process_sort_index",
                "ph": "M",
                "pid": p,
                "tid": 0,
                "ts": 0,
                "args": {"sort_index": p},
            }
        )
    for p, tid in threads:
        out.append(
            {
                "name": "thread_name",
                "ph": "M",
                "pid": p,
                "tid": tid,
                "ts": 0,
                "args": {"name": names.get(tid, f"stream {tid}")},
            }
        )
        out.append(
            {
                "name": "thread_sort_index",
                "ph": "M",
                "pid": p,
                "tid": tid,
                "ts": 0,
                "args": {"sort_index": tid},
            }
        )
    return out


def trace_events(result) -> list[dict]:
    """Metadata first, then complete events per (stage, thread) in time order, then counters."""
    with_ops = (
        result.plan.layer is not None
        and expanded_count(result.plan, result.sim.spans) <= BAR_BUDGET
    )
    spans = sorted(_span_events(result, with_ops), key=lambda kv: kv[0])
    counters = _counter_events(result)
    threads = sorted({(e["pid"], e["tid"]) for _, e in spans})
    stages = sorted({p for p, _ in threads} | {e["pid"] for _, e in counters})
    return _metadata(stages, threads) + [e for _, e in spans] + [e for _, e in counters]


def chrome_trace_json(result) -> str:
    """The trace file's text:
    {"otherData": {"generator": "simsp", ...}, "traceEvents": [...], "displayTimeUnit": "ms"},
    otherData first, so simsp knows its own trace from its first bytes (textfile.OWN_MARKS)."""
    from simsp.present.report import describe

    w, hw = result.workload, result.hardware
    doc = {
        "otherData": {
            GENERATOR_KEY: "simsp",
            "run": describe(w, hw),
            "workload": w.name,
            "hardware": hw.name,
            "iteration_time_s": result.iteration_time_s,
            "hbm_capacity_gib": result.memory.capacity_bytes / GIB,
        },
        "traceEvents": trace_events(result),
        "displayTimeUnit": "ms",
    }
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)
