"""The machine a run is simulated on: GPU, node, network and where its calibration lives."""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class GpuSpec:
    """One accelerator."""

    name: str = field(default="", kw_only=True)
    """The part, for people reading the file (no result depends on it, so it is optional)."""
    peak_tflops: float
    """Dense 16-bit tensor-core peak (MFU/HFU denominator)."""
    hbm_gib: float
    """HBM capacity per GPU."""
    hbm_gbps: float
    """Datasheet HBM bandwidth, GB/s (1e9 B/s)."""
    hbm_reserve_gib: float = field(default=4.0, kw_only=True)
    """HBM a training process holds outside PyTorch's caching allocator, which a layout must
    leave free: the gap between the nominal and the usable capacity, the CUDA context and loaded
    kernels, NCCL's buffers (NVLS included). 4.0 for an H100 80GB (0.8 + 1.0 + 2.0 + 0.2),
    hardware/calibration/sources/hbm-headroom.md; `--hbm-headroom GIB` sets it."""
    allocator_reserve: float = field(default=0.04, kw_only=True)
    """What PyTorch's caching allocator reserves beyond the peak it hands out, as a fraction of
    that peak: the median over 152 ranks of Megatron runs on B200 (max_memory_reserved /
    max_memory_allocated - 1 = 4.0%, p90 7.3%; SimuMax@4dcaae5, hbm-headroom.md)."""
    gemm_max_tflops: float
    """Best achieved dense GEMM rate (MAMF); the roofline fallback's ceiling."""
    peak_fp8_tflops: float = 0.0
    """Dense FP8 (e4m3) tensor-core peak; 0 means the GPU has no FP8 tensor cores."""
    gemm_max_fp8_tflops: float = 0.0
    """Best achieved dense FP8 GEMM rate (MAMF e4m3); the FP8 roofline's ceiling."""
    compute_capability: float = 0.0
    """CUDA compute capability (8.0 A100, 9.0 H100/H200, 10.0 B200/GB200); 0 means not stated.
    Decides which FP8 recipes Transformer Engine runs on it."""
    tensor_clock_fraction: float = 1.0
    """The tensor cores' sustained rate on this part as a fraction of the rate its GEMM and
    attention tables were measured at: below 1 for a part run under a lower power limit than
    the one that measured the tables it borrows (h100-96gb-500w); it scales every GEMM and
    fused-attention rate. 1 where the tables are the part's own."""


@dataclass(frozen=True)
class NodeSpec:
    """GPUs that share one NVLink domain."""

    gpus: int
    nvlink_gbps: float
    """NVLink bandwidth per GPU per direction, GB/s."""


@dataclass(frozen=True)
class NetworkSpec:
    """The scale-out fabric between nodes."""

    nics_per_node: int
    nic_gbps: float
    """Line rate of one NIC, Gb/s (bits)."""


