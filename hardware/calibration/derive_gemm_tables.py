"""Derive the GEMM tables of the Hopper and Blackwell machines, measured and modeled, BF16 and FP8.

Usage (from the repository root):

    python hardware/calibration/derive_gemm_tables.py [--simumax-b200 PATH] [--date YYYY-MM-DD]

Writes, under hardware/calibration/:

* measured tables (`gemm.csv` bf16, `gemm_fp8.csv` fp8 e4m3), each row a published measurement
  (but gb200-nvl72/gemm.csv, TRANSFERRED from the B200's, below):
  dgx-h100/gemm.csv (XLA sm_90, 125 shapes), dgx-h100/gemm_fp8.csv and hgx-h200/gemm_fp8.csv and
  gb200-nvl72/gemm_fp8.csv (Azure cuBLASLt FP8 sweeps), dgx-b200/gemm.csv (SimuMax's B200 sweep,
  432 shapes under 514 keys, read from its JSON file: PATH, default hardware/calibration/dgx-b200/sources/simumax_b200_bf16_ceperm.json;
  without it the committed file is kept and read), and gb200-nvl72/gemm.csv, those B200 rows
  carried over to the GB200 (`transferred_gb200`);
* modeled tables (`gemm_model.csv`, `gemm_model_fp8.csv`) for all four machines: NVIDIA's
  nvMatmulHeuristics anchored by work to a measured table (derive_gemm_model.derive_anchored),
  capped at the GPU's MAMF (ref §4.1 [S5]);
* the "## GEMM tables" section of each machine's README.md (the rest of it is derive_library.py's).

MAMF maxima are caps, not rows: a best shape found by a search is the top of its neighbourhood,
and a table interpolates between neighbours.
"""

import argparse
import datetime
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import derive_gemm_model as model  # noqa: E402
import published_gemm as pub  # noqa: E402

from simsp.tables import GemmPoint, GemmTable, read_gemm_table, write_gemm_table  # noqa: E402

CAL = REPO / "hardware" / "calibration"
SCRIPT = "hardware/calibration/derive_gemm_tables.py"
HEADING = "## GEMM tables (measured and modeled)"
SIMUMAX_B200 = REPO / "hardware" / "calibration" / "dgx-b200" / "sources" / "simumax_b200_bf16_ceperm.json"
"""A copy of SimuMax's file at the commit below, with its Apache-2.0 licence beside it."""
SIMUMAX_SRC = (
    "MooreThreads/SimuMax:configs/system/b200_bf16_ceperm.json@4dcaae513ba7679d56c116a17cd4a691ec41e252 "
    "(Apache-2.0), accelerator.op.matmul.accurate_efficient_factor: bf16 GEMMs timed on a B200 by "
    "SimuMax's efficiency test (tools/b200/build_current_machine_system_config.py), as a fraction "
    "of accelerator.op.matmul.tflops (2250)"
)
_SIMUMAX_KEY = re.compile(r"b=(\d+), m=(\d+), k=(\d+), n=(\d+), layout=(\w+)")


@dataclass(frozen=True)
class Measured:
    """One measured table: its rows and provenance."""

    machine: str
    name: str
    points: tuple
    dtype: str
    device: str
    what: str
    source: str
    derivation: str
    kind: str = "MEASURED"
    """MEASURED, or TRANSFERRED: another GPU's measured rows carried over by a stated rule."""


@dataclass(frozen=True)
class Modeled:
    """One modeled table: the GPU modeled and the measured table it is anchored to."""

    machine: str
    name: str
    gpu: str
    precision: str
    anchor: str
    """Measured table, relative to hardware/calibration."""
    anchor_gpu: str
    cap: float
    note: str
    pool_layouts: bool = False
    """One work curve from the anchor points of every layout (each against the model of its own
    layout) for all layouts: set where the anchor's layouts are partly a storage convention."""


def merged(points) -> tuple:
    """One row per (m, n, k, batch, layout), in first-seen order: the median of the sources that
    measured the same shape (GemmTable keeps the first row of a key, so duplicates would drop one
    source silently)."""
    by_key: dict = {}
    for p in points:
        by_key.setdefault((p.m, p.n, p.k, p.batch, p.layout), []).append(p.tflops)
    return tuple(GemmPoint(*key, tflops=round(statistics.median(v), 3)) for key, v in by_key.items())


