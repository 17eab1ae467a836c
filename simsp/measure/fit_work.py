"""What a `simsp calibrate --runs` fit will cost in CPU time, counted before it starts, and the
limit it must keep (--max-seconds): the points the fit evaluates (its coarse grid, then each
fold's least squares) times the runs and the distinct layers priced at each, at simsp's own
measured CPU costs (benchmarks/fit_work.py prints them beside what it measures). The counts are
deterministic; the figure is "about" (the points are an average, the prices means)."""

from simsp.errors import InputError
from simsp.measure.fit import GRID_LEVELS, check_folds
from simsp.sim.budget import check_seconds, duration

RUN_POINT_S = 2.3e-4
"""CPU seconds one run costs at one parameter point, its layers priced apart (LAYER_POINT_S):
benchmarks/fit_work.py (2026-12-04, this project's 2-core machine, the closed form walking
interleaved and GPipe runs exactly), the two unknowns solved from its two files' CPU seconds per
evaluated point, 300 runs of 4 distinct layers at 83 ms a point and vTrain's 109 runs of 61 at
240 ms."""
LAYER_POINT_S = 3.5e-3
"""... each distinct layer (model, tp, cp, SP, micro batch, recompute) at one point, priced op by
op again since every point moves the calibration."""
POINTS_PER_FIT = 6
"""Points least_squares evaluates per fold, per parameter and its own, on average: 130 and 211
points over the two files above with 3 parameters and 5 folds, against 28 + 6 x 6 x 4 = 172
counted. An average, not a bound: at most 30 evaluations a fit, each Jacobian P more, and the
base-value pass 2P, about five times as many."""
DEFAULT_MAX_SECONDS = 120.0
"""Estimated CPU seconds a fit may take before it is refused (--max-seconds raises it): vTrain's
109 runs are estimated at 41 s (51 s measured); 10,000 runs of one model at about 7 min."""


def fit_points(n_params: int, k: int) -> int:
    """Parameter points a cross-validated fit evaluates, about: the coarse grid, then each of the
    k + 1 fits' least-squares steps."""
    return 1 + len(GRID_LEVELS) ** n_params + (k + 1) * POINTS_PER_FIT * (n_params + 1)


def fit_seconds(runs, n_params: int, k: int) -> float:
    """The CPU seconds of a cross-validated fit of `runs`, about: every run and every distinct
    layer at every point."""
    layers = {
        (r.workload.model, r.workload.training.micro_batch, r.workload.parallel.recompute)
        + (r.workload.parallel.tp, r.workload.parallel.cp, r.workload.parallel.sequence_parallel)
        for r in runs
    }
    per_point = len(runs) * RUN_POINT_S + len(layers) * LAYER_POINT_S
    return fit_points(n_params, k) * per_point


def check_fit_work(source, runs, n_params: int, k: int, limit: float) -> None:
    """InputError when the fit is estimated past `limit` CPU seconds, before it starts."""
    check_seconds(limit)
    check_folds(k, len(runs))
    seconds = fit_seconds(runs, n_params, k)
    if seconds > limit:
        raise InputError(
            source,
            "rows",
            len(runs),
            f"a {k}-fold fit of {n_params} parameter(s) would take about {duration(seconds)} of "
            f"CPU ({fit_points(n_params, k)} points x {len(runs):,} runs), over the limit of "
            f"{limit:g} s (--max-seconds raises it; fewer runs or --fit fewer parameters)",
        )
