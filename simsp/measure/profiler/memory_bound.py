"""Element-wise kernels' memory rates on this device: the streaming curve by size and the loss.

The cost model times a memory-bound kernel (norms, activations, residual adds, FP8 casts) at its
bytes over the achieved fraction of HBM for its size (`memory_bound.efficiency_by_bytes`), and
the cross-entropy at the measured rate of its implementation where one is known. Shipped files
borrow that curve from another GPU's BabelStream run and Calculon's size steps; this measures
both on the device itself.

* the curve: a bf16 `a + b -> c` (BabelStream's Add: two reads and a write, 6 bytes an element)
  at each size, 2x apart, its bytes over its time; each size cycles through enough buffers that
  a call reads what the cache no longer holds, as BabelStream's arrays are sized to. The calls
  are timed from the host, one launch each: where a kernel is shorter than its launch (on a GPU,
  sizes below about 16 MiB), the rate includes the host's dispatch, as a layer's small kernels
  do when the host is not ahead of them;
* the loss: Megatron's unfused vocabulary-parallel cross-entropy at tp 1 (its all-reduces are
  then identities), one torch op a step as Megatron-LM core_v0.14.0
  tensor_parallel/cross_entropy.py runs them, forward and backward, at the bytes
  simsp/model/blocks/loss.py counts for it (UNFUSED: 38 + 14 a logit), launches included as the
  model's rate includes them. Transformer Engine's Triton kernel needs TE on a GPU and is not
  timed here;
* the eager kernels of a torch-native Llama block, as torchtitan's model code runs them
  (model/blocks/elementwise.py): RMSNorm with its fp32 upcast, complex-form rotary embedding on
  q and k, F.silu(a) * b, each forward and backward (autograd's kernels: forward and backward
  timed together, less the forward), at Llama-3-8B's shapes on a GPU; GB/s of the bytes the
  fused kernel moves, the hardware file's `eager_*_gbps`.
"""

import itertools
from dataclasses import dataclass

from simsp.errors import InputError
from simsp.measure.profiler._torch import (
    device_name,
    fastest_s,
    require_torch,
    resolve_device,
    today,
    versions,
)
from simsp.model.blocks.loss import UNFUSED

STREAM_BYTES = 6
"""Bytes `a + b -> c` moves an element in bf16: two reads and one write of 2 bytes."""
DEFAULTS = {
    "cuda": {"sizes": tuple(2**e for e in range(16, 31)), "tokens": 4096, "vocab": 32064},
    "cpu": {"sizes": tuple(2**e for e in range(16, 23)), "tokens": 64, "vocab": 4096},
}
"""Bytes moved a call: 64 KiB to 1 GiB on a GPU, to 4 MiB on a CPU, 2x apart (the cost model
holds each rate up to the next size, so a sparse curve would overprice a launch-bound kernel
near the top of its step); the loss over a Llama-3 vocabulary shard at tp 4 (128256 / 4, 4096
tokens) on a GPU, a small one on a CPU."""
EAGER_SHAPES = {
    "cuda": {
        "tokens": 8192,
        "hidden": 4096,
        "heads": 32,
        "kv_heads": 8,
        "head_dim": 128,
        "ffn": 14336,
    },
    "cpu": {"tokens": 64, "hidden": 256, "heads": 4, "kv_heads": 2, "head_dim": 64, "ffn": 512},
}
"""A Llama-3-8B layer at 8k tokens on a GPU (the shapes the shipped H100 and A100 rates were
measured nearest to); a small one on a CPU."""
REPEATS = {"cuda": 20, "cpu": 3}
ROTATE_BYTES = {"cuda": 1 << 30, "cpu": 1 << 29}
"""Buffers a size cycles through together, so that each call reads from HBM (DRAM), not from
the cache the previous call filled: 1 GiB on a GPU (B200's L2 is 126 MB), 512 MiB on a CPU
(a large server's last-level cache reaches 256 MB or more)."""
WARMUP, ROUNDS = 2, 7
"""Untimed calls, then timed rounds of `repeats` calls (the fastest round's mean is kept)."""
OVER_HBM = 1.05
"""`calibrate --memory` refuses a largest-size rate above this times the base GPU's hbm_gbps."""


