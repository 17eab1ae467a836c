"""What `simsp profile gemm | attention | collectives | host | optimizer | memory` and `simsp
calibrate` do; `profile_parsers.py` adds them to the CLI.

Importing this module needs no torch; the profile commands ask for it when they run and, without
it, fail with one line (`simsp: error: the profiler needs torch: ...`, exit 2).
"""

import argparse
import json
import shlex
import sys
from pathlib import Path

from simsp.errors import InputError
from simsp.tables import read_nccl_log
from simsp.tables.attention import COLUMNS as ATTENTION_COLUMNS
from simsp.textfile import check_output


def command_line(args) -> str:
    """The command as typed when run as `simsp ...`, else rebuilt from the parsed arguments."""
    typed = Path(sys.argv[0])
    if typed.name in ("simsp", "simsp.exe") or typed.resolve().parent == Path(__file__).parent:
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
    from simsp.measure.profiler import gemm, grouped_gemm, shapes

    s = gemm.default_settings(args.device, args.dtype, args.repeats)  # fails first without torch
    runs = _runs(args)
    grouped = [g for run in runs for g in grouped_gemm.grouped_shapes(run)]
    grouped = list(dict.fromkeys(grouped))  # first of each, in order
    _output(args.out, b"m,n,k,batch,layout,tflops")
    grouped_out = Path(args.grouped_out or Path(args.out).with_name("grouped_gemm.csv"))
    if grouped:
        check_output(grouped_out, (".csv",), inputs=(args.out,), header=b"groups,m,n,k,layout,")
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
    grouped_points, grouped_skipped = grouped_gemm.measure(grouped, s) if grouped else ((), [])
    if grouped_points:
        grouped_gemm.write_table(
            grouped_points,
            s,
            grouped_out,
            command_line(args),
            [_workload_line(run) for run in runs]
            + [f"skipped (out of memory): {x}" for x in grouped_skipped],
        )
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
        "grouped_out": str(grouped_out) if grouped_points else None,
        "grouped_shapes": len(grouped_points),
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
        if grouped_points:
            print(
                f"wrote {grouped_out}: {len(grouped_points)} grouped GEMM shapes x stages of the "
                "routed experts (set calibration.grouped_gemm to it)"
            )


def cmd_profile_attention(args) -> None:
    """`simsp profile attention`: time the workload's FlashAttention shapes (and a grid) -> CSV."""
    from simsp.measure.profiler import attention, gemm

    s = gemm.default_settings(args.device, args.dtype, args.repeats)  # fails first without torch
    runs = _runs(args)
    w = runs[0]
    _output(args.out, ",".join(ATTENTION_COLUMNS).encode())
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
    from simsp.cli.arguments import load, overrides
    from simsp.io.config import load_workload

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
    from simsp.measure.profiler import collectives

    s = collectives.default_settings(
        args.nproc,
        args.backend,
        args.min_bytes,
        args.max_bytes,
        args.iters,
        args.out,
        command_line(args),
    )
    from simsp.textfile import check_output_dir

    if Path(args.out).parent.is_dir():  # a folder not there yet is made when the logs are
        check_output_dir(args.out, {name: b"" for name in collectives.LOG_NAMES.values()})
    for path in collectives.run(s):
        t = read_nccl_log(path)
        print(
            f"wrote {path}: {t.op}, {t.ranks} ranks, {t.sizes_bytes[0]} to {t.sizes_bytes[-1]} B, "
            f"peak busbw {max(t.busbw_gbps()):.2f} GB/s"
        )


def cmd_profile_host(args) -> None:
    """`simsp profile host`: host time per layer pass, printed as hardware YAML calibration
    lines."""
    from simsp.measure.profiler.host import measure

    if args.repeats < 1:
        raise InputError("--repeats", "repeats", args.repeats, "must be a positive integer")
    _output(args.out, b"host_forward_us:")
    _emit(measure(args.device, args.repeats).yaml_lines(command_line(args)), args.out)


def cmd_profile_optimizer(args) -> None:
    """`simsp profile optimizer`: the fused Adam rate, printed as a hardware YAML calibration
    line."""
    from simsp.measure.profiler.optimizer import measure

    _output(args.out, b"adam_gbps:")
    _emit(
        measure(args.device, args.params, args.hidden, args.repeats).yaml_lines(command_line(args)),
        args.out,
    )


def cmd_profile_memory(args) -> None:
    """`simsp profile memory`: the element-wise curve and the unfused loss's rate, printed as the
    lines `simsp calibrate --memory` reads."""
    from simsp.measure.profiler.memory_bound import measure

    _output(args.out, b"stream_gbps:")
    rates = measure(args.device, args.sizes, args.tokens, args.vocab, args.repeats)
    _emit(rates.yaml_lines(command_line(args)), args.out)


def _output(path, header: bytes) -> None:
    """An output a profile writes, checked before anything is measured: where its folder is
    there already, check_output's rules (no link, no folder, only a file simsp wrote, known by
    its mark or its CSV `header`); a folder that is not there yet is made when it writes."""
    if path and Path(path).parent.is_dir():
        check_output(path, header=header)


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
    from simsp.io.config import load_hardware, load_workload
    from simsp.measure.profiler.calibrate import calibrate
    from simsp.measure.profiler.calibrate_request import PATH_KEYS, Request
    from simsp.measure.profiler.memory_bound import memory_request
    from simsp.measure.profiler.prediction_change import compare

    if args.runs:
        from simsp.measure.profiler.calibrate_runs import calibrate_runs

        return calibrate_runs(args, command_line(args))
    if args.trace:
        from simsp.cli.trace import cmd_calibrate_trace

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
        grouped_gemm=args.grouped_gemm,
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
