"""Results for people: the JSON contract's objects and readable terminal tables."""

import dataclasses

from simsp.present.table import Column, render, words
from simsp.sim.memory import MemoryReport
from simsp.sim.result import Result
from simsp.spec.hardware import HardwareSpec
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.workload import Workload
from simsp.units import GIB


def _gib(x: float) -> str:
    return f"{x / GIB:.2f}"


_NAMED = ("tp", "pp", "dp", "sequence_parallel", "recompute", "schedule", "virtual_stages")
"""Parallel settings every run description names, in this order; the others are named where
they differ from their defaults, generated from ParallelSpec's fields."""


def describe(w: Workload, hw: HardwareSpec) -> str:
    """One line naming the run (and the model's choices where they are not the paper's GPT)."""
    p = w.parallel
    chunks = f" v={p.chunks}" if p.chunks > 1 else ""
    model = model_choices(w.model)
    return (
        f"{w.name}{f' ({model})' if model else ''} on {hw.label}: tp={p.tp} pp={p.pp} dp={p.dp} "
        f"sp={'on' if p.sequence_parallel else 'off'} recompute={p.recompute} "
        f"{schedule_name(p)}{chunks} {parallel_extras(p)}"
        f"b={w.training.micro_batch} B={w.training.global_batch}{precision_note(w.training)}"
    )


def precision_note(t) -> str:
    """` fp8 (delayed)` for an FP8 run; nothing for the BF16 default."""
    return f" {t.precision} ({t.knob('fp8_recipe')})" if t.precision == "fp8" else ""


def parallel_extras(p: ParallelSpec) -> str:
    """`key=value ` for each parallel setting off its default and not among _NAMED."""
    default = ParallelSpec()
    return "".join(
        f"{f.name}={_setting(getattr(p, f.name))} "
        for f in dataclasses.fields(ParallelSpec)
        if f.name not in _NAMED and getattr(p, f.name) != getattr(default, f.name)
    )


def _setting(value) -> str:
    return (
        str(value).lower()
        if isinstance(value, bool)
        else f"{value:g}"
        if isinstance(value, float)
        else str(value)
    )


def schedule_name(p) -> str:
    """The schedule as run: interleaving with one chunk a stage is 1F1B, and is named so."""
    if p.schedule == "interleaved" and p.chunks == 1:
        return "1f1b (interleaved with one chunk)"
    return p.schedule


def dp_comm_label(w: Workload) -> str:
    """What the exposed gradient-sync time is: at dp = 1 there is no data-parallel all-reduce,
    only the tied embedding's all-reduce between the first and last stage."""
    if w.parallel.dp * w.parallel.cp > 1 or w.parallel.fsdp:
        return "DP comm"
    return "embedding all-reduce" if w.model.tied_embeddings and w.parallel.pp > 1 else "DP comm"


def model_choices(m) -> str:
    """The model's architectural choices that differ from ModelSpec's defaults, briefly."""
    default = ModelSpec(layers=1, hidden=1, heads=1, seq_len=1, vocab=1)
    parts = [
        "MLA" if m.mla else f"GQA {m.heads}/{m.groups}" if m.groups != m.heads else "",
        _experts_note(m),
    ]
    parts += [
        str(getattr(m, k))
        for k in ("mlp", "norm", "position", "attention")
        if getattr(m, k) != getattr(default, k)
    ]
    parts += [
        f"bias={str(m.bias).lower()}" if m.bias != default.bias else "",
        f"dropout={m.dropout:g}" if m.dropout != default.dropout else "",
        "untied" if not m.tied_embeddings else "",
        f"qk-norm={m.qk_norm}" if m.qk_norm != default.qk_norm else "",
        f"{m.norm_placement}-norm" if m.norm_placement != default.norm_placement else "",
        _window_note(m),
    ]
    return ", ".join(x for x in parts if x)


def _experts_note(m) -> str:
    """'MoE 128 x 768 top-8' (with shared experts, dense first layers, interleave, MTP)."""
    if not m.experts:
        return ""
    extra = [
        f"shared {m.shared_expert_ffn}" if m.shared_expert_ffn else "",
        f"{m.dense_layers} dense first" if m.dense_layers else "",
        f"every {m.moe_every}" if m.moe_every > 1 else "",
        f"MTP {m.mtp_layers}" if m.mtp_layers else "",
    ]
    return " ".join([f"MoE {m.experts} x {m.expert_ffn} top-{m.router_topk}", *filter(None, extra)])


