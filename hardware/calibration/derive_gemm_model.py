"""Derive a MODELED GEMM throughput table (gemm_model.csv) for shapes no measured table covers.

Usage (from the repository root):

    python hardware/calibration/derive_gemm_model.py [--machine dgx-a100-80gb] [--gpu A100_SXM_80GB]
        [--date YYYY-MM-DD] [--out PATH] [--no-readme]

The measured table hardware/calibration/<machine>/gemm.csv covers large dense shapes (batch 1,
token dimension >= 4096) only. Batched attention GEMMs (QK^T, attention-over-V and their backward
shapes) and the small dense GEMMs of small models fall outside it; the cost model looks them up
in this second, modeled table before it falls back to the plain roofline.

Model: NVIDIA's nvMatmulHeuristics (PyPI `nvidia-matmul-heuristics`), GENERIC target,
PERF_MODEL_BASED_AUTO_TUNING, precision TST (bf16 in, fp32 compute, bf16 out); the runtime of
its best kernel gives TFLOP/s = 2*m*n*k*batch / runtime / 1e12. The model is optimistic at large
shapes (~15 % on A100), so every figure of a layout is multiplied by the geometric mean of
(measured / model) over all points of that layout in the machine's measured gemm.csv. A machine
without a measured table borrows the A100 factors (dgx-a100-80gb/gemm.csv vs the A100_SXM_80GB
model), and the file says so.

Hopper and Blackwell tables (hardware/calibration/derive_gemm_tables.py calls `derive` with
these options): `--anchor work` replaces the one factor per layout by a factor that depends on the
GEMM's work, because the model's error does: on H100 it is ~1.8x pessimistic at 256^3 and ~8 %
optimistic at 4096^3 (bf16, XLA sm_90), and 27 % optimistic at 8192^3 (fp8, Azure cuBLASLt); one
mean over small and large points would carry the small shapes' factor to transformer shapes.
`--precision fp8` models e4m3 x e4m3 -> bf16 (precision string QQTST), TN only (Transformer
Engine runs every FP8 GEMM of a linear layer as TN on transposed FP8 copies); `--cap` keeps every
modeled figure at or below the GPU's best measured rate (MAMF).

Writes hardware/calibration/<machine>/gemm_model.csv and (unless --no-readme) adds or replaces
the `gemm_model.csv` section of hardware/calibration/<machine>/README.md.
"""

import argparse
import datetime
import importlib.metadata
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from simsp.tables import LAYOUTS, GemmPoint, GemmTable, read_gemm_table, write_gemm_table  # noqa: E402

CAL_ROOT = REPO / "hardware" / "calibration"
SCRIPT = "hardware/calibration/derive_gemm_model.py"
PACKAGE = "nvidia-matmul-heuristics"
PRECISION = "TST"
"""A/B bf16, compute fp32, C/D bf16 (nvMatmulHeuristics.h precision letters)."""
PRECISIONS = {"bf16": "TST", "fp8": "QQTST"}
"""nvMatmulHeuristics.h: 3 letters A/B, compute, C/D; 5 letters A, B, C, compute, D. Q = fp8
E4M3, T = bf16, S = fp32: fp8 is e4m3 x e4m3 with fp32 accumulation and a bf16 output."""
PRECISION_TEXT = {"bf16": "bf16 in / fp32 compute / bf16 out",
                  "fp8": "fp8 e4m3 in / fp32 compute / bf16 out"}
REFERENCE_MACHINE = "dgx-a100-80gb"
REFERENCE_GPU = "A100_SXM_80GB"
"""Where the scale factors come from for machines without a measured gemm.csv."""
BATCHED_LAYOUT = "TN"
"""The cost model looks batched (attention) GEMMs up with layout TN."""

DENSE_M = tuple(2**i for i in range(8, 17))   # 256 .. 65536
DENSE_N = tuple(2**i for i in range(6, 17))   # 64 .. 65536
DENSE_K = tuple(2**i for i in range(6, 16))   # 64 .. 32768
ATTN_SEQ = tuple(2**i for i in range(8, 15))  # 256 .. 16384
ATTN_HEAD_DIM = (32, 64, 96, 128, 160, 256)
"""Powers of two plus 96 and 160, the head sizes of the paper's 22B (6144/64) and 530B/1T
(20480/128, 25600/160) models: tile quantisation makes them slower than interpolating between
64, 128 and 256 would say (2048x2048x96, batch 32: ~9 % lower)."""
ATTN_BATCH = tuple(2**i for i in range(0, 11))  # 1 .. 1024

