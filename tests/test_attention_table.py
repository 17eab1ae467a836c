"""FlashAttention throughput tables: reading, the lookup rule, and the cost they give an op."""

from pathlib import Path

import pytest

from simsp.cost.compute import ComputeModel
from simsp.errors import InputError
from simsp.io.config import load_hardware
from simsp.model.layer import Attention
from simsp.tables import read_attention_table
from simsp.tables.attention import AttentionPoint, AttentionTable


def _table(*rows) -> AttentionTable:
    return AttentionTable(
        tuple(AttentionPoint("gpu", k, d, s, c, r, x) for k, d, s, c, r, x in rows)
    )


T = _table(
    ("fa2", 128, 1024, False, "fwd", 200.0),
    ("fa2", 128, 4096, False, "fwd", 300.0),
    ("fa3", 128, 4096, False, "fwd", 330.0),
    ("fa2", 128, 4096, True, "fwd", 270.0),
    ("fa2", 128, 1024, True, "fwd", 150.0),
    ("fa2", 128, 4096, False, "bwd", 240.0),
    ("fa2", 64, 4096, False, "fwd", 250.0),
    ("fa2", 64, 4096, True, "fwd_bwd", 180.0),
)


def test_exact_point_takes_the_fastest_kernel():
    assert T.lookup_tflops(128, 4096, False, "fwd") == 330.0


def test_log_sequence_interpolation_and_flat_outside():
    assert T.lookup_tflops(128, 2048, False, "fwd") == pytest.approx(200 + 0.5 * (330 - 200))
    assert T.lookup_tflops(128, 65536, False, "fwd") == 330.0
    assert T.lookup_tflops(128, 256, False, "fwd") == 200.0


def test_nearest_head_size_in_log_scale():
    assert T.lookup_tflops(80, 4096, False, "fwd") == 250.0  # log(80/64) < log(128/80)
    assert T.lookup_tflops(96, 4096, False, "fwd") == 330.0  # tie in log scale: the larger


def test_missing_causal_backward_scales_the_non_causal_one_by_the_forward_ratio():
    assert T.lookup_tflops(128, 4096, True, "bwd") == pytest.approx(240.0 * 270.0 / 330.0)


def test_else_the_mask_s_fwd_bwd_rate():
    only = _table(("fa2", 64, 4096, True, "fwd_bwd", 180.0), ("fa2", 64, 4096, True, "fwd", 200.0))
    assert only.lookup_tflops(64, 4096, True, "bwd") == 180.0
    assert only.lookup_tflops(64, 4096, False, "fwd") is None


def test_a_kernel_measured_only_forward_plus_backward_prices_both_at_that_rate():
    fa1 = _table(("fa1", 128, 2048, True, "fwd_bwd", 108.0))
    assert fa1.lookup_tflops(128, 2048, True, "fwd") == 108.0
    assert fa1.lookup_tflops(128, 2048, True, "bwd") == 108.0
    assert fa1.lookup_tflops(128, 2048, False, "fwd") is None


def test_h100_fa1_rows_are_figure_7_and_slower_than_fa2():
    """FlashAttention (v1) on H100, FA2 paper Fig. 7d (causal, head dim 128): 108 at 2k against
    FA2's 265; the A100 table keeps FA2 as its default (fastest) kernel."""
    cm = ComputeModel(load_hardware("hardware/dgx-h100.yaml"))
    fa1, fa2 = cm.attention_for("fa1"), cm.attention_for("fa2")
    assert fa1.lookup_tflops(128, 2048, True, "bwd") == 108.0
    assert fa2.lookup_tflops(128, 2048, True, "fwd") > 2 * fa1.lookup_tflops(128, 2048, True, "fwd")
    a100 = ComputeModel(load_hardware("hardware/dgx-a100-80gb.yaml"))
    assert a100.attention_table.lookup_tflops(128, 2048, True, "fwd") == 187.0  # FA2 Fig. 5d
    assert a100.attention_for("fa1").lookup_tflops(128, 2048, True, "fwd") == 65.0  # Fig. 5d


def test_shipped_tables_read_and_cover_the_modern_head_size():
    for name in ("dgx-a100-80gb", "dgx-h100", "hgx-h200", "dgx-b200", "gb200-nvl72"):
        hw = load_hardware(f"hardware/{name}.yaml")
        table = read_attention_table(hw.calibration.flash_attention)
        for causal in (True, False):
            for direction in ("fwd", "bwd"):
                assert table.lookup_tflops(128, 8192, causal, direction) > 0, (
                    name,
                    causal,
                    direction,
                )
        assert all(p.source for p in table.points), name


