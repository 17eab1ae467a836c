"""Where a sweep's rows go: a CSV appended row by row, or Parquet journaled to a CSV.

Rows are written whole and flushed one by one; on a restart the rows already in the output are
read back (a trailing partial line, left by a killed write, is cut off the file first), so a
killed sweep resumes without losing or duplicating a row.
"""

import csv
import io
from pathlib import Path

from simsp.errors import InputError

from .rows import COLUMNS, fmt, typed


def _csv_line(row: dict) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([row[c] for c in COLUMNS])
    return buf.getvalue()


def read_csv_rows(path: Path) -> list[dict]:
    """Rows of an existing output; a trailing partial line (a killed write) is cut off the file."""
    if not path.exists():
        return []
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        data = data[: data.rfind(b"\n") + 1]
        with open(path, "r+b") as f:
            f.truncate(len(data))
    lines = data.decode().splitlines()
    if not lines:
        return []
    header = next(csv.reader([lines[0]]))
    if tuple(header) != COLUMNS:
        raise InputError(
            path,
            "columns",
            ",".join(header)[:80] + "...",
            "an existing output with other columns; choose another --out or remove it",
        )
    return [
        dict(zip(COLUMNS, r, strict=True)) for r in csv.reader(lines[1:]) if len(r) == len(COLUMNS)
    ]


class CsvSink:
    """Appends whole rows to a CSV, flushing each, with the header on a new file."""

    def __init__(self, path: Path):
        self.path = path
        new = not path.exists() or path.stat().st_size == 0
        try:
            self.f = open(path, "a", newline="")
        except OSError as e:
            raise InputError(
                path, "--out", str(path), f"cannot be written ({e.strerror or e})"
            ) from None
        if new:
            self.f.write(",".join(COLUMNS) + "\n")
            self.f.flush()

    def write(self, row: dict) -> None:
        self.f.write(_csv_line(row))
        self.f.flush()

    def close(self) -> None:
        self.f.close()


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise InputError(
            "--out", "out", ".parquet", "needs pyarrow: pip install pyarrow (or write .csv)"
        ) from None
    return pyarrow


class Output:
    """Where rows go: a CSV written row by row, or Parquet (journaled to a CSV beside it while
    running, written whole at the end); None keeps rows in memory only."""

    def __init__(self, path: str | None):
        self.path = Path(path) if path else None
        self.parquet = bool(path) and self.path.suffix == ".parquet"
        if self.path and not self.parquet and self.path.suffix != ".csv":
            raise InputError(path, "--out", path, "must end in .csv or .parquet")
        if self.parquet:
            _pyarrow()
        self.journal = (
            self.path.with_name(self.path.name + ".partial.csv") if self.parquet else self.path
        )
        self.sink = None

    def existing(self) -> list[dict]:
        """Rows already written by an earlier run of the same output."""
        if not self.path:
            return []
        rows = []
        if self.parquet and self.path.exists():
            pq = _pyarrow().parquet
            rows = [{c: fmt(r[c]) for c in COLUMNS} for r in pq.read_table(self.path).to_pylist()]
        return rows + read_csv_rows(self.journal)

    def write(self, row: dict) -> None:
        if self.path:
            if self.sink is None:
                self.sink = CsvSink(self.journal)
            self.sink.write(row)

    def close(self, rows: list[dict]) -> None:
        """Finish: Parquet gets every row and its journal is removed."""
        if self.sink:
            self.sink.close()
        if self.parquet and (self.journal.exists() or not self.path.exists()):
            pa = _pyarrow()
            table = pa.Table.from_pylist([typed(r) for r in rows])
            pa.parquet.write_table(table, self.path)
            self.journal.unlink(missing_ok=True)
