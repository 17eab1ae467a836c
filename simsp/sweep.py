"""Sweeps: every valid parallel configuration of a workload, on one or more machines.

`simsp sweep SPEC.yaml` reads a spec (a workload, hardware files, a GPU count and a grid of
settings), enumerates the valid configurations, evaluates them with the event simulation (or,
with --screen, all of them in closed form first and only the most promising in the engine),
appends one CSV row per configuration as it finishes, and prints the fastest that fit.
`simsp compare WORKLOAD --hardware A.yaml B.yaml` runs one workload on several machines.

A spec, by example (paths relative to the working directory or to the spec's folder):

    workload: workloads/gpt3-175b.yaml
    hardware: [hardware/dgx-a100-80gb.yaml]
    gpus: 64
    grid: {tp: [1, 2, 4, 8, 16], pp: [1, 2, 4, 8, 16], sp: [true, false],
           recompute: [none, selective, full], micro_batch: [1, 2, 4]}

dp = gpus / (tp x pp). Settings the grid leaves out keep the workload's values; an inherited
interleaved schedule falls back to 1F1B where interleaving is not valid (pp = 1, chunks that do
not divide the layers, a microbatch count that is not a multiple of pp); a schedule listed in
the grid is taken as asked, and its invalid combinations are skipped. Configurations that mean
the same run (SP with tp = 1, interleaved with one chunk) are evaluated once.

Output rows are written whole and flushed one by one; on a restart the rows already in the
output are kept and their configurations skipped (a trailing partial line is dropped first), so
a killed sweep resumes without losing or duplicating a row.
"""

import argparse
import csv
import dataclasses
import io
import itertools
import json
import math
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from simsp.errors import InputError
from simsp.hardware import HardwareSpec
from simsp.parallel import RECOMPUTE_MODES, SCHEDULES
from simsp.units import GIB
from simsp.workload import Workload, validate

GRID_KEYS = {
    # grid key: (section, field, kind)
    "tp": ("parallel", "tp", int),
    "pp": ("parallel", "pp", int),
    "sp": ("parallel", "sequence_parallel", bool),
    "sequence_parallel": ("parallel", "sequence_parallel", bool),
    "recompute": ("parallel", "recompute", str),
    "schedule": ("parallel", "schedule", str),
    "virtual_stages": ("parallel", "virtual_stages", int),
    "distributed_optimizer": ("parallel", "distributed_optimizer", bool),
    "overlap_dp_comm": ("parallel", "overlap_dp_comm", bool),
    "micro_batch": ("training", "micro_batch", int),
    "global_batch": ("training", "global_batch", int),
}
CHOICES = {"recompute": RECOMPUTE_MODES, "schedule": SCHEDULES}
SPEC_KEYS = ("name", "workload", "hardware", "gpus", "grid", "keep")

KEY_COLUMNS = ("workload", "hardware", "gpus", "tp", "pp", "dp", "sp", "recompute", "micro_batch", "global_batch",
               "schedule", "virtual_stages", "distributed_optimizer", "overlap_dp_comm")
"""The columns that name a configuration: a row's key for resuming."""
RESULT_COLUMNS = ("iteration_time_s", "mfu", "hfu", "tokens_per_s", "peak_bytes", "capacity_bytes", "fits", "tier")
COLUMNS = KEY_COLUMNS + RESULT_COLUMNS
DEFAULT_KEEP = 0.25
"""--screen: the share of fitting configurations (best by closed-form time) simulated as events."""


# ---------------------------------------------------------------------------- the spec
@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep spec."""

    source: str
    """The spec file."""
    workload: Workload
    hardware: tuple[HardwareSpec, ...]
    gpus: int
    grid: tuple[tuple[str, tuple], ...]
    """(grid key, values) in the spec's order; keys are GRID_KEYS names."""
    keep: float = DEFAULT_KEEP