@dataclass(frozen=True)
class MemoryBoundSpec:
    """Achieved HBM bandwidth of element-wise kernels, as a fraction of hbm_gbps by bytes moved."""

    efficiency_by_bytes: tuple[tuple[float, float], ...]
    """(bytes, efficiency) steps, ascending: a kernel moving >= bytes reaches that efficiency."""
    layernorm_fwd_gbps: float = 0.0
    """Measured fused layer-norm forward rate, GB/s; 0 means use the curve."""
    layernorm_bwd_gbps: float = 0.0
    """Measured fused layer-norm backward rate, GB/s; 0 means use the curve."""
    unfused_cross_entropy_gbps: float = 0.0
    """Measured rate of Megatron's unfused vocab-parallel cross-entropy, GB/s of the bytes
    simsp/model/blocks/loss.py counts for it, forward and backward alike; 0 means use the curve."""
    native_cross_entropy_gbps: float = 0.0
    """The same for Megatron's fused (native) cross-entropy; 0 means use the curve."""
    te_cross_entropy_gbps: float = 0.0
    """The same for Transformer Engine's Triton cross-entropy; 0 means use the curve."""
    swiglu_fwd_gbps: float = 0.0
    """Measured rate of the fused SwiGLU activation as Megatron-Core runs it (bias_swiglu_impl,
    its @jit_fuser functions under torch.compile), GB/s of the bytes simsp counts for it
    (model/blocks/mlp.py); 0 means use the curve."""
    swiglu_bwd_gbps: float = 0.0
    """The same for its backward (swiglu_back)."""
    permute_fwd_gbps: float = 0.0
    """Measured rate of a mixture of experts' fused token permute and unpermute (Transformer
    Engine's moe_permute_with_probs and moe_unpermute, which Megatron-Core runs with
    --moe-permute-fusion), GB/s of the bytes simsp counts for the two (model/blocks/moe.py),
    launches included; 0 means use the curve."""
    permute_bwd_gbps: float = 0.0
    """The same for their backward."""
    eager_rmsnorm_fwd_gbps: float = 0.0
    """Measured rate of an RMSNorm run as eager torch ops (fp32 upcast), GB/s of the bytes the
    fused kernel moves (model/blocks/elementwise.py); 0 means count its ops' bytes on the
    curve."""
    eager_rmsnorm_bwd_gbps: float = 0.0
    """The same for its backward."""
    eager_rope_fwd_gbps: float = 0.0
    """The same for complex-form rotary embedding (torchtitan's, Llama-4's) as eager ops."""
    eager_rope_bwd_gbps: float = 0.0
    """The same for its backward."""
    eager_swiglu_fwd_gbps: float = 0.0
    """The same for F.silu(a) * b as eager ops."""
    eager_swiglu_bwd_gbps: float = 0.0
    """The same for its backward."""

    def eager_gbps(self, kind: str, backward: bool) -> float:
        """The measured eager rate of an op kind, GB/s of its fused bytes; 0 if none."""
        return getattr(self, f"eager_{kind}_{'bwd' if backward else 'fwd'}_gbps", 0.0)

    def cross_entropy_gbps(self, name: str) -> float:
        """The measured rate of cross-entropy implementation `name` (model/blocks/loss.py), GB/s of
        its bytes; 0 means use the curve. Megatron's native fusion, with no rate of its own,
        takes the unfused kernels' (the same fp32 steps in fewer passes), as RMSNorm takes the
        layer-norm rate; so does torch's F.cross_entropy over fp32 logits (torch_fp32: eager
        fp32 kernels of the same kinds). Liger's kernel has no measured rate here: the curve."""
        rates = {
            "unfused": self.unfused_cross_entropy_gbps,
            "native": self.native_cross_entropy_gbps or self.unfused_cross_entropy_gbps,
            "te": self.te_cross_entropy_gbps,
            "torch_fp32": self.unfused_cross_entropy_gbps,
        }
        return rates.get(name, 0.0)


@dataclass(frozen=True)
class CalibrationSpec:
    """Measured tables, as absolute paths resolved from the hardware file's folder."""

    gemm: str = ""
    """Measured GEMM table (CSV: m, n, k, batch, layout, tflops); empty means none."""
    gemm_model: str = ""
    """Modeled GEMM table for shapes the measured one does not cover, used before the roofline."""
    gemm_fp8: str = ""
    """Measured FP8 (e4m3 in, bf16 out) GEMM table, same columns as `gemm`; empty means none."""
    gemm_model_fp8: str = ""
    """Modeled FP8 GEMM table, anchored to measured FP8 points, used before the FP8 roofline."""
    grouped_gemm: str = ""
    """Measured grouped-GEMM throughput (CSV: groups, m, n, k, layout, tflops; tables/
    grouped_gemm.py): a routed expert's GEMMs take the time the GEMM tables give them, times
    what the nearest measured grouped GEMM took over that (cost/compute.py); empty means none."""
    flash_attention: str = ""
    """Measured FlashAttention throughput (CSV: gpu, kernel, head_dim, seq_len, causal, direction,
    tflops, source; FLOPs counted as the flash-attention benchmarks count them); empty means
    FlashAttention is costed as its two batched GEMMs from the GEMM tables."""
    attention_kernel: str = field(default="", metadata={"path": False})
    """The fused-attention kernel the framework runs, a `kernel` of the flash_attention table
    (fa2, fa3, cudnn, ...); empty means the fastest measured at each point. Transformer Engine
    runs BF16 attention on cuDNN's FusedAttention on Hopper and later when both are available
    (TE 2.x `get_attention_backend`: "Disabling FlashAttention to give FusedAttention preference
    on Hopper+ for performance reasons")."""
    nvlink: tuple[str, ...] = ()
    """nccl-tests logs measured inside one node."""
    infiniband: tuple[str, ...] = ()
    """nccl-tests logs measured across nodes with every GPU of each node in the group."""
    gemm_fallback_efficiency: tuple[tuple[float, float], ...] = (
        (0.0, 0.1),
        (1e9, 0.6),
        (16e9, 0.9),
    )
    """(FLOPs, fraction of gemm_max_tflops) steps for shapes no table covers."""
    kernel_launch_us: float = 0.0
    """Minimum time of any kernel (launch and tail), microseconds."""
    host_forward_us: float = 0.0
    """Host (framework) time to issue one layer's forward; 0 means not modelled."""
    host_backward_us: float = 0.0
    """Host time to issue one layer's backward without recompute."""
    host_recompute_full_us: float = 0.0
    """Extra backward host time when the whole layer is recomputed."""
    host_recompute_selective_us: float = 0.0
    """Extra backward host time when core attention is recomputed."""
    adam_gbps: float = 0.0
    """Measured rate of the fused Adam update, GB/s: the fp32 param, grad and two moments read
    and param and moments written (28 bytes a parameter) over its time (`simsp profile
    optimizer`); 0 means the memory-bound curve."""
    collective_sm_share: float = 0.0
    """Share of the GPU's SMs an NCCL kernel holds while it runs; compute overlapped with a
    collective runs at (1 - share) of its speed for as long as the collective lasts."""
    measured_nvlink_gbps: float = 0.0
    """NVLink rate per GPU per direction, GB/s, of the node the `nvlink` logs were measured on;
    0 means this file's node.nvlink_gbps. A different node.nvlink_gbps scales those logs
    (simsp.cost.network)."""
    measured_nic_gbps: float = 0.0
    """NIC line rate, Gb/s, of the nodes the `infiniband` logs were measured on; 0 means this
    file's network.nic_gbps."""
    measured_nics_per_node: int = 0
    """NICs a node of the `infiniband` measurement had; 0 means this file's
    network.nics_per_node."""
    collective_latency_us: float = 0.0
    """Fixed time each collective and pipeline send costs beyond its nccl-tests table (framework
    call, stream waits), microseconds; 0 unless fitted to a cluster's runs (`simsp calibrate
    --runs`)."""
    gemm_table_fraction: float = 1.0
    """Achieved fraction of the GEMM tables' rates on this cluster; 1 unless fitted to its runs
    (`simsp calibrate --runs`)."""
    fitted: bool = False
    """True when values here were fitted to measured iteration times (`simsp calibrate
    --runs`): a user's file, which `simsp validate` refuses to read."""


