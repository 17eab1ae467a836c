"""The `simsp sweep` and `simsp compare` command lines: argparse registration (`register`, which
cli.main.parser() calls) and `cmd_sweep` (the best-K table is sweep.summary's)."""

import argparse
import json
import sys

from simsp.cli.compare import cmd_compare
from simsp.errors import InputError
from simsp.sweep.pareto import figure_page, pareto_figure
from simsp.sweep.rows import typed
from simsp.sweep.runner import run_sweep
from simsp.sweep.spec import DEFAULT_KEEP, DEFAULT_MAX_GRID, check_keep, load_spec
from simsp.sweep.summary import best, summary, table
from simsp.sweep.work import DEFAULT_MAX_SECONDS


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
    if args.executor != "local" and not args.executor.startswith("dask://"):
        raise InputError(
            "--executor", "executor", args.executor, "must be local or dask://HOST:PORT"
        )
    spec = load_spec(args.spec, args.hardware_set, args.allow_outside)
    if args.pareto:  # before the sweep, not after it; never over the spec or what it names
        check_output(args.pareto, (".html",), inputs=spec.inputs)
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
        args.max_seconds,
    )
    if args.pareto:  # written before anything is printed: a failure is the one line
        from simsp.textfile import write_text

        name = f"{spec.workload.name} on {spec.gpus} GPUs: iteration time vs peak HBM"
        write_text(args.pareto, figure_page(pareto_figure(outcome.rows, name)))
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
            if len(spec.hardware) == 1:
                from simsp.present.accuracy import accuracy_of, band_note

                t = spec.workload.training
                print(band_note(accuracy_of(spec.hardware[0], t.precision, stack=t.knob("stack"))))


def register(sub) -> None:
    """Add `sweep` and `compare` to the CLI's subparsers (cli.main.parser() calls this)."""
    from simsp import sweep as package
    from simsp.cli import arguments

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
        "--allow-outside",
        action="store_true",
        help="let the spec name files outside its folder and the working directory",
    )
    p.add_argument(
        "--max-grid",
        type=int,
        default=DEFAULT_MAX_GRID,
        metavar="N",
        help=f"most grid points to enumerate (default {DEFAULT_MAX_GRID:,})",
    )
    arguments.add_max_actions(p, "configurations past it are skipped")
    p.add_argument(
        "--max-seconds",
        type=float,
        default=DEFAULT_MAX_SECONDS,
        metavar="S",
        help=f"most CPU seconds the sweep is estimated to take, refused up front past it "
        f"(default {DEFAULT_MAX_SECONDS:g})",
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
