"""Tests of the modeled GEMM table hardware/calibration/dgx-a100-80gb/gemm_model.csv.

The file is read as committed; only the reproduction test needs nvMatmulHeuristics (skipped when
it is not installed) and re-derives a handful of rows with
hardware/calibration/derive_gemm_model.py.
"""

import importlib.util
import re
from pathlib import Path

import pytest

from simsp.tables import LAYOUTS, read_gemm_table
from tests.extras import needs

REPO = Path(__file__).resolve().parents[1]
CAL = REPO / "hardware" / "calibration" / "dgx-a100-80gb"
MODEL_CSV = CAL / "gemm_model.csv"
SCRIPT = REPO / "hardware" / "calibration" / "derive_gemm_model.py"
PEAK_TFLOPS = 312.0
"""A100 dense bf16 peak."""

# 22B (Korthikanti et al.): s = 2048, head_dim 96, batch = b * heads / tp = 32.
ATTN_22B_FORWARD = [(2048, 2048, 96, 32), (2048, 96, 2048, 32)]


def _grad_shapes(m, n, k, batch):
    """Backward shapes of an attention GEMM, as simsp.cost.compute.attention_grad_shapes."""
    return [(m, k, n, batch), (k, n, m, batch)]


ATTN_22B = sorted({s for f in ATTN_22B_FORWARD for s in [f, *_grad_shapes(*f)]})
SMALL_DENSE = (1024, 3072, 1024, 1)


@pytest.fixture(scope="module")
def table():
    return read_gemm_table(MODEL_CSV)


@pytest.fixture(scope="module")
def text():
    return MODEL_CSV.read_text()


def _scales(text):
    return {
        layout: float(value)
        for layout, value in re.findall(r"^# scale (TN|NN|NT): ([0-9.]+)", text, re.M)
    }


def test_file_exists_and_reads(table):
    assert MODEL_CSV.stat().st_size < 1_000_000
    assert len(table.points) > 1000
    assert table.dtype == "bf16"
    assert "nvMatmulHeuristics model" in table.device
    assert {p.layout for p in table.points} == set(LAYOUTS)
    assert len({(p.m, p.n, p.k, p.batch, p.layout) for p in table.points}) == len(table.points)


def test_comments_record_provenance(text):
    for needle in (
        "nvidia-matmul-heuristics",
        "GENERIC",
        "PERF_MODEL_BASED_AUTO_TUNING",
        "precision='TST'",
        "geometric mean",
        "derived by: python hardware/calibration/derive_gemm_model.py",
        "# derived: ",
    ):
        assert needle in text, needle


def test_all_tflops_positive_and_below_peak(table):
    assert all(0 < p.tflops < PEAK_TFLOPS for p in table.points)


def test_scale_factors_recorded_and_plausible(text):
    scales = _scales(text)
    assert set(scales) == set(LAYOUTS)
    assert all(0.6 <= s <= 1.2 for s in scales.values()), scales


def test_22b_attention_shapes_are_forward_plus_backward():
    assert ATTN_22B == [(96, 2048, 2048, 32), (2048, 96, 2048, 32), (2048, 2048, 96, 32)]


@pytest.mark.parametrize("shape", ATTN_22B)
def test_covers_22b_attention_shapes(table, shape):
    tflops = table.lookup_tflops(*shape, layout="TN")
    assert tflops is not None and 0 < tflops < PEAK_TFLOPS


@pytest.mark.parametrize("layout", LAYOUTS)
def test_covers_small_dense_shape(table, layout):
    tflops = table.lookup_tflops(*SMALL_DENSE, layout=layout)
    assert tflops is not None and 0 < tflops < PEAK_TFLOPS
    # Covered by a point of its own layout, not only by the any-layout fallback.
    m, n, k, _ = SMALL_DENSE
    assert any(
        p.layout == layout
        and max(p.m / m, m / p.m) <= 2
        and max(p.n / n, n / p.n) <= 2
        and max(p.k / k, k / p.k) <= 2
        and p.batch == 1
        for p in table.points
    )


def test_rederived_rows_match_file(table, text):
    needs("nvMatmulHeuristics")
    spec = importlib.util.spec_from_file_location("derive_gemm_model", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    gpu = re.search(r"--gpu (\S+)", text).group(1)
    h = module.make_model(gpu)
    scales = _scales(text)
    stored = {(p.m, p.n, p.k, p.batch, p.layout): p.tflops for p in table.points}
    keys = [
        (2048, 2048, 96, 32, "TN"),
        (2048, 96, 2048, 32, "TN"),
        (96, 2048, 2048, 32, "TN"),
        (1024, 2048, 1024, 1, "TN"),
        (1024, 4096, 1024, 1, "NN"),
        (1024, 2048, 1024, 1, "NT"),
        (256, 64, 64, 1, "TN"),
        (65536, 65536, 32768, 1, "NT"),
        (16384, 16384, 256, 1024, "TN"),
    ]
    for key in keys:
        m, n, k, batch, layout = key
        want = scales[layout] * module.model_tflops(h, m, n, k, batch, layout)
        assert stored[key] == pytest.approx(want, rel=1e-3, abs=5e-4), key
    # The recorded factors are what the measured table gives today.
    factors = module.scale_factors(h, read_gemm_table(CAL / "gemm.csv"))
    for layout in LAYOUTS:
        assert scales[layout] == pytest.approx(factors[layout][0], rel=1e-5), layout
