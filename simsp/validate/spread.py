"""The measurements' own spread: the same configuration measured more than once.

A set often holds one configuration measured twice or more (the same Llama-3.1-70B layout in
dgxc-benchmarking's NeMo 24.09 and 24.12 tables, Llama-3-8B on 8 B200 in NeMo 25.02 and
Megatron-Bridge 25.09 and 25.11). simsp answers one number per input, so where the input is
the same the measurements' spread is a floor no simulator of that input can beat. Per group of
two or more cases this module keeps the measured times, their spread (max / min - 1), the case
ids (which release or source each came from) and each case's error against the group's
geometric mean, the "repeat floor": one number per configuration, symmetric in log time. (The
least MAPE a single number can reach is at the 1/measured-weighted median, slightly below;
`floor_least_mape` gives it.) Per set: the floor's MAPE and bias over the cases in repeated
groups, and simsp's over the same cases, like with like.

Two keys say when cases are "the same configuration":

* `same_input`: simsp gets exactly the same input (the workload but its name, the hardware
  file, the quantity). This is the floor proper: simsp's predictions within a group are equal.
* `same_published_configuration`: the same but for the settings a framework release's recipe
  fills in where a table is silent (RELEASE_SETTINGS). This groups the published reruns across
  releases; its floor binds a predictor that sees only what the table states, not simsp, which
  sees each release's defaults (its predictions may differ within a group).

Errors are fractions, predicted / measured - 1, as in metrics.py.
"""

import dataclasses
import math
from dataclasses import dataclass

from simsp.validate.metrics import CaseResult, metrics

RELEASE_SETTINGS = (
    "fp8_recipe",
    "fp8_param_gather",
    "attention_kernel",
    "cross_entropy",
    "tp_comm_overlap",
    "grad_reduce_in_fp32",
    "overlap_grad_reduce",
    "overlap_param_gather",
    "store_param_remainders",
    "cached_dummy_wgrads",
)
"""Workload settings (TrainingSpec, ParallelSpec fields) that come from a framework release's
recipe rather than the published table (recipes.Recipe; the fp8-pairs' recipe notes for FP8
primary weights): the ones `same_published_configuration` lets differ."""


MEMORY_ONLY = ("cached_dummy_wgrads", "store_param_remainders")
"""ParallelSpec settings that change the HBM peak and no time: runs that differ only in them
gave simsp the same input for the time they measured."""


def same_input(case) -> tuple | None:
    """The case's whole simsp input for its time (all but the workload's name and MEMORY_ONLY
    settings); None (never grouped) for a case without a workload."""
    if case.workload is None:
        return None
    w = case.workload
    parallel = dataclasses.replace(w.parallel, **{k: False for k in MEMORY_ONLY})
    return (
        case.set,
        case.hardware,
        case.quantity,
        dataclasses.replace(w, name="", parallel=parallel),
    )


def _without_release(spec) -> tuple:
    return tuple(
        (f.name, getattr(spec, f.name))
        for f in dataclasses.fields(spec)
        if f.name not in RELEASE_SETTINGS
    )


def same_published_configuration(case) -> tuple | None:
    """same_input without RELEASE_SETTINGS: model, hardware, layout, batch and precision."""
    if case.workload is None:
        return None
    w = case.workload
    return (
        case.set,
        case.hardware,
        case.quantity,
        w.model,
        _without_release(w.training),
        _without_release(w.parallel),
    )


KEYS = {"repeats": (same_input, "r"), "release_repeats": (same_published_configuration, "c")}
"""The two groupings by their --json key: the key function and the prefix of group labels."""


