"""The `simsp plan` command line: how to train this model on N GPUs of this kind.

    simsp plan --model workloads/models/llama-3.1-70b/config.json --gpus 256 \\
        --hardware dgx-h100 --seq-len 8192 --global-batch 512

searches every valid layout (sweep/layouts.py) in closed form, event-simulates the fastest that
fit and prints the best with the `simsp run` command that reproduces each (sweep/planner.py).
Any setting given as a flag (`--tp 8`, `--precision fp8`, `--recompute full`) is fixed, not
searched; a workload file gives the settings a plan does not search (precision, stack, overlap).
"""

import argparse
import csv
import io
import json

from simsp.cli.arguments import add_max_actions, add_workload_args, hardware_of, overrides
from simsp.errors import InputError
from simsp.spec.knobs import KNOBS
from simsp.sweep.layouts import SEARCHED
from simsp.sweep.planner import DEFAULT_SIMULATE, command, flag, search
from simsp.sweep.rows import COLUMNS, fmt, typed

LOAD_LAYOUT = {
    "tp": 1,
    "cp": 1,
    "pp": 1,
    "dp": 1,
    "ep": 1,
    "etp": 0,
    "schedule": "1f1b",
    "virtual_stages": 1,
}
"""The layout a plan's workload is read with (one GPU), so that a file made for another GPU
count or batch still reads: every key of it is searched, and each printed command sets it."""


def _positive(flag_name: str, value) -> None:
    if value is not None and value < 1:
        raise InputError(flag_name, flag_name.lstrip("-"), value, "must be a positive integer")


def _given(args) -> dict:
    """The knob flags given on the command line: {knob: value}."""
    return {k: getattr(args, k.name) for k in KNOBS if getattr(args, k.name, None) is not None}


def _workload(args):
    """(workload, GPUs): the model and the settings a plan keeps, and the GPUs it plans for."""
    from simsp.io.config import load_workload

    if args.dp is not None:
        raise InputError("--dp", "dp", args.dp, "follows from --gpus (gpus / (tp cp pp))")
    gpus = args.gpus
    if gpus is None:
        if args.workload is None:
            raise InputError("--gpus", "gpus", None, "is required with --model and no workload")
        gpus = load_workload(args.workload).parallel.gpus
    given = overrides(args)
    if args.global_tokens is not None:
        if args.global_batch is not None:
            raise InputError(
                "--global-tokens",
                "global_tokens",
                args.global_tokens,
                "or --global-batch, not both",
            )
        seq = args.seq_len
        if seq is None and args.workload:
            seq = load_workload(args.workload).model.seq_len
        if not seq or args.global_tokens % seq:
            raise InputError(
                "--global-tokens",
                "global_tokens",
                args.global_tokens,
                f"must be a multiple of the sequence length ({seq or 'give --seq-len'})",
            )
        given["training"]["global_batch"] = args.global_tokens // seq
    par = dict(given["parallel"])
    for key, value in LOAD_LAYOUT.items():
        if given["parallel"].get(key) is None:
            given["parallel"][key] = value
    try:
        return load_workload(args.workload, given), gpus
    except InputError:
        if args.workload is None:
            raise
        # a layout that only fits the file's own split (pipeline_layout, first_stage_layers):
        # read the file as it is; the search keeps its split where the split allows
        given["parallel"] = par
        return load_workload(args.workload, given), gpus


def _base(args, w) -> list[str]:
    """The plan's own inputs as `simsp run` arguments: the files, the batch and every fixed
    setting; a row's command adds the layout."""
    base = [args.workload] if args.workload else []
    if args.hf_model:
        base += ["--model", args.hf_model]
    if args.hardware:
        base += ["--hardware", args.hardware]
    for text in args.hardware_set:
        base += ["--set", text]
    base += ["--seq-len", str(w.model.seq_len), "--global-batch", str(w.training.global_batch)]
    for k, value in _given(args).items():
        if k.short not in SEARCHED and k.name not in ("seq_len", "global_batch"):
            base += flag(k.short, fmt(value))
    return base


