"""The only module that reads YAML: workload and hardware files become validated frozen specs.

Every problem is raised as one InputError naming the file, the key, the value and the rule.
"""

import dataclasses
import glob
import json
import typing
from pathlib import Path

import yaml

from simsp.errors import InputError
from simsp.hardware import (
    CalibrationSpec,
    GpuSpec,
    HardwareSpec,
    MemoryBoundSpec,
    NetworkSpec,
    NodeSpec,
)
from simsp.model import ModelSpec
from simsp.parallel import ParallelSpec
from simsp.workload import TrainingSpec, Workload, validate

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HARDWARE = "hardware/dgx-a100-80gb.yaml"


def read_text(path) -> str:
    """A file's text, or InputError naming it."""
    try:
        return Path(path).read_text()
    except OSError as e:
        raise InputError(path, "file", str(path), f"cannot be read ({e.strerror or e})") from None


def read_yaml(path) -> dict:
    """Load a YAML mapping, or raise InputError for a missing, unreadable or non-mapping file."""
    text = read_text(path)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise InputError(path, "file", str(path), f"is not valid YAML{where}") from None
    if not isinstance(data, dict):
        raise InputError(
            path, "file", type(data).__name__, "must be a YAML mapping of keys to values"
        )
    return data


def _check_scalar(file, key, value, kind, allow_zero):
    """Type and sign check of one scalar field."""
    if kind is bool:
        if not isinstance(value, bool):
            raise InputError(file, key, value, "must be true or false")
        return value
    if kind is str:
        if not isinstance(value, str) or not value:
            raise InputError(file, key, value, "must be a non-empty string")
        return value
    ok = isinstance(value, int if kind is int else (int, float)) and not isinstance(value, bool)
    if not ok:
        raise InputError(file, key, value, f"must be {'an integer' if kind is int else 'a number'}")
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(
            file, key, value, "must be positive" if not allow_zero else "must not be negative"
        )
    return kind(value)


def _check_steps(file, key, value):
    """A mapping or list of (threshold, value) pairs -> ascending tuple of float pairs."""
    pairs = value.items() if isinstance(value, dict) else value
    try:
        steps = tuple(sorted((float(a), float(b)) for a, b in pairs))
    except (TypeError, ValueError):
        raise InputError(
            file, key, value, "must map numbers to numbers, e.g. {0: 0.3, 1e6: 0.6}"
        ) from None
    if not steps or any(a < 0 or b <= 0 for a, b in steps):
        raise InputError(
            file,
            key,
            value,
            "must be a non-empty map of non-negative thresholds to positive values",
        )
    return steps


def build(cls, data, file, prefix=""):
    """Build dataclass cls from a mapping, checking unknown/missing keys, types and signs."""
    if not isinstance(data, dict):
        raise InputError(file, prefix.rstrip(".") or "file", data, "must be a mapping")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            raise InputError(
                file, prefix + str(key), data[key], f"unknown key; known: {', '.join(fields)}"
            )
    hints = typing.get_type_hints(cls)
    values = {}
    for name, f in fields.items():
        key = prefix + name
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        if name not in data:
            if not has_default:
                raise InputError(file, key, None, "is required")
            continue
        kind = hints[name]
        allow_zero = (has_default and f.default == 0) or f.metadata.get("allow_zero", False)
        value = data[name]
        if f.metadata.get("number_list") and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # a one-entry list YAML read as a number
        if kind in (int, float, bool, str):
            values[name] = _check_scalar(file, key, value, kind, allow_zero=allow_zero)
        elif kind == bool | str:
            text = (
                {"true": True, "false": False}.get(value, value)
                if isinstance(value, str)
                else value
            )
            values[name] = (
                text if isinstance(text, bool) else _check_scalar(file, key, text, str, False)
            )
        elif kind == tuple[str, ...]:
            items = data[name] if isinstance(data[name], list) else [data[name]]
            values[name] = tuple(_check_scalar(file, key, v, str, False) for v in items)
        else:
            values[name] = _check_steps(file, key, data[name])
    return cls(**values)


def _section(data, file, name, cls):
    """One required top-level section built into cls."""
    if name not in data:
        raise InputError(file, name, None, "is required")
    return build(cls, data[name], file, prefix=name + ".")


def _unknown_top(data, file, known):
    for key in data:
        if key not in known:
            raise InputError(file, key, data[key], f"unknown key; known: {', '.join(known)}")


