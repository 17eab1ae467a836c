"""Size and time of `simsp overlay` for a 175B-sized iteration (the bar: a page under 20 MB).

No public trace of a GPT-3 175B step exists, so this writes a synthetic Kineto trace with one
stage-0 rank's kernel count: simsp's own simulated ops of workloads/gpt3-175b.yaml (TP 8, PP 8,
interleaved, 64 microbatches), each as a GPU kernel with its launching CPU op and runtime call
(GEMMs as aten::mm with their input dims), read back through the same reader and matcher.

    python benchmarks/overlay_size.py [--out-dir DIR]
"""

import argparse
import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from simsp.api import run  # noqa: E402
from simsp.io.config import load_hardware, load_workload  # noqa: E402
from simsp.measure.kineto.compare import compare_run, overlay_trace_json, sim_spans  # noqa: E402
from simsp.model.layer import build_layer  # noqa: E402
from simsp.present.timeline.overlay import overlay_html  # noqa: E402

WORKLOAD = REPO / "workloads" / "gpt3-175b.yaml"
NAMES = {
    "layernorm": "void at::native::vectorized_layer_norm_kernel",
    "softmax": "void scaled_masked_softmax_warp_forward",
    "gelu": "void bias_gelu_kernel",
    "dropout": "void fused_dropout_kernel",
    "bias_dropout_add": "void bias_dropout_add_kernel functor_add",
    "comm": "ncclDevKernel_AllGather_RING_LL",
}


def synthetic_trace(path: Path) -> int:
    """Write the trace; return its kernel count."""
    w = load_workload(WORKLOAD)
    r = run(w, load_hardware(None))
    ops = {o.name: o for o in build_layer(w.model, w.parallel, w.training.micro_batch)}
    events, t = [], 0.0
    for i, s in enumerate(sorted(sim_spans(r), key=lambda s: s.start_s)):
        base = s.name.split(" ")[0] if s.name not in ops else s.name
        op = ops.get(s.name) or ops.get(base)
        if op is not None and op.gemm is not None:
            g, name, cpu = op.gemm, "sm80_xmma_gemm_bf16bf16_bf16f32", "aten::mm"
            dims = [[g.m, g.k], [g.k, g.n]]
        else:
            kind = op.kind if op is not None else s.kind
            name, cpu, dims = NAMES.get(kind, f"void elementwise_kernel<{kind}>"), "aten::x", []
        ts = s.start_s * 1e6
        events += [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": cpu,
                "pid": 1,
                "tid": 1,
                "ts": ts - 5,
                "dur": 4,
                "args": {"External id": i, "Input Dims": dims},
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": ts - 4,
                "dur": 2,
                "args": {"correlation": i, "External id": i},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": name,
                "pid": 0,
                "tid": 7,
                "ts": ts,
                "dur": max(s.dur_s * 1e6, 0.5),
                "args": {"correlation": i, "External id": i, "stream": 7, "device": 0},
            },
        ]
        t = max(t, ts + s.dur_s * 1e6)
    events.insert(
        0,
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": -10,
            "dur": t + 20,
        },
    )
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}],
        "traceEvents": events,
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
    }
    with gzip.open(path, "wt") as f:
        json.dump(doc, f)
    return len(events) // 3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-dir", type=Path, default=Path(tempfile.mkdtemp(prefix="overlay-")))
    a = ap.parse_args(argv)
    a.out_dir.mkdir(parents=True, exist_ok=True)
    trace = a.out_dir / "gpt3-175b-synthetic.json.gz"
    t0 = time.perf_counter()
    kernels = synthetic_trace(trace)
    t1 = time.perf_counter()
    cmp = compare_run(trace, WORKLOAD)
    t2 = time.perf_counter()
    page, pf = a.out_dir / "overlay.html", a.out_dir / "overlay.json"
    page.write_text(overlay_html(cmp))
    pf.write_text(overlay_trace_json(cmp))
    t3 = time.perf_counter()
    mb = page.stat().st_size / 1e6
    print(
        f"{kernels} kernels ({trace.stat().st_size / 1e6:.1f} MB gz) written in {t1 - t0:.1f} s; "
        f"read + matched + simulated in {t2 - t1:.1f} s ({cmp.matching.matched_fraction:.1%} "
        f"matched); page {mb:.1f} MB, Perfetto JSON {pf.stat().st_size / 1e6:.1f} MB, drawn in "
        f"{t3 - t2:.1f} s -> {a.out_dir}"
    )
    return 0 if mb < 20 else 1


if __name__ == "__main__":
    raise SystemExit(main())
