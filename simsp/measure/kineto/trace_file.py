"""A Kineto / Chrome trace file checked in full before anything parses it: a .json or .json.gz
within MAX_TRACE_BYTES decompressed (a zip bomb is refused as it is read), a JSON object whose
traceEvents is a list of at most MAX_EVENTS readable events, device names that are names. Every
refusal is one InputError naming the file, the key and the rule."""

import gzip
import json
from pathlib import Path

from simsp.errors import InputError
from simsp.textfile import FORMULA_STARTS

MAX_TRACE_BYTES = 192 << 20
"""Most bytes a trace may hold, decompressed: one rank's iteration is tens of MB (the largest
shipped trace, 40,573 events, is 9.8 MB); a .json.gz that inflates past this (a zip bomb) is
refused as it is read, not after. The cap keeps the parsed JSON within about 1 GiB."""
MAX_EVENTS = 150_000
"""Most events a trace may hold: one rank's training iteration is 10^4 to 10^5 (the shipped
traces: 2,000 to 40,573); HTA's parse of 500,000 takes over 20 s on one core, of 150,000 a few
seconds."""


def _read_bounded(path: Path) -> bytes:
    """The trace's bytes, decompressed where it is gzip, refused past MAX_TRACE_BYTES."""
    gz = path.name.endswith(".gz")
    try:
        with (gzip.open if gz else open)(path, "rb") as f:
            data = f.read(MAX_TRACE_BYTES + 1)
    except (OSError, EOFError) as e:  # gzip.BadGzipFile is an OSError; a cut file an EOFError
        raise InputError(path, "--trace", str(path), f"cannot be read ({e})") from None
    if len(data) > MAX_TRACE_BYTES:
        raise InputError(
            path, "--trace", str(path), f"holds more than {MAX_TRACE_BYTES >> 20} MiB of JSON"
        )
    return data


def _bad_event(e) -> str | None:
    """Why an event cannot be read, or None: a mapping whose name and category are strings
    without control characters, and, for a complete event ("X"), finite numbers for ts and
    dur, dur not negative."""
    if not isinstance(e, dict):
        return "is not an object"
    for key in ("name", "cat"):
        value = e.get(key, "")
        if not isinstance(value, str):
            return f"{key} is not a string"
        if not all(c.isprintable() or c == " " for c in value):
            return f"{key} {value[:40]!r} holds a control character"
    if e.get("ph") == "X":
        for key in ("ts", "dur"):
            value = e.get(key)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                return f"{key} is not a number"
            if value != value or value in (float("inf"), float("-inf")):
                return f"{key} is not finite"
        if e["dur"] < 0:
            return "dur is negative"
    return None


def check_trace_file(path: Path) -> None:
    """The file is a Kineto trace simsp can read, checked in full before HTA parses it (a
    one-line error, not HTA's traceback): a .json or .json.gz within MAX_TRACE_BYTES, a JSON
    object whose traceEvents is a list of at most MAX_EVENTS readable events (_bad_event)."""
    if not path.is_file():
        raise InputError(path, "--trace", str(path), "no such file")
    if not (path.name.endswith(".json") or path.name.endswith(".gz")):
        raise InputError(path, "--trace", str(path), "must be a .json or .json.gz Kineto trace")
    data = _read_bounded(path)
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise InputError(path, "traceEvents", None, "not a Chrome/Kineto trace (JSON)") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else None
    if not isinstance(events, list):
        raise InputError(path, "traceEvents", None, "must be a list (a Chrome/Kineto trace)")
    if len(events) > MAX_EVENTS:
        raise InputError(path, "traceEvents", len(events), f"more than {MAX_EVENTS:,} events")
    for i, e in enumerate(events):
        why = _bad_event(e)
        if why:
            raise InputError(path, f"traceEvents[{i}]", None, why)
    props = doc.get("deviceProperties") or []
    if not isinstance(props, list) or not all(isinstance(p, dict) for p in props):
        raise InputError(path, "deviceProperties", None, "must be a list of objects")
    for i, p in enumerate(props):
        name = p.get("name", "")
        key = f"deviceProperties[{i}].name"
        if not isinstance(name, str) or not all(c.isprintable() for c in name):
            raise InputError(path, key, None, "must be a name without control characters")
        if name.startswith(FORMULA_STARTS):
            raise InputError(path, key, None, "must not start with =, +, - or @ (a formula)")
