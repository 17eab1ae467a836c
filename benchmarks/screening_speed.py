"""How many configurations a second the closed-form tier screens, on one core, in process CPU time.

A GPT-3 175B grid over 64 to 1024 GPUs (tp, pp, SP, recompute, micro batch, schedule, chunks,
global batch), screened as columns: the grid enumerated as arrays with the workload rules as
masks (sweep/grid_columns.py, validation and dedupe included), then the closed form over the
columns (sim/closed_form_columns.py) of every valid configuration, first with every cache empty
(the layer costs, GEMM lookups and schedule walks memoised as they are met), then again warm.
Prints the rates against the targets, >= 10,000 configurations a second cold and >= 200,000
warm. On the way, rows are checked against the scalar closed form (bit for bit) and a sample
against the event simulation; --scalar also times the scalar path (enumerate_configs and
closed_form.estimate one by one) for comparison.

    python benchmarks/screening_speed.py [--sample N] [--check N] [--scalar]
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
from simsp.sim.closed_form_columns import clear_caches, estimate_columns  # noqa: E402
from simsp.sweep import SweepSpec, enumerate_configs, event_result  # noqa: E402
from simsp.sweep.grid_columns import enumerate_columns  # noqa: E402

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
COLD_TARGET = 10_000
WARM_TARGET = 200_000


def scalar(specs, hw) -> None:
    """The scalar path's rates (enumerate_configs, then closed_form.estimate one by one)."""
    clear_caches()
    t0 = time.process_time()
    configs = [c for spec in specs for c in enumerate_configs(spec)[0]]
    for c in configs:
        analytic.estimate(c.workload, c.hardware)
    t_cold = time.process_time() - t0
    t1 = time.process_time()
    for c in configs:
        analytic.estimate(c.workload, c.hardware)
    t_warm = time.process_time() - t1
    n = len(configs)
    print(
        f"scalar path: cold {t_cold:.2f} s = {n / t_cold:,.0f} configurations/s, "
        f"warm {t_warm:.2f} s = {n / t_warm:,.0f} configurations/s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--sample", type=int, default=20, help="configurations also event-simulated (0: none)"
    )
    ap.add_argument(
        "--check",
        type=int,
        default=500,
        help="configurations checked against the scalar closed form, bit for bit (-1: all)",
    )
    ap.add_argument("--scalar", action="store_true", help="also time the scalar path")
    args = ap.parse_args()
    hw = load_hardware(ROOT / "hardware" / "dgx-a100-80gb.yaml")
    base = load_workload(ROOT / "workloads" / "gpt3-175b.yaml")
    specs = [SweepSpec("benchmark", base, (hw,), g, GRID) for g in GPUS]
    cost_model(hw)  # calibration files read once per process: not part of screening
    clear_caches()

    t0 = time.process_time()
    grids = [enumerate_columns(spec) for spec in specs]
    t_enum = time.process_time() - t0
    estimates = [estimate_columns(g.columns, hw) for g in grids]
    t_cold = time.process_time() - t0
    t1 = time.process_time()
    for g in grids:
        estimate_columns(g.columns, hw)
    t_warm = time.process_time() - t1

    n = sum(len(g.columns) for g in grids)
    points = sum(g.counts.grid_points for g in grids)
    print(f"grid points {points:,}, valid distinct configurations {n:,}")
    print(
        f"cold (empty caches), enumeration + estimate: {t_cold:.2f} s = {n / t_cold:,.0f} "
        f"configurations/s (enumeration alone {t_enum:.2f} s)"
    )
    print(f"warm, estimate only: {t_warm:.3f} s = {n / t_warm:,.0f} configurations/s")
    fits = sum(int(e.fits.sum()) for e in estimates)
    vectorised = sum(int(e.vectorised.sum()) for e in estimates)
    print(f"{fits:,} fit in {hw.gpu.hbm_gib:.0f} GiB; {vectorised:,} evaluated as arrays")

    rows = [(g, e, i) for g, e in zip(grids, estimates, strict=True) for i in range(len(e))]
    if args.check:
        rng = random.Random(1)
        picked = rows if args.check < 0 else rng.sample(rows, min(args.check, len(rows)))
        for g, e, i in picked:
            assert e.row(i) == analytic.estimate(g.columns.workload(i), hw), i
        print(f"{len(picked):,} configurations equal to the scalar closed form, bit for bit")
    if args.sample:
        rng = random.Random(0)  # the same sample as the scalar benchmark drew
        small = [r for r in rows if _actions(r[0].columns, r[2]) <= 2048]
        worst = 0.0
        for g, e, i in rng.sample(small, min(args.sample, len(small))):
            w = g.columns.workload(i)
            r = event_result(w, hw)
            worst = max(worst, abs(float(e.iteration_time_s[i]) / r.iteration_time_s - 1))
            assert float(e.peak_bytes[i]) == r.memory.peak_bytes, dataclasses.asdict(w.parallel)
        print(
            f"sample of {min(args.sample, len(small))} against the engine: worst time error "
            f"{worst:.3%}, peak memory equal"
        )
    if args.scalar:
        scalar(specs, hw)
    cold, warm = n / t_cold, n / t_warm
    print(
        f"screening rate {cold:,.0f} configurations/s cold, {warm:,.0f} warm, on one core: "
        f"{'meets' if cold >= COLD_TARGET else 'BELOW'} the {COLD_TARGET:,}/s cold target, "
        f"{'meets' if warm >= WARM_TARGET else 'BELOW'} the {WARM_TARGET:,}/s warm target"
    )


def _actions(columns, i: int) -> int:
    """Microbatches x stages of row i (what the event simulation's time grows with)."""
    return int(columns.microbatches()[i] * columns.pp[i])


if __name__ == "__main__":
    main()