def resolve(spec_path: Path, key: str, value) -> Path:
    """A path from a spec: as given (relative to the working directory), else next to the spec."""
    if not isinstance(value, str) or not value:
        raise InputError(spec_path, key, value, "must be a path (a non-empty string)")
    for candidate in (Path(value), spec_path.parent / value):
        if candidate.exists():
            return candidate
    raise InputError(spec_path, key, value, f"no such file (looked in . and {spec_path.parent})")


def _grid_values(file, key, values) -> tuple:
    """One grid entry checked: a non-empty list of values of the key's type."""
    if key not in GRID_KEYS:
        raise InputError(file, f"grid.{key}", values, f"unknown grid key; known: {', '.join(GRID_KEYS)}")
    values = values if isinstance(values, list) else [values]
    if not values:
        raise InputError(file, f"grid.{key}", values, "must list at least one value")
    kind = GRID_KEYS[key][2]
    for v in values:
        if kind is bool and not isinstance(v, bool):
            raise InputError(file, f"grid.{key}", v, "must be true or false")
        if kind is int and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
            raise InputError(file, f"grid.{key}", v, "must be a positive integer")
        if kind is str and v not in CHOICES[key]:
            raise InputError(file, f"grid.{key}", v, f"must be one of {', '.join(CHOICES[key])}")
    return tuple(dict.fromkeys(values))  # drop repeats, keep order


def load_spec(path) -> SweepSpec:
    """Read and check a sweep spec; InputError names the file, key, value and rule."""
    from simsp.config import load_hardware, load_workload, read_yaml

    path = Path(path)
    data = read_yaml(path)
    for key in data:
        if key not in SPEC_KEYS:
            raise InputError(path, key, data[key], f"unknown key; known: {', '.join(SPEC_KEYS)}")
    if "workload" not in data:
        raise InputError(path, "workload", None, "is required")
    workload = load_workload(resolve(path, "workload", data["workload"]))
    hw_paths = data.get("hardware")
    hw_paths = hw_paths if isinstance(hw_paths, list) else [hw_paths]
    hardware = tuple(load_hardware(resolve(path, "hardware", p) if p is not None else None) for p in hw_paths)
    names = [h.name for h in hardware]
    if len(set(names)) != len(names):
        raise InputError(path, "hardware", names, "two hardware files share a name; rows would collide")
    gpus = data.get("gpus", workload.parallel.gpus)
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
        raise InputError(path, "gpus", gpus, "must be a positive integer")
    grid = data.get("grid") or {}
    if not isinstance(grid, dict):
        raise InputError(path, "grid", grid, "must map setting names to lists of values")
    keys = [GRID_KEYS.get(k, (None, k))[1] for k in grid]
    if len(set(keys)) != len(keys):
        raise InputError(path, "grid", list(grid), "names one setting twice (sp and sequence_parallel)")
    keep = data.get("keep", DEFAULT_KEEP)
    if isinstance(keep, bool) or not isinstance(keep, (int, float)) or not 0 < keep <= 1:
        raise InputError(path, "keep", keep, "must be a fraction in (0, 1]")
    return SweepSpec(str(path), workload, hardware, gpus,
                     tuple((k, _grid_values(path, k, v)) for k, v in grid.items()), float(keep))


# ---------------------------------------------------------------------------- enumeration
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
    """Skipped: broke a workload rule, or tp x pp does not divide the GPUs."""
    duplicates: int = 0
    """Skipped: the same run as an earlier configuration."""
    fallback: int = 0
    """Inherited interleaved schedule run as 1F1B."""
    configs: int = 0