LARGE_NOTE = ("; the median where two sources measured one shape (8192^3: "
              "{dup})")


def xla_h100() -> Measured:
    xla = [GemmPoint(m, n, k, 1, "TN", tf) for m, n, k, tf in pub.XLA_SM90_BF16]
    large = [GemmPoint(m, n, k, 1, "NN", tf) for _, m, n, k, tf in pub.H100_LARGE_BF16]
    points = merged(xla + large)
    extra = len(points) - len(xla)
    dup = ", ".join(f"{src} {tf:g}" for src, m, *_, tf in pub.H100_LARGE_BF16 if m == 8192)
    return Measured("dgx-h100", "gemm.csv", points, "bf16", "Hopper sm_90 (XLA's rows: the file names no SKU) and H100 SXM (the square rows)",
                    f"{len(points)} measured bf16 GEMM shapes, batch 1: XLA's {len(xla)}, m, n, k in 256..4096 "
                    "(powers of 2; layout not recorded there, stored as TN, NN/NT lookups use it), then "
                    f"{extra} square H100 SXM shapes 4096..16384 measured as row-major A @ B (torch.mm, "
                    "JAX), stored as NN",
                    f"{pub.XLA_SM90_SRC}; square rows: {pub.H100_LARGE_SRC['zzc0721']}; "
                    f"{pub.H100_LARGE_SRC['marin']}",
                    "none (transcribed; TFLOP/s to 4 significant digits)" + LARGE_NOTE.format(dup=dup))


def azure_fp8(machine: str, gpu: str) -> Measured:
    azure = [GemmPoint(m, n, k, 1, "TN", tf) for m, n, k, tf in pub.AZURE_FP8[gpu]]
    large = [GemmPoint(m, n, k, 1, "TN", tf) for _, m, n, k, tf in pub.H100_LARGE_FP8] if gpu == "H100" else []
    points = merged(azure + large)
    source = pub.AZURE_FP8_SRC.format(page=pub.AZURE_PAGES[gpu])
    derivation = "none (transcribed from the reference)"
    if large:
        source += f"; and marin's fp8 rows: {pub.H100_LARGE_SRC['marin']}"
        derivation += "; 8192^3 and 16384^3, measured by both, are the median of Azure's and marin's"
    return Measured(machine, "gemm_fp8.csv", points, "fp8", f"NVIDIA {gpu} (Azure ND {gpu} VM)",
                    f"{len(points)} measured FP8 e4m3 GEMM shapes (m = n = k sweep"
                    + (", odd shapes" if len(points) > 6 else "") + "), stored as TN",
                    source, derivation)


def simumax_b200(path: Path) -> Measured:
    matmul = json.loads(path.read_text())["accelerator"]["op"]["matmul"]
    peak, found = matmul["tflops"], {}
    for key, eff in matmul["accurate_efficient_factor"].items():
        b, m, k, n, layout = _SIMUMAX_KEY.match(key).groups()
        shape = (int(m), int(n), int(k), int(b), layout)
        found.setdefault(shape, GemmPoint(*shape, tflops=round(eff * peak, 3)))
    points = tuple(sorted(found.values(), key=lambda p: (("TN", "NN", "NT").index(p.layout), p.m, p.n, p.k)))
    return Measured("dgx-b200", "gemm.csv", points, "bf16", "NVIDIA B200 (SimuMax's B200 machine)",
                    f"{len(points)} measured bf16 GEMM shapes of Llama/DeepSeek layers (m, n, k, batch, layout)",
                    SIMUMAX_SRC, f"tflops = efficiency x {peak:g}; keys 'b, m, k, n' stored as batch, m (output "
                    "rows), n (output columns), k (reduction); TN forward, NN dgrad, NT wgrad (accumulate, "
                    "out_dtype dropped: one value per shape)")


