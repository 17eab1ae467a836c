"""The CPU costs a sweep's work estimate prices its counts at (simsp/sweep/work.py), measured here
beside the constants, and the estimate against the CPU time of whole sweeps.

Measured in process CPU time on one core, each phase on its own:
* enumeration per grid point, as columns and one point at a time, on a 92,160-point GPT-3 175B
  grid with two keys outside the columns (overlap_grad_reduce, tp_comm_overlap);
* screening per configuration, on the array path and on the scalar closed form, cold caches;
* the scalar closed form's schedule walk per stage-chunk-microbatch (zero-bubble schedules);
* an event simulation: a least-squares line of CPU seconds against actions over a sample.
Then three sweeps end to end (`simsp sweep`, one worker) against their estimates.

    python benchmarks/sweep_work.py [--sample N]
"""

import argparse
import dataclasses
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from simsp.errors import InputError  # noqa: E402
from simsp.io.config import load_hardware, load_workload  # noqa: E402
from simsp.sim.budget import SECONDS_PER_ACTION, memory_walks, work  # noqa: E402
from simsp.sim.closed_form import estimate  # noqa: E402
from simsp.sim.closed_form_columns import clear_caches, estimate_many, vectorisable  # noqa: E402
from simsp.sim.workload_columns import from_workloads  # noqa: E402
from simsp.spec.rules import first_broken  # noqa: E402
from simsp.sweep import (  # noqa: E402
    SweepSpec,
    enumerate_configs,
    event_result,
    run_sweep,  # noqa: E402
)
from simsp.sweep import work as W  # noqa: E402
from simsp.sweep.grid_columns import column_grids, enumerate_columns, enumerate_mixed  # noqa: E402

GRID = (
    ("tp", (1, 2, 4, 8)),
    ("pp", (1, 2, 4, 8, 16)),
    ("sp", (True, False)),
    ("recompute", ("none", "selective", "full")),
    ("micro_batch", (1, 2, 4, 8)),
    ("schedule", ("1f1b", "interleaved", "gpipe")),
    ("virtual_stages", (2, 3, 4, 6)),
    ("global_batch", (256, 512, 1024, 1536)),
    ("overlap_grad_reduce", (True, False)),
    ("tp_comm_overlap", (True, False)),
)
BIG = tuple(
    (k, (256, 512, 768, 1024, 1280, 1536, 2048, 3072) if k == "global_batch" else v)
    for k, v in GRID
)
"""GRID with eight global batches: 184,320 points, near --max-grid (docs/usage.md's example)."""
SWEEPS = (
    ["workloads/sweeps/gpt3-175b-64gpu.yaml"],
    ["workloads/sweeps/gpt3-175b-128gpu-schedules.yaml"],
    ["workloads/sweeps/gpt3-175b-128gpu-schedules.yaml", "--screen"],
)


def _cpu(f):
    t0 = time.process_time()
    out = f()
    return time.process_time() - t0, out


def _row(what: str, measured: float, constant: float) -> None:
    print(f"{what:<44} measured {measured * 1e6:9.1f} us   constant {constant * 1e6:9.1f} us")