@dataclass(frozen=True)
class RepeatGroup:
    """Two or more cases of one set that share a key: measured more than once."""

    label: str
    """r1, r2, ... (c1, ... for same_published_configuration) within the set, in the order of
    each group's first case."""
    results: tuple[CaseResult, ...]

    @property
    def case_ids(self) -> tuple[str, ...]:
        return tuple(r.case.name for r in self.results)

    @property
    def measured_s(self) -> tuple[float, ...]:
        return tuple(r.case.measured_s for r in self.results)

    @property
    def predicted_s(self) -> tuple[float, ...]:
        return tuple(r.predicted_s for r in self.results)

    @property
    def spread(self) -> float:
        """max / min - 1 of the measured times."""
        return max(self.measured_s) / min(self.measured_s) - 1

    @property
    def geomean_s(self) -> float:
        """The group's geometric mean, the repeat floor's one number."""
        return math.exp(sum(math.log(t) for t in self.measured_s) / len(self.results))

    @property
    def floor_errors(self) -> tuple[float, ...]:
        """Each case's error had it been predicted by the geometric mean."""
        return tuple(self.geomean_s / t - 1 for t in self.measured_s)

    @property
    def least_abs_errors(self) -> tuple[float, ...]:
        """|error| of each case against the single number with the least summed |error| (a
        measured time: the sum is convex and piecewise linear in the prediction)."""
        best = min(self.measured_s, key=lambda p: sum(abs(p / t - 1) for t in self.measured_s))
        return tuple(abs(best / t - 1) for t in self.measured_s)

    @property
    def description(self) -> str:
        """The first case's description without a trailing parenthesis (fp8-pairs name the
        release there)."""
        return without_trailing_parenthesis(self.results[0].case.description)


def without_trailing_parenthesis(text: str) -> str:
    """text less a final balanced `( ... )`, nested ones included."""
    if not text.endswith(")"):
        return text
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(text[i], 0)
        if depth == 0:
            return text[:i].rstrip()
    return text


def repeat_groups(results, key=same_input, prefix: str = "r") -> list[RepeatGroup]:
    """Groups of >= 2 results sharing key(case) within a set, in order of first appearance;
    labels number them within each set (prefix 1, prefix 2, ...)."""
    by_key: dict = {}
    for r in results:
        k = key(r.case)
        if k is not None:
            by_key.setdefault(k, []).append(r)
    count: dict = {}
    groups = []
    for rs in by_key.values():
        if len(rs) >= 2:
            count[rs[0].case.set] = count.get(rs[0].case.set, 0) + 1
            groups.append(RepeatGroup(f"{prefix}{count[rs[0].case.set]}", tuple(rs)))
    return groups


def repeat_summary(groups: list[RepeatGroup], detail: bool = True) -> dict:
    """Set-level figures: groups, cases, the floor's MAPE / bias / least MAPE, simsp's MAPE and
    bias over the same cases, the largest spread; with detail each group's ids and times."""
    rs = [r for g in groups for r in g.results]
    floor = metrics([e for g in groups for e in g.floor_errors])
    simsp = metrics([r.error for r in rs])
    least = [e for g in groups for e in g.least_abs_errors]
    out = {
        "groups": len(groups),
        "cases": len(rs),
        "floor_mape": floor["mape"],
        "floor_bias": floor["bias"],
        "floor_least_mape": sum(least) / len(least) if least else None,
        "simsp_mape": simsp["mape"],
        "simsp_bias": simsp["bias"],
        "max_spread": max((g.spread for g in groups), default=None),
    }
    if detail:
        out["list"] = [
            {
                "group": g.label,
                "description": g.description,
                "cases": list(g.case_ids),
                "measured_s": list(g.measured_s),
                "predicted_s": list(g.predicted_s),
                "spread": g.spread,
                "geomean_s": g.geomean_s,
            }
            for g in groups
        ]
    return out


def group_labels(results, json_key: str = "repeats") -> dict[tuple[str, str], str]:
    """(set, case name) -> its group's label under KEYS[json_key], for the cases in repeated
    groups."""
    groups = repeat_groups(results, *KEYS[json_key])
    return {(r.case.set, r.case.name): g.label for g in groups for r in g.results}