@dataclass(frozen=True)
class HardwareSpec:
    """A cluster of identical nodes."""

    name: str
    gpu: GpuSpec
    node: NodeSpec
    network: NetworkSpec
    memory_bound: MemoryBoundSpec
    calibration: CalibrationSpec = field(default_factory=CalibrationSpec)
    source: str = ""
    """The YAML file it was read from (for messages)."""
    overrides: tuple[tuple[str, int | float], ...] = ()
    """(SECTION.KEY, value) set on the command line (`--set`) over the file's values, in order."""

    @property
    def hbm_bytes(self) -> int:
        """HBM capacity per GPU in bytes."""
        return int(self.gpu.hbm_gib * 1024**3)

    def reserve_bytes(self, peak_bytes: float) -> int:
        """HBM a run with this peak must leave free beside it: the fixed reserve outside the
        allocator and the allocator's share over the peak (GpuSpec.hbm_reserve_gib,
        allocator_reserve)."""
        return round(self.gpu.hbm_reserve_gib * 1024**3 + self.gpu.allocator_reserve * peak_bytes)

    def free_bytes(self, peak_bytes: float) -> float:
        """HBM left beside a run of this peak and its reserve; negative where it does not fit."""
        return self.hbm_bytes - peak_bytes - self.reserve_bytes(peak_bytes)

    @property
    def label(self) -> str:
        """The name, and any `--set` overrides: `dgx-h100 [network.nic_gbps=800]`."""
        if not self.overrides:
            return self.name
        return f"{self.name} [{', '.join(f'{k}={v:g}' for k, v in self.overrides)}]"


CEILINGS = {
    "gpu.peak_tflops": 1e5,
    "gpu.hbm_gib": 1e5,
    "gpu.hbm_gbps": 1e6,
    "node.gpus": 100_000,
    "node.nvlink_gbps": 1e6,
    "network.nics_per_node": 10_000,
    "network.nic_gbps": 1e7,
    "calibration.measured_nvlink_gbps": 1e6,
    "calibration.measured_nics_per_node": 10_000,
    "calibration.measured_nic_gbps": 1e7,
    "calibration.kernel_launch_us": 1e6,
    "calibration.host_forward_us": 1e7,
    "calibration.host_backward_us": 1e7,
    "calibration.host_recompute_full_us": 1e7,
    "calibration.host_recompute_selective_us": 1e7,
    "calibration.collective_latency_us": 1e6,
    "calibration.gemm_table_fraction": 2.0,
}
"""Sanity ceilings, about a hundred times past any machine built: a value above one is a typo
(a unit slip, a pasted count) whose answer would look like a prediction."""


def _value(hw: "HardwareSpec", dotted: str):
    section, name = dotted.split(".")
    return getattr(getattr(hw, section), name)


