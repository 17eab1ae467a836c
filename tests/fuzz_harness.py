"""Running one fuzz case in-process under the fuzz limits: a CPU-time timer, an address-space
cap and the peak resident memory it added, its exit code and stderr, and what it left behind.

In-process keeps a thousand cases inside CI time (no interpreter start per case). The limits are
enforced, not only measured: SIGPROF ends a case at its CPU-time limit (CPU, not wall time: a
busy machine must not fail a case; a wall-clock guard of WALL_GUARD_S still ends a case that
hangs without computing), RLIMIT_AS turns a runaway
allocation into a MemoryError instead of the kernel's OOM killer, and the peak RSS is read from
/proc after resetting it (`clear_refs` 5), so a case is charged only what it added.
"""

import contextlib
import io
import os
import resource
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from simsp.cli.main import main

TIME_LIMIT_S = 10.0
"""CPU seconds a case may take (process time, user and system)."""
WALL_GUARD_S = 120.0
"""Wall seconds after which a case is taken to hang (a blocked read): far past any CPU limit."""
MEMORY_LIMIT_BYTES = 1 << 30
MAX_LINE = 1000
"""Longest error line allowed: a rule naming its choices, never a quoted megabyte."""


class CaseTimeout(Exception):
    """Raised by SIGALRM when a case runs past its time limit."""


@dataclass(frozen=True)
class Outcome:
    """What one case did."""

    rc: int | None
    stderr: str
    stdout: str
    error: str
    """A traceback when the command raised instead of returning an exit code."""
    cpu_s: float
    """CPU seconds the case took (process time)."""
    added_rss_bytes: int
    left: tuple[str, ...]
    """Files created or changed in the case's folder."""


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _reset_peak_rss() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def _alarm(signum, frame):
    if signum == signal.SIGPROF:
        raise CaseTimeout(f"ran past {TIME_LIMIT_S} s of CPU")
    raise CaseTimeout(f"hung past {WALL_GUARD_S} s")


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@contextlib.contextmanager
def _limits():
    """The time and address-space limits around one case, restored afterwards."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _status_kib("VmSize") * 1024 + 2 * MEMORY_LIMIT_BYTES
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard < 0 else min(cap, hard), hard))
    old = signal.signal(signal.SIGALRM, _alarm), signal.signal(signal.SIGPROF, _alarm)
    signal.setitimer(signal.ITIMER_PROF, TIME_LIMIT_S)
    signal.setitimer(signal.ITIMER_REAL, WALL_GUARD_S)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old[0])
        signal.signal(signal.SIGPROF, old[1])
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_case(case, folder: Path) -> Outcome:
    """Write the case's files into folder, run its command line, and report what happened."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in case.files:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    argv = [a.replace("{d}", str(folder)) for a in case.argv]
    if any("fifo.yaml" in a for a in argv):
        os.mkfifo(folder / "fifo.yaml")
    before = _snapshot(folder)
    out, err, error, rc = io.StringIO(), io.StringIO(), "", None
    rss0 = _status_kib("VmRSS") * 1024
    _reset_peak_rss()
    t0 = time.process_time()
    try:
        with _limits(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except BaseException:  # noqa: BLE001 - a traceback is what the fuzz looks for
        error = traceback.format_exc(limit=-8)
    cpu = time.process_time() - t0
    added = max(0, _status_kib("VmHWM") * 1024 - rss0)
    after = _snapshot(folder) if folder.exists() else {}
    left = tuple(sorted(k for k in after if before.get(k) != after[k]))
    left += tuple(sorted(f"removed:{k}" for k in before if k not in after))
    return Outcome(rc, err.getvalue(), out.getvalue(), error, cpu, added, left)


def problems(o: Outcome) -> list[str]:
    """How an outcome breaks the rule for bad input (empty when it keeps it)."""
    bad = []
    if o.error:
        bad.append("raised:\n" + o.error)
    if o.rc != 2:
        bad.append(f"exit {o.rc}, not 2; stdout {o.stdout[:200]!r}")
    lines = o.stderr.splitlines()
    if len(lines) != 1 or not lines[0].startswith("simsp: error: "):
        bad.append(f"stderr is not one error line: {o.stderr[:400]!r}")
    elif len(lines[0]) > MAX_LINE:
        bad.append(f"error line of {len(lines[0])} characters: {lines[0][:200]!r}...")
    if any(not (c.isprintable() or c in "\n ") for c in o.stderr):
        bad.append(f"control characters reach the terminal: {o.stderr[:200]!r}")
    if "Traceback" in o.stderr:
        bad.append("a traceback on stderr")
    if o.cpu_s > TIME_LIMIT_S:
        bad.append(f"took {o.cpu_s:.1f} s of CPU")
    if o.added_rss_bytes > MEMORY_LIMIT_BYTES:
        bad.append(f"grew {o.added_rss_bytes / 2**20:.0f} MiB")
    if o.left:
        bad.append(f"left or changed files: {list(o.left)}")
    return bad
