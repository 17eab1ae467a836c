"""Eager PyTorch against fused (Liger) element-wise kernels, from Liger-Kernel's published
microbenchmarks: writes hardware/calibration/sources/liger-kernel/eager_vs_fused.csv.

Source: linkedin/Liger-Kernel benchmark/data/all_benchmark_data.csv @ead96b61, the rows of the
kernels below on A100 / H100 kept verbatim in sources/liger-kernel/ (README there: the harness,
the benchmark scripts each row came from, the caveats). This is the evidence simsp's pricing of
eager (unfused) element-wise work is checked against; it prices nothing itself.

One output row per (kernel, provider, GPU, shape, direction) of the speed rows, the median (p50)
time. Direction: fwd (forward only), bwd, full (forward + backward in one timed call). In the
`megatron_*` benchmarks the `backward` row re-runs the forward inside the timed loop ("backward
includes forward ... subtract the forward measurement", the scripts' comments): there bwd is that
row minus the forward row. Elsewhere `backward` times the backward alone (retain_graph).

Bytes: what ONE fused kernel per direction must move through HBM, counting only the tensors that
scale with tokens x width (inputs read, outputs written, gradients read and written) at the
benchmark's activation dtype. Not counted: weights, per-row statistics, RoPE cos/sin tables,
targets, and the `.sum()` the megatron harness runs on the output. swiglu / geglu (0.2.1) time
Hugging Face's whole LlamaMLP, three GEMMs included: no bytes. gbps = bytes / ms.

    python hardware/calibration/derive_torch_kernels.py          # writes the CSV, prints it
"""

import csv
import io
import json
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LIGER = REPO / "hardware" / "calibration" / "sources" / "liger-kernel"
SOURCE = LIGER / "all_benchmark_data.selected.csv"
OUTPUT = LIGER / "eager_vs_fused.csv"

CLASS = {
    # (kernel, provider): eager (what eager PyTorch / Hugging Face / Megatron without fusion
    # run), torchscript (Megatron's @jit_fuser fusions), fused (Liger's Triton kernel), partial
    # (eager residual add, Liger's RMSNorm kernel)
    "torch": "eager",
    "huggingface": "eager",
    "megatron-unfused": "eager",
    "megatron-fused": "torchscript",
    "liger": "fused",
    "liger_in_place": "fused",
    "liger_fused_add_rms_norm": "fused",
    "liger_rms_norm": "partial",
}
MEGATRON_PROVIDER = {"megatron_rms_norm": "eager", "megatron_swiglu": "torchscript"}
"""`megatron` in megatron_rms_norm is WrappedTorchNorm, i.e. torch.nn.RMSNorm; in
megatron_swiglu it is bias_swiglu_impl, TorchScript-fused (the scripts' docstrings)."""

DTYPE_BYTES = {"torch.bfloat16": 2, "torch.float16": 2, "torch.float32": 4}
DEFAULT_DTYPE = {
    # kernels whose config names no dtype: the dtype their script builds the tensors in
    "megatron_rms_norm": "torch.bfloat16",
    "megatron_swiglu": "torch.bfloat16",
    "megatron_cross_entropy": "torch.bfloat16",
    "cross_entropy": "torch.float32",  # torch.randn(B * T, V) at 0.2.1
}
DIRECTION = {"forward": "fwd", "backward": "bwd", "full": "full"}
FLAT_SIZE, FLAT_TIME = 2.0, 1.1
"""A row is `flat` when a point of its sweep at least FLAT_SIZE times larger takes less than
FLAT_TIME times as long, or one at least FLAT_SIZE times smaller takes more than 1 / FLAT_TIME
of its time: its time does not follow the bytes (a launch / harness floor)."""

