"""`simsp compare`'s text: one row a machine (and what-if) with its time, the times measured runs
like it took, the change against the machine's own row, throughput, communication and HBM; and
how exact simsp has been with each machine."""

from simsp.units import GIB


def _comm(r) -> tuple[float, float, float]:
    br = r.breakdown()
    return br["tp_comm_s"], br["pp_comm_s"], br["dp_comm_s"]


def compare_table(results, bases=None) -> str:
    """One row per machine (and what-if); `bases[i]` is the row result i is measured against,
    shown as the change of iteration time where given; `measured s`, the times measured runs
    like it took (its hardware file's p10-p90 of measured / simsp, present/accuracy.py)."""
    from simsp.present.accuracy import accuracy_of, measured_range

    width = max([24, *(len(r.hardware.label) for r in results)])
    lines = [
        f"{'hardware':{width}s} {'time s':>9s} {'measured s':>11s} {'vs base':>8s} {'MFU':>6s} "
        f"{'tokens/s':>10s} {'TP s':>7s} {'PP s':>7s} {'DP s':>7s} {'peak GiB':>9s} "
        f"{'HBM GiB':>8s} fits"
    ]
    for i, r in enumerate(results):
        base = bases[i] if bases else None
        change = (
            f"{r.iteration_time_s / base.iteration_time_s - 1:+8.1%}"
            if base is not None and base is not r
            else f"{'':8s}"
        )
        tp, pp, dp = _comm(r)
        t = r.workload.training
        group = accuracy_of(r.hardware, t.precision, stack=t.knob("stack"))
        lo, hi = measured_range(r.iteration_time_s, group) if group else (0.0, 0.0)
        band = f"{lo:.1f}-{hi:.1f}" if group else "-"
        lines.append(
            f"{r.hardware.label:{width}s} {r.iteration_time_s:9.3f} {band:>11s} {change} "
            f"{r.mfu():6.1%} "
            f"{r.tokens_per_s:10,.0f} {tp:7.3f} {pp:7.3f} {dp:7.3f} "
            f"{r.memory.peak_bytes / GIB:9.2f} {r.memory.capacity_bytes / GIB:8.0f} "
            f"{'yes' if r.memory.fits else 'no'}"
        )
    return "\n".join(lines)


def accuracy_lines(results) -> list[str]:
    """How exact simsp has been with each compared machine, a line each, each file's figures
    once (its what-if rows share them): a gap between machines is to be read beside each one's
    measured bias (on other runs)."""
    from simsp.present.accuracy import accuracy_line, accuracy_of

    seen, lines = set(), []
    for r in results:
        t = r.workload.training
        found = accuracy_of(r.hardware, t.precision, stack=t.stack)
        key = found or accuracy_line(r.hardware, t.precision, stack=t.stack)
        if key not in seen:
            seen.add(key)
            lines.append(found.line() if found else key)
    return lines
