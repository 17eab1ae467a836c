"""simumax-b200: SimuMax's measured Megatron-LM runs on one B200 node, time and HBM peak."""

import pytest

from simsp.units import GIB
from simsp.validate import simumax as S
from simsp.validate.data import DATA_DIR


def test_the_derived_file_is_the_source_s_rows(tmp_path):
    path = S.derive_simumax(DATA_DIR / S.SOURCE_FILE, tmp_path)
    assert path.read_text() == (DATA_DIR / S.RUNS_FILE).read_text()


@pytest.fixture(scope="module")
def built():
    return S.simumax_cases(DATA_DIR)


def test_dense_rows_are_cases_and_moe_rows_are_skipped_with_the_reason(built):
    cases, skipped = built
    assert len(cases) == 31 and len(skipped) == 12
    assert all("mixture of experts" in s.reason and s.name.startswith("deepseek") for s in skipped)


def test_cases_run_the_launcher_s_settings(built):
    cases = {c.name: c for c in built[0]}
    tp8 = cases["llama3_70b_l12_tp8_pp1_dp1_mbc8_cef"].workload
    assert (tp8.parallel.tp, tp8.parallel.dp, tp8.parallel.sequence_parallel) == (8, 1, True)
    assert (tp8.training.global_batch, tp8.training.micro_batch) == (8, 1)
    assert tp8.training.attention_kernel == "te-2.11" and tp8.model.layers == 12
    pp2 = cases["llama3_405b_l4_tp1_pp2_dp4_mbc32_cef"].workload
    assert (pp2.parallel.pp, pp2.parallel.dp, pp2.parallel.sequence_parallel) == (2, 4, False)
    assert pp2.training.global_batch == 128 and pp2.model.kv_heads == 16
    assert pp2.parallel.distributed_optimizer and pp2.parallel.grad_reduce_in_fp32
    assert pp2.parallel.recompute == "none" and not pp2.parallel.overlap_grad_reduce
    cp = cases["llama3_70b_l12_tp1_cp8_pp1_dp1_seq131072_mbc4_cef"].workload
    assert (cp.parallel.cp, cp.parallel.cp_comm_type, cp.model.seq_len) == (8, "a2a", 131072)


def test_each_case_carries_its_measured_peak_and_the_peer_s_answer(built):
    c = {c.name: c for c in built[0]}
    own = c["llama3_70b_l12_tp1_pp2_dp4_mbc4_cef"]
    assert own.measured_s == pytest.approx(0.843) and own.peer_s == pytest.approx(0.82876)
    assert own.measured_peak_bytes == pytest.approx(66.55 * GIB)
    # SimuMax logged that layout's memory once, at mbc 4: the peak counts once, there
    assert c["llama3_70b_l12_tp1_pp2_dp4_mbc8_cef"].measured_peak_bytes == 0.0
    assert sum(1 for x in built[0] if x.measured_peak_bytes) == 15


def test_the_summary_scores_memory_against_the_measured_peaks():
    from simsp.validate import run_validation

    v = run_validation((S.SET,), workers=1)
    entry = v.summary()["sets"][S.SET]
    scored = [r for r in v.results if r.memory_error is not None]
    assert entry["memory"]["n"] == len(scored) == 15 and entry["peer"]["n"] == 31
    assert entry["memory"]["bias"] == pytest.approx(sum(r.memory_error for r in scored) / 15)
    assert all(r.memory_error == r.peak_bytes / r.case.measured_peak_bytes - 1 for r in scored)


def test_a_model_outside_the_launcher_s_list_is_a_one_line_error(tmp_path):
    from simsp.errors import InputError

    text = (DATA_DIR / S.RUNS_FILE).read_text().replace(",llama3-70b,", ",llama3-8b,", 1)
    (tmp_path / S.RUNS_FILE).write_text(text)
    with pytest.raises(InputError, match="llama3-8b"):
        S.simumax_cases(tmp_path)
