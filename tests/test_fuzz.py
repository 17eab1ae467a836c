"""The fuzz suite of issue 18: every generated bad input to `run`, `memory`, `sweep` and
`calibrate` exits 2 with one error line and no traceback, within 10 CPU seconds and 1 GiB,
leaving no file behind (tests/fuzz_cases.py generates them, tests/fuzz_harness.py runs them
in-process).

A sample also runs as real processes under hard limits (RLIMIT_AS, RLIMIT_CPU), so what the
console script prints is checked too, not only what `main` returns.
"""

import collections
import resource
import shutil
import subprocess
import sys

import pytest

from tests.fuzz_cases import ROOT, Case, _dump, _workload, alias_bomb, all_cases, deep_nesting
from tests.fuzz_harness import (
    MEMORY_LIMIT_BYTES,
    TIME_LIMIT_S,
    WALL_GUARD_S,
    problems,
    run_case,
)

pytestmark = pytest.mark.slow  # 3,810 bad inputs: about 85 s

SUBPROCESS_CASES = [
    Case("run/process/dev-zero", ("run", "/dev/zero")),
    Case("run/process/fifo", ("run", "{d}/fifo.yaml")),
    Case("run/process/alias-bomb", ("run", "{d}/w.yaml"), (("w.yaml", alias_bomb()),)),
    Case("run/process/deep", ("run", "{d}/w.yaml"), (("w.yaml", deep_nesting()),)),
    Case("memory/process/binary", ("memory", "{d}/w.yaml"), (("w.yaml", b"\x00\xff" * 99),)),
    Case(
        "run/process/global-batch-1e7",  # zero bubble: its memory walks every action
        (
            "run",
            str(ROOT / "workloads" / "gpt3-175b.yaml"),
            "--global-batch",
            "10000000",
            "--schedule",
            "zb-h1",
        ),
    ),
    Case(
        "memory/process/global-batch-1e7",
        (
            "memory",
            str(ROOT / "workloads" / "gpt3-175b.yaml"),
            "--global-batch",
            "10000000",
            "--schedule",
            "zb-h1",
        ),
    ),
    Case("sweep/process/dev-zero", ("sweep", "/dev/zero")),
    Case(
        "calibrate/process/gemm-dev-zero",
        (
            "calibrate",
            "--hardware",
            str(ROOT / "hardware" / "dgx-a100-80gb.yaml"),
            "--gemm",
            "/dev/zero",
            "--out",
            "{d}/new.yaml",
        ),
    ),
    Case(
        "run/process/nan-dropout",
        ("run", "{d}/w.yaml"),
        (("w.yaml", _dump({**_workload(), "model": {**_workload()["model"], "dropout": "nan"}})),),
    ),
]


def _limit_child():
    limit = 2 * MEMORY_LIMIT_BYTES  # the interpreter and numpy map some before any input
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    cpu = int(TIME_LIMIT_S) + 5  # the interpreter's start on top of the case's CPU limit
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))


def _run_process(case: Case, folder) -> list[str]:
    """A case as `python -m simsp.cli.main ...` under hard limits: how it breaks the rule."""
    import os

    folder.mkdir(parents=True)
    for name, data in case.files:
        (folder / name).write_bytes(data)
    argv = [a.replace("{d}", str(folder)) for a in case.argv]
    if any("fifo.yaml" in a for a in argv):
        os.mkfifo(folder / "fifo.yaml")
    before = sorted(p.name for p in folder.iterdir())
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "simsp", *argv],
            capture_output=True,
            text=True,
            timeout=WALL_GUARD_S,  # a hang guard: the limit is RLIMIT_CPU, not wall time
            preexec_fn=_limit_child,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        return ["timed out"]
    bad = []
    lines = proc.stderr.splitlines()
    if proc.returncode != 2:
        bad.append(f"exit {proc.returncode}")
    if len(lines) != 1 or not lines[0].startswith("simsp: error: "):
        bad.append(f"stderr {proc.stderr[-400:]!r}")
    if sorted(p.name for p in folder.iterdir()) != before:
        bad.append("left files")
    return bad


def test_every_bad_input_is_one_clean_error(tmp_path, capsys):
    cases = all_cases()
    failures, slowest, biggest = [], (0.0, ""), (0, "")
    for i, case in enumerate(cases):
        folder = tmp_path / str(i)
        outcome = run_case(case, folder)
        shutil.rmtree(folder, ignore_errors=True)
        slowest = max(slowest, (outcome.cpu_s, case.name))
        biggest = max(biggest, (outcome.added_rss_bytes, case.name))
        if bad := problems(outcome):
            failures.append((case.name, bad))
    for j, case in enumerate(SUBPROCESS_CASES):
        if bad := _run_process(case, tmp_path / f"p{j}"):
            failures.append((case.name, bad))
    total = len(cases) + len(SUBPROCESS_CASES)
    by = collections.Counter(c.command for c in cases + SUBPROCESS_CASES)
    ok = total - len(failures)
    with capsys.disabled():
        print(
            f"\nfuzz: {total} bad inputs ({', '.join(f'{k} {n}' for k, n in sorted(by.items()))}; "
            f"{len(SUBPROCESS_CASES)} as processes): {ok} exit 2 with one error line, no "
            f"traceback, none over {TIME_LIMIT_S:.0f} CPU s or {MEMORY_LIMIT_BYTES >> 30} GiB, "
            f"no file left = {ok / total:.1%}; slowest {slowest[0]:.2f} CPU s ({slowest[1]}), "
            f"most memory {biggest[0] / 2**20:.0f} MiB ({biggest[1]})"
        )
    assert total >= 1000
    assert not failures, "\n".join(f"{name}: {bad}" for name, bad in failures[:15])
