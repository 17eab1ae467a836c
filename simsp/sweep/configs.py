"""A sweep spec's valid, distinct configurations, enumerated one by one.

dp = gpus / (tp x cp x pp); settings the grid leaves out keep the workload's values; an inherited
interleaved schedule falls back to 1F1B where interleaving is not valid, a schedule listed in the
grid is taken as asked (its invalid combinations are skipped); configurations that mean the same
run (SP with tp = 1, interleaved with one chunk) are kept once. The screening tier enumerates the
same configurations as columns (sweep/grid_columns.py).
"""

import dataclasses
import itertools
from dataclasses import dataclass
from functools import lru_cache

from simsp.errors import InputError, short_repr
from simsp.sim.budget import DEFAULT_MAX_ACTIONS, work
from simsp.sim.schedule import REGISTRY
from simsp.spec.hardware import HardwareSpec
from simsp.spec.knobs import parse_bias
from simsp.spec.rules import validate
from simsp.spec.workload import Workload
from simsp.sweep.rows import fmt
from simsp.sweep.spec import GRID_KEYS, SweepSpec


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
    too_big: int = 0
    """Skipped: more pipeline actions than --max-actions."""
    configs: int = 0
    reason: str = ""
    """Why the first skipped configuration was skipped (for a grid with none valid)."""


def config_key(w: Workload, hw: HardwareSpec) -> tuple[str, ...]:
    """KEY_COLUMNS values of a workload on a machine: its names, GPUs and every knob."""
    return (
        (fmt(w.name), fmt(hw.label), fmt(w.parallel.gpus))  # a --set run is another machine
        + _formatted(w.parallel)
        + _formatted(w.training)
        + _formatted(w.model)
    )


@lru_cache(maxsize=4096)
def _formatted(section) -> tuple[str, ...]:
    """A section's knob values as written, in KEY_KNOBS order (cached: sweeps repeat sections)."""
    return tuple(fmt(getattr(section, f.name)) for f in dataclasses.fields(section))


def sections_of(values: dict) -> dict[str, dict]:
    """Grid values as {section: {field: value}} (model, parallel, training)."""
    sections = {"model": {}, "parallel": {}, "training": {}}
    for key, value in values.items():
        section, field, _ = GRID_KEYS[key]
        sections[section][field] = parse_bias(value) if field == "bias" else value
    return sections


def with_values(base: Workload, values: dict) -> Workload:
    """The workload with grid values set as they are (nothing derived, nothing checked)."""
    sections = sections_of(values)
    changed = {
        name: dataclasses.replace(getattr(base, name), **fields)
        for name, fields in sections.items()
        if fields
    }
    return dataclasses.replace(base, **changed) if changed else base


def _variant(base: Workload, values: dict, gpus: int) -> Workload | None:
    """The workload with grid values applied and dp = gpus / (tp cp pp); None if tp cp pp does
    not divide."""
    sections = sections_of(values)
    given = sections["parallel"]

    def get(field: str):
        return given.get(field, getattr(base.parallel, field))

    model_parallel = get("tp") * get("cp") * get("pp")
    if gpus % model_parallel:
        return None
    changes = {
        **given,
        "dp": gpus // model_parallel,
        "sequence_parallel": get("sequence_parallel") and get("tp") > 1,
    }
    schedule = get("schedule")
    if schedule in REGISTRY and REGISTRY[schedule].chunks is not None:
        changes["virtual_stages"] = 1  # the schedule fixes its chunks
    par = dataclasses.replace(base.parallel, **changes)  # one replace: 27 fields each time
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


def _broken(w: Workload, source: str) -> str | None:
    """The rule a configuration breaks, as its one-line message; None when valid."""
    try:
        validate(w, source)
    except InputError as e:
        return f"{e.key}={short_repr(e.value)}: {e.rule}"
    return None


def _first(counts: "Counts", reason: str | None) -> None:
    if reason and not counts.reason:
        counts.reason = reason


def admit(
    base: Workload,
    values: dict,
    gpus: int,
    hw: HardwareSpec,
    source: str,
    max_actions: int = DEFAULT_MAX_ACTIONS,
    explicit_schedule: bool = True,
) -> tuple[str, "Config | str"]:
    """One grid point judged: ("ok", its Config), or (why not: "invalid", "too_big", or
    "fallback-invalid", the reason), or ("fallback", Config) for an inherited interleaved
    schedule run as 1F1B."""
    w = _variant(base, values, gpus)
    if w is None:
        return "invalid", f"tp x cp x pp does not divide the {gpus} GPUs ({values})"
    broken, outcome = _broken(w, source), "ok"
    if broken and not explicit_schedule and w.parallel.schedule == "interleaved":
        w = _as_1f1b(w)
        broken = _broken(w, source)
        outcome = "fallback"
    if broken:
        return "invalid", broken
    w = _normalised(w)
    size = work(w)
    if size.actions > max_actions:
        return "too_big", f"{describe_config(w)}: {size.describe()}, over --max-actions"
    return outcome, Config(config_key(w, hw), w, hw)


def enumerate_configs(
    spec: SweepSpec, max_actions: int = DEFAULT_MAX_ACTIONS
) -> tuple[list[Config], Counts]:
    """Every valid, distinct configuration of the spec, in grid order, and what was skipped
    (configurations over max_actions are skipped as too big to simulate)."""
    counts, seen, out = Counts(), set(), []
    keys = [k for k, _ in spec.grid]
    explicit_schedule = "schedule" in keys
    for hw in spec.hardware:
        for combo in itertools.product(*(v for _, v in spec.grid)):
            counts.grid_points += 1
            values = dict(zip(keys, combo, strict=True))
            outcome, found = admit(
                spec.workload, values, spec.gpus, hw, spec.source, max_actions, explicit_schedule
            )
            if isinstance(found, str):
                counts.invalid += outcome == "invalid"
                counts.too_big += outcome == "too_big"
                _first(counts, found)
                continue
            counts.fallback += outcome == "fallback"
            if found.key in seen:
                counts.duplicates += 1
                continue
            seen.add(found.key)
            out.append(found)
    counts.configs = len(out)
    return out, counts


def describe_config(w: Workload) -> str:
    """A configuration's parallel settings in a few words (for why it was skipped)."""
    p = w.parallel
    return f"tp={p.tp} pp={p.pp} dp={p.dp} b={w.training.micro_batch} B={w.training.global_batch}"


def check_some_valid(spec: SweepSpec, counts: Counts) -> None:
    """InputError saying why when no configuration of the grid is valid."""
    if counts.configs == 0:
        raise InputError(
            spec.source,
            "grid",
            f"{counts.grid_points} grid points",
            f"no valid configuration ({counts.invalid} invalid, {counts.too_big} too big); "
            f"the first: {counts.reason or 'the grid is empty'}",
        )