def _window_note(m) -> str:
    """'window 4096 on 21 of 42 layers' where a sliding window narrows some layers."""
    if not m.window:
        return ""
    local = sum(m.local(i) for i in range(m.layers))
    return f"window {m.window} on {local} of {m.layers} layers"


def memory_table(w: Workload, hw: HardwareSpec, r: MemoryReport, max_rows: int = 12) -> str:
    """Per-stage memory in GiB; long pipelines show their first and last stages."""
    lines = [
        describe(w, hw),
        f"activations per layer: {r.activation_per_layer_bytes / 2**20:.1f} MiB",
    ]
    stages = r.stages if len(r.stages) <= max_rows else r.stages[:6] + r.stages[-6:]
    cells = [
        [str(s.stage), *(_gib(b) for b in (s.weights_and_optimizer_bytes, s.activation_bytes))]
        + [_gib(s.peak_bytes)]
        for s in stages
    ]
    if len(r.stages) > max_rows:
        cells.insert(6, ["...", "", "", ""])
    heads = ("stage", "weights+opt GiB", "activations GiB", "peak GiB")
    lines += render([Column(h) for h in heads], cells).splitlines()
    lines.append(memory_verdict(r.peak_bytes, r.reserve_bytes, r.capacity_bytes))
    return "\n".join(lines)


def memory_verdict(peak: float, reserve: int, capacity: int) -> str:
    """The peak, the reserve it must leave free and whether both fit, in one line; a peak that
    fits only without the reserve says so."""
    head = (
        f"peak {peak / GIB:.2f} GiB + reserve {reserve / GIB:.2f} (context, NCCL, allocator) "
        f"of {capacity / GIB:.0f} GiB"
    )
    free = capacity - peak - reserve
    if free >= 0:
        return f"{head}: fits, {free / GIB:.2f} GiB free"
    if peak <= capacity:
        return f"{head}: DOES NOT FIT with the reserve; the peak alone is within the capacity"
    return f"{head}: DOES NOT FIT"


def accuracy_dict(hw: HardwareSpec, precision: str, stack: str = "megatron") -> dict | None:
    """`accuracy` of run --json: simsp's measured accuracy with this hardware file (or its GPU
    family) in this precision, or on the run's stack where it is not megatron
    (validate/accuracy.py), None where it has none."""
    from simsp.present.accuracy import accuracy_of

    found = accuracy_of(hw, precision, stack=stack)
    return found.to_dict() if found is not None else None


def range_json(t: float, hw: HardwareSpec, precision: str, stack: str = "megatron") -> dict:
    """`range_s`, [p10, p90] of the times measured runs like this one took (simsp's time times
    the group's measured / simsp), and `range_from`, the group; None where none was measured."""
    from simsp.present.accuracy import accuracy_of, measured_range

    a = accuracy_of(hw, precision, stack=stack)
    if a is None:
        return {"range_s": None, "range_from": None}
    band = "min-max" if a.whole_range else "p10-p90"
    return {
        "range_s": list(measured_range(t, a)),
        "range_from": f"{a.scope} {a.precision}: {a.n} measured runs, {band}",
    }


def result_json(r: Result) -> dict:
    """`simsp run --json`: the result's record, the times measured runs like it took and how
    exact simsp has been on them."""
    t = r.workload.training
    return {
        **r.to_dict(),
        **range_json(r.iteration_time_s, r.hardware, t.precision, t.stack),
        "accuracy": accuracy_dict(r.hardware, t.precision, t.stack),
    }