def transferred_gb200(b200_rows) -> Measured:
    """SimuMax's B200 rows on the GB200: each row times nvMatmulHeuristics' GB200_NVL / B200
    ratio at its own shape, held between 1 and the dense-peak ratio 2500 / 2250. The same GPU
    at 1200 W against 1000 W should be no slower; the upper hold is a heuristic, the two parts'
    rated-clock ratio (under their power limits both run below those clocks). It binds on 226
    of the 432 rows, so most large shapes gain exactly 1.111; MAMF's best shapes gain 1.044."""
    top = pub.DENSE_BF16_PEAK["GB200"] / pub.DENSE_BF16_PEAK["B200"]
    gb200, b200_model = model.make_model("GB200_NVL"), model.make_model("B200")
    points = []
    for p in b200_rows:
        shape = (p.m, p.n, p.k, p.batch, p.layout)
        ratio = model.model_tflops(gb200, *shape) / model.model_tflops(b200_model, *shape)
        points.append(GemmPoint(*shape, tflops=round(p.tflops * min(max(ratio, 1.0), top), 3)))
    return Measured("gb200-nvl72", "gemm.csv", tuple(points), "bf16",
                    "NVIDIA GB200, carried over from SimuMax's B200",
                    f"{len(points)} bf16 GEMM shapes of Llama/DeepSeek layers measured on a B200, "
                    "carried over to the GB200 shape by shape", f"../dgx-b200/gemm.csv ({SIMUMAX_SRC})",
                    "tflops = the B200 row x nvMatmulHeuristics (GB200_NVL / B200) at the row's shape, "
                    f"the ratio held to 1..{top:.4f} (2500 / 2250 dense BF16, ref §1.1 [S2][S4])",
                    kind="TRANSFERRED")


MODELS = (
    Modeled("dgx-h100", "gemm_model.csv", "H100_SXM", "bf16", "dgx-h100/gemm.csv", "H100_SXM",
            pub.MAMF_BF16["H100"][3], "this folder's gemm.csv (XLA sm_90 and the square H100 SXM rows, "
            "all layouts pooled) against the H100_SXM model", pool_layouts=True),
    Modeled("dgx-h100", "gemm_model_fp8.csv", "H100_SXM", "fp8", "dgx-h100/gemm_fp8.csv", "H100_SXM",
            pub.MAMF_FP8["H100"], "this folder's gemm_fp8.csv (Azure H100 cuBLASLt FP8) against the H100_SXM model"),
    Modeled("hgx-h200", "gemm_model.csv", "H200_SXM", "bf16", "dgx-h100/gemm.csv", "H100_SXM",
            pub.MAMF_BF16["H100"][3], "BORROWED: dgx-h100/gemm.csv (XLA sm_90 and the square H100 SXM rows, "
            "all layouts pooled) against the H100_SXM model (no H200 bf16 table is published; MAMF: "
            "'H200 is the same')", pool_layouts=True),
    Modeled("hgx-h200", "gemm_model_fp8.csv", "H200_SXM", "fp8", "hgx-h200/gemm_fp8.csv", "H200_SXM",
            pub.MAMF_FP8["H200"], "this folder's gemm_fp8.csv (Azure H200 cuBLASLt FP8) against the H200_SXM model"),
    Modeled("dgx-b200", "gemm_model.csv", "B200", "bf16", "dgx-b200/gemm.csv", "B200",
            pub.MAMF_BF16["B200"][3], "this folder's gemm.csv (SimuMax B200) against the B200 model"),
    Modeled("dgx-b200", "gemm_model_fp8.csv", "B200", "fp8", "gb200-nvl72/gemm_fp8.csv", "GB200_NVL",
            pub.MAMF_FP8["B200"], "BORROWED: gb200-nvl72/gemm_fp8.csv (Azure GB200 cuBLASLt FP8) against the "
            "GB200_NVL model (no B200 FP8 sweep by shape is published)"),
    Modeled("gb200-nvl72", "gemm_model.csv", "GB200_NVL", "bf16", "dgx-b200/gemm.csv", "B200",
            pub.MAMF_BF16["GB200"][3], "BORROWED: dgx-b200/gemm.csv (SimuMax B200) against the B200 model "
            "(no GB200 bf16 table by shape is published)"),
    Modeled("gb200-nvl72", "gemm_model_fp8.csv", "GB200_NVL", "fp8", "gb200-nvl72/gemm_fp8.csv", "GB200_NVL",
            pub.MAMF_FP8["GB200"], "this folder's gemm_fp8.csv (Azure GB200 cuBLASLt FP8) against the GB200_NVL model"),
)


