"""Event-simulation speed: the 1T workload (64 stages, 512 microbatches) must simulate in under
3 s on one core, and its cost must not grow with DP (dp = 64 within 10% of dp = 1).

Usage: python benchmarks/engine_speed.py
"""

import dataclasses
import time

from simsp.config import load_hardware, load_workload
from simsp.cost import cost_model
from simsp.engine import simulate
from simsp.plan import build_plan


def timed(w, hw, repeats=3):
    """Best wall time of plan + simulate."""
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        sim = simulate(build_plan(w, cost_model(hw)))
        best = min(best, time.perf_counter() - t)
    return best, sim


def main():
    hw = load_hardware()
    cost_model(hw)  # reading the calibration tables is a one-off, not simulation cost
    w = load_workload("workloads/gpt-1t.yaml")
    t1, sim1 = timed(w, hw)
    wdp = dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, dp=64),
                              training=dataclasses.replace(w.training, global_batch=512 * 64))
    t64, sim64 = timed(wdp, hw)
    print(f"gpt-1t dp=1 : {t1:.2f} s wall, {len(sim1.spans)} spans, iteration {sim1.iteration_s:.2f} s simulated")
    print(f"gpt-1t dp=64: {t64:.2f} s wall, {len(sim64.spans)} spans, iteration {sim64.iteration_s:.2f} s simulated")
    print(f"dp=64 / dp=1 wall time: {t64 / t1:.3f}")


if __name__ == "__main__":
    main()