@dataclass(frozen=True)
class MemoryRates:
    """One device's element-wise rates."""

    stream_gbps: tuple[tuple[int, float], ...]
    """(bytes moved a call, GB/s) of the bf16 add, ascending."""
    cross_entropy_gbps: float
    """Megatron's unfused cross-entropy, model/blocks/loss.py's bytes over forward + backward,
    GB/s."""
    cross_entropy_ms: float
    tokens: int
    vocab: int
    device: str
    versions: str
    date: str
    eager_gbps: tuple[tuple[str, float], ...] = ()
    """(MemoryBoundSpec field, GB/s of the fused kernel's bytes) of the eager torch kernels."""

    def yaml_lines(self, command: str) -> list[str]:
        """The lines `simsp calibrate --memory` reads, provenance first."""
        per_logit = UNFUSED.forward_bytes + UNFUSED.backward_bytes
        lines = [
            f"# measured by `{command}` on {self.device}, {self.versions}, {self.date}",
            f"# stream_gbps: bf16 a + b -> c ({STREAM_BYTES} bytes an element), GB/s by bytes "
            "moved a call, each size cycling through buffers that overflow the cache (fastest "
            "round of the mean)",
            "stream_gbps:",
            *(f"  {size}: {gbps:.5g}" for size, gbps in self.stream_gbps),
            f"# Megatron's unfused cross-entropy (core_v0.14.0 op sequence, tp 1), {self.tokens} "
            f"tokens x {self.vocab} vocabulary: forward + backward {self.cross_entropy_ms:.3f} ms "
            f"at simsp/model/blocks/loss.py's {per_logit:.0f} bytes a logit",
            f"unfused_cross_entropy_gbps: {self.cross_entropy_gbps:.5g}",
        ]
        if self.eager_gbps:
            lines.append(
                "# eager torch kernels of a torchtitan Llama block (fp32-upcast RMSNorm, complex "
                "RoPE, silu * mul), GB/s of the fused kernel's bytes"
            )
            lines += [f"{key}: {gbps:.5g}" for key, gbps in self.eager_gbps]
        if self.device.startswith("CPU"):
            lines.insert(1, "# (on the CPU: the CPU's memory rates, not a GPU's)")
        return lines


def unfused_cross_entropy(torch, logits, target):
    """Megatron's _VocabParallelCrossEntropy forward then backward at tp 1, one op a step, on
    bf16 logits [tokens, vocab]; returns the loss and the bf16 logits' gradient."""
    x = logits.float()  # the fp32 copy the loss works on
    x.sub_(x.max(dim=-1)[0].unsqueeze(-1))
    rows = torch.arange(x.shape[0], device=x.device)
    predicted = x[rows, target]
    torch.exp(x, out=x)
    total = x.sum(dim=-1)
    loss = torch.log(total) - predicted
    x.div_(total.unsqueeze(-1))  # the softmax, kept for backward
    # backward: softmax - one-hot, times the loss gradient (mean over tokens), to bf16
    x[rows, target] -= 1.0
    x.mul_(1.0 / x.shape[0])
    return loss, x.to(logits.dtype)


