"""A user's measured runs: iteration times of their own cluster with the configurations that
gave them (RUNS.csv, read by `simsp calibrate --runs`).

Schema. A CSV file; lines starting with `#` are comments, blank lines are skipped, the first
other line is the header, and each line after it is one run (no line breaks inside a cell).

* `iteration_s` (required): the measured wall time of one training iteration, in seconds
  (a positive number; the mean over steady-state iterations, warm-up excluded);
* `name` (optional): the run's label in reports (default `row N`);
* `workload` (optional): a workload YAML, relative to the CSV file's folder (or absolute);
* any workload key by its name, as in a workload YAML's `model:`, `training:` and `parallel:`
  sections (`layers`, `hidden`, `heads`, `seq_len`, `vocab`, `global_batch`, `micro_batch`,
  `tp`, `pp`, `dp`, `sp` or `sequence_parallel`, `recompute`, `schedule`, `virtual_stages`,
  ...; simsp.spec.knobs lists them): with `workload`, a value overriding the YAML's, without it the
  configuration itself (then `layers`, `hidden`, `heads`, `seq_len`, `vocab`, `global_batch`
  and `micro_batch` are required, and the other keys take their defaults).

An empty cell means "not given". Numbers are written as in YAML (`8`, `0.1`, `1e-3`), switches
as `true` / `false`. Every malformed row is one InputError naming the file, the row (data rows
count from 1 after the header; the file's line number beside it), the column, the value and the
rule, before anything is fitted.

Example:

    name,workload,tp,pp,dp,micro_batch,iteration_s
    175b-a,../workloads/gpt3-175b.yaml,8,8,4,1,18.2
    175b-b,../workloads/gpt3-175b.yaml,8,16,2,1,19.7
"""

import csv
import dataclasses
from dataclasses import dataclass
from pathlib import Path

from simsp.errors import InputError, unquoted
from simsp.spec.knobs import BY_NAME, KNOBS, SHORT_NAMES, parse_bias
from simsp.spec.workload import Workload
from simsp.textfile import read_text

MEASURED = "iteration_s"
"""The measured seconds of one iteration."""
NAME, WORKLOAD = "name", "workload"
KNOB_COLUMNS = {**{k.name: k for k in KNOBS}, **{s: BY_NAME[n] for n, s in SHORT_NAMES.items()}}
"""Columns holding a workload key, by column name (the knob's name, or its short name: sp)."""
COLUMNS = (NAME, WORKLOAD, MEASURED, *KNOB_COLUMNS)
_TRUE, _FALSE = ("true", "yes", "on"), ("false", "no", "off")


@dataclass(frozen=True)
class MeasuredRun:
    """One row of a runs file: a configuration and its measured iteration time."""

    name: str
    row: int
    """Data row number (1 = the first row after the header)."""
    measured_s: float
    workload: Workload


@dataclass(frozen=True)
class _Row:
    """One data row's non-empty cells, with where it lies in the file."""

    row: int
    line: int
    cells: dict[str, str]

    def where(self, path) -> str:
        return f"{path} row {self.row} (line {self.line})"


MAX_LINE = 10_000
"""Longest line a runs file may hold: a row of every workload key is under 2,000 characters."""
MAX_RUNS = 10_000
"""Most runs a runs file may hold: a fit passes over every run about 200 times in closed form
(vTrain's 109 runs: 86 s, docs/calibration.md), so 10,000 runs already take hours and a million
would take months."""


def read_runs(path, allow_outside: bool = False) -> tuple[MeasuredRun, ...]:
    """Every run of a runs file, checked, in file order. A `workload` cell naming a file outside
    the CSV's folder tree (an absolute path elsewhere, or one that climbs out with ..) is
    refused unless `allow_outside` (`calibrate --allow-outside`): a runs file from someone else
    must not make simsp read files of the user's choosing."""
    header, rows = _split(path)
    if not rows:
        raise InputError(path, "rows", 0, "holds no run: a header and at least one row")
    folder = Path(path).resolve().parent
    read = _reader()
    return tuple(_run(path, folder, r, allow_outside, read) for r in rows)


def _reader():
    """A reader of workload YAMLs that parses each file once and hands out a copy each time:
    10,000 rows naming one file read in seconds, not the 40 s of parsing it 10,000 times."""
    import copy
    from functools import lru_cache

    from simsp.io.config import read_yaml

    parsed = lru_cache(maxsize=None)(read_yaml)
    return lambda path: copy.deepcopy(parsed(str(path)))


def _split(path) -> tuple[tuple[str, ...], list[_Row]]:
    """The header and the data rows (non-empty cells only), each row's cell count checked."""
    header: tuple[str, ...] | None = None
    rows: list[_Row] = []
    for line_no, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if len(line) > MAX_LINE:
            raise InputError(
                f"{path} line {line_no}", "line", len(line), f"is over {MAX_LINE:,} characters"
            )
        try:
            cells = [c.strip() for c in next(csv.reader([line]))]
        except csv.Error as e:
            raise InputError(f"{path} line {line_no}", "line", None, f"is not CSV ({e})") from None
        if header is None:
            header = _header(path, line_no, cells)
            continue
        row = _Row(len(rows) + 1, line_no, {})
        if len(cells) != len(header):
            raise InputError(
                row.where(path),
                "cells",
                len(cells),
                f"the header has {len(header)} columns ({', '.join(header)})",
            )
        rows.append(
            dataclasses.replace(row, cells={k: v for k, v in zip(header, cells, strict=True) if v})
        )
        if len(rows) > MAX_RUNS:
            raise InputError(path, "rows", f"over {MAX_RUNS:,}", f"at most {MAX_RUNS:,} runs")
    if header is None:
        raise InputError(path, "header", None, f"is missing: the file needs a {MEASURED} column")
    return header, rows


