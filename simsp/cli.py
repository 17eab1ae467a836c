"""Command line: `simsp run | memory | layer ...`. Bad input exits 2 with one line, never a traceback."""

import argparse
import json
import sys

from simsp.config import load_hardware, load_workload
from simsp.errors import InputError


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message):
        print(f"simsp: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def _add_workload_args(p: argparse.ArgumentParser) -> None:
    """The workload file, the hardware file and DESIGN.md's override flags."""
    p.add_argument("workload", help="workload YAML (see workloads/)")
    p.add_argument("--hardware", help="hardware YAML (default hardware/dgx-a100-80gb.yaml)")
    p.add_argument("--tp", type=int)
    p.add_argument("--pp", type=int)
    p.add_argument("--dp", type=int)
    p.add_argument("--sp", dest="sequence_parallel", action="store_true", default=None)
    p.add_argument("--no-sp", dest="sequence_parallel", action="store_false")
    p.add_argument("--recompute", choices=("none", "selective", "full"))
    p.add_argument("--micro-batch", type=int)
    p.add_argument("--global-batch", type=int)
    p.add_argument("--schedule", choices=("gpipe", "1f1b", "interleaved"))
    p.add_argument("--virtual-stages", type=int)
    p.add_argument("--distributed-optimizer", action="store_true", default=None)
    p.add_argument("--overlap-dp-comm", action="store_true", default=None,
                   help="all-reduce DP gradients bucket by bucket during the last backward")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def overrides(args) -> dict:
    """CLI flags as workload overrides; `--schedule X` without `--virtual-stages` resets chunks to 1."""
    parallel = {k: getattr(args, k) for k in ("tp", "pp", "dp", "sequence_parallel", "recompute",
                                                  "schedule", "virtual_stages", "distributed_optimizer", "overlap_dp_comm")}
    if args.schedule and args.schedule != "interleaved" and args.virtual_stages is None:
        parallel["virtual_stages"] = 1
    training = {"micro_batch": args.micro_batch, "global_batch": args.global_batch}
    return {"parallel": parallel, "training": training}


def load(args):
    """(workload, hardware) from parsed arguments."""
    return load_workload(args.workload, overrides(args)), load_hardware(args.hardware)


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=False))


def cmd_memory(args) -> None:
    """`simsp memory`: per-stage HBM without the time simulation."""
    from simsp.memory import memory_report
    from simsp.report import memory_table

    w, hw = load(args)
    report = memory_report(w, hw)
    _print_json(report.to_dict()) if args.json else print(memory_table(w, hw, report))


def cmd_run(args) -> None:
    """`simsp run`: simulate one iteration; optional timeline and trace files."""
    from simsp.report import run, run_summary

    w, hw = load(args)
    result = run(w, hw)
    outputs = {}
    if args.timeline:
        from simsp.timeline import timeline_html
        outputs[args.timeline] = timeline_html(result)
    if args.trace:
        from simsp.perfetto import chrome_trace_json
        outputs[args.trace] = chrome_trace_json(result)
    for path, text in outputs.items():  # everything rendered before anything is written
        write_text(path, text)
    _print_json(result.to_dict()) if args.json else print(run_summary(result))


def write_text(path, text: str) -> None:
    """Write an output file, or raise InputError naming it."""
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise InputError(path, "output", str(path), f"cannot be written ({e.strerror or e})") from None


def cmd_layer(args) -> None:
    """`simsp layer`: one transformer layer, one microbatch, per-op breakdown (paper Table 4)."""
    from simsp.cost import cost_model
    from simsp.cost.layer_time import layer_time
    from simsp.cost.stage_time import placement
    from simsp.layer import build_layer
    from simsp.report import layer_dict, layer_table

    w, hw = load(args)
    place = placement(w, hw.node.gpus)
    lt = layer_time(build_layer(w.model, w.parallel, w.training.micro_batch), cost_model(hw), w.parallel,
                    place.tp_ranks_per_node)
    _print_json(layer_dict(lt)) if args.json else print(layer_table(w, hw, lt))


COMMANDS = {
    "run": (cmd_run, "simulate one training iteration"),
    "memory": (cmd_memory, "HBM per GPU and stage, without simulating time"),
    "layer": (cmd_layer, "one transformer layer's forward and backward, op by op"),
}


def parser() -> argparse.ArgumentParser:
    """The whole command line."""
    top = _Parser(prog="simsp", description="Simulate one training iteration of a large transformer.")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (func, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        _add_workload_args(p)
        if name == "run":
            p.add_argument("--timeline", metavar="OUT.html", help="interactive plotly timeline")
            p.add_argument("--trace", metavar="OUT.json", help="Chrome/Perfetto trace")
        p.set_defaults(func=func)
    from simsp.profiler.commands import register as register_profiler

    register_profiler(sub)
    from simsp.validate import register as register_validate

    register_validate(sub)
    from simsp.sweep import register as register_sweep

    register_sweep(sub)
    p = sub.add_parser("reproduce", help="the paper's tables and figures beside simsp's",
                       description="Run the paper's experiments; print the tables and write one HTML report.")
    p.add_argument("--out", default="reproduction", help="folder for reproduction.html (default ./reproduction)")
    p.add_argument("--hardware", help="hardware YAML (default hardware/dgx-a100-80gb.yaml)")
    p.set_defaults(func=cmd_reproduce)
    return top


def cmd_reproduce(args) -> None:
    """`simsp reproduce`: Table 2, Figure 7, Table 4, Table 5 and a Figure 1 chart, paper vs simsp."""
    from simsp.reproduce import reproduce, text_tables, write_report

    tables = reproduce(args.hardware)
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
