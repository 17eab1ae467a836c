"""Published GEMM measurements for the Hopper and Blackwell tables, typed in from their sources.

Read by hardware/calibration/derive_gemm_tables.py, which writes them as the measured tables
(gemm.csv, gemm_fp8.csv) of dgx-h100, hgx-h200, dgx-b200 and gb200-nvl72. Figures are TFLOP/s
counting 2*m*n*k*batch FLOPs. The SimuMax B200 sweep (432 shapes) is read from its JSON file
instead (see derive_gemm_tables.SIMUMAX_B200).
"""

XLA_SM90_SRC = (
    "ROCm/xla:xla/service/gpu/model/matmul_interpolator_data.h@63ce2981d3f46d47fb25509a2d257f428f3dd275 "
    "(OpenXLA's table, Apache-2.0), key sm_90, the 125 entries with b: 1; flops of "
    "'bf16xbf16->bf16' / 1e12, measured by XLA's matmul_perf_table_gen with cuBLAS (ref §4.3 [S25])"
)
XLA_SM90_BF16 = (
    # m, n, k, TFLOP/s (batch 1); n varies fastest, then k, then m, as in the file
    (256, 256, 256, 6.722), (256, 512, 256, 12.37), (256, 1024, 256, 23.69), (256, 2048, 256, 43.80), (256, 4096, 256, 82.65),
    (256, 256, 512, 11.46), (256, 512, 512, 23.05), (256, 1024, 512, 43.80), (256, 2048, 512, 83.06), (256, 4096, 512, 146.2),
    (256, 256, 1024, 18.89), (256, 512, 1024, 41.12), (256, 1024, 1024, 75.07), (256, 2048, 1024, 141.6), (256, 4096, 1024, 237.6),
    (256, 256, 2048, 31.90), (256, 512, 2048, 63.91), (256, 1024, 2048, 119.6), (256, 2048, 2048, 222.6), (256, 4096, 2048, 345.9),
    (256, 256, 4096, 90.93), (256, 512, 4096, 93.08), (256, 1024, 4096, 177.1), (256, 2048, 4096, 296.3), (256, 4096, 4096, 418.4),
    (512, 256, 256, 12.34), (512, 512, 256, 23.63), (512, 1024, 256, 45.71), (512, 2048, 256, 84.52), (512, 4096, 256, 141.3),
    (512, 256, 512, 23.05), (512, 512, 512, 43.58), (512, 1024, 512, 85.38), (512, 2048, 512, 147.5), (512, 4096, 512, 243.6),
    (512, 256, 1024, 41.53), (512, 512, 1024, 73.42), (512, 1024, 1024, 146.5), (512, 2048, 1024, 241.8), (512, 4096, 1024, 381.3),
    (512, 256, 2048, 61.68), (512, 512, 2048, 116.3), (512, 1024, 2048, 231.0), (512, 2048, 2048, 342.8), (512, 4096, 2048, 530.0),
    (512, 256, 4096, 92.82), (512, 512, 4096, 187.5), (512, 1024, 4096, 300.9), (512, 2048, 4096, 460.4), (512, 4096, 4096, 661.6),
    (1024, 256, 256, 23.56), (1024, 512, 256, 45.47), (1024, 1024, 256, 80.85), (1024, 2048, 256, 144.3), (1024, 4096, 256, 219.7),
    (1024, 256, 512, 43.69), (1024, 512, 512, 84.31), (1024, 1024, 512, 149.1), (1024, 2048, 512, 244.0), (1024, 4096, 512, 347.7),
    (1024, 256, 1024, 69.76), (1024, 512, 1024, 144.0), (1024, 1024, 1024, 252.8), (1024, 2048, 1024, 384.0), (1024, 4096, 1024, 494.4),
    (1024, 256, 2048, 116.1), (1024, 512, 2048, 235.5), (1024, 1024, 2048, 359.8), (1024, 2048, 2048, 529.5), (1024, 4096, 2048, 639.1),
    (1024, 256, 4096, 187.2), (1024, 512, 4096, 312.1), (1024, 1024, 4096, 472.6), (1024, 2048, 4096, 665.7), (1024, 4096, 4096, 751.9),
    (2048, 256, 256, 45.34), (2048, 512, 256, 84.31), (2048, 1024, 256, 145.6), (2048, 2048, 256, 219.7), (2048, 4096, 256, 303.3),
    (2048, 256, 512, 78.95), (2048, 512, 512, 150.1), (2048, 1024, 512, 244.9), (2048, 2048, 512, 348.6), (2048, 4096, 512, 449.3),
    (2048, 256, 1024, 142.8), (2048, 512, 1024, 257.6), (2048, 1024, 1024, 386.8), (2048, 2048, 1024, 498.0), (2048, 4096, 1024, 596.5),
    (2048, 256, 2048, 231.4), (2048, 512, 2048, 354.1), (2048, 1024, 2048, 535.3), (2048, 2048, 2048, 641.0), (2048, 4096, 2048, 725.5),
    (2048, 256, 4096, 333.9), (2048, 512, 4096, 458.1), (2048, 1024, 4096, 663.6), (2048, 2048, 4096, 752.2), (2048, 4096, 4096, 752.3),
    (4096, 256, 256, 84.52), (4096, 512, 256, 141.9), (4096, 1024, 256, 223.0), (4096, 2048, 256, 308.2), (4096, 4096, 256, 398.6),
    (4096, 256, 512, 144.9), (4096, 512, 512, 240.1), (4096, 1024, 512, 354.6), (4096, 2048, 512, 449.6), (4096, 4096, 512, 551.8),
    (4096, 256, 1024, 229.0), (4096, 512, 1024, 377.5), (4096, 1024, 1024, 497.6), (4096, 2048, 1024, 604.6), (4096, 4096, 1024, 685.2),
    (4096, 256, 2048, 314.3), (4096, 512, 2048, 531.0), (4096, 1024, 2048, 643.7), (4096, 2048, 2048, 727.5), (4096, 4096, 2048, 735.6),
    (4096, 256, 4096, 398.9), (4096, 512, 4096, 662.0), (4096, 1024, 4096, 751.7), (4096, 2048, 4096, 759.4), (4096, 4096, 4096, 780.2),
)
"""The file names no SKU for sm_90; its 4096^3 figure (780.2) sits under the H100 SXM MAMF 794.5.
Its fp8 entries are not used: several pass the H100's FP8 dense peak of 1979 TFLOP/s (4096^3:
2423.8), twice Azure's cuBLASLt 4096^3 figure (1216.9)."""

