"""GEMM and memory-bound kernel times on one GPU.

GEMMs: measured per-shape throughput (calibration GemmTable), interpolated across shapes; then a
modeled table (NVIDIA's matmul heuristics scaled to the measured table); where neither covers a
shape, a roofline: max(FLOPs over the efficiency curve's rate, bytes over the
achieved HBM rate). An FP8 GEMM runs at most the FP8/BF16 peak ratio faster than the BF16
GEMM of its shape. Memory-bound kernels: bytes moved over the achieved-bandwidth curve, or the
measured fused layer-norm rate. Every result says which source it used.
"""

import bisect
import dataclasses
from dataclasses import dataclass

from simsp.errors import InputError
from simsp.model.blocks.elementwise import EAGER
from simsp.model.layer import Attention, Gemm
from simsp.spec.hardware import HardwareSpec
from simsp.spec.precision import BYTES_FP8, fp8_gemm_layout
from simsp.tables import GemmTable, read_attention_table, read_gemm_table
from simsp.tables.attention import BACKWARD_FLOPS_FACTOR, AttentionTable
from simsp.tables.grouped_gemm import read_grouped_gemm_table
from simsp.units import BYTES_16BIT, GB, TERA, US

FORWARD, DGRAD, WGRAD = "TN", "NN", "NT"


@dataclass(frozen=True)
class Timed:
    """Seconds of one kernel and where the figure came from: table, roofline or bandwidth."""

    seconds: float
    source: str


def step_value(steps: tuple[tuple[float, float], ...], x: float) -> float:
    """The value of the last step whose threshold is <= x (steps ascending)."""
    i = bisect.bisect_right([s[0] for s in steps], x) - 1
    return steps[max(i, 0)][1]


def gemm_grad_shapes(g: Gemm) -> tuple[tuple[Gemm, str], tuple[Gemm, str]]:
    """(dgrad, wgrad) of a linear layer C[m,n] = A[m,k] W[k,n], in the table's layout names.

    dgrad: dA[m,k] = dC[m,n] Wᵀ (NN); wgrad: dW[n,k] = dCᵀ[n,m] A[m,k] (NT), as SimuMax
    records them.
    """
    dgrad = dataclasses.replace(g, m=g.m, n=g.k, k=g.n)
    wgrad = dataclasses.replace(g, m=g.n, n=g.k, k=g.m)
    return (dgrad, DGRAD), (wgrad, WGRAD)


def _forward_shape(g: Gemm, layout: str) -> tuple[int, int, int, int]:
    """(groups, m, n, k) of the forward GEMM whose stage `layout` this shape is (the inverse of
    gemm_grad_shapes)."""
    if layout == DGRAD:
        return g.batch, g.m, g.k, g.n
    if layout == WGRAD:
        return g.batch, g.k, g.m, g.n
    return g.batch, g.m, g.n, g.k


def attention_grad_shapes(g: Gemm) -> tuple[Gemm, Gemm]:
    """The two batched GEMMs of an attention GEMM's backward, one per input (same FLOPs each)."""
    return dataclasses.replace(g, n=g.k, k=g.n), dataclasses.replace(g, m=g.k, n=g.n, k=g.m)


def _residuals(measured: GemmTable, model: GemmTable) -> GemmTable | None:
    """measured / modeled throughput at every measured point the model covers, as a table."""
    points = []
    for p in measured.points:
        modeled = model.lookup_tflops(p.m, p.n, p.k, p.batch, p.layout)
        if modeled:
            points.append(dataclasses.replace(p, tflops=p.tflops / modeled))
    return (
        GemmTable(tuple(points), measured.dtype, measured.device, "measured/model")
        if points
        else None
    )


