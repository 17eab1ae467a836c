"""Bounded work (issue 18): `simsp run workloads/gpt3-175b.yaml --global-batch 10000000` must
answer within 5 s without growing past 1 GiB, and a GEMM lookup must not slow down with the size
of its table.

Each command runs as a new process; its wall time and peak RSS (getrusage of the child) are
printed with the first lines it wrote. The GEMM lookups are timed on tables of 1,000 to 100,000
random shapes.

Usage: python benchmarks/bounded_work.py
"""

import random
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = (
    ["run", "workloads/gpt3-175b.yaml", "--global-batch", "10000000"],
    ["memory", "workloads/gpt3-175b.yaml", "--global-batch", "10000000"],
    ["run", "workloads/gpt-1t.yaml", "--global-batch", "10000000"],
)


def _child(argv: list[str]) -> tuple[float, float, int, str]:
    """(wall s, peak RSS MiB, exit code, first output lines) of one `simsp` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", *argv], capture_output=True, text=True, cwd=ROOT
    )
    wall = time.perf_counter() - t0
    peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, before) / 1024
    text = (proc.stderr + proc.stdout).strip().splitlines()
    return wall, peak, proc.returncode, "\n    ".join(text[:2])


def _lookup_s(extent: int) -> tuple[int, float]:
    """(table size, mean seconds of one interpolated lookup) for a table of every m, n, k on a
    factor-of-sqrt(2) grid over `extent` steps and all three layouts: the density of a measured
    grid, the size growing with the extent."""
    from simsp.tables.gemm import GemmPoint, GemmTable

    rng = random.Random(extent)
    sizes = [int(64 * 2 ** (i / 2)) for i in range(extent)]
    points = tuple(
        GemmPoint(m, n, k, 1, layout, rng.uniform(10, 300))
        for m in sizes
        for n in sizes
        for k in sizes
        for layout in ("TN", "NN", "NT")
    )
    table = GemmTable(points)
    top = sizes[-1]
    queries = [(*(rng.randint(70, top) for _ in range(3)), 1, "TN") for _ in range(2000)]
    t0 = time.perf_counter()
    for q in queries:
        table.lookup_tflops(*q)
    return len(points), (time.perf_counter() - t0) / len(queries)


def main() -> None:
    for argv in COMMANDS:
        wall, peak, rc, text = _child(argv)
        verdict = "ok" if wall < 5 and peak < 1024 else "OVER"
        print(f"simsp {' '.join(argv)}: {wall:.2f} s, {peak:.0f} MiB, exit {rc} [{verdict}]")
        print(f"    {text}")
    for extent in (7, 15, 32):
        n, seconds = _lookup_s(extent)
        print(f"GEMM lookup in a table of {n:>7,} shapes: {seconds * 1e6:7.1f} us")


if __name__ == "__main__":
    main()
