"""What a timeline draws, as plain data over trace records: op-level expansion of chunk spans,
idle gaps, merging for long pipelines, the level of detail that fits, HBM lines.

No plotly here (the Perfetto writer uses the expansion too); `page.py` draws.
"""

import math
from dataclasses import dataclass

import numpy as np

from simsp.sim.schedule import virtual_stage
from simsp.sim.trace import Span
from simsp.units import MS

BAR_BUDGET = 40_000
"""Most bars one page draws; above it the page falls back to a coarser level."""
MEMORY_LINES = 8
"""Most HBM lines; more stages are grouped, each group drawn as its stages' maximum."""
MEMORY_POINTS = 2_000
"""Most points per HBM line; longer lines keep the maximum of each time bin."""
MERGEABLE = frozenset(("forward", "backward", "recompute"))

ROW_ORDER = ("compute", "tp_comm", "ep_comm", "cp_comm", "fsdp_comm", "pp_comm", "dp_comm")
STREAM_LABELS = {
    "compute": "compute",
    "tp_comm": "TP comm",
    "ep_comm": "EP comm",
    "cp_comm": "CP comm",
    "fsdp_comm": "FSDP comm",
    "pp_comm": "PP send/recv",
    "dp_comm": "DP comm",
}
KIND_STYLE = {  # legend label, colour (Tableau 10 family: distinct, colour-blind safer)
    "forward": ("forward", "#4C78A8"),
    "backward": ("backward", "#F58518"),
    "backward_input": ("backward, input gradient (I)", "#E15759"),
    "backward_weight": ("backward, weight gradient (W)", "#FF9DA7"),
    "recompute": ("recompute", "#E45756"),
    "mixed": ("forward + backward (merged)", "#A0799A"),
    "embedding": ("embedding / output layer", "#72B7B2"),
    "loss": ("loss", "#FF9DA6"),
    "tp_comm": ("TP comm", "#B279A2"),
    "pp_send": ("PP send", "#54A24B"),
    "pp_recv": ("PP recv", "#8CD17D"),
    "dp_allreduce": ("DP gradient reduction", "#EECA3B"),
    "param_gather": ("parameter all-gather", "#B6992D"),
    "cp_comm": ("CP ring / all-to-all (alongside compute)", "#D37295"),
    "ep_comm": ("EP dispatch / combine (mixture of experts)", "#9C755F"),
    "fsdp_comm": ("FSDP gathers / reduce-scatters (alongside compute)", "#79706E"),
    "optimizer": ("optimizer", "#9D755D"),
    "host_wait": ("waiting for the host (framework floor)", "#C7C7C7"),
    "idle": ("idle / bubble", "#D9D9D9"),
}
_FALLBACK_COLOURS = ("#BAB0AC", "#79706E", "#D37295", "#FABFD2", "#B6992D")


@dataclass(frozen=True)
class View:
    """What the page draws: its bars (as trace records), the level and a note saying so."""

    level: str
    """op, chunk or aggregated."""
    bars: tuple[Span, ...]
    note: str


# ---- op-level expansion (pure; the Perfetto writer uses it too) ----------------------------


def _virtual_stage(plan, span: Span) -> int:
    return span.chunk * plan.p + span.stage


def _lay_out(entries, t0: float, span: Span, layer: int) -> tuple[list[Span], float]:
    """One pass of one layer from t0: entries back to back on the critical path; a (partly)
    hidden TP collective starts with the GEMM before it, as `layer_time` overlaps them."""
    out, cursor, prev_start = [], t0, t0
    for e in entries:
        start = prev_start if e.stream == "comm" and e.busy_s > e.seconds else cursor
        if e.busy_s > 0:
            stream, kind = (
                (e.kind, e.kind)
                if e.kind in ("cp_comm", "ep_comm")
                else ("tp_comm", "tp_comm")
                if e.stream == "comm"
                else ("compute", "host_wait" if e.kind == "host" else e.phase)
            )
            out.append(
                Span(
                    span.stage,
                    stream,
                    kind,
                    e.op,
                    start,
                    e.busy_s,
                    span.microbatch,
                    span.chunk,
                    layer,
                    1,
                )
            )
        cursor += e.seconds
        prev_start = start
    return out, cursor