def test_an_op_takes_benchmark_flops_over_the_rate(tmp_path):
    hw = load_hardware("hardware/dgx-h100.yaml")
    cm = ComputeModel(hw)
    att = Attention(batch_heads=16, seq_len=8192, head_dim=128, causal=True)
    rate = cm.attention_table.lookup_tflops(128, 8192, True, "fwd")
    assert cm.flash_attention(att).seconds == pytest.approx(att.benchmark_flops / (rate * 1e12))
    rate_b = cm.attention_table.lookup_tflops(128, 8192, True, "bwd")
    assert cm.flash_attention(att, backward=True).seconds == pytest.approx(
        2.5 * att.benchmark_flops / (rate_b * 1e12)
    )
    assert cm.flash_attention(att).source == "flash table"


def test_without_a_table_the_op_is_its_batched_gemms():
    hw = load_hardware("hardware/dgx-a100-80gb.yaml")
    import dataclasses

    cm = ComputeModel(
        dataclasses.replace(hw, calibration=dataclasses.replace(hw.calibration, flash_attention=""))
    )
    att = Attention(batch_heads=16, seq_len=2048, head_dim=128, causal=True)
    from simsp.model.layer import Gemm

    gemms = cm.gemm(Gemm(2048, 2048, 128, 16)).seconds + cm.gemm(Gemm(2048, 128, 2048, 16)).seconds
    assert cm.flash_attention(att).seconds == pytest.approx(gemms / 2)
    assert cm.flash_attention(att).source != "flash table"


def test_a_bad_row_is_one_error_naming_it(tmp_path):
    path = tmp_path / "fa.csv"
    path.write_text(
        "gpu,kernel,head_dim,seq_len,causal,direction,tflops,source\nx,fa2,128,1024,maybe,fwd,1,s\n"
    )
    with pytest.raises(InputError, match="row 1"):
        read_attention_table(path)
    path.write_text(
        "gpu,kernel,head_dim,seq_len,causal,direction,tflops,source\nx,fa2,128,1024,true,sideways,1,s\n"
    )
    with pytest.raises(InputError, match="direction"):
        read_attention_table(path)


def test_the_named_kernel_sets_the_rate():
    """calibration.attention_kernel: cudnn (TE's choice on Hopper) reads cuDNN's rows, not the
    faster FA3 the fastest-kernel rule would take."""
    import dataclasses

    hw = load_hardware("hardware/dgx-h100.yaml")
    assert hw.calibration.attention_kernel == "cudnn"
    cudnn = ComputeModel(hw).attention_table
    fastest = ComputeModel(
        dataclasses.replace(
            hw, calibration=dataclasses.replace(hw.calibration, attention_kernel="")
        )
    ).attention_table
    assert {p.kernel for p in cudnn.points} == {"cudnn"}
    # FA3 16k causal fwd 616, cuDNN 539 TFLOP/s (arXiv 2407.08608 FP16 fwd fig. (d))
    assert cudnn.lookup_tflops(128, 16384, True, "fwd") == pytest.approx(539)
    assert fastest.lookup_tflops(128, 16384, True, "fwd") == pytest.approx(616)


def test_an_unknown_kernel_is_refused(tmp_path):
    text = (
        Path("hardware/dgx-h100.yaml")
        .read_text()
        .replace("attention_kernel: cudnn", "attention_kernel: fa9")
    )
    path = tmp_path / "h100.yaml"
    path.write_text(text)
    (tmp_path / "calibration").symlink_to(Path("hardware/calibration").resolve())
    with pytest.raises(InputError, match="calibration.attention_kernel.*fa9.*cudnn"):
        load_hardware(path)


def test_a_run_names_its_framework_kernel():
    """training.attention_kernel: fa2 (a framework that is not TE) reads FA2's rows on a GPU
    whose own kernel is cuDNN; an unknown kernel is one error naming the table's kernels."""
    import dataclasses

    from simsp.api import run
    from simsp.io.config import load_workload

    hw = load_hardware("hardware/dgx-h100.yaml")
    w = load_workload("workloads/llama-3.1-8b.yaml")
    fa2 = dataclasses.replace(w, training=dataclasses.replace(w.training, attention_kernel="fa2"))
    assert run(fa2, hw).iteration_time_s > run(w, hw).iteration_time_s  # FA2 < cuDNN on H100
    cm = ComputeModel(hw)
    att = Attention(batch_heads=32, seq_len=16384, head_dim=128, causal=True, kernel="fa2")
    # FA2 16k causal fwd 335 TFLOP/s (arXiv 2407.08608 FP16 fwd fig. (d))
    assert cm.flash_attention(att).seconds == pytest.approx(att.benchmark_flops / 335e12)
    bad = dataclasses.replace(w, training=dataclasses.replace(w.training, attention_kernel="fa9"))
    with pytest.raises(InputError, match="training.attention_kernel.*fa9.*cudnn, fa1, fa2, fa3"):
        run(bad, hw)


