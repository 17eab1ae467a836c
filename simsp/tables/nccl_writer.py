"""nccl-tests logs out: a CollectiveTable written in the current nccl-tests layout, following
`NVIDIA/nccl-tests:src/util.cu` (printf widths, `getFloatStr`), so that nccl-tests' own readers
and simsp's (`nccl.read_nccl_log`) both read it."""

from simsp.errors import InputError
from simsp.tables.nccl import (
    BUSBW_FACTORS,
    PER_RANK_COUNT,
    REDOPS,
    TEST_NAMES,
    TYPE_BYTES,
    CollectiveTable,
)
from simsp.textfile import write_text


def write_nccl_log(
    table: CollectiveTable,
    path,
    *,
    dtype: str = "float",
    device: str = "",
    header_extra: dict | None = None,
) -> None:
    """Write `table` in the current nccl-tests layout (out-of-place numbers repeated in place).

    header_extra: overrides for the header fields (version, nccl_headers, nccl_library,
    warmup_iters, iters, agg_iters, validation, graph, hostname); any other key becomes a
    '# key: value' line after the parameter line, as nccl-tests prints its option notes.
    """
    if dtype not in TYPE_BYTES:
        raise InputError(path, "dtype", dtype, f"must be one of {', '.join(TYPE_BYTES)}")
    extra = dict(header_extra or {})
    lines = _header_lines(table, device, extra)
    lines += [
        _row_line(table, size, time, dtype)
        for size, time in zip(table.sizes_bytes, table.times_s, strict=True)
    ]
    lines += _footer_lines(table)
    write_text(path, "\n".join(lines) + "\n")  # whole, or an existing file kept


def _header_lines(table: CollectiveTable, device: str, extra: dict) -> list[str]:
    """Version, parameter, device and column-header lines as nccl-tests prints them."""
    get = extra.pop
    name, host = TEST_NAMES[table.op], str(get("hostname", "simsp"))
    lines = [
        f"# nccl-tests version {get('version', '2.17.9')} nccl-headers={get('nccl_headers', 0)} "
        f"nccl-library={get('nccl_library', 0)}",
        f"# Collective test starting: {name}",
        f"# nThread 1 nGpus {table.ranks} minBytes {table.sizes_bytes[0]} maxBytes "
        f"{table.sizes_bytes[-1]} step: {_step_text(table.sizes_bytes)} warmup iters: "
        f"{get('warmup_iters', 5)} iters: {get('iters', 20)} agg iters: {get('agg_iters', 1)} "
        f"validation: {get('validation', 1)} graph: {get('graph', 0)}",
    ]
    lines += [f"# {key}: {value}" for key, value in extra.items()]
    lines += ["#", "# Using devices"]
    lines += [
        (
            f"#  Rank {r:2d} Group {0:2d} Pid {0:6d} on {host:>10s} device {r:2d} [0000:00:00] "
            f"{device}"
        ).rstrip()
        for r in range(table.ranks)
    ]
    cols = ("time", "algbw", "busbw", "#wrong")
    units = ("(us)", "(GB/s)", "(GB/s)", "")
    block = "  %7s  %6s  %6s  %6s"
    lines += [
        "#",
        "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place"
        % ("", "", "", "", ""),
        (
            "# %10s  %12s  %8s  %6s  %6s" % ("size", "count", "type", "redop", "root")
            + block % cols * 2
        ),
        (
            "# %10s  %12s  %8s  %6s  %6s" % ("(B)", "(elements)", "", "", "") + block % units * 2
        ).rstrip(),
    ]
    return lines


def _step_text(sizes: tuple[int, ...]) -> str:
    """nccl-tests 'step:' field: '2(factor)' for geometric sweeps, 'N(bytes)' for linear ones."""
    ratios = {b / a for a, b in zip(sizes, sizes[1:], strict=False)}
    steps = {b - a for a, b in zip(sizes, sizes[1:], strict=False)}
    if len(ratios) == 1 and float(next(iter(ratios))).is_integer():
        return f"{int(ratios.pop())}(factor)"
    return f"{steps.pop() if len(steps) == 1 else 0}(bytes)"


def _row_line(table: CollectiveTable, size: int, time_s: float, dtype: str) -> str:
    """One data row: preamble, then the same out-of-place and in-place numbers."""
    per = TYPE_BYTES[dtype] * (table.ranks if table.op in PER_RANK_COUNT else 1)
    algbw = size / 1e9 / time_s
    busbw = algbw * BUSBW_FACTORS[table.op](table.ranks)
    body = (
        f"  {_float_str(time_s * 1e6, 7):>7}  {_float_str(algbw, 6):>6}  {_float_str(busbw, 6):>6}"
    )
    in_place_wrong = "    N/A" if table.op == "send_recv" else f"  {0:6g}"
    return (
        "%12li  %12li  %8s  %6s  %6i" % (size, size // per, dtype, REDOPS[table.op], -1)
        + body
        + f"  {0:6g}"
        + body
        + in_place_wrong
    )


def _footer_lines(table: CollectiveTable) -> list[str]:
    """Out-of-bounds, average bus bandwidth and conclusion lines."""
    busbw = table.busbw_gbps()
    return [
        f"# {'Out of bounds values':<20} : 0 OK",
        f"# {'Avg bus bandwidth':<20} : {sum(busbw) / len(busbw):g}",
        "#",
        f"# Collective test concluded: {TEST_NAMES[table.op]}",
    ]


def _float_str(value: float, width: int) -> str:
    """nccl-tests getFloatStr: 2, 1 or 0 decimals by magnitude, then exponent form."""
    power, val = 0, 1
    while value >= val:
        power, val = power + 1, val * 10
    if power < width - 2:
        return f"{value:{width}.2f}"
    if power < width - 1:
        return f"{value:{width}.1f}"
    if power < width + 1:
        return f"{value:{width}.0f}"
    return f"{value:{width}.1e}" if width >= 7 else f"{value:{width}.0e}"
