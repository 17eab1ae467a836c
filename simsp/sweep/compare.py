"""`simsp compare WORKLOAD --hardware A.yaml B.yaml`: one workload on several machines."""

import json

from simsp.units import GIB

from .execute import tokens_per_s


def compare_table(results) -> str:
    """One row per machine."""
    lines = [
        f"{'hardware':24s} {'time s':>9s} {'MFU':>6s} {'HFU':>6s} {'tokens/s':>10s} "
        f"{'peak GiB':>9s} {'HBM GiB':>8s} fits"
    ]
    for r in results:
        lines.append(
            f"{r.hardware.name[:24]:24s} {r.iteration_time_s:9.3f} {r.mfu():6.1%} {r.hfu():6.1%} "
            f"{tokens_per_s(r):10,.0f} "
            f"{r.memory.peak_bytes / GIB:9.2f} {r.memory.capacity_bytes / GIB:8.0f} "
            f"{'yes' if r.memory.fits else 'no'}"
        )
    return "\n".join(lines)


def cmd_compare(args) -> None:
    """`simsp compare`: one workload on several machines."""
    from simsp.arguments import overrides
    from simsp.config import load_hardware, load_workload
    from simsp.report import describe, run

    w = load_workload(args.workload, overrides(args))
    machines = [
        load_hardware(p) for p in (args.hardware or [None])
    ]  # every file checked before running
    results = [run(w, hw) for hw in machines]
    if args.json:
        print(json.dumps([r.to_dict() for r in results], indent=2))
    else:
        print(f"{w.name}: {describe(w, machines[0]).split(': ', 1)[1]}")
        print(compare_table(results))
