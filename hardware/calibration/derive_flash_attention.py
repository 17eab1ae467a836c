"""Write the PUBLISHED FlashAttention throughput tables (flash_attention.csv) from typed-in figures.

Usage (from the repository root):

    python hardware/calibration/derive_flash_attention.py [--out DIR] [--no-readme]

Every value below was read off a published benchmark figure (the number printed above its bar),
not measured here and not modelled. Files written, under hardware/calibration/ (or --out):

* dgx-a100-80gb/flash_attention.csv - FlashAttention-2 on A100 SXM4 80GB (FA2 paper Figs. 4-6);
* dgx-h100/flash_attention.csv      - FlashAttention-3, cuDNN and FlashAttention-2 on H100 SXM5
  (FA3 paper FP16 forward / backward figures; FA2 paper Fig. 7);
* dgx-h100/flash_attention_fp8.csv  - FlashAttention-3 FP8 forward on H100 SXM5 (FA3 paper), kept out
  of the bf16 table (not referenced by the hardware files);
* dgx-b200/flash_attention.csv      - FlashAttention-4, cuDNN 9.19.1 and FlashAttention-2 on B200
  (FA4 paper forward / backward figures), and Transformer Engine 2.11's attention as SimuMax
  profiled it on a B200 by batch x heads (`te-2.11`, read from the SimuMax system file kept
  under dgx-b200/sources/: the one measured table here, not a figure);
* a "## FlashAttention throughput" section at the end of the README.md of those folders and of
  the folders whose hardware file reuses one of the tables (dgx-a100-40gb, vtrain-a100 -> A100;
  hgx-h200 -> H100; gb200-nvl72 -> B200), replacing an earlier copy of that section.

Columns: gpu, kernel, head_dim, seq_len, causal, direction, tflops, source (and batch_heads where
a table states the width of the timed call: the te-2.11 rows). FLOPs follow the
flash-attention benchmarks (Dao-AILab/flash-attention benchmarks/benchmark_flash_attention.py,
`flops()`): forward = 4 * batch * seqlen^2 * nheads * headdim, halved when causal; backward = 2.5x
forward; forward + backward = 3.5x forward. TFLOP/s = those FLOPs / measured time.
"""

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CAL_ROOT = REPO / "hardware" / "calibration"
SCRIPT = "hardware/calibration/derive_flash_attention.py"
README_HEADING = "## FlashAttention throughput"
HEADER = "gpu,kernel,head_dim,seq_len,causal,direction,tflops,source"

FA_REPO = "Dao-AILab/flash-attention"
FA_HEAD = "0251105a2fb19d2957484b7f023cd8c115286ced"
FLOPS_SRC = (f"{FA_REPO}:benchmarks/benchmark_flash_attention.py@e8c7344717861b6ea520de3575770ca9a7fa3877 "
             "(unchanged since 60499abcfda1fabd48e1b97341f4f888c66991a3, 2023-07-28), flops() lines 27-30")
WB = "wonbeomjang/wonbeomjang.github.io"
"""A paper-review blog whose repository holds the FA2 paper's Figs. 4-7 and the FA3 / FA4 paper
benchmark figures as PNG files (the FA2 ones with their printed captions)."""

SEQ_16K = (512, 1024, 2048, 4096, 8192, 16384)
SEQ_32K = (1024, 2048, 4096, 8192, 16384, 32768)


@dataclass(frozen=True)
class Series:
    """One bar series of one figure panel: a value per sequence length."""

    kernel: str
    head_dim: int
    causal: bool
    direction: str
    values: tuple
    source: str
    seqs: tuple = SEQ_16K
    notes: tuple = ()
    """(seq_len, text) pairs appended to that row's source."""


