"""What a timeline draws, as plain data over trace records: the level of detail that fits (op
level by expand.py, chunk, aggregated), idle gaps, merging for long pipelines, CP and FSDP
streams beside the passes, HBM lines.

No plotly here (the Perfetto writer uses the expansion too); `page.py` draws.
"""

import math
from dataclasses import dataclass

import numpy as np

from simsp.present.timeline.expand import embedding_share, expand, expandable, expanded_count
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


@dataclass(frozen=True)
class View:
    """What the page draws: its bars (as trace records), the level and a note saying so."""

    level: str
    """op, chunk or aggregated."""
    bars: tuple[Span, ...]
    note: str


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
        if not (mine and expandable(plan, s)):
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
