"""A real iteration (a Kineto trace) and simsp's simulation of it, side by side.

Both become plain `Span` records (sim/trace.py) on one time axis from 0: the real one per GPU
stream (a CPU trace: one row), each kernel as the op kind it matched; the simulated one as the
engine's spans of stage 0, its layer passes expanded into ops (present.timeline's expand_span).
The attribution tables sum each side by op kind and by layer: real kernel time, simulated
stream-busy time, the difference and its share of the summed absolute differences. Work simsp
does not split into ops (embedding, output layer and loss less the logits GEMM, a layer op's
calls past the workload's layers) is one row, "outside the layers", the optimizer another;
kernels no op matched are their own row, with nothing simulated against them.
"""

import json
from dataclasses import dataclass
from pathlib import Path

from simsp.io.config import load_hardware, load_workload
from simsp.measure.kineto.match import Matching, match_profile
from simsp.measure.kineto.reader import read_profile
from simsp.present.table import Column, render, words
from simsp.sim.trace import Span
from simsp.textfile import GENERATOR_KEY

OUTSIDE_ROW = "outside the layers"
UNMATCHED_ROW = "unmatched kernels"


@dataclass(frozen=True)
class Row:
    """One line of an attribution table."""

    key: str
    real_s: float
    sim_s: float

    @property
    def diff_s(self) -> float:
        return self.sim_s - self.real_s

    @property
    def error(self) -> float | None:
        """(simulated - real) / real; None where nothing real ran."""
        return self.diff_s / self.real_s if self.real_s > 0 else None


@dataclass(frozen=True)
class Comparison:
    """The matched trace, the simulated run, and their attribution."""

    matching: Matching
    result: object
    """sim.result.Result of the workload on the hardware file."""
    real: tuple[Span, ...]
    sim: tuple[Span, ...]
    by_kind: tuple[Row, ...]
    by_layer: tuple[Row, ...]

    @property
    def real_s(self) -> float:
        return self.matching.profile.span_s

    @property
    def sim_s(self) -> float:
        return self.result.iteration_time_s

    def row(self, key: str) -> Row | None:
        return next((r for r in self.by_kind if r.key == key), None)

    def to_dict(self) -> dict:
        def rows(rs):
            total = sum(abs(r.diff_s) for r in rs) or 1.0
            return [
                {
                    "key": r.key,
                    "real_s": r.real_s,
                    "sim_s": r.sim_s,
                    "error": r.error,
                    "share_of_error": abs(r.diff_s) / total,
                }
                for r in rs
            ]

        p = self.matching.profile
        return {
            "trace": p.path,
            "device": p.device,
            "cpu_trace": p.cpu,
            "workload": self.matching.workload.name,
            "hardware": self.result.hardware.name,
            "real_iteration_s": self.real_s,
            "sim_iteration_s": self.sim_s,
            "matched_fraction": self.matching.matched_fraction,
            "by_kind": rows(self.by_kind),
            "by_layer": rows(self.by_layer),
        }

    def table_text(self) -> str:
        d = self.to_dict()
        lines = [
            f"{d['workload']}: real iteration {d['real_iteration_s'] * 1e3:.3f} ms "
            f"({d['device']}), simulated {d['sim_iteration_s'] * 1e3:.3f} ms on {d['hardware']}",
        ]
        cells = [
            [
                r["key"],
                f"{r['real_s'] * 1e3:.3f}",
                f"{r['sim_s'] * 1e3:.3f}",
                f"{r['error']:+.1%}" if r["error"] is not None else "n/a",
                f"{r['share_of_error']:.1%}",
            ]
            for r in d["by_kind"]
        ]
        heads = (words("op kind"), Column("real ms"), Column("sim ms"), Column("error"))
        lines += render((*heads, Column("share")), cells).splitlines()
        return "\n".join(lines)


def real_spans(mt: Matching) -> list[Span]:
    """Each kernel as a span on its stream row (stage -1 marks the real side)."""
    out = []
    for m in mt.matches:
        k = m.kernel
        stream = "cpu" if k.stream < 0 else f"stream {k.stream}"
        kind = m.kind or "unmatched"
        out.append(
            Span(-1, stream, kind, m.op or k.name[:80], k.start_s, k.dur_s, -1, -1, m.layer, 1)
        )
    return out


def sim_spans(result) -> list[Span]:
    """Stage 0's spans, passes expanded into ops where the plan has them."""
    from simsp.present.timeline import embedding_share, expand_span

    plan, share = result.plan, embedding_share(result)
    out = []
    for s in result.sim.spans.of_stage(0):
        if s.stream == "compute" and s.kind in ("forward", "backward") and s.layers > 0:
            out += expand_span(plan, s, share)
        elif not (s.stream == "tp_comm" and s.layers > 0):
            out.append(s)
    return out