# ================================================================ A100 SXM4 80GB: FlashAttention-2 paper
# arXiv 2307.08691 (Dao 2023), Figs. 4 (fwd+bwd), 5 (fwd), 6 (bwd): "A100 80GB SXM4", panels
# (a) no causal mask hdim 64, (b) no causal mask hdim 128, (c) causal hdim 64, (d) causal hdim 128.
# Batch = 16k / seqlen, hidden 2048 (32 or 16 heads). Read from the FlashAttention-2 bars.
FA2 = "arXiv 2307.08691"
PANEL = {(64, False): "a", (128, False): "b", (64, True): "c", (128, True): "d"}
HIDDEN_FB = "label under the legend: 151 read from the bar height and 3.5/(1/f+2.5/b) of Figs. 5b/6b = 151.1"
A100 = [
    Series("fa2", 64, False, "fwd_bwd", (132, 153, 162, 171, 175, 176), f"{FA2} Fig. 4a"),
    Series("fa2", 128, False, "fwd_bwd", (151, 173, 187, 196, 201, 203), f"{FA2} Fig. 4b",
           notes=((512, HIDDEN_FB),)),
    Series("fa2", 64, True, "fwd_bwd", (88, 119, 140, 156, 165, 171), f"{FA2} Fig. 4c"),
    Series("fa2", 128, True, "fwd_bwd", (99, 133, 155, 173, 182, 189), f"{FA2} Fig. 4d"),
    Series("fa2", 64, False, "fwd", (178, 191, 193, 192, 192, 192), f"{FA2} Fig. 5a"),
    Series("fa2", 128, False, "fwd", (209, 224, 227, 222, 224, 223), f"{FA2} Fig. 5b"),
    Series("fa2", 64, True, "fwd", (115, 146, 167, 177, 181, 183), f"{FA2} Fig. 5c"),
    Series("fa2", 128, True, "fwd", (132, 168, 187, 198, 200, 197), f"{FA2} Fig. 5d"),
    Series("fa2", 64, False, "bwd", (120, 141, 152, 163, 169, 170), f"{FA2} Fig. 6a"),
    Series("fa2", 128, False, "bwd", (136, 159, 175, 187, 193, 196), f"{FA2} Fig. 6b"),
    Series("fa2", 64, True, "bwd", (81, 111, 131, 149, 160, 166), f"{FA2} Fig. 6c"),
    Series("fa2", 128, True, "bwd", (90, 122, 145, 165, 176, 186), f"{FA2} Fig. 6d"),
    # The same figures' "FlashAttention" bars: FlashAttention (v1) CUDA, the baseline the paper
    # ran beside FA2. Its Ampere-generation kernel is the measured one nearest llm-foundry's
    # pre-MLIR Triton kernel (simsp/validate/recipes.py, "llm-foundry").
    Series("fa1", 64, False, "fwd_bwd", (91, 92, 104, 108, 110, 110), f"{FA2} Fig. 4a"),
    Series("fa1", 128, False, "fwd_bwd", (76, 72, 76, 80, 82, 83), f"{FA2} Fig. 4b"),
    Series("fa1", 64, True, "fwd_bwd", (58, 70, 77, 87, 92, 97), f"{FA2} Fig. 4c"),
    Series("fa1", 128, True, "fwd_bwd", (55, 62, 69, 76, 80, 83), f"{FA2} Fig. 4d"),
    Series("fa1", 64, False, "fwd", (91, 96, 99, 104, 104, 104), f"{FA2} Fig. 5a"),
    Series("fa1", 128, False, "fwd", (69, 66, 71, 71, 72, 73), f"{FA2} Fig. 5b"),
    Series("fa1", 64, True, "fwd", (56, 70, 81, 89, 91, 94), f"{FA2} Fig. 5c"),
    Series("fa1", 128, True, "fwd", (49, 59, 65, 68, 70, 71), f"{FA2} Fig. 5d"),
    Series("fa1", 64, False, "bwd", (91, 90, 106, 109, 112, 113), f"{FA2} Fig. 6a"),
    Series("fa1", 128, False, "bwd", (78, 75, 79, 84, 86, 88), f"{FA2} Fig. 6b"),
    Series("fa1", 64, True, "bwd", (58, 70, 76, 85, 93, 98), f"{FA2} Fig. 6c"),
    Series("fa1", 128, True, "bwd", (59, 63, 71, 80, 86, 89), f"{FA2} Fig. 6d"),
]

