"""A user's files, read bounded and written whole: every input file (workload, hardware, sweep
spec, calibration table, nccl-tests log, config.json) comes through `read_text`, every output
through `write_text` / `write_bytes`, each checked first by `check_output`.

A path may name anything: `/dev/zero` reads without end and a FIFO blocks until a writer comes,
so only regular files are read; a file past `MAX_BYTES` would be parsed into many times its
size in memory, so it is refused before it is read; bytes that are not UTF-8 text are named
(where and which) instead of surfacing as a codec traceback.
"""

import os
import shutil
import stat
from pathlib import Path

from simsp.errors import InputError

MAX_BYTES = 32 << 20
"""The largest input file read: a hundred times the largest calibration table shipped."""


def _regular_size(path: Path) -> int:
    """The size of a regular file, or InputError saying why path is not one."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise InputError(path, "file", str(path), f"cannot be read ({e.strerror or e})") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(path, "file", str(path), "is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            path, "file", str(path), "is not a regular file (a device, FIFO or socket)"
        )
    return st.st_size


def _too_big(path: Path, size: int) -> InputError:
    return InputError(
        path,
        "file",
        str(path),
        f"is {size / 2**20:.0f} MiB; inputs are limited to {MAX_BYTES >> 20} MiB",
    )


def read_bytes(path, limit: int = MAX_BYTES) -> bytes:
    """A regular file's bytes, at most `limit` of them, or InputError naming the file."""
    path = Path(path)
    size = _regular_size(path)
    if size > limit:
        raise _too_big(path, size)
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as e:
        raise InputError(path, "file", str(path), f"cannot be read ({e.strerror or e})") from None
    if len(data) > limit:  # grew while being read
        raise _too_big(path, len(data))
    return data


def decode(path, data: bytes) -> str:
    """UTF-8 text (a byte-order mark allowed), or InputError naming the first bad byte."""
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(path, "file", str(path), f"is binary, not text (a NUL byte at {nul})")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InputError(
            path, "file", str(path), f"is not UTF-8 text (byte 0x{data[e.start]:02x} at {e.start})"
        ) from None


def read_text(path, limit: int = MAX_BYTES) -> str:
    """A regular file's UTF-8 text, bounded; InputError names the file and the problem."""
    return decode(path, read_bytes(path, limit))


def _temporary(target: Path) -> Path:
    """The name a file is written under before it is renamed into place (same folder, so the
    rename is atomic)."""
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def _cannot_write(path, e: OSError) -> InputError:
    return InputError(path, "output", str(path), f"cannot be written ({e.strerror or e})")


GENERATOR_META = '<meta name="generator" content="simsp" />'
"""In the <head> of every page simsp writes: how it knows a page of its own."""
GENERATOR_KEY = "generator"
"""The key, with the value "simsp", in every JSON document simsp writes (Perfetto traces: in
otherData, written first)."""
OWN_MARKS = (
    GENERATOR_META.encode(),
    b'"generator": "simsp"',
    b'"generator":"simsp"',
)
OWN_FIRST_LINES = (
    b"# measured by `simsp profile ",  # calibration lines of profile host / optimizer / memory
    b"# nccl-tests version simsp-profile",  # logs of profile collectives
)
"""How the files of simsp's profilers begin: only at the very start (a hardware file carries
the first in its calibration comments, and is not theirs to replace)."""
OWN_HEAD_BYTES = 1 << 16
"""How much of an existing file is read for a mark: every mark is written near the start."""


def written_by_simsp(path, header: bytes = b"") -> bool:
    """Whether an existing file is one simsp wrote, so that writing again may replace it: its
    first OWN_HEAD_BYTES hold one of OWN_MARKS, it begins with one of OWN_FIRST_LINES, or its
    first line that is not a '#' comment starts with `header` (a CSV simsp writes, known by its
    header line, after any provenance comments), or it is empty (a name reserved for the
    output)."""
    try:
        with open(path, "rb") as f:
            head = f.read(OWN_HEAD_BYTES)
    except OSError:
        return False
    if not head or any(m in head for m in OWN_MARKS) or head.startswith(OWN_FIRST_LINES):
        return True
    if not header:
        return False
    body = head
    while body.startswith(b"#") and b"\n" in body:
        body = body.split(b"\n", 1)[1]
    return body.startswith(header)


def _not_ours(path) -> InputError:
    return InputError(
        path,
        "output",
        str(path),
        "exists and is not a file simsp wrote (simsp replaces only its own outputs); remove it "
        "or name another file",
    )


