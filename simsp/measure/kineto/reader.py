"""Read a Kineto / Chrome trace of one or a few iterations into plain kernel records.

The trace is parsed by HolisticTraceAnalysis (`hta.common.trace.parse_trace_file`, pip
`HolisticTraceAnalysis`, the `trace` extra), which also links each GPU kernel to the runtime
call that launched it. The CPU op owning a kernel is the innermost `cpu_op` on the launching
thread that encloses that call; its `Input Dims` (recorded with `record_shapes=True`) give a
GEMM's shape, its `record_param_comms` args a collective's size and group. An op runs in
backward when an enclosing op is autograd's (`autograd::engine::evaluate_function: ...`).

A trace without GPU kernels (torch's CPU build) is read as a CPU trace: its "kernels" are the
aten ops themselves, each by its self time (its duration less its children's), so the times
partition the ops' time and nothing is counted twice.

Where the trace holds several `ProfilerStep#N` iterations, the last complete one is read.
"""

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from simsp.errors import InputError
from simsp.measure.kineto.trace_file import check_trace_file
from simsp.units import US

NS_ROUNDING_ENV = "HTA_DISABLE_NS_ROUNDING"
"""HTA's switch that keeps nanosecond timestamps."""
BACKWARD_MARKERS = ("autograd::engine::evaluate_function", "Backward")
"""An op enclosed by one whose name holds one of these runs in backward."""
DTYPE_BYTES = {
    **dict.fromkeys(("float", "float32", "int", "int32", "uint32"), 4),
    **dict.fromkeys(("half", "float16", "bfloat16", "c10::half", "c10::bfloat16", "short"), 2),
    **dict.fromkeys(("double", "float64", "long", "long int", "int64"), 8),
    **dict.fromkeys(("byte", "char", "signed char", "unsigned char", "int8", "uint8"), 1),
    **dict.fromkeys(("c10::float8_e4m3fn", "float8_e4m3fn", "c10::float8_e5m2"), 1),
}
"""Bytes of an element of a collective's `dtype` as Kineto names it."""


@dataclass(frozen=True)
class Comm:
    """What a collective kernel moved, from its `record_param_comms` op."""

    name: str
    """Kineto's collective name (allreduce, _allgather_base, reduce_scatter_tensor, send, ...)."""
    in_bytes: float
    out_bytes: float
    group_size: int


@dataclass(frozen=True)
class Kernel:
    """One GPU kernel (or, in a CPU trace, one aten op's self time)."""

    name: str
    start_s: float
    """From the start of the iteration."""
    dur_s: float
    stream: int
    """GPU stream; -1 in a CPU trace."""
    op: str
    """The CPU op that launched it (its own name in a CPU trace); '' when none is found."""
    dims: tuple
    """That op's recorded input dims (a tuple per input; () for a non-tensor input)."""
    backward: bool
    launch_s: float = -1.0
    """When its launch call started on the CPU (GPU traces; -1 otherwise)."""
    comm: Comm | None = None
    call: int = -1
    """Which call of its CPU op it belongs to (kernels of one call share it; -1 unknown)."""


@dataclass(frozen=True)
class Profile:
    """One real iteration as kernels, with where it came from."""

    path: str
    device: str
    """GPU name from the trace's deviceProperties, or 'CPU'."""
    cpu: bool
    """No GPU kernels: the aten ops stand in for them."""
    kernels: tuple[Kernel, ...]
    span_s: float
    """Wall time of the iteration (its ProfilerStep, else first to last event)."""
    iteration: int
    """The ProfilerStep number read (-1 where the trace has none)."""
    date: str
    """When it was recorded (from the trace's baseTimeNanoseconds), '' when unknown."""

    @property
    def kernel_s(self) -> float:
        return sum(k.dur_s for k in self.kernels)


def _hta():
    try:
        from hta.common.trace import parse_trace_file
        from hta.configs.parser_config import ParserConfig
    except ImportError as e:
        raise InputError(
            "--trace",
            "trace",
            "HolisticTraceAnalysis",
            f"reading a trace needs HolisticTraceAnalysis: pip install 'simsp[trace]' ({e})",
        ) from None
    return parse_trace_file, ParserConfig


