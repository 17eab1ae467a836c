"""`simsp calibrate --trace` and `simsp overlay`: their CLI handlers (`register` adds overlay)."""

import json

from simsp.errors import InputError

OVERLAY_HELP = (
    "the simulated iteration laid over a real one (a Kineto trace): plotly page, per-op-kind "
    "and per-layer attribution, Perfetto trace"
)


def cmd_calibrate_trace(args, command: str) -> None:
    """`simsp calibrate --trace T --workload W --out HW.yaml [--hardware BASE] [--json]`."""
    from simsp.measure.kineto.calibrate import calibrate_from_trace

    if not args.workload:
        raise InputError("--workload", "--workload", None, "required with --trace")
    summary = calibrate_from_trace(args.trace, args.workload, args.out, args.hardware, command)
    if args.json:
        print(json.dumps(summary, indent=2))
        return
    print(
        f"wrote {summary['out']} from {args.trace} ({summary['device']}"
        f"{', CPU trace' if summary['cpu_trace'] else ''}): matched "
        f"{summary['matched_fraction']:.1%} of {summary['kernel_time_s'] * 1e3:.3f} ms of kernel "
        f"time; {summary['gemm_shapes']} GEMM shapes, {summary['attention_rows']} attention rows, "
        f"{summary['collective_tables']} collective tables"
    )
    for u in summary["unmatched"][:10]:
        print(f"  unmatched {u['time_s'] * 1e3:9.4f} ms  {u['kernels']:4d} x {u['name'][:90]}")


def register(sub) -> None:
    """Add `overlay` to simsp's subparsers."""
    p = sub.add_parser("overlay", help=OVERLAY_HELP, description=OVERLAY_HELP)
    p.add_argument("trace", help="Kineto trace (.json or .json.gz) of one real iteration")
    p.add_argument("workload", help="workload YAML of the traced run")
    p.add_argument("--hardware", help="hardware YAML to simulate on (default: the trace's GPU's)")
    p.add_argument("--out", required=True, help="HTML page to write")
    p.add_argument("--perfetto", metavar="OUT.json", help="also a Perfetto trace holding both")
    p.add_argument("--json", action="store_true", help="print the attribution table as JSON")
    p.set_defaults(func=cmd_overlay, _parser=p)


def cmd_overlay(args) -> None:
    """`simsp overlay`: write the page (and Perfetto trace); print the attribution."""
    from simsp.errors import InputError
    from simsp.measure.kineto.compare import compare_run
    from simsp.present.timeline.overlay import overlay_html
    from simsp.textfile import check_output, write_text

    inputs = (args.trace, args.workload, args.hardware)
    out = check_output(args.out, inputs=inputs)
    if args.perfetto:
        perfetto = check_output(args.perfetto, inputs=inputs)
        if perfetto.resolve() == out.resolve():
            raise InputError(args.perfetto, "--perfetto", args.perfetto, "is also the --out page")
    cmp = compare_run(args.trace, args.workload, args.hardware)
    page = overlay_html(cmp)
    trace = None
    if args.perfetto:
        from simsp.measure.kineto.compare import overlay_trace_json

        trace = overlay_trace_json(cmp)
    write_text(args.out, page)  # both rendered before either is written
    if trace is not None:
        write_text(args.perfetto, trace)
    if args.json:
        print(json.dumps(cmp.to_dict(), indent=2))
        return
    print(cmp.table_text())
    print(f"wrote {args.out}" + (f" and {args.perfetto}" if args.perfetto else ""))