def cmd_plan(args) -> None:
    """`simsp plan`: the best layouts of a model on N GPUs, each with its `simsp run` command."""
    from simsp.io.config import load_hardware
    from simsp.sweep.summary import plan_table
    from simsp.textfile import check_output, csv_safe, write_text

    for name in ("gpus", "top", "simulate", "jobs", "max_actions", "global_tokens"):
        _positive("--" + name.replace("_", "-"), getattr(args, name))
    header = (",".join(COLUMNS) + "\n").encode()
    for path, suffixes, start in ((args.out, (".csv",), header), (args.pareto, (".html",), b"")):
        if path:
            check_output(path, suffixes, (args.workload, args.hf_model, args.hardware), start)
    w, gpus = _workload(args)
    hw = load_hardware(hardware_of(args), args.hardware_set)
    fixed = {k.short: v for k, v in _given(args).items() if k.short in SEARCHED}
    every = bool(args.out or args.pareto)
    found = search(w, hw, gpus, fixed, args.simulate, args.jobs, args.max_actions, "plan", every)
    searched = tuple(k for k, _ in found.space.values)
    top = found.simulated[: args.top]
    base = _base(args, w)
    commands = [command(base, r, searched) for r in top]
    c = found.counts
    title = (
        f"{w.name} on {gpus} x {hw.label}, sequence {w.model.seq_len:,}, global batch "
        f"{w.training.global_batch:,} ({w.training.global_batch * w.model.seq_len / 1e6:.2f}M "
        "tokens)"
    )
    evaluated = len(found.evaluated)
    account = (
        f"{c.configs:,} valid layouts of {c.grid_points:,} searched ({c.invalid:,} invalid, "
        f"{c.duplicates:,} the same run, {c.too_big:,} over --max-actions); "
        + (
            f"{evaluated:,} in closed form, "
            if every
            else f"{evaluated + found.over_hbm:,} in closed form ({found.over_hbm:,} do not fit; "
            f"the other {c.configs - evaluated - found.over_hbm:,} cannot beat those that do: "
            "their layer passes alone take longer), "
        )
        + f"{found.fitting:,} fit; the {len(found.simulated)} fastest that fit "
        "simulated as events"
    )
    from simsp.present.accuracy import accuracy_of, band_note, measured_range

    t = w.training
    group = accuracy_of(hw, t.precision, stack=t.knob("stack"))
    if args.json:
        print(
            json.dumps(
                {
                    "title": title,
                    "layouts": c.configs,
                    "evaluated": len(found.evaluated),
                    "fit": found.fitting,
                    "simulated": len(found.simulated),
                    "best": [
                        {
                            **typed(r),
                            "range_s": list(measured_range(float(r["iteration_time_s"]), group))
                            if group
                            else None,
                            "command": cmd,
                        }
                        for r, cmd in zip(top, commands, strict=True)
                    ],
                },
                indent=2,
            )
        )
    else:
        print(title)
        print(account)
        if not top:
            print("no layout fits")
        else:
            print(plan_table(top, searched, hw))
            print(band_note(group))
            print("\nto reproduce a row:")
            for i, cmd in enumerate(commands, 1):
                print(f"{i:>2d}  {cmd}")
    rows = _all_rows(found)
    if args.out:
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows({k: csv_safe(v) for k, v in r.items()} for r in rows)
        write_text(args.out, buffer.getvalue())
    if args.pareto:
        from simsp.sweep.pareto import figure_page, pareto_figure

        write_text(args.pareto, figure_page(pareto_figure(rows, title)))


def _all_rows(found) -> list[dict]:
    """Every layout's row: the event row where it was simulated, else the closed form's."""
    from simsp.sweep.rows import row_key

    simulated = {row_key(r): r for r in found.simulated}
    return [simulated.get(row_key(r), r) for r in found.evaluated]


def register(sub) -> None:
    """Add `plan` to the CLI's subparsers (cli.main.parser() calls this)."""
    p = sub.add_parser(
        "plan",
        help="the best layouts of a model on N GPUs",
        description=__doc__.split("\n\n")[0]
        + " Searches tp, cp, pp, schedule and virtual stages, micro batch, recompute, SP, "
        "distributed optimizer or FSDP (and ep, etp for a mixture of experts); a setting given "
        "as a flag is fixed.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_workload_args(p)
    p.add_argument("--gpus", type=int, help="GPUs to plan for (default: the workload's)")
    p.add_argument(
        "--global-tokens",
        type=int,
        metavar="T",
        help="the global batch in tokens (or --global-batch in sequences)",
    )
    p.add_argument("--top", type=int, default=10, help="layouts printed (default 10)")
    p.add_argument(
        "--simulate",
        type=int,
        default=DEFAULT_SIMULATE,
        metavar="N",
        help=f"event-simulate the N fastest that fit in closed form (default {DEFAULT_SIMULATE})",
    )
    p.add_argument("--jobs", type=int, help="local worker processes (default: all CPUs)")
    p.add_argument("--out", metavar="FILE.csv", help="every layout's row")
    p.add_argument("--pareto", metavar="OUT.html", help="time vs peak memory of every layout")
    add_max_actions(p, "layouts past it are skipped")
    p.set_defaults(func=cmd_plan)
