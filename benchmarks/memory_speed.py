"""How long `simsp memory` takes for the 1T workload (issue: well under a second).

Usage: python benchmarks/memory_speed.py
"""

import subprocess
import sys
import time

from simsp.io.config import load_hardware, load_workload
from simsp.sim.memory import memory_report


def main():
    hw = load_hardware()
    start = time.perf_counter()
    w = load_workload("workloads/gpt-1t.yaml")
    report = memory_report(w, hw)
    load_and_compute = time.perf_counter() - start
    best = min(_timed(lambda: memory_report(w, hw)) for _ in range(5))
    print(
        f"gpt-1t memory: load + compute {load_and_compute * 1e3:.1f} ms, compute alone "
        f"{best * 1e3:.1f} ms (best of 5), {len(report.stages)} stages, peak "
        f"{report.peak_bytes / 2**30:.2f} GiB"
    )
    cli = min(
        _timed(
            lambda: subprocess.run(
                [sys.executable, "-m", "simsp", "memory", "workloads/gpt-1t.yaml", "--json"],
                check=True,
                capture_output=True,
            )
        )
        for _ in range(3)
    )
    print(f"`simsp memory workloads/gpt-1t.yaml --json` as a new process: {cli:.2f} s (best of 3)")


def _timed(f):
    t = time.perf_counter()
    f()
    return time.perf_counter() - t


if __name__ == "__main__":
    main()