def _extras(plan, span: Span, remainder_s: float, embedding_share: float) -> tuple[float, float]:
    """(embedding, output layer) seconds of a chunk's remainder beyond its layers."""
    if remainder_s <= 1e-12 * max(span.dur_s, 1e-30):
        return 0.0, 0.0
    vs, last = _virtual_stage(plan, span), plan.p * plan.v - 1
    if vs == 0 and vs == last:
        return remainder_s * embedding_share, remainder_s * (1 - embedding_share)
    return (remainder_s, 0.0) if vs == 0 else (0.0, remainder_s)


def _extra_piece(span: Span, name: str, start: float, dur: float) -> list[Span]:
    if dur <= 0:
        return []
    return [
        Span(
            span.stage, "compute", "embedding", name, start, dur, span.microbatch, span.chunk, -1, 0
        )
    ]


def expand_span(plan, span: Span, embedding_share: float = 0.5) -> list[Span]:
    """A forward or backward chunk span as op spans: forward entries per layer in order; for a
    backward, per layer in reverse, its recompute entries then its backward entries. The part
    of the span the layers do not explain is the embedding (first chunk) or the output layer
    and loss (last chunk); `embedding_share` splits it where one chunk is both."""
    forward = span.kind == "forward"
    phases = ("forward",) if forward else ("recompute", "backward")
    paired = _overlapped(plan, span, forward)

    kept: dict = {}  # each distinct layer's entries of this pass, listed once

    def entries(layer: int) -> list:
        lt = plan.layer_at(layer)
        if id(lt) not in kept:
            listed = lt.paired if paired and lt.paired else lt.entries
            kept[id(lt)] = [e for e in listed if e.phase in phases]
        return kept[id(lt)]

    layers = range(span.first_layer, span.first_layer + span.layers)
    if plan.layers:  # layers that differ: each its own entries
        explained = sum(e.seconds for layer in layers for e in entries(layer))
    else:
        explained = span.layers * sum(e.seconds for e in entries(span.first_layer))
    emb, out = _extras(plan, span, span.dur_s - explained, embedding_share)
    first, last = (
        (("embedding", emb), ("output layer + loss", out))
        if forward
        else (("output layer + loss grad", out), ("embedding grad", emb))
    )
    pieces = _extra_piece(span, first[0], span.start_s, first[1])
    t = span.start_s + first[1]
    for layer in layers if forward else reversed(layers):
        laid, t = _lay_out(entries(layer), t, span, layer)
        pieces += laid
    return pieces + _extra_piece(span, last[0], t, last[1])


def _overlapped(plan, span: Span, forward: bool) -> bool:
    """Whether a pass ran as one half of an overlapped pair (EP overlap's steady state): it took
    its chunk's paired time rather than its time alone, and its ops are the layers' paired
    entries (LayerTime.paired)."""
    if not plan.paired:
        return False
    chunk = plan.chunks[_virtual_stage(plan, span)]
    alone = chunk.forward_s if forward else chunk.backward_s
    return abs(span.dur_s - alone) > 1e-9 * max(alone, 1e-30)


def _expandable(plan, span: Span) -> bool:
    return (
        plan.layer is not None
        and span.stream == "compute"
        and span.kind in ("forward", "backward")
        and span.layers > 0
    )


def expanded_count(plan, spans) -> int:
    """How many spans `expand` would return, without building them (at most: each chunk span is
    counted with both an embedding and an output piece)."""
    if plan.layer is None:
        return len(spans)
    per_pass = {  # the more of a layer's entries alone and paired
        k: max(
            sum(1 for e in listed if e.phase in ph and e.busy_s > 0)
            for listed in (plan.layer.entries, plan.layer.paired)
        )
        for k, ph in (("forward", ("forward",)), ("backward", ("recompute", "backward")))
    }
    return sum(per_pass[s.kind] * s.layers + 2 if _expandable(plan, s) else 1 for s in spans)


def embedding_share(result) -> float:
    """The embedding's share of the extra time of a chunk holding both embedding and output
    layer."""
    w = result.workload
    if result.plan.p * result.plan.v != 1:
        return 0.5
    from simsp.cost import cost_model
    from simsp.cost import stage_time as st
    from simsp.spec.layout import layout

    cost, place = cost_model(result.hardware), layout(w.parallel, result.hardware.node.gpus)
    (ef, _), (of, _) = st.embedding_s(w, cost, place), st.output_s(w, cost, place)
    return ef / (ef + of) if ef + of > 0 else 0.5


def expand(plan, spans, embedding_share: float = 0.5) -> list[Span]:
    """Every forward/backward chunk span replaced by its op spans; other spans kept."""
    out: list[Span] = []
    for s in spans:
        out += expand_span(plan, s, embedding_share) if _expandable(plan, s) else [s]
    return out


