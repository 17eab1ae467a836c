"""How exact simsp has been on measured runs like the one it is asked about: the validation's
errors grouped by hardware file and precision (and, for a file the validation never ran, by GPU
family), kept as a derived file that `simsp run` and `simsp compare` read.

Only measured whole iterations count: every set but the peers' (vTrain's single-node file is its
own predictor's output), and of the paper's two tables only Table 5 (Table 4 times one layer).
The runs are other workloads than the one asked about, so the figures say how the model has
done, not an error bar of this run; nothing is corrected by them (a report, never a
calibration).
"""

import json
import math
from collections import Counter
from pathlib import Path

from simsp.present.accuracy import (
    BAND,
    BAND_MIN_RUNS,
    COMMAND,
    FAMILIES,
    Accuracy,
    gpu_family,
)
from simsp.textfile import GENERATOR_KEY
from simsp.validate.cases import APART_SETS, PEER_SETS, SETS

MEASURED_SETS = tuple(s for s in SETS if s not in PEER_SETS + APART_SETS)
"""The validation sets whose references are measurements (Table 4's layer times are left out
case by case: their quantity is not an iteration), less those kept apart (the mixture-of-experts
runs, reported by `simsp validate --set moe`; the PyTorch-native runs, grouped by stack)."""
STACK_SETS = ("torch-native",)
"""Measured sets grouped by software stack instead (a run on a stack other than megatron reads
its stack's group: `stacks` in the document)."""


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of values, linear between order statistics (numpy's default rule)."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _group(
    scope: str, precision: str, rs: list, files: tuple[str, ...] = (), sets=MEASURED_SETS
) -> Accuracy:
    errors = [r.error for r in rs]
    ratios = [1 / (1 + e) for e in errors]
    whole = len(rs) < BAND_MIN_RUNS
    low, high = (
        (min(ratios), max(ratios))
        if whole
        else (quantile(ratios, BAND[0]), quantile(ratios, BAND[1]))
    )
    counts = Counter(r.case.set for r in rs)
    return Accuracy(
        scope,
        precision,
        len(rs),
        round(sum(abs(e) for e in errors) / len(errors), 6),
        round(sum(errors) / len(errors), 6),
        round(max(errors, key=abs), 6),
        round(low, 6),
        round(high, 6),
        tuple((s, counts[s]) for s in sets if s in counts),
        files,
    )


def measured_iterations(results) -> list:
    """The results that are measured whole iterations."""
    return [r for r in results if r.case.set in MEASURED_SETS and r.case.quantity == "iteration"]


def accuracy_groups(results) -> tuple[list[Accuracy], list[Accuracy]]:
    """(per hardware file, per GPU family) groups of the measured iterations, each by precision:
    files by name, families in FAMILIES order."""
    from simsp.validate.runner import set_hardware

    by_file: dict = {}
    for r in measured_iterations(results):
        key = (Path(r.case.hardware).stem, r.case.workload.training.precision)
        by_file.setdefault(key, []).append(r)
    by_family: dict = {}
    for (stem, precision), rs in by_file.items():
        family = gpu_family(set_hardware(rs[0].case.hardware).gpu.name)
        if family:  # a GPU of no known family has its file's figures only
            by_family.setdefault((family, precision), {})[stem] = rs
    order = {f: i for i, f in enumerate(FAMILIES)}
    files = [_group(stem, p, rs) for (stem, p), rs in sorted(by_file.items())]
    families = [
        _group(family, p, [r for rs in stems.values() for r in rs], tuple(sorted(stems)))
        for (family, p), stems in sorted(by_family.items(), key=lambda kv: (order[kv[0][0]], kv[0]))
    ]
    return files, families


def stack_groups(results) -> list[Accuracy]:
    """The STACK_SETS' measured iterations by (stack, precision), scope the stack's name."""
    by_stack: dict = {}
    for r in results:
        if r.case.set in STACK_SETS and r.case.quantity == "iteration":
            t = r.case.workload.training
            by_stack.setdefault((t.stack, t.precision), []).append(r)
    return [_group(stack, p, rs, sets=STACK_SETS) for (stack, p), rs in sorted(by_stack.items())]


def accuracy_document(results) -> dict:
    """ACCURACY_FILE's content for a finished validation of MEASURED_SETS and STACK_SETS."""
    files, families = accuracy_groups(results)
    return {
        "derived_by": COMMAND,
        GENERATOR_KEY: "simsp",
        "what": (
            "simsp's errors (simsp / measured - 1) on measured whole iterations, by hardware file "
            "and by GPU family, each by precision; measured_over_simsp holds the "
            f"{BAND[0]:.0%} and {BAND[1]:.0%} quantiles of measured / simsp (min and max below "
            f"{BAND_MIN_RUNS} runs)"
        ),
        "measured_sets": list(MEASURED_SETS + STACK_SETS),
        "hardware": [a.to_dict() for a in files],
        "gpus": [a.to_dict() for a in families],
        "stacks": [a.to_dict() for a in stack_groups(results)],
    }


def accuracy_json(results) -> str:
    """accuracy_document() as the file's text: sorted keys, one line a value."""
    return json.dumps(accuracy_document(results), indent=1, sort_keys=True) + "\n"
