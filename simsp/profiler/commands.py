"""`simsp profile gemm | attention | collectives | host | optimizer | memory` and `simsp calibrate`:
`register(sub)` adds them to the CLI.

Importing this module needs no torch; the profile commands ask for it when they run and, without
it, fail with one line (`simsp: error: the profiler needs torch: ...`, exit 2).
"""

import argparse
import json
import shlex
import sys
from pathlib import Path

from simsp.calibration import read_nccl_log
from simsp.errors import InputError

PROFILE_HELP = (
    "measure GEMMs, fused attention, collectives, the host floor, the Adam update or the "
    "element-wise memory rates with torch -> calibration files"
)
GEMM_HELP = "time every GEMM shape the cost model needs for a workload -> GemmTable CSV"
ATTENTION_HELP = (
    "time scaled_dot_product_attention forward and backward for a workload's FlashAttention shapes "
    "-> FlashAttention CSV"
)
HOST_HELP = (
    "time the host (framework) work of one layer's passes -> hardware YAML calibration lines"
)
OPTIMIZER_HELP = (
    "time a fused Adam update over a rank's parameters -> hardware YAML calibration line"
)
MEMORY_HELP = (
    "time a bf16 add by size and Megatron's unfused cross-entropy -> memory_bound lines for "
    "`simsp calibrate --memory`"
)
COLLECTIVES_HELP = (
    "time all_reduce, all_gather, reduce_scatter, send/recv over N processes -> nccl-tests logs"
)
CALIBRATE_HELP = "write a hardware YAML whose calibration points at measured files"


