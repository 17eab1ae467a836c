"""`--set SECTION.KEY=VALUE`: a numeric key of a hardware file replaced for a what-if run, checked
by the rules the file's own value meets, and recorded in the spec (`HardwareSpec.overrides`)."""

import dataclasses
import re
import typing

from simsp.errors import InputError
from simsp.spec.fields import check_scalar, may_be_zero
from simsp.spec.hardware import (
    CalibrationSpec,
    GpuSpec,
    HardwareSpec,
    MemoryBoundSpec,
    NetworkSpec,
    NodeSpec,
)

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
    return key, check_scalar("--set", key, number, kind, may_be_zero(f))


def own_link_rates(hw: HardwareSpec) -> HardwareSpec:
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