# ================================================================ H100 SXM5 80GB
# FlashAttention-3 paper, arXiv 2407.08608 (Shah et al. 2024), FP16/BF16 benchmark figures, "H100
# 80GB SXM5". Forward figure panels: (a) no causal hdim 64, (b) causal hdim 64, (c) no causal
# hdim 128, (d) causal hdim 128, (e) no causal hdim 256, (f) causal hdim 256. Backward figure:
# (a) no causal hdim 64, (b) no causal hdim 128 (no causal or hdim-256 backward panel). Batch x
# seqlen = 16k, hidden 2048. The paper's FA2 bars are a 2024 re-run of FA2 on H100.
FA3 = "arXiv 2407.08608"
F3F = f"{FA3} FP16 fwd fig."
F3B = f"{FA3} FP16 bwd fig."
HIDDEN_256 = "label under the legend: read from the bar height +-3"
FA2P = f"{FA2} Fig. 7"
H100 = [
    Series("fa3", 64, False, "fwd", (333, 392, 460, 476, 496, 497), f"{F3F} (a)"),
    Series("fa3", 64, True, "fwd", (197, 265, 371, 420, 460, 473), f"{F3F} (b)"),
    Series("fa3", 128, False, "fwd", (467, 565, 625, 638, 646, 648), f"{F3F} (c)"),
    Series("fa3", 128, True, "fwd", (292, 423, 521, 579, 602, 616), f"{F3F} (d)"),
    Series("fa3", 256, False, "fwd", (482, 627, 707, 736, 746, 756), f"{F3F} (e)",
           notes=((1024, HIDDEN_256),)),
    Series("fa3", 256, True, "fwd", (286, 427, 537, 612, 628, 642), f"{F3F} (f)"),
    Series("fa3", 64, False, "bwd", (272, 363, 422, 453, 472, 474), f"{F3B} (a)"),
    Series("fa3", 128, False, "bwd", (316, 424, 501, 542, 559, 561), f"{F3B} (b)"),
    Series("cudnn", 64, False, "fwd", (335, 373, 395, 408, 412, 413), f"{F3F} (a)"),
    Series("cudnn", 64, True, "fwd", (225, 288, 334, 363, 379, 388), f"{F3F} (b)"),
    Series("cudnn", 128, False, "fwd", (497, 574, 617, 609, 600, 595), f"{F3F} (c)"),
    Series("cudnn", 128, True, "fwd", (315, 410, 484, 518, 529, 539), f"{F3F} (d)"),
    Series("cudnn", 256, False, "fwd", (470, 546, 580, 581, 580, 581), f"{F3F} (e)"),
    Series("cudnn", 256, True, "fwd", (308, 391, 450, 483, 497, 509), f"{F3F} (f)"),
    Series("cudnn", 64, False, "bwd", (266, 348, 395, 417, 432, 433), f"{F3B} (a)"),
    Series("cudnn", 128, False, "bwd", (305, 408, 465, 499, 518, 516), f"{F3B} (b)"),
    Series("fa2", 64, False, "fwd", (282, 306, 318, 321, 322, 324), f"{F3F} (a)"),
    Series("fa2", 64, True, "fwd", (180, 229, 262, 284, 295, 299), f"{F3F} (b)"),
    Series("fa2", 128, False, "fwd", (309, 350, 362, 368, 370, 370), f"{F3F} (c)"),
    Series("fa2", 128, True, "fwd", (191, 260, 298, 319, 333, 335), f"{F3F} (d)"),
    Series("fa2", 256, False, "fwd", (275, 313, 321, 323, 324, 326), f"{F3F} (e)"),
    Series("fa2", 256, True, "fwd", (208, 251, 278, 293, 297, 298), f"{F3F} (f)"),
    Series("fa2", 64, False, "bwd", (198, 238, 264, 279, 287, 291), f"{F3B} (a)"),
    Series("fa2", 128, False, "bwd", (214, 260, 291, 310, 318, 322), f"{F3B} (b)"),
    # FlashAttention-2 paper Fig. 7 (H100 80GB SXM5, 2023 FA2 build): forward + backward only.
    Series("fa2", 64, False, "fwd_bwd", (215, 254, 274, 288, 294, 296), f"{FA2P}a"),
    Series("fa2", 128, False, "fwd_bwd", (248, 294, 320, 326, 335, 338), f"{FA2P}b"),
    Series("fa2", 64, True, "fwd_bwd", (141, 192, 232, 257, 273, 284), f"{FA2P}c"),
    Series("fa2", 128, True, "fwd_bwd", (163, 221, 265, 294, 308, 328), f"{FA2P}d"),
    # The same figure's "FlashAttention" bars: FlashAttention (v1) CUDA on H100, forward +
    # backward only (an Ampere-generation kernel: no wgmma / TMA).
    Series("fa1", 64, False, "fwd_bwd", (157, 159, 161, 161, 166, 168), f"{FA2P}a"),
    Series("fa1", 128, False, "fwd_bwd", (127, 127, 128, 131, 137, 139), f"{FA2P}b"),
    Series("fa1", 64, True, "fwd_bwd", (104, 123, 136, 138, 149, 156), f"{FA2P}c"),
    Series("fa1", 128, True, "fwd_bwd", (98, 109, 108, 126, 135, 137), f"{FA2P}d"),
]
F3P = f"{FA3} FP8 fwd fig."
H100_FP8 = [
    Series("fa3", 64, False, "fwd", (240, 396, 462, 568, 596, 613), f"{F3P} (a)"),
    Series("fa3", 64, True, "fwd", (164, 244, 369, 475, 533, 572), f"{F3P} (b)"),
    Series("fa3", 128, False, "fwd", (348, 596, 733, 918, 974, 1008), f"{F3P} (c)"),
    Series("fa3", 128, True, "fwd", (241, 367, 553, 716, 815, 881), f"{F3P} (d)"),
    Series("fa3", 256, False, "fwd", (510, 744, 931, 966, 1151, 1171), f"{F3P} (e)"),
    Series("fa3", 256, True, "fwd", (329, 521, 703, 856, 960, 1024), f"{F3P} (f)"),
]

# ================================================================ B200: FlashAttention-4 paper
# arXiv 2603.05451 (Zadouri et al. 2026), B200 BF16 figures titled "Forward TFLOPS on B200
# (causal=False|True, head dim 128)" and "Backward TFLOPS on B200 (...)": seqlen 1K..32K. cuDNN
# bars: the newest version in the figures (9.19.1.2 non-causal, 9.19.1 causal; 9.13.0 also shown).
FA4 = "arXiv 2603.05451 B200"
B200 = [
    Series("fa4", 128, False, "fwd", (1355, 1468, 1532, 1579, 1601, 1613), f"{FA4} fwd fig. causal=False hdim 128",
           SEQ_32K),
    Series("fa4", 128, True, "fwd", (744, 1053, 1279, 1426, 1526, 1576), f"{FA4} fwd fig. causal=True hdim 128",
           SEQ_32K),
    Series("fa4", 128, False, "bwd", (936, 1166, 1331, 1430, 1457, 1412), f"{FA4} bwd fig. causal=False hdim 128",
           SEQ_32K),
    Series("fa4", 128, True, "bwd", (614, 887, 1102, 1284, 1402, 1446), f"{FA4} bwd fig. causal=True hdim 128",
           SEQ_32K),
    Series("cudnn", 128, False, "fwd", (1346, 1474, 1552, 1585, 1609, 1613),
           f"{FA4} fwd fig. causal=False hdim 128 (cuDNN 9.19.1.2)", SEQ_32K),
    Series("cudnn", 128, True, "fwd", (822, 1103, 1295, 1430, 1509, 1540),
           f"{FA4} fwd fig. causal=True hdim 128 (cuDNN 9.19.1)", SEQ_32K),
    Series("cudnn", 128, False, "bwd", (928, 1108, 1231, 1300, 1280, 1274),
           f"{FA4} bwd fig. causal=False hdim 128 (cuDNN 9.19.1.2)", SEQ_32K),
    Series("cudnn", 128, True, "bwd", (651, 894, 1090, 1218, 1293, 1337),
           f"{FA4} bwd fig. causal=True hdim 128 (cuDNN 9.19.1)", SEQ_32K),
    # The same figures' cuDNN 9.13.0 bars: the cuDNN of 2025's containers (NGC PyTorch 25.09
    # ships 9.13.1; cudnn-frontend's B200 artifacts measured 9.10.2 within 3% of 9.13.1 from 8k
    # up), a kernel name of its own so the hardware file's `cudnn` stays the newest.
    Series("cudnn-9.13", 128, False, "fwd", (1157, 1328, 1413, 1460, 1488, 1517),
           f"{FA4} fwd fig. causal=False hdim 128 (cuDNN 9.13.0)", SEQ_32K),
    Series("cudnn-9.13", 128, True, "fwd", (717, 929, 1076, 1168, 1285, 1266),
           f"{FA4} fwd fig. causal=True hdim 128 (cuDNN 9.13.0)", SEQ_32K),
    Series("cudnn-9.13", 128, False, "bwd", (857, 1016, 1116, 1171, 1212, 1107),
           f"{FA4} bwd fig. causal=False hdim 128 (cuDNN 9.13.0)", SEQ_32K),
    Series("cudnn-9.13", 128, True, "bwd", (543, 732, 893, 1008, 1085, 1142),
           f"{FA4} bwd fig. causal=True hdim 128 (cuDNN 9.13.0)", SEQ_32K),
    Series("fa2", 128, False, "fwd", (383, 406, 420, 427, 430, 432), f"{FA4} fwd fig. causal=False hdim 128",
           SEQ_32K),
    Series("fa2", 128, True, "fwd", (292, 343, 375, 395, 404, 408), f"{FA4} fwd fig. causal=True hdim 128",
           SEQ_32K),
    Series("fa2", 128, False, "bwd", (295, 333, 357, 374, 381, 386), f"{FA4} bwd fig. causal=False hdim 128",
           SEQ_32K),
    Series("fa2", 128, True, "bwd", (208, 252, 295, 323, 341, 355), f"{FA4} bwd fig. causal=True hdim 128",
           SEQ_32K),
]