def register(sub) -> None:
    """Add `profile` (with `gemm` and `collectives`) and `calibrate` to simsp's subparsers `sub`."""
    from simsp.arguments import add_workload_args as _add_workload_args

    prof = sub.add_parser("profile", help=PROFILE_HELP, description=PROFILE_HELP)
    what = prof.add_subparsers(
        dest="profile_command",
        required=True,
        parser_class=type(prof),
        metavar="{gemm,attention,collectives,host,optimizer,memory}",
    )

    g = what.add_parser("gemm", help=GEMM_HELP, description=GEMM_HELP)
    _add_workload_args(g)
    g.add_argument("--out", default="gemm.csv", help="CSV to write (default gemm.csv)")
    g.add_argument(
        "--add-workload",
        action="append",
        default=[],
        metavar="YAML",
        help=(
            "also time this workload's shapes, with its own settings (repeatable): one table for "
            "several runs"
        ),
    )
    g.add_argument(
        "--grid", action="store_true", help="also a log-spaced grid of m, n, k (factor 4)"
    )
    g.add_argument(
        "--dtype", choices=("bf16", "fp16", "fp32"), help="default bf16 on a GPU, fp32 on the CPU"
    )
    g.add_argument(
        "--repeats", type=int, help="timed calls per shape (default 20 on a GPU, 3 on the CPU)"
    )
    g.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    g.set_defaults(func=cmd_profile_gemm, _parser=g)

    f = what.add_parser("attention", help=ATTENTION_HELP, description=ATTENTION_HELP)
    _add_workload_args(f)
    f.add_argument("--out", default="attention.csv", help="CSV to write (default attention.csv)")
    f.add_argument(
        "--add-workload",
        action="append",
        default=[],
        metavar="YAML",
        help="also time this workload's shapes, with its own settings (repeatable)",
    )
    f.add_argument(
        "--grid",
        action="store_true",
        help="also head_dim 64, 128 x seq_len 512..8192 (128..1024 on the CPU) x causal and not",
    )
    f.add_argument(
        "--dtype", choices=("bf16", "fp16", "fp32"), help="default bf16 on a GPU, fp32 on the CPU"
    )
    f.add_argument(
        "--repeats",
        type=int,
        help="timed calls per shape and direction (default 20 on a GPU, 3 on the CPU)",
    )
    f.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    f.set_defaults(func=cmd_profile_attention, _parser=f)

    c = what.add_parser("collectives", help=COLLECTIVES_HELP, description=COLLECTIVES_HELP)
    c.add_argument(
        "--nproc", type=int, required=True, help="processes (GPUs under NCCL), at least 2"
    )
    c.add_argument(
        "--backend",
        choices=("nccl", "gloo"),
        help="default nccl when there are GPUs enough, else gloo",
    )
    c.add_argument("--out", default="nccl-logs", help="folder for the logs (default nccl-logs)")
    c.add_argument("--min-bytes", help="smallest message, e.g. 1K (default 1K)")
    c.add_argument(
        "--max-bytes", help="largest message, e.g. 1G (default 1G under NCCL, 16M under gloo)"
    )
    c.add_argument("--iters", type=int, help="timed calls per size (default 20, after 5 warm-up)")
    c.set_defaults(func=cmd_profile_collectives, _parser=c)

    o = what.add_parser("host", help=HOST_HELP, description=HOST_HELP)
    o.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    o.add_argument("--repeats", type=int, default=500, help="passes per timing round (default 500)")
    o.add_argument(
        "--out", help="also write the lines to this YAML file (for `simsp calibrate --host`)"
    )
    o.set_defaults(func=cmd_profile_host, _parser=o)

    a = what.add_parser("optimizer", help=OPTIMIZER_HELP, description=OPTIMIZER_HELP)
    a.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    a.add_argument(
        "--params", type=float, help="parameters to update (default 5e8 on a GPU, 2e7 on the CPU)"
    )
    a.add_argument(
        "--hidden",
        type=int,
        help="hidden size of the layers they are shaped as (default 2048 / 512)",
    )
    a.add_argument(
        "--repeats", type=int, help="steps per timing round (default 20 on a GPU, 3 on the CPU)"
    )
    a.add_argument(
        "--out", help="also write the lines to this YAML file (for `simsp calibrate --optimizer`)"
    )
    a.set_defaults(func=cmd_profile_optimizer, _parser=a)

    m = what.add_parser("memory", help=MEMORY_HELP, description=MEMORY_HELP)
    m.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    m.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        metavar="BYTES",
        help="bytes the add moves a call (default 64 KiB to 1 GiB, 2x apart; to 4 MiB on a CPU)",
    )
    m.add_argument("--tokens", type=int, help="tokens of the loss (default 4096; 64 on a CPU)")
    m.add_argument(
        "--vocab", type=int, help="vocabulary shard of the loss (default 32064; 4096 on a CPU)"
    )
    m.add_argument(
        "--repeats", type=int, help="calls per timing round (default 20 on a GPU, 3 on the CPU)"
    )
    m.add_argument(
        "--out", help="also write the lines to this YAML file (for `simsp calibrate --memory`)"
    )
    m.set_defaults(func=cmd_profile_memory, _parser=m)

    k = sub.add_parser("calibrate", help=CALIBRATE_HELP, description=CALIBRATE_HELP)
    k.add_argument(
        "--hardware",
        help="base hardware YAML (required, except with --trace: the trace's GPU's library file)",
    )
    k.add_argument(
        "--trace",
        metavar="TRACE.json[.gz]",
        help="a Kineto (torch.profiler) trace of a real iteration of --workload: its tables",
    )
    k.add_argument(
        "--json", action="store_true", help="with --trace or --runs: print one JSON object"
    )
    k.add_argument("--gemm", help="GEMM table CSV (simsp profile gemm)")
    k.add_argument(
        "--gemm-model",
        metavar="FILE|none",
        help="modeled GEMM table for shapes --gemm does not cover; 'none' drops the base file's",
    )
    k.add_argument(
        "--attention", metavar="CSV", help="FlashAttention throughput CSV (simsp profile attention)"
    )
    k.add_argument(
        "--nvlink",
        nargs="+",
        default=[],
        metavar="LOG",
        help="nccl-tests logs measured inside one node",
    )
    k.add_argument(
        "--infiniband",
        nargs="+",
        default=[],
        metavar="LOG",
        help="nccl-tests logs measured across nodes",
    )
    k.add_argument(
        "--host", metavar="YAML", help="host floor lines written by `simsp profile host --out`"
    )
    k.add_argument(
        "--optimizer",
        metavar="YAML",
        help="fused Adam rate written by `simsp profile optimizer --out`",
    )
    k.add_argument(
        "--memory",
        metavar="YAML",
        help="element-wise rates written by `simsp profile memory --out` -> memory_bound",
    )
    k.add_argument(
        "--append",
        action="store_true",
        help="add the logs to the base file's lists instead of replacing them",
    )
    k.add_argument("--name", help="the new file's `name:` (default: the base file's)")
    k.add_argument("--out", required=True, help="new hardware YAML to write")
    k.add_argument("--workload", help="workload YAML: show how the change moves its prediction")
    k.add_argument(
        "--runs",
        metavar="RUNS.csv",
        help="fit host time, collective latency and GEMM fraction to measured iteration times "
        "(schema: simsp/calibration/runs.py)",
    )
    k.add_argument("--folds", type=int, default=5, help="cross-validation folds for --runs (5)")
    k.add_argument(
        "--fit",
        metavar="NAMES",
        help="comma-separated parameters for --runs (default: all of host_forward_us, "
        "collective_latency_us, gemm_table_fraction)",
    )
    k.set_defaults(func=cmd_calibrate, _parser=k)


