"""torch, imported lazily, and the small things every measurement shares: provenance, progress."""

import datetime
import os
import platform
import sys
import time

from simsp.errors import InputError

HINT = "the profiler needs torch: pip install -e '.[profile]'"


class TorchMissing(InputError):
    """torch is not installed; `simsp.cli.main.main` prints `simsp: error: <HINT>` and exits 2."""

    def __init__(self):
        super().__init__("torch", "import", None, HINT)

    def __str__(self):
        return HINT


def require_torch():
    """The torch module, or TorchMissing when the optional extra is not installed."""
    try:
        import torch
    except ImportError:
        raise TorchMissing() from None
    return torch


def resolve_device(torch, name: str | None) -> str:
    """'cpu' or 'cuda:N' (an index filled in), checked against what this machine has; None
    means the first GPU where there is one, else the CPU."""
    name = name or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise InputError("--device", "device", name, "must be cpu, cuda or cuda:N") from None
    if dev.type == "cpu":
        return "cpu"
    if dev.type != "cuda" or not torch.cuda.is_available():
        raise InputError(
            "--device", "device", name, "needs CUDA, which this torch build or machine lacks"
        )
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if index >= torch.cuda.device_count():
        raise InputError(
            "--device", "device", name, f"only {torch.cuda.device_count()} GPU(s) visible"
        )
    return f"cuda:{index}"


def device_name(torch, device: str) -> str:
    """'NVIDIA H100 80GB HBM3' for a CUDA device, else the CPU's name."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU {_cpu_model()} ({torch.get_num_threads()} threads)"


def _cpu_model() -> str:
    """The CPU's marketing name from /proc/cpuinfo where there is one, else the platform's."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def versions(torch) -> str:
    """'torch 2.4.0, CUDA 12.4' (or 'CUDA none' for a CPU build)."""
    return f"torch {torch.__version__}, CUDA {torch.version.cuda or 'none'}"


def fastest_s(torch, device: str, fn, repeats: int, warmup: int, rounds: int = 7) -> float:
    """Seconds per call of `fn`: the fastest of `rounds` rounds of the mean over `repeats` calls,
    after `warmup` untimed calls, the device synchronised around each round (a floor or a peak
    rate is a best case: slower rounds are other processes taking the core or the bus)."""
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(rounds):
        sync()
        t = time.perf_counter()
        for _ in range(repeats):
            fn()
        sync()
        best = min(best, (time.perf_counter() - t) / repeats)
    return best


def today() -> str:
    """UTC timestamp for provenance lines; SOURCE_DATE_EPOCH (reproducible-builds.org), where
    set, fixes it, so that a rerun writes the same bytes."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    now = (
        datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc)
        if epoch.isdigit()
        else datetime.datetime.now(datetime.timezone.utc)
    )
    return now.strftime("%Y-%m-%d %H:%M:%S UTC")


class Progress:
    """A counter line on stderr: rewritten in place on a terminal, every ~10% otherwise."""

    def __init__(self, label: str, total: int, stream=None):
        self.label, self.total, self.done = label, total, 0
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last_decile = -1

    def step(self, what: str = "") -> None:
        """Count one item done; `what` names it."""
        self.done += 1
        line = f"{self.label}: {self.done}/{self.total} {what}".rstrip()
        if self.tty:
            self.stream.write("\r\033[K" + line + ("\n" if self.done == self.total else ""))
        elif self.done * 10 // self.total != self._last_decile or self.done == self.total:
            self._last_decile = self.done * 10 // self.total
            self.stream.write(line + "\n")
        self.stream.flush()
