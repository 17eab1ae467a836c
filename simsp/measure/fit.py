"""Fitting a user's cluster: at most three physical calibration parameters chosen so that simsp's
iteration times match the user's measured runs (`simsp calibrate --runs`), with the error that
fit makes on runs it did not see.

The parameters (each bounded, each a physical quantity the cost model already has a place for):

* `host_forward_us`: host (framework) time to issue one layer's forward pass; a pass takes
  max(device time, host time) (cost/layer_time.py). The backward and recompute host times move
  with it in the ratios the base file's profile (`simsp profile host`) measured, so the fit
  needs a base file with that profile;
* `collective_latency_us`: a fixed time every collective and pipeline send costs beyond its
  nccl-tests table (the framework's call, stream waits; cost/network.py);
* `gemm_table_fraction`: the achieved fraction of the GEMM tables' rates on this cluster
  (clocks, cuBLAS version, a table measured on another part; cost/compute.py).

Method. simsp's closed form (sim.closed_form.estimate: the engine's own chunk costs folded into the
pipeline formula, equal to the event simulation on the vTrain runs to 1e-16) predicts every run.
The fit minimises a soft-L1 loss of the relative errors (predicted / measured - 1; quadratic
below 1%, linear above, so it comes close to minimising the MAPE and one far-off run does not
drag the rest) with scipy.optimize.least_squares (trust-region reflective, inside the bounds),
in coordinates
scaled to [0, 1] per parameter, from the best point of a coarse grid (the base values and three
levels per parameter, shared by every fold). A parameter that does not move the error when set
back to its base value keeps the base value (the runs do not constrain it). Values are rounded
to the precision they are written with, and every error reported is the error of the rounded
values, so the written file reproduces the reported numbers.

Cross-validation. Run i (in file order) belongs to fold i mod k. Each fold is predicted with the
parameters fitted to the other folds; the held-out MAPE pools those out-of-fold errors over all
runs. It stands beside the in-sample MAPE (fitted to all runs) and the uncalibrated MAPE (the
base file). Everything is deterministic: no random start, no random fold.

This is a user's tool. Cost parameters of the shipped hardware files come from measurements,
never from fitting iteration times; so a fitted file carries `calibration.fitted: true`,
`simsp validate` refuses to read such a file (validate/runner.py), and `check_out` refuses to
write one over the base file or over a hardware file of the library.
"""

import dataclasses
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

from simsp.errors import InputError
from simsp.measure.runs import MeasuredRun
from simsp.spec.hardware import CalibrationSpec, HardwareSpec

HOST_KEYS = (
    "host_forward_us",
    "host_backward_us",
    "host_recompute_full_us",
    "host_recompute_selective_us",
)
GRID_LEVELS = (1 / 6, 1 / 2, 5 / 6)
"""The coarse grid's levels per parameter, as fractions of its range."""


@dataclass(frozen=True)
class Parameter:
    """One fitted calibration value: its key, bounds and what it means."""

    name: str
    """The calibration key it is written as."""
    unit: str
    low: float
    high: float
    decimals: int
    """Written (and evaluated) rounded to this many decimals."""
    meaning: str

    def base(self, cal: CalibrationSpec) -> float:
        return float(getattr(cal, self.name))

    def scaled(self, value: float) -> float:
        """value in [0, 1] coordinates over the bounds."""
        return (value - self.low) / (self.high - self.low)

    def unscaled(self, u: float) -> float:
        return self.low + min(max(u, 0.0), 1.0) * (self.high - self.low)

    def bounds(self) -> str:
        return f"[{self.low:g}, {self.high:g}]" + (f" {self.unit}" if self.unit else "")


PARAMETERS = (
    Parameter(
        "host_forward_us",
        "us",
        0.0,
        5000.0,
        1,
        "host time to issue one layer's forward (backward and recompute scaled with it)",
    ),
    Parameter(
        "collective_latency_us",
        "us",
        0.0,
        500.0,
        2,
        "fixed time of each collective and pipeline send beyond its nccl-tests table",
    ),
    Parameter(
        "gemm_table_fraction", "", 0.5, 1.25, 4, "achieved fraction of the GEMM tables' rates"
    ),
)
BY_NAME = {p.name: p for p in PARAMETERS}


# ---------------------------------------------------------------- the parameters on a machine


def usable(names: tuple[str, ...], hw: HardwareSpec, asked: bool) -> tuple[tuple, tuple]:
    """(parameters fitted, (name, reason) not fitted): the host time needs a profiled floor to
    scale; asked: the user named the parameters, so one that cannot be fitted is an error."""
    fitted, skipped = [], []
    for name in names:
        if name not in BY_NAME:
            raise InputError("--fit", "parameter", name, f"must be one of {', '.join(BY_NAME)}")
        if name == "host_forward_us" and hw.calibration.host_forward_us <= 0:
            reason = (
                f"{hw.source or hw.name} has no profiled host floor to scale "
                "(`simsp profile host`, then `simsp calibrate --host`)"
            )
            if asked:
                raise InputError("--fit", "parameter", name, reason)
            skipped.append((name, reason))
            continue
        fitted.append(BY_NAME[name])
    if not fitted:
        raise InputError("--fit", "parameter", ",".join(names), "leaves nothing to fit")
    return tuple(fitted), tuple(skipped)