@dataclass(frozen=True)
class GemmTables:
    """The tables of one operand type: measured, modeled, and measured/model at the measured
    points; no shape runs faster than `ceiling_tflops`, the best rate measured on this GPU
    (its MAMF, or the table's own best), as the model's shape trend times a neighbour's ratio
    can otherwise exceed it."""

    measured: GemmTable | None
    model: GemmTable | None
    ceiling_tflops: float
    residual: GemmTable | None
    fraction: float = 1.0
    """Achieved fraction of the tables' rates (calibration.gemm_table_fraction: 1 unless fitted
    to a cluster's runs)."""

    @classmethod
    def read(
        cls, measured_path: str, model_path: str, mamf_tflops: float, fraction: float = 1.0
    ) -> "GemmTables":
        measured = read_gemm_table(measured_path) if measured_path else None
        model = read_gemm_table(model_path) if model_path else None
        best = max((p.tflops for p in measured.points), default=0.0) if measured else 0.0
        residual = _residuals(measured, model) if measured and model else None
        return cls(measured, model, max(mamf_tflops, best), residual, fraction)

    def tflops(self, g: Gemm, layout: str) -> tuple[float | None, str]:
        """Throughput and its source. Where measurements cover the shape and a model exists, the
        model's shape trend (tile and wave quantisation) scaled by the measured/model ratio of
        the nearby measured points; else the measurements alone; else the model alone; never
        above the ceiling."""
        rate, source = self._uncapped_tflops(g, layout)
        return (min(rate * self.fraction, self.ceiling_tflops) if rate else rate), source

    def _uncapped_tflops(self, g: Gemm, layout: str) -> tuple[float | None, str]:
        rate, source = self._table_rate(g, layout)
        if rate or g.batch != 1:
            return rate, source
        # beyond the tables' largest m, n or k, a GEMM runs at least as well as the largest
        # they hold in that direction (its efficiency saturates with size): the rate at the edge
        table = self.model or self.measured
        if table is None:
            return rate, source
        edge = tuple(min(x, top) for x, top in zip((g.m, g.n, g.k), table.largest, strict=True))
        if edge == (g.m, g.n, g.k):
            return rate, source
        m, n, k = edge
        rate, source = self._table_rate(dataclasses.replace(g, m=m, n=n, k=k), layout)
        return rate, (f"{source} (edge)" if rate else source)

    def _table_rate(self, g: Gemm, layout: str) -> tuple[float | None, str]:
        shape = (g.m, g.n, g.k, g.batch, layout)
        modeled = self.model.lookup_tflops(*shape) if self.model else None
        if self.residual and modeled:
            ratio = self.residual.lookup_tflops(*shape)
            if ratio:
                return modeled * ratio, "table"
        measured = self.measured.lookup_tflops(*shape) if self.measured else None
        if measured:
            return measured, "table"
        return modeled, "model"


def attention_rows(table: AttentionTable, kernel: str) -> AttentionTable:
    """The table's rows of the one kernel the framework runs (all rows when none is named)."""
    if not kernel:
        return table
    return AttentionTable(tuple(p for p in table.points if p.kernel == kernel), table.source)


def _fp8_bound(fp8, fp8_source, bf16, bf16_source, gain) -> tuple[float, str]:
    """The FP8 rate of a shape, held to at most `gain` times the BF16 rate of the same kernel
    (shape and the layout FP8 runs in, `precision.fp8_gemm_layout`) where the BF16 tables
    cover it. On one GPU an FP8 GEMM outruns that BF16 GEMM at most by the tensor cores' peak
    ratio. A hardware file's two tables can come from different machines and methods, though:
    dgx-b200's BF16 rows are SimuMax's B200 timing Llama layers by shape, its FP8 ones
    nvMatmulHeuristics anchored to Azure's GB200 square sweep, and together they said an FP8
    GEMM ran up to 4.1 times its BF16 one. Where they disagree with the tensor cores the BF16
    figure, whose footing is layer shapes rather than squares, sets the rate and its source is
    the answer's. It is a bound, the optimistic edge: the same GPUs' measured maxima (MAMF)
    gain 1.77 (H100) to 1.98 (GB200)."""
    if bf16 and fp8 > gain * bf16:
        return gain * bf16, bf16_source
    return fp8, fp8_source


