"""Write tests/data/vtrain_multi_runs.csv: vTrain's 109 multi-node runs in the RUNS.csv schema of
`simsp calibrate --runs` (simsp/measure/runs.py), as a user would write their own runs.

    python tests/data/vtrain_multi_runs.py   # from the repository root

Each row of simsp/validate/data/vtrain_multi.csv (vTrain's ground_truth_multi.csv, MIT-style
licence, see vtrain_LICENSE there) becomes one run with the settings vTrain ran under
(Megatron-DeepSpeed: full recompute, 1F1B, no SP; GPT-2's vocabulary padded to 51,200), the
same workload `simsp validate --set vtrain-multi` builds (validate/cases.py), and its measured
iteration time in seconds.
"""

import csv
import io
from pathlib import Path

from simsp.textfile import write_text
from simsp.validate.cases import VTRAIN_PARALLEL, VTRAIN_VOCAB
from simsp.validate.data import read_vtrain

OUT = Path(__file__).with_name("vtrain_multi_runs.csv")
KEYS = ("layers", "hidden", "heads", "seq_len", "global_batch", "micro_batch", "tp", "pp", "dp")
HEADER = (
    "# vTrain multi-node runs (VIA-Research/vTrain data/ground_truth_multi.csv, MIT-style\n"
    "# licence, Copyright (c) 2024 VIA Research Group at KAIST; simsp/validate/data/\n"
    "# vtrain_LICENSE) in the RUNS.csv schema of `simsp calibrate --runs`; written by\n"
    "# tests/data/vtrain_multi_runs.py.\n"
)


def rows() -> list[dict]:
    out = []
    for i, row in enumerate(read_vtrain("multi"), start=1):
        run = {"name": f"multi-{i:04d}", **{k: row[k] for k in KEYS}, "vocab": VTRAIN_VOCAB}
        run.update({"sp": "false", "recompute": VTRAIN_PARALLEL["recompute"]})
        run["schedule"] = VTRAIN_PARALLEL["schedule"]
        run["iteration_s"] = f"{float(row['iteration_time_ms']) / 1e3:.6g}"
        out.append(run)
    return out


def main() -> None:
    runs = rows()
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(runs[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(runs)
    write_text(OUT, HEADER + buf.getvalue())
    print(f"wrote {OUT}: {len(runs)} runs")


if __name__ == "__main__":
    main()