README_HEADING = "## Modeled GEMM table: `gemm_model.csv`"


def _nv():
    """The nvMatmulHeuristics module (imported lazily so that --help works without it)."""
    import nvMatmulHeuristics
    return nvMatmulHeuristics


def package_version() -> str:
    """Installed version of nvidia-matmul-heuristics."""
    return importlib.metadata.version(PACKAGE)


def make_model(gpu: str):
    """nvMatmulHeuristics interface for `gpu` (a NvMatmulHeuristicsNvidiaGpu member name)."""
    nv = _nv()
    return nv.NvMatmulHeuristicsInterfaceEx(
        backend=nv.NvMatmulHeuristicsTarget.GENERIC,
        flags=nv.NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING,
        gpu=getattr(nv.NvMatmulHeuristicsNvidiaGpu, gpu))


def model_tflops(h, m: int, n: int, k: int, batch: int = 1, layout: str = "TN",
                 precision: str = PRECISION) -> float:
    """Unscaled model TFLOP/s of one (batched) GEMM: 2*m*n*k*batch over the best kernel's runtime."""
    nv = _nv()
    nv_layout = {"TN": nv.NvMatmulHeuristicsMatmulLayout.TN_ROW_MAJOR,
                 "NN": nv.NvMatmulHeuristicsMatmulLayout.NN_ROW_MAJOR,
                 "NT": nv.NvMatmulHeuristicsMatmulLayout.NT_ROW_MAJOR}[layout]
    results = h.get(h.makeNvMatmulHeuristicsProblem(m, n, k, nv_layout, batch_size=batch), 1, precision=precision)
    runtime = results[0]["runtime"] if results else 0.0
    if not runtime > 0 or not math.isfinite(runtime):
        raise RuntimeError(f"nvMatmulHeuristics gave no runtime for m={m} n={n} k={k} batch={batch} {layout}")
    return 2.0 * m * n * k * batch / runtime / 1e12


def scale_factors(h, measured: GemmTable) -> dict[str, tuple[float, float, int]]:
    """Per layout: (geometric mean of measured/model, std of ln(measured/model), point count)."""
    factors = {}
    for layout in LAYOUTS:
        logs = [math.log(p.tflops / model_tflops(h, p.m, p.n, p.k, p.batch, p.layout))
                for p in measured.points if p.layout == layout]
        if not logs:
            raise RuntimeError(f"{measured.source}: no {layout} points to scale the model with")
        mean = sum(logs) / len(logs)
        std = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)) if len(logs) > 1 else 0.0
        factors[layout] = (math.exp(mean), std, len(logs))
    return factors


WORK_BIN_LOG2 = 2.0
"""Width of one bin of the work-dependent scale, in log2 FLOPs (a factor 4 in work)."""
MIN_LAYOUT_POINTS = 8
"""A layout with fewer measured points than this takes the pooled curve of all layouts."""


def work_log2(m: int, n: int, k: int, batch: int = 1) -> float:
    """log2 of a GEMM's FLOPs, 2*m*n*k*batch."""
    return math.log2(2.0 * m * n * k * batch)


