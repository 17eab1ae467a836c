"""Host (framework) time of one transformer layer: what the CPU spends issuing its work.

A Megatron-style GPT layer (layer-norm, QKV linear + bias, baddbmm scores, causal mask,
softmax, dropout, bmm, context permute, projection, bias-dropout-add, layer-norm, MLP with GeLU,
bias-dropout-add) runs at tiny sizes, so the device's own work is negligible and the wall time
is PyTorch eager dispatch, autograd and Python: the floor a layer cannot go below however small
its kernels. Measured for the forward, the backward, and the backward's extra host work under
full (whole layer checkpointed) and selective (core attention checkpointed) recompute, both
with reentrant checkpointing as Megatron-LM's `tensor_parallel.checkpoint`.
"""

from dataclasses import dataclass

from simsp.measure.profiler._torch import (
    device_name,
    fastest_s,
    require_torch,
    resolve_device,
    today,
    versions,
)

TINY = {"hidden": 64, "heads": 2, "seq": 16, "batch": 1}


@dataclass(frozen=True)
class HostTimes:
    """Microseconds of host time per layer pass."""

    forward_us: float
    backward_us: float
    recompute_full_us: float
    """Extra backward host time when the whole layer is recomputed."""
    recompute_selective_us: float
    """Extra backward host time when only core attention is recomputed."""
    device: str
    versions: str
    date: str

    def yaml_lines(self, command: str) -> list[str]:
        """The hardware YAML `calibration:` lines, with provenance comments."""
        src = [f"# measured by `{command}` on {self.device}, {self.versions}, {self.date}"]
        if self.device.startswith("CPU"):
            src.append(
                "# (on the CPU: no CUDA kernel-launch or NCCL call costs in it, an underestimate "
                "for a GPU host)"
            )
        return [
            *src,
            f"host_forward_us: {self.forward_us:.1f}",
            f"host_backward_us: {self.backward_us:.1f}",
            f"host_recompute_full_us: {self.recompute_full_us:.1f}",
            f"host_recompute_selective_us: {self.recompute_selective_us:.1f}",
        ]


def _layer(torch, device):
    """The tiny Megatron-style layer: (module, input), with the core attention as a method."""
    F = torch.nn.functional
    h, a, s, b = TINY["hidden"], TINY["heads"], TINY["seq"], TINY["batch"]
    d = h // a

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = torch.nn.LayerNorm(h), torch.nn.LayerNorm(h)
            self.qkv, self.proj = torch.nn.Linear(h, 3 * h), torch.nn.Linear(h, h, bias=False)
            self.fc1, self.fc2 = (
                torch.nn.Linear(h, 4 * h, bias=False),
                torch.nn.Linear(4 * h, h, bias=False),
            )
            self.b1, self.b2, self.b_proj = (
                torch.nn.Parameter(torch.zeros(n)) for n in (4 * h, h, h)
            )
            self.checkpoint_core = False

        def core(self, q, k, v):
            scores = torch.baddbmm(
                torch.empty(b * a, s, s, device=q.device),
                q.transpose(0, 1),
                k.transpose(0, 1).transpose(1, 2),
                beta=0.0,
                alpha=d**-0.5,
            )
            mask = torch.triu(torch.ones(s, s, dtype=torch.bool, device=q.device), 1)
            probs = F.dropout(torch.softmax(scores.masked_fill(mask, -1e4), -1), 0.1, True)
            return torch.bmm(probs, v.transpose(0, 1)).transpose(0, 1).contiguous().view(s, b, h)

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).view(s, b * a, 3 * d).split(d, dim=-1)
            if self.checkpoint_core:
                ctx = torch.utils.checkpoint.checkpoint(self.core, q, k, v, use_reentrant=True)
            else:
                ctx = self.core(q, k, v)
            x = x + F.dropout(self.proj(ctx) + self.b_proj, 0.1, True)
            mlp = self.fc2(F.gelu(self.fc1(self.ln2(x)) + self.b1))
            return x + F.dropout(mlp + self.b2, 0.1, True)

    return Layer().to(device), torch.randn(s, b, h, device=device, requires_grad=True)


def _per_call_us(torch, device, fn, repeats: int) -> float:
    """Microseconds per call: fastest of 7 rounds after warm-up (the host floor is a minimum)."""
    return fastest_s(torch, device, fn, repeats, warmup=max(20, repeats // 10)) * 1e6


def measure(device: str = "cpu", repeats: int = 500) -> HostTimes:
    """Host time of the tiny layer's passes on `device` (one CPU thread, as a training rank
    uses)."""
    torch = require_torch()
    device = resolve_device(torch, device)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layer, x = _layer(torch, device)
    ckpt = torch.utils.checkpoint.checkpoint

    def fwd(f=layer):
        return f(x)

    def fwd_bwd(f=layer):
        f(x).sum().backward()

    def full_fwd():
        return ckpt(layer, x, use_reentrant=True)

    def full_fwd_bwd():
        ckpt(layer, x, use_reentrant=True).sum().backward()

    forward = _per_call_us(torch, device, fwd, repeats)
    backward = _per_call_us(torch, device, fwd_bwd, repeats) - forward
    full = _per_call_us(torch, device, full_fwd_bwd, repeats) - _per_call_us(
        torch, device, full_fwd, repeats
    )
    layer.checkpoint_core = True
    selective = _per_call_us(torch, device, fwd_bwd, repeats) - _per_call_us(
        torch, device, fwd, repeats
    )
    return HostTimes(
        forward,
        backward,
        max(0.0, full - backward),
        max(0.0, selective - backward),
        device_name(torch, device),
        versions(torch),
        today(),
    )
