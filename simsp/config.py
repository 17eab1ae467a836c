"""The only module that reads YAML: workload and hardware files become validated frozen specs.

Every problem is raised as one InputError naming the file, the key, the value and the rule.
"""

import dataclasses
import glob
import json
import math
import re
import typing
from pathlib import Path

import yaml

from simsp import textfile
from simsp.calibration.plausible import check_tables
from simsp.errors import InputError
from simsp.hardware import (
    CalibrationSpec,
    GpuSpec,
    HardwareSpec,
    MemoryBoundSpec,
    NetworkSpec,
    NodeSpec,
    hardware_rules,
)
from simsp.model import ModelSpec
from simsp.parallel import ParallelSpec
from simsp.workload import TrainingSpec, Workload, validate

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_HARDWARE = "hardware/dgx-a100-80gb.yaml"


def read_text(path) -> str:
    """A file's text, bounded (simsp.textfile), or InputError naming it."""
    return textfile.read_text(path)


MAX_DEPTH = 64
"""Deepest nesting of lists and mappings read: a workload needs three levels; PyYAML's composer
recurses once per level, so a file of 50,000 `[` would otherwise end in a RecursionError."""
MAX_NODES = 1_000_000
"""Most values a document may expand to with its aliases counted each time they are used: an
alias bomb (each anchor a list of nine of the one before) is tiny on disk and 387 million values
to anything that walks it."""


class _Limit(yaml.YAMLError):
    """A document past MAX_DEPTH or MAX_NODES (the rule broken, as one line)."""


