"""`simsp validate` on the command line: its flags and what it runs."""

import argparse
import json
import os
import sys

from simsp.errors import InputError
from simsp.present.accuracy import ACCURACY_FILE
from simsp.spec.knobs import KNOBS
from simsp.textfile import check_output, check_output_dir, write_text
from simsp.validate.names import SETS

CASE_FIELDS = ("hardware", "framework")
"""validate/metrics.py's fields of a case beside its knobs (a test checks they agree)."""
BY_FIELDS = tuple(k.name for k in KNOBS) + CASE_FIELDS


def cmd_validate(args) -> None:
    """`simsp validate`: every set's errors, optionally the per-case CSV and the scatter page."""
    from simsp.validate.accuracy import MEASURED_SETS, STACK_SETS, accuracy_json
    from simsp.validate.report import json_summary, table, write_outputs
    from simsp.validate.runner import run_validation

    cpus = os.cpu_count() or 1
    if args.workers is not None and not 1 <= args.workers <= cpus:
        raise InputError(
            "--workers", "workers", args.workers, f"must be 1 to {cpus} processes (the CPUs)"
        )
    sets = tuple(args.set) if args.set else SETS
    if args.accuracy:  # the accuracy file needs every measured set, whatever else was asked
        check_output(args.accuracy, (".json",))
        sets = tuple(s for s in SETS if s in sets or s in MEASURED_SETS + STACK_SETS)
    if args.out:  # before the sets run: the files this run may write
        from simsp.validate.cases import PEER_SETS
        from simsp.validate.report import OUT_HEADERS

        peers = any(s in PEER_SETS for s in sets)
        check_output_dir(
            args.out, {k: v for k, v in OUT_HEADERS.items() if peers or k != "peers.html"}
        )
    v = run_validation(sets, workers=args.workers)
    if args.accuracy:
        write_text(args.accuracy, accuracy_json(v.results))
        print(f"wrote {args.accuracy}", file=sys.stderr)
    if args.out:
        written = write_outputs(v, args.out)
        if not args.json:
            print("wrote " + ", ".join(map(str, written)), file=sys.stderr)
    print(json.dumps(json_summary(v, args.by), indent=2)) if args.json else print(
        table(v, args.by, args.verbose)
    )


def register(sub) -> argparse.ArgumentParser:
    """Add the `validate` subcommand to the CLI's subparsers."""
    help_ = (
        "compare predictions with measured iterations (the paper's Tables 4/5, vTrain's multi-node "
        "runs) and with vTrain's predictor (its single-node file)"
    )
    p = sub.add_parser("validate", help=help_, description=help_)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--verbose",
        action="store_true",
        help="print each set's cases, worst cases, memory, repeats and skipped rows too",
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write DIR/cases.csv, DIR/errors.html (error per measured case, by set, naive beside) "
        "and, with a peer simulator's set, DIR/peers.html",
    )
    p.add_argument(
        "--set",
        nargs="+",
        choices=SETS,
        metavar="NAME",
        help=f"sets to run (default all: {', '.join(SETS)})",
    )
    p.add_argument(
        "--by",
        choices=BY_FIELDS,
        metavar="SETTING",
        help=f"also each set's errors grouped by one setting ({', '.join(BY_FIELDS)})",
    )
    p.add_argument(
        "--accuracy",
        metavar="FILE",
        help="also write simsp's errors on the measured sets by hardware file, GPU and precision "
        "to FILE, a .json path (`simsp run` reads "
        f"{ACCURACY_FILE.relative_to(ACCURACY_FILE.parents[3])}); runs every measured set, "
        "whatever --set asks, and prints them too",
    )
    p.add_argument("--workers", type=int, default=None, help="processes (default: all CPUs)")
    p.set_defaults(func=cmd_validate)
    return p