def work_curve(ratios: list[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    """(log2 FLOPs, ln(measured/model)) knots: the mean of ln ratio and of log2 FLOPs over the
    points of each WORK_BIN_LOG2-wide bin of log2 FLOPs (bins counted from 0), ascending."""
    bins: dict[int, list[tuple[float, float]]] = {}
    for w, r in ratios:
        bins.setdefault(math.floor(w / WORK_BIN_LOG2), []).append((w, r))
    return tuple((sum(w for w, _ in pts) / len(pts), sum(r for _, r in pts) / len(pts))
                 for _, pts in sorted(bins.items()))


def curve_value(curve: tuple[tuple[float, float], ...], w: float) -> float:
    """exp of the curve at log2 FLOPs w: linear between knots, the end knots' value beyond them."""
    if w <= curve[0][0]:
        return math.exp(curve[0][1])
    for (w0, r0), (w1, r1) in zip(curve, curve[1:]):
        if w <= w1:
            return math.exp(r0 + (r1 - r0) * (w - w0) / (w1 - w0))
    return math.exp(curve[-1][1])


def work_scales(h, measured: GemmTable, layouts, precision: str, pool: bool = False) -> dict[str, dict]:
    """Per layout: its work curve (from its own points, or pooled when it has too few or `pool`
    is set) and the spread of ln(measured/model) about it. Each point's ratio is taken against
    the model of its own layout, so pooling mixes ratios, not layouts."""
    def ratio(p):
        model = model_tflops(h, p.m, p.n, p.k, p.batch, p.layout if p.layout in layouts else layouts[0],
                             precision)
        return work_log2(p.m, p.n, p.k, p.batch), math.log(p.tflops / model)

    pooled = [ratio(p) for p in measured.points]
    out = {}
    for layout in layouts:
        own = [ratio(p) for p in measured.points if p.layout == layout]
        use_pooled = (pool or len(own) < MIN_LAYOUT_POINTS) and len(pooled) > len(own)
        points = pooled if use_pooled else own
        curve = work_curve(points)
        resid = [r - math.log(curve_value(curve, w)) for w, r in points]
        std = math.sqrt(sum(x * x for x in resid) / max(len(resid) - 1, 1))
        out[layout] = {"curve": curve, "std": std, "n": len(points), "pooled": use_pooled}
    return out


def attention_shapes() -> list[tuple[int, int, int]]:
    """(m, n, k) of every batched attention GEMM, forward and backward, over the s x d grid.

    Forward: QK^T (s, s, d) and attention-over-V (s, d, s). The backward of a forward GEMM
    (m, n, k) is the pair (m, k, n), (k, n, m) (simsp.cost.compute.attention_grad_shapes), which
    for these two yields (s, d, s), (d, s, s) and (s, s, d), (s, d, s).
    """
    shapes = set()
    for s in ATTN_SEQ:
        for d in ATTN_HEAD_DIM:
            for m, n, k in ((s, s, d), (s, d, s)):
                shapes.update({(m, n, k), (m, k, n), (k, n, m)})
    return sorted(shapes)


def grid(layouts=LAYOUTS) -> list[tuple[int, int, int, int, str]]:
    """Every (m, n, k, batch, layout) of the table: dense batch-1 shapes in `layouts`, then the
    batched attention shapes in layout TN; no duplicates."""
    rows = {}
    for layout in layouts:
        for m in DENSE_M:
            for n in DENSE_N:
                for k in DENSE_K:
                    rows.setdefault((m, n, k, 1, layout), None)
    for batch in ATTN_BATCH:
        for m, n, k in attention_shapes():
            rows.setdefault((m, n, k, batch, BATCHED_LAYOUT), None)
    return list(rows)


def _powers(values) -> str:
    return f"{values[0]}..{values[-1]} (powers of 2)"


def comments(version: str, gpu: str, machine: str, ref_machine: str, ref_gpu: str,
             factors: dict, n_rows: int, date: str, command: str) -> list[str]:
    """Provenance lines of gemm_model.csv (no 'device:'/'dtype:' lines: write_gemm_table adds them)."""
    borrowed = ref_machine != machine
    lines = [
        f"MODELED (not measured) GEMM throughput for {gpu}, bf16 in / fp32 compute / bf16 out, by shape.",
        f"model: {PACKAGE} {version} (python module nvMatmulHeuristics), NVIDIA",
        f"  NvMatmulHeuristicsInterfaceEx(backend=NvMatmulHeuristicsTarget.GENERIC,",
        f"  flags=NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING, gpu=NvMatmulHeuristicsNvidiaGpu.{gpu})",
        f"  runtime = get(makeNvMatmulHeuristicsProblem(m, n, k, layout, batch_size=batch), 1,"
        f" precision='{PRECISION}')[0]['runtime'] (s)",
        "  layout: TN -> TN_ROW_MAJOR (forward), NN -> NN_ROW_MAJOR (dgrad), NT -> NT_ROW_MAJOR (wgrad)",
        "formula: tflops = scale[layout] * 2*m*n*k*batch / runtime / 1e12",
        f"scale: per layout, geometric mean of (measured tflops / model tflops) over every point of that layout in"
        f" {ref_machine}/gemm.csv,",
        f"  model run for {ref_gpu}; corrects the model's optimism at large shapes"
        " (measured table: batch 1, token dimension >= 4096).",
    ]
    if borrowed:
        lines.append(f"  {machine} has no measured gemm.csv: these are the {ref_machine} ({ref_gpu}) factors, borrowed.")
    for layout in LAYOUTS:
        factor, std, count = factors[layout]
        lines.append(f"scale {layout}: {factor:.6f} (std of ln(measured/model) {std:.4f}, n={count})")
    lines += [
        f"grid: {n_rows} rows.",
        f"  dense, batch 1, layouts TN, NN, NT: m {_powers(DENSE_M)}, n {_powers(DENSE_N)}, k {_powers(DENSE_K)}.",
        f"  batched attention, layout {BATCHED_LAYOUT}, batch {_powers(ATTN_BATCH)}: for s {_powers(ATTN_SEQ)} and"
        f" head_dim d in {', '.join(map(str, ATTN_HEAD_DIM))},",
        "  (m, n, k) = (s, s, d) QK^T, (s, d, s) attention-over-V, and their backward shapes (m, k, n), (k, n, m):",
        "  i.e. (s, s, d), (s, d, s), (d, s, s). Batch-1 duplicates of dense rows are kept once (dense).",
        "use: the cost model looks a GEMM up in the measured gemm.csv first, then here, then the roofline;",
        "  lookups interpolate between points within a factor 2 in every dimension (GemmTable.lookup_tflops).",
        f"derived by: {command}",
        f"derived: {date}",
    ]
    return lines


def readme_section(version: str, gpu: str, machine: str, ref_machine: str, factors: dict, n_rows: int,
                   date: str, command: str) -> str:
    """The `gemm_model.csv` section of the machine's calibration README."""
    scale = ", ".join(f"{layout} {factors[layout][0]:.3f}" for layout in LAYOUTS)
    counts = "/".join(str(factors[layout][2]) for layout in LAYOUTS)
    origin = (f"every point of the measured `gemm.csv` in this folder ({counts} TN/NN/NT points)"
              if ref_machine == machine else
              f"the measured `{ref_machine}/gemm.csv` (this machine has no measured table; the A100 factors are borrowed)")
    return f"""{README_HEADING}

`gemm_model.csv` ({n_rows} rows, same columns as `gemm.csv`) is a **model, not a measurement**. It
exists because the measured `gemm.csv` only covers large dense GEMMs (batch 1, token dimension
>= 4096): the batched attention GEMMs (QK^T with m = n = s, k = head_dim, batch = micro-batch x
heads / TP; attention-over-V with m = k = s, n = head_dim; and their backward shapes) and the
small dense GEMMs of small models (m down to 256, n and k down to 64) fall outside it. The cost model looks a GEMM up
in `gemm.csv` first, then in `gemm_model.csv`, and only then falls back to its roofline.

Figures come from NVIDIA's `{PACKAGE}` {version} (PyPI; module `nvMatmulHeuristics`), a
performance model that runs without a GPU: GENERIC target, `PERF_MODEL_BASED_AUTO_TUNING`, GPU
`{gpu}`, precision `TST` (bf16 in, fp32 compute, bf16 out), runtime of its best kernel,
TFLOP/s = 2 m n k batch / runtime. Layouts TN/NN/NT map to its `TN_ROW_MAJOR`/`NN_ROW_MAJOR`/
`NT_ROW_MAJOR`. Grid: dense batch-1 shapes in all three layouts (m 256..65536, n 64..65536,
k 64..32768, powers of 2) and batched attention shapes in layout TN (s 256..16384 and batch
1..1024, powers of 2; head_dim {', '.join(map(str, ATTN_HEAD_DIM))}).

Scale: the model is optimistic at large shapes (reference section 4.4: ~15-20 % on A100), so each
layout's figures are multiplied by the geometric mean of measured / model TFLOP/s over
{origin}: {scale}. The spread of that ratio and the point counts are in the CSV's comments. Treat
absolute values for shapes far from the measured ones (tiny or heavily batched GEMMs) as
indicative; the model mainly supplies the shape trend (tile and wave quantisation).

Derived on {date} by `{command}`.
"""


def update_readme(path: Path, section: str, heading: str = README_HEADING) -> None:
    """Put `section` into the README at `path`: in place of an earlier copy of it (from its
    heading to the next '## ' heading or the end), else appended."""
    text = path.read_text() if path.exists() else ""
    head, found, rest = text.partition(heading)
    if not found:
        text = text.rstrip("\n")
        path.write_text((text + "\n\n" if text else "") + section)
        return
    _, more, tail = rest.partition("\n## ")
    after = ("\n## " + tail) if more else ""
    path.write_text(head.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n" + after)


def derive(machine: str, gpu: str, date: str, out: Path | None = None, readme: bool = True) -> dict:
    """Write gemm_model.csv (and the README section) for `machine`; return what was derived."""
    folder = CAL_ROOT / machine
    out = Path(out) if out else folder / "gemm_model.csv"
    measured_path = folder / "gemm.csv"
    if measured_path.exists():
        ref_machine, ref_gpu = machine, gpu
    else:
        ref_machine, ref_gpu = REFERENCE_MACHINE, REFERENCE_GPU
        measured_path = CAL_ROOT / ref_machine / "gemm.csv"
    h = make_model(gpu)
    factors = scale_factors(make_model(ref_gpu) if ref_gpu != gpu else h, read_gemm_table(measured_path))
    points = tuple(GemmPoint(m, n, k, b, layout, round(factors[layout][0] * model_tflops(h, m, n, k, b, layout), 3))
                   for m, n, k, b, layout in grid())
    version = package_version()
    command = f"python {SCRIPT} --machine {machine} --gpu {gpu} --date {date}"
    table = GemmTable(points, dtype="bf16", device=f"{gpu} (nvMatmulHeuristics model, scaled to measured)")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_gemm_table(table, out, comments(version, gpu, machine, ref_machine, ref_gpu, factors, len(points),
                                          date, command))
    if readme:
        update_readme(folder / "README.md",
                      readme_section(version, gpu, machine, ref_machine, factors, len(points), date, command))
    return {"path": out, "rows": len(points), "factors": factors, "reference": ref_machine}


# ---------------------------------------------------------------- anchored by work (Hopper, Blackwell)


def _curve_text(curve) -> str:
    return ", ".join(f"2^{w:.1f}: {math.exp(r):.3f}" for w, r in curve)


def anchored_comments(*, version: str, gpu: str, precision: str, layouts, scales: dict,
                      anchor_note: str, cap: float, n_rows: int, date: str, command: str) -> list[str]:
    """Provenance lines of a work-anchored model table."""
    letters = PRECISIONS[precision]
    lines = [
        f"MODELED (not measured) GEMM throughput for {gpu}, {PRECISION_TEXT[precision]}, by shape.",
        f"model: {PACKAGE} {version} (python module nvMatmulHeuristics), NVIDIA",
        "  NvMatmulHeuristicsInterfaceEx(backend=NvMatmulHeuristicsTarget.GENERIC,",
        f"  flags=NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING, gpu=NvMatmulHeuristicsNvidiaGpu.{gpu})",
        "  runtime = get(makeNvMatmulHeuristicsProblem(m, n, k, layout, batch_size=batch), 1,"
        f" precision='{letters}')[0]['runtime'] (s)",
        "  layout: TN -> TN_ROW_MAJOR (forward), NN -> NN_ROW_MAJOR (dgrad), NT -> NT_ROW_MAJOR (wgrad)",
        f"formula: tflops = min(scale[layout](W) * 2*m*n*k*batch / runtime / 1e12, {cap:g}),"
        " W = log2(2*m*n*k*batch)",
        f"cap: {cap:g} TFLOP/s, the best rate measured on this GPU (MAMF, ref §4.1 [S5]).",
        f"anchor: {anchor_note}",
        f"scale[layout](W): exp of ln(measured/model) averaged over the anchor points in bins of"
        f" {WORK_BIN_LOG2:g} in log2 FLOPs,",
        "  linear in W between bin means, the end bins' value beyond them (the model's error depends",
        "  on the work: too low for small GEMMs, too high for large ones).",
    ]
    for layout in layouts:
        sc = scales[layout]
        src = "pooled over all layouts" if sc["pooled"] else f"{layout} points"
        lines.append(f"scale {layout} ({src}, n={sc['n']}, std of ln about the curve {sc['std']:.4f}):"
                     f" {_curve_text(sc['curve'])}")
    attn = "" if precision == "fp8" else (
        f"; batched attention, layout {BATCHED_LAYOUT}, batch {_powers(ATTN_BATCH)}, s {_powers(ATTN_SEQ)},"
        f" head_dim {', '.join(map(str, ATTN_HEAD_DIM))}")
    lines += [
        f"grid: {n_rows} rows: dense, batch 1, layouts {', '.join(layouts)}: m {_powers(DENSE_M)},"
        f" n {_powers(DENSE_N)}, k {_powers(DENSE_K)}{attn}.",
        "use: the cost model looks a GEMM up in the measured table first, then here, then the roofline;",
        "  lookups interpolate between points within a factor 2 in every dimension (GemmTable.lookup_tflops).",
        f"derived by: {command}",
        f"derived: {date}",
    ]
    return lines


def derive_anchored(*, machine: str, gpu: str, precision: str, anchor: Path, anchor_gpu: str,
                    anchor_note: str, cap: float, date: str, out: Path, command: str,
                    pool: bool = False) -> dict:
    """Write a work-anchored model table for `gpu` to `out`: nvMatmulHeuristics for `gpu`, scaled
    by the work curve of the measured table `anchor` against the model of `anchor_gpu` (the same
    GPU, or a sibling when this one has no measurement), capped at `cap`; `pool`: one curve from
    the anchor points of every layout (work_scales)."""
    letters = PRECISIONS[precision]
    layouts = ("TN",) if precision == "fp8" else LAYOUTS
    h = make_model(gpu)
    h_anchor = h if anchor_gpu == gpu else make_model(anchor_gpu)
    scales = work_scales(h_anchor, read_gemm_table(anchor), layouts, letters, pool)
    rows = grid(layouts) if precision == "bf16" else [r for r in grid(layouts) if r[3] == 1]
    points = []
    for m, n, k, b, layout in rows:
        scale = curve_value(scales[layout]["curve"], work_log2(m, n, k, b))
        rate = min(scale * model_tflops(h, m, n, k, b, layout, letters), cap)
        points.append(GemmPoint(m, n, k, b, layout, round(rate, 3)))
    table = GemmTable(tuple(points), dtype=precision,
                      device=f"{gpu} (nvMatmulHeuristics model, scaled to measured)")
    write_gemm_table(table, out, anchored_comments(
        version=package_version(), gpu=gpu, precision=precision, layouts=layouts, scales=scales,
        anchor_note=anchor_note, cap=cap, n_rows=len(points), date=date, command=command))
    return {"path": out, "rows": len(points), "scales": scales, "layouts": layouts}


def main(argv=None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--machine", default=REFERENCE_MACHINE,
                        help="calibration folder under hardware/calibration (default: dgx-a100-80gb)")
    parser.add_argument("--gpu", default=REFERENCE_GPU,
                        help="NvMatmulHeuristicsNvidiaGpu member (default: A100_SXM_80GB)")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="date recorded in the files")
    parser.add_argument("--out", default=None, help="output CSV (default: hardware/calibration/<machine>/gemm_model.csv)")
    parser.add_argument("--no-readme", action="store_true", help="do not touch the machine's README.md")
    args = parser.parse_args(argv)
    result = derive(args.machine, args.gpu, args.date, args.out, readme=not args.no_readme)
    print(f"{result['path']}: {result['rows']} rows, {result['path'].stat().st_size} bytes")
    for layout, (factor, std, count) in result["factors"].items():
        print(f"  scale {layout}: {factor:.4f} (std ln {std:.4f}, n={count}, from {result['reference']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