def fmt(value) -> str:
    """A value as written to the CSV: true/false, full-precision floats, plain ints and strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def config_key(w: Workload, hw: HardwareSpec) -> tuple[str, ...]:
    """KEY_COLUMNS values of a workload on a machine."""
    p, t = w.parallel, w.training
    return tuple(fmt(x) for x in (w.name, hw.name, p.gpus, p.tp, p.pp, p.dp, p.sequence_parallel, p.recompute,
                                  t.micro_batch, t.global_batch, p.schedule, p.virtual_stages,
                                  p.distributed_optimizer, p.overlap_dp_comm))


def _variant(base: Workload, values: dict, gpus: int) -> Workload | None:
    """The workload with grid values applied and dp = gpus / (tp pp); None if tp pp does not divide."""
    sections = {"parallel": {}, "training": {}}
    for key, value in values.items():
        section, field, _ = GRID_KEYS[key]
        sections[section][field] = value
    par = dataclasses.replace(base.parallel, **sections["parallel"])
    if gpus % (par.tp * par.pp):
        return None
    par = dataclasses.replace(par, dp=gpus // (par.tp * par.pp),
                              sequence_parallel=par.sequence_parallel and par.tp > 1)
    if par.schedule != "interleaved":
        par = dataclasses.replace(par, virtual_stages=1)
    return dataclasses.replace(base, parallel=par, training=dataclasses.replace(base.training, **sections["training"]))


def _normalised(w: Workload) -> Workload:
    """Interleaving with one chunk is 1F1B."""
    if w.parallel.schedule == "interleaved" and w.parallel.virtual_stages == 1:
        return dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, schedule="1f1b"))
    return w


def _valid(w: Workload, source: str) -> bool:
    try:
        validate(w, source)
    except InputError:
        return False
    return True


def enumerate_configs(spec: SweepSpec) -> tuple[list[Config], Counts]:
    """Every valid, distinct configuration of the spec, in grid order, and what was skipped."""
    counts, seen, out = Counts(), set(), []
    keys = [k for k, _ in spec.grid]
    explicit_schedule = "schedule" in keys
    for hw in spec.hardware:
        for combo in itertools.product(*(v for _, v in spec.grid)):
            counts.grid_points += 1
            w = _variant(spec.workload, dict(zip(keys, combo)), spec.gpus)
            if w is not None and not _valid(w, spec.source) and not explicit_schedule \
                    and w.parallel.schedule == "interleaved":
                w = dataclasses.replace(w, parallel=dataclasses.replace(w.parallel, schedule="1f1b", virtual_stages=1))
                counts.fallback += _valid(w, spec.source)
            if w is None or not _valid(w, spec.source):
                counts.invalid += 1
                continue
            w = _normalised(w)
            key = config_key(w, hw)
            if key in seen:
                counts.duplicates += 1
                continue
            seen.add(key)
            out.append(Config(key, w, hw))
    counts.configs = len(out)
    return out, counts


# ---------------------------------------------------------------------------- evaluation
def _row(key, t, mfu, hfu, tokens, peak, capacity, fits, tier) -> dict:
    values = dict(zip(KEY_COLUMNS, key))
    values.update(iteration_time_s=fmt(float(t)), mfu=fmt(float(mfu)), hfu=fmt(float(hfu)),
                  tokens_per_s=fmt(float(tokens)), peak_bytes=fmt(round(peak)), capacity_bytes=fmt(int(capacity)),
                  fits=fmt(bool(fits)), tier=tier)
    return values


def event_result(w: Workload, hw: HardwareSpec):
    """report.run with the memoised cost model: the same Result, each GEMM shape looked up once
    per process instead of once per configuration."""
    from simsp.cost import cost_model
    from simsp.engine import simulate
    from simsp.memory import memory_report
    from simsp.plan import build_plan
    from simsp.report import Result

    plan = build_plan(w, cost_model(hw))
    return Result(w, hw, plan, simulate(plan), memory_report(w, hw))


def evaluate_event(task: tuple) -> dict:
    """(key, workload, hardware) -> output row, by the event simulation (picklable, for workers)."""
    key, w, hw = task
    r = event_result(w, hw)
    t = r.iteration_time_s
    return _row(key, t, r.mfu(), r.hfu(), w.training.global_batch * w.model.seq_len / t,
                r.memory.peak_bytes, r.memory.capacity_bytes, r.memory.fits, "event")


def evaluate_analytic(task: tuple) -> dict:
    """(key, workload, hardware) -> output row, in closed form."""
    from simsp.analytic import estimate

    key, w, hw = task
    e = estimate(w, hw)
    return _row(key, e.iteration_time_s, e.mfu, e.hfu, e.tokens_per_s, e.peak_bytes, e.capacity_bytes, e.fits,
                "analytic")


def _work(task: tuple) -> int:
    """Relative engine cost of a task: actions replayed (for longest-first submission)."""
    w = task[1]
    return w.parallel.pp * w.parallel.chunks * w.microbatches


def screen(configs: list[Config], keep: float) -> tuple[list[dict], set]:
    """Closed-form rows for every configuration, and the keys of the best `keep` share of those
    that fit (at least one when any fits), ranked by closed-form throughput (the iteration time
    where the global batch is fixed; ties by key)."""
    rows = [evaluate_analytic((c.key, c.workload, c.hardware)) for c in configs]
    fitting = sorted((-float(r["tokens_per_s"]), c.key) for r, c in zip(rows, configs) if r["fits"] == "true")
    n = math.ceil(keep * len(fitting)) if fitting else 0
    return rows, {k for _, k in fitting[:n]}


# ---------------------------------------------------------------------------- executors
def _local(tasks: list, jobs: int):
    """Rows in completion order from a process pool (in this process when one job or task)."""
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield evaluate_event(t)
        return
    from concurrent.futures import ProcessPoolExecutor, as_completed

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(evaluate_event, t) for t in tasks]
        try:
            for f in as_completed(futures):
                yield f.result()
        finally:
            for f in futures:
                f.cancel()


def dask_address(executor: str) -> str:
    """dask://HOST:PORT -> tcp://HOST:PORT (an address with its own scheme is kept)."""
    rest = executor[len("dask://"):]
    return rest if "://" in rest else "tcp://" + rest


