"""Time a mixture of experts' grouped GEMMs and write them as the grouped-GEMM CSV a hardware
file's `calibration.grouped_gemm` reads (tables/grouped_gemm.py).

The shapes are the routed experts' fc1 and fc2 of the workloads' layers with experts: G local
experts, each an m x n x k GEMM (balanced routing: m = the rows a group receives), in the three
stages a Megatron linear layer runs, as the GEMM profiler does: TN (forward) `x @ w.t()`, NN
(dgrad) `dy @ w`, NT (wgrad) `dy.t() @ x`. Each stage is timed as G back-to-back `torch.mm`
calls over per-group operands, the loop Megatron-Core's SequentialMLP runs; Transformer Engine's
grouped GEMM on Hopper launches one cuBLAS GEMM a group too (on a few streams), so a fused
grouped kernel can only be faster, most on small groups. The rate kept is 2 G m n k FLOPs over
the median time, as the CSV counts it.
"""

from simsp.measure.profiler._torch import device_name, require_torch, today, versions
from simsp.measure.profiler.gemm import (
    CPU_SAMPLE_S,
    TORCH_DTYPES,
    Settings,
    each_on_device,
    time_call,
)
from simsp.model.layer import build_layer
from simsp.model.stack import counts
from simsp.spec.workload import Workload
from simsp.tables.gemm import LAYOUTS
from simsp.tables.grouped_gemm import GroupedPoint, write_grouped_gemm_table


def grouped_shapes(w: Workload) -> list[tuple[str, int, int, int, int]]:
    """(name, groups, m, n, k) of each grouped GEMM of the workload's layer kinds, in forward
    orientation, first of each shape kept."""
    seen, out = set(), []
    for kind, _ in counts(w.model):
        for op in build_layer(kind, w.parallel, w.training.micro_batch, w.training.numerics):
            g = op.gemm
            if g is None or not g.grouped or g.batch < 2:
                continue
            key = (g.batch, g.m, g.n, g.k)
            if key not in seen:
                seen.add(key)
                out.append((op.name, *key))
    return out


def operands(torch, groups: int, m: int, n: int, k: int, layout: str, s: Settings):
    """A no-argument callable running one stage of the grouped GEMM: `groups` torch.mm calls in
    the stage's layout, on fresh random per-group operands."""
    dt = getattr(torch, TORCH_DTYPES[s.dtype])
    a_dims, b_dims, c_dims = {
        "TN": ((m, k), (n, k), (m, n)),  # x @ w.t()
        "NN": ((m, n), (n, k), (m, k)),  # dy @ w
        "NT": ((m, n), (m, k), (n, k)),  # dy.t() @ x
    }[layout]
    a = torch.randn(groups, *a_dims, device=s.device, dtype=dt)
    b = torch.randn(groups, *b_dims, device=s.device, dtype=dt)
    c = torch.empty(groups, *c_dims, device=s.device, dtype=dt)
    pairs = [
        (
            a[i].t() if layout == "NT" else a[i],
            b[i].t() if layout == "TN" else b[i],
            c[i],
        )
        for i in range(groups)
    ]

    def run():
        for x, y, out in pairs:
            torch.mm(x, y, out=out)

    return run


def measure(
    shapes: list[tuple[str, int, int, int, int]], s: Settings, progress: bool = True
) -> tuple[tuple[GroupedPoint, ...], list[tuple]]:
    """(a GroupedPoint per shape and stage that ran; those skipped for lack of GPU memory)."""

    def step(torch, item) -> GroupedPoint:
        (_, groups, m, n, k), layout = item
        seconds = time_call(torch, operands(torch, groups, m, n, k, layout, s), s)
        return GroupedPoint(groups, m, n, k, layout, 2.0 * groups * m * n * k / seconds / 1e12)

    def describe(item) -> str:
        (name, groups, m, n, k), layout = item
        return f"{name} {layout} groups={groups} m={m} n={n} k={k}"

    todo = [(shape, layout) for shape in shapes for layout in LAYOUTS]
    title = "simsp profile gemm (grouped)"
    points, skipped = each_on_device(todo, s, title, step, describe if progress else None)
    return tuple(points), skipped


def write_table(points, s: Settings, path, command: str, extra: list[str] = ()) -> None:
    """Write the points with provenance comments."""
    torch = require_torch()
    gpu = s.device.startswith("cuda")
    timing = (
        "CUDA events around each stage"
        if gpu
        else f"time.perf_counter around back-to-back stages filling >= {CPU_SAMPLE_S * 1e3:g} ms"
    )
    comments = [
        "Grouped-GEMM throughput measured by `simsp profile gemm` (a mixture of experts' routed",
        "  experts): G torch.mm calls a stage, one a group, as SequentialMLP runs them;",
        "  tflops = 2*groups*m*n*k / median stage time / 1e12; m, n, k the forward shape.",
        "layout: TN = x @ w.t() (forward), NN = dy @ w (dgrad), NT = dy.t() @ x (wgrad).",
        f"device: {device_name(torch, s.device)}",
        f"dtype: {s.dtype}",
        f"timing: {timing}, median of {s.repeats} samples after {s.warmup} warm-up call(s)",
        f"versions: {versions(torch)}",
        f"date: {today()}",
        f"command: {command}",
    ]
    if not gpu:
        comments.append("note: measured on the CPU: for testing the pipeline, not for predictions")
    write_grouped_gemm_table(points, path, comments + list(extra))
