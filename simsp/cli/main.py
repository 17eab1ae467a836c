"""Command line: `simsp run | memory | layer ...`. Bad input exits 2 with one line, never a
traceback."""

import dataclasses
import sys

from simsp import __version__
from simsp.cli.arguments import (
    Parser,
    add_max_actions,
    add_set_arg,
    add_workload_args,
    load,
    print_json,
    source,
)
from simsp.errors import InputError
from simsp.textfile import check_output, write_text


def cmd_memory(args) -> None:
    """`simsp memory`: per-stage HBM without the time simulation; --json adds the model's
    parameter count (`params`, as `simsp run --json` has it)."""
    from simsp.model.params import total_params
    from simsp.present.report import memory_table
    from simsp.sim.budget import check_memory
    from simsp.sim.memory import memory_report

    w, hw = load(args)
    check_memory(w, source(args), args.max_actions)
    report = memory_report(w, hw)
    if args.json:
        print_json({**report.to_dict(), "params": total_params(w.model)})
    else:
        print(memory_table(w, hw, report))


def configuration(w, hw, args) -> dict:
    """What a run ran: the files, and every model, training and parallel setting as used."""
    return {
        "workload_file": args.workload and str(args.workload),
        "model_file": args.hf_model and str(args.hf_model),
        "hardware_file": hw.source,
        "model": dataclasses.asdict(w.model),
        "training": w.training.as_run(),
        "parallel": dataclasses.asdict(w.parallel),
    }


def _closed_form(w, hw, args) -> None:
    """A run over the action limit whose closed form does not walk the schedule: the estimate,
    said to be one in its first line (and in the JSON's `tier` and `note`)."""
    from simsp.present.accuracy import accuracy_line
    from simsp.present.report import accuracy_dict, describe, memory_verdict
    from simsp.sim.budget import over_limit_reason, work
    from simsp.sim.closed_form import estimate

    if args.timeline or args.trace:
        raise InputError(
            args.timeline or args.trace,
            "output",
            args.timeline or args.trace,
            "a closed-form answer has no timeline or trace; raise --max-actions to simulate",
        )
    e, note = estimate(w, hw), over_limit_reason(work(w), args.max_actions)
    if args.json:
        print_json(
            {
                "workload": w.name,
                "hardware": hw.name,
                **({"hardware_overrides": dict(hw.overrides)} if hw.overrides else {}),
                "tier": "analytic",
                "note": note,
                "iteration_time_s": e.iteration_time_s,
                "mfu": e.mfu,
                "hfu": e.hfu,
                "tokens_per_s": e.tokens_per_s,
                "bubble_s": e.bubble_s,
                "memory": {
                    "capacity_bytes": e.capacity_bytes,
                    "fits": e.fits,
                    "reserve_bytes": e.reserve_bytes,
                    "peak_bytes": e.peak_bytes,
                },
                "accuracy": accuracy_dict(hw, w.training.precision, w.training.stack),
                "configuration": configuration(w, hw, args),
            }
        )
        return
    print(
        f"{note}\n{describe(w, hw)}\niteration {e.iteration_time_s:.3f} s   MFU {e.mfu:.1%}   "
        f"HFU {e.hfu:.1%}   {e.tokens_per_s:,.0f} tokens/s\nmemory "
        + memory_verdict(e.peak_bytes, e.reserve_bytes, e.capacity_bytes)
        + "\n"
        + accuracy_line(hw, w.training.precision, stack=w.training.stack)
    )


def cmd_run(args) -> None:
    """`simsp run`: simulate one iteration; optional timeline and trace files. The output paths
    and the size of the simulation are checked before any of it runs."""
    from simsp.api import run
    from simsp.present.report import result_json, run_summary
    from simsp.sim.budget import NOTICE_S, plan_run, work

    inputs = (args.workload, args.hf_model, args.hardware)
    paths = [check_output(p, inputs=inputs) for p in (args.timeline, args.trace) if p]
    if len(set(paths)) < len(paths):
        raise InputError(
            args.trace, "--trace", args.trace, "is also the --timeline; name two files"
        )
    w, hw = load(args)
    if not plan_run(w, source(args), args.max_actions):
        _closed_form(w, hw, args)
        return
    size = work(w)
    progress = None
    if size.seconds > NOTICE_S:
        from simsp.sim.engine import PROGRESS_STEPS
        from simsp.sweep.progress import Progress

        print(f"simsp: simulating {size.describe()}", file=sys.stderr, flush=True)
        progress = Progress(PROGRESS_STEPS, label="slices of the iteration")
    result = run(w, hw, progress)
    outputs = {}
    if args.timeline:
        from simsp.present.timeline import timeline_html

        outputs[args.timeline] = timeline_html(result)
    if args.trace:
        from simsp.present.perfetto import chrome_trace_json

        outputs[args.trace] = chrome_trace_json(result)
    for path, text in outputs.items():  # everything rendered before anything is written
        write_text(path, text)
    if args.json:
        print_json({**result_json(result), "configuration": configuration(w, hw, args)})
    else:
        print(run_summary(result))
    for path, text in outputs.items():
        print(f"wrote {path} ({len(text.encode()) / 1e6:.1f} MB)", file=sys.stderr)


