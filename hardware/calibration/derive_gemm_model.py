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

Writes hardware/calibration/<machine>/gemm_model.csv and (unless --no-readme) adds or replaces
the `gemm_model.csv` section at the end of hardware/calibration/<machine>/README.md.
"""

import argparse
import datetime
import importlib.metadata
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from simsp.calibration import LAYOUTS, GemmPoint, GemmTable, read_gemm_table, write_gemm_table  # noqa: E402

CAL_ROOT = REPO / "hardware" / "calibration"
SCRIPT = "hardware/calibration/derive_gemm_model.py"
PACKAGE = "nvidia-matmul-heuristics"
PRECISION = "TST"
"""A/B bf16, compute fp32, C/D bf16 (nvMatmulHeuristics.h precision letters)."""
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


def model_tflops(h, m: int, n: int, k: int, batch: int = 1, layout: str = "TN") -> float:
    """Unscaled model TFLOP/s of one (batched) GEMM: 2*m*n*k*batch over the best kernel's runtime."""
    nv = _nv()
    nv_layout = {"TN": nv.NvMatmulHeuristicsMatmulLayout.TN_ROW_MAJOR,
                 "NN": nv.NvMatmulHeuristicsMatmulLayout.NN_ROW_MAJOR,
                 "NT": nv.NvMatmulHeuristicsMatmulLayout.NT_ROW_MAJOR}[layout]
    results = h.get(h.makeNvMatmulHeuristicsProblem(m, n, k, nv_layout, batch_size=batch), 1, precision=PRECISION)
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


def grid() -> list[tuple[int, int, int, int, str]]:
    """Every (m, n, k, batch, layout) of the table: dense batch-1 shapes in all layouts, then the
    batched attention shapes in layout TN; no duplicates."""
    rows = {}
    for layout in LAYOUTS:
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


def update_readme(path: Path, section: str) -> None:
    """Append `section` to the README at `path`, replacing an earlier copy of it (from its heading
    to the end of the file, where it was appended)."""
    text = path.read_text() if path.exists() else ""
    head, found, _ = text.partition(README_HEADING)
    text = head.rstrip("\n") if found else text.rstrip("\n")
    path.write_text((text + "\n\n" if text else "") + section)


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
