"""`simsp validate --json`'s object: every set's metrics, worst cases, repeats and peers."""

from simsp.validate.case import Skipped
from simsp.validate.cases import REFERENCES, SETS
from simsp.validate.fp8_pairs import PAIRS_SET, speedups
from simsp.validate.metrics import CaseResult, grouped, metrics, of_set, over_hbm, worst
from simsp.validate.spread import KEYS, repeat_groups, repeat_summary


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
        if memory:  # the memory model against measured HBM peaks
            entry["memory"] = metrics(memory)
            entry["memory"]["measured"] = next(
                r.case.measured_peak_kind for r in rs if r.memory_error is not None
            )
        paired = [r for r in rs if r.peer_error is not None]
        if paired:  # the published peer simulator's errors on the same cases, for comparison
            entry["peer"] = metrics([r.peer_error for r in paired])
            entry["peer_simsp"] = metrics([r.error for r in paired])
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