def write_measured(t: Measured, date: str, path: Path | None = None) -> Path:
    path = path or CAL / t.machine / t.name
    write_gemm_table(GemmTable(t.points, dtype=t.dtype, device=t.device), path, [
        f"{t.kind} GEMM throughput, {t.device}, {t.dtype}, by shape: {t.what}.",
        f"source: {t.source}.",
        f"derivation: {t.derivation}.",
        f"derived by: python {SCRIPT}",
        f"derived: {date}",
    ])
    return path


def write_model(t: Modeled, date: str) -> dict:
    command = f"python {SCRIPT} --date {date}"
    return model.derive_anchored(machine=t.machine, gpu=t.gpu, precision=t.precision, anchor=CAL / t.anchor,
                                 anchor_gpu=t.anchor_gpu, anchor_note=t.note, cap=t.cap, date=date,
                                 out=CAL / t.machine / t.name, command=command, pool=t.pool_layouts)


def readme_section(machine: str, measured: list[Measured], models: list[tuple[Modeled, dict]], date: str,
                   reused: str = "") -> str:
    lines = [HEADING, "",
             f"Written by `python {SCRIPT} --date {date}` (measured rows typed in `published_gemm.py` or read "
             "from the source file named; models from NVIDIA's nvidia-matmul-heuristics "
             f"{model.package_version()}).", ""]
    if reused:
        lines += [reused, ""]
    lines += ["| file | what | source | derivation |", "|---|---|---|---|"]
    for t in measured:
        lines.append(f"| `{t.name}` | {t.what} | {t.source} | {t.derivation} |")
    for t, result in models:
        curve = "; ".join(f"{layout}: " + model._curve_text(result["scales"][layout]["curve"])
                          for layout in result["layouts"])
        lines.append(
            f"| `{t.name}` | MODELED {t.precision} GEMM TFLOP/s, {result['rows']} shapes (dense m 256..65536, "
            f"n 64..65536, k 64..32768, layouts {', '.join(result['layouts'])}"
            + ("; batched attention shapes" if t.precision == "bf16" else "") + ") | nvMatmulHeuristics "
            f"`{t.gpu}`, precision `{model.PRECISIONS[t.precision]}` | scaled by work to {t.note}: "
            f"measured/model by log2 FLOPs {curve}; capped at {t.cap:g} (MAMF) |")
    lines += ["",
              "- Why by work: the model's error grows with the GEMM. Against XLA's H100 points it is "
              "1.8x too slow at 256^3 and 8 % too fast at 4096^3; against Azure's H100 FP8 sweep 37 % too "
              "slow at 2048^3 and 27-34 % too fast from 8192^3 up. One factor per layout (the A100's "
              "method, whose measured points are all large) would carry the small shapes' factor to "
              "transformer shapes. Beyond the largest measured work the last bin's factor is kept.",
              ] + ([
              "- H100 large shapes: the square H100 SXM rows (torch.mm 4096..10240, JAX 8192 and 16384; "
              "`published_gemm.H100_LARGE_BF16`, `H100_LARGE_FP8`) give the bf16 curve bins at 2^40-2^43 "
              "FLOPs, where XLA's table (to 4096^3, 2^37) left the 4096^3 bin's factor extrapolated. "
              "They are stored as NN (row-major A @ B) and the bf16 curve pools all layouts, as XLA's "
              "TN is a storage convention. Their runs are short bursts without a clock log: NVIDIA's "
              "CUTLASS methodology note (fixed power, cold L2, random fill) expects sustained use at "
              "or below them. pytorch/pytorch#100850 is not used (bmm shape and dtype not in the "
              "stored copy, SKU not named).",
              ] if machine in ("dgx-h100", "hgx-h200") else []) + [
              "- MAMF maxima (ref §4.1 [S5]) are the caps, not rows: a search's best shape is the top of "
              "its neighbourhood, and lookups interpolate between neighbours.",
              "- FP8 tables are TN only: Transformer Engine runs the forward, dgrad and wgrad GEMMs of "
              "an FP8 linear layer as TN on FP8 (transposed) copies; the cost model's NN/NT look-ups fall "
              "back to TN rows of the same shape.",
              "- XLA's sm_90 fp8 entries are not used: several pass the H100's FP8 dense peak of 1979 "
              "TFLOP/s (4096^3: 2423.8). XLA's B200 table (openxla/xla default_matmul_perf_table.txtpb"
              "@336bb15c) is not used either: its b=2 and b=4 entries repeat the sm_90 values "
              "(b=2 256^3: 12.34 in both), and its bf16 b=1 shapes stop at 4096.",
              ""]
    return "\n".join(lines)