def _sweep_cpu(argv: list[str]) -> float:
    """CPU seconds (this process's children) of one `simsp sweep` run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "simsp", "sweep", *argv, "--jobs", "1", "--no-progress"]
        cmd += ["--out", str(Path(tmp) / "rows.csv")]
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, default=120, help="event simulations timed")
    args = ap.parse_args()
    hw = load_hardware(ROOT / "hardware" / "dgx-a100-80gb.yaml")
    base = load_workload(ROOT / "workloads" / "gpt3-175b.yaml")
    spec = SweepSpec("benchmark", base, (hw,), 128, GRID)
    points = int(np.prod([len(v) for _, v in GRID]))

    one = SweepSpec("one point", base, (hw,), 128, (("tp", (8,)),))
    t_grid, _ = _cpu(lambda: [enumerate_columns(one, reason=False).configs() for _ in range(200)])
    _row("a column grid, besides its points", t_grid / 200, W.COLUMN_GRID_S)
    grids = column_grids(spec)
    t_columns, found = _cpu(lambda: [enumerate_columns(s, reason=False) for s in _outer(spec)])
    _row(
        "a grid point, as columns",
        (t_columns - grids * W.COLUMN_GRID_S) / points,
        W.COLUMN_POINT_S,
    )
    n_configs = sum(g.counts.configs for g in found)
    t_configs, _ = _cpu(lambda: [g.configs() for g in found])
    _row(f"a valid configuration, built ({n_configs:,})", t_configs / n_configs, W.CONFIG_S)
    t_mixed, (configs, counts) = _cpu(lambda: enumerate_mixed(spec))
    counted = W.enumeration(points, grids, counts.configs).seconds
    print(f"enumerate_mixed, {points:,} points: {t_mixed:.2f} s CPU, {counted:.2f} s counted")
    t_scalar, _ = _cpu(lambda: enumerate_configs(spec))
    _row("a grid point, one at a time", t_scalar / points, W.SCALAR_POINT_S)

    ws = [c.workload for c in configs]
    array, scalar = [], []
    for cols, rows in from_workloads(ws):
        covered = vectorisable(cols)
        array += [ws[i] for i in rows[covered].tolist()]
        scalar += [ws[i] for i in rows[~covered].tolist() if not memory_walks(ws[i])]
    clear_caches()
    t_array, _ = _cpu(lambda: estimate_many(array, hw))
    _row(f"screening per array row ({len(array):,})", t_array / len(array), W.VECTOR_ROW_S)
    clear_caches()
    t_one, _ = _cpu(lambda: [estimate(w, hw) for w in scalar])
    _row(f"screening per scalar row ({len(scalar):,})", t_one / len(scalar), W.SCALAR_ROW_S)

    rng = random.Random(0)
    zb = [
        dataclasses.replace(
            base, parallel=dataclasses.replace(base.parallel, schedule=s, virtual_stages=1)
        )
        for s in ("zb-h1", "zbv", "dualpipev")
    ]
    zb = [w for w in zb if first_broken(w) is None]
    walked = []
    for w in zb:
        clear_caches()
        t, _ = _cpu(lambda w=w: estimate(w, hw))
        walked.append((t - W.SCALAR_ROW_S) / work(w).actions)
    _row("closed-form walk per action (zero-bubble, V)", float(np.median(walked)), W.WALK_ACTION_S)

    sample = rng.sample(ws, min(args.sample, len(ws)))
    xs, ys = [], []
    for w in sample:
        t, _ = _cpu(lambda w=w: event_result(w, hw))
        xs.append(work(w).actions)
        ys.append(t)
    fixed, per = np.linalg.lstsq(np.vstack([np.ones(len(xs)), xs]).T, ys, rcond=None)[0]
    _row(f"event simulation, fixed ({len(xs)} runs)", fixed, W.EVENT_RUN_S)
    _row("event simulation, per action", per, SECONDS_PER_ACTION)

    from simsp.sweep import load_spec
    from simsp.sweep.runner import enumerate_all
    from simsp.sweep.spec import grid_points

    for argv in SWEEPS:
        s = load_spec(ROOT / argv[0])
        cs, counts = enumerate_all(s)
        listing = W.enumeration(grid_points(s), column_grids(s), counts.configs)
        size = W.evaluation([c.workload for c in cs], False, listing)
        what = f"{Path(argv[0]).stem} {' '.join(argv[1:])}".strip()
        if "--screen" in argv:
            print(f"{what}: measured {_sweep_cpu(argv):.1f} s CPU (estimate: see its stderr)")
            continue
        print(f"{what}: estimate {size.seconds:.1f} s, measured {_sweep_cpu(argv):.1f} s CPU")

    big = dataclasses.replace(spec, grid=BIG)  # the grid at --max-grid: refused, with the estimate
    for screening in (False, True):
        try:
            run_sweep(big, progress=False, screening=screening, keep=0.1)
            print("the 184,320-point grid ran (not refused)")
        except InputError as e:
            print(f"184,320-point grid{' --screen' if screening else ''}: {e}")


def _outer(spec):
    """The column grids enumerate_mixed runs: one per combination of the outer keys."""
    import itertools

    from simsp.sweep.configs import with_values

    outer = [(k, v) for k, v in spec.grid if k in ("overlap_grad_reduce", "tp_comm_overlap")]
    inner = tuple((k, v) for k, v in spec.grid if (k, v) not in outer)
    for combo in itertools.product(*(v for _, v in outer)):
        values = dict(zip((k for k, _ in outer), combo, strict=True))
        yield dataclasses.replace(spec, workload=with_values(spec.workload, values), grid=inner)


if __name__ == "__main__":
    main()