def _frame(path: Path):
    """HTA's event table with names decoded, and the trace's metadata."""
    parse_trace_file, ParserConfig = _hta()
    cfg = ParserConfig(
        ParserConfig.get_minimum_args()
        + ParserConfig.ARGS_INPUT_SHAPE
        + ParserConfig.ARGS_COMMUNICATION
    )
    level = logging.getLogger().level
    logging.disable(logging.WARNING)  # HTA logs its parse times as warnings
    # HTA rounds nanosecond timestamps to whole microseconds by default; a 2.6 us kernel would
    # read as 2 us and a small model's step loses a fifth of its kernel time.
    saved = os.environ.get(NS_ROUNDING_ENV)
    os.environ[NS_ROUNDING_ENV] = "1"
    try:
        meta, df, symbols = parse_trace_file(str(path), cfg)
    except (ValueError, KeyError, TypeError, json.JSONDecodeError) as e:
        raise InputError(path, "traceEvents", None, f"HTA cannot parse it ({e})") from None
    finally:
        if saved is None:
            os.environ.pop(NS_ROUNDING_ENV, None)
        else:
            os.environ[NS_ROUNDING_ENV] = saved
        logging.disable(logging.NOTSET)
        logging.getLogger().setLevel(level)
    names = symbols.sym_table
    df["name"] = df["name"].map(lambda i: names[i] if 0 <= i < len(names) else "")
    df["cat"] = df["cat"].map(lambda i: names[i] if 0 <= i < len(names) else "")
    return meta, df


def _dims(value) -> tuple:
    """HTA's input_dims cell as a tuple of tuples."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return ()
    if not isinstance(value, list):
        return ()
    return tuple(tuple(d) if isinstance(d, list) else () for d in value)


@dataclass
class _Node:
    """A CPU event in its thread's nesting."""

    row: int
    name: str
    ts: float
    end: float
    parent: "_Node | None"
    backward: bool
    child_us: float = 0.0


def _nest(events) -> dict[int, _Node]:
    """Each CPU event's node (parent, backward flag), from one thread's events sorted by
    (start, longest first)."""
    nodes, stack = {}, []
    for row, name, ts, dur in events:
        while stack and stack[-1].end <= ts:
            stack.pop()
        parent = stack[-1] if stack else None
        back = any(m in name for m in BACKWARD_MARKERS) or (parent.backward if parent else False)
        node = _Node(row, name, ts, ts + dur, parent, back)
        if parent is not None:
            parent.child_us += dur
        nodes[row] = node
        stack.append(node)
    return nodes


def _device(meta: dict, cpu: bool) -> str:
    props = meta.get("deviceProperties") or []
    if cpu:
        return "CPU"
    if not props:
        return "GPU (unnamed in the trace)"
    return str(props[0].get("name", "GPU"))


def _date(meta: dict, t0_us: float) -> str:
    """UTC date of the iteration: Kineto's timestamps count microseconds from
    baseTimeNanoseconds."""
    import datetime

    ns = meta.get("baseTimeNanoseconds")
    if not isinstance(ns, int) or ns <= 0:
        return ""
    at = ns / 1e9 + t0_us * US
    return datetime.datetime.fromtimestamp(at, datetime.timezone.utc).strftime("%Y-%m-%d")


def _window(df) -> tuple[int, float, float]:
    """(iteration, start us, end us) of the last ProfilerStep, or the whole trace."""
    steps = df[df["name"].str.startswith("ProfilerStep#")]
    if len(steps):
        last = steps.sort_values("ts").iloc[-1]
        it = int(last["name"].split("#")[1]) if last["name"].split("#")[1].isdigit() else -1
        return it, float(last["ts"]), float(last["ts"] + last["dur"])
    timed = df[df["dur"] > 0]
    return -1, float(timed["ts"].min()), float((timed["ts"] + timed["dur"]).max())


