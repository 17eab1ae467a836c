"""How many configurations a second the closed-form tier screens, on one core.

A GPT-3 175B grid over 64 to 1024 GPUs (tp, pp, SP, recompute, micro batch, schedule, chunks,
global batch): enumeration (validation and dedupe included) plus `analytic.estimate` of each
valid configuration, first with every cache empty (the layer costs, GEMM lookups and schedule
walks memoised as they are met), then again warm. Prints the rates; the target is >= 2,000
configurations a second. A sample is checked against the event simulation on the way.

    python benchmarks/screening_speed.py [--sample N]
"""

import argparse
import dataclasses
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simsp.cost import cost_model  # noqa: E402
from simsp.io.config import load_hardware, load_workload  # noqa: E402
from simsp.sim import closed_form as analytic  # noqa: E402
from simsp.sweep import SweepSpec, enumerate_configs, event_result  # noqa: E402

GRID = (
    ("tp", (1, 2, 4, 8, 16)),
    ("pp", (1, 2, 4, 8, 16, 32)),
    ("sp", (True, False)),
    ("recompute", ("none", "selective", "full")),
    ("micro_batch", (1, 2, 4, 8)),
    ("schedule", ("1f1b", "interleaved", "gpipe")),
    ("virtual_stages", (2, 3, 4)),
    ("global_batch", (512, 1536)),
)
GPUS = (64, 128, 256, 512, 1024)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sample", type=int, default=20, help="configurations also event-simulated (0: none)"
    )
    args = ap.parse_args()
    hw = load_hardware(ROOT / "hardware" / "dgx-a100-80gb.yaml")
    base = load_workload(ROOT / "workloads" / "gpt3-175b.yaml")
    specs = [SweepSpec("benchmark", base, (hw,), g, GRID) for g in GPUS]
    cost_model(hw)  # calibration files read once per process: not part of screening
    analytic.clear_caches()

    t0 = time.perf_counter()
    configs, points = [], 0
    for spec in specs:
        found, counts = enumerate_configs(spec)
        configs += found
        points += counts.grid_points
    t_enum = time.perf_counter() - t0
    estimates = [analytic.estimate(c.workload, c.hardware) for c in configs]
    t_cold = time.perf_counter() - t0
    t1 = time.perf_counter()
    for c in configs:
        analytic.estimate(c.workload, c.hardware)
    t_warm = time.perf_counter() - t1

    n = len(configs)
    print(f"grid points {points:,}, valid distinct configurations {n:,}")
    print(
        f"cold (empty caches), enumeration + estimate: {t_cold:.2f} s = {n / t_cold:,.0f} "
        f"configurations/s (enumeration alone {t_enum:.2f} s)"
    )
    print(f"warm, estimate only: {t_warm:.2f} s = {n / t_warm:,.0f} configurations/s")
    fits = sum(e.fits for e in estimates)
    print(f"{fits:,} fit in {hw.gpu.hbm_gib:.0f} GiB")

    if args.sample:
        rng = random.Random(0)
        small = [c for c in configs if c.workload.microbatches * c.workload.parallel.pp <= 2048]
        worst = 0.0
        for c in rng.sample(small, min(args.sample, len(small))):
            e = analytic.estimate(c.workload, c.hardware)
            r = event_result(c.workload, c.hardware)
            worst = max(worst, abs(e.iteration_time_s / r.iteration_time_s - 1))
            assert e.peak_bytes == r.memory.peak_bytes, dataclasses.asdict(c.workload.parallel)
        print(
            f"sample of {min(args.sample, len(small))} against the engine: worst time error "
            f"{worst:.3%}, peak memory equal"
        )
    rate = n / t_cold
    print(
        f"screening rate {rate:,.0f} configurations/s on one core: "
        f"{'meets' if rate >= 2000 else 'BELOW'} the 2,000/s target"
    )


if __name__ == "__main__":
    main()