def _dask(tasks: list, executor: str):
    """Rows in completion order from a dask.distributed scheduler."""
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise InputError("--executor", "executor", executor,
                         "needs dask.distributed: pip install 'dask[distributed]'") from None
    try:
        client = Client(dask_address(executor), timeout=30)
    except (OSError, TimeoutError) as e:
        raise InputError("--executor", "executor", executor, f"no dask scheduler answers there ({e})") from None
    try:
        futures = client.map(evaluate_event, tasks, pure=False)
        for f in as_completed(futures):
            yield f.result()
    finally:
        client.close()


def executor_rows(tasks: list, executor: str = "local", jobs: int | None = None):
    """Evaluate tasks by event simulation on the chosen executor; yields rows as they finish."""
    tasks = sorted(tasks, key=_work, reverse=True)  # longest first: shorter tail
    if executor == "local":
        yield from _local(tasks, jobs or os.cpu_count() or 1)
    elif executor.startswith("dask://"):
        yield from _dask(tasks, executor)
    else:
        raise InputError("--executor", "executor", executor, "must be local or dask://HOST:PORT")


# ---------------------------------------------------------------------------- output files
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
        data = data[:data.rfind(b"\n") + 1]
        with open(path, "r+b") as f:
            f.truncate(len(data))
    lines = data.decode().splitlines()
    if not lines:
        return []
    header = next(csv.reader([lines[0]]))
    if tuple(header) != COLUMNS:
        raise InputError(path, "columns", ",".join(header)[:80] + "...",
                         "an existing output with other columns; choose another --out or remove it")
    return [dict(zip(COLUMNS, r)) for r in csv.reader(lines[1:]) if len(r) == len(COLUMNS)]


class CsvSink:
    """Appends whole rows to a CSV, flushing each, with the header on a new file."""

    def __init__(self, path: Path):
        self.path = path
        new = not path.exists() or path.stat().st_size == 0
        try:
            self.f = open(path, "a", newline="")
        except OSError as e:
            raise InputError(path, "--out", str(path), f"cannot be written ({e.strerror or e})") from None
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
        raise InputError("--out", "out", ".parquet", "needs pyarrow: pip install pyarrow (or write .csv)") from None
    return pyarrow


