"""`simsp calibrate --runs RUNS.csv --hardware HW.yaml --out FITTED.yaml [--folds K] [--fit
NAMES] [--json]`: fit a user's cluster to its measured runs (measure/fit.py) and write the
fitted hardware file with the writer every `simsp calibrate` uses (profiler/calibrate.py).

Everything is checked before the fit starts (the options, the base file, where the new file
goes, every row of the runs file), so a bad input is one line and nothing is written.
"""

import json
import textwrap
from pathlib import Path

from simsp.errors import InputError
from simsp.measure.fit import (
    BY_NAME,
    Fit,
    calibration_values,
    check_out,
    cross_validated_fit,
    usable,
)
from simsp.measure.fit_work import check_fit_work
from simsp.measure.runs import read_runs
from simsp.present.table import Column, render, words

OTHER_INPUTS = ("gemm", "gemm_model", "attention", "nvlink", "infiniband", "host", "optimizer")
"""Measured-file options of `simsp calibrate`, not combined with --runs: the fit is made against
the base file as it is, so measured files go in first, with a calibrate of their own."""


def calibrate_runs(args, command: str) -> None:
    """The `--runs` form of `simsp calibrate`."""
    from simsp.io.config import load_hardware, load_workload
    from simsp.measure.profiler.calibrate import calibrate, check_new_file
    from simsp.measure.profiler.calibrate_request import Fitted, Request

    _check_options(args)
    hw = load_hardware(args.hardware)
    check_out(args.hardware, args.out)
    # the runs file is an input too
    check_new_file(Path(args.out), Request(args.hardware, args.out, host=args.runs))
    runs = read_runs(args.runs, args.allow_outside)
    names = tuple(n.strip() for n in args.fit.split(",")) if args.fit else tuple(BY_NAME)
    params, skipped = usable(names, hw, asked=bool(args.fit))
    w = load_workload(args.workload) if args.workload else None
    check_fit_work(args.runs, runs, len(params), args.folds, args.max_seconds)
    result = cross_validated_fit(runs, hw, params, skipped, args.folds)
    moved = [(p, v) for p, v, c in zip(params, result.values, result.constrained, strict=True) if c]
    values = calibration_values([p for p, _ in moved], [v for _, v in moved], hw.calibration)
    fitted = Fitted((("fitted", True), *values.items()), comments(result, args, hw))
    calibrate(Request(args.hardware, args.out, name=args.name, command=command, fitted=fitted))
    summary = {"runs": args.runs, "hardware": args.hardware, "out": args.out, **result.summary()}
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(report(summary))
    if w is not None and not args.json:
        from simsp.measure.profiler.prediction_change import compare

        print(compare(w, hw, load_hardware(args.out)))


def _check_options(args) -> None:
    for key in OTHER_INPUTS + ("append",):
        value = getattr(args, key, None)
        if value:
            option = "--" + key.replace("_", "-")
            raise InputError(
                "--runs",
                option,
                value,
                "is not combined with --runs: calibrate with the measured files first, then fit "
                "the runs against that file",
            )


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def comments(result: Fit, args, hw) -> tuple[str, ...]:
    """The fitted block's comment lines: what was fitted to what, and how well it predicts runs
    it did not see."""
    from simsp.measure.profiler._torch import today

    s = result.summary()
    m = s["mape"]
    text = [
        f"FITTED by `simsp calibrate --runs {args.runs}` on {today()}: a user's calibration, not "
        f"a measurement. {s['n']} measured iteration times of {args.runs}, base "
        f"{args.hardware}; soft-L1 least squares on relative error inside the bounds below. "
        f"{s['folds']}-fold cross-validation (run i in fold i mod {s['folds']}): MAPE held-out "
        f"{_pct(m['held_out'])}, in-sample {_pct(m['in_sample'])}, uncalibrated "
        f"{_pct(m['uncalibrated'])}."
    ]
    for p in s["parameters"]:
        kept = "" if p["constrained"] else "; not constrained by these runs: the base line kept"
        text.append(
            f"{p['name']} = {p['fitted']:g} (base {p['base']:g}), bounds "
            f"{BY_NAME[p['name']].bounds()}: {p['meaning']}{kept}."
        )
    host = [
        v
        for p, v, c in zip(result.params, result.values, result.constrained, strict=True)
        if c and p.name == "host_forward_us"
    ]
    if host:
        ratio = host[0] / hw.calibration.host_forward_us
        text.append(f"host_*_us: the base file's profiled host floor x {ratio:.4g}.")
    text += [f"Not fitted: {n['name']}: {n['reason']}." for n in s["not_fitted"]]
    text.append("`simsp validate` refuses this file (fitted: true).")
    return tuple(line for t in text for line in textwrap.wrap(t, 94))


def report(s: dict) -> str:
    """The readable summary: each parameter, then the three errors side by side, then folds."""
    rows = [
        f"fitted {len(s['parameters'])} parameter(s) to {s['n']} runs of {s['runs']} on "
        f"{s['hardware']} ({s['folds']}-fold cross-validation)",
    ]
    params = [
        [
            p["name"],
            f"{p['base']:g}",
            f"{p['fitted']:g}",
            BY_NAME[p["name"]].bounds(),
            p["meaning"]
            + ("" if p["constrained"] else "; not constrained by these runs: base kept")
            + (" (at a bound)" if p["at_bound"] and p["constrained"] else ""),
        ]
        for p in s["parameters"]
    ]
    heads = (words("parameter"), Column("base"), Column("fitted"), words("bounds"))
    rows += render((*heads, words("meaning", fold=True)), params, indent=2).splitlines()
    rows += [f"  not fitted: {n['name']}: {n['reason']}" for n in s["not_fitted"]]
    m, x = s["mape"], s["max_abs_error"]
    errors = [
        [label, *(_pct(d[k]) for k in ("uncalibrated", "in_sample", "held_out"))]
        for label, d in (("MAPE", m), ("max |error|", x))
    ]
    heads = (words(""), Column("uncalibrated"), Column("in-sample"), Column("held-out"))
    rows += render(heads, errors, indent=2).splitlines()
    for f in s["fold_fits"]:
        values = ", ".join(f"{k} {v:g}" for k, v in f["values"].items())
        rows.append(
            f"  fold {f['fold']}: {f['held_out_runs']} runs held out, MAPE "
            f"{_pct(f['held_out_mape'])}; fitted on the rest: {values}"
        )
    rows.append(f"wrote {s['out']}; it loads (calibration.fitted: true; simsp validate refuses it)")
    return "\n".join(rows)
