"""One simulated iteration as a plain record: the workload, hardware, plan, the engine's spans
and the memory report, with the figures the `simsp run --json` contract (docs/architecture.md)
names (MFU, HFU, the per-stage breakdown, where GEMM rates came from)."""

from dataclasses import dataclass

from simsp.model import stack
from simsp.model.flops import (
    HARDWARE_FLOPS_FORMULA,
    MODEL_FLOPS_FORMULA,
    hardware_flops,
    model_flops,
    utilization,
)
from simsp.model.params import total_params
from simsp.sim.engine import Simulation
from simsp.sim.memory import MemoryReport
from simsp.sim.plan import Plan
from simsp.sim.schedule import virtual_stage
from simsp.spec.hardware import HardwareSpec
from simsp.spec.workload import Workload

PASS_FSDP = {
    "forward": "forward_fsdp_s",
    "backward": "backward_fsdp_s",
    "backward_input": "backward_fsdp_s",
}
"""Span kinds of the pipeline passes holding FSDP waits, and the ChunkCost field of them."""
PASS_TP = {
    "forward": "forward_tp_s",
    "backward": "backward_tp_s",
    "backward_input": "input_tp_s",
    "backward_weight": "weight_tp_s",
}
"""Span kinds of the pipeline passes, and the ChunkCost field of their exposed TP time (the
expert-parallel dispatch's included, split out by the layer's share of it: PASS_PHASES)."""
PASS_SECONDS = {
    "forward": "forward_s",
    "backward": "backward_s",
    "backward_input": "input_s",
    "backward_weight": "weight_s",
}
"""Span kinds of the pipeline passes, and the ChunkCost field of the pass alone."""
PASS_PHASES = {
    "forward": ("forward",),
    "backward": ("recompute", "backward"),
    "backward_input": ("recompute", "input"),
    "backward_weight": ("weight",),
}
"""The layer-entry phases of each pass."""


@dataclass(frozen=True)
class Result:
    """One simulated iteration, as the `simsp run --json` contract (docs/architecture.md)
    reports it."""

    workload: Workload
    hardware: HardwareSpec
    plan: Plan
    sim: Simulation
    memory: MemoryReport

    @property
    def iteration_time_s(self) -> float:
        return self.sim.iteration_s

    @property
    def model_flops(self) -> float:
        """Model FLOPs of the iteration (flops.MODEL_FLOPS_FORMULA)."""
        w = self.workload
        return model_flops(w.model, w.training.global_batch, w.parallel.tp)

    def layer_kinds(self) -> list[dict]:
        """Each kind of layer the model stacks (model/stack.py: dense or with experts, local or
        global attention), in order of first use: how many layers, the first's index, and one
        layer's forward and backward (recompute included) for one microbatch, ms."""
        kinds: dict = {}
        for i, k in enumerate(stack.kinds(self.workload.model)):
            if k not in kinds:
                lt = self.plan.layer_at(i)
                kinds[k] = {
                    "first_layer": i,
                    "layers": 0,
                    "experts": k.experts,
                    "window": k.sliding_window or k.attention_chunk,
                    "forward_ms": lt.forward_s * 1e3,
                    "backward_ms": lt.backward_s * 1e3,
                }
            kinds[k]["layers"] += 1
        return list(kinds.values())

    @property
    def tokens_per_s(self) -> float:
        """Training throughput: the global batch's tokens over the iteration time."""
        w = self.workload
        return w.training.global_batch * w.model.seq_len / self.iteration_time_s

    def mfu(self) -> float:
        w = self.workload
        return utilization(
            self.model_flops, self.iteration_time_s, w.parallel.gpus, self.hardware.gpu.peak_tflops
        )

    def mfu_fp8_peak(self) -> float | None:
        """Model FLOPs utilisation against the GPU's dense FP8 peak (None without FP8 tensor
        cores): what an FP8 run leaves of the faster peak its linear layers run at."""
        peak = self.hardware.gpu.peak_fp8_tflops
        w = self.workload
        return (
            utilization(self.model_flops, self.iteration_time_s, w.parallel.gpus, peak)
            if peak
            else None
        )

    def hfu(self) -> float:
        w = self.workload
        return utilization(
            hardware_flops(
                w.model,
                w.training.global_batch,
                w.parallel.recompute,
                w.parallel.tp,
                w.recomputed_layers,
                w.parallel.recompute_modules,
            ),
            self.iteration_time_s,
            w.parallel.gpus,
            self.hardware.gpu.peak_tflops,
        )

    def breakdown(self, stage: int = 0) -> dict:
        """Where one stage's iteration went; the parts sum to the iteration time. Read from the
        stage's span columns (sim/columns.py) in the order it ran them, no Span built."""
        table = self.sim.spans
        rows, labels = table.stages[stage], table.labels
        passes = {c for c, label in enumerate(labels) if label.kind in PASS_TP}
        sends = {c for c, label in enumerate(labels) if label.stream == "pp_comm"}
        busy = {
            c
            for c, label in enumerate(labels)
            if label.stream in ("compute", "pp_comm") and label.kind != "optimizer"
        }
        tp = sharded = ep = 0.0
        parts: dict[tuple[int, int], tuple[float, float, float, float]] = {}
        for code, chunk, dur in zip(rows.code, rows.chunk, rows.dur_s, strict=True):
            if code not in passes:
                continue
            part = parts.get((code, chunk))
            if part is None:
                part = parts[code, chunk] = pass_parts(self.plan, labels[code].kind, stage, chunk)
            tp += part[0]
            # a pass that ran as one half of an overlapped pair is shorter than alone by what
            # the other microbatch hid of its all-to-alls (cost/layer_time.py)
            ep += max(0.0, part[1] - (part[3] - dur))
            sharded += part[2]
        codes, durs = rows.code, rows.dur_s
        spent = sum(d for c, d in zip(codes, durs, strict=True) if c in passes)
        compute = spent - tp - ep - sharded
        pp = sum(d for c, d in zip(codes, durs, strict=True) if c in sends)
        busy_end = max(
            (s + d for c, s, d in zip(codes, rows.start_s, durs, strict=True) if c in busy),
            default=0.0,
        )
        dp = self.sim.stage_done_s[stage] - busy_end + self.plan.gather_s[stage]
        opt = self.plan.optimizer_s[stage]
        bubble = self.iteration_time_s - (compute + tp + ep + sharded + pp + dp + opt)
        return {
            "stage": stage,
            "compute_s": compute,
            "tp_comm_s": tp,
            **({"ep_comm_s": ep} if self.workload.model.experts else {}),
            "pp_comm_s": pp,
            "dp_comm_s": dp,
            "fsdp_comm_s": sharded,
            "bubble_s": bubble,
            "optimizer_s": opt,
        }

    def hardware_overrides(self) -> dict:
        """`{"hardware_overrides": {KEY: value}}` for a run with `--set`, else nothing (the JSON
        of a run without one stays as it was)."""
        sets = self.hardware.overrides
        return {"hardware_overrides": dict(sets)} if sets else {}

    def to_dict(self) -> dict:
        """The object of the `simsp run --json` contract (docs/architecture.md), less `accuracy`
        (present.report.result_json adds it)."""
        w, lt = self.workload, self.plan.layer
        br = self.breakdown()
        return {
            "workload": w.name,
            "hardware": self.hardware.name,
            **self.hardware_overrides(),
            "iteration_time_s": self.iteration_time_s,
            "mfu": self.mfu(),
            "hfu": self.hfu(),
            "mfu_fp8_peak": self.mfu_fp8_peak(),
            "precision": w.training.precision,
            "fp8_recipe": w.training.knob("fp8_recipe") if w.training.precision == "fp8" else None,
            "params": total_params(w.model),
            "model_flops": self.model_flops,
            "flops_formula": MODEL_FLOPS_FORMULA,
            "hfu_formula": HARDWARE_FLOPS_FORMULA,
            "tokens_per_s": self.tokens_per_s,
            "bubble_fraction": br["bubble_s"] / self.iteration_time_s,
            "per_layer_ms": {"forward": lt.forward_s * 1e3, "backward": lt.backward_s * 1e3},
            "per_layer_ms_by_kind": per_kind_ms(lt),
            "layer_kinds": self.layer_kinds(),
            "memory": self.memory.to_dict(),
            "breakdown": br,
            "gemm_sources": gemm_sources(lt),
            "gemm_time_sources": gemm_time_sources(lt),
        }