HEADER = [
    "kernel",
    "provider",
    "class",
    "gpu",
    "liger_version",
    "dtype",
    "shape",
    "direction",
    "timed",
    "ms",
    "bytes",
    "gbps",
    "flat",
]
COMMENT = """\
# simsp: DERIVED by hardware/calibration/derive_torch_kernels.py from the verbatim rows in
# all_benchmark_data.selected.csv (linkedin/Liger-Kernel benchmark/data/all_benchmark_data.csv
# @ead96b618e5c67bddc6a6e9bcb99bfe6b5ab661c; README.md beside this file).
# ms: the row's p50 (triton do_bench; CUDA events in megatron_cross_entropy). direction fwd / bwd /
# full; megatron_* bwd = their `backward` row (which re-runs the forward) minus the forward row.
# class: eager (torch, huggingface, megatron-unfused, megatron_rms_norm's nn.RMSNorm), torchscript
# (Megatron @jit_fuser), fused (Liger Triton), partial (eager add + Liger RMSNorm).
# bytes: HBM traffic ONE fused kernel per direction must move, counting only tensors that scale
# with tokens x width (no weights, row statistics, RoPE cos/sin, targets, harness .sum()), at the
# row's dtype size e. Norms, n = tokens x hidden: fwd 2n e (x, y), bwd 3n e (x, dy, dx). Fused
# add + RMSNorm: fwd 4n e (x, r, y, sum), bwd 4n e (dy, dsum, sum, dx). RoPE, n = q + k elements:
# fwd 2n e, bwd 2n e. SwiGLU, n = tokens x ffn: fwd 3n e, bwd 5n e. Cross-entropy, n = logits:
# fwd 1n e, bwd 2n e (read logits, write grad). full = fwd + bwd. Empty for swiglu / geglu 0.2.1
# (they time HF's whole LlamaMLP, GEMMs included). gbps = bytes / ms, decimal GB/s.
# flat = 1: a point of the same sweep >= 2x larger takes < 1.1x the time, or one >= 2x smaller
# takes > 1/1.1 of it: the row sits on a launch / harness floor (the ~0.27-0.30 ms of small full
# rows), not on bandwidth, and its gbps is not a bandwidth.
"""


def _config(row: dict) -> dict:
    return json.loads(row["extra_benchmark_config_str"])


def _dtype(row: dict, cfg: dict) -> str:
    return cfg.get("dtype", DEFAULT_DTYPE.get(row["kernel_name"], ""))


def shape_of(row: dict) -> tuple[str, dict]:
    """('S=4096 B=1 H=4096', {dimension: value}) of a row: its config and its x."""
    cfg = _config(row)
    dims = {k: v for k, v in cfg.items() if isinstance(v, int) and not isinstance(v, bool)}
    dims[row["x_name"]] = int(row["x_value"])
    return " ".join(f"{k}={v}" for k, v in dims.items()), dims


def fused_bytes(kernel: str, dims: dict, e: int) -> tuple[int, int] | None:
    """(forward, backward) bytes one fused kernel must move (the module docstring), or None."""
    if kernel in ("rms_norm", "layer_norm"):
        n = dims["M"] * dims.get("H", dims.get("N", 0))
        return 2 * n * e, 3 * n * e
    if kernel == "megatron_rms_norm":
        n = dims["S"] * dims["B"] * dims["H"]
        return 2 * n * e, 3 * n * e
    if kernel == "fused_add_rms_norm":
        n = dims["M"] * dims["H"]
        return 4 * n * e, 4 * n * e
    if kernel in ("rope", "llama4_rope"):
        seq = dims["seq_len"] if "seq_len" in dims else dims["T"]
        hidden = dims["hidden_size"] if "hidden_size" in dims else dims["H"]
        head_dim = hidden // dims["num_q_heads"]
        n = seq * head_dim * (dims["num_q_heads"] + dims["num_kv_heads"])
        return 2 * n * e, 2 * n * e
    if kernel == "megatron_swiglu":
        n = dims["S"] * dims["B"] * dims["ffn_local"]
        return 3 * n * e, 5 * n * e
    if kernel == "megatron_cross_entropy":
        n = dims["S"] * dims["B"] * dims["V"]
        return n * e, 2 * n * e
    if kernel == "cross_entropy":
        n = dims["B"] * dims["T"] * dims["V"]
        return n * e, 2 * n * e
    return None