_FLOAT_1_2 = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
"""YAML 1.2 floats with an exponent and no dot (`1e6`, `3.12e2` is YAML 1.1 already), which
PyYAML's YAML 1.1 resolver leaves as strings."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads `1e6` as a number and bounds nesting depth and alias expansion."""

    yaml_implicit_resolvers = {
        k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def compose_node(self, parent, index):
        self._depth = getattr(self, "_depth", 0) + 1
        if self._depth > MAX_DEPTH:
            raise _Limit(f"nests deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_1_2, list("-+0123456789"))


def _expanded_size(node, memo: dict) -> int:
    """Values in node with every alias expanded (memoised by node, so linear in the file)."""
    if id(node) in memo:
        return memo[id(node)]
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[id(node)] = size
    if size > MAX_NODES:
        raise _Limit(f"expands to more than {MAX_NODES:,} values (an alias bomb?)")
    return size


def parse_yaml(text: str):
    """YAML text -> Python data through the bounded loader (raises yaml.YAMLError, ValueError)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, {})
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml(path) -> dict:
    """Load a YAML mapping, or raise InputError for a missing, unreadable or non-mapping file."""
    text = read_text(path)
    try:
        data = parse_yaml(text)
    except _Limit as e:
        raise InputError(path, "file", str(path), str(e)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise InputError(path, "file", str(path), f"is not valid YAML{where}") from None
    except (ValueError, OverflowError) as e:  # e.g. an integer of more than 4,300 digits
        raise InputError(
            path, "file", str(path), f"holds a value Python cannot read ({str(e)[:80]})"
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            path, "file", type(data).__name__, "must be a YAML mapping of keys to values"
        )
    return data


MAX_INT = 2**53
"""The largest integer a key takes: every count is used as a float somewhere, and past 2**53 a
float no longer holds it exactly (10**400 does not fit in one at all)."""
MAX_STR = 4096
"""The longest string a key takes (a name, a per-stage list); longer is a pasted file."""


def _check_number(file, key, value, kind, allow_zero):
    """An int (or, for float keys, an int or float) that is finite, in range and signed right.

    A whole float is an int (`global_batch: 1e6` reads as 1000000.0)."""
    if kind is int and isinstance(value, float) and value.is_integer() and abs(value) <= MAX_INT:
        value = int(value)
    ok = isinstance(value, int if kind is int else (int, float)) and not isinstance(value, bool)
    if not ok:
        raise InputError(file, key, value, f"must be {'an integer' if kind is int else 'a number'}")
    if kind is int and abs(value) > MAX_INT:
        raise InputError(file, key, value, f"must be at most 2**53 ({MAX_INT:,})")
    if kind is float and (
        abs(value) > MAX_INT if isinstance(value, int) else not math.isfinite(value)
    ):
        raise InputError(file, key, value, "must be a finite number")
    if value < 0 or (value == 0 and not allow_zero):
        raise InputError(
            file, key, value, "must be positive" if not allow_zero else "must not be negative"
        )
    return kind(value)


def _check_scalar(file, key, value, kind, allow_zero):
    """Type and sign check of one scalar field."""
    if kind is bool:
        if not isinstance(value, bool):
            raise InputError(file, key, value, "must be true or false")
        return value
    if kind is str:
        if not isinstance(value, str) or not value:
            raise InputError(file, key, value, "must be a non-empty string")
        if len(value) > MAX_STR:
            raise InputError(file, key, value, f"must be at most {MAX_STR} characters")
        return value
    return _check_number(file, key, value, kind, allow_zero)


def _check_steps(file, key, value):
    """A mapping or list of (threshold, value) pairs -> ascending tuple of float pairs."""
    pairs = value.items() if isinstance(value, dict) else value
    try:
        steps = tuple(sorted((float(a), float(b)) for a, b in pairs))
    except (TypeError, ValueError, OverflowError):
        raise InputError(
            file, key, value, "must map numbers to numbers, e.g. {0: 0.3, 1e6: 0.6}"
        ) from None
    finite = all(math.isfinite(a) and math.isfinite(b) for a, b in steps)
    if not steps or not finite or any(a < 0 or b <= 0 for a, b in steps):
        raise InputError(
            file,
            key,
            value,
            "must be a non-empty map of finite non-negative thresholds to positive values",
        )
    return steps


check_scalar = _check_scalar
"""The scalar rules, for other readers of user values (the sweep grid)."""


def _allow_zero(f: dataclasses.Field) -> bool:
    """A field whose default is 0 (0 meaning 'not given'), or one marked so, may be 0."""
    return f.default == 0 or f.metadata.get("allow_zero", False)


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
        allow_zero = _allow_zero(f)
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
    text = read_text(path)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InputError(path, "file", str(path), f"is not valid JSON ({str(e)[:80]})") from None
    except RecursionError:
        raise InputError(path, "file", str(path), "nests too deep to read") from None
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
    for section in ("training", "parallel"):
        given = data.get(section)
        if given is not None and not isinstance(given, dict):
            raise InputError(path, section, given, "must be a mapping of keys to values")
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


HARDWARE_SECTIONS = {
    "gpu": GpuSpec,
    "node": NodeSpec,
    "network": NetworkSpec,
    "memory_bound": MemoryBoundSpec,
    "calibration": CalibrationSpec,
}
"""The sections of a hardware file that `--set SECTION.KEY=VALUE` reaches."""
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def numeric_keys(section: str) -> dict[str, dataclasses.Field]:
    """The int and float fields of one hardware section, by name."""
    cls = HARDWARE_SECTIONS[section]
    hints = typing.get_type_hints(cls)
    return {f.name: f for f in dataclasses.fields(cls) if hints[f.name] in (int, float)}


def parse_set(text: str) -> tuple[str, int | float]:
    """One `--set SECTION.KEY=VALUE`: a numeric key of a hardware section and a number for it,
    checked by the rules a file's value meets (type, sign), or InputError naming `--set`."""
    key, sep, value = (part.strip() for part in str(text).partition("="))
    if not sep or not key:
        raise InputError("--set", key or "SECTION.KEY", value, "must be SECTION.KEY=VALUE")
    section, _, name = key.partition(".")
    if section not in HARDWARE_SECTIONS:
        raise InputError(
            "--set", key, value, f"unknown hardware section; known: {', '.join(HARDWARE_SECTIONS)}"
        )
    fields = {f.name for f in dataclasses.fields(HARDWARE_SECTIONS[section])}
    numeric = numeric_keys(section)
    if name not in numeric:
        rule = "is not a numeric key (names, paths and curves are set in the file)"
        if name not in fields:
            rule = "unknown key"
        raise InputError("--set", key, value, f"{rule}; numeric keys: {', '.join(numeric)}")
    if not _NUMBER.fullmatch(value):
        raise InputError("--set", key, value, "must be a number")
    digits = value.lstrip("+-")
    number = int(value) if digits.isdigit() and len(digits) <= 20 else float(value)
    f = numeric[name]
    kind = typing.get_type_hints(HARDWARE_SECTIONS[section])[name]
    return key, _check_scalar("--set", key, number, kind, _allow_zero(f))


def _own_link_rates(hw: HardwareSpec) -> HardwareSpec:
    """The rates the collective tables were measured at, where the file leaves them 0: its own
    link rates (taken before any `--set`, so that a `--set` moves the link, not the
    measurement; simsp.cost.network)."""
    cal = hw.calibration
    return dataclasses.replace(
        hw,
        calibration=dataclasses.replace(
            cal,
            measured_nvlink_gbps=cal.measured_nvlink_gbps or hw.node.nvlink_gbps,
            measured_nic_gbps=cal.measured_nic_gbps or hw.network.nic_gbps,
            measured_nics_per_node=cal.measured_nics_per_node or hw.network.nics_per_node,
        ),
    )


def apply_sets(hw: HardwareSpec, sets: dict) -> HardwareSpec:
    """hw with each SECTION.KEY of `sets` (parsed by parse_set) replaced, and recorded."""
    for key, value in sets.items():
        section, name = key.split(".")
        hw = dataclasses.replace(
            hw, **{section: dataclasses.replace(getattr(hw, section), **{name: value})}
        )
    return dataclasses.replace(hw, overrides=tuple(sets.items())) if sets else hw


def load_hardware(path=None, sets=()) -> HardwareSpec:
    """Read a hardware YAML; calibration paths become absolute. A bare name (`dgx-h100`) is a
    file of the hardware library (hardware/NAME.yaml). `sets` are `--set SECTION.KEY=VALUE`
    strings, laid over the file's values before the file's rules are checked (a later one for
    the same key wins)."""
    given = dict(parse_set(text) for text in sets)
    path = library_path(path) if path else default_hardware_path()
    data = read_yaml(path)
    _unknown_top(data, path, ("name", "gpu", "node", "network", "memory_bound", "calibration"))
    given_cal = data.get("calibration")
    cal = build(CalibrationSpec, {} if given_cal is None else given_cal, path, "calibration.")
    folder = path.resolve().parent
    cal = dataclasses.replace(
        cal,
        gemm=_resolve_paths(path, "calibration.gemm", [cal.gemm], folder)[0] if cal.gemm else "",
        **{
            key: _resolve_paths(path, f"calibration.{key}", [getattr(cal, key)], folder)[0]
            for key in ("gemm_model", "gemm_fp8", "gemm_model_fp8")
            if getattr(cal, key)
        },
        flash_attention=(
            _resolve_paths(path, "calibration.flash_attention", [cal.flash_attention], folder)[0]
            if cal.flash_attention
            else ""
        ),
        nvlink=_resolve_paths(path, "calibration.nvlink", cal.nvlink, folder),
        infiniband=_resolve_paths(path, "calibration.infiniband", cal.infiniband, folder),
    )
    hw = HardwareSpec(
        name=_check_scalar(path, "name", data.get("name", path.stem), str, False),
        gpu=_section(data, path, "gpu", GpuSpec),
        node=_section(data, path, "node", NodeSpec),
        network=_section(data, path, "network", NetworkSpec),
        memory_bound=_section(data, path, "memory_bound", MemoryBoundSpec),
        calibration=cal,
        source=str(path),
    )
    hw = apply_sets(_own_link_rates(hw), given)
    for key, value, holds, rule in hardware_rules(hw):
        if not holds:
            raise InputError("--set" if key in given else path, key, value, rule)
    check_tables(hw)
    return hw


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