def read_profile(path) -> Profile:
    """The last iteration of a Kineto trace (.json or .json.gz) as kernels."""
    path = Path(path)
    check_trace_file(path)
    meta, df = _frame(path)
    it, t0, t1 = _window(df)
    cpu_ops = df[df["cat"].isin(("cpu_op", "user_annotation"))]
    gpu = df[df["cat"] == "kernel"]
    nodes: dict[int, _Node] = {}
    for _, ev in cpu_ops.groupby("tid"):
        ordered = ev.assign(neg=-ev["dur"]).sort_values(["ts", "neg"])
        rows = zip(ordered.index, ordered["name"], ordered["ts"], ordered["dur"], strict=True)
        nodes.update(_nest(rows))
    cpu = len(gpu) == 0
    kernels = _cpu_kernels(df, nodes, t0, t1) if cpu else _gpu_kernels(df, gpu, nodes, t0, t1)
    if not kernels:
        raise InputError(path, "traceEvents", 0, "no kernels or aten ops in its last iteration")
    return Profile(
        str(path),
        _device(meta, cpu),
        cpu,
        tuple(sorted(kernels, key=lambda k: (k.start_s, k.stream))),
        (t1 - t0) * US,
        it,
        _date(meta, t0),
    )


def _comm(row) -> Comm | None:
    name = row.get("collective_name", "")
    if not isinstance(name, str) or not name:
        return None
    size = DTYPE_BYTES.get(str(row.get("msg_dtype", "")).lower(), 0)
    return Comm(
        name,
        float(row.get("in_msg_nelems", 0) or 0) * size,
        float(row.get("out_msg_nelems", 0) or 0) * size,
        int(row.get("group_size", 0) or 0),
    )


def _cpu_kernels(df, nodes, t0: float, t1: float) -> list[Kernel]:
    """Every aten op inside the window by its self time (user annotations left out)."""
    out = []
    for row, node in nodes.items():
        if node.ts < t0 or node.ts >= t1 or not node.name.startswith("aten::"):
            continue
        self_us = (node.end - node.ts) - node.child_us
        if self_us <= 0:
            continue
        r = df.loc[row]
        out.append(
            Kernel(
                node.name,
                (node.ts - t0) * US,
                self_us * US,
                -1,
                node.name,
                _dims(r["input_dims"]),
                node.backward,
                call=int(row),
            )
        )
    return out


def _owner(nodes_by_tid: dict, tid, ts: float) -> "_Node | None":
    """The innermost CPU op of thread tid that encloses instant ts."""
    best = None
    for node in nodes_by_tid.get(tid, ()):
        if node.ts <= ts < node.end and (best is None or node.ts >= best.ts):
            best = node
    return best


def _gpu_kernels(df, gpu, nodes, t0: float, t1: float) -> list[Kernel]:
    """Kernels starting inside the window, each with the CPU op that launched it (found through
    its launch call, HTA's index_correlation)."""
    import bisect

    by_tid: dict = {}
    for node in nodes.values():
        by_tid.setdefault(df.at[node.row, "tid"], []).append(node)
    starts = {tid: sorted(ns, key=lambda n: n.ts) for tid, ns in by_tid.items()}
    keys = {tid: [n.ts for n in ns] for tid, ns in starts.items()}
    out = []
    for _, k in gpu.iterrows():
        if not t0 <= k["ts"] < t1:
            continue
        launch = int(k.get("index_correlation", -1))
        owner, launch_ts = None, -1.0
        if launch >= 0 and launch in df.index:
            call = df.loc[launch]
            launch_ts = float(call["ts"])
            ns, ks = starts.get(call["tid"], []), keys.get(call["tid"], [])
            i = bisect.bisect_right(ks, launch_ts)
            owner = _owner({0: ns[max(0, i - 64) : i]}, 0, launch_ts)
        comm = _comm(df.loc[owner.row]) if owner is not None else None
        if comm is None and owner is not None and owner.parent is not None:
            comm = _comm(df.loc[owner.parent.row])
        out.append(
            Kernel(
                k["name"],
                (k["ts"] - t0) * US,
                float(k["dur"]) * US,
                int(k["stream"]),
                owner.name if owner else "",
                _dims(df.at[owner.row, "input_dims"]) if owner else (),
                owner.backward if owner else False,
                (launch_ts - t0) * US if launch_ts >= 0 else -1.0,
                comm,
                int(owner.row) if owner else -1,
            )
        )
    return out