def _header(path, line_no: int, names: list[str]) -> tuple[str, ...]:
    """The header's column names, each known and given once, `iteration_s` among them."""
    where = f"{path} header (line {line_no})"
    seen: dict[str, str] = {}
    for name in names:
        if name not in COLUMNS:
            raise InputError(
                where,
                "column",
                name,
                f"unknown column; known: {NAME}, {WORKLOAD}, {MEASURED} and the workload keys "
                f"({', '.join(KNOB_COLUMNS)})",
            )
        field = KNOB_COLUMNS[name].name if name in KNOB_COLUMNS else name
        if field in seen:
            raise InputError(where, "column", name, f"given twice (also as {seen[field]!r})")
        seen[field] = name
    if MEASURED not in names:
        raise InputError(
            where, "column", MEASURED, "is missing: the measured seconds per iteration"
        )
    return tuple(names)


def _run(path, folder: Path, r: _Row, allow_outside: bool = False, read=None) -> MeasuredRun:
    where = r.where(path)
    measured = _measured_s(where, r.cells.get(MEASURED))
    sections: dict[str, dict] = {"model": {}, "training": {}, "parallel": {}}
    for column, text in r.cells.items():
        if column in KNOB_COLUMNS:
            knob = KNOB_COLUMNS[column]
            sections[knob.section][knob.name] = _value(where, column, text, knob)
    name = r.cells.get(NAME, f"row {r.row}")
    given = r.cells.get(WORKLOAD)
    w = (
        _from_file(where, folder, given, sections, r.cells, allow_outside, read)
        if given
        else _inline(where, name, sections, r.cells)
    )
    return MeasuredRun(name, r.row, measured, dataclasses.replace(w, name=name))


def _measured_s(where: str, text: str | None) -> float:
    """The measured iteration seconds: a finite positive number."""
    try:
        value = float(text) if text is not None else None
    except ValueError:
        value = None
    if value is None or not 0 < value < float("inf"):
        raise InputError(
            where, MEASURED, text, "must be a positive number of seconds (one iteration)"
        )
    return value


def _value(where: str, column: str, text: str, knob):
    """A cell as its knob's type; the range rules are the workload's own (spec.fields.build)."""
    if knob.name == "bias":
        return parse_bias(text)
    if knob.kind is bool:
        low = text.lower()
        if low not in _TRUE + _FALSE:
            raise InputError(where, column, text, "must be true or false")
        return low in _TRUE
    if knob.kind in (int, float):
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            raise InputError(
                where, column, text, f"must be {'an integer' if knob.kind is int else 'a number'}"
            ) from None
    return text


def _column(key, cells: dict) -> str | None:
    """The column of the row an error's key (`parallel.tp`, `sequence_parallel`) came from."""
    field = str(key).rsplit(".", 1)[-1]
    return next(
        (c for c in cells if c in KNOB_COLUMNS and KNOB_COLUMNS[c].name == field),
        field if field in KNOB_COLUMNS else None,
    )


def _from_file(
    where: str,
    folder: Path,
    given: str,
    sections: dict,
    cells: dict,
    allow_outside: bool = False,
    read=None,
) -> Workload:
    """The row's workload YAML with the row's keys over its own."""
    from simsp.io.config import load_workload

    path = Path(given) if Path(given).is_absolute() else folder / given
    from simsp.io.config import inside_trees

    if not allow_outside and path.exists() and not inside_trees(path, folder):
        raise InputError(
            where,
            WORKLOAD,
            given,
            f"is outside the runs file's folder {folder} and simsp's own workloads; pass "
            "--allow-outside to read it",
        )
    if not path.is_file():
        raise InputError(where, WORKLOAD, given, f"no such workload file ({path})")
    try:
        return load_workload(path, {k: v for k, v in sections.items() if v}, read)
    except InputError as e:
        column = _column(e.key, cells)
        if column in cells:
            raise InputError(where, column, e.value, e.rule) from None
        raise InputError(where, WORKLOAD, given, f"{unquoted(e)}") from None


def _inline(where: str, name: str, sections: dict, cells: dict) -> Workload:
    """A workload built from the row's keys alone, checked as a workload YAML's would be."""
    from simsp.spec.fields import build
    from simsp.spec.model import ModelSpec
    from simsp.spec.parallel import ParallelSpec
    from simsp.spec.rules import validate
    from simsp.spec.workload import TrainingSpec

    try:
        w = Workload(
            name,
            build(ModelSpec, sections["model"], where, "model."),
            build(TrainingSpec, sections["training"], where, "training."),
            build(ParallelSpec, sections["parallel"], where, "parallel."),
        )
        return validate(w, where)
    except InputError as e:
        column = _column(e.key, cells) or str(e.key)
        rule = e.rule if column in cells else f"{e.rule} (or give a {WORKLOAD} column)"
        raise InputError(where, column, e.value, rule) from None
