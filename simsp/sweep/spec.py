"""The sweep spec: reading and checking it (its configurations: sweep/configs.py).

The spec is read through `simsp.io.config` (only config reads YAML). dp = gpus / (tp x cp x pp).
"""

import math
from dataclasses import dataclass
from pathlib import Path

from simsp.errors import InputError, unquoted
from simsp.spec.hardware import HardwareSpec
from simsp.spec.knobs import CHOICES as KNOB_CHOICES
from simsp.spec.knobs import KNOBS
from simsp.spec.workload import Workload

GRID_KEYS = {
    **{k.name: (k.section, k.name, k.kind) for k in KNOBS if k.name != "dp"},
    **{k.short: (k.section, k.name, k.kind) for k in KNOBS if k.short != k.name},
}
"""grid key: (section, field, kind), one per knob (spec/knobs.py) and its short name (sp); dp is
not a key, as it follows from the GPUs (dp = gpus / (tp x cp x pp))."""
CHOICES = {
    key: KNOB_CHOICES[field] for key, (_, field, _) in GRID_KEYS.items() if field in KNOB_CHOICES
}
SPEC_KEYS = ("name", "workload", "hardware", "gpus", "grid", "keep")
DEFAULT_MAX_GRID = 200_000
"""Grid points a sweep enumerates at most (--max-grid raises it): counted from the list lengths
before enumerating, since a grid of a dozen 64-value lists would otherwise enumerate forever.
A grid the columns enumeration cannot take (model keys, say) costs ~65 us a point to validate:
200,000 points is ~13 s on one core, where 1,000,000 took ~30 s on an idle machine (#32)."""
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
    inputs: tuple[str, ...] = ()
    """The files the spec read (itself, its workload, its hardware files): no output of the
    sweep may be one of them."""


def positive_int(value) -> bool:
    """An int (not a bool) of at least 1."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_keep(file, key: str, keep) -> None:
    """InputError unless keep is a fraction in (0, 1]."""
    if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not 0 < keep <= 1:
        raise InputError(file, key, keep, "must be a fraction in (0, 1]")


def resolve(spec_path: Path, key: str, value, allow_outside: bool = False) -> Path:
    """A path from a spec: next to the spec (relative to the file that names it), else as given
    (relative to the working directory); one outside both folder trees (and simsp's shipped
    workloads and hardware) only with `allow_outside` (`sweep --allow-outside`: a spec from
    someone else must not make simsp read files of its choosing)."""
    if not isinstance(value, str) or not value:
        raise InputError(spec_path, key, value, "must be a path (a non-empty string)")
    for candidate in (spec_path.parent / value, Path(value)):
        if candidate.exists():
            from simsp.io.config import inside_trees

            if not allow_outside and not inside_trees(candidate, Path.cwd(), spec_path.parent):
                raise InputError(
                    spec_path,
                    key,
                    value,
                    "is outside the spec's folder, the working directory and simsp's own "
                    "workloads; pass --allow-outside to read it",
                )
            return candidate
    raise InputError(spec_path, key, value, f"no such file (looked in {spec_path.parent} and .)")


def _named(path, load, *args):
    """load(*args) of a file the spec names: an error about that file's contents does not quote
    its value (the spec, not the command line, chose the file)."""
    try:
        return load(*args)
    except InputError as e:
        if path is not None and Path(e.file) == Path(path):
            raise unquoted(e) from None
        raise


def _hardware_path(spec_path: Path, value, allow_outside: bool = False) -> Path:
    """A hardware entry of a spec: a path (as resolve finds it), or a library name (`dgx-h100`)
    as --hardware takes it."""
    from simsp.io.config import library_path

    if isinstance(value, str) and value and "/" not in value and library_path(value).is_file():
        if not (Path(value).exists() or (spec_path.parent / value).exists()):
            return library_path(value)
    return resolve(spec_path, "hardware", value, allow_outside)


def _grid_value(file, key: str, v):
    """One grid value checked as the workload file's own key would be (spec.fields' scalar rules:
    finite, at most 2**53, the right type), plus the key's named choices."""
    from simsp.spec.fields import check_scalar

    kind = GRID_KEYS[key][2]
    if key in CHOICES:
        named = isinstance(v, str) or (kind is str and isinstance(v, bool))
        if not named or str(v).lower() not in CHOICES[key]:
            raise InputError(file, f"grid.{key}", v, f"must be one of {', '.join(CHOICES[key])}")
        return v
    if kind is int and not positive_int(v):
        raise InputError(file, f"grid.{key}", v, "must be a positive integer")
    if kind is float and (isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0):
        raise InputError(file, f"grid.{key}", v, "must be a non-negative number")
    if kind is str and not isinstance(v, str):
        raise InputError(file, f"grid.{key}", v, "must be a string")
    return check_scalar(file, f"grid.{key}", v, kind, allow_zero=kind is float)


