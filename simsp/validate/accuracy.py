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
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from simsp.errors import InputError
from simsp.textfile import read_text
from simsp.validate.cases import PEER_SETS, SETS

MEASURED_SETS = tuple(s for s in SETS if s not in PEER_SETS)
"""The validation sets whose references are measurements (Table 4's layer times are left out
case by case: their quantity is not an iteration)."""
FAMILIES = ("GB200", "B200", "GH200", "H200", "H100", "A100")
"""GPU families, tried in order on a GPU's name (GB200 before B200, GH200 before H200)."""
ACCURACY_FILE = Path(__file__).parent / "data" / "accuracy.json"
COMMAND = "python -m simsp validate --accuracy simsp/validate/data/accuracy.json"
"""The command that derives ACCURACY_FILE from this tree's model."""
BAND = (0.1, 0.9)
"""The quantiles of measured / simsp a group reports: the middle 80% of its runs."""
BAND_MIN_RUNS = 10
"""Below this many runs a group reports its least and greatest measured / simsp instead."""


def gpu_family(name: str) -> str:
    """The family of a GPU name ('H100-SXM5-80GB' -> 'H100'), '' when none is known."""
    upper = name.upper()
    return next((f for f in FAMILIES if f in upper), "")


def quantile(values: list[float], q: float) -> float:
    """The q-quantile of values, linear between order statistics (numpy's default rule)."""
    xs = sorted(values)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class Accuracy:
    """simsp against the measured runs of one hardware file (or GPU family) and precision."""

    scope: str
    """The hardware file's stem ('dgx-h100') or, for a family group, the family ('H100')."""
    precision: str
    n: int
    mape: float
    bias: float
    """Mean of simsp / measured - 1: negative where simsp predicts faster than measured."""
    worst: float
    """The signed error of largest magnitude."""
    low: float
    """measured / simsp at BAND[0] (or the least, below BAND_MIN_RUNS runs)."""
    high: float
    sets: tuple[tuple[str, int], ...]
    """(validation set, runs of the group in it), in MEASURED_SETS order."""
    files: tuple[str, ...] = ()
    """A family group's hardware files."""

    @property
    def whole_range(self) -> bool:
        return self.n < BAND_MIN_RUNS

    def to_dict(self) -> dict:
        return {
            "scope": self.scope,
            "precision": self.precision,
            "n": self.n,
            "mape": self.mape,
            "bias": self.bias,
            "worst": self.worst,
            "measured_over_simsp": {
                "low": self.low,
                "high": self.high,
                "of": "min-max" if self.whole_range else "p10-p90",
            },
            "sets": dict(self.sets),
            **({"files": list(self.files)} if self.files else {}),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Accuracy":
        band, sets = d["measured_over_simsp"], d["sets"]
        unknown = set(sets) - set(MEASURED_SETS)
        if unknown:
            raise KeyError(f"sets {sorted(unknown)} are not measured sets")
        return cls(
            d["scope"],
            d["precision"],
            d["n"],
            d["mape"],
            d["bias"],
            d["worst"],
            band["low"],
            band["high"],
            tuple((s, sets[s]) for s in MEASURED_SETS if s in sets),
            tuple(d.get("files", ())),
        )

    def line(self, overridden: bool = False) -> str:
        """One readable line for `simsp run`; `overridden`: the run changed the file with --set
        (the figures are the file's as validated)."""
        sets = ", ".join(f"{k} {name}" for name, k in self.sets)
        runs = f"{self.n} measured {self.precision} run{'s' if self.n != 1 else ''}"
        if self.files:
            files = ", ".join(f"hardware/{f}.yaml" for f in self.files)
            where = f"on {runs} on {self.scope} GPUs ({files}: {sets})"
        else:
            before = ", before --set," if overridden else ""
            where = f"with hardware/{self.scope}.yaml{before} on {runs} ({sets})"
        band = "min-max" if self.whole_range else "p10-p90"
        return (
            f"validated {where}: simsp's times {_side(self.bias)} on average, MAPE "
            f"{self.mape:.1%}, worst {_side(self.worst)}; measured / simsp "
            f"{self.low:.2f}-{self.high:.2f} ({band})"
        )


def _side(error: float) -> str:
    """'9.9% short' (simsp under the measured time) or '0.4% long'."""
    return f"{abs(error):.1%} {'short' if error < 0 else 'long'}"


def _group(scope: str, precision: str, rs: list, files: tuple[str, ...] = ()) -> Accuracy:
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
        tuple((s, counts[s]) for s in MEASURED_SETS if s in counts),
        files,
    )