MAMF_SRC = (
    "stas00/ml-engineering:compute/accelerator/README.md@744d01e18b79512572f64a6bbd8b5f4a725203a7, "
    "'Maximum Achievable Matmul FLOPS comparison table', torch.mm best shape of a brute-force search "
    "(ref §4.1 [S5])"
)
MAMF_BF16 = {
    # GPU: (M, N, K, TFLOP/s): torch.mm(A[M,K], B[K,N]), both row-major: layout NN here
    "H100": (2048, 2048, 13312, 794.5),  # "H100 SXM" ("H200 is the same")
    "B200": (1792, 16128, 3072, 1745.0),  # "B200 SXM"
    "GB200": (4096, 9728, 2048, 1822.0),  # "GB200 SXM"
}
MAMF_FP8 = {"H100": 1402.6, "H200": 1453.4, "B200": 3432.5, "GB200": 3615.6}
"""e4m3 maxima, ref §4.1 [S5]: no best shape is quoted, so they cap the FP8 tables, not rows."""
DENSE_BF16_PEAK = {"B200": 2250.0, "GB200": 2500.0}
"""Dense BF16 tensor-core peaks, TFLOP/s: HGX/DGX B200 at 1000 W and the GB200 variant at
1200 W, ref §1.1 [S2][S4]."""