# ================================================================ B200: SimuMax's TE profile
# MooreThreads/SimuMax configs/system/b200_bf16_ceperm.json @4dcaae51 (the copy in
# dgx-b200/sources/), accelerator.op.sdp_fwd / sdp_bwd accurate_efficient_factor: Megatron-LM's
# TEDotProductAttention (Transformer Engine 2.11.0, causal, sbhd) on SimuMax's B200, kernel
# times from the torch profiler (simu_tools/efficency_test/test_fa_efficiency.py @4dcaae51,
# `_profile_kernel_mean_ms`), as a fraction of 2250 TFLOP/s under SimuMax's FLOP count:
# forward 2 b s^2 h (d_qk + d_v), backward 2.5x that (lines 628-633), the full square. For d = 128
# that is twice flash-attention's causal count, so tflops = efficiency x 2250 / 2.
SIMUMAX_SYSTEM = REPO / "hardware" / "calibration" / "dgx-b200" / "sources" / "simumax_b200_bf16_ceperm.json"
SIMUMAX_SRC = "SimuMax b200_bf16_ceperm.json@4dcaae51 TE 2.11"
SIMUMAX_PEAK = 2250.0
_SDPA_KEY = re.compile(r"batch=(\d+), seq_len=(\d+), head_num=(\d+), kv_head_num=(\d+), "
                       r"qk_head_dim=(\d+), v_head_dim=(\d+), qkv_contiguous=(\w+)")