def read_json(path) -> dict:
    """Load a JSON object (a Hugging Face config.json), or raise InputError."""
    try:
        data = json.loads(read_text(path))
    except ValueError as e:
        raise InputError(path, "file", str(path), f"is not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise InputError(path, "file", type(data).__name__, "must be a JSON object")
    return data


def _model_section(data: dict, file, model_overrides: dict) -> ModelSpec:
    """The `model:` mapping, with `hf_config: PATH` (relative to the workload file) expanded
    into its fields and the mapping's own keys, then the CLI's, laid over them.

    `--model PATH` (relative to the working directory) replaces the model but keeps seq_len."""
    section = data.get("model")
    if section is None:
        raise InputError(file, "model", None, "is required")
    if not isinstance(section, dict):
        raise InputError(file, "model", section, "must be a mapping")
    section = dict(section)
    given = {k: v for k, v in model_overrides.items() if v is not None}
    if "hf_config" in given:
        section = {"seq_len": section["seq_len"]} if "seq_len" in section else {}
        section["hf_config"] = str(Path(given.pop("hf_config")).resolve())
    if "hf_config" in section:
        from simsp.hf_config import model_fields

        given_path = _check_scalar(file, "model.hf_config", section.pop("hf_config"), str, False)
        hf_path = Path(file).parent / given_path
        if not hf_path.is_file():
            raise InputError(file, "model.hf_config", given_path, f"no such file ({hf_path})")
        section = {**model_fields(read_json(hf_path), str(hf_path)), **section}
    section.update(given)
    return build(ModelSpec, section, file, prefix="model.")


def load_workload(path, overrides: dict | None = None) -> Workload:
    """Read a workload YAML, apply CLI overrides ({'model': ..., 'parallel': {...},
    'training': {...}}), validate."""
    data = read_yaml(path)
    _unknown_top(data, path, ("name", "model", "training", "parallel"))
    overrides = dict(overrides or {})
    model_overrides = overrides.pop("model", {}) or {}
    for section, values in overrides.items():
        merged = dict(data.get(section) or {})
        merged.update({k: v for k, v in values.items() if v is not None})
        data[section] = merged
    name = _check_scalar(path, "name", data.get("name", Path(path).stem), str, False)
    w = Workload(
        name=name,
        model=_model_section(data, path, model_overrides),
        training=_section(data, path, "training", TrainingSpec),
        parallel=build(ParallelSpec, data.get("parallel", {}), path, prefix="parallel."),
    )
    return validate(w, str(path))


def _resolve_paths(file, key, patterns, folder: Path) -> tuple[str, ...]:
    """Expand calibration paths (globs allowed) relative to the hardware file's folder."""
    found = []
    for pattern in patterns:
        matches = sorted(glob.glob(str(folder / pattern)))
        if not matches:
            raise InputError(file, key, pattern, f"matches no file under {folder}")
        found.extend(matches)
    return tuple(found)


def load_hardware(path=None) -> HardwareSpec:
    """Read a hardware YAML; calibration paths become absolute. A bare name (`dgx-h100`) is a
    file of the hardware library (hardware/NAME.yaml)."""
    path = library_path(path) if path else default_hardware_path()
    data = read_yaml(path)
    _unknown_top(data, path, ("name", "gpu", "node", "network", "memory_bound", "calibration"))
    cal = build(CalibrationSpec, data.get("calibration", {}), path, prefix="calibration.")
    folder = path.resolve().parent
    cal = dataclasses.replace(
        cal,
        gemm=_resolve_paths(path, "calibration.gemm", [cal.gemm], folder)[0] if cal.gemm else "",
        gemm_model=_resolve_paths(path, "calibration.gemm_model", [cal.gemm_model], folder)[0]
        if cal.gemm_model
        else "",
        flash_attention=(
            _resolve_paths(path, "calibration.flash_attention", [cal.flash_attention], folder)[0]
            if cal.flash_attention
            else ""
        ),
        nvlink=_resolve_paths(path, "calibration.nvlink", cal.nvlink, folder),
        infiniband=_resolve_paths(path, "calibration.infiniband", cal.infiniband, folder),
    )
    return HardwareSpec(
        name=_check_scalar(path, "name", data.get("name", path.stem), str, False),
        gpu=_section(data, path, "gpu", GpuSpec),
        node=_section(data, path, "node", NodeSpec),
        network=_section(data, path, "network", NetworkSpec),
        memory_bound=_section(data, path, "memory_bound", MemoryBoundSpec),
        calibration=cal,
        source=str(path),
    )


def library_path(given) -> Path:
    """A hardware path as given, or, for a bare name with no such file, the library's file of
    that name (in ./hardware, else in the source checkout)."""
    path = Path(given)
    if path.exists() or path.suffix or len(path.parts) > 1:
        return path
    for root in (Path("hardware"), REPO_ROOT / "hardware"):
        if (root / f"{path.name}.yaml").exists():
            return root / f"{path.name}.yaml"
    return path


def default_hardware_path() -> Path:
    """hardware/dgx-a100-80gb.yaml from the working directory, else from the source checkout."""
    local = Path(DEFAULT_HARDWARE)
    return local if local.exists() else REPO_ROOT / DEFAULT_HARDWARE


def yaml_text(data: dict) -> str:
    """A mapping as block-style YAML text, keys in their order (the one place YAML is produced)."""
    return yaml.safe_dump(data, sort_keys=False)


def yaml_flow(value) -> str:
    """One value as single-line flow-style YAML, e.g. `[a.log, b.log]` or `calibration/x.csv`."""
    return (
        yaml.safe_dump(value, default_flow_style=True, width=float("inf"))
        .strip()
        .removesuffix("\n...")
        .strip()
    )