def cmd_layer(args) -> None:
    """`simsp layer`: one transformer layer, one microbatch, per-op breakdown (paper Table 4)."""
    from simsp.cost import cost_model
    from simsp.cost.layer_time import layer_time
    from simsp.model.layer import build_layer
    from simsp.present.report import layer_dict, layer_table
    from simsp.spec.layout import layer_placement

    w, hw = load(args)
    lt = layer_time(
        build_layer(w.model, w.parallel, w.training.micro_batch, w.training.numerics),
        cost_model(hw),
        w.parallel,
        layer_placement(w.parallel, hw.node.gpus),
    )
    print_json(layer_dict(lt)) if args.json else print(layer_table(w, hw, lt))


COMMANDS = {
    "run": (cmd_run, "simulate one training iteration"),
    "memory": (cmd_memory, "HBM per GPU and stage, without simulating time"),
    "layer": (cmd_layer, "one transformer layer's forward and backward, op by op"),
}


def parser() -> Parser:
    """The whole command line."""
    top = Parser(
        prog="simsp", description="Simulate one training iteration of a large transformer."
    )
    top.add_argument("--version", action="version", version=f"simsp {__version__}")
    sub = top.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (func, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        add_workload_args(p)
        if name in ("run", "memory"):
            add_max_actions(p, "past it a run answers in closed form where it can")
        if name == "run":
            p.add_argument("--timeline", metavar="OUT.html", help="interactive plotly timeline")
            p.add_argument("--trace", metavar="OUT.json", help="Chrome/Perfetto trace")
        p.set_defaults(func=func)
    from simsp.cli.profile_parsers import register as register_profiler

    register_profiler(sub)
    from simsp.cli.validate import register as register_validate

    register_validate(sub)
    from simsp.cli.sweep import register as register_sweep

    register_sweep(sub)
    from simsp.cli.plan import register as register_plan

    register_plan(sub)
    from simsp.cli.trace import register as register_overlay

    register_overlay(sub)
    p = sub.add_parser(
        "reproduce",
        help="the paper's tables and figures beside simsp's",
        description="Run the paper's experiments; print the tables and write one HTML report.",
    )
    p.add_argument(
        "--out",
        default="reproduction",
        help="folder for reproduction.html (default ./reproduction)",
    )
    p.add_argument("--hardware", help="hardware YAML (default hardware/dgx-a100-80gb.yaml)")
    add_set_arg(p)
    p.set_defaults(func=cmd_reproduce)
    return top


def cmd_reproduce(args) -> None:
    """`simsp reproduce`: Table 2, Figure 7, Table 4, Table 5 and a Figure 1 chart, paper vs
    simsp."""
    from simsp.textfile import check_output_dir
    from simsp.validate.reproduce import reproduce, text_tables, write_report

    check_output_dir(args.out, {"reproduction.html": b""})  # before the experiments run
    tables = reproduce(args.hardware, args.hardware_set)
    if args.hardware_set:
        print(f"hardware with --set {' --set '.join(args.hardware_set)}")
    print(text_tables(tables))
    print(f"report: {write_report(tables, args.out)}")


def main(argv=None) -> int:
    """Entry point of the `simsp` console script."""
    try:
        args = parser().parse_args(argv)
    except SystemExit as e:  # usage errors (2) and --help (0)
        return int(e.code or 0)
    try:
        args.func(args)
    except InputError as e:
        print(f"simsp: error: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's code for SIGINT; a sweep resumes
        print("simsp: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