def check_output(
    path, suffixes: tuple[str, ...] = (), inputs=(), header: bytes = b"", appends: bool = False
) -> Path:
    """An output path that can be written, checked before any work starts: its folder exists,
    it is not a folder itself, a symbolic link (simsp replaces only files it writes, never
    what a link points to, nor the link) or a device or FIFO, it is none of the command's
    `inputs` (a run's timeline is not written over its workload), an existing file there is one
    simsp wrote (`written_by_simsp`, `header` the start of a CSV of this output; an output simsp
    `appends` to, a sweep's rows, is one its reader checks instead), it ends in one of suffixes
    (when given), and a file can be created beside it (tried and removed)."""
    target = Path(path)
    if suffixes and target.suffix.lower() not in suffixes:
        raise InputError(path, "output", str(path), f"must end in {' or '.join(suffixes)}")
    if target.is_symlink():
        raise InputError(path, "output", str(path), "is a symbolic link; name a file")
    for given in inputs:
        if given and target.exists() and Path(given).exists() and target.samefile(given):
            raise InputError(path, "output", str(path), "is an input of this command")
    if target.is_dir():
        raise InputError(path, "output", str(path), "is a folder; name a file in it")
    if target.exists() and not target.is_file():
        raise InputError(path, "output", str(path), "is not a regular file (a device, a FIFO)")
    if target.exists() and not appends and not written_by_simsp(target, header):
        raise _not_ours(path)
    if not target.parent.is_dir():
        raise InputError(path, "output", str(path), f"has no folder {target.parent}; create it")
    probe = _temporary(target)
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as e:
        raise _cannot_write(path, e) from None
    return target


def check_output_dir(path, headers: dict[str, bytes] | None = None) -> Path:
    """An output folder that can be written, checked before any work starts: not a file nor a
    symbolic link, its parent a folder (simsp creates the folder itself, and only when it
    writes); the files `headers` names there (each with the start of its CSV, b"" for a page)
    are ones simsp wrote, where they exist."""
    target = Path(path)
    for name, header in (headers or {}).items():
        f = target / name
        if f.is_symlink() or f.is_dir():
            raise InputError(f, "--out", str(f), "is not a file simsp writes")
        if f.exists() and not written_by_simsp(f, header):
            raise _not_ours(f)
    if target.is_symlink():
        raise InputError(path, "--out", str(path), "is a symbolic link; name a folder")
    if target.exists() and not target.is_dir():
        raise InputError(path, "--out", str(path), "is a file; name a folder")
    parent = target.parent if str(target.parent) else Path(".")
    if not parent.is_dir():
        raise InputError(path, "--out", str(path), f"has no folder {parent}; create it")
    if not os.access(target if target.is_dir() else parent, os.W_OK):
        raise InputError(path, "--out", str(path), "cannot be written (no permission)")
    return target


def write_files(
    out_dir, files: dict[str, str], headers: dict[str, bytes] | None = None
) -> list[Path]:
    """Several outputs in one folder, all or none: each is written whole under a temporary name
    first, then all are renamed into place; on any failure the temporaries go, files that were
    there stay as they were, and a folder made for them is removed. A file there that simsp did
    not write is refused (`written_by_simsp`; `headers` the start of each CSV by name).
    InputError names the folder or the file."""
    headers = headers or {}
    out = check_output_dir(out_dir, {name: headers.get(name, b"") for name in files})
    made = not out.exists()
    written: list[tuple[Path, Path]] = []
    try:
        out.mkdir(exist_ok=True)
        for name, text in files.items():
            target = out / name
            if target.is_symlink() or target.is_dir():
                raise InputError(target, "--out", str(target), "is not a file simsp writes")
            if target.exists() and not written_by_simsp(target, headers.get(name, b"")):
                raise _not_ours(target)
            tmp = _temporary(target)
            written.append((tmp, target))
            tmp.write_bytes(text.encode())
        for tmp, target in written:
            os.replace(tmp, target)
    except (OSError, InputError) as e:
        for tmp, _ in written:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
        if made:
            shutil.rmtree(out, ignore_errors=True)
        if isinstance(e, InputError):
            raise
        raise _cannot_write(out_dir, e) from None
    return [target for _, target in written]


def write_text(path, text: str) -> None:
    """Write an output file whole or not at all: to a temporary name beside it, then renamed into
    place, so a failure leaves an existing file untouched; InputError names the path."""
    write_bytes(path, text.encode())


def write_bytes(path, data: bytes) -> None:
    """write_text for bytes."""
    target = Path(path)
    tmp = _temporary(target)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # its folder is not there either
            pass
        raise _cannot_write(path, e) from None


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""Cell starts a spreadsheet reads as a formula (OWASP, CSV injection)."""


def csv_safe(cell) -> str:
    """A CSV cell a spreadsheet will not run: one that starts as a formula would and is not a
    number gets a leading apostrophe, as OWASP's CSV-injection guidance says; numbers (-0.05)
    and everything else are written as they are."""
    text = str(cell)
    if text.startswith(FORMULA_STARTS):
        try:
            float(text)
        except ValueError:
            return "'" + text
    return text
