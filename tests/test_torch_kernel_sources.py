"""Liger-Kernel's published element-wise microbenchmarks (in
hardware/calibration/sources/liger-kernel): the stored rows are the upstream bytes the READMEs
hash, and eager_vs_fused.csv is what hardware/calibration/derive_torch_kernels.py derives from
them. Reads no file outside the repository."""

import csv
import hashlib
import importlib.util
import io
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "hardware" / "calibration" / "derive_torch_kernels.py"
LIGER = REPO / "hardware" / "calibration" / "sources" / "liger-kernel"
SELECTED = LIGER / "all_benchmark_data.selected.csv"


def _module():
    spec = importlib.util.spec_from_file_location("derive_torch_kernels", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _derived_rows() -> list[dict]:
    text = (LIGER / "eager_vs_fused.csv").read_text()
    return list(csv.DictReader(line for line in io.StringIO(text) if not line.startswith("#")))


def test_stored_files_match_the_hashes_the_readmes_give():
    """The copies are byte for byte what both READMEs hash (CRLF line ends, as upstream)."""
    for readme in (LIGER / "README.md", LIGER.parent / "README.md"):
        text = readme.read_text()
        for name in ("all_benchmark_data.selected.csv", "LICENSE"):
            digest = hashlib.sha256((LIGER / name).read_bytes()).hexdigest()
            assert digest in text, (readme, name)


def test_derivation_reproduces_the_committed_file():
    module = _module()
    derived = module.derive(SELECTED.read_bytes().decode())
    assert derived == (LIGER / "eager_vs_fused.csv").read_text()


def test_every_speed_row_is_derived_once():
    source = [
        r
        for r in csv.DictReader(io.StringIO(SELECTED.read_bytes().decode()))
        if r["metric_name"] == "speed"
    ]
    rows = _derived_rows()
    assert len(rows) == len(source)
    keys = {(r["kernel"], r["provider"], r["gpu"], r["shape"], r["direction"]) for r in rows}
    assert len(keys) == len(rows)


@pytest.mark.parametrize(
    "kernel, provider, shape, direction, ms, gbps",
    [
        # the reference's torch-native-stack.md §2 figures, typed in from the Liger CSV
        ("megatron_rms_norm", "torch", "S=4096 B=1 H=4096", "fwd", 0.03248, 2066.2),
        ("megatron_rms_norm", "liger", "S=4096 B=1 H=4096", "fwd", 0.029184, 2299.5),
        ("megatron_swiglu", "torch", "S=2048 B=4 ffn_local=16384", "fwd", 0.75034, 1073.3),
        ("megatron_swiglu", "liger", "S=2048 B=4 ffn_local=16384", "fwd", 0.26701, 3016.0),
    ],
)
def test_reference_figures(kernel, provider, shape, direction, ms, gbps):
    (row,) = [
        r
        for r in _derived_rows()
        if (r["kernel"], r["provider"], r["shape"], r["direction"])
        == (kernel, provider, shape, direction)
    ]
    assert float(row["ms"]) == pytest.approx(ms, rel=1e-4)
    assert float(row["gbps"]) == pytest.approx(gbps, rel=1e-3)


def test_megatron_backward_is_the_backward_row_less_the_forward():
    """Megatron-style benchmarks re-run the forward inside the backward timing: bwd = backward
    row - forward row (Liger's megatron_cross_entropy, V=131072: 7.959 - 2.967 ms)."""
    (row,) = [
        r
        for r in _derived_rows()
        if r["kernel"] == "megatron_cross_entropy"
        and r["provider"] == "liger"
        and r["shape"].endswith("V=131072")
        and r["direction"] == "bwd"
    ]
    assert float(row["ms"]) == pytest.approx(7.959 - 2.967, abs=2e-3)
    assert int(row["bytes"]) == 8192 * 131072 * 2 * 2


def test_small_full_rows_on_the_harness_floor_are_flagged():
    rows = {
        r["shape"]: r
        for r in _derived_rows()
        if (r["kernel"], r["provider"], r["direction"]) == ("rms_norm", "liger", "full")
    }
    assert rows["M=2048 H=1024"]["flat"] == "1"  # 0.286 ms, as at H=8192 (0.294)
    assert rows["M=2048 H=32768"]["flat"] == "0"


EAGER_RATES = {
    # hardware file -> {field: (kernel, provider, shape, direction)} of eager_vs_fused.csv
    "dgx-h100": {
        "eager_rope_fwd_gbps": (
            "llama4_rope",
            "huggingface",
            "hidden_size=8192 num_q_heads=32 num_kv_heads=8 T=4096",
            "fwd",
        ),
        "eager_rope_bwd_gbps": (
            "llama4_rope",
            "huggingface",
            "hidden_size=8192 num_q_heads=32 num_kv_heads=8 T=4096",
            "bwd",
        ),
        "eager_swiglu_fwd_gbps": ("megatron_swiglu", "torch", "S=2048 B=4 ffn_local=16384", "fwd"),
        "eager_swiglu_bwd_gbps": ("megatron_swiglu", "torch", "S=2048 B=4 ffn_local=16384", "bwd"),
        # Megatron-Core's own fused SwiGLU (bias_swiglu_impl under torch.compile)
        "swiglu_fwd_gbps": ("megatron_swiglu", "megatron", "S=2048 B=4 ffn_local=16384", "fwd"),
        "swiglu_bwd_gbps": ("megatron_swiglu", "megatron", "S=2048 B=4 ffn_local=16384", "bwd"),
    },
    "dgx-a100-80gb": {
        "eager_rmsnorm_fwd_gbps": ("rms_norm", "huggingface", "M=2048 H=16384", "fwd"),
        "eager_rmsnorm_bwd_gbps": ("rms_norm", "huggingface", "M=2048 H=16384", "bwd"),
    },
}


def test_hardware_eager_rates_are_the_derived_rows():
    """Each measured eager rate a hardware file states is one row of eager_vs_fused.csv (GB/s of
    the fused kernel's bytes); h100-96gb-500w's are dgx-h100's times the ratio of the two parts'
    large-kernel bandwidths, as its comment derives them."""
    from simsp.io.config import load_hardware

    rows = {(r["kernel"], r["provider"], r["shape"], r["direction"]): r for r in _derived_rows()}
    for name, fields in EAGER_RATES.items():
        mb = load_hardware(REPO / "hardware" / f"{name}.yaml").memory_bound
        for field, key in fields.items():
            assert getattr(mb, field) == float(rows[key]["gbps"]), (name, field)
    h100 = load_hardware(REPO / "hardware" / "dgx-h100.yaml")
    meta = load_hardware(REPO / "hardware" / "h100-96gb-500w.yaml")

    def large(hw):
        return hw.gpu.hbm_gbps * hw.memory_bound.efficiency_by_bytes[-1][1]

    ratio = large(meta) / large(h100)
    for field in (f for f in EAGER_RATES["dgx-h100"] if f.startswith("eager")):
        want = getattr(h100.memory_bound, field) * ratio
        assert getattr(meta.memory_bound, field) == pytest.approx(want, abs=0.05), field
    # Megatron's fused SwiGLU, far from either part's HBM rate: the same GH100 SMs and clocks on
    # the H200; on the 500 W part, scaled by its tensor_clock_fraction
    h200 = load_hardware(REPO / "hardware" / "hgx-h200.yaml")
    clock = meta.gpu.tensor_clock_fraction
    for field in ("swiglu_fwd_gbps", "swiglu_bwd_gbps"):
        rate = getattr(h100.memory_bound, field)
        assert getattr(h200.memory_bound, field) == rate
        assert getattr(meta.memory_bound, field) == pytest.approx(rate * clock, abs=0.05)


def test_the_counted_eager_ops_stay_below_the_measured_times():
    """Where no eager rate is measured, simsp counts the eager ops' bytes on the element-wise
    curve (model/blocks/elementwise.py). Against Liger's eager measurements that count is
    optimistic: measured / counted is 1.2-2.9 for the forms torchtitan runs (complex RoPE on
    H100, composite RMSNorm on A100, silu * mul on H100), which is why a measured rate, where
    one exists, replaces it. A count above the measurement would be a wrong count."""
    import dataclasses

    from simsp.cost.compute import ComputeModel
    from simsp.io.config import load_hardware
    from simsp.model.blocks.elementwise import EAGER

    forms = {
        ("llama4_rope", "huggingface", "H100"): "rope",
        ("rms_norm", "huggingface", "A100"): "rmsnorm",
        ("megatron_swiglu", "torch", "H100"): "swiglu",
    }
    models = {}
    for gpu, name in (("H100", "dgx-h100"), ("A100", "dgx-a100-80gb")):
        hw = load_hardware(REPO / "hardware" / f"{name}.yaml")
        bare = dataclasses.replace(  # the count alone, without the measured eager rates
            hw.memory_bound,
            **{f.name: 0.0 for f in dataclasses.fields(hw.memory_bound) if "eager" in f.name},
        )
        models[gpu] = ComputeModel(dataclasses.replace(hw, memory_bound=bare))
    ratios = []
    for r in _derived_rows():
        gpu = "H100" if "H100" in r["gpu"] else "A100"
        kind = forms.get((r["kernel"], r["provider"], gpu))
        if not kind or r["flat"] == "1" or r["direction"] == "full" or not r["bytes"]:
            continue
        e, bwd = EAGER[kind], r["direction"] == "bwd"
        factor, kernels = (e.bwd_factor, e.bwd_kernels) if bwd else (e.fwd_factor, e.fwd_kernels)
        counted = models[gpu].memory_bound(float(r["bytes"]) * factor, kind, bwd, kernels)
        ratios.append(float(r["ms"]) / (counted.seconds * 1e3))
    assert len(ratios) >= 30
    assert 1.0 < min(ratios) and max(ratios) < 3.0