OPERAND_BYTES = {"bf16": BYTES_16BIT, "fp8": BYTES_FP8}

CROSS_ENTROPY_KIND = "cross_entropy."
"""Prefix of a memory-bound kind that names a loss implementation: `cross_entropy.te`."""


class ComputeModel:
    """Kernel times for one GPU type."""

    def __init__(self, hw: HardwareSpec):
        self.hw = hw
        cal, gpu = hw.calibration, hw.gpu
        self.tables = {
            "bf16": GemmTables.read(
                cal.gemm, cal.gemm_model, gpu.gemm_max_tflops, cal.gemm_table_fraction
            ),
            "fp8": GemmTables.read(
                cal.gemm_fp8, cal.gemm_model_fp8, gpu.gemm_max_fp8_tflops, cal.gemm_table_fraction
            ),
        }
        self.ceiling_tflops = self.tables["bf16"].ceiling_tflops
        self.fp8_gain = gpu.peak_fp8_tflops / gpu.peak_tflops if gpu.peak_fp8_tflops else 0.0
        """The most an FP8 GEMM can gain on the BF16 one of its shape: the tensor cores' dense
        FP8 over BF16 peak (2 on Hopper and Blackwell, the datasheets'), FP8 halving the
        operand bytes too."""
        self.launch_s = hw.calibration.kernel_launch_us * US
        self._all_attention = (
            read_attention_table(cal.flash_attention) if cal.flash_attention else None
        )
        self.attention_table = (
            attention_rows(self._all_attention, cal.attention_kernel)
            if cal.flash_attention
            else None
        )
        self._kernels: dict[str, AttentionTable] = {}
        self.grouped = read_grouped_gemm_table(cal.grouped_gemm) if cal.grouped_gemm else None
        self._grouped_ratio: dict = {}

    def gemm(self, g: Gemm, layout: str = FORWARD) -> Timed:
        """A (batched) GEMM in its operand type: the measured table where it covers the shape,
        then the modeled table, else the roofline. A grouped GEMM (a mixture of experts' local
        experts) is what Transformer Engine runs: one plain GEMM a group (`_groups_s`), times,
        where the hardware has a grouped table, the nearest measured grouped GEMM's own time
        over that same sum (grouped_ratio)."""
        if not (g.grouped and g.batch > 1):  # one group is one plain GEMM
            return self._gemm(g, layout)
        seconds, source = self._groups_s(g, layout)
        if not self.grouped:
            return Timed(seconds, source + " x groups")
        ratio = self.grouped_ratio(*_forward_shape(g, layout), layout)
        return Timed(seconds * ratio, source + "+grouped")

    def _groups_s(self, g: Gemm, layout: str) -> tuple[float, str]:
        """G groups as G plain GEMMs of one group's shape, each priced by the tables: TE's
        grouped GEMM launches one cuBLAS GEMM a group over 4 compute streams
        (TransformerEngine transformer_engine/common/gemm/cublaslt_gemm.cu
        multi_stream_cublas_gemm, gemm.h num_streams = 4), not one strided-batched GEMM, whose
        rates the batched rows of the GEMM tables (or, beyond them, the roofline) give. What the
        streams' concurrency saves is in the grouped table's ratio where the GPU has one;
        without one (H100) the groups are priced one after another, pessimistic for groups too
        small to fill the GPU (the B200's measured ratios scatter around 1: 0.4-2.0)."""
        one = self._gemm(dataclasses.replace(g, batch=1, grouped=False), layout)
        return one.seconds * g.batch, one.source

    def grouped_ratio(self, groups: int, m: int, n: int, k: int, layout: str) -> float:
        """How much longer the nearest measured grouped GEMM of this stage took than its groups
        as plain GEMMs of the tables (`_groups_s`): what running the groups as one Transformer
        Engine grouped GEMM costs, or saves through its streams, beyond the per-shape rate.
        Measured in BF16 and applied to FP8 grouped GEMMs too (the same kernel family, each
        group's own shape)."""
        p = self.grouped.nearest(groups, m, n, k, layout)
        key = (p, layout)
        if key not in self._grouped_ratio:
            fwd = Gemm(p.m, p.n, p.k, p.groups, grouped=True)
            (dgrad, _), (wgrad, _) = gemm_grad_shapes(fwd)
            shape = {FORWARD: fwd, DGRAD: dgrad, WGRAD: wgrad}[layout]
            priced, _ = self._groups_s(shape, layout)
            measured = p.flops / (p.tflops * TERA)
            self._grouped_ratio[key] = measured / priced
        return self._grouped_ratio[key]

    def _gemm(self, g: Gemm, layout: str = FORWARD) -> Timed:
        """gemm without the grouped-GEMM step."""
        if g.dtype == "fp8" and not self.hw.gpu.peak_fp8_tflops:
            raise InputError(
                self.hw.source or self.hw.name,
                "gpu.peak_fp8_tflops",
                self.hw.gpu.peak_fp8_tflops,
                "training.precision fp8 needs a GPU with FP8 tensor cores (set its dense FP8 "
                "peak and gemm_max_fp8_tflops)",
            )
        tflops, source = self.tflops(g, layout)
        if tflops:
            return Timed(max(g.flops / (tflops * TERA), self.launch_s), source)
        return Timed(max(self._roofline_s(g), self.launch_s), "roofline")

    def tflops(self, g: Gemm, layout: str) -> tuple[float | None, str]:
        """Throughput of a GEMM from the tables of its operand type, and its source. An FP8
        GEMM runs at most `fp8_gain` times the BF16 rate of its shape (`_fp8_bound`)."""
        rate, source = self._table_tflops(g, layout)
        if g.dtype != "fp8" or not rate:
            return rate, source
        like = fp8_gemm_layout(layout, self.hw.gpu.compute_capability)  # the kernel FP8 runs
        bf16, bf16_source = self._table_tflops(dataclasses.replace(g, dtype="bf16"), like)
        return _fp8_bound(rate, source, bf16, bf16_source, self.fp8_gain)

    def _table_tflops(self, g: Gemm, layout: str) -> tuple[float | None, str]:
        """The tables' rate of a shape on this part: times gpu.tensor_clock_fraction."""
        rate, source = self.tables[g.dtype].tflops(g, layout)
        clock = self.hw.gpu.tensor_clock_fraction
        return (rate * clock if rate and clock != 1.0 else rate), source

    def attention_for(self, kernel: str) -> AttentionTable | None:
        """The attention rows of the kernel a run names, or the hardware's own."""
        if not kernel:
            return self.attention_table
        if self._all_attention is None:
            raise InputError(
                self.hw.source or self.hw.name,
                "calibration.flash_attention",
                "",
                f"training.attention_kernel {kernel} needs a FlashAttention table",
            )
        if kernel not in self._kernels:
            rows = attention_rows(self._all_attention, kernel)
            if not rows.points:
                known = ", ".join(sorted({p.kernel for p in self._all_attention.points}))
                raise InputError(
                    self.hw.source or self.hw.name,
                    "training.attention_kernel",
                    kernel,
                    f"must be a kernel of {self.hw.calibration.flash_attention} ({known})",
                )
            self._kernels[kernel] = rows
        return self._kernels[kernel]

    def flash_attention(self, att: Attention, backward: bool = False) -> Timed:
        """A fused attention kernel: its benchmark FLOPs (x 2.5 backward) over the measured rate
        for its head size, sequence length, mask and (where the table states it) width; without a
        table, its two (backward: five) batched GEMMs from the GEMM tables, halved when causal,
        as the kernel skips masked blocks."""
        flops = att.benchmark_flops * (BACKWARD_FLOPS_FACTOR if backward else 1.0)
        table = self.attention_for(att.kernel)
        rate = (
            table.lookup_tflops(
                att.head_dim,
                att.seq_len,
                att.causal,
                "bwd" if backward else "fwd",
                att.batch_heads,
            )
            if table
            else None
        )
        if rate:
            rate = min(rate, self.ceiling_tflops) * self.hw.gpu.tensor_clock_fraction
            return Timed(max(flops / (rate * TERA), self.launch_s), "flash table")
        scores = self.gemm(Gemm(att.seq_len, att.seq_len, att.head_dim, att.batch_heads))
        over_v = self.gemm(Gemm(att.seq_len, att.head_dim, att.seq_len, att.batch_heads))
        per_pass = (scores.seconds + over_v.seconds) / (2 if att.causal else 1)
        per_pass *= att.computed_share  # a sliding window's band of the causal half
        source = "roofline" if "roofline" in (scores.source, over_v.source) else scores.source
        return Timed(
            max(per_pass * (BACKWARD_FLOPS_FACTOR if backward else 1.0), self.launch_s), source
        )

    def _roofline_s(self, g: Gemm) -> float:
        """max(compute at the efficiency curve's rate, operand and result traffic over HBM)."""
        gpu = self.hw.gpu
        best = gpu.gemm_max_fp8_tflops if g.dtype == "fp8" else gpu.gemm_max_tflops
        rate = best * TERA * step_value(self.hw.calibration.gemm_fallback_efficiency, g.flops)
        rate *= gpu.tensor_clock_fraction
        operands = OPERAND_BYTES[g.dtype] * (g.m * g.k + g.k * g.n)
        traffic = g.batch * (operands + BYTES_16BIT * g.m * g.n)
        return max(g.flops / rate, self.memory_bound(traffic).seconds)

    def memory_bound(
        self, nbytes: float, kind: str = "", backward: bool = False, kernels: int = 1
    ) -> Timed:
        """An element-wise kernel moving nbytes through HBM: at the measured rate of its kind
        (fused layer-norm, fused Adam, a cross-entropy implementation) where the hardware file
        has one, else the curve's. `kernels` > 1: the bytes moved by that many eager torch
        kernels (model/blocks/elementwise.py), at the hardware's measured eager rate of the kind
        (GB/s of the fused kernel's bytes, MemoryBoundSpec.eager_gbps) where it has one, else
        as that many kernels of equal share, each on the curve at its own size."""
        if kernels > 1:
            measured = self.hw.memory_bound.eager_gbps(kind, backward)
            if measured:  # the eager ops of a kind, timed together against the fused bytes
                e = EAGER[kind]
                fused = nbytes / (e.bwd_factor if backward else e.fwd_factor)
                return Timed(max(fused / (measured * GB), kernels * self.launch_s), "eager")
            one = self.memory_bound(nbytes / kernels)
            return Timed(one.seconds * kernels, one.source)
        measured = self._measured_gbps(kind, backward)
        rate = (
            measured * GB
            if measured
            else self.hw.gpu.hbm_gbps
            * GB
            * step_value(self.hw.memory_bound.efficiency_by_bytes, nbytes)
        )
        return Timed(max(nbytes / rate, self.launch_s), "bandwidth")

    def _measured_gbps(self, kind: str, backward: bool) -> float:
        """The hardware file's measured rate for a memory-bound kind, GB/s; 0 if none. RMSNorm
        runs the same one-read, one-write fused kernel shape as layer-norm (Apex / TE fused
        norms); with no measurement of its own it takes the measured layer-norm rate. A
        `cross_entropy.NAME` kind is the loss implementation NAME (simsp/model/blocks/loss.py)."""
        mb = self.hw.memory_bound
        if kind in ("layernorm", "rmsnorm"):
            return mb.layernorm_bwd_gbps if backward else mb.layernorm_fwd_gbps
        if kind == "swiglu":
            return mb.swiglu_bwd_gbps if backward else mb.swiglu_fwd_gbps
        if kind == "permute":
            return mb.permute_bwd_gbps if backward else mb.permute_fwd_gbps
        if kind == "adam":
            return self.hw.calibration.adam_gbps
        if kind.startswith(CROSS_ENTROPY_KIND):
            return mb.cross_entropy_gbps(kind[len(CROSS_ENTROPY_KIND) :])
        return 0.0
