"""Time GEMM shapes with torch and write them as the GemmTable CSV the cost model reads.

Each shape runs in the memory layout its table row names, with the operands a Megatron linear
layer hands cuBLAS: TN (forward) `a @ b.t()`, NN (dgrad) `a @ b`, NT (wgrad) `a.t() @ b`;
`torch.bmm` with the same transposes for batched shapes. On a GPU each call is timed with CUDA
events after warm-up; on a CPU with `time.perf_counter`. The rate kept is 2*m*n*k*batch FLOPs
over the median call.
"""

import statistics
import time
from dataclasses import dataclass

from simsp.errors import InputError
from simsp.measure.profiler._torch import (
    Progress,
    device_name,
    require_torch,
    resolve_device,
    today,
    versions,
)
from simsp.measure.profiler.shapes import Shape
from simsp.tables import GemmPoint, GemmTable, write_gemm_table

DTYPES = ("bf16", "fp16", "fp32")
TORCH_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
"""simsp's dtype names -> torch attribute names (the profilers share them)."""
MIN_TFLOPS = 0.001
"""write_gemm_table keeps 3 decimals; a slower measurement is written as this (and counted)."""


@dataclass(frozen=True)
class Settings:
    """How the GEMMs are run."""

    device: str
    """'cuda', 'cuda:N' or 'cpu'."""
    dtype: str
    """bf16, fp16 or fp32."""
    repeats: int
    """Timed calls per shape (median kept)."""
    warmup: int
    """Untimed calls per shape first."""


def default_settings(
    device: str | None = None, dtype: str | None = None, repeats: int | None = None
) -> Settings:
    """GPU: bf16, 20 timed calls after 5; CPU: fp32 (bf16 matmul on CPU is slow), 3 after 1."""
    torch = require_torch()
    device = resolve_device(torch, device)
    gpu = device.startswith("cuda")
    dtype = dtype or ("bf16" if gpu else "fp32")
    if dtype not in DTYPES:
        raise InputError("--dtype", "dtype", dtype, f"must be one of {', '.join(DTYPES)}")
    if repeats is not None and repeats < 1:
        raise InputError("--repeats", "repeats", repeats, "must be at least 1")
    return Settings(device, dtype, repeats or (20 if gpu else 3), 5 if gpu else 1)


def operands(torch, shape: Shape, s: Settings):
    """A no-argument callable running this shape's GEMM in its layout, on fresh random operands."""
    g, dt = shape.gemm, getattr(torch, TORCH_DTYPES[s.dtype])
    lead = (g.batch,) if g.batch > 1 else ()
    a_dims, b_dims = {
        "TN": ((g.m, g.k), (g.n, g.k)),
        "NN": ((g.m, g.k), (g.k, g.n)),
        "NT": ((g.k, g.m), (g.k, g.n)),
    }[shape.layout]
    a = torch.randn(*lead, *a_dims, device=s.device, dtype=dt)
    b = torch.randn(*lead, *b_dims, device=s.device, dtype=dt)
    c = torch.empty(*lead, g.m, g.n, device=s.device, dtype=dt)
    a_op = a.transpose(-1, -2) if shape.layout == "NT" else a
    b_op = b.transpose(-1, -2) if shape.layout == "TN" else b
    mm = torch.bmm if lead else torch.mm
    return lambda: mm(a_op, b_op, out=c)


CPU_SAMPLE_S = 2e-3
"""On the CPU one timed sample is as many back-to-back calls as fill this (clock resolution)."""


def time_call(torch, fn, s: Settings) -> float:
    """Median seconds of one call of fn after s.warmup untimed calls."""
    for _ in range(s.warmup):
        fn()
    if s.device.startswith("cuda"):
        return _time_cuda(torch, fn, s)
    calls = 1
    while (t := _time_host(fn, calls)) < CPU_SAMPLE_S and calls < 1 << 16:
        calls *= 2
    return statistics.median([t] + [_time_host(fn, calls) for _ in range(s.repeats - 1)]) / calls