def rounded(params: tuple[Parameter, ...], values) -> tuple[float, ...]:
    return tuple(round(float(v), p.decimals) for p, v in zip(params, values, strict=True))


def calibration_values(params, values, base: CalibrationSpec) -> dict[str, float]:
    """The calibration keys a set of parameter values writes: the host time moves all four host
    keys in their profiled ratios."""
    out: dict[str, float] = {}
    for p, v in zip(params, values, strict=True):
        if p.name == "host_forward_us":
            ratio = v / base.host_forward_us
            out.update({k: round(getattr(base, k) * ratio, p.decimals) for k in HOST_KEYS})
            out["host_forward_us"] = v
        else:
            out[p.name] = v
    return out


def calibrated(hw: HardwareSpec, params, values) -> HardwareSpec:
    """The machine with the parameters set to values."""
    cal = dataclasses.replace(hw.calibration, **calibration_values(params, values, hw.calibration))
    return dataclasses.replace(hw, calibration=cal)


# ---------------------------------------------------------------- errors


def predict(runs, hw: HardwareSpec) -> tuple[float, ...]:
    """simsp's iteration seconds for each run (the closed form)."""
    from simsp.sim.closed_form import estimate

    return tuple(estimate(r.workload, hw).iteration_time_s for r in runs)


def errors(predicted, runs) -> tuple[float, ...]:
    """Relative errors, predicted / measured - 1."""
    return tuple(p / r.measured_s - 1 for p, r in zip(predicted, runs, strict=True))


def mape(errs) -> float:
    """Mean absolute percentage error, as a fraction."""
    return math.fsum(abs(e) for e in errs) / len(errs)


LOSS_SCALE = 0.01
"""Relative error (1%) past which the loss grows linearly (soft L1), not quadratically."""


def _cost(errs) -> float:
    """The soft-L1 loss least_squares minimises: sum of 2 (sqrt(1 + (e/f)^2) - 1), quadratic
    below f and linear above, so one run far off does not pull every other run after it and the
    fit comes close to minimising the MAPE it reports."""
    return math.fsum(2 * (math.sqrt(1 + (e / LOSS_SCALE) ** 2) - 1) for e in errs)


# ---------------------------------------------------------------- the fit


class _Evaluator:
    """Predictions of every run at a parameter point, each point simulated once (the grid's
    points are shared by every fold)."""

    def __init__(self, runs, hw: HardwareSpec, params):
        self.runs, self.hw, self.params = runs, hw, params
        self.seen: dict[tuple[float, ...], tuple[float, ...]] = {}

    def errors(self, values, idx) -> tuple[float, ...]:
        key = tuple(float(v) for v in values)
        if key not in self.seen:
            self.seen[key] = errors(
                predict(self.runs, calibrated(self.hw, self.params, key)), self.runs
            )
        errs = self.seen[key]
        return tuple(errs[i] for i in idx)


def _grid(params, base: tuple[float, ...]) -> list[tuple[float, ...]]:
    """The base point, then three levels per parameter (every combination)."""
    levels = [[p.unscaled(u) for u in GRID_LEVELS] for p in params]
    return [base] + [tuple(v) for v in itertools.product(*levels)]


def fit(ev: _Evaluator, idx: tuple[int, ...]) -> tuple[float, ...]:
    """Parameter values minimising the squared relative errors of the runs idx, rounded."""
    from scipy.optimize import least_squares

    params = ev.params
    base = tuple(min(max(p.base(ev.hw.calibration), p.low), p.high) for p in params)
    start = min(_grid(params, base), key=lambda v: _cost(ev.errors(v, idx)))  # first of ties

    def residuals(u):
        return list(ev.errors(tuple(p.unscaled(x) for p, x in zip(params, u, strict=True)), idx))

    sol = least_squares(
        residuals,
        [p.scaled(v) for p, v in zip(params, start, strict=True)],
        bounds=(0.0, 1.0),
        method="trf",
        loss="soft_l1",
        f_scale=LOSS_SCALE,
        diff_step=1e-4,
        xtol=1e-4,
        ftol=1e-6,
        max_nfev=30,
    )
    best = rounded(params, [p.unscaled(x) for p, x in zip(params, sol.x, strict=True)])
    best = min((best, rounded(params, start)), key=lambda v: _cost(ev.errors(v, idx)))
    return _base_where_unconstrained(ev, idx, best, rounded(params, base))