AZURE_FP8_SRC = (
    "Azure/AI-benchmarking-guide {page} (ref §4.3 [S21]): superbench cublaslt_gemm, FP8 e4m3, "
    "random init, 10,000 warmup; Benchmarks/GEMMCublasLt.py@8fd0c6e1"
)
AZURE_PAGES = {
    "H100": "Azure Results/ND_H100_v5_results.md@f350e7e6",
    "H200": "Azure_Results/ND_H200_v5_results.md@7f20e5fa",
    "GB200": "Azure_Results/ND_GB200_v6_results.md@2a370be6",
}
AZURE_SQUARE = (1024, 2048, 4096, 8192, 16384, 32768)
AZURE_FP8 = {
    # GPU: ((m, n, k, TFLOP/s), ...): the m = n = k sweep, then the odd shapes (H100 only)
    "H100": tuple((s, s, s, t) for s, t in zip(AZURE_SQUARE, (274.1, 1011.3, 1216.9, 1290.1, 1377.3, 1382.2)))
    + ((1024, 2145, 1024, 410.7), (6144, 12288, 12288, 1351.4), (802816, 192, 768, 663.8)),
    "H200": tuple((s, s, s, t) for s, t in zip(AZURE_SQUARE, (290.8, 1013.4, 1249.1, 1300.6, 1366.3, 1349.5))),
    "GB200": tuple((s, s, s, t) for s, t in zip(AZURE_SQUARE, (489.2, 2243.6, 2834.6, 2876.6, 2906.9, 2825.6)))
    + ((1024, 2145, 1024, 1022.2), (6144, 12288, 12288, 2895.6), (802816, 192, 768, 1459.5)),
}
"""The GB200 odd shapes are on the same page (read there; the reference quotes the sweep only)."""

H100_LARGE_SRC = {
    "marin": (
        "marin-community/marin:.agents/reports/gpu-hardware-target-report.md"
        "@9f1898306007d08ee91588e42507aa5505abeff9, 'Compute and HBM Measurements' (H100 rows; "
        "issue marin-community/marin#7010); method scripts/bench/gpu_microbench.py@same commit: "
        "JAX 0.10.x jit x @ y of two (s, s) row-major jax.random.normal arrays (fp8: cast to "
        "float8_e4m3fn), 3 warmup + 10 timed calls; CoreWeave H100x8 nodes, listed as 'H100 SXM' "
        "(80 GB; its measured 2.85 TB/s HBM stream is above the H100 PCIe's 2.0 TB/s peak)"
    ),
    "zzc0721": (
        "zzc0721/torch-performance-test-data issue #79 (2025-10-18, 'NVIDIA H100 80GB HBM3', the "
        "SXM5 device name; torch 2.7.0+cu128); method test.py@6e2382cee378ec5ab9367fe2fb1f9cbc438ffcec "
        "(the version whose output the issue shows): torch.mm(a, b) of two (s, s) torch.randn bf16, "
        "10 warmup + 30 timed in CUDA events"
    ),
}
H100_LARGE_BF16 = (
    # source, m, n, k, TFLOP/s: square GEMMs, both operands row-major (A @ B): layout NN here
    ("zzc0721", 4096, 4096, 4096, 788.72),
    ("zzc0721", 8192, 8192, 8192, 797.51),
    ("zzc0721", 10240, 10240, 10240, 719.72),
    ("marin", 8192, 8192, 8192, 753.3),
    ("marin", 16384, 16384, 16384, 700.6),
)
"""H100 SXM bf16 measurements above XLA's 4096 (short bursts: 13-80 ms of timed work; clocks and
power not logged, so they read at or above the fixed-power rate of NVIDIA's CUTLASS methodology
note, media/docs/cpp/gemm_performance_measurement_methodology_guidelines.md@2115eee1). The
zzc0721 8192^3 figure (797.5) passes the MAMF 794.5: a cap from a search, not a maximum.
Not used: pytorch/pytorch#100850 (H100 torch.bmm, 742.7 / 549.5 / 542.9 at batch 1 / 2 / 4): the
stored copy shows the script's defaults (seq 2048, hidden 8192) but not the bmm itself nor its
dtype, the SKU is not named, and batch > 1 is the reported defect; zzc0721 issue #39 (H100 80GB
HBM3, maxima only, no size); the FP16 and TF32 rows of issue #79 (not bf16)."""
H100_LARGE_FP8 = (
    # source, m, n, k, TFLOP/s: e4m3 x e4m3, stored TN like every FP8 row (XLA, like Transformer
    # Engine, runs cuBLASLt FP8 GEMMs as TN)
    ("marin", 8192, 8192, 8192, 1300.3),
    ("marin", 16384, 16384, 16384, 1452.7),
)
"""marin's fp8 rows; Azure's sweep (AZURE_FP8) measured the same two shapes (1290.1, 1377.3)."""
