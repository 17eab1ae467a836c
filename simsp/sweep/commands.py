"""The `simsp sweep` and `simsp compare` command lines: argparse registration (`register`, which
cli.parser() calls), `cmd_sweep` with its best-K table, and stand-alone entry points."""

import argparse
import json
import sys

from simsp.budget import DEFAULT_MAX_ACTIONS
from simsp.errors import InputError

from .compare import cmd_compare
from .pareto import figure_page, pareto_figure
from .rows import on_off, peak_gib, ranked, typed
from .runner import Outcome, run_sweep
from .spec import DEFAULT_KEEP, DEFAULT_MAX_GRID, check_keep, load_spec


def best(rows: list[dict], k: int) -> list[dict]:
    """The k rows that fit with the highest throughput, i.e. the fastest where the global batch is
    fixed (ties by key, so the order is deterministic)."""
    return ranked(rows)[:k]


def table(rows: list[dict]) -> str:
    """Rows as a readable table."""
    width = max([16, *(len(r["hardware"]) for r in rows)])
    head = (
        f"{'hardware':{width}s} {'tp':>3s} {'pp':>3s} {'dp':>4s} {'sp':>3s} {'recompute':9s} "
        f"{'b':>2s} {'B':>5s} {'schedule':11s} {'v':>2s} {'time s':>8s} {'bubble s':>8s} "
        f"{'tokens/s':>9s} {'MFU':>6s} "
        f"{'peak GiB':>8s} {'fits':>4s} tier"
    )
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['hardware']:{width}s} {r['tp']:>3s} {r['pp']:>3s} {r['dp']:>4s} "
            f"{on_off(r['sp']):>3s} {r['recompute']:9s} {r['micro_batch']:>2s} "
            f"{r['global_batch']:>5s} {r['schedule']:11s} {r['virtual_stages']:>2s} "
            f"{float(r['iteration_time_s']):8.3f} {float(r['bubble_s']):8.3f} "
            f"{float(r['tokens_per_s']):9,.0f} "
            f"{float(r['mfu']):6.1%} {peak_gib(r):8.2f} "
            f"{'yes' if r['fits'] == 'true' else 'no':>4s} {r['tier']}"
        )
    return "\n".join(lines)


def summary(o: Outcome) -> str:
    """What the sweep did, in one line."""
    c = o.counts
    return (
        f"{c.configs} configurations ({c.grid_points} grid points: {c.invalid} invalid, "
        f"{c.duplicates} duplicates, {c.fallback} interleaved -> 1f1b"
        f"{f', {c.too_big} over --max-actions' if c.too_big else ''}); {o.resumed} from an "
        f"earlier run, {o.simulated} simulated, {o.screened} closed-form only; {o.wall_s:.1f} s"
    )


def cmd_sweep(args) -> None:
    """`simsp sweep`: evaluate a spec's configurations, print the best that fit."""
    from simsp.textfile import check_output

    for flag in ("jobs", "max_grid", "max_actions"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise InputError(
                f"--{flag.replace('_', '-')}", flag, value, "must be a positive integer"
            )
    if args.top < 0:
        raise InputError("--top", "top", args.top, "must not be negative")
    if args.keep is not None:
        check_keep("--keep", "keep", args.keep)
    if args.pareto:
        check_output(args.pareto, (".html",))  # before the sweep, not after it
    if args.executor != "local" and not args.executor.startswith("dask://"):
        raise InputError(
            "--executor", "executor", args.executor, "must be local or dask://HOST:PORT"
        )
    spec = load_spec(args.spec, args.hardware_set)
    outcome = run_sweep(
        spec,
        args.out,
        args.executor,
        args.jobs,
        args.screen,
        args.keep,
        not args.no_progress,
        args.max_grid,
        args.max_actions,
    )
    print(summary(outcome), file=sys.stderr)
    top = best(outcome.rows, args.top)
    if args.json:
        print(json.dumps([typed(r) for r in top], indent=2))
    else:
        print(
            f"best {len(top)} that fit, of {outcome.counts.configs}:"
            if top
            else "no configuration fits"
        )
        if top:
            print(table(top))
    if args.pareto:
        from simsp.textfile import write_text

        name = f"{spec.workload.name} on {spec.gpus} GPUs: iteration time vs peak HBM"
        write_text(args.pareto, figure_page(pareto_figure(outcome.rows, name)))


def register(sub) -> None:
    """Add `sweep` and `compare` to the CLI's subparsers (cli.parser() calls this)."""
    from simsp import arguments
    from simsp import sweep as package

    p = sub.add_parser(
        "sweep",
        help="evaluate a grid of configurations",
        description=package.__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("spec", help="sweep spec YAML (see workloads/sweeps/)")
    arguments.add_set_arg(p)
    p.add_argument(
        "--out", metavar="FILE.csv|FILE.parquet", help="rows, appended as they finish; resumed"
    )
    p.add_argument(
        "--executor",
        default="local",
        metavar="local|dask://HOST:PORT",
        help="where event simulations run: a local process pool, or an existing Dask cluster",
    )
    p.add_argument("--jobs", type=int, help="local worker processes (default: all CPUs)")
    p.add_argument(
        "--top", type=int, default=10, help="how many of the best fitting configurations to print"
    )
    p.add_argument(
        "--screen",
        action="store_true",
        help="closed form for all, event simulation for the best --keep share of those that fit",
    )
    p.add_argument(
        "--keep",
        type=float,
        help=f"share kept by --screen (default {DEFAULT_KEEP}, or the spec's keep)",
    )
    p.add_argument("--pareto", metavar="OUT.html", help="time vs peak memory figure")
    p.add_argument(
        "--max-grid",
        type=int,
        default=DEFAULT_MAX_GRID,
        metavar="N",
        help=f"most grid points to enumerate (default {DEFAULT_MAX_GRID:,})",
    )
    p.add_argument(
        "--max-actions",
        type=int,
        default=DEFAULT_MAX_ACTIONS,
        metavar="N",
        help="skip configurations of more stage x chunk x microbatch actions "
        f"(default {DEFAULT_MAX_ACTIONS:,})",
    )
    p.add_argument("--json", action="store_true", help="print the best rows as a JSON list")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(func=cmd_sweep)

    c = sub.add_parser(
        "compare",
        help="one workload on several machines, or one machine under what-ifs",
        conflict_handler="resolve",
        description="One workload on several hardware files, each also under --what-if changes "
        "of a hardware key: time, MFU, communication, peak HBM, fits.",
    )
    arguments.add_workload_args(c)
    c.add_argument(
        "--hardware",
        nargs="+",
        metavar="HW.yaml",
        help="hardware YAMLs (default the DGX A100 80GB)",
    )
    c.add_argument(
        "--what-if",
        dest="what_if",
        action="append",
        default=[],
        metavar="SECTION.KEY=V1,V2",
        help="also run each machine with this numeric hardware key at each value, one row a "
        "value, against the machine's own row (repeatable), e.g. network.nic_gbps=200,800",
    )
    c.set_defaults(func=cmd_compare)
