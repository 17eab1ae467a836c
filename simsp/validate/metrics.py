"""Validation metrics: signed relative errors, MAPE, max |error|, bias and the worst cases.

Errors are fractions, predicted / measured - 1.
"""

from dataclasses import dataclass
from pathlib import Path

from simsp.knobs import KNOBS, values_of
from simsp.units import GIB
from simsp.validate.cases import REFERENCES, SETS, Case, Skipped
from simsp.validate.fp8_pairs import PAIRS_SET, speedups


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
"""Settings `simsp validate --by` can group a set's errors by: every knob (knobs.py), the
hardware file and the framework release."""


def setting(case: Case, field: str):
    """One of BY_FIELDS of the case: its hardware file's name, its framework release, or a
    knob of its workload (parallel, training or model)."""
    if field == "hardware":
        return Path(case.hardware).stem
    if field == "framework":
        return case.framework
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


def summarize(
    results: list[CaseResult], skipped: list[Skipped], sets=SETS, by: str | None = None
) -> dict:
    """`simsp validate --json`'s object: per set n, mape, max_abs_error, bias, plus skipped,
    reference (what the set's times are: REFERENCES), worst, repeats and release_repeats (the
    measurements' own spread where a configuration was measured more than once: spread.py), and,
    with `by`, the same metrics for each value of that setting; sets with a naive baseline add
    naive_mape, naive_max_abs_error, naive_bias and skipped_cases (each with its reason);
    over_hbm lists the measured runs simsp's memory model puts over their HBM (over_hbm());
    sets with measured HBM peaks add `memory` (the metrics of simsp's peak against them), and
    sets with a published peer simulator's answers `peer` (that simulator's time metrics)."""
    from simsp.validate.spread import KEYS, repeat_groups, repeat_summary

    out = {}
    for name in sets:
        rs = of_set(results, name)
        entry = metrics([r.error for r in rs])
        if by:
            entry["by"] = {by: {str(value): m for value, m in grouped(rs, by).items()}}
        naive = [r.naive_error for r in rs if r.naive_error is not None]
        if naive:  # the hand estimate beside simsp: model FLOPs / (0.5 x peak x GPUs)
            m = metrics(naive)
            entry.update({f"naive_{k}": m[k] for k in ("mape", "max_abs_error", "bias")})
        entry["over_hbm"] = over_hbm(rs)
        memory = [r.memory_error for r in rs if r.memory_error is not None]
        if memory:  # the memory model against measured HBM peaks (max_memory_allocated)
            entry["memory"] = metrics(memory)
        peer = [r.peer_error for r in rs if r.peer_error is not None]
        if peer:  # the published peer simulator's errors on the same cases, for comparison
            entry["peer"] = metrics(peer)
        entry["skipped"] = sum(1 for s in skipped if s.set == name)
        entry["reference"] = REFERENCES.get(name, "measured")
        entry["worst"] = [
            {
                "case": r.case.name,
                "description": r.case.description,
                "measured_s": r.case.measured_s,
                "predicted_s": r.predicted_s,
                "error": r.error,
                **({"known_gap": r.case.known_gap} if r.case.known_gap else {}),
            }
            for r in worst(rs)
        ]
        for json_key, key in KEYS.items():
            entry[json_key] = repeat_summary(repeat_groups(rs, *key))
        if name == PAIRS_SET:  # the FP8 speedup t(BF16) / t(FP8), measured and simulated
            rows = speedups(rs)
            entry["speedup"] = {**metrics([r["error"] for r in rows]), "pairs": rows}
        if naive or name == PAIRS_SET:
            entry["skipped_cases"] = [
                {"case": s.name, "reason": s.reason} for s in skipped if s.set == name
            ]
        out[name] = entry
    return {"sets": out}