def simumax_rows(path: Path = SIMUMAX_SYSTEM) -> list[tuple]:
    """(kernel, head_dim, seq_len, causal, direction, tflops, source, batch_heads) of SimuMax's
    TE attention profile, the fastest of the measured GQA ratios and layouts at each (head dim,
    seq_len, batch x heads). Its MLA rows (d_qk 192, d_v 128) take the width simsp gives MLA's
    fused kernel, (d_qk + d_v) / 2 = 160 (model/blocks/mla.py), whose benchmark count is then
    half SimuMax's, as for d = 128."""
    ops = json.loads(path.read_text())["accelerator"]["op"]
    best: dict = {}
    for op, direction in (("sdp_fwd", "fwd"), ("sdp_bwd", "bwd")):
        for key, eff in ops[op]["accurate_efficient_factor"].items():
            b, seq, heads, kv, dqk, dv, _ = _SDPA_KEY.fullmatch(key).groups()
            at = ((int(dqk) + int(dv)) // 2, direction, int(seq), int(b) * int(heads))
            best[at] = max(best.get(at, 0.0), eff * SIMUMAX_PEAK / 2)
    return [("te-2.11", hd, seq, True, d, round(t), f"{SIMUMAX_SRC} {d}", bh)
            for (hd, d, seq, bh), t in sorted(best.items())]


# ================================================================ tables


@dataclass(frozen=True)
class Table:
    folder: str
    file: str
    gpu: str
    series: list
    title: str
    comments: tuple
    measured: tuple = ()
    """Rows of a measured table (simumax_rows' tuples), written after the figures' rows."""


TABLES = (
    Table("dgx-a100-80gb", "flash_attention.csv", "A100-SXM4-80GB", A100,
          "FlashAttention-2 on NVIDIA A100 SXM4 80GB, FP16/BF16",
          (f"source: Dao 2023 FlashAttention-2 (arXiv 2307.08691) Figs. 4-6 as PNG in {WB}:"
           "assets/post/image/flashattention2/fig4.png..fig6.png@1a20095cd6ca0aea90e034559523c58684df5b57;",
           f"  Fig. 4 is also {FA_REPO}:assets/flash2_a100_fwd_bwd_benchmark.png@4f285b354796fb17df8636485b9a04df3ebbb7dc",
           "  (same labels). Shapes: batch = 16k / seq_len, nheads x head_dim = 2048.",)),
    Table("dgx-h100", "flash_attention.csv", "H100-SXM5-80GB", H100,
          "FlashAttention-3 / cuDNN / FlashAttention-2 on NVIDIA H100 SXM5 80GB, FP16/BF16",
          (f"source: Shah et al. 2024 FlashAttention-3 (arXiv 2407.08608) FP16 forward figure = "
           f"{FA_REPO}:assets/flash3_fp16_fwd.png@7ef24848cf2f855077cef88fe122775b727dcd74",
           f"  and FP16 backward figure = {WB}:assets/post/image/flashattention3/flash3_fp16_bwd.png"
           "@9a956496a3bf8442870907754272d97c7a2f2cf4;",
           f"  fa2 fwd_bwd rows: Dao 2023 (arXiv 2307.08691) Fig. 7 = {FA_REPO}:assets/flash2_h100_fwd_bwd_benchmark.png"
           "@4f285b354796fb17df8636485b9a04df3ebbb7dc.",
           "  Shapes: batch x seq_len = 16k, nheads x head_dim = 2048. cuDNN: the version the FA3 paper ran.",)),
    Table("dgx-h100", "flash_attention_fp8.csv", "H100-SXM5-80GB", H100_FP8,
          "FlashAttention-3 FP8 (e4m3) forward on NVIDIA H100 SXM5 80GB - NOT the bf16 table",
          (f"source: arXiv 2407.08608 FP8 forward figure = {WB}:assets/post/image/flashattention3/flash3_fp8_fwd.png"
           "@9a956496a3bf8442870907754272d97c7a2f2cf4.",
           "  Not referenced by any hardware file (the cost model runs attention in bf16).",)),
    Table("dgx-b200", "flash_attention.csv", "B200", B200,
          "FlashAttention-4 / cuDNN 9.19.1 / FlashAttention-2 on NVIDIA B200, BF16",
          (f"source: Zadouri et al. 2026 FlashAttention-4 (arXiv 2603.05451) B200 figures as PNG in {WB}:",
           "  assets/post/image/flashattention4/fa4_{fwd,bwd}_{noncausal,causal}_hdim128.png"
           "@06295c593c68592c2893e9ab9ed159e7286bd778.",
           "  Head dim 128 only; hidden 2048 per that review; the batch size is not given in what was read.",
           "  te-2.11 rows: MEASURED by SimuMax (Transformer Engine 2.11 attention in Megatron-LM, causal, on a B200),",
           "  by batch x heads of the call (batch_heads); see the README.",),
          tuple(simumax_rows()) if SIMUMAX_SYSTEM.exists() else ()),
)

def rows(table: Table) -> list[str]:
    out = []
    width = ("," if table.measured else "")  # the batch_heads column, empty for figure rows
    for s in table.series:
        assert len(s.values) == len(s.seqs), s
        notes = dict(s.notes)
        for seq, v in zip(s.seqs, s.values):
            src = s.source + (f"; {notes[seq]}" if seq in notes else "")
            assert "," not in src, src
            out.append(f"{table.gpu},{s.kernel},{s.head_dim},{seq},{str(s.causal).lower()},{s.direction},{v},{src}"
                       + width)
    for kernel, head_dim, seq, causal, direction, v, src, bh in table.measured:
        out.append(f"{table.gpu},{kernel},{head_dim},{seq},{str(causal).lower()},{direction},{v},{src},{bh}")
    keys = [r.split(",")[1:6] + r.split(",")[8:] for r in out]
    assert len(keys) == len({tuple(k) for k in keys}), f"duplicate keys in {table.folder}/{table.file}"
    return out


def csv_text(table: Table) -> str:
    lines = [f"# PUBLISHED FlashAttention throughput: {table.title}.",
             *(f"# {c}" for c in table.comments),
             "# tflops: the number printed above the bar (read from the figure image), FLOPs as the",
             "#   flash-attention benchmarks count them: fwd = 4*batch*seq_len^2*nheads*head_dim, halved",
             "#   when causal; bwd = 2.5x fwd; fwd_bwd = 3.5x fwd",
             f"#   ({FLOPS_SRC}).",
             f"# derived by: {SCRIPT}",
             HEADER + (",batch_heads" if table.measured else ""), *rows(table)]
    return "\n".join(lines) + "\n"


def check_a100_consistency(tol: float = 1.0) -> None:
    """Fig. 4's fwd+bwd must equal 3.5 / (1/fwd + 2.5/bwd) of Figs. 5 and 6 (times add up)."""
    by = {(s.kernel, s.head_dim, s.causal, s.direction): s.values for s in A100}
    for kernel in sorted({s.kernel for s in A100}):
        for hd, causal in PANEL:
            key = (kernel, hd, causal)
            for f, b, fb in zip(by[(*key, "fwd")], by[(*key, "bwd")], by[(*key, "fwd_bwd")]):
                combined = 3.5 / (1 / f + 2.5 / b)
                assert abs(combined - fb) <= tol, (*key, f, b, fb, combined)


# ================================================================ README sections

CONVENTION = f"""FLOPs follow flash-attention's own benchmark convention, checked in the source,
{FLOPS_SRC}:
`f = 4 * batch * seqlen**2 * nheads * headdim // (2 if causal else 1)`; backward `2.5 * f`,
forward + backward `3.5 * f`. The repository's Hopper/Blackwell scripts count the same way for
seqlen_q = seqlen_k (`{FA_REPO}:hopper/benchmark_attn.py@e980f0f6e15ae3a7bc2a29e5610e8a9bfe25f7a6` `flops()`: causal
average key length seqlen/2, bwd printed as `2.5 * nFLOPS`;
`benchmarks/bench_sm90.py@6a94f8b906cf5ab944385d64707f9387f3dd6be9` `fwd_flops`/`bwd_flops`).
Throughput = those FLOPs / time, so a causal kernel's TFLOP/s counts only the unmasked half."""

READ = """How values were read: they are the integers printed above the bars, read by eye from the
figure images at full resolution (no text table of them was found; the papers give only a few
headline numbers in text). Each was cross-checked against its bar's pixel height on the
figure's own axis: within about 1 TFLOP/s on the A100, H100-FA2 and B200 figures and 2 TFLOP/s
on the smaller FA3 images, except bars that run under the legend (their printed label is used).
Where a label itself is hidden, the row's source says so and how the value was obtained."""


def section_a100() -> str:
    n = len(rows(TABLES[0]))
    return f"""{README_HEADING}

`flash_attention.csv` ({n} rows): FlashAttention-2 (`fa2`) and FlashAttention (v1, `fa1`)
forward, backward and forward + backward TFLOP/s on A100 SXM4 80GB, head dim 64 and 128, causal
and not, seq_len 512..16k (batch = 16k / seq_len, nheads x head_dim = 2048), FP16/BF16. The
hardware files name no kernel, so a lookup takes the fastest (FA2 at every point); `fa1` is
there for runs that name it (`training.attention_kernel`).

Sources:
- Tri Dao, *FlashAttention-2*, arXiv 2307.08691 (https://arxiv.org/abs/2307.08691), Fig. 4
  (fwd + bwd), Fig. 5 (fwd), Fig. 6 (bwd), panels (a) no causal mask hdim 64, (b) no causal
  mask hdim 128, (c) causal hdim 64, (d) causal hdim 128; the FlashAttention-2 and the
  FlashAttention bars. Read from the paper figures as PNG files (captions included) in
  `{WB}:assets/post/image/flashattention2/fig4.png`..`fig6.png` @
  `1a20095cd6ca0aea90e034559523c58684df5b57`. Fig. 4 is also the flash-attention README chart
  `{FA_REPO}:assets/flash2_a100_fwd_bwd_benchmark.png@4f285b354796fb17df8636485b9a04df3ebbb7dc`
  (same labels); shapes from that README (@ `{FA_HEAD}`).

{READ}
- Fig. 4b, seq_len 512 (hdim 128, no causal mask, fwd + bwd): the label sits under the legend.
  151 is the bar height and also 3.5 / (1/fwd + 2.5/bwd) = 151.1 from Figs. 5b/6b (209, 136). The
  same identity holds for all 48 fwd/bwd/fwd_bwd triples of both kernels to within 1 TFLOP/s
  (checked by the script).

{CONVENTION}

Missing: head dims other than 64/128; seq_len > 16k; dropout; GQA; fwd/bwd of FA2 releases after
the paper (the numbers are the July 2023 FA2 build). A100 40GB has no published FA2 figure;
`dgx-a100-40gb.yaml` and `vtrain-a100.yaml` reuse this table (same GA100 compute and clocks).

Derived by `python {SCRIPT}`.
"""


def section_h100() -> str:
    n, n8 = len(rows(TABLES[1])), len(rows(TABLES[2]))
    return f"""{README_HEADING}

`flash_attention.csv` ({n} rows) on H100 SXM5 80GB, FP16/BF16, seq_len 512..16k
(batch x seq_len = 16k, nheads x head_dim = 2048), kernels told apart by the `kernel` column:
- `fa3`: FlashAttention-3 forward (head dim 64, 128, 256; causal and not) and backward (head dim
  64, 128; not causal);
- `cudnn`: cuDNN fused attention as benchmarked in the FA3 paper, same points;
- `fa2`: FlashAttention-2 forward / backward from the FA3 paper (2024 FA2 build), and forward +
  backward (head dim 64, 128; causal and not) from the FA2 paper's Fig. 7 (July 2023 build);
- `fa1`: FlashAttention (v1) forward + backward, the same Fig. 7's FlashAttention bars (a lookup
  of one direction takes this rate for both: it prices forward + backward together exactly).

`flash_attention_fp8.csv` ({n8} rows): FlashAttention-3 FP8 forward, head dim 64/128/256, causal
and not. Not referenced by `dgx-h100.yaml` (the cost model runs attention in bf16).

Sources:
- Jay Shah et al., *FlashAttention-3*, arXiv 2407.08608 (https://arxiv.org/abs/2407.08608):
  the FP16 forward figure = `{FA_REPO}:assets/flash3_fp16_fwd.png@7ef24848cf2f855077cef88fe122775b727dcd74`
  (the flash-attention README's FA3 chart; panels (a) no causal hdim 64, (b) causal hdim 64,
  (c)/(d) hdim 128, (e)/(f) hdim 256), the FP16 backward figure (panels (a) hdim 64, (b) hdim 128,
  no causal mask) and the FP8 forward figure, the latter two as PNG files in
  `{WB}:assets/post/image/flashattention3/flash3_fp16_bwd.png`, `flash3_fp8_fwd.png` @
  `9a956496a3bf8442870907754272d97c7a2f2cf4` (its copy of the forward figure is byte-identical
  to the repository's). The rows cite panels by letter: the figure numbers were not visible in
  these images.
- Tri Dao, *FlashAttention-2*, arXiv 2307.08691, Fig. 7 (H100 80GB SXM5, fwd + bwd) =
  `{FA_REPO}:assets/flash2_h100_fwd_bwd_benchmark.png@4f285b354796fb17df8636485b9a04df3ebbb7dc`
  (and `{WB}:assets/post/image/flashattention2/fig7.png@1a20095cd6ca0aea90e034559523c58684df5b57`).

{READ}
- FA3 forward, hdim 256, no causal mask, seq_len 1k: the label is under the legend; 627 is the
  bar height, +-3 (a machine transcription of the figure at subtext.edge.nugit.net says 639;
  not used).
- Cross-check in text: `pytorch/benchmark` commit ff65cb675209d2308f7d27c6920af8a32de9aa90 (PR
  #2391) measured FA3 forward, hdim 128, not causal, at the paper's shapes: 430, 517, 566, 590,
  614, 621 TFLOP/s for 512..16k (a later FA3 build; kept out of the table).

{CONVENTION}

Missing: FA3 / cuDNN / FA2 backward with causal mask and at hdim 256, and FA3 fwd + bwd (not in
the backward figure read here, which has only the two non-causal panels); seq_len > 16k; GQA;
FP8 cuDNN and Triton bars (plotted, not transcribed).

Derived by `python {SCRIPT}`.
"""


def section_b200() -> str:
    n, m = len(rows(TABLES[3])), len(TABLES[3].measured)
    return f"""{README_HEADING}

`flash_attention.csv` ({n} rows) on B200, BF16, head dim 128, causal and not, forward and
backward, seq_len 1k..32k, kernels: `fa4` (FlashAttention-4, CuTe-DSL), `cudnn` (cuDNN 9.19.1.2
non-causal / 9.19.1 causal, the newest version in the figures, the hardware files' default),
`cudnn-9.13` (cuDNN 9.13.0, the figures' older cuDNN bars: the cuDNN of 2025's containers, for
runs that name it), `fa2` (FlashAttention-2 on B200), and `te-2.11`: {m} MEASURED rows, causal
only, forward and backward at 4k (4 to 128 batch x heads), 32k and 128k (8 and 16), with a
`batch_heads` column.

The `te-2.11` rows are Transformer Engine 2.11's attention as Megatron-LM's
TEDotProductAttention runs it on the B200 node SimuMax profiled (the node of `gemm.csv`), kernel
times from the torch profiler: MooreThreads/SimuMax `configs/system/b200_bf16_ceperm.json`
@4dcaae51 (copy in `sources/`), `accelerator.op.sdp_fwd` / `sdp_bwd`
`accurate_efficient_factor`, measured by `simu_tools/efficency_test/test_fa_efficiency.py`.
SimuMax counts FLOPs as 2 b s^2 h (d_qk + d_v) forward and 2.5x that backward, the whole square,
so for head dim 128 causal its rate is twice flash-attention's: tflops = efficiency x 2250 / 2.
Where it timed more than one GQA ratio or layout at a width, the row is the fastest. Its MLA
rows (d_qk 192, d_v 128: DeepSeek's attention, 16 to 128 batch x heads at 4k, 64 at 32k and 128k)
are head dim 160, the width simsp prices MLA's kernel at ((d_qk + d_v) / 2, whose benchmark count
is half SimuMax's as for 128): at 4k and 128 batch x heads they run 935 / 724 TFLOP/s forward /
backward against 1121 / 936 at head dim 128. The rows show what the figures cannot: a call of few heads fills few
SMs. At 4k, forward, 8 batch x heads (a tp-8 rank of Llama-3-70B, micro batch 1) run at 357
TFLOP/s against 980 at 64 and 1121 at 128; backward holds up better (741 / 821 / 936). At 64
(the flash-attention benchmarks' usual 16k tokens of 16 heads at 4k; the FA4 figures do not
state theirs) they sit 24 % (forward) and 25 % (backward) below the figures' cuDNN 9.19.1; at
32k tokens (`benchmarks/benchmark_attn.py`'s default today: 128 at 4k, 16 at 32k) they are 4-5 %
above its cuDNN 9.13.0 bars at 4k (1121 / 936 against 1076 / 893 forward / backward) and at 32k
4 % above forward, 14 % below backward (1311 / 981 against 1266 / 1142). They are
causal only: a run naming them whose attention has non-causal blocks (context parallelism over
a p2p ring) prices those blocks from the GEMM tables, so only runs of causal calls (no CP, or
CP over all-to-all) should name them.

cuDNN's Blackwell attention moved between those versions: from 2k up, 9.13.0 is 15-18% below
9.19.1 causal (forward and backward) and 5-13% below it non-causal. `NVIDIA/cudnn-frontend`
measured the same step on its own shapes (batch 1, 128 query / 8 KV heads, causal,
`benchmark/sdpa_benchmark_training/artifacts/sdpa_bf16_benchmark_results_NVIDIA_B200.csv`):
cuDNN 9.10.2 (NGC PyTorch 25.06, @9793df5) and 9.13.1 (25.09, @0b1577c) agree within 3% from
8k up (8k: 1197 / 940 and 1171 / 943 TFLOP/s fwd / bwd, beside 9.13.0's 1168 / 1008 here), so
the 9.13 rows stand for every cuDNN of 2025 from 9.10 on, and are the nearest measured for older
ones.

Sources:
- Ted Zadouri et al., *FlashAttention-4: Algorithm and Kernel Pipelining Co-Design for
  Asymmetric Hardware Scaling*, arXiv 2603.05451 (https://arxiv.org/abs/2603.05451), the figures
  titled "Forward TFLOPS on B200 (causal=False|True, head dim 128)" and "Backward TFLOPS on B200
  (...)", read from the PNG files in `{WB}:assets/post/image/flashattention4/`
  `fa4_fwd_noncausal_hdim128.png`, `fa4_fwd_causal_hdim128.png`, `fa4_bwd_noncausal_hdim128.png`,
  `fa4_bwd_causal_hdim128.png` @ `06295c593c68592c2893e9ab9ed159e7286bd778` (that review,
  `_posts/2026-04-11-flashattention-4.md@7cf6f1a9b617ce9b211106033ea77c7fb7cc1b4d`, gives the
  setting as BF16, hidden dimension 2048, head dim 64 or 128, seq_len 1K-32K; the paper abstract
  gives the 1613 TFLOP/s peak seen at 32k). The rows cite figures by title: their numbers were
  not visible. The paper PDF (`{FA_REPO}:assets/fa4_paper.pdf`) was not readable here (stored
  as a large file).

{READ}
- Cross-check in text: `{FA_REPO}` PR #2280 (2026-02-27), hdim 128, seq_len 8192, batch 4, 16
  heads on an SM100 GPU (model not named): fwd 1534.8 / 1418.1 TFLOP/s (not causal / causal),
  2-CTA bwd 1359.8 / 1208.6 (a build before the paper's; kept out of the table).

{CONVENTION}

Missing: head dim 64 (the review says the paper benchmarks it; no figure of it was available);
head dim (192, 128) (DeepSeek shape; the table has one head_dim column); seq_len 512; fwd + bwd
(not plotted). GB200 has no published figure of its own: `gb200-nvl72.yaml` reuses this table.

Derived by `python {SCRIPT}`.
"""


def section_reuse(folder: str, target: str, why: str) -> str:
    return f"""{README_HEADING}

No table in this folder: `hardware/{folder}.yaml` points `calibration.flash_attention` at
`calibration/{target}/flash_attention.csv` (provenance in the README there). {why}

Derived by `python {SCRIPT}`.
"""


def readme_sections() -> dict:
    return {
        "dgx-a100-80gb": section_a100(),
        "dgx-h100": section_h100(),
        "dgx-b200": section_b200(),
        "dgx-a100-40gb": section_reuse(
            "dgx-a100-40gb", "dgx-a100-80gb",
            "No FlashAttention figure of the A100 40GB part is published; FlashAttention is compute-bound "
            "and the 40GB part has the same GA100 compute, 1410 MHz clocks and 400 W (ref §1.1), so the "
            "FA2 paper's A100 80GB SXM4 figures apply; only HBM bandwidth differs (1555 vs 2039 GB/s)."),
        "vtrain-a100": section_reuse(
            "vtrain-a100", "dgx-a100-80gb",
            "The vTrain cluster's A100 is assumed to be the SXM4 80GB part (see that hardware file), the "
            "GPU of the FA2 paper's figures."),
        "hgx-h200": section_reuse(
            "hgx-h200", "dgx-h100",
            "No FlashAttention figure of the H200 is published in what was searched. The H200 is the same "
            "GH100 die at the same clocks as the H100 SXM (989 TFLOP/s dense BF16, ref §1.1) with faster "
            "HBM3e, and FlashAttention is compute-bound at these shapes. A user report "
            "(Dao-AILab/flash-attention issue #1438, 2025-01) timed FA3 on both: H200 forward ~4 % slower "
            "and backward ~3.5 % faster than H100 on average (no TFLOP/s given), i.e. within a few percent."),
        "gb200-nvl72": section_reuse(
            "gb200-nvl72", "dgx-b200",
            "No FlashAttention figure of GB200 is published in what was searched. Its Blackwell GPU is the "
            "B200 design at a higher power limit (2500 vs 2250 TFLOP/s dense BF16 in the hardware files), "
            "so the B200 table is used unscaled and is likely a few percent conservative."),
    }


def update_readme(path: Path, section: str) -> None:
    """Write `section` into the README at `path`: in place of an earlier copy of it (from its
    heading to the next `## ` heading or the end of the file), else at the end, so the other
    derive scripts' sections keep their order."""
    text = path.read_text() if path.exists() else ""
    head, found, tail = text.partition(README_HEADING)
    if not found:
        text = text.rstrip("\n")
        path.write_text((text + "\n\n" if text else "") + section)
        return
    nxt = tail.find("\n## ")
    rest = tail[nxt + 1:] if nxt >= 0 else ""
    path.write_text(head + section.rstrip("\n") + "\n" + ("\n" + rest if rest else ""))


def derive(out: Path = CAL_ROOT, readme: bool = True) -> list[Path]:
    check_a100_consistency()
    written = []
    for t in TABLES:
        path = out / t.folder / t.file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(csv_text(t))
        written.append(path)
    if readme:
        for folder, section in readme_sections().items():
            path = out / folder / "README.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            update_readme(path, section)
            written.append(path)
    return written


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=CAL_ROOT, help="calibration root (default: hardware/calibration)")
    parser.add_argument("--no-readme", action="store_true", help="do not touch the READMEs")
    args = parser.parse_args(argv)
    for path in derive(args.out, readme=not args.no_readme):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
