"""A frozen spec built from a user's mapping (a workload or hardware file's section, a `--set`,
a sweep grid cell): unknown and missing keys refused, and each value's type, sign and range
checked, the error naming the file, the key, the value and the rule."""

import dataclasses
import math
import typing

from simsp.errors import NOT_SHOWN, InputError, unknown_key_rule

MAX_INT = 2**53
"""The largest integer a key takes: every count is used as a float somewhere, and past 2**53 a
float no longer holds it exactly (10**400 does not fit in one at all)."""
MAX_STR = 4096
"""The longest string a key takes (a name, a per-stage list); longer is a pasted file."""


def check_number(file, key, value, kind, allow_zero):
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


def check_scalar(file, key, value, kind, allow_zero):
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
    return check_number(file, key, value, kind, allow_zero)


def check_steps(file, key, value):
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


def may_be_zero(f: dataclasses.Field) -> bool:
    """A field whose default is 0 (0 meaning 'not given'), or one marked so, may be 0."""
    return f.default == 0 or f.metadata.get("allow_zero", False)


def build(cls, data, file, prefix=""):
    """Build dataclass cls from a mapping, checking unknown/missing keys, types and signs."""
    if not isinstance(data, dict):
        raise InputError(file, prefix.rstrip(".") or "file", data, "must be a mapping")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key in data:
        if key not in fields:
            raise InputError(file, prefix + str(key), NOT_SHOWN, unknown_key_rule(key, fields))
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
        allow_zero = may_be_zero(f)
        value = data[name]
        if f.metadata.get("number_list") and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # a one-entry list YAML read as a number
        if kind in (int, float, bool, str):
            values[name] = check_scalar(file, key, value, kind, allow_zero=allow_zero)
        elif kind == bool | str:
            text = (
                {"true": True, "false": False}.get(value, value)
                if isinstance(value, str)
                else value
            )
            values[name] = (
                text if isinstance(text, bool) else check_scalar(file, key, text, str, False)
            )
        elif kind == tuple[str, ...]:
            items = data[name] if isinstance(data[name], list) else [data[name]]
            values[name] = tuple(check_scalar(file, key, v, str, False) for v in items)
        else:
            values[name] = check_steps(file, key, data[name])
    return cls(**values)


def required_section(data, file, name, cls):
    """One required top-level section built into cls."""
    if name not in data:
        raise InputError(file, name, None, "is required")
    return build(cls, data[name], file, prefix=name + ".")


def unknown_top_keys(data, file, known):
    """Every top-level key of a file is one of `known`."""
    for key in data:
        if key not in known:
            raise InputError(file, key, NOT_SHOWN, unknown_key_rule(key, known))
