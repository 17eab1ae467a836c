"""Every setting a user can turn, defined once: the fields of the workload's spec dataclasses.

The CLI flags (cli/arguments.py), the sweep grid keys (sweep/spec.py) and the sweep's CSV/JSON
columns (sweep/rows.py) are all generated from `KNOBS`, so a new field of `ModelSpec`,
`TrainingSpec` or `ParallelSpec` is a new flag, grid key and column without an edit elsewhere
(a test enumerates the fields against all three).
"""

import dataclasses
import re
import typing
from dataclasses import dataclass

from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.workload import TrainingSpec

SECTIONS = (("model", ModelSpec), ("training", TrainingSpec), ("parallel", ParallelSpec))
"""The workload sections whose fields are knobs, in --help order."""
CHOICES = {
    f.name: f.metadata["choices"]
    for _, cls in SECTIONS
    for f in dataclasses.fields(cls)
    if "choices" in f.metadata
}
"""Knobs whose value is one of a few names (as typed on the command line or in a grid): the
`choices` in their field's metadata."""
SHORT_NAMES = {"sequence_parallel": "sp"}
"""Knobs whose flag and column the contract spells shorter (`simsp run --sp | --no-sp`)."""


@dataclass(frozen=True)
class Knob:
    """One field of a workload section."""

    section: str
    name: str
    kind: type
    """int, float, bool or str (a `bool | str` field such as `bias` is a str knob)."""
    doc: str
    """First sentence of the field's docstring."""

    @property
    def short(self) -> str:
        """Its name as a flag stem, grid key alias and column."""
        return SHORT_NAMES.get(self.name, self.name)

    @property
    def flag(self) -> str:
        """Its command-line flag: `--kv-heads`, `--sp`."""
        return "--" + self.short.replace("_", "-")

    @property
    def choices(self) -> tuple | None:
        return CHOICES.get(self.name)


_SENTENCE_END = re.compile(r"(?<!\bal)(?<!\be\.g)(?<!\bi\.e)\.\s+(?=[A-Z(])")
"""Where a docstring's first sentence ends: a full stop before a capital, not after "et al"."""


def field_docs(cls) -> dict[str, str]:
    """The docstring under each field of a dataclass (read from its source), first sentence:
    what spec/knob_docs.py holds, written by `write_knob_docs` (parsing the source at every
    start cost simsp --help a tenth of its time)."""
    import ast
    import inspect

    try:
        body = ast.parse(inspect.getsource(cls)).body[0].body
    except (OSError, TypeError):
        return {}
    docs = {}
    for node, nxt in zip(body, body[1:], strict=False):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
        ):
            text = " ".join(str(nxt.value.value).split())
            docs[node.target.id] = _SENTENCE_END.split(text)[0].rstrip(".")
    return docs


def _kind(hint) -> type:
    return hint if hint in (int, float, bool) else str


def write_knob_docs(path=None) -> str:
    """spec/knob_docs.py's text from the spec classes' source (written to path if given)."""
    lines = [
        '"""Each knob\'s help text: the first sentence of its field\'s docstring, written by',
        "`python -c 'from simsp.spec.knobs import write_knob_docs; write_knob_docs(\"simsp/spec/",
        "knob_docs.py\")'` (tests/test_knobs.py fails when it is stale); read at import instead of",
        'parsing the spec classes\' source."""',
        "",
        "DOCS = {",
    ]
    for section, cls in SECTIONS:
        for name, doc in field_docs(cls).items():
            lines.append(f"    ({section!r}, {name!r}): {doc!r},")
    text = "\n".join([*lines, "}", ""])
    if path:
        from pathlib import Path

        Path(path).write_text(text)
    return text


def _knobs() -> tuple[Knob, ...]:
    from simsp.spec.knob_docs import DOCS

    out = []
    for section, cls in SECTIONS:
        hints = typing.get_type_hints(cls)
        docs = {name: doc for (s, name), doc in DOCS.items() if s == section}
        out += [
            Knob(section, f.name, _kind(hints[f.name]), docs.get(f.name, ""))
            for f in dataclasses.fields(cls)
        ]
    names = [k.name for k in out]
    assert len(set(names)) == len(names), "knob names must be unique across the sections"
    return tuple(out)


KNOBS = _knobs()
BY_NAME = {k.name: k for k in KNOBS}


def parse_bias(text):
    """A typed bias knob (true | false | qkv) as the ModelSpec value."""
    return {"true": True, "false": False}.get(text, text) if isinstance(text, str) else text


def values_of(w) -> dict:
    """Every knob's value in a workload, by knob name."""
    return {k.name: getattr(getattr(w, k.section), k.name) for k in KNOBS}