SIDE_PASSES = {"forward": "forward_s", "backward": "backward_s", "backward_input": "backward_s"}
"""Compute span kinds with CP / FSDP communication beside them, and the SideComm field."""


def side_spans(plan, spans, skip: tuple[str, ...] = ()) -> list[Span]:
    """The CP and FSDP communication beside each pass (chunk_costs.ChunkCost.side) on its own
    stream, from the pass's start: derived from the compute spans here, so the engine draws
    nothing more for it. `skip`: streams the caller draws otherwise (cp_comm at op level)."""
    out = []
    for s in spans:
        if s.stream != "compute" or s.kind not in SIDE_PASSES or s.chunk < 0:
            continue
        chunk = plan.chunks[virtual_stage(plan.p, s.stage, s.chunk, plan.placement)]
        for c in chunk.side:
            dur = getattr(c, SIDE_PASSES[s.kind])
            if dur > 0 and c.stream not in skip:
                name = f"{c.name} beside {s.name}"
                out.append(
                    Span(s.stage, c.stream, c.stream, name, s.start_s, dur, s.microbatch, s.chunk)
                )
    return out


# ---- chunk level and aggregation --------------------------------------------------------------


def tp_chunk_totals(plan, spans) -> list[Span]:
    """Per forward/backward chunk span with TP collectives, one TP-row span over it naming
    their totals."""
    if plan.layer is None:
        return []
    comm = [e for e in plan.layer.entries if e.kind == "comm" and e.busy_s > 0]
    out = []
    for s in spans:  # a chunk without TP collectives (tp 1) draws nothing on the TP row
        mine = [e for e in comm if (e.phase == "forward") == (s.kind == "forward")]
        if not (mine and _expandable(plan, s)):
            continue
        exposed, busy = (s.layers * sum(getattr(e, a) for e in mine) for a in ("seconds", "busy_s"))
        name = (
            f"TP comm in {s.name}: {len(mine) * s.layers} collectives, exposed {exposed / MS:.3f} "
            f"ms, busy {busy / MS:.3f} ms ({exposed / s.dur_s:.0%} of the chunk)"
        )
        out.append(
            Span(
                s.stage,
                "tp_comm",
                "tp_comm",
                name,
                s.start_s,
                s.dur_s,
                s.microbatch,
                s.chunk,
                s.first_layer,
                s.layers,
            )
        )
    return out


def idle_spans(spans, end_s: float, min_gap_s: float = 1e-9) -> list[Span]:
    """Gaps on each stage's compute row where neither compute nor a blocking send or all-reduce
    runs."""
    busy: dict[int, list[tuple[float, float]]] = {}
    for s in spans:
        if s.stream in ("compute", "pp_comm", "dp_comm") and s.dur_s > 0:
            busy.setdefault(s.stage, []).append((s.start_s, s.end_s))
    out = []
    for stage in sorted(busy):
        cursor = 0.0
        for start, end in sorted(busy[stage]) + [(end_s, end_s)]:
            if start - cursor > min_gap_s:
                out.append(Span(stage, "compute", "idle", "idle / bubble", cursor, start - cursor))
            cursor = max(cursor, end)
    return out


def _merged(run: list[Span]) -> Span:
    """One bar for a run of compute spans."""
    if len(run) == 1:
        return run[0]
    first, kinds = run[0], sorted({s.kind for s in run})
    kind = kinds[0] if len(kinds) == 1 else "mixed"
    counts = ", ".join(f"{sum(s.kind == k for s in run)} {k}" for k in kinds)
    mbs = [s.microbatch for s in run]
    busy = sum(s.dur_s for s in run)
    end = max(s.end_s for s in run)
    name = (
        f"{len(run)} spans merged ({counts}), microbatches {min(mbs)}-{max(mbs)}, "
        f"busy {busy / (end - first.start_s):.0%}"
    )
    return Span(first.stage, first.stream, kind, name, first.start_s, end - first.start_s)


def merge_runs(spans, gap_s: float) -> list[Span]:
    """Per (stage, stream), consecutive forward/backward/recompute spans less than gap_s apart
    become one span (kind 'mixed' where kinds differ); other spans are kept."""
    rows: dict[tuple[int, str], list[Span]] = {}
    for s in spans:
        rows.setdefault((s.stage, s.stream), []).append(s)
    out: list[Span] = []
    for key in sorted(rows):
        run: list[Span] = []
        for s in sorted(rows[key], key=lambda x: x.start_s):
            if run and (s.kind not in MERGEABLE or s.start_s - run[-1].end_s >= gap_s):
                out.append(_merged(run))
                run = []
            if s.kind in MERGEABLE:
                run.append(s)
            else:
                out.append(s)
        if run:
            out.append(_merged(run))
    return out