def measure(
    device: str | None = None,
    sizes: tuple[int, ...] | None = None,
    tokens: int | None = None,
    vocab: int | None = None,
    repeats: int | None = None,
) -> MemoryRates:
    """Time the bf16 add at each size and the unfused loss on `device` (default: the first GPU
    where there is one)."""
    torch = require_torch()
    device = resolve_device(torch, device)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    d = DEFAULTS[kind]
    sizes = d["sizes"] if sizes is None else tuple(sorted(set(sizes)))
    if sizes and sizes[0] >= STREAM_BYTES:  # one timing a number of bytes moved
        sizes = tuple(sorted({s // STREAM_BYTES * STREAM_BYTES for s in sizes}))
    tokens = d["tokens"] if tokens is None else tokens
    vocab = d["vocab"] if vocab is None else vocab
    repeats = REPEATS[kind] if repeats is None else repeats
    for name, value in (("tokens", tokens), ("vocab", vocab), ("repeats", repeats)):
        if value < 1:
            raise InputError(f"--{name}", name, value, "must be at least 1")
    if not sizes or sizes[0] < STREAM_BYTES:
        raise InputError("--sizes", "sizes", sizes, f"must each be at least {STREAM_BYTES} bytes")
    torch.manual_seed(0)
    stream = tuple(_add_gbps(torch, device, kind, size, repeats) for size in sizes)
    logits = torch.randn(tokens, vocab, device=device, dtype=torch.bfloat16)
    target = torch.randint(0, vocab, (tokens,), device=device)
    seconds = fastest_s(
        torch, device, lambda: unfused_cross_entropy(torch, logits, target), repeats, WARMUP, ROUNDS
    )
    per_logit = UNFUSED.forward_bytes + UNFUSED.backward_bytes
    return MemoryRates(
        stream,
        per_logit * tokens * vocab / seconds / 1e9,
        seconds * 1e3,
        tokens,
        vocab,
        device_name(torch, device),
        versions(torch),
        today(),
        eager_kernels(torch, device, EAGER_SHAPES[kind], repeats),
    )


def _rmsnorm(torch, x, weight, eps=1e-6):
    """torchtitan@3f20451 torchtitan/models/norms.py RMSNorm: fp32 upcast, as eager ops."""
    f = x.float()
    return (f * torch.rsqrt(f.pow(2).mean(-1, keepdim=True) + eps)).type_as(x) * weight


def _rope(torch, q, k, freqs):
    """torchtitan models/common/rope.py apply_rotary_emb: complex form, fp32, as eager ops."""

    def one(x):
        c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(c * freqs).flatten(-2).type_as(x)

    return one(q), one(k)


def eager_kernels(torch, device: str, shape: dict, repeats: int) -> tuple[tuple[str, float], ...]:
    """GB/s of the fused bytes (simsp's op bytes) of each eager form, forward and backward:
    the backward is forward + backward timed together, less the forward."""
    t, h, f = shape["tokens"], shape["hidden"], shape["ffn"]
    a, g, d = shape["heads"], shape["kv_heads"], shape["head_dim"]
    F = torch.nn.functional
    bf16 = {"device": device, "dtype": torch.bfloat16}

    def leaf(*size):
        return torch.randn(*size, **bf16).requires_grad_()

    x, weight = leaf(t, h), torch.ones(h, **bf16)
    q, k = leaf(t, a, d), leaf(t, g, d)
    angles = torch.rand(t, 1, d // 2, device=device)
    freqs = torch.polar(torch.ones_like(angles), angles)
    gate, up = leaf(t, f), leaf(t, f)
    forms = {
        # kind: (forward, outputs' backward, fused bytes forward, backward) as simsp's ops count
        "rmsnorm": (lambda: (_rmsnorm(torch, x, weight),), 2 * 2 * t * h, 3 * 2 * t * h),
        "rope": (
            lambda: _rope(torch, q, k, freqs),
            2 * 2 * t * (a + g) * d,
            2 * 2 * t * (a + g) * d,
        ),
        "swiglu": (lambda: (F.silu(gate) * up,), 3 * 2 * t * f, 5 * 2 * t * f),
    }
    out = []
    for kind, (forward, fwd_bytes, bwd_bytes) in forms.items():

        def both(forward=forward):
            ys = forward()
            torch.autograd.backward(ys, [torch.ones_like(y) for y in ys])

        fwd_s = fastest_s(torch, device, forward, repeats, WARMUP, ROUNDS)
        bwd_s = max(fastest_s(torch, device, both, repeats, WARMUP, ROUNDS) - fwd_s, 1e-9)
        out += [
            (f"eager_{kind}_fwd_gbps", fwd_bytes / fwd_s / 1e9),
            (f"eager_{kind}_bwd_gbps", bwd_bytes / bwd_s / 1e9),
        ]
    return tuple(out)


def _add_gbps(torch, device: str, kind: str, nbytes: int, repeats: int) -> tuple[int, float]:
    """(bytes moved, GB/s) of a bf16 c = a + b of about `nbytes`: the operands are successive
    slices of three buffers that together fill ROTATE_BYTES, so a call's slices are untouched
    since the buffers were filled, or were last touched a whole buffer ago: they stream from
    memory. Only the slices the timed calls use are made (memory bounded at any size)."""
    n = max(1, nbytes // STREAM_BYTES)
    copies = max(1, ROTATE_BYTES[kind] // (STREAM_BYTES * n))
    a, b, c = (torch.ones(copies * n, dtype=torch.bfloat16, device=device) for _ in range(3))
    calls = WARMUP + ROUNDS * repeats
    turn = itertools.cycle(
        [(a[i : i + n], b[i : i + n], c[i : i + n]) for i in (k % copies * n for k in range(calls))]
    )

    def add():
        x, y, out = next(turn)
        torch.add(x, y, out=out)

    seconds = fastest_s(torch, device, add, repeats, warmup=WARMUP, rounds=ROUNDS)
    return STREAM_BYTES * n, STREAM_BYTES * n / seconds / 1e9


EAGER_KEYS = tuple(
    f"eager_{kind}_{way}_gbps" for kind in ("rmsnorm", "rope", "swiglu") for way in ("fwd", "bwd")
)
MEMORY_KEYS = ("stream_gbps", "unfused_cross_entropy_gbps", *EAGER_KEYS)
"""What `simsp profile memory --out` writes."""


def memory_request(path: str | None, base: str) -> dict:
    """Request fields for a `simsp profile memory --out` file: its bf16 add rates as the base
    GPU's `memory_bound.efficiency_by_bytes` (GB/s over gpu.hbm_gbps, the smallest size's step
    from 0 bytes; a rate at or past HBM held at 1, a largest-size rate over OVER_HBM x HBM
    refused: the base file is another GPU's), its loss rate as
    `unfused_cross_entropy_gbps`, and its provenance lines as the new file's notes. Empty
    without a file."""
    if not path:
        return {}
    from simsp.io.config import read_yaml
    from simsp.measure.profiler.calibrate import measured_source

    values = read_yaml(path)
    if not isinstance(values, dict) or not values:
        raise InputError(
            path, "file", type(values).__name__, f"must map {' and '.join(MEMORY_KEYS)}"
        )
    for key in values:
        if key not in MEMORY_KEYS:
            raise InputError(
                path, key, values[key], f"unknown key; it holds {' and '.join(MEMORY_KEYS)}"
            )
    out = []
    if "stream_gbps" in values:
        out.append(("efficiency_by_bytes", _steps(path, values["stream_gbps"], base)))
    if "unfused_cross_entropy_gbps" in values:
        ce = values["unfused_cross_entropy_gbps"]
        if not _positive(ce):
            raise InputError(path, "unfused_cross_entropy_gbps", ce, f"must be GB/s in {RANGE}")
        out.append(("unfused_cross_entropy_gbps", float(ce)))
    for key in EAGER_KEYS:
        if key in values:
            if not _positive(values[key]):
                raise InputError(path, key, values[key], f"must be GB/s in {RANGE}")
            out.append((key, float(values[key])))
    notes = tuple(line.lstrip("#").strip() for line in measured_source(path))
    return {"memory_bound": tuple(out), "notes": notes}


def _steps(path: str, stream, base: str) -> dict:
    """stream_gbps (bytes -> GB/s) as efficiency steps of the base GPU's HBM, checked; six
    significant digits, so a slow rate stays above zero."""
    from simsp.io.config import load_hardware

    if not isinstance(stream, dict) or not stream:
        raise InputError(path, "stream_gbps", stream, "must map bytes moved to GB/s")
    for size, gbps in stream.items():
        if not (_positive(size) and _positive(gbps)):
            key = f"stream_gbps[{str(size)[:24]}]"
            raise InputError(path, key, gbps, f"size and GB/s must each be a number in {RANGE}")
    hbm, largest = load_hardware(base).gpu.hbm_gbps, max(stream)
    if stream[largest] > OVER_HBM * hbm:
        raise InputError(
            path,
            f"stream_gbps[{largest}]",
            stream[largest],
            f"is over {OVER_HBM:g}x the hbm_gbps of {base} ({hbm:g}): measured on another GPU?",
        )
    sizes = sorted(stream)
    return {
        0.0 if i == 0 else float(b): float(f"{min(1.0, stream[b] / hbm):.6g}")
        for i, b in enumerate(sizes)
    }


RANGE = "(0, 2**53]"


def _positive(x) -> bool:
    """A number in RANGE: finite, and an int that a float holds."""
    number = not isinstance(x, bool) and isinstance(x, (int, float))
    return number and 0 < x <= 2**53
