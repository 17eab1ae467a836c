"""The optimizer step's memory rate: how fast this device runs a fused Adam update.

Megatron-LM updates fp32 master weights with a fused multi-tensor Adam (apex `FusedAdam` in
2022, Transformer Engine's or torch's since): per parameter it reads the grad, the master weight
and both moments and writes the weight and the moments, 28 bytes. Such kernels launch over lists
of tensors and reach less of the HBM than one long streaming copy does, so the cost model times
the update at this measured rate instead of the streaming curve.

The parameters are shaped like a transformer rank's: per layer the QKV, projection and two MLP
weights with their biases and two layer-norms (12h² + 13h values), as many layers as make up
`params`. torch's fused AdamW runs them (its foreach form where the build has no fused kernel).
"""

import math
from dataclasses import dataclass

from simsp.cost.stage_time import ADAM_BYTES
from simsp.errors import InputError
from simsp.measure.profiler._torch import (
    device_name,
    fastest_s,
    require_torch,
    resolve_device,
    today,
    versions,
)

DEFAULTS = {
    "cuda": {"params": 500e6, "hidden": 2048, "repeats": 20},
    "cpu": {"params": 20e6, "hidden": 512, "repeats": 3},
}
"""A GPU step over 0.5 B parameters moves 14 GB (8 GB of tensors); a CPU one over 20 M, 0.56 GB."""
COPY_MAX_ELEMENTS = 256 * 2**20
"""The comparison copy moves at most 2 GiB (1 GiB more of device memory)."""


@dataclass(frozen=True)
class AdamRate:
    """One measurement of the fused Adam update."""

    gbps: float
    """ADAM_BYTES a parameter over the step's time, GB/s."""
    step_ms: float
    params: int
    tensors: int
    implementation: str
    copy_gbps: float
    """A streaming fp32 copy (up to 2 GiB moved) on the same device, GB/s, for comparison."""
    device: str
    versions: str
    date: str

    def yaml_lines(self, command: str) -> list[str]:
        """Hardware YAML `calibration:` lines, provenance first."""
        lines = [
            f"# measured by `{command}` on {self.device}, {self.versions}, {self.date}",
            f"# {self.implementation} over {self.params:,} fp32 parameters in {self.tensors} "
            f"tensors: {self.step_ms:.3f} ms a step at {ADAM_BYTES:.0f} bytes a parameter",
            f"# (a streaming copy on the same device: {self.copy_gbps:.1f} GB/s; "
            f"the update reaches {self.gbps / self.copy_gbps:.2f} of it)",
        ]
        if self.device.startswith("CPU"):
            lines.append("# (on the CPU: the CPU's memory rate, not a GPU's)")
        return lines + [f"adam_gbps: {self.gbps:.1f}"]


def layer_shapes(hidden: int) -> list[tuple[int, ...]]:
    """One transformer layer's parameters, as Megatron holds them (weights [out, in])."""
    h = hidden
    return [
        (h,),
        (h,),
        (3 * h, h),
        (3 * h,),
        (h, h),
        (h,),
        (h,),
        (h,),
        (4 * h, h),
        (4 * h,),
        (h, 4 * h),
        (h,),
    ]


def measure(
    device: str | None = None,
    params: float | None = None,
    hidden: int | None = None,
    repeats: int | None = None,
) -> AdamRate:
    """Time torch's fused AdamW over about `params` parameters on `device` (default: the first GPU
    where there is one); fastest of 5 rounds."""
    torch = require_torch()
    device = resolve_device(torch, device)
    kind = "cuda" if device.startswith("cuda") else "cpu"
    d = DEFAULTS[kind]
    params, hidden, repeats = (
        d[k] if v is None else v
        for k, v in (("params", params), ("hidden", hidden), ("repeats", repeats))
    )
    for name, value in (("params", params), ("hidden", hidden), ("repeats", repeats)):
        if value < 1:
            raise InputError(f"--{name}", name, value, "must be at least 1")
    per_layer = sum(math.prod(s) for s in layer_shapes(hidden))
    layers = max(1, round(params / per_layer))
    torch.manual_seed(0)
    weights = [
        torch.nn.Parameter(torch.randn(s, device=device) * 0.02)
        for _ in range(layers)
        for s in layer_shapes(hidden)
    ]
    for p in weights:
        p.grad = torch.randn_like(p) * 1e-3
    opt, implementation = _adamw(torch, weights)
    step_s = fastest_s(
        torch, device, opt.step, repeats, warmup=2, rounds=5
    )  # the first step makes the moments
    n = sum(p.numel() for p in weights)
    return AdamRate(
        ADAM_BYTES * n / step_s / 1e9,
        step_s * 1e3,
        n,
        len(weights),
        implementation,
        _copy_gbps(torch, device, min(n, COPY_MAX_ELEMENTS), repeats),
        device_name(torch, device),
        versions(torch),
        today(),
    )


def _adamw(torch, weights):
    """torch's fused AdamW where this build and device have it, else its foreach form."""
    try:
        return torch.optim.AdamW(
            weights, lr=1e-4, weight_decay=0.01, fused=True
        ), "torch.optim.AdamW(fused=True)"
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(
            weights, lr=1e-4, weight_decay=0.01, foreach=True
        ), "torch.optim.AdamW(foreach=True)"


def _copy_gbps(torch, device: str, elements: int, repeats: int) -> float:
    """GB/s of a streaming fp32 copy of `elements` (4 bytes read and 4 written each)."""
    src = torch.ones(elements, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    return (
        8
        * elements
        / fastest_s(torch, device, lambda: dst.copy_(src), repeats, warmup=2, rounds=5)
        / 1e9
    )
