"""Where a sweep's rows go: a CSV appended row by row, or Parquet journaled to a CSV.

Rows are written whole and flushed one by one; on a restart the rows already in the output are
read back (a trailing partial line, left by a killed write, is cut off the file first), so a
killed sweep resumes without losing or duplicating a row.
"""

import csv
import errno
import io
import os
from pathlib import Path

from simsp.errors import InputError
from simsp.sweep.rows import COLUMNS, fmt, typed
from simsp.textfile import csv_safe, decode, read_bytes


def _csv_line(row: dict) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([csv_safe(row[c]) for c in COLUMNS])
    return buf.getvalue()


HEADER = ",".join(COLUMNS)


def _foreign(path: Path, first: str) -> InputError:
    return InputError(
        path,
        "columns",
        first,
        "an existing file that is not this sweep's output (other columns); it is left as it "
        "is: choose another --out or remove it",
    )


def _own_text(path: Path) -> str:
    """An existing output's text, refused (and left untouched) unless its first line is
    simsp's header or, for a write killed in the header, the start of it."""
    data = read_bytes(path)
    first = data.split(b"\n", 1)[0]
    complete = b"\n" in data
    try:
        first_text = first.decode()
    except UnicodeDecodeError:
        raise _foreign(path, repr(first[:40])) from None
    ours = first_text == HEADER if complete else HEADER.startswith(first_text)
    if not ours:
        raise _foreign(path, first_text)
    return decode(path, data)


def read_csv_rows(path: Path) -> list[dict]:
    """Rows of an existing output; a trailing partial line (a killed write) is cut off the file.
    A file that is not a sweep output is refused before anything in it is changed."""
    if not path.exists():
        return []
    text = _own_text(path)
    if text and not text.endswith("\n"):
        keep = text[: text.rfind("\n") + 1]
        with open(path, "r+b") as f:
            f.truncate(len(keep.encode()))
        text = keep
    lines = text.splitlines()
    if not lines:
        return []
    return [
        dict(zip(COLUMNS, r, strict=True)) for r in csv.reader(lines[1:]) if len(r) == len(COLUMNS)
    ]


class CsvSink:
    """Appends whole rows to a CSV, flushing each, with the header on a new (empty) file. The file
    is locked while the sink is open, so a second sweep on the same output stops at once instead
    of writing every row twice; a row that cannot be written whole (a full disk) is cut back to
    the last whole row and reported as one line."""

    def __init__(self, path: Path):
        self.path = path
        try:
            self.f = open(path, "ab", buffering=0)  # each row reaches the file whole, or not
        except OSError as e:
            raise InputError(
                path, "--out", str(path), f"cannot be written ({e.strerror or e})"
            ) from None
        try:
            import fcntl

            fcntl.flock(self.f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except ImportError:  # not on POSIX: no lock
            pass
        except OSError:
            self.f.close()
            raise InputError(
                path, "--out", str(path), "is being written by another sweep; wait for it"
            ) from None
        if os.fstat(self.f.fileno()).st_size == 0:  # decided under the lock
            self._append(",".join(COLUMNS) + "\n")

    def _append(self, text: str) -> None:
        end, data = self.f.tell(), text.encode()
        try:
            if self.f.write(data) != len(data):
                raise OSError(errno.ENOSPC, "a row was written in part")
        except OSError as e:
            try:
                self.f.truncate(end)  # no half row left behind
            except OSError:
                pass
            raise InputError(
                self.path, "--out", str(self.path), f"cannot be written ({e.strerror or e})"
            ) from None

    def write(self, row: dict) -> None:
        self._append(_csv_line(row))

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


def _parquet_rows(path: Path) -> list[dict]:
    """Rows of an existing Parquet output; one that is not Parquet, or not this sweep's, is
    refused and left as it is."""
    pa = _pyarrow()
    try:
        table = pa.parquet.read_table(path)
    except (pa.ArrowException, OSError) as e:
        raise InputError(
            path, "--out", str(path), f"is not a Parquet file ({str(e)[:60]})"
        ) from None
    if tuple(table.column_names) != COLUMNS:
        raise _foreign(path, ",".join(table.column_names))
    return [{c: fmt(r[c]) for c in COLUMNS} for r in table.to_pylist()]


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
        self.found: int | None = -1
        """The size of the file rows go to when this run opened it (None: not there; -1: not
        opened yet), so that `abandon` leaves it as it was."""
        if self.path:
            from simsp.textfile import check_output

            # before any configuration is evaluated; rows there are read (and refused when
            # they are not a sweep's) by `existing`
            check_output(self.path, appends=True)
            if self.journal.exists():
                _own_text(self.journal)

    def existing(self) -> list[dict]:
        """Rows already written by an earlier run of the same output, read under the output's
        lock (taken here and held until close): a second sweep on the same output either stops
        at once or, started after the first ended, sees every row the first wrote. A journal
        this call creates is removed again if the rows cannot be read."""
        if not self.path:
            return []
        rows = _parquet_rows(self.path) if self.parquet and self.path.exists() else []
        self.found = self.journal.stat().st_size if self.journal.exists() else None
        if self.sink is None:
            self.sink = CsvSink(self.journal)
        try:
            return rows + read_csv_rows(self.journal)
        except BaseException:
            self.abandon()
            raise

    def abandon(self) -> None:
        """Give the output up before this run wrote a row: its lock released, a file it created
        removed, an empty one it found emptied again (the sink wrote the header into both)."""
        if self.sink:
            self.sink.close()
            self.sink = None
        if self.found is None:
            self.journal.unlink(missing_ok=True)
        elif self.found == 0:
            self.journal.write_bytes(b"")
        self.found = -1  # done: nothing more to undo

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
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            pa.parquet.write_table(table, tmp)  # whole, then renamed into place
            os.replace(tmp, self.path)
            self.journal.unlink(missing_ok=True)