def pass_parts(plan: Plan, kind: str, stage: int, chunk: int) -> tuple[float, float, float, float]:
    """(exposed TP, exposed EP, FSDP, whole) seconds of one pass of a span kind (PASS_TP) of a
    model chunk on a stage, run alone: the chunk's exposed TP time split by the layer's EP share
    of it (PASS_PHASES), what FSDP adds (PASS_FSDP), and the pass's time (PASS_SECONDS)."""
    cost = plan.chunks[virtual_stage(plan.p, stage, chunk, plan.placement)]
    exposed = getattr(cost, PASS_TP[kind])
    share = plan.layer.exposed_share("ep_comm", *PASS_PHASES[kind]) if exposed else 0
    sharded = getattr(cost, PASS_FSDP[kind]) if kind in PASS_FSDP else 0.0
    return exposed * (1.0 - share), exposed * share, sharded, getattr(cost, PASS_SECONDS[kind])


GEMM_KINDS = ("gemm", "attention_gemm", "flash_attention")
"""Layer entries whose rate comes from a GEMM or attention table, the model or the roofline."""


def per_kind_ms(lt) -> dict:
    """Milliseconds of one layer's forward, recompute and backward by entry kind (gemm,
    flash_attention, rmsnorm, rope, swiglu, fp8_cast, comm, host, ...), largest first: where a
    stack's kernels differ, this says which."""
    ms: dict[str, float] = {}
    for e in lt.entries:
        if e.phase in ("forward", "recompute", "backward"):
            ms[e.kind] = ms.get(e.kind, 0.0) + e.seconds * 1e3
    return dict(sorted(ms.items(), key=lambda kv: (-kv[1], kv[0])))


def gemm_sources(lt) -> dict:
    """How many GEMM entries of a layer came from the measured table, the model or the roofline."""
    counts: dict[str, int] = {}
    for e in lt.entries:
        if e.kind in GEMM_KINDS:
            counts[e.source] = counts.get(e.source, 0) + 1
    return counts


def gemm_time_sources(lt) -> dict:
    """Seconds of one layer's forward and backward (recompute included) GEMM and attention time,
    by where the rate came from (table, model, roofline, flash table)."""
    seconds: dict[str, float] = {}
    for e in lt.entries:
        if e.kind in GEMM_KINDS and e.phase in ("forward", "recompute", "backward"):
            seconds[e.source] = seconds.get(e.source, 0.0) + e.seconds
    return seconds