def _typed(row: dict) -> dict:
    """A row with numbers and booleans as such (for Parquet)."""
    out = {}
    for c in COLUMNS:
        v = row[c]
        if v in ("true", "false"):
            out[c] = v == "true"
        elif c in ("gpus", "tp", "pp", "dp", "micro_batch", "global_batch", "virtual_stages", "peak_bytes",
                   "capacity_bytes"):
            out[c] = int(v)
        elif c in ("iteration_time_s", "mfu", "hfu", "tokens_per_s"):
            out[c] = float(v)
        else:
            out[c] = v
    return out


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
        self.journal = self.path.with_name(self.path.name + ".partial.csv") if self.parquet else self.path
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
            table = pa.Table.from_pylist([_typed(r) for r in rows])
            pa.parquet.write_table(table, self.path)
            self.journal.unlink(missing_ok=True)


# ---------------------------------------------------------------------------- progress
class Progress:
    """A one-line progress bar on stderr (tqdm's when installed); silent when disabled."""

    def __init__(self, total: int, enabled: bool = True, label: str = "configs"):
        self.total, self.done, self.enabled, self.label = total, 0, enabled and total > 0, label
        self.t0 = self.shown = time.monotonic()
        self.tty = sys.stderr.isatty()
        self.bar = None
        if self.enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, unit=" " + label, file=sys.stderr, dynamic_ncols=True)
            except ImportError:
                pass

    def step(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(1)
            return
        now = time.monotonic()
        every = 0.2 if self.tty else 5.0
        if now - self.shown >= every or self.done == self.total:
            self.shown = now
            rate = self.done / max(now - self.t0, 1e-9)
            eta = (self.total - self.done) / rate if rate else 0.0
            width = 30
            filled = int(width * self.done / self.total)
            text = (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {self.label} "
                    f"{rate:.1f}/s ETA {eta:.0f}s")
            print(("\r" + text) if self.tty else text, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.tty:
            print(file=sys.stderr)


# ---------------------------------------------------------------------------- the sweep
@dataclass
class Outcome:
    """A finished sweep: every row of its configurations (earlier runs' included) and counts."""

    rows: list[dict]
    counts: Counts
    resumed: int
    """Rows found in the output from an earlier run."""
    simulated: int
    """Configurations event-simulated by this run."""
    screened: int
    """Configurations evaluated only in closed form by this run."""
    wall_s: float


def run_sweep(spec: SweepSpec, out: str | None = None, executor: str = "local", jobs: int | None = None,
              screening: bool = False, keep: float | None = None, progress: bool = True) -> Outcome:
    """Enumerate, skip what the output already holds, evaluate the rest, write rows as they finish."""
    t0 = time.perf_counter()
    configs, counts = enumerate_configs(spec)
    wanted = {c.key for c in configs}
    output = Output(out)
    done = {}
    for r in output.existing():
        done.setdefault(tuple(r[c] for c in KEY_COLUMNS), r)
    resumed = sum(k in wanted for k in done)
    todo = [c for c in configs if c.key not in done]
    new_rows, screened = [], 0
    if screening:
        rows, kept = screen(configs, spec.keep if keep is None else keep)
        for r, c in zip(rows, configs):
            if c.key not in done and c.key not in kept:
                output.write(r)
                new_rows.append(r)
                screened += 1
        todo = [c for c in todo if c.key in kept]
    bar = Progress(len(todo), progress)
    try:
        for row in executor_rows([(c.key, c.workload, c.hardware) for c in todo], executor, jobs):
            output.write(row)
            new_rows.append(row)
            bar.step()
    finally:
        bar.close()
    by_key = {**done, **{tuple(r[c] for c in KEY_COLUMNS): r for r in new_rows}}
    rows = [by_key[c.key] for c in configs if c.key in by_key]
    output.close(list(by_key.values()))
    return Outcome(rows, counts, resumed, len(todo), screened, time.perf_counter() - t0)


def best(rows: list[dict], k: int) -> list[dict]:
    """The k rows that fit with the highest throughput, i.e. the fastest where the global batch is
    fixed (ties by key, so the order is deterministic)."""
    fitting = [r for r in rows if r["fits"] == "true"]
    return sorted(fitting, key=lambda r: (-float(r["tokens_per_s"]), [r[c] for c in KEY_COLUMNS]))[:k]


def describe_row(r: dict) -> str:
    """A configuration in a few words."""
    chunks = f" v={r['virtual_stages']}" if r["schedule"] == "interleaved" else ""
    return (f"tp={r['tp']} pp={r['pp']} dp={r['dp']} sp={'on' if r['sp'] == 'true' else 'off'} "
            f"{r['recompute']} {r['schedule']}{chunks} b={r['micro_batch']} B={r['global_batch']}")


def table(rows: list[dict]) -> str:
    """Rows as a readable table."""
    head = (f"{'hardware':16s} {'tp':>3s} {'pp':>3s} {'dp':>4s} {'sp':>3s} {'recompute':9s} {'b':>2s} "
            f"{'B':>5s} {'schedule':11s} {'v':>2s} {'time s':>8s} {'tokens/s':>9s} {'MFU':>6s} {'peak GiB':>8s} "
            f"{'fits':>4s} tier")
    lines = [head]
    for r in rows:
        lines.append(f"{r['hardware'][:16]:16s} {r['tp']:>3s} {r['pp']:>3s} {r['dp']:>4s} "
                     f"{'on' if r['sp'] == 'true' else 'off':>3s} {r['recompute']:9s} {r['micro_batch']:>2s} "
                     f"{r['global_batch']:>5s} {r['schedule']:11s} {r['virtual_stages']:>2s} "
                     f"{float(r['iteration_time_s']):8.3f} {float(r['tokens_per_s']):9,.0f} {float(r['mfu']):6.1%} {int(r['peak_bytes']) / GIB:8.2f} "
                     f"{'yes' if r['fits'] == 'true' else 'no':>4s} {r['tier']}")
    return "\n".join(lines)


def summary(o: Outcome) -> str:
    """What the sweep did, in one line."""
    c = o.counts
    return (f"{c.configs} configurations ({c.grid_points} grid points: {c.invalid} invalid, "
            f"{c.duplicates} duplicates, {c.fallback} interleaved -> 1f1b); {o.resumed} from an earlier run, "
            f"{o.simulated} simulated, {o.screened} closed-form only; {o.wall_s:.1f} s")


# ---------------------------------------------------------------------------- Pareto figure
RECOMPUTE_COLOURS = {"none": ("#4C78A8", "#9ECAE9"), "selective": ("#F58518", "#FFBF79"),
                     "full": ("#54A24B", "#88D27A")}
"""(SP on, SP off) marker colours per recompute mode."""


def pareto_front(rows: list[dict]) -> list[dict]:
    """Fitting rows no other fitting row beats on both time and peak memory, by memory."""
    front, best_t = [], math.inf
    for r in sorted((r for r in rows if r["fits"] == "true"),
                    key=lambda r: (int(r["peak_bytes"]), float(r["iteration_time_s"]))):
        if float(r["iteration_time_s"]) < best_t:
            front.append(r)
            best_t = float(r["iteration_time_s"])
    return front


def _hover(r: dict) -> str:
    return (f"{r['hardware']}<br>{describe_row(r)}<br>{float(r['iteration_time_s']):.3f} s, "
            f"MFU {float(r['mfu']):.1%}<br>peak {int(r['peak_bytes']) / GIB:.2f} GiB "
            f"({'fits' if r['fits'] == 'true' else 'does not fit'}), {r['tier']}")


def pareto_figure(rows: list[dict], title: str = "sweep") -> dict:
    """Iteration time against peak HBM as a plotly figure (plain JSON-able dict, no plotly import):
    one trace per (recompute, SP), hollow markers for configurations that do not fit, the Pareto
    front of those that fit, and each machine's HBM capacity as a vertical line."""
    data = []
    for recompute, (on, off) in RECOMPUTE_COLOURS.items():
        for sp, colour in (("true", on), ("false", off)):
            group = [r for r in rows if r["recompute"] == recompute and r["sp"] == sp]
            if not group:
                continue
            data.append({
                "type": "scatter", "mode": "markers", "name": f"{recompute}, SP {'on' if sp == 'true' else 'off'}",
                "x": [int(r["peak_bytes"]) / GIB for r in group],
                "y": [float(r["iteration_time_s"]) for r in group],
                "text": [_hover(r) for r in group], "hovertemplate": "%{text}<extra></extra>",
                "marker": {"color": colour, "size": 9, "line": {"color": colour, "width": 1.5},
                           "symbol": ["circle" if r["fits"] == "true" else "circle-open" for r in group]},
            })
    front = pareto_front(rows)
    if front:
        data.append({"type": "scatter", "mode": "lines", "name": "Pareto front (fits)",
                     "x": [int(r["peak_bytes"]) / GIB for r in front],
                     "y": [float(r["iteration_time_s"]) for r in front],
                     "line": {"color": "#333333", "dash": "dot", "shape": "hv"}, "hoverinfo": "skip"})
    capacities = sorted({int(r["capacity_bytes"]) for r in rows})
    shapes = [{"type": "line", "xref": "x", "yref": "paper", "x0": c / GIB, "x1": c / GIB, "y0": 0, "y1": 1,
               "line": {"color": "#D62728", "dash": "dash", "width": 1.5}} for c in capacities]
    notes = [{"xref": "x", "yref": "paper", "x": c / GIB, "y": 1, "yanchor": "bottom", "showarrow": False,
              "text": f"HBM {c / GIB:.0f} GiB", "font": {"color": "#D62728"}} for c in capacities]
    return {"data": data, "layout": {
        "title": {"text": title}, "template": "plotly_white", "hovermode": "closest",
        "xaxis": {"title": {"text": "peak HBM per GPU (GiB)"}, "rangemode": "tozero"},
        "yaxis": {"title": {"text": "iteration time (s)"}, "type": "log"},
        "legend": {"title": {"text": "recompute, SP"}}, "shapes": shapes, "annotations": notes}}


def figure_page(spec: dict) -> str:
    """An HTML page of a figure spec, plotly.js inlined (drawn by the timeline package)."""
    from simsp.timeline import figure_html

    return figure_html(spec)


# ---------------------------------------------------------------------------- command line
def cmd_sweep(args) -> None:
    """`simsp sweep`: evaluate a spec's configurations, print the best that fit."""
    spec = load_spec(args.spec)
    if args.jobs is not None and args.jobs < 1:
        raise InputError("--jobs", "jobs", args.jobs, "must be a positive integer")
    if args.keep is not None and not 0 < args.keep <= 1:
        raise InputError("--keep", "keep", args.keep, "must be a fraction in (0, 1]")
    if args.pareto and not args.pareto.endswith(".html"):
        raise InputError(args.pareto, "--pareto", args.pareto, "must end in .html")
    outcome = run_sweep(spec, args.out, args.executor, args.jobs, args.screen, args.keep, not args.no_progress)
    print(summary(outcome), file=sys.stderr)
    top = best(outcome.rows, args.top)
    if args.json:
        print(json.dumps([_typed(r) for r in top], indent=2))
    else:
        print(f"best {len(top)} that fit, of {outcome.counts.configs}:" if top else "no configuration fits")
        if top:
            print(table(top))
    if args.pareto:
        from simsp.cli import write_text

        name = f"{spec.workload.name} on {spec.gpus} GPUs: iteration time vs peak HBM"
        write_text(args.pareto, figure_page(pareto_figure(outcome.rows, name)))


def compare_table(results) -> str:
    """One row per machine."""
    lines = [f"{'hardware':24s} {'time s':>9s} {'MFU':>6s} {'HFU':>6s} {'tokens/s':>10s} {'peak GiB':>9s} "
             f"{'HBM GiB':>8s} fits"]
    for r in results:
        lines.append(f"{r.hardware.name[:24]:24s} {r.iteration_time_s:9.3f} {r.mfu():6.1%} {r.hfu():6.1%} "
                     f"{r.workload.training.global_batch * r.workload.model.seq_len / r.iteration_time_s:10,.0f} "
                     f"{r.memory.peak_bytes / GIB:9.2f} {r.memory.capacity_bytes / GIB:8.0f} "
                     f"{'yes' if r.memory.fits else 'no'}")
    return "\n".join(lines)


def cmd_compare(args) -> None:
    """`simsp compare`: one workload on several machines."""
    from simsp.cli import overrides
    from simsp.config import load_hardware, load_workload
    from simsp.report import describe, run

    w = load_workload(args.workload, overrides(args))
    machines = [load_hardware(p) for p in (args.hardware or [None])]  # every file checked before running
    results = [run(w, hw) for hw in machines]
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(f"{w.name}: {describe(w, machines[0]).split(': ', 1)[1]}")
        print(compare_table(results))


def register(sub) -> None:
    """Add `sweep` and `compare` to the CLI's subparsers (cli.parser() calls this)."""
    from simsp import cli

    p = sub.add_parser("sweep", help="evaluate a grid of configurations", description=__doc__.split("\n\n")[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("spec", help="sweep spec YAML (see workloads/sweeps/)")
    p.add_argument("--out", metavar="FILE.csv|FILE.parquet", help="rows, appended as they finish; resumed")
    p.add_argument("--executor", default="local", metavar="local|dask://HOST:PORT")
    p.add_argument("--jobs", type=int, help="local worker processes (default: all CPUs)")
    p.add_argument("--top", type=int, default=10, help="how many of the best fitting configurations to print")
    p.add_argument("--screen", action="store_true",
                   help="closed form for all, event simulation for the best --keep share of those that fit")
    p.add_argument("--keep", type=float, help=f"share kept by --screen (default {DEFAULT_KEEP}, or the spec's keep)")
    p.add_argument("--pareto", metavar="OUT.html", help="time vs peak memory figure")
    p.add_argument("--json", action="store_true", help="print the best rows as a JSON list")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_sweep)

    c = sub.add_parser("compare", help="one workload on several machines", conflict_handler="resolve",
                       description="One workload on several hardware files: time, MFU, peak HBM, fits.")
    cli._add_workload_args(c)
    c.add_argument("--hardware", nargs="+", metavar="HW.yaml", help="hardware YAMLs (default the DGX A100 80GB)")
    c.set_defaults(func=cmd_compare)


def parser() -> argparse.ArgumentParser:
    """A parser with just `sweep` and `compare` (until cli.parser() calls register)."""
    from simsp.cli import _Parser

    top = _Parser(prog="simsp")
    register(top.add_subparsers(dest="command", required=True, parser_class=_Parser))
    return top


def main(argv=None) -> int:
    """`sweep` / `compare` with the CLI's error handling: bad input is one line and exit 2."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    try:
        args.func(args)
    except InputError as e:
        print(f"simsp: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        sys.stderr.close()
    return 0


def main_sweep(argv=None) -> int:
    """`simsp sweep ARGS` without the CLI's other commands."""
    return main(["sweep", *(argv or [])])


def main_compare(argv=None) -> int:
    """`simsp compare ARGS` without the CLI's other commands."""
    return main(["compare", *(argv or [])])


if __name__ == "__main__":
    sys.exit(main())
