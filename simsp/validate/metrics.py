"""Validation metrics: signed relative errors, MAPE, max |error|, bias and the worst cases.

Errors are fractions, predicted / measured - 1.
"""

from dataclasses import dataclass
from pathlib import Path

from simsp.spec.knobs import KNOBS, values_of
from simsp.spec.stack import STACK_KNOBS
from simsp.units import GIB
from simsp.validate.case import Case


@dataclass(frozen=True)
class CaseResult:
    """A case with its prediction."""

    case: Case
    predicted_s: float
    peak_bytes: float = 0.0
    """simsp's HBM peak of the case's fullest GPU (iteration cases; 0 otherwise)."""
    capacity_bytes: float = 0.0
    """That GPU's HBM (0 where no peak was computed)."""

    @property
    def over_hbm(self) -> bool:
        """simsp puts a run that was measured, so fit, over its GPUs' HBM."""
        return 0 < self.capacity_bytes < self.peak_bytes

    @property
    def error(self) -> float:
        """Signed relative error, predicted / measured - 1."""
        return self.predicted_s / self.case.measured_s - 1

    @property
    def memory_error(self) -> float | None:
        """simsp's HBM peak against the measured one, predicted / measured - 1, where the
        source measured it (Case.measured_peak_bytes), else None."""
        if not (self.case.measured_peak_bytes and self.peak_bytes):
            return None
        return self.peak_bytes / self.case.measured_peak_bytes - 1

    @property
    def peer_error(self) -> float | None:
        """The published peer simulator's signed error on this case (Case.peer_s), or None."""
        if not self.case.peer_s:
            return None
        return self.case.peer_s / self.case.measured_s - 1

    @property
    def naive_error(self) -> float | None:
        """The naive baseline's signed error (published sets), else None."""
        if not self.case.baseline_s:
            return None
        return self.case.baseline_s / self.case.measured_s - 1


def over_hbm(results) -> list[dict]:
    """The measured runs (which fit, having run) that simsp puts over their GPUs' HBM: a check
    of the memory model against measurement, one-sided as it is."""
    return [
        {
            "case": r.case.name,
            "peak_gib": r.peak_bytes / GIB,
            "capacity_gib": r.capacity_bytes / GIB,
        }
        for r in results
        if r.over_hbm
    ]


def of_set(results, name: str) -> list[CaseResult]:
    """The results of one set, in case order."""
    return [r for r in results if r.case.set == name]


def metrics(errors: list[float]) -> dict:
    """n, MAPE, max |error| and bias of signed relative errors (fractions)."""
    n = len(errors)
    if n == 0:
        return {"n": 0, "mape": None, "max_abs_error": None, "bias": None}
    return {
        "n": n,
        "mape": sum(abs(e) for e in errors) / n,
        "max_abs_error": max(abs(e) for e in errors),
        "bias": sum(errors) / n,
    }


CASE_FIELDS = ("hardware", "framework")
"""What a case says of its measurement beside its workload: the hardware file, the release."""
BY_FIELDS = tuple(k.name for k in KNOBS) + CASE_FIELDS
"""Settings `simsp validate --by` can group a set's errors by: every knob (spec/knobs.py), the
hardware file and the framework release."""


def setting(case: Case, field: str):
    """One of BY_FIELDS of the case: its hardware file's name, its framework release, or a
    knob of its workload (parallel, training or model)."""
    if field == "hardware":
        return Path(case.hardware).stem
    if field == "framework":
        return case.framework
    if field in STACK_KNOBS:  # as the run used it: the stack's where the case left it empty
        return case.workload.training.knob(field)
    return values_of(case.workload)[field]


def grouped(results: list[CaseResult], field: str) -> dict:
    """metrics() of the results sharing each value of `field`, by ascending value."""
    groups: dict = {}
    for r in results:
        groups.setdefault(setting(r.case, field), []).append(r.error)
    return {
        value: metrics(groups[value])
        for value in sorted(groups, key=lambda v: (type(v).__name__, v))
    }


def worst(results: list[CaseResult], k: int = 5) -> list[CaseResult]:
    """The k cases with the largest |error| (ties in case order)."""
    return sorted(results, key=lambda r: -abs(r.error))[:k]
