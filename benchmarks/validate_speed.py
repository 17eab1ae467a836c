"""Validation speed: the whole `simsp validate` (18 paper values + 1,549 vTrain runs) must finish
in under 5 minutes. Prints the wall time of building the cases, of predicting them serially on a
sample, and of the full run with all CPUs, plus each set's figures.

Usage: python benchmarks/validate_speed.py [--workers N]
"""

import argparse
import os
import time

from simsp import validate as V


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=None, help="processes (default: all CPUs)")
    args = ap.parse_args()
    workers = args.workers or os.cpu_count() or 1

    t = time.perf_counter()
    cases, skipped = V.build_cases()
    print(
        f"built {len(cases)} cases ({len(skipped)} rows skipped) in {time.perf_counter() - t:.2f} s"
    )

    sample = V.subset([c for c in cases if c.set.startswith("vtrain")], 50)
    V.predict(sample[0])  # reading the calibration tables is a one-off
    t = time.perf_counter()
    for c in sample:
        V.predict(c)
    per_case = (time.perf_counter() - t) / len(sample)
    print(
        f"serial: {per_case * 1e3:.1f} ms a vTrain case (mean of {len(sample)}), "
        f"~{per_case * len(cases):.0f} s for all on one core"
    )

    v = V.run_validation(workers=workers)
    print(
        f"full validation, {workers} worker(s): {len(v.results)} cases in {v.wall_s:.1f} s "
        f"({'under' if v.wall_s < 300 else 'OVER'} the 300 s budget)"
    )
    for name, m in v.summary()["sets"].items():
        print(
            f"  {name:14s} n={m['n']:5d} MAPE {m['mape']:6.1%} max {m['max_abs_error']:6.1%} bias "
            f"{m['bias']:+6.1%}"
        )


if __name__ == "__main__":
    main()
