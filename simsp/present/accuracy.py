"""The line every answer ends with: how exact simsp has been on measured runs like the one
asked about, read from the derived accuracy document that `simsp validate --accuracy` writes
(simsp/validate/data/accuracy.json). Reading it needs nothing of the validation itself."""

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from simsp.errors import InputError
from simsp.io.config import REPO_ROOT
from simsp.textfile import read_text

ACCURACY_FILE = Path(__file__).resolve().parents[1] / "validate" / "data" / "accuracy.json"
COMMAND = "python -m simsp validate --accuracy simsp/validate/data/accuracy.json"
"""The command that derives ACCURACY_FILE from this tree's model."""
FAMILIES = ("GB300", "B300", "GB200", "B200", "GH200", "H200", "H100", "A100")
"""GPU families, tried in order on a GPU's name (GB300 before B300, GB200 before B200, GH200
before H200)."""
BAND = (0.1, 0.9)
"""The quantiles of measured / simsp a group reports: the middle 80% of its runs."""
BAND_MIN_RUNS = 10
"""Below this many runs a group reports its least and greatest measured / simsp instead."""


def gpu_family(name: str) -> str:
    """The family of a GPU name ('H100-SXM5-80GB' -> 'H100'), '' when none is known."""
    upper = name.upper()
    return next((f for f in FAMILIES if f in upper), "")


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
    """(validation set, runs of the group in it), in the validation's order of its sets."""
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
    def from_dict(cls, d: dict, measured_sets: tuple[str, ...]) -> "Accuracy":
        """A group of the document, its sets named in `measured_sets` order (the document's own
        `measured_sets`, the validation's order)."""
        band, sets = d["measured_over_simsp"], d["sets"]
        unknown = set(sets) - set(measured_sets)
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
            tuple((s, sets[s]) for s in measured_sets if s in sets),
            tuple(d.get("files", ())),
        )

    def line(self, overridden: bool = False, stack: bool = False) -> str:
        """One readable line for `simsp run`; `overridden`: the run changed the file with --set
        (the figures are the file's as validated); `stack`: a stack's group (any hardware)."""
        sets = ", ".join(f"{k} {name}" for name, k in self.sets)
        runs = f"{self.n} measured {self.precision} run{'s' if self.n != 1 else ''}"
        if stack:
            where = f"on {runs} on the {self.scope} stack, all GPUs ({sets})"
        elif self.files:
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


@lru_cache(maxsize=4)
def read_accuracy(path: str = str(ACCURACY_FILE)) -> tuple[dict, dict, dict]:
    """({(file stem, precision): Accuracy}, {(family, precision): Accuracy}, {(stack,
    precision): Accuracy}) of a derived accuracy document."""
    try:
        doc = json.loads(read_text(path))
        order = tuple(doc["measured_sets"])
        return tuple(
            {(a.scope, a.precision): a for a in (Accuracy.from_dict(d, order) for d in doc[key])}
            for key in ("hardware", "gpus", "stacks")
        )
    except (ValueError, KeyError, TypeError) as e:
        raise InputError(path, "groups", "", f"must be {COMMAND}'s output ({e})") from None


def _library_stem(source: str) -> str:
    """The stem of the shipped hardware file the source path is (the checkout's hardware/, not
    a same-named copy elsewhere), else ''."""
    if not source:
        return ""
    path = Path(source).resolve()
    return path.stem if path == (REPO_ROOT / "hardware" / path.name).resolve() else ""


def accuracy_of(
    hw, precision: str, path: str = str(ACCURACY_FILE), stack: str = "megatron"
) -> Accuracy | None:
    """The measured accuracy of runs with this hardware file in this precision where the
    validation ran it (a shipped file) on at least BAND_MIN_RUNS runs, else of its GPU family's
    files (where they hold more runs); on a stack other than
    megatron, of that stack's runs in this precision; None where simsp has no measured run of
    any."""
    files, families, stacks = read_accuracy(path)
    if stack != "megatron":
        return stacks.get((stack, precision))
    own = files.get((_library_stem(hw.source), precision))
    family = families.get((gpu_family(hw.gpu.name), precision))
    if own is not None and own.n < BAND_MIN_RUNS and family is not None and family.n > own.n:
        return family  # too few runs of the file for a band: its GPU family's
    return own or family


def measured_range(t: float, a: Accuracy) -> tuple[float, float]:
    """The times measured runs like this one took, from simsp's time t: t x (measured / simsp)
    at the group's p10 and p90 (its least and greatest below BAND_MIN_RUNS runs). From the
    validation's results, never fed back into the model."""
    return t * a.low, t * a.high


def band_note(a: Accuracy | None) -> str:
    """`measured runs like these took 1.05-1.14x simsp's times (dgx-h100 bf16: 93 runs, p10-p90)`
    under a table of times from one machine, precision and stack; '' without a group."""
    if a is None:
        return "no measured run like these: simsp's times carry no measured range"
    band = "min-max" if a.whole_range else "p10-p90"
    return (
        f"measured runs like these took {a.low:.2f}-{a.high:.2f}x simsp's times "
        f"({a.scope} {a.precision}: {a.n} runs, {band})"
    )


def range_note(t: float, a: Accuracy | None) -> str:
    """`measured runs like it took 1.05-1.14x: 17.2-18.7 s` for a time t, '' without a group."""
    if a is None:
        return ""
    lo, hi = measured_range(t, a)
    return f"measured runs like it took {a.low:.2f}-{a.high:.2f}x: {lo:.1f}-{hi:.1f} s"


def accuracy_line(
    hw, precision: str, path: str = str(ACCURACY_FILE), stack: str = "megatron"
) -> str:
    """The line `simsp run` ends with: how exact such runs have been, or that none was
    measured."""
    found = accuracy_of(hw, precision, path, stack)
    if found is not None:
        return found.line(overridden=bool(hw.overrides), stack=stack != "megatron")
    if stack != "megatron":
        return f"not validated: simsp has no measured {precision} run on the {stack} stack"
    family = gpu_family(hw.gpu.name)
    of = f"{family} ({hw.gpu.name})" if family else hw.gpu.name
    return f"not validated: simsp has no measured {precision} run on {of}"