def command_line(args) -> str:
    """The command as typed when run as `simsp ...`, else rebuilt from the parsed arguments."""
    if Path(sys.argv[0]).name in ("simsp", "simsp.exe", "cli.py"):
        return shlex.join(["simsp", *sys.argv[1:]])
    parser = getattr(args, "_parser", None)
    if parser is None:
        return ""
    words = parser.prog.split()
    for action in parser._actions:
        value = getattr(args, action.dest, None)
        if isinstance(action, argparse._HelpAction) or value is None:
            continue
        if not action.option_strings:
            words.append(str(value))
        elif action.nargs == 0:
            if value == action.const and value != action.default:
                words.append(action.option_strings[0])
        elif value != action.default:
            words += [
                action.option_strings[0],
                *map(str, value if isinstance(value, list) else [value]),
            ]
    return shlex.join(words)


def cmd_profile_gemm(args) -> None:
    """`simsp profile gemm`: time the workload's GEMMs (and a grid) and write a GemmTable CSV."""
    from simsp.profiler import gemm, shapes

    s = gemm.default_settings(args.device, args.dtype, args.repeats)  # fails first without torch
    runs = _runs(args)
    todo = shapes.unique([sh for run in runs for sh in shapes.workload_shapes(run)])
    n_workload = len(todo)
    grid = shapes.GRID_GPU if s.device.startswith("cuda") else shapes.GRID_CPU
    if args.grid:
        todo = shapes.unique(todo + shapes.grid_shapes(grid))
    extra = [_workload_line(run) for run in runs]
    extra.append(
        (
            f"shapes: {n_workload} of the workload{'s' if len(runs) > 1 else ''} (layer GEMMs and "
            "logits, 3 layouts)"
        )
        + (f" + grid m,n,k in {list(grid)} x TN/NN/NT" if args.grid else "")
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    points, skipped = gemm.measure(todo, s)
    if not points:
        raise InputError(
            args.out, "shapes", len(todo), "none of the GEMMs fit in the device's memory"
        )
    extra += [
        f"skipped (out of memory): {sh.name} {sh.layout} m={sh.gemm.m} n={sh.gemm.n} k={sh.gemm.k} "
        f"batch={sh.gemm.batch}"
        for sh in skipped
    ]
    table = gemm.write_table(points, s, out, command_line(args), extra)
    rates = [pt.tflops for pt in table.points]
    summary = {
        "out": str(out),
        "shapes": len(table.points),
        "workload_shapes": n_workload,
        "skipped_out_of_memory": len(skipped),
        "device": table.device,
        "dtype": s.dtype,
        "min_tflops": min(rates),
        "max_tflops": max(rates),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"wrote {out}: {len(rates)} GEMM shapes on {table.device} ({s.dtype}), "
            f"{min(rates):.3f} to {max(rates):.3f} TFLOP/s"
            + (
                f"; {len(skipped)} skipped for lack of memory (listed in its header)"
                if skipped
                else ""
            )
        )


def cmd_profile_attention(args) -> None:
    """`simsp profile attention`: time the workload's FlashAttention shapes (and a grid) -> CSV."""
    from simsp.profiler import attention, gemm

    s = gemm.default_settings(args.device, args.dtype, args.repeats)  # fails first without torch
    runs = _runs(args)
    w = runs[0]
    todo = attention.unique([c for run in runs for c in attention.workload_cases(run)])
    n_workload = len(todo)
    if not todo and not args.grid:
        raise InputError(
            args.workload,
            "model.attention",
            w.model.attention,
            "no FlashAttention op to time: use --attention flash or --grid",
        )
    if args.grid:
        todo = attention.unique(todo + attention.grid_cases(s.device.startswith("cuda")))
    extra = [
        _workload_line(run) + f" kv_heads={run.model.groups} head_dim={run.model.head_size} "
        f"attention={run.model.attention}"
        for run in runs
    ]
    seq_grid = attention.GRID_SEQ_GPU if s.device.startswith("cuda") else attention.GRID_SEQ_CPU
    extra.append(
        f"shapes: {n_workload} of the workload{'s' if len(runs) > 1 else ''}"
        + (
            f" + grid head_dim {list(attention.GRID_HEAD_DIMS)} x seq_len "
            f"{list(seq_grid)} x causal true/false"
            if args.grid
            else ""
        )
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    measured, skipped = attention.measure(todo, s)
    if not measured:
        raise InputError(
            args.out, "shapes", len(todo), "none of the attention shapes fit in the device's memory"
        )
    extra += [f"skipped (out of memory): {c.describe()}" for c in skipped]
    pts = attention.write_table(measured, s, out, command_line(args), extra)
    rates = [p.tflops for p in pts]
    summary = {
        "out": str(out),
        "shapes": len(measured),
        "rows": len(pts),
        "workload_shapes": n_workload,
        "skipped_out_of_memory": [c.describe() for c in skipped],
        "device": pts[0].gpu,
        "kernels": sorted({p.kernel for p in pts}),
        "dtype": s.dtype,
        "min_tflops": min(rates),
        "max_tflops": max(rates),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"wrote {out}: {len(measured)} attention shapes x fwd/bwd on {pts[0].gpu} ({s.dtype}, "
            f"{', '.join(summary['kernels'])}), {min(rates):.3g} to {max(rates):.3g} TFLOP/s"
            + (
                f"; {len(skipped)} skipped for lack of memory: "
                + "; ".join(summary["skipped_out_of_memory"])
                if skipped
                else ""
            )
        )


def _runs(args) -> list:
    """The workload with its overrides (checked against --hardware where one is given), then
    each --add-workload with its own settings."""
    from simsp.arguments import load, overrides
    from simsp.config import load_workload

    given = args.hardware or args.hardware_set
    w = load(args)[0] if given else load_workload(args.workload, overrides(args))
    return [w] + [load_workload(path) for path in args.add_workload]


def _workload_line(w) -> str:
    """The table header line saying which run's shapes were timed."""
    p = w.parallel
    return (
        f"workload: {w.name}: layers={w.model.layers} hidden={w.model.hidden} "
        f"heads={w.model.heads} seq_len={w.model.seq_len} vocab={w.model.vocab} "
        f"micro_batch={w.training.micro_batch} tp={p.tp} sp={p.sequence_parallel}"
    )


def cmd_profile_collectives(args) -> None:
    """`simsp profile collectives`: sweep each collective over N local processes, one log each."""
    from simsp.profiler import collectives

    s = collectives.default_settings(
        args.nproc,
        args.backend,
        args.min_bytes,
        args.max_bytes,
        args.iters,
        args.out,
        command_line(args),
    )
    for path in collectives.run(s):
        t = read_nccl_log(path)
        print(
            f"wrote {path}: {t.op}, {t.ranks} ranks, {t.sizes_bytes[0]} to {t.sizes_bytes[-1]} B, "
            f"peak busbw {max(t.busbw_gbps()):.2f} GB/s"
        )


def cmd_profile_host(args) -> None:
    """`simsp profile host`: host time per layer pass, printed as hardware YAML calibration
    lines."""
    from simsp.profiler.host import measure

    if args.repeats < 1:
        raise InputError("--repeats", "repeats", args.repeats, "must be a positive integer")
    _emit(measure(args.device, args.repeats).yaml_lines(command_line(args)), args.out)


def cmd_profile_optimizer(args) -> None:
    """`simsp profile optimizer`: the fused Adam rate, printed as a hardware YAML calibration
    line."""
    from simsp.profiler.optimizer import measure

    _emit(
        measure(args.device, args.params, args.hidden, args.repeats).yaml_lines(command_line(args)),
        args.out,
    )


def cmd_profile_memory(args) -> None:
    """`simsp profile memory`: the element-wise curve and the unfused loss's rate, printed as the
    lines `simsp calibrate --memory` reads."""
    from simsp.profiler.memory_bound import measure

    rates = measure(args.device, args.sizes, args.tokens, args.vocab, args.repeats)
    _emit(rates.yaml_lines(command_line(args)), args.out)


def _emit(lines: list[str], out: str | None) -> None:
    """Print calibration lines; with `out`, also write them there for `simsp calibrate`."""
    text = "\n".join(lines) + "\n"
    if out:
        from simsp.textfile import write_text

        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)  # whole, or an existing file kept
    print(text, end="")


def cmd_calibrate(args) -> None:
    """`simsp calibrate`: new hardware YAML, validated; with --workload, the prediction
    before/after."""
    from simsp.config import load_hardware, load_workload
    from simsp.profiler.calibrate import PATH_KEYS, Request, calibrate
    from simsp.profiler.memory_bound import memory_request
    from simsp.profiler.prediction_change import compare

    if args.runs:
        from simsp.profiler.calibrate_runs import calibrate_runs

        return calibrate_runs(args, command_line(args))
    if args.trace:
        from simsp.kineto.commands import cmd_calibrate_trace

        return cmd_calibrate_trace(args, command_line(args))
    if not args.hardware:
        raise InputError("--hardware", "--hardware", None, "required (the base hardware YAML)")
    req = Request(
        args.hardware,
        args.out,
        args.gemm,
        args.gemm_model,
        tuple(args.nvlink),
        tuple(args.infiniband),
        args.append,
        args.name,
        command_line(args),
        args.host,
        args.optimizer,
        attention=args.attention,
        **memory_request(args.memory, args.hardware),
    )
    w = load_workload(args.workload) if args.workload else None  # bad workload: fail before writing
    cal = calibrate(req)
    listed = ", ".join(
        f"{key}: {f'{len(v)} path(s)' if isinstance(v, list) else v}"
        for key, v in cal.items()
        if key in PATH_KEYS
    )
    print(f"wrote {args.out} ({listed}); it loads")
    if w is not None:
        print(compare(w, load_hardware(args.hardware), load_hardware(args.out)))
