"""simsp: simulate one training iteration of a large transformer under TP/SP/CP/PP/DP/FSDP.

Implements Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
Models" (MLSys 2023, arXiv 2205.05198). The tiers are in docs/architecture.md; the public API
is simsp.api:

    >>> from simsp import load_workload, load_hardware, run, estimate
    >>> w = load_workload("workloads/gpt3-175b.yaml")
    >>> hw = load_hardware("hardware/dgx-a100-80gb.yaml")
    >>> run(w, hw).iteration_time_s        # event simulation
    >>> estimate(w, hw).iteration_time_s   # closed form
"""

__version__ = "0.1.0"

_API = ("estimate", "load_hardware", "load_workload", "memory_report", "run")
__all__ = [*_API, "__version__"]


def __getattr__(name):
    """The public API (simsp.api), imported on first use (PEP 562): `import simsp` alone stays
    light, so the profiler runs on a bare GPU image without the simulation's dependencies."""
    if name not in _API:
        raise AttributeError(f"module 'simsp' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module("simsp.api"), name)
