"""Running a validation: predict every case (over processes when there are many) and keep the
results in case order, with the skipped rows and the wall time."""

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from simsp.validate.cases import SETS, Case, Skipped, build_cases, subset
from simsp.validate.data import DATA_DIR
from simsp.validate.metrics import CaseResult
from simsp.validate.summary import summarize

_HARDWARE: dict = {}


def set_hardware(path: str):
    """A validation set's hardware file, refused if it holds values fitted to measured runs
    (`simsp calibrate --runs` marks those `calibration.fitted: true`): validation measures the
    measured calibration, never one tuned to iteration times."""
    if path not in _HARDWARE:
        from simsp.errors import InputError
        from simsp.io.config import load_hardware

        hw = load_hardware(path)
        if hw.calibration.fitted:
            raise InputError(
                path, "calibration.fitted", True, "a file fitted to runs never enters validation"
            )
        _HARDWARE[path] = hw
    return _HARDWARE[path]


def predict(case: Case) -> float:
    """simsp's seconds for a case (cost models are cached per hardware file and process)."""
    return predict_case(case).seconds


@dataclass(frozen=True)
class Prediction:
    """simsp's answer for a case: its seconds and, for an iteration, the HBM peak of its
    fullest GPU beside that GPU's capacity (0 for a layer case)."""

    seconds: float
    peak_bytes: float = 0.0
    capacity_bytes: float = 0.0


def predict_case(case: Case) -> Prediction:
    """The Prediction of one case."""
    from simsp.cost import cost_model

    hw = set_hardware(case.hardware)
    if case.quantity == "iteration":
        from simsp.api import run

        r = run(case.workload, hw)
        return Prediction(r.iteration_time_s, r.memory.peak_bytes, r.memory.capacity_bytes)
    from simsp.cost.layer_time import layer_time
    from simsp.model.layer import build_layer
    from simsp.spec.layout import layer_placement

    w = case.workload
    lt = layer_time(
        build_layer(w.model, w.parallel, w.training.micro_batch, w.training.numerics),
        cost_model(hw),
        w.parallel,
        layer_placement(w.parallel, hw.node.gpus),
    )
    return Prediction(lt.forward_s if case.quantity == "layer_forward" else lt.backward_s)


def predict_all(cases: list[Case], workers: int | None = None) -> list[Prediction]:
    """Predictions in case order; workers > 1 spreads them over processes."""
    workers = (os.cpu_count() or 1) if workers is None else workers
    if workers <= 1 or len(cases) < 64:
        return [predict_case(c) for c in cases]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        chunks = max(1, len(cases) // (32 * workers))
        return list(pool.map(predict_case, cases, chunksize=chunks))


@dataclass(frozen=True)
class Validation:
    """A finished validation: every result, the skipped rows and the wall time."""

    sets: tuple[str, ...]
    results: tuple[CaseResult, ...]
    skipped: tuple[Skipped, ...]
    wall_s: float

    def summary(self, by: str | None = None) -> dict:
        return summarize(list(self.results), list(self.skipped), self.sets, by)


def run_validation(
    sets=SETS, workers: int | None = None, data_dir=DATA_DIR, limit: dict | None = None
) -> Validation:
    """Build the cases of `sets`, predict them all and keep the results in case order.

    limit maps a set name to a case count: an evenly spread deterministic subset (for tests)."""
    t0 = time.perf_counter()
    cases, skipped = build_cases(sets, data_dir)
    if limit:
        chosen = []
        for name in sets:
            mine = [c for c in cases if c.set == name]
            chosen += subset(mine, limit[name]) if name in limit else mine
        cases = chosen
    predicted = predict_all(cases, workers)
    results = tuple(
        CaseResult(c, p.seconds, p.peak_bytes, p.capacity_bytes)
        for c, p in zip(cases, predicted, strict=True)
    )
    return Validation(tuple(sets), results, tuple(skipped), time.perf_counter() - t0)
