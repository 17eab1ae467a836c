"""`simsp compare WORKLOAD --hardware A.yaml B.yaml`: one workload on several machines, and
`--what-if SECTION.KEY=V1,V2`: each machine again with a hardware key changed, one row a value
(`--what-if network.nic_gbps=200,800` prices the run on half and twice the NIC rate beside the
file's own), with the communication times and the change against the machine's own row."""

import json

from simsp.errors import InputError


def what_if_sets(texts: list[str]) -> list[tuple[str, ...]]:
    """`--what-if KEY=V1,V2` -> one `--set` list a value ([("KEY=V1",), ("KEY=V2",)])."""
    variants = []
    for text in texts:
        key, sep, values = str(text).partition("=")
        if not sep or not values.strip():
            raise InputError(
                "--what-if", key.strip() or "SECTION.KEY", values, "must be SECTION.KEY=V1,V2,..."
            )
        variants.extend((f"{key.strip()}={v.strip()}",) for v in values.split(","))
    return variants


def cmd_compare(args) -> None:
    """`simsp compare`: one workload on several machines, each with its what-ifs."""
    from simsp.api import run
    from simsp.cli.arguments import overrides
    from simsp.io.config import load_hardware, load_workload, workload_hardware
    from simsp.present.compare import accuracy_lines, compare_table
    from simsp.present.report import describe, result_json

    w = load_workload(args.workload, overrides(args))
    variants = [()] + what_if_sets(getattr(args, "what_if", None) or [])
    sets = list(args.hardware_set)
    machines = [  # every file and what-if checked before running
        [load_hardware(p, sets + list(v)) for v in variants]
        for p in (args.hardware or [workload_hardware(args.workload)])
    ]
    results, bases = [], []
    for row in machines:
        own = run(w, row[0])
        results.append(own)
        bases.append(own)
        for hw in row[1:]:
            results.append(run(w, hw))
            bases.append(own)
    if args.json:
        print(json.dumps([result_json(r) for r in results], indent=2))
    else:
        print(f"{w.name}: {describe(w, machines[0][0]).split(': ', 1)[1]}")
        print(compare_table(results, bases if len(variants) > 1 else None))
        print("\n".join(accuracy_lines(results)))
