"""The event-simulation sweep of GPT-3 175B on 64 GPUs, on 2 local cores (target < 2 minutes).

Every valid tp, pp in {1, 2, 4, 8, 16} (dp = 64 / (tp pp)), SP on and off, the three recompute
modes and micro batches 1, 2, 4 (workloads/sweeps/gpt3-175b-64gpu.yaml), each configuration
replayed by the engine. Prints the wall time, the configuration counts and the best fitting
configuration against the paper's present-work setting (`simsp run workloads/gpt3-175b.yaml`:
tp 8, pp 8, interleaved v=3, SP, selective recompute, b=1).

    python benchmarks/sweep_175b.py [--jobs 2] [--out FILE.csv]
"""

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simsp.api import run  # noqa: E402
from simsp.io.config import load_hardware, load_workload  # noqa: E402
from simsp.present.report import describe  # noqa: E402
from simsp.sweep import best, describe_row, load_spec, run_sweep, summary, table  # noqa: E402
from simsp.units import GIB  # noqa: E402

SPEC = ROOT / "workloads" / "sweeps" / "gpt3-175b-64gpu.yaml"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", help="CSV to keep (default: a temporary file)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or str(Path(tmp) / "sweep.csv")
        t0 = time.perf_counter()
        outcome = run_sweep(load_spec(SPEC), out, "local", args.jobs, progress=False)
        wall = time.perf_counter() - t0
    c = outcome.counts
    print(
        f"wall time {wall:.1f} s on {args.jobs} processes ({'meets' if wall < 120 else 'MISSES'} < "
        "2 min)"
    )
    print(
        f"grid points {c.grid_points}: {c.invalid} invalid, {c.duplicates} duplicates (SP with "
        f"tp=1), {c.fallback} run as 1F1B where interleaving is invalid; {c.configs} "
        f"configurations simulated ({outcome.simulated} this run), "
        f"{sum(r['fits'] == 'true' for r in outcome.rows)} fit"
    )
    print(summary(outcome))
    print()
    print(table(best(outcome.rows, 10)))
    print()
    top = best(outcome.rows, 1)
    paper_w = load_workload(ROOT / "workloads" / "gpt3-175b.yaml")
    paper = run(paper_w, load_hardware(ROOT / "hardware" / "dgx-a100-80gb.yaml"))
    print(
        f"paper setting  {describe(paper_w, paper.hardware).split(': ', 1)[1]}: "
        f"{paper.iteration_time_s:.3f} s, MFU {paper.mfu():.1%}, peak "
        f"{paper.memory.peak_bytes / GIB:.2f} GiB"
    )
    if top:
        r = top[0]
        t = float(r["iteration_time_s"])
        print(
            f"best fitting   {describe_row(r)}: {t:.3f} s, MFU {float(r['mfu']):.1%}, peak "
            f"{int(r['peak_bytes']) / GIB:.2f} GiB -> {paper.iteration_time_s / t - 1:+.1%} "
            "throughput vs the paper's setting"
        )


if __name__ == "__main__":
    main()