def measured_iterations(results) -> list:
    """The results that are measured whole iterations."""
    return [r for r in results if r.case.set in MEASURED_SETS and r.case.quantity == "iteration"]


def accuracy_groups(results) -> tuple[list[Accuracy], list[Accuracy]]:
    """(per hardware file, per GPU family) groups of the measured iterations, each by precision:
    files by name, families in FAMILIES order."""
    from simsp.validate.runner import _hardware

    by_file: dict = {}
    for r in measured_iterations(results):
        key = (Path(r.case.hardware).stem, r.case.workload.training.precision)
        by_file.setdefault(key, []).append(r)
    by_family: dict = {}
    for (stem, precision), rs in by_file.items():
        family = gpu_family(_hardware(rs[0].case.hardware).gpu.name)
        if family:  # a GPU of no known family has its file's figures only
            by_family.setdefault((family, precision), {})[stem] = rs
    order = {f: i for i, f in enumerate(FAMILIES)}
    files = [_group(stem, p, rs) for (stem, p), rs in sorted(by_file.items())]
    families = [
        _group(family, p, [r for rs in stems.values() for r in rs], tuple(sorted(stems)))
        for (family, p), stems in sorted(by_family.items(), key=lambda kv: (order[kv[0][0]], kv[0]))
    ]
    return files, families


def accuracy_document(results) -> dict:
    """ACCURACY_FILE's content for a finished validation of MEASURED_SETS."""
    files, families = accuracy_groups(results)
    return {
        "derived_by": COMMAND,
        "what": (
            "simsp's errors (simsp / measured - 1) on measured whole iterations, by hardware file "
            "and by GPU family, each by precision; measured_over_simsp holds the "
            f"{BAND[0]:.0%} and {BAND[1]:.0%} quantiles of measured / simsp (min and max below "
            f"{BAND_MIN_RUNS} runs)"
        ),
        "hardware": [a.to_dict() for a in files],
        "gpus": [a.to_dict() for a in families],
    }


def accuracy_json(results) -> str:
    """accuracy_document() as the file's text: sorted keys, one line a value."""
    return json.dumps(accuracy_document(results), indent=1, sort_keys=True) + "\n"


@lru_cache(maxsize=4)
def read_accuracy(path: str = str(ACCURACY_FILE)) -> tuple[dict, dict]:
    """({(file stem, precision): Accuracy}, {(family, precision): Accuracy}) of a derived
    accuracy document."""
    try:
        doc = json.loads(read_text(path))
        return tuple(
            {(a.scope, a.precision): a for a in map(Accuracy.from_dict, doc[key])}
            for key in ("hardware", "gpus")
        )
    except (ValueError, KeyError, TypeError) as e:
        raise InputError(path, "groups", "", f"must be {COMMAND}'s output ({e})") from None


def _library_stem(source: str) -> str:
    """The stem of the shipped hardware file the source path is (the checkout's hardware/, not
    a same-named copy elsewhere), else ''."""
    from simsp.config import REPO_ROOT

    if not source:
        return ""
    path = Path(source).resolve()
    return path.stem if path == (REPO_ROOT / "hardware" / path.name).resolve() else ""


def accuracy_of(hw, precision: str, path: str = str(ACCURACY_FILE)) -> Accuracy | None:
    """The measured accuracy of runs with this hardware file in this precision where the
    validation ran it (a shipped file), else of its GPU family's files; None where simsp has
    no measured run of either."""
    files, families = read_accuracy(path)
    own = files.get((_library_stem(hw.source), precision))
    return own or families.get((gpu_family(hw.gpu.name), precision))


def accuracy_line(hw, precision: str, path: str = str(ACCURACY_FILE)) -> str:
    """The line `simsp run` ends with: how exact such runs have been, or that none was
    measured."""
    found = accuracy_of(hw, precision, path)
    if found is not None:
        return found.line(overridden=bool(hw.overrides))
    family = gpu_family(hw.gpu.name)
    of = f"{family} ({hw.gpu.name})" if family else hw.gpu.name
    return f"not validated: simsp has no measured {precision} run on {of}"
