"""`simsp compare`'s text: one row a machine (and what-if) with its time, the times measured runs
like it took, the change against the machine's own row, throughput, communication and HBM; and
how exact simsp has been with each machine."""

from simsp.present.table import Column, render, words
from simsp.units import GIB


def _comm(r) -> tuple[float, float, float]:
    br = r.breakdown()
    return br["tp_comm_s"], br["pp_comm_s"], br["dp_comm_s"]


def compare_table(results, bases=None, width: int | None = None) -> str:
    """One row per machine (and what-if); `bases[i]` is the row result i is measured against,
    shown as the change of iteration time where given; `measured s`, the times measured runs
    like it took (its hardware file's p10-p90 of measured / simsp, present/accuracy.py)."""
    from simsp.present.accuracy import accuracy_of, measured_range

    columns = [
        words("hardware", fold=True),
        *(Column(h) for h in ("time s", "measured s", "vs base", "MFU", "tokens/s")),
        *(Column(h) for h in ("TP s", "PP s", "DP s", "peak GiB", "HBM GiB")),
        words("fits"),
    ]
    rows = []
    for i, r in enumerate(results):
        base = bases[i] if bases else None
        change = (
            f"{r.iteration_time_s / base.iteration_time_s - 1:+.1%}"
            if base is not None and base is not r
            else ""
        )
        t = r.workload.training
        group = accuracy_of(r.hardware, t.precision, stack=t.knob("stack"))
        lo, hi = measured_range(r.iteration_time_s, group) if group else (0.0, 0.0)
        rows.append(
            [
                r.hardware.label,
                f"{r.iteration_time_s:.3f}",
                f"{lo:.1f}-{hi:.1f}" if group else "-",
                change,
                f"{r.mfu():.1%}",
                f"{r.tokens_per_s:,.0f}",
                *(f"{s:.3f}" for s in _comm(r)),
                f"{r.memory.peak_bytes / GIB:.2f}",
                f"{r.memory.capacity_bytes / GIB:.0f}",
                "yes" if r.memory.fits else "no",
            ]
        )
    return render(columns, rows, width)


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
