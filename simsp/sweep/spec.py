"""The sweep spec: reading and checking it, and enumerating its valid, distinct configurations.

The spec is read through `simsp.config` (only config reads YAML). dp = gpus / (tp x cp x pp);
settings the grid leaves out keep the workload's values; an inherited interleaved schedule falls
back to 1F1B where interleaving is not valid, a schedule listed in the grid is taken as asked
(its invalid combinations are skipped); configurations that mean the same run (SP with tp = 1,
interleaved with one chunk) are kept once.
"""

import dataclasses
import itertools
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from simsp.errors import InputError
from simsp.hardware import HardwareSpec
from simsp.knobs import CHOICES as KNOB_CHOICES
from simsp.knobs import KNOBS, parse_bias
from simsp.schedule import REGISTRY
from simsp.workload import Workload, validate

from .rows import fmt

GRID_KEYS = {
    **{k.name: (k.section, k.name, k.kind) for k in KNOBS if k.name != "dp"},
    **{k.short: (k.section, k.name, k.kind) for k in KNOBS if k.short != k.name},
}
"""grid key: (section, field, kind), one per knob (knobs.py) and its short name (sp); dp is
not a key, as it follows from the GPUs (dp = gpus / (tp x cp x pp))."""
CHOICES = {
    key: KNOB_CHOICES[field] for key, (_, field, _) in GRID_KEYS.items() if field in KNOB_CHOICES
}
SPEC_KEYS = ("name", "workload", "hardware", "gpus", "grid", "keep")
DEFAULT_KEEP = 0.25
"""--screen: the share of fitting configurations (best by closed-form time) simulated as events."""


# ---------------------------------------------------------------------------- the spec
@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep spec."""

    source: str
    """The spec file."""
    workload: Workload
    hardware: tuple[HardwareSpec, ...]
    gpus: int
    grid: tuple[tuple[str, tuple], ...]
    """(grid key, values) in the spec's order; keys are GRID_KEYS names."""
    keep: float = DEFAULT_KEEP


def positive_int(value) -> bool:
    """An int (not a bool) of at least 1."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_keep(file, key: str, keep) -> None:
    """InputError unless keep is a fraction in (0, 1]."""
    if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not 0 < keep <= 1:
        raise InputError(file, key, keep, "must be a fraction in (0, 1]")


def resolve(spec_path: Path, key: str, value) -> Path:
    """A path from a spec: as given (relative to the working directory), else next to the spec."""
    if not isinstance(value, str) or not value:
        raise InputError(spec_path, key, value, "must be a path (a non-empty string)")
    for candidate in (Path(value), spec_path.parent / value):
        if candidate.exists():
            return candidate
    raise InputError(spec_path, key, value, f"no such file (looked in . and {spec_path.parent})")


def _grid_values(file, key, values) -> tuple:
    """One grid entry checked: a non-empty list of values of the key's type."""
    if key not in GRID_KEYS:
        raise InputError(
            file, f"grid.{key}", values, f"unknown grid key; known: {', '.join(GRID_KEYS)}"
        )
    values = values if isinstance(values, list) else [values]
    if not values:
        raise InputError(file, f"grid.{key}", values, "must list at least one value")
    kind = GRID_KEYS[key][2]
    for v in values:
        if kind is bool and not isinstance(v, bool):
            raise InputError(file, f"grid.{key}", v, "must be true or false")
        if kind is int and not positive_int(v):
            raise InputError(file, f"grid.{key}", v, "must be a positive integer")
        if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
            raise InputError(file, f"grid.{key}", v, "must be a non-negative number")
        if key in CHOICES and str(v).lower() not in CHOICES[key]:
            raise InputError(file, f"grid.{key}", v, f"must be one of {', '.join(CHOICES[key])}")
        if kind is str and key not in CHOICES and not isinstance(v, str):
            raise InputError(file, f"grid.{key}", v, "must be a string")
    return tuple(dict.fromkeys(values))  # drop repeats, keep order


def load_spec(path) -> SweepSpec:
    """Read and check a sweep spec; InputError names the file, key, value and rule."""
    from simsp.config import load_hardware, load_workload, read_yaml

    path = Path(path)
    data = read_yaml(path)
    for key in data:
        if key not in SPEC_KEYS:
            raise InputError(path, key, data[key], f"unknown key; known: {', '.join(SPEC_KEYS)}")
    if "workload" not in data:
        raise InputError(path, "workload", None, "is required")
    workload = load_workload(resolve(path, "workload", data["workload"]))
    hw_paths = data.get("hardware")
    hw_paths = hw_paths if isinstance(hw_paths, list) else [hw_paths]
    hardware = tuple(
        load_hardware(resolve(path, "hardware", p) if p is not None else None) for p in hw_paths
    )
    names = [h.name for h in hardware]
    if len(set(names)) != len(names):
        raise InputError(
            path, "hardware", names, "two hardware files share a name; rows would collide"
        )
    gpus = data.get("gpus", workload.parallel.gpus)
    if not positive_int(gpus):
        raise InputError(path, "gpus", gpus, "must be a positive integer")
    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        raise InputError(path, "grid", grid, "must map setting names to lists of values")
    keys = [GRID_KEYS.get(k, (None, k))[1] for k in grid]
    if len(set(keys)) != len(keys):
        raise InputError(
            path, "grid", list(grid), "names one setting twice (sp and sequence_parallel)"
        )
    keep = data.get("keep", DEFAULT_KEEP)
    check_keep(path, "keep", keep)
    return SweepSpec(
        str(path),
        workload,
        hardware,
        gpus,
        tuple((k, _grid_values(path, k, v)) for k, v in grid.items()),
        float(keep),
    )


