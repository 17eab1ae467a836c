"""Measured tables checked against the GPU they claim to describe: an achieved rate above the
datasheet peak is a unit slip or another GPU's table, and would be taken as a prediction."""

from simsp.errors import InputError
from simsp.tables.attention import read_attention_table
from simsp.tables.gemm import read_gemm_table


def check_tables(hw) -> None:
    """InputError when a GEMM or FlashAttention table of hw is faster than its GPU's peak."""
    cal, peak = hw.calibration, hw.gpu.peak_tflops
    for path in (cal.gemm, cal.gemm_model):
        if path:
            check_gemm_rates(read_gemm_table(path).points, peak, path)
    if cal.flash_attention:
        points = read_attention_table(cal.flash_attention).points
        check_gemm_rates(points, peak, cal.flash_attention)
        kernels = sorted({p.kernel for p in points})
        if cal.attention_kernel and cal.attention_kernel not in kernels:
            raise InputError(
                hw.source or hw.name,
                "calibration.attention_kernel",
                cal.attention_kernel,
                f"must be a kernel of {cal.flash_attention} ({', '.join(kernels)})",
            )


def check_gemm_rates(points, peak_tflops: float, path) -> None:
    """InputError naming the fastest row when it passes peak_tflops."""
    fastest = max(points, key=lambda p: p.tflops, default=None)
    if fastest is not None and fastest.tflops > peak_tflops:
        raise InputError(
            path,
            "tflops",
            fastest.tflops,
            f"faster than the GPU's peak_tflops ({peak_tflops:g}): a table of another GPU "
            "or another precision?",
        )
