"""Results for people: the JSON contract's objects and readable terminal tables."""

from simsp.hardware import HardwareSpec
from simsp.memory import MemoryReport
from simsp.units import GIB
from simsp.workload import Workload


def _gib(x: float) -> str:
    return f"{x / GIB:8.2f}"


def describe(w: Workload, hw: HardwareSpec) -> str:
    """One line naming the run."""
    p = w.parallel
    chunks = f" v={p.virtual_stages}" if p.schedule == "interleaved" else ""
    return (f"{w.name} on {hw.name}: tp={p.tp} pp={p.pp} dp={p.dp} sp={'on' if p.sequence_parallel else 'off'} "
            f"recompute={p.recompute} {p.schedule}{chunks} b={w.training.micro_batch} B={w.training.global_batch}")


def memory_table(w: Workload, hw: HardwareSpec, r: MemoryReport, max_rows: int = 12) -> str:
    """Per-stage memory in GiB; long pipelines show their first and last stages."""
    lines = [describe(w, hw), f"activations per layer: {r.activation_per_layer_bytes / 2**20:.1f} MiB",
             "stage  weights+opt GiB  activations GiB  peak GiB"]
    stages = r.stages if len(r.stages) <= max_rows else r.stages[:6] + r.stages[-6:]
    for i, s in enumerate(stages):
        if len(r.stages) > max_rows and i == 6:
            lines.append("  ...")
        lines.append(f"{s.stage:5d}  {_gib(s.weights_and_optimizer_bytes):>15}  {_gib(s.activation_bytes):>15}  {_gib(s.peak_bytes)}")
    verdict = "fits" if r.fits else "DOES NOT FIT"
    lines.append(f"peak {r.peak_bytes / GIB:.2f} GiB of {r.capacity_bytes / GIB:.0f} GiB: {verdict}")
    return "\n".join(lines)