def _time_host(fn, calls: int) -> float:
    """Seconds of `calls` back-to-back calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return time.perf_counter() - t0


def _time_cuda(torch, fn, s: Settings) -> float:
    """Median of s.repeats calls, each between its own pair of CUDA events."""
    torch.cuda.synchronize(s.device)
    pairs = [
        (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        for _ in range(s.repeats)
    ]
    for start, end in pairs:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize(s.device)
    return statistics.median(start.elapsed_time(end) for start, end in pairs) / 1e3


def each_on_device(items: list, s: Settings, title: str, step, describe=None) -> tuple[list, list]:
    """step(torch, item) for every item on s.device, without autograd, a progress line each
    where `describe` names them: (the results in order, the items skipped for lack of GPU
    memory)."""
    torch = require_torch()
    bar = Progress(title, len(items)) if describe else None
    results, skipped = [], []
    oom = getattr(torch.cuda, "OutOfMemoryError", ())
    with torch.no_grad():
        if s.device.startswith("cuda"):
            torch.cuda.set_device(torch.device(s.device))
        for item in items:
            try:
                results.append(step(torch, item))
            except oom:
                skipped.append(item)
                torch.cuda.empty_cache()
            if bar:
                bar.step(describe(item))
    return results, skipped


def measure(
    shapes: list[Shape], s: Settings, progress: bool = True
) -> tuple[tuple[GemmPoint, ...], list[Shape]]:
    """(one GemmPoint per shape that ran, in order; the shapes skipped for lack of GPU memory)."""

    def step(torch, shape: Shape) -> GemmPoint:
        g = shape.gemm
        seconds = time_call(torch, operands(torch, shape, s), s)
        return GemmPoint(g.m, g.n, g.k, g.batch, shape.layout, g.flops / seconds / 1e12)

    def describe(shape: Shape) -> str:
        g = shape.gemm
        return f"{shape.name} {shape.layout} m={g.m} n={g.n} k={g.k} batch={g.batch}"

    points, skipped = each_on_device(
        shapes, s, "simsp profile gemm", step, describe if progress else None
    )
    return tuple(points), skipped


def provenance(s: Settings, command: str, extra: list[str] = ()) -> tuple[str, list[str]]:
    """(device name, comment lines) stamped into the table."""
    torch = require_torch()
    gpu = s.device.startswith("cuda")
    timing = (
        "CUDA events around each call"
        if gpu
        else (
            f"time.perf_counter around back-to-back calls filling >= {CPU_SAMPLE_S * 1e3:g} ms, "
            "per call"
        )
    )
    lines = [
        "GEMM throughput measured by `simsp profile gemm` (torch.mm / torch.bmm);",
        "  tflops = 2*m*n*k*batch / median call time / 1e12.",
        "layout: TN = a @ b.t() (forward), NN = a @ b (dgrad), NT = a.t() @ b (wgrad).",
        f"timing: {timing}, median of {s.repeats} samples after {s.warmup} warm-up call(s)",
        f"versions: {versions(torch)}",
        f"date: {today()}",
        f"command: {command}",
    ]
    if not gpu:
        lines.append(
            "note: measured on the CPU (default fp32: bf16 matmul on a CPU is slow); "
            "CPU rates, not GPU rates - for testing the pipeline, not for predictions"
        )
    elif s.dtype == "fp32":
        lines.append(
            f"note: fp32 with TF32 {'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'}"
        )
    return device_name(torch, s.device), lines + list(extra)


def write_table(
    points: tuple[GemmPoint, ...], s: Settings, path, command: str, extra: list[str] = ()
) -> GemmTable:
    """Write the points as a GemmTable CSV with provenance comments; return the table written."""
    slow = sum(p.tflops < MIN_TFLOPS for p in points)
    kept = tuple(
        p if p.tflops >= MIN_TFLOPS else GemmPoint(p.m, p.n, p.k, p.batch, p.layout, MIN_TFLOPS)
        for p in points
    )
    device, comments = provenance(s, command, extra)
    if slow:
        comments.append(
            f"note: {slow} shapes measured below {MIN_TFLOPS} TFLOP/s are written as {MIN_TFLOPS}"
        )
    table = GemmTable(kept, s.dtype, device, str(path))
    write_gemm_table(table, path, comments)
    return table