def _wide(*rows) -> AttentionTable:
    return AttentionTable(
        tuple(AttentionPoint("gpu", "k", 128, s, True, "fwd", x, "", bh) for s, bh, x in rows)
    )


W = _wide((4096, 8, 350.0), (4096, 32, 820.0), (4096, 64, 980.0), (32768, 8, 1350.0))


def test_rows_with_a_width_interpolate_in_log2_batch_heads_then_in_length():
    assert W.lookup_tflops(128, 4096, True, "fwd", 8) == 350.0
    assert W.lookup_tflops(128, 4096, True, "fwd", 16) == pytest.approx(350 + 0.5 * (820 - 350))
    assert W.lookup_tflops(128, 4096, True, "fwd", 256) == 980.0  # flat beyond the widths
    assert W.lookup_tflops(128, 4096, True, "fwd", 2) == 350.0
    # 8192 is a third of the way (in log2) from 4096 to 32768, each length at width 8
    assert W.lookup_tflops(128, 8192, True, "fwd", 8) == pytest.approx(350 + (1350 - 350) / 3)


def test_a_call_of_unknown_width_takes_the_fastest_measured_width():
    assert W.lookup_tflops(128, 4096, True, "fwd") == 980.0


def test_rows_without_a_width_stand_for_any_width():
    mixed = AttentionTable(W.points + (AttentionPoint("gpu", "j", 128, 4096, True, "fwd", 500.0),))
    assert mixed.lookup_tflops(128, 4096, True, "fwd", 8) == 500.0  # the faster kernel
    assert mixed.lookup_tflops(128, 4096, True, "fwd", 64) == 980.0
    assert T.lookup_tflops(128, 4096, False, "fwd", 4) == 330.0  # width-free tables unchanged


def test_batch_heads_column_round_trips_and_is_written_only_when_stated(tmp_path):
    from simsp.tables.attention import write_attention_table

    path = tmp_path / "w.csv"
    write_attention_table(path, W.points)
    assert path.read_text().splitlines()[0].endswith(",batch_heads")
    assert read_attention_table(path).points == W.points
    write_attention_table(path, T.points)
    assert "batch_heads" not in path.read_text()
    assert read_attention_table(path).points == T.points


def test_a_negative_batch_heads_is_a_one_line_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(
        "gpu,kernel,head_dim,seq_len,causal,direction,tflops,source,batch_heads\n"
        "g,k,128,4096,true,fwd,100,s,-2\n"
    )
    with pytest.raises(InputError, match="batch_heads"):
        read_attention_table(path)


def test_a_width_without_its_header_column_is_a_one_line_error(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(
        "gpu,kernel,head_dim,seq_len,causal,direction,tflops,source\ng,k,128,4096,true,fwd,100,s,8\n"
    )
    with pytest.raises(InputError, match="more fields than the header"):
        read_attention_table(path)


def test_b200_te_rows_are_simumax_s_profile_at_flash_attention_s_flop_count():
    """SimuMax counts a causal forward as the full square (2 b s^2 h (d_qk + d_v)): its efficiency
    x 2250 / 2 is flash-attention's count. 8 heads at 4096 (a tp-8 rank of Llama-3-70B) run at a
    third of 64 heads' rate forward."""
    import json

    sys_file = Path("hardware/calibration/dgx-b200/sources/simumax_b200_bf16_ceperm.json")
    eff = json.loads(sys_file.read_text())["accelerator"]["op"]["sdp_fwd"][
        "accurate_efficient_factor"
    ]
    key = (
        "batch=1, seq_len=4096, head_num=8, kv_head_num=2, qk_head_dim=128, v_head_dim=128, "
        "qkv_contiguous=True"
    )
    te = ComputeModel(load_hardware("hardware/dgx-b200.yaml")).attention_for("te-2.11")
    tp8 = te.lookup_tflops(128, 4096, True, "fwd", 8)
    assert tp8 == round(eff[key] * 2250 / 2)  # the faster of its two GQA ratios at 8 heads
    assert tp8 < te.lookup_tflops(128, 4096, True, "fwd", 64) / 2