def _class(kernel: str, provider: str) -> str:
    if provider == "megatron":
        return MEGATRON_PROVIDER[kernel]
    return CLASS[provider]


def _timed(kernel: str, mode: str) -> str:
    if mode == "forward":
        return "forward"
    if mode == "full":
        return "forward+backward"
    if kernel.startswith("megatron_"):
        return "backward row - forward row"
    return "backward (retain_graph)"


def _flat(row: dict, other: dict) -> bool:
    """Whether `other`, a point of the same sweep, shows `row`'s time not following its size."""
    if other["_x"] >= FLAT_SIZE * row["_x"]:
        return other["ms"] < FLAT_TIME * row["ms"]
    if other["_x"] * FLAT_SIZE <= row["_x"]:
        return other["ms"] * FLAT_TIME > row["ms"]
    return False


def _fmt(x: float) -> str:
    return f"{x:.5g}"


def derive(source_text: str) -> str:
    """The eager_vs_fused.csv text of Liger's selected rows (the module docstring)."""
    rows = [r for r in csv.DictReader(io.StringIO(source_text)) if r["metric_name"] == "speed"]
    p50 = {
        (
            r["kernel_name"],
            r["kernel_provider"],
            r["gpu_name"],
            r["extra_benchmark_config_str"],
            r["x_value"],
            r["kernel_operation_mode"],
        ): float(r["y_value_50"])
        for r in rows
    }
    out = []
    for r in rows:
        kernel, provider, mode = r["kernel_name"], r["kernel_provider"], r["kernel_operation_mode"]
        key = (kernel, provider, r["gpu_name"], r["extra_benchmark_config_str"], r["x_value"])
        ms = float(r["y_value_50"])
        if mode == "backward" and kernel.startswith("megatron_"):
            ms -= p50[(*key, "forward")]
        cfg = _config(r)
        dtype = _dtype(r, cfg)
        shape, dims = shape_of(r)
        both = fused_bytes(kernel, dims, DTYPE_BYTES[dtype])
        nbytes = None
        if both is not None:
            nbytes = {"forward": both[0], "backward": both[1], "full": sum(both)}[mode]
        out.append(
            {
                "kernel": kernel,
                "provider": provider,
                "class": _class(kernel, provider),
                "gpu": r["gpu_name"],
                "liger_version": r["liger_version"],
                "dtype": dtype.removeprefix("torch."),
                "shape": shape,
                "direction": DIRECTION[mode],
                "timed": _timed(kernel, mode),
                "ms": ms,
                "bytes": nbytes,
                "_sweep": (*key[:4], r["x_name"], mode),
                "_x": int(r["x_value"]),
            }
        )
    sweeps = defaultdict(list)
    for row in out:
        sweeps[row["_sweep"]].append(row)
    for row in out:
        row["flat"] = int(any(_flat(row, o) for o in sweeps[row["_sweep"]]))
    order = {"fwd": 0, "bwd": 1, "full": 2}
    out.sort(
        key=lambda r: (
            (*r["_sweep"][:1], *r["_sweep"][2:5], r["_x"], order[r["direction"]])
            + (r["class"], r["provider"])
        )
    )
    buf = io.StringIO()
    buf.write(COMMENT)
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(HEADER)
    for row in out:
        nbytes = row["bytes"]
        gbps = (
            "" if nbytes is None or row["ms"] <= 0 else f"{nbytes / (row['ms'] * 1e-3) / 1e9:.1f}"
        )
        values = {
            **row,
            "ms": _fmt(row["ms"]),
            "bytes": "" if nbytes is None else nbytes,
            "gbps": gbps,
        }
        writer.writerow([values[h] for h in HEADER])
    return buf.getvalue()


def main() -> None:
    text = derive(SOURCE.read_bytes().decode())
    OUTPUT.write_text(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
