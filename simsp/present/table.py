"""Tables for the terminal and for logs, laid out by rich (one library, no hand-set widths).

A table is its columns (a head, numbers right and words left, which may fold) and rows of
already formatted cells. On a terminal it fits the terminal's width: words that may fold do,
numbers never, and a table that cannot fit whole is laid out unfolded for the terminal to wrap.
Written to a file or a pipe, nothing folds, so a log reads the same however wide the terminal
that made it. Cells are text, never rich markup: a name from a user's file prints as written.
"""

import io
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

from simsp.errors import printable

UNFOLDED = 10_000
"""The width a table is laid out in when the output is not a terminal: wide enough that no
cell folds."""


@dataclass(frozen=True)
class Column:
    """One column: its head, how its cells align, and whether they may fold to fit."""

    head: str
    right: bool = True
    """Numbers align right; words (names, settings) left."""
    fold: bool = False
    """A long word cell (a machine's label, a description) may wrap onto a second line."""


def words(head: str, fold: bool = False) -> Column:
    """A column of names or settings, aligned left."""
    return Column(head, right=False, fold=fold)


def width_of_output() -> int:
    """The terminal's columns where standard output is one, else UNFOLDED."""
    return shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else UNFOLDED


def render(
    columns: Sequence[Column],
    rows: Iterable[Sequence[str]],
    width: int | None = None,
    indent: int = 0,
) -> str:
    """The table as plain text (no colour, no trailing blanks): one head line, a line a row,
    a space between columns, each line `indent` spaces in; laid out in `width` columns
    (default: width_of_output). A number, and a word that may not fold, is never cut: where
    even the columns' least widths do not fit, the table is laid out unfolded and the terminal
    wraps its lines. Control characters in a cell are written as their escapes."""
    rows = [[printable(str(cell)) for cell in row] for row in rows]
    least = [
        max([len(c.head)] + ([] if c.fold else [len(r[i]) for r in rows]))
        for i, c in enumerate(columns)
    ]
    room = (width or width_of_output()) - indent
    if sum(least) + len(columns) - 1 > room:
        room = UNFOLDED
    table = Table(box=None, pad_edge=False, padding=(0, 1, 0, 0), header_style="", expand=False)
    for c, w in zip(columns, least, strict=True):
        table.add_column(
            Text(c.head),
            justify="right" if c.right else "left",
            no_wrap=not c.fold,
            overflow="fold",
            min_width=w,
        )
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    out = io.StringIO()
    console = Console(
        file=out,
        width=room,
        color_system=None,
        force_terminal=False,
        highlight=False,
        emoji=False,
        soft_wrap=False,
    )
    console.print(table)
    pad = " " * indent
    return "\n".join((pad + line).rstrip() for line in out.getvalue().splitlines())