def choose_view(result, budget: int = BAR_BUDGET) -> View:
    """The finest level of detail whose bars fit the budget."""
    plan, end = result.plan, result.iteration_time_s
    spans = tuple(result.sim.spans)  # the engine's columns read once, as Span records
    idle = idle_spans(spans, end)
    n_ops = expanded_count(plan, spans)
    if plan.layer is not None and n_ops + len(idle) <= budget:
        bars = expand(plan, spans, embedding_share(result)) + idle
        bars += side_spans(plan, spans, skip=("cp_comm",))  # the ops show CP one by one
        return View(
            "op", tuple(bars), f"op level: {len(bars):,} bars, every layer's ops and collectives"
        )
    tp = tp_chunk_totals(plan, spans)
    side = side_spans(plan, spans)
    if len(spans) + len(tp) + len(idle) + len(side) <= budget:
        return View(
            "chunk",
            tuple(list(spans) + tp + idle + side),
            f"chunk level: {len(spans):,} spans (op level would draw {n_ops:,} bars > {budget:,})"
            + ("; the TP row shows each chunk's TP collectives, hover for totals" if tp else ""),
        )
    return _aggregated(spans, end, budget)


def _aggregated(spans, end: float, budget: int) -> View:
    """Compute and DP rows with runs merged; the gap doubles until the bars fit."""
    kept = [s for s in spans if s.stream in ("compute", "dp_comm")]
    dropped = len(spans) - len(kept)
    gap = end / 2000
    while True:
        merged = merge_runs(kept, gap)
        idle = idle_spans(merged, end, gap)
        if len(merged) + len(idle) <= budget or gap >= end:
            break
        gap *= 2
    note = (
        f"AGGREGATED view: {len(spans):,} spans exceed {budget:,} bars, so each stage's compute "
        f"spans less than {gap / MS:.1f} ms apart are merged into one bar and gaps under that are "
        f"not shown; {dropped:,} PP send spans and the TP row are left out. The --trace file holds "
        "every span."
    )
    return View("aggregated", tuple(merged + idle), note)


# ---- memory ---------------------------------------------------------------------------------


def _step_values(samples, at: np.ndarray) -> np.ndarray:
    """A stage's HBM (step function of its samples, a columns.StageMemory) at the given times;
    the last sample at a time wins."""
    t = np.frombuffer(samples.time_s, dtype=np.float64)
    b = np.frombuffer(samples.bytes, dtype=np.float64)
    order = np.argsort(t, kind="stable")
    t, b = t[order], b[order]
    idx = np.searchsorted(t, at, side="right") - 1
    return np.where(idx >= 0, b[np.clip(idx, 0, None)], 0.0)


def _bin_max(t: np.ndarray, v: np.ndarray, end: float, n: int) -> tuple[np.ndarray, np.ndarray]:
    """A step function reduced to n equal time bins, each the maximum it reaches in the bin."""
    edges = np.linspace(0.0, end, n + 1)[:-1]
    idx = np.searchsorted(t, edges, side="right") - 1
    out = np.where(idx >= 0, v[np.clip(idx, 0, None)], 0.0)
    inside = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, n - 1)
    np.maximum.at(out, inside, v)
    return edges, out


def memory_lines(result, max_lines: int = MEMORY_LINES, max_points: int = MEMORY_POINTS):
    """[(label, times_s, bytes)]: one line per stage, or per group of stages (their maximum)."""
    p, end = result.plan.p, result.iteration_time_s
    by_stage = {rows.stage: rows for rows in result.sim.memory.stages if len(rows)}
    size = math.ceil(p / max_lines)
    lines = []
    for lo in range(0, p, size):
        group = [s for s in range(lo, min(lo + size, p)) if s in by_stage]
        if not group:
            continue
        times = np.unique(
            np.concatenate([np.frombuffer(by_stage[s].time_s) for s in group] + [[end]])
        )
        values = np.max([_step_values(by_stage[s], times) for s in group], axis=0)
        if len(times) > max_points:
            times, values = _bin_max(times, values, end, max_points)
            times, values = np.append(times, end), np.append(values, values[-1])
        label = f"stage {lo}" if len(group) == 1 else f"stages {group[0]}-{group[-1]} (max)"
        lines.append((label, times, values))
    return lines
