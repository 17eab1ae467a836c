"""Why vTrain's single-node file is a peer simulator's output, not measurement: the checks.

Three properties of `data/vtrain_single.csv` that no measured run has and vTrain's released
predictor (VIA-Research/vTrain `src/predictor.py` @f8dda847, a DAG of per-kernel CUPTI times
replayed per stream) has by construction:

* `affine_residual_ms`: with the other settings fixed, every row is affine in the layer count
  (dp = 1) and in the number of microbatches (all rows) to float rounding (~1e-13 ms);
  run-to-run noise alone would be ~0.1 ms.
* `stage_share`: the per-layer, per-microbatch cost at pp stages is exactly 1/pp of the
  pp = 1 cost (1e-15): no stage recomputes. Megatron with checkpointing recomputes every stage,
  vTrain's predictor with `use_checkpoint: true` every stage but the last; either would make
  the pp > 1 share ~(2f + b) / (f + b), about 4/3.
* `dp_term_residual_ms`: t(dp) - t(dp = 1, same microbatches per replica) equals vTrain's own
  all-reduce look-up (`compute_comm_time`: size rounded to MiB; above 1,024 MiB it divides by
  the 1 GiB row's busbw x 1024 as if it were MB/s of algorithm bandwidth) of the first stage's
  fp16 parameter bytes (vTrain's `model_params`, vocabulary 50,257), from its released
  `AR_GPU{n}_1M_1024M_LUT` files.
"""

import os
from collections import defaultdict
from pathlib import Path

VTRAIN_VOCAB_SIZE = 50257
"""vTrainConfig's default vocab_size (src/config.py); the validation configs do not set it."""


def _num(row: dict) -> dict:
    return {k: (float(v) if k == "iteration_time_ms" else int(v)) for k, v in row.items()}


def microbatches(r: dict) -> int:
    """vTrain's num_microbatch = (global_batch // dp) // micro_batch."""
    return (r["global_batch"] // r["dp"]) // r["micro_batch"]


_SHAPE = ("hidden", "heads", "seq_len", "micro_batch", "tp", "pp", "dp")


def affine_residual_ms(rows: list[dict], var: str) -> dict:
    """Largest distance (ms) of a row from the line through the first and last rows of its
    group, grouping rows that differ only in `var` ("layers" or "microbatches"); groups of
    three or more values count. Returns {groups, rows, worst_ms}."""
    groups: dict = defaultdict(dict)
    for r in map(_num, rows):
        x = r["layers"] if var == "layers" else microbatches(r)
        other = ("global_batch",) if var == "layers" else ("layers",)
        key = tuple(r[k] for k in _SHAPE + other)
        groups[key][x] = r["iteration_time_ms"]
    worst, n_groups, n_rows = 0.0, 0, 0
    for g in groups.values():
        if len(g) < 3:
            continue
        xs = sorted(g)
        slope = (g[xs[-1]] - g[xs[0]]) / (xs[-1] - xs[0])
        worst = max(worst, *(abs(g[xs[0]] + slope * (x - xs[0]) - g[x]) for x in xs))
        n_groups, n_rows = n_groups + 1, n_rows + len(xs)
    return {"groups": n_groups, "rows": n_rows, "worst_ms": worst}


def _cross_slope(g: dict) -> float | None:
    """d2t / (dL dm) from a 2 x 2 square of (layers, microbatches) points."""
    ls, ms = sorted({k[0] for k in g}), sorted({k[1] for k in g})
    for l0, l1 in ((a, b) for a in ls for b in reversed(ls) if b > a):
        for m0, m1 in ((a, b) for a in ms for b in reversed(ms) if b > a):
            if all(k in g for k in ((l0, m0), (l0, m1), (l1, m0), (l1, m1))):
                dt = g[l1, m1] - g[l1, m0] - g[l0, m1] + g[l0, m0]
                return dt / ((l1 - l0) * (m1 - m0))
    return None


def stage_share(rows: list[dict]) -> dict:
    """pp x (per-layer, per-microbatch cost at pp) / (the same at pp = 1), dp = 1 rows, per
    (hidden, micro_batch, tp, pp > 1) class: {classes, worst_deviation} from 1."""
    by: dict = defaultdict(dict)
    for r in map(_num, rows):
        if r["dp"] == 1:
            key = (r["hidden"], r["micro_batch"], r["tp"], r["pp"])
            by[key][r["layers"], microbatches(r)] = r["iteration_time_ms"]
    slope = {k: _cross_slope(g) for k, g in by.items()}
    devs = [
        abs(pp * s / slope[h, b, tp, 1] - 1)
        for (h, b, tp, pp), s in slope.items()
        if pp > 1 and s and slope.get((h, b, tp, 1))
    ]
    return {"classes": len(devs), "worst_deviation": max(devs, default=None)}


def read_allreduce_luts(folder) -> dict:
    """vTrain's get_allreduce_LUT: {gpus: {MiB: (time_ns, busbw_GBps)}} from AR_GPU*_LUT."""
    luts: dict = {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith("_LUT"):
            continue
        n = int(name.split("_")[1][3:])
        lines = (Path(folder) / name).read_text().splitlines()[1:]
        luts[n] = {
            int(f[0]) // 2**20: (int(f[-2]), float(f[-1])) for f in (ln.split(",") for ln in lines)
        }
    return luts


def vtrain_comm_ns(luts: dict, size_bytes: int, gpus: int) -> float:
    """vTrain's compute_comm_time for an in-node all-reduce, its quirks kept (see module)."""
    size_mb = round(size_bytes / 2**20)
    if size_mb in luts[gpus]:
        return luts[gpus][size_mb][0]
    return size_mb / (luts[gpus][1024][1] * 1024) * 1e9


def first_stage_bytes(r: dict) -> int:
    """fp16 bytes of vTrain's model_params on pipeline rank 0 (embeddings + its layers, and the
    logit layer when pp = 1)."""
    h, tp, v = r["hidden"], r["tp"], VTRAIN_VOCAB_SIZE
    layer = 6 * h + 12 * h * (h // tp) + 3 * h // tp + 4 * h // tp  # 4 norms, 2 biases
    n = (r["layers"] // r["pp"]) * layer + (v // tp) * h + r["seq_len"] * h
    if r["pp"] == 1:
        n += (v // tp) * h
    return 2 * n


def dp_term_residual_ms(rows: list[dict], lut_folder) -> dict:
    """{pairs, over_1gib, worst_ms}: t(dp) - t(dp = 1) against vtrain_comm_ns for every dp > 1
    row whose dp = 1 twin (same microbatches per replica) is in the file."""
    luts = read_allreduce_luts(lut_folder)
    rs = list(map(_num, rows))
    key = ("hidden", "layers", "micro_batch", "tp", "pp")
    ones = {
        tuple(r[k] for k in key) + (r["global_batch"],): r["iteration_time_ms"]
        for r in rs
        if r["dp"] == 1
    }
    worst, pairs, big = 0.0, 0, 0
    for r in rs:
        twin = ones.get(tuple(r[k] for k in key) + (r["global_batch"] // r["dp"],))
        if r["dp"] == 1 or twin is None:
            continue
        size = first_stage_bytes(r)
        term_ms = vtrain_comm_ns(luts, size, r["dp"]) / 1e6
        worst = max(worst, abs(r["iteration_time_ms"] - twin - term_ms))
        pairs, big = pairs + 1, big + (round(size / 2**20) > 1024)
    return {"pairs": pairs, "over_1gib": big, "worst_ms": worst}