# ---------------------------------------------------------------------------- enumeration
@dataclass(frozen=True)
class Config:
    """One configuration to evaluate."""

    key: tuple[str, ...]
    """KEY_COLUMNS values as written to the output."""
    workload: Workload
    hardware: HardwareSpec


@dataclass
class Counts:
    """What enumeration found."""

    grid_points: int = 0
    """Grid combinations times hardware files."""
    invalid: int = 0
    """Skipped: broke a workload rule, or tp x cp x pp does not divide the GPUs."""
    duplicates: int = 0
    """Skipped: the same run as an earlier configuration."""
    fallback: int = 0
    """Inherited interleaved schedule run as 1F1B."""
    configs: int = 0


def config_key(w: Workload, hw: HardwareSpec) -> tuple[str, ...]:
    """KEY_COLUMNS values of a workload on a machine: its names, GPUs and every knob."""
    return (
        (fmt(w.name), fmt(hw.name), fmt(w.parallel.gpus))
        + _formatted(w.parallel)
        + _formatted(w.training)
        + _formatted(w.model)
    )


@lru_cache(maxsize=4096)
def _formatted(section) -> tuple[str, ...]:
    """A section's knob values as written, in KEY_KNOBS order (cached: sweeps repeat sections)."""
    return tuple(fmt(getattr(section, f.name)) for f in dataclasses.fields(section))


def _variant(base: Workload, values: dict, gpus: int) -> Workload | None:
    """The workload with grid values applied and dp = gpus / (tp cp pp); None if tp cp pp does
    not divide."""
    sections = {"model": {}, "parallel": {}, "training": {}}
    for key, value in values.items():
        section, field, _ = GRID_KEYS[key]
        sections[section][field] = parse_bias(value) if field == "bias" else value
    par = dataclasses.replace(base.parallel, **sections["parallel"])
    model_parallel = par.tp * par.cp * par.pp
    if gpus % model_parallel:
        return None
    par = dataclasses.replace(
        par, dp=gpus // model_parallel, sequence_parallel=par.sequence_parallel and par.tp > 1
    )
    if par.schedule in REGISTRY and REGISTRY[par.schedule].chunks is not None:
        par = dataclasses.replace(par, virtual_stages=1)  # the schedule fixes its chunks
    model = (
        dataclasses.replace(base.model, **sections["model"]) if sections["model"] else base.model
    )
    training = (
        dataclasses.replace(base.training, **sections["training"])
        if sections["training"]
        else base.training
    )
    return dataclasses.replace(base, model=model, parallel=par, training=training)


def _as_1f1b(w: Workload) -> Workload:
    """The workload on the 1F1B schedule (one chunk per stage)."""
    return dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, schedule="1f1b", virtual_stages=1)
    )


def _normalised(w: Workload) -> Workload:
    """Interleaving with one chunk is 1F1B."""
    if w.parallel.schedule == "interleaved" and w.parallel.virtual_stages == 1:
        return _as_1f1b(w)
    return w


def _valid(w: Workload, source: str) -> bool:
    try:
        validate(w, source)
    except InputError:
        return False
    return True


def enumerate_configs(spec: SweepSpec) -> tuple[list[Config], Counts]:
    """Every valid, distinct configuration of the spec, in grid order, and what was skipped."""
    counts, seen, out = Counts(), set(), []
    keys = [k for k, _ in spec.grid]
    explicit_schedule = "schedule" in keys
    for hw in spec.hardware:
        for combo in itertools.product(*(v for _, v in spec.grid)):
            counts.grid_points += 1
            w = _variant(spec.workload, dict(zip(keys, combo, strict=True)), spec.gpus)
            if (
                w is not None
                and not _valid(w, spec.source)
                and not explicit_schedule
                and w.parallel.schedule == "interleaved"
            ):
                w = _as_1f1b(w)
                counts.fallback += _valid(w, spec.source)
            if w is None or not _valid(w, spec.source):
                counts.invalid += 1
                continue
            w = _normalised(w)
            key = config_key(w, hw)
            if key in seen:
                counts.duplicates += 1
                continue
            seen.add(key)
            out.append(Config(key, w, hw))
    counts.configs = len(out)
    return out, counts