def run_summary(r: Result) -> str:
    """Readable summary of a run, ending with how exact simsp has been on measured runs with its
    hardware file (or GPU) in its precision."""
    from simsp.present.accuracy import accuracy_line, accuracy_of, range_note

    d = r.to_dict()
    t = r.workload.training
    note = range_note(d["iteration_time_s"], accuracy_of(r.hardware, t.precision, stack=t.stack))
    br = d["breakdown"]
    layer_comm = "TP/CP" if r.workload.parallel.cp > 1 else "TP"  # the ring's wait is a layer's
    lines = [
        describe(r.workload, r.hardware),
        f"iteration {d['iteration_time_s']:.3f} s" + (f"; {note}" if note else ""),
        f"{r.workload.parallel.gpus:,} GPUs   MFU {d['mfu']:.1%}{_fp8_note(d)}   "
        f"HFU {d['hfu']:.1%}   {d['tokens_per_s']:,.0f} tokens/s, "
        f"{d['tokens_per_s'] / r.workload.parallel.gpus:,.0f} a GPU   "
        f"{d['mfu'] * r.hardware.gpu.peak_tflops:,.0f} TFLOP/s a GPU",
        f"one layer, one microbatch: forward {d['per_layer_ms']['forward']:.2f} ms, "
        f"backward {d['per_layer_ms']['backward']:.2f} ms{_recompute_note(r.workload)}"
        + _paired_note(r.plan.layer),
        "  by kind (ms): "
        + ", ".join(f"{k} {v:.2f}" for k, v in d["per_layer_ms_by_kind"].items() if v >= 5e-3),
        *_kind_lines(d["layer_kinds"]),
        f"stage 0: compute {br['compute_s']:.3f} s, {layer_comm} comm {br['tp_comm_s']:.3f} s, "
        + (f"EP comm {br['ep_comm_s']:.3f} s, " if "ep_comm_s" in br else "")
        + f"PP comm {br['pp_comm_s']:.3f} s, {dp_comm_label(r.workload)} {br['dp_comm_s']:.3f} s, "
        + (f"FSDP comm {br['fsdp_comm_s']:.3f} s, " if r.workload.parallel.fsdp else "")
        + f"bubble {_seconds(br['bubble_s'])} s, "
        f"optimizer {br['optimizer_s']:.3f} s",
        "memory "
        + memory_verdict(r.memory.peak_bytes, r.memory.reserve_bytes, r.memory.capacity_bytes),
        accuracy_line(r.hardware, r.workload.training.precision, stack=r.workload.training.stack)
        + (
            " (dense runs; mixture-of-experts runs: `simsp validate --set moe`)"
            if r.workload.model.experts
            else ""
        ),
    ]
    return "\n".join(lines)


def _kind_lines(kinds: list[dict]) -> list[str]:
    """A line for the stack's layer kinds where they differ (dense and expert layers, local and
    global attention); none for a stack of one kind."""
    if len(kinds) < 2:
        return []

    def name(k: dict) -> str:
        parts = ["experts" if k["experts"] else "dense"]
        if k["window"]:
            parts.append(f"window {k['window']:,}")
        return " ".join(parts)

    return [
        "  by layer kind: "
        + "; ".join(
            f"{k['layers']} {name(k)} from layer {k['first_layer']}: forward "
            f"{k['forward_ms']:.2f} ms, backward {k['backward_ms']:.2f} ms"
            for k in kinds
        )
    ]


def _seconds(s: float) -> str:
    """Seconds to the millisecond; a residual within rounding of zero reads 0.000, not -0.000
    (the bubble is what the iteration leaves after its parts)."""
    return f"{s + 0.0 if round(s, 3) else 0.0:.3f}"


def _fp8_note(d: dict) -> str:
    """An FP8 run's MFU against the FP8 peak too."""
    return f" ({d['mfu_fp8_peak']:.1%} of FP8 peak)" if d["precision"] == "fp8" else ""


def _paired_note(lt) -> str:
    """The layer's passes beside another microbatch's (EP overlap's steady state), where that
    changes them."""
    if not lt.paired:
        return ""
    return (
        f"; beside another microbatch (EP overlap) {lt.paired_forward_s * 1e3:.2f} / "
        f"{lt.paired_backward_s * 1e3:.2f} ms"
    )


def _recompute_note(w: Workload) -> str:
    """What a backward figure includes, where it includes something."""
    return f" ({w.parallel.recompute} recompute included)" if w.parallel.recompute != "none" else ""


def layer_dict(lt) -> dict:
    """`simsp layer --json`: totals and every op entry (entries sum to the totals exactly)."""
    return {
        "forward_ms": lt.forward_s * 1e3,
        "backward_ms": lt.backward_s * 1e3,
        "ops": [
            {
                "op": e.op,
                "phase": e.phase,
                "kind": e.kind,
                "stream": e.stream,
                "ms": e.seconds * 1e3,
                "busy_ms": e.busy_s * 1e3,
                "source": e.source,
            }
            for e in lt.entries
        ],
    }


def layer_table(w: Workload, hw: HardwareSpec, lt) -> str:
    """Readable per-op table of one layer."""
    cells = [
        [e.phase, e.op, f"{e.seconds * 1e3:.3f}", f"{e.busy_s * 1e3:.3f}", e.source]
        for e in lt.entries
    ]
    columns = (words("phase"), words("op"), Column("ms"), Column("busy ms"), words("source"))
    lines = [describe(w, hw), *render(columns, cells).splitlines()]
    lines.append(
        f"forward {lt.forward_s * 1e3:.2f} ms, backward {lt.backward_s * 1e3:.2f} ms"
        f"{_recompute_note(w)}"
    )
    return "\n".join(lines)
