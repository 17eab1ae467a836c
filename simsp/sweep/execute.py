"""Evaluating configurations: the event tier (the engine), the closed-form screening tier, and
the executors that run event evaluations in parallel (a local process pool, or dask.distributed).

Each evaluation maps a picklable task (key, workload, hardware) to an output row.
"""

import math
import os
import time

from simsp.errors import InputError
from simsp.spec.hardware import HardwareSpec
from simsp.spec.workload import Workload
from simsp.sweep.configs import Config
from simsp.sweep.rows import make_row, ranked, row_key


# ---------------------------------------------------------------------------- the two tiers
def event_result(w: Workload, hw: HardwareSpec):
    """api.run with the memoised cost model: the same Result, each GEMM shape looked up once
    per process instead of once per configuration."""
    from simsp.cost import cost_model
    from simsp.sim.engine import simulate
    from simsp.sim.memory import memory_report
    from simsp.sim.plan import build_plan
    from simsp.sim.result import Result

    plan = build_plan(w, cost_model(hw))
    return Result(w, hw, plan, simulate(plan), memory_report(w, hw))


def tokens_per_s(result) -> float:
    """Training throughput of a Result: the global batch's tokens over the iteration time."""
    return result.tokens_per_s


def evaluate_event(task: tuple) -> dict:
    """(key, workload, hardware) -> output row, by the event simulation (picklable, for workers)."""
    key, w, hw = task
    r = event_result(w, hw)
    return make_row(
        key,
        r.iteration_time_s,
        r.mfu(),
        r.hfu(),
        tokens_per_s(r),
        r.memory.peak_bytes,
        r.memory.capacity_bytes,
        r.memory.fits,
        "event",
        r.breakdown()["bubble_s"],
    )


def evaluate_analytic(task: tuple) -> dict:
    """(key, workload, hardware) -> output row, in closed form."""
    from simsp.sim.closed_form import estimate

    key, w, hw = task
    return analytic_row(key, estimate(w, hw))


def analytic_row(key: tuple, e) -> dict:
    """The output row of a closed-form Estimate."""
    return make_row(
        key,
        e.iteration_time_s,
        e.mfu,
        e.hfu,
        e.tokens_per_s,
        e.peak_bytes,
        e.capacity_bytes,
        e.fits,
        "analytic",
        e.bubble_s,
    )


def screen(configs: list[Config], keep: float) -> tuple[list[dict], set]:
    """Closed-form rows for every configuration, and the keys of the best `keep` share of those
    that fit (at least one when any fits), ranked by closed-form throughput (the iteration time
    where the global batch is fixed; ties by key). Evaluated as columns (closed_form_columns:
    the same estimates, bit for bit)."""
    from simsp.sim.closed_form_columns import estimate_many

    found = estimate_many([c.workload for c in configs], [c.hardware for c in configs])
    rows = [analytic_row(c.key, found.row(i)) for i, c in enumerate(configs)]
    fitting = ranked(rows)
    n = math.ceil(keep * len(fitting)) if fitting else 0
    return rows, {row_key(r) for r in fitting[:n]}


# ---------------------------------------------------------------------------- executors
def _work(task: tuple) -> int:
    """Relative engine cost of a task: actions replayed (for longest-first submission)."""
    w = task[1]
    return w.parallel.pp * w.parallel.chunks * w.microbatches


def _end_with_parent(parent_pid: int) -> None:
    """Pool worker initializer: the worker ends when the sweep that started it does, even when
    the sweep is killed outright (SIGKILL leaves a pool's workers blocked on their queue):
    Linux's parent-death signal where there is one, and a watch on the parent pid everywhere."""
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(1)
    import threading

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True, name="simsp-parent-watch").start()


def _local(tasks: list, jobs: int):
    """Rows in task order from a process pool (in this process when one job or task); results
    that finish early wait for those before them, so the output's order is the same every run."""
    if jobs <= 1 or len(tasks) <= 1:
        for t in tasks:
            yield evaluate_event(t)
        return
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(
        max_workers=jobs, initializer=_end_with_parent, initargs=(os.getpid(),)
    ) as pool:
        futures = [pool.submit(evaluate_event, t) for t in tasks]
        try:
            for f in futures:
                yield f.result()
        finally:
            for f in futures:
                f.cancel()


def local_jobs(jobs: int | None, tasks: int) -> int:
    """Worker processes for a local pool: as asked (default all CPUs), but never more than the
    tasks or the CPUs."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(jobs or cpus or 1, tasks, cpus or 1))


def dask_address(executor: str) -> str:
    """dask://HOST:PORT -> tcp://HOST:PORT (an address with its own scheme is kept)."""
    rest = executor[len("dask://") :]
    return rest if "://" in rest else "tcp://" + rest


def _dask(tasks: list, executor: str):
    """Rows in task order from a dask.distributed scheduler."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            "--executor",
            "executor",
            executor,
            "needs dask.distributed: pip install 'dask[distributed]'",
        ) from None
    try:
        client = Client(dask_address(executor), timeout=30)
    except (OSError, TimeoutError) as e:
        raise InputError(
            "--executor", "executor", executor, f"no dask scheduler answers there ({e})"
        ) from None
    try:
        futures = client.map(evaluate_event, tasks, pure=False)
        for f in futures:  # in task order, so the output's order is the same every run
            yield f.result()
    finally:
        client.close()


def executor_rows(tasks: list, executor: str = "local", jobs: int | None = None):
    """Evaluate tasks by event simulation on the chosen executor; yields rows as they finish."""
    tasks = sorted(tasks, key=_work, reverse=True)  # longest first: shorter tail
    if executor == "local":
        yield from _local(tasks, local_jobs(jobs, len(tasks)))
    elif executor.startswith("dask://"):
        yield from _dask(tasks, executor)
    else:
        raise InputError("--executor", "executor", executor, "must be local or dask://HOST:PORT")