def _kinds_of(plan) -> dict[str, str]:
    return {e.op: e.kind for e in plan.layer.entries}


def _logits_s(result) -> float:
    """Seconds of the logits GEMM in its three layouts over the iteration (pp = 1: stage 0 runs
    it every microbatch)."""
    from simsp.cost import CostModel
    from simsp.measure.profiler.shapes import linear_shapes, logits_gemm

    w = result.workload
    if w.parallel.pp != 1:
        return 0.0
    cm = CostModel(result.hardware).compute
    per = sum(cm.gemm(s.gemm, s.layout).seconds for s in linear_shapes("logits", logits_gemm(w)))
    return per * w.microbatches


def attribute(mt: Matching, result, sim: list[Span]) -> tuple[tuple[Row, ...], tuple[Row, ...]]:
    """(by op kind, by layer) rows."""
    kinds = _kinds_of(result.plan)
    real_kind: dict[str, float] = {}
    sim_kind: dict[str, float] = {}
    real_layer: dict[int, float] = {}
    sim_layer: dict[int, float] = {}
    for m in mt.matches:
        key = UNMATCHED_ROW if not m.kind else m.kind
        if m.kind and m.kind != "optimizer" and m.layer < 0 and m.op != "logits":
            key = OUTSIDE_ROW
        real_kind[key] = real_kind.get(key, 0.0) + m.kernel.dur_s
        if m.layer >= 0:
            real_layer[m.layer] = real_layer.get(m.layer, 0.0) + m.kernel.dur_s
    logits = _logits_s(result)
    for s in sim:
        if s.first_layer >= 0 and s.layers == 1 and s.name in kinds:
            kind = kinds[s.name]
            sim_kind[kind] = sim_kind.get(kind, 0.0) + s.dur_s
            sim_layer[s.first_layer] = sim_layer.get(s.first_layer, 0.0) + s.dur_s
        elif s.kind == "optimizer":
            sim_kind["optimizer"] = sim_kind.get("optimizer", 0.0) + s.dur_s
        elif s.kind == "embedding" or s.stream == "compute":
            sim_kind[OUTSIDE_ROW] = sim_kind.get(OUTSIDE_ROW, 0.0) + s.dur_s
    sim_kind["gemm"] = sim_kind.get("gemm", 0.0) + logits
    sim_kind[OUTSIDE_ROW] = max(0.0, sim_kind.get(OUTSIDE_ROW, 0.0) - logits)
    keys = sorted(
        set(real_kind) | set(sim_kind), key=lambda k: (k in (OUTSIDE_ROW, UNMATCHED_ROW), k)
    )
    by_kind = tuple(Row(k, real_kind.get(k, 0.0), sim_kind.get(k, 0.0)) for k in keys)
    layers = sorted(set(real_layer) | set(sim_layer))
    by_layer = tuple(
        Row(f"layer {i}", real_layer.get(i, 0.0), sim_layer.get(i, 0.0)) for i in layers
    )
    return by_kind, by_layer


def compare_run(trace, workload, hardware=None) -> Comparison:
    """Read, match, simulate and attribute."""
    from simsp.api import run
    from simsp.measure.kineto.calibrate import base_for

    w = load_workload(workload)
    prof = read_profile(trace)
    hw = load_hardware(hardware or base_for(prof.device))
    mt = match_profile(prof, w)
    result = run(w, hw)
    sim = sim_spans(result)
    by_kind, by_layer = attribute(mt, result, sim)
    return Comparison(mt, result, tuple(real_spans(mt)), tuple(sim), by_kind, by_layer)


def overlay_trace_json(cmp: Comparison) -> str:
    """Chrome Trace Event JSON with both iterations: pid 1 'real (trace)', one thread per stream;
    pid 2 'simulated', one thread per stream; complete events in microseconds."""
    events, tids = [], {}
    for pid, label, spans in (
        (1, "real: " + Path(cmp.matching.profile.path).name, cmp.real),
        (2, "simulated: " + cmp.result.hardware.name, cmp.sim),
    ):
        events.append(
            {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": label}}
        )
        for s in sorted(spans, key=lambda s: (s.stream, s.start_s)):
            tid = tids.setdefault((pid, s.stream), len(tids) + 1)
            events.append(
                {
                    "name": s.name,
                    "cat": s.kind,
                    "ph": "X",
                    "pid": pid,
                    "tid": tid,
                    "ts": round(s.start_s * 1e6, 3),
                    "dur": round(s.dur_s * 1e6, 3),
                    "args": {"layer": s.first_layer},
                }
            )
    for (pid, stream), tid in tids.items():
        events.append(
            {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": stream}}
        )
    return json.dumps(
        {
            "otherData": {GENERATOR_KEY: "simsp", **cmp.to_dict()},
            "traceEvents": events,
            "displayTimeUnit": "ms",
        },
        separators=(",", ":"),
    )