def derive(date: str, simumax: Path | None) -> list[Path]:
    """Write every table and README section; return the files written."""
    measured = [xla_h100(), azure_fp8("dgx-h100", "H100"), azure_fp8("hgx-h200", "H200"),
                azure_fp8("gb200-nvl72", "GB200")]
    if simumax is not None and simumax.exists():
        measured.append(simumax_b200(simumax))
    else:
        print(f"note: {simumax} not found: dgx-b200/gemm.csv kept as committed", file=sys.stderr)
    b200 = next((t for t in measured if t.machine == "dgx-b200"), None)
    rows = b200.points if b200 else read_gemm_table(CAL / "dgx-b200" / "gemm.csv").points
    measured.append(transferred_gb200(rows))
    written = [write_measured(t, date) for t in measured]
    results = [(t, write_model(t, date)) for t in MODELS]
    written += [r["path"] for _, r in results]
    reused = {"hgx-h200": "The bf16 measured table is `../dgx-h100/gemm.csv` (same GH100 compute; MAMF: "
                          "\"H200 is the same\"), its square H100 SXM rows included; the H100 FP8 rows "
                          "are not reused (this folder's `gemm_fp8.csv` is Azure's H200 sweep).",
              "dgx-b200": "No FP8 table by shape is published for B200: `gemm_model_fp8.csv` is anchored to "
                          "the GB200 sweep.",
              "gb200-nvl72": "No bf16 table by shape is published for GB200. `gemm.csv` carries SimuMax's "
                             "B200 rows over shape by shape: each row times nvMatmulHeuristics' GB200_NVL / "
                             "B200 ratio at its own shape, held between 1 and the dense-peak ratio 2500 / 2250 "
                             "(the same GPU at 1200 W against 1000 W). The upper hold is a heuristic, the "
                             "parts' rated-clock ratio, and it binds on 226 of the 432 rows (the model's ratio "
                             "at batch-1 GEMMs of over a TFLOP has median 1.14 and reaches 1.44); the MAMF "
                             "maxima differ 4 %. Taken unchanged, the B200 rows would price the GB200 at a "
                             "1000 W part's clocks. Shapes off the table take `gemm_model.csv`, anchored to "
                             "the B200 rows through the B200 model and not held (0.72-1.44 of the B200's), as "
                             "the B200's FP8 table is anchored to GB200's measurements."}
    for machine in ("dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72"):
        own = [t for t in measured if t.machine == machine]
        if machine == "dgx-b200" and not any(t.name == "gemm.csv" for t in own):
            own.append(Measured(machine, "gemm.csv", (), "bf16", "", "as committed (see its header)",
                                SIMUMAX_SRC, "see its header"))
        section = readme_section(machine, own, [(t, r) for t, r in results if t.machine == machine], date,
                                 reused.get(machine, ""))
        readme = CAL / machine / "README.md"
        model.update_readme(readme, section, HEADING)
        written.append(readme)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simumax-b200", default=str(SIMUMAX_B200),
                        help="SimuMax configs/system/b200_bf16_ceperm.json (default: the copy under dgx-b200/sources/)")
    parser.add_argument("--date", default=datetime.date.today().isoformat(), help="date recorded in the files")
    args = parser.parse_args(argv)
    for path in derive(args.date, Path(args.simumax_b200)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
