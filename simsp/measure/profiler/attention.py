"""Time fused attention with torch's `scaled_dot_product_attention` and write the FlashAttention
throughput CSV the cost model reads (`calibration.flash_attention`).

One case per distinct FlashAttention shape of a workload (its `flash_attention` ops: micro batch
x heads / tp query heads, kv_heads / tp K/V heads, the model's head size and sequence length,
causal), and optionally a small grid. Each case is timed twice: the forward (inputs requiring
grad, so autograd records the graph as in training) and, separately, the backward (`.backward`
of a fresh forward's output with a random gradient; the forward is untimed). On a GPU each call
lies between its own pair of CUDA events; on a CPU `time.perf_counter` around the call, the
device synchronised. The median call after warm-up is kept, as a rate in the FLOP count of
flash-attention's benchmarks (`Attention.benchmark_flops`: 4 s² d per batch-head, halved when
causal; backward 2.5 times that).

Grouped-query attention passes K and V with their own (fewer) heads and `enable_gqa=True`
where this torch has it (2.5+); an older torch gets K and V repeated to the query heads first,
outside the timed call. The kernel SDPA dispatched to is read off the output's autograd node
(`ScaledDotProductFlashAttentionBackward0` -> flash, ...; a decomposed math path leaves none).
"""

import statistics
import time
from dataclasses import dataclass

from simsp.measure.profiler._torch import Progress, device_name, require_torch, today, versions
from simsp.measure.profiler.gemm import TORCH_DTYPES, Settings
from simsp.model.layer import Attention, build_layer
from simsp.spec.workload import Workload
from simsp.tables.attention import BACKWARD_FLOPS_FACTOR, AttentionPoint, write_attention_table

GRID_SEQ_GPU = (512, 1024, 2048, 4096, 8192)
GRID_SEQ_CPU = (128, 256, 512, 1024)
GRID_HEAD_DIMS = (64, 128)
GRID_TOKENS_GPU, GRID_WIDTH_GPU = 16384, 2048
"""flash-attention's benchmark sizes: batch x seq_len = 16k tokens, heads x head_dim = 2048."""
GRID_TOKENS_CPU, GRID_WIDTH_CPU = 2048, 256
"""The same, smaller, on a CPU."""
DIRECTIONS = ("fwd", "bwd")

_BACKENDS = (
    ("FlashAttentionForCpu", "cpu"),
    ("FlashAttention", "flash"),
    ("EfficientAttention", "efficient"),
    ("CudnnAttention", "cudnn"),
    ("Overrideable", "fused"),
)
"""Substrings of the SDPA output's autograd node name -> the backend it names."""


@dataclass(frozen=True)
class Case:
    """One attention shape to time."""

    name: str
    """Where it comes from: the workload's name, or 'grid'."""
    batch: int
    heads: int
    """Query heads (on one TP rank)."""
    kv_heads: int
    """K/V heads (== heads without grouped-query attention)."""
    seq_len: int
    head_dim: int
    causal: bool

    @property
    def attention(self) -> Attention:
        return Attention(self.batch * self.heads, self.seq_len, self.head_dim, self.causal)

    @property
    def key(self) -> tuple[int, int, bool]:
        """What the throughput table is keyed by (it holds one rate per key and direction)."""
        return (self.head_dim, self.seq_len, self.causal)

    def describe(self) -> str:
        return (
            f"{self.name}: head_dim={self.head_dim} seq_len={self.seq_len} "
            f"causal={str(self.causal).lower()} batch={self.batch} heads={self.heads} "
            f"kv_heads={self.kv_heads}"
        )