def _efficiencies(key: str, steps) -> tuple:
    """(key, value, holds, rule) for an efficiency curve: fractions of a peak."""
    worst = max((e for _, e in steps), default=1.0)
    return key, worst, all(0 < e <= 1 for _, e in steps), "efficiencies must lie in (0, 1]"


LINK_SPAN = 1000.0
"""How far a link rate may lie from the one its collective tables were measured at: past a
thousand times either way it is a unit slip (GB/s for Gb/s is 8x), not a what-if."""


def _link_rules(hw: "HardwareSpec"):
    """The NVLink rate, and a node's NICs (rate x count), within LINK_SPAN of what the tables
    were measured on (0: the file's own)."""
    node, net, cal = hw.node, hw.network, hw.calibration
    nics = net.nic_gbps * net.nics_per_node
    measured_nics = (cal.measured_nic_gbps or net.nic_gbps) * (
        cal.measured_nics_per_node or net.nics_per_node
    )
    for key, value, ratio, what in (
        (
            "node.nvlink_gbps",
            node.nvlink_gbps,
            node.nvlink_gbps / (cal.measured_nvlink_gbps or node.nvlink_gbps),
            f"{cal.measured_nvlink_gbps or node.nvlink_gbps:g} GB/s",
        ),
        (
            "network.nic_gbps",
            net.nic_gbps,
            nics / measured_nics,
            f"{cal.measured_nics_per_node or net.nics_per_node} NICs of "
            f"{cal.measured_nic_gbps or net.nic_gbps:g} Gb/s a node",
        ),
    ):
        yield (
            key,
            value,
            1 / LINK_SPAN <= ratio <= LINK_SPAN,
            f"the link must stay within {LINK_SPAN:g}x of the rate its collective tables were "
            f"measured at ({what})",
        )


def hardware_rules(hw: "HardwareSpec"):
    """(key, value, holds, rule) for every physical range a hardware file must keep: achieved
    rates not above the peak they are a share of, efficiencies in (0, 1], and the ceilings."""
    g, mb, cal = hw.gpu, hw.memory_bound, hw.calibration
    yield (
        "gpu.gemm_max_tflops",
        g.gemm_max_tflops,
        g.gemm_max_tflops <= g.peak_tflops,
        f"an achieved GEMM rate cannot pass the GPU's peak_tflops ({g.peak_tflops:g})",
    )
    yield (
        "gpu.tensor_clock_fraction",
        g.tensor_clock_fraction,
        0 < g.tensor_clock_fraction <= 1,
        "must be a fraction in (0, 1]: a power limit slows the tensor cores, never speeds them",
    )
    yield (
        "gpu.hbm_reserve_gib",
        g.hbm_reserve_gib,
        0 <= g.hbm_reserve_gib < g.hbm_gib,
        f"must be at least 0 and below the GPU's hbm_gib ({g.hbm_gib:g})",
    )
    yield (
        "gpu.allocator_reserve",
        g.allocator_reserve,
        0 <= g.allocator_reserve < 1,
        "must be a fraction in [0, 1) of the peak the allocator hands out",
    )
    yield _efficiencies("memory_bound.efficiency_by_bytes", mb.efficiency_by_bytes)
    yield _efficiencies("calibration.gemm_fallback_efficiency", cal.gemm_fallback_efficiency)
    for key in (
        "memory_bound.layernorm_fwd_gbps",
        "memory_bound.layernorm_bwd_gbps",
        "memory_bound.unfused_cross_entropy_gbps",
        "memory_bound.native_cross_entropy_gbps",
        "memory_bound.te_cross_entropy_gbps",
        "memory_bound.swiglu_fwd_gbps",
        "memory_bound.swiglu_bwd_gbps",
        "memory_bound.permute_fwd_gbps",
        "memory_bound.permute_bwd_gbps",
        *(
            f"memory_bound.eager_{k}_{d}_gbps"
            for k in ("rmsnorm", "rope", "swiglu")
            for d in ("fwd", "bwd")
        ),
        "calibration.adam_gbps",
    ):
        value = _value(hw, key)
        yield (
            key,
            value,
            value <= g.hbm_gbps,
            f"an achieved rate cannot pass the GPU's hbm_gbps ({g.hbm_gbps:g})",
        )
    yield (
        "calibration.collective_sm_share",
        cal.collective_sm_share,
        0 <= cal.collective_sm_share < 1,
        "must be a share in [0, 1): a collective cannot hold every SM",
    )
    yield from _link_rules(hw)
    for key, ceiling in CEILINGS.items():
        value = _value(hw, key)
        yield key, value, value <= ceiling, f"must be at most {ceiling:g} (a sanity ceiling)"