def _base_where_unconstrained(ev, idx, values, base) -> tuple[float, ...]:
    """Each parameter back at its base value wherever that does not raise the error: the runs
    say nothing against the measured value, so it stays."""
    values = list(values)
    for i in range(len(values)):
        trial = tuple(values[:i] + [base[i]] + values[i + 1 :])
        if _cost(ev.errors(trial, idx)) <= _cost(ev.errors(tuple(values), idx)):
            values[i] = base[i]
    return tuple(values)


def check_folds(k: int, n: int) -> None:
    """InputError unless 2 <= k <= n (the number of runs)."""
    if not 2 <= k <= n:
        raise InputError("--folds", "folds", k, f"must lie in [2, {n}] (the number of runs)")


# ---------------------------------------------------------------- cross-validation


def folds(n: int, k: int) -> tuple[int, ...]:
    """The fold of each run: run i (file order) in fold i mod k."""
    return tuple(i % k for i in range(n))


@dataclass(frozen=True)
class FoldFit:
    fold: int
    held_out: tuple[int, ...]
    values: tuple[float, ...]
    held_out_mape: float


@dataclass(frozen=True)
class Fit:
    """The fitted parameters, the errors before, in-sample and held out, and each fold's fit."""

    params: tuple[Parameter, ...]
    skipped: tuple[tuple[str, str], ...]
    base: tuple[float, ...]
    values: tuple[float, ...]
    constrained: tuple[bool, ...]
    """Whether the runs moved each parameter off its base value."""
    k: int
    uncalibrated: tuple[float, ...]
    in_sample: tuple[float, ...]
    held_out: tuple[float, ...]
    """Relative error of each run: base file, fitted to all runs, fitted to the other folds."""
    fold_fits: tuple[FoldFit, ...]

    def summary(self) -> dict:
        """The JSON object of `simsp calibrate --runs --json` (without the file names)."""
        sets = {"uncalibrated": self.uncalibrated, "in_sample": self.in_sample}
        sets["held_out"] = self.held_out
        return {
            "n": len(self.in_sample),
            "folds": self.k,
            "parameters": [
                {
                    "name": p.name,
                    "unit": p.unit,
                    "low": p.low,
                    "high": p.high,
                    "meaning": p.meaning,
                    "base": b,
                    "fitted": v,
                    "constrained": c,
                    "at_bound": v in (p.low, p.high),
                }
                for p, b, v, c in zip(
                    self.params, self.base, self.values, self.constrained, strict=True
                )
            ],
            "not_fitted": [{"name": n, "reason": r} for n, r in self.skipped],
            "mape": {key: mape(e) for key, e in sets.items()},
            "max_abs_error": {key: max(abs(x) for x in e) for key, e in sets.items()},
            "fold_fits": [
                {
                    "fold": f.fold + 1,
                    "held_out_runs": len(f.held_out),
                    "values": dict(zip((p.name for p in self.params), f.values, strict=True)),
                    "held_out_mape": f.held_out_mape,
                }
                for f in self.fold_fits
            ],
        }


def cross_validated_fit(runs: tuple[MeasuredRun, ...], hw: HardwareSpec, params, skipped, k):
    """Fit to all runs, and to each k-1 folds for the held-out error."""
    check_folds(k, len(runs))
    ev = _Evaluator(runs, hw, params)
    everything = tuple(range(len(runs)))
    fold_of = folds(len(runs), k)
    held_out = [0.0] * len(runs)
    fold_fits = []
    for f in range(k):
        test = tuple(i for i in everything if fold_of[i] == f)
        values = fit(ev, tuple(i for i in everything if fold_of[i] != f))
        errs = ev.errors(values, test)
        for i, e in zip(test, errs, strict=True):
            held_out[i] = e
        fold_fits.append(FoldFit(f, test, values, mape(errs)))
    base = rounded(params, [p.base(hw.calibration) for p in params])
    values = fit(ev, everything)
    return Fit(
        params,
        tuple(skipped),
        base,
        values,
        tuple(v != b for v, b in zip(values, base, strict=True)),
        k,
        errors(predict(runs, hw), runs),
        ev.errors(values, everything),
        tuple(held_out),
        tuple(fold_fits),
    )


# ---------------------------------------------------------------- where a fitted file may go


def check_out(base: str, out: str) -> None:
    """A fitted file is a new file: never the base file, never a hardware file of the library
    (the files `simsp validate` reads), unless that file is itself a fitted one."""
    from simsp.io.config import REPO_ROOT, load_hardware

    target = Path(out).resolve()
    if target == Path(base).resolve():
        raise InputError(
            out, "--out", out, "is the base file: fitted values go into a new hardware file"
        )
    libraries = {(REPO_ROOT / "hardware").resolve(), Path("hardware").resolve()}
    if target.parent in libraries and target.exists():
        try:
            fitted = load_hardware(target).calibration.fitted
        except InputError:
            fitted = False
        if not fitted:
            raise InputError(
                out,
                "--out",
                out,
                "is a shipped hardware file of the library (validation reads these): "
                "write the fitted file elsewhere",
            )
