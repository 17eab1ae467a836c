"""What a `simsp calibrate --runs` fit costs against what simsp estimates before it
starts (measure/fit_work.py fit_points, fit_seconds; --max-seconds refuses past it).

Two runs files: 300 runs of one model (GPT-3 175B layers at several parallel layouts, generated
here) and vTrain's 109 multi-node runs (109 models, tests/data/vtrain_multi_runs.csv). Each is
fitted as `simsp calibrate --runs` fits it (3 parameters, 5 folds), in process CPU time, and the
points the fit evaluated are counted.

    python benchmarks/fit_work.py
"""

import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simsp.io.config import load_hardware  # noqa: E402
from simsp.measure import fit as F  # noqa: E402
from simsp.measure import fit_work as W  # noqa: E402
from simsp.measure.runs import read_runs  # noqa: E402


def one_model(folder: Path) -> Path:
    """300 runs of GPT-3 175B's workload at random layouts (the times are arbitrary)."""
    rng = random.Random(1)
    lines = ["name,workload,tp,pp,dp,micro_batch,global_batch,schedule,virtual_stages,iteration_s"]
    for i in range(300):
        tp, pp, dp = rng.choice([1, 2, 4, 8]), rng.choice([1, 2, 4]), rng.choice([1, 2, 4])
        gb = rng.choice([64, 128, 256])
        lines.append(
            f"r{i},{ROOT / 'workloads' / 'gpt3-175b.yaml'},{tp},{pp},{dp},1,{gb},1f1b,1,"
            f"{rng.uniform(5, 50):.2f}"
        )
    path = folder / "one-model.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def measure(path: Path, hw_path: Path) -> None:
    hw, runs = load_hardware(hw_path), read_runs(path, allow_outside=True)
    params, skipped = F.usable(tuple(F.BY_NAME), hw, asked=False)
    seen = []
    init = F._Evaluator.__init__

    def counting(self, *a, **k):
        init(self, *a, **k)
        seen.append(self)

    F._Evaluator.__init__ = counting
    try:
        t0 = time.process_time()
        F.cross_validated_fit(runs, hw, params, skipped, 5)
        cpu = time.process_time() - t0
    finally:
        F._Evaluator.__init__ = init
    points = len(seen[0].seen)
    print(
        f"{path.name}: {len(runs)} runs, {len(params)} parameters, 5 folds: "
        f"{points} points evaluated ({W.fit_points(len(params), 5)} counted); "
        f"{cpu:.1f} s CPU measured, {W.fit_seconds(runs, len(params), 5):.1f} s estimated"
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        measure(one_model(Path(tmp)), ROOT / "hardware" / "dgx-a100-80gb.yaml")
    measure(
        ROOT / "tests" / "data" / "vtrain_multi_runs.csv", ROOT / "hardware" / "vtrain-a100.yaml"
    )


if __name__ == "__main__":
    main()