def workload_cases(w: Workload) -> list[Case]:
    """The distinct FlashAttention shapes of one layer of w (none when its attention is unfused)."""
    m, tp, b = w.model, w.parallel.tp, w.training.micro_batch
    heads = m.heads // tp
    kv = max(1, m.groups // tp)  # fewer K/V heads than TP ranks: each rank holds a copy of one
    if heads % kv:
        kv = heads
    cases = []
    for op in build_layer(m, w.parallel, b):
        if op.attention:
            att = op.attention
            assert att.batch_heads == b * heads, (att, b, heads)
            cases.append(Case(w.name, b, heads, kv, att.seq_len, att.head_dim, att.causal))
    return unique(cases)


def grid_cases(gpu: bool) -> list[Case]:
    """head_dim 64 and 128 x the sequence lengths x causal and not, at the benchmarks' sizes."""
    seqs, tokens, width = (
        (GRID_SEQ_GPU, GRID_TOKENS_GPU, GRID_WIDTH_GPU)
        if gpu
        else (GRID_SEQ_CPU, GRID_TOKENS_CPU, GRID_WIDTH_CPU)
    )
    return [
        Case("grid", max(1, tokens // s), width // d, width // d, s, d, causal)
        for causal in (True, False)
        for d in GRID_HEAD_DIMS
        for s in seqs
    ]


def unique(cases: list[Case]) -> list[Case]:
    """The first case of each (head_dim, seq_len, causal): the table holds one rate per key."""
    seen, out = set(), []
    for c in cases:
        if c.key not in seen:
            seen.add(c.key)
            out.append(c)
    return out


def backend_name(out) -> str:
    """'flash', 'efficient', 'cudnn', 'cpu' (the CPU's flash kernel) or 'math', from the node
    autograd recorded for an SDPA output."""
    node = out.grad_fn.name() if out.grad_fn is not None else ""
    return next((name for part, name in _BACKENDS if part in node), "math")


def _gqa_native(torch) -> bool:
    """Whether this torch's SDPA takes `enable_gqa` (2.5+)."""
    x = torch.zeros(1, 2, 1, 8)
    try:
        torch.nn.functional.scaled_dot_product_attention(x, x[:, :1], x[:, :1], enable_gqa=True)
    except (TypeError, RuntimeError):
        return False
    return True


class _Inputs:
    """Q, K, V (leaf tensors requiring grad) and the output gradient of one case."""

    def __init__(self, torch, c: Case, s: Settings, gqa_native: bool):
        dt = getattr(torch, TORCH_DTYPES[s.dtype])
        kv = c.kv_heads if gqa_native else c.heads
        self.q = torch.randn(
            c.batch, c.heads, c.seq_len, c.head_dim, device=s.device, dtype=dt, requires_grad=True
        )
        self.k, self.v = (
            torch.randn(
                c.batch, kv, c.seq_len, c.head_dim, device=s.device, dtype=dt, requires_grad=True
            )
            for _ in range(2)
        )
        self.grad = torch.randn(c.batch, c.heads, c.seq_len, c.head_dim, device=s.device, dtype=dt)
        extra = {"enable_gqa": True} if gqa_native and c.kv_heads != c.heads else {}
        sdpa = torch.nn.functional.scaled_dot_product_attention
        self.forward = lambda: sdpa(self.q, self.k, self.v, is_causal=c.causal, **extra)

    def fresh_output(self):
        """A forward's output, gradients cleared (the untimed set-up of a backward call)."""
        self.q.grad = self.k.grad = self.v.grad = None
        return self.forward()


def time_call(torch, s: Settings, run, prepare=lambda: None) -> float:
    """Median seconds of run(prepare()) over s.repeats calls after s.warmup untimed ones;
    prepare's own work is not timed."""
    for _ in range(s.warmup):
        run(prepare())
    gpu = s.device.startswith("cuda")
    sync = (
        (lambda: torch.cuda.synchronize(s.device))
        if gpu
        else getattr(torch.cpu, "synchronize", lambda: None)
    )
    sync()
    if gpu:
        pairs = []
        for _ in range(s.repeats):
            state = prepare()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run(state)
            end.record()
            pairs.append((start, end))
        sync()
        return statistics.median(start.elapsed_time(end) for start, end in pairs) / 1e3
    times = []
    for _ in range(s.repeats):
        state = prepare()
        sync()
        t0 = time.perf_counter()
        run(state)
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


@dataclass(frozen=True)
class Measured:
    """One case's two rates."""

    case: Case
    kernel: str
    """'sdpa-<backend>'."""
    fwd_tflops: float
    bwd_tflops: float
    fwd_s: float
    bwd_s: float


def measure_case(torch, c: Case, s: Settings, gqa_native: bool) -> Measured:
    """Time one case's forward, then its backward."""
    inputs = _Inputs(torch, c, s, gqa_native)
    kernel = "sdpa-" + backend_name(inputs.fresh_output())
    fwd = time_call(torch, s, lambda _: inputs.forward())
    bwd = time_call(torch, s, lambda out: out.backward(inputs.grad), inputs.fresh_output)
    flops = c.attention.benchmark_flops
    return Measured(
        c, kernel, flops / fwd / 1e12, BACKWARD_FLOPS_FACTOR * flops / bwd / 1e12, fwd, bwd
    )


def measure(
    cases: list[Case], s: Settings, progress: bool = True
) -> tuple[list[Measured], list[Case]]:
    """(one Measured per case that ran, in order; the cases skipped for lack of device memory)."""
    torch = require_torch()
    bar = Progress("simsp profile attention", len(cases)) if progress else None
    oom = getattr(torch.cuda, "OutOfMemoryError", ())
    gqa = _gqa_native(torch)
    gpu = s.device.startswith("cuda")
    if gpu:
        torch.cuda.set_device(torch.device(s.device))
    done, skipped = [], []
    for c in cases:
        try:
            done.append(measure_case(torch, c, s, gqa))
        except oom:
            skipped.append(c)
        if gpu:
            torch.cuda.empty_cache()  # the case's tensors are gone with measure_case's frame
        if bar:
            bar.step(c.describe())
    return done, skipped


def points(measured: list[Measured], device: str, day: str) -> list[AttentionPoint]:
    """Two AttentionPoints (fwd, bwd) per measured case."""
    source = f"simsp profile attention {day}"
    return [
        AttentionPoint(
            device,
            m.kernel,
            m.case.head_dim,
            m.case.seq_len,
            m.case.causal,
            direction,
            m.fwd_tflops if direction == "fwd" else m.bwd_tflops,
            source,
        )
        for m in measured
        for direction in DIRECTIONS
    ]


def write_table(
    measured: list[Measured], s: Settings, path, command: str, extra: list[str] = ()
) -> list[AttentionPoint]:
    """Write the CSV with provenance comments (one line per case timed); return its points."""
    torch = require_torch()
    gpu = s.device.startswith("cuda")
    device, stamp = device_name(torch, s.device), today()
    timing = (
        "CUDA events around each call"
        if gpu
        else "time.perf_counter around each call, device synchronised"
    )
    gqa = (
        "K/V passed with their own heads, enable_gqa=True"
        if _gqa_native(torch)
        else "K/V repeated to the query heads before the timed call (this torch has no enable_gqa)"
    )
    comments = [
        "FlashAttention throughput measured by `simsp profile attention` "
        "(torch.nn.functional.scaled_dot_product_attention);",
        (
            "  tflops = benchmark FLOPs / median call time / 1e12; forward FLOPs "
            "4*s^2*d*batch*heads, halved when causal,"
        ),
        (
            f"  backward {BACKWARD_FLOPS_FACTOR:g} x forward (flash-attention "
            "benchmarks/benchmark_flash_attention.py)."
        ),
        (
            "fwd: the forward with inputs requiring grad; bwd: out.backward(random grad) of a "
            "fresh forward (untimed)."
        ),
        (
            f"timing: {timing}, median of {s.repeats} after {s.warmup} warm-up call(s); dtype "
            f"{s.dtype}"
        ),
        f"grouped-query attention: {gqa}",
        f"versions: {versions(torch)}",
        f"date: {stamp}",
        f"command: {command}",
    ]
    if not gpu:
        comments.append(
            "note: measured on the CPU; CPU rates, not GPU rates - for testing the pipeline, "
            "not for predictions"
        )
    comments += list(extra)
    comments += [
        f"case {m.case.describe()} {m.kernel}: fwd {m.fwd_s * 1e3:.4g} ms {m.fwd_tflops:.4g} "
        f"TFLOP/s, bwd {m.bwd_s * 1e3:.4g} ms {m.bwd_tflops:.4g} TFLOP/s"
        for m in measured
    ]
    pts = points(measured, device, stamp[:10])
    write_attention_table(path, pts, tuple(comments))
    return pts
