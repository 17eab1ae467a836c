"""How exact simsp has been on measured runs like the one it is asked about: the validation's
errors grouped by GPU and precision, kept as a derived file that `simsp run` reads, so every
answer says how far measured iterations of that kind have fallen from simsp's.

Only whole measured iterations count: the paper's Table 5, vTrain's multi-node runs, the
published runs (A100, H100, B200/GB200), NVIDIA's paired BF16/FP8 runs and SimuMax's measured B200
runs. vTrain's single-node file (its own predictor's output, not measurement) and the paper's
Table 4 (one layer's forward or backward, not an iteration) stay out. The figures describe the
model as it stands; nothing is corrected by them (they are a report, never a calibration).
"""

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from simsp.errors import InputError
from simsp.textfile import read_text

MEASURED_SETS = (
    "paper-table5",
    "vtrain-multi",
    "published-a100",
    "published-h100",
    "published-b200",
    "fp8-pairs",
    "simumax-b200",
)
"""The validation sets whose references are measured whole iterations."""
FAMILIES = ("GB200", "B200", "H200", "H100", "A100")
"""GPU families, tried in order on a GPU's name (GB200 before B200, which it contains)."""
ACCURACY_FILE = Path(__file__).parent / "data" / "accuracy.json"
COMMAND = "python -m simsp validate --accuracy simsp/validate/data/accuracy.json"
"""The command that derives ACCURACY_FILE from this tree's model."""
BAND = (0.1, 0.9)
"""The quantiles of measured / simsp a group reports (p10, p90): the middle 80% of its runs."""


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
    """simsp against the measured runs of one GPU family and precision."""

    gpu: str
    precision: str
    n: int
    mape: float
    bias: float
    """Mean of simsp / measured - 1: negative where simsp predicts faster than measured."""
    max_abs_error: float
    low: float
    """BAND[0] quantile of measured / simsp over the group's runs."""
    high: float
    """BAND[1] quantile of measured / simsp."""
    sets: tuple[tuple[str, int], ...]
    """(validation set, runs of this group in it)."""

    def to_dict(self) -> dict:
        return {
            "gpu": self.gpu,
            "precision": self.precision,
            "n": self.n,
            "mape": self.mape,
            "bias": self.bias,
            "max_abs_error": self.max_abs_error,
            "measured_over_simsp": {"p10": self.low, "p90": self.high},
            "sets": dict(self.sets),
        }

    @classmethod
    def from_dict(cls, d: dict) -> "Accuracy":
        band = d["measured_over_simsp"]
        sets = tuple((s, d["sets"][s]) for s in MEASURED_SETS if s in d["sets"])
        return cls(
            d["gpu"],
            d["precision"],
            d["n"],
            d["mape"],
            d["bias"],
            d["max_abs_error"],
            band["p10"],
            band["p90"],
            sets,
        )

    def line(self) -> str:
        """One readable line for `simsp run`."""
        sets = ", ".join(name for name, _ in self.sets)
        return (
            f"measured {self.gpu} {self.precision} runs ({self.n}: {sets}): simsp's MAPE "
            f"{self.mape:.1%}, bias {self.bias:+.1%}, worst {self.max_abs_error:.1%}; the middle "
            f"80% took {self.low:.2f}-{self.high:.2f}x simsp's time"
        )


def _round(x: float) -> float:
    return round(x, 6)


def accuracy_groups(results) -> list[Accuracy]:
    """The validation results of MEASURED_SETS (whole iterations only) grouped by the GPU
    family of each case's hardware file and the run's precision, in FAMILIES order."""
    from simsp.validate.runner import _hardware

    groups: dict = {}
    for r in results:
        if r.case.set not in MEASURED_SETS or r.case.quantity != "iteration":
            continue
        family = gpu_family(_hardware(r.case.hardware).gpu.name)
        groups.setdefault((family, r.case.workload.training.precision), []).append(r)
    out = []
    order = {f: i for i, f in enumerate(FAMILIES)}
    for (family, precision), rs in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0])):
        errors = [r.error for r in rs]
        ratios = [1 / (1 + e) for e in errors]
        counts: dict = {}
        for r in rs:
            counts[r.case.set] = counts.get(r.case.set, 0) + 1
        out.append(
            Accuracy(
                family,
                precision,
                len(rs),
                _round(sum(abs(e) for e in errors) / len(errors)),
                _round(sum(errors) / len(errors)),
                _round(max(abs(e) for e in errors)),
                _round(quantile(ratios, BAND[0])),
                _round(quantile(ratios, BAND[1])),
                tuple((s, counts[s]) for s in MEASURED_SETS if s in counts),
            )
        )
    return out


def accuracy_document(results) -> dict:
    """ACCURACY_FILE's content for a finished validation of MEASURED_SETS."""
    return {
        "derived_by": COMMAND,
        "what": (
            "simsp's errors on measured whole iterations, by GPU family and precision; "
            "measured_over_simsp holds the 10th and 90th percentiles of measured / simsp"
        ),
        "groups": [a.to_dict() for a in accuracy_groups(results)],
    }


def accuracy_json(results) -> str:
    """accuracy_document() as the file's text: sorted keys, one line a value."""
    return json.dumps(accuracy_document(results), indent=1, sort_keys=True) + "\n"


@lru_cache(maxsize=4)
def read_accuracy(path: str = str(ACCURACY_FILE)) -> dict:
    """(family, precision) -> that group's Accuracy, from a derived accuracy document."""
    try:
        doc = json.loads(read_text(path))
        groups = (Accuracy.from_dict(g) for g in doc["groups"])
        return {(a.gpu, a.precision): a for a in groups}
    except (ValueError, KeyError, TypeError) as e:
        raise InputError(path, "groups", "", f"must be {COMMAND}'s output ({e})") from None


def accuracy_of(gpu_name: str, precision: str, path: str = str(ACCURACY_FILE)) -> Accuracy | None:
    """The measured accuracy of runs on this GPU's family in this precision, None where simsp
    has no measured run of that kind."""
    return read_accuracy(path).get((gpu_family(gpu_name), precision))


def accuracy_line(found: Accuracy | None, gpu_name: str, precision: str) -> str:
    """`simsp run`'s line on how exact such runs have been, or that none was measured."""
    if found is None:
        family = gpu_family(gpu_name) or gpu_name
        return f"not validated: simsp has no measured {precision} run on {family}"
    return found.line()