def _grid_values(file, key, values) -> tuple:
    """One grid entry checked: a non-empty list of values of the key's type."""
    if key not in GRID_KEYS:
        raise InputError(file, f"grid.{key}", values, _unknown_grid_key(key))
    values = values if isinstance(values, list) else [values]
    if not values:
        raise InputError(file, f"grid.{key}", values, "must list at least one value")
    for v in values:
        _grid_value(file, key, v)
    return tuple(dict.fromkeys(values))  # drop repeats, keep order


def grid_points(spec: "SweepSpec") -> int:
    """Grid combinations times hardware files, counted without enumerating them."""
    return math.prod(len(v) for _, v in spec.grid) * len(spec.hardware)


def check_grid_size(spec: "SweepSpec", limit: int) -> None:
    """InputError, before enumerating, when the grid holds more than limit points."""
    n = grid_points(spec)
    if n > limit:
        sizes = " x ".join(f"{len(v)} {k}" for k, v in spec.grid)
        raise InputError(
            spec.source,
            "grid",
            f"{sizes} x {len(spec.hardware)} hardware",
            f"is {n:,} grid points, over the limit of {limit:,} (--max-grid raises it)",
        )


def load_spec(path, sets=(), allow_outside: bool = False) -> SweepSpec:
    """Read and check a sweep spec; InputError names the file, key, value and rule. `sets`
    (`--set SECTION.KEY=VALUE`) apply to every hardware file of the spec; `allow_outside` lets
    its paths leave its folder and the working directory."""
    from simsp.io.config import (
        check_name,
        load_hardware,
        load_workload,
        read_yaml,
        workload_hardware,
    )
    from simsp.spec.fields import check_scalar

    path = Path(path)
    data = read_yaml(path)
    for key in data:
        if key not in SPEC_KEYS:
            raise InputError(path, key, data[key], f"unknown key; known: {', '.join(SPEC_KEYS)}")
    if "workload" not in data:
        raise InputError(path, "workload", None, "is required")
    workload_path = resolve(path, "workload", data["workload"], allow_outside)
    workload = _named(workload_path, load_workload, workload_path)  # checked first
    if "name" in data:
        check_name(path, data["name"])
    hw_paths = data.get("hardware", workload_hardware(workload_path))
    hw_paths = hw_paths if isinstance(hw_paths, list) else [hw_paths]
    if not hw_paths:
        raise InputError(path, "hardware", hw_paths, "must name at least one hardware file")
    hw_files = [_hardware_path(path, p, allow_outside) if p is not None else None for p in hw_paths]
    hardware = tuple(_named(f, load_hardware, f, sets) for f in hw_files)
    names = [h.label for h in hardware]
    if len(set(names)) != len(names):
        raise InputError(
            path, "hardware", names, "two hardware files share a name; rows would collide"
        )
    gpus = data.get("gpus", workload.parallel.gpus)
    if not positive_int(gpus):
        raise InputError(path, "gpus", gpus, "must be a positive integer")
    check_scalar(path, "gpus", gpus, int, False)
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
        tuple(str(f) for f in (path, workload_path, *hw_files) if f is not None),
    )


def _unknown_grid_key(key: str) -> str:
    """The rule for a grid key simsp does not know: the nearest known ones, not all of them (a
    line stays readable as the spec classes grow)."""
    import difflib

    near = difflib.get_close_matches(str(key), GRID_KEYS, n=5, cutoff=0.5)
    hint = (
        f"did you mean {', '.join(near)}?"
        if near
        else "a grid key is a key of the workload's model, training or parallel section, or sp"
    )
    return f"unknown grid key ({len(GRID_KEYS)} known; {hint})"
