"""vTrain's single-node file is its predictor's output, not measurement (simsp.validate.peer):
the checks behind relabelling `vtrain-single` as a peer-simulator comparison."""

from pathlib import Path

from simsp import validate as V
from simsp.validate import peer

LUTS = (
    Path(__file__).resolve().parents[1]
    / "hardware"
    / "calibration"
    / "sources"
    / "vtrain"
    / "trace-a100"
)


def _single():
    return V.read_vtrain("single")


def test_every_single_node_row_is_affine_in_layers_and_microbatches():
    rows = _single()
    by_layers = peer.affine_residual_ms([r for r in rows if r["dp"] == "1"], "layers")
    by_micro = peer.affine_residual_ms(rows, "microbatches")
    print(f"\nlayers (dp 1): {by_layers}\nmicrobatches: {by_micro}")
    assert by_layers["rows"] == 640 and by_micro["rows"] == 1008
    assert by_layers["worst_ms"] < 1e-9 and by_micro["worst_ms"] < 1e-9


def test_no_pipeline_stage_recomputes():
    share = peer.stage_share(_single())
    print(f"\npp x per-layer cost at pp / at pp 1: {share}")
    assert share["classes"] == 18 and share["worst_deviation"] < 1e-9


def test_measurement_noise_would_break_the_affine_check():
    rows = [dict(r) for r in _single()]
    for i, r in enumerate(rows):  # 0.5 ms on every third row, as run-to-run noise might add
        r["iteration_time_ms"] = str(float(r["iteration_time_ms"]) + 0.5 * (i % 3 == 0))
    assert peer.affine_residual_ms(rows, "microbatches")["worst_ms"] > 0.1


def test_the_dp_term_is_vtrains_own_allreduce_lookup():
    dp = peer.dp_term_residual_ms(_single(), LUTS)
    print(f"\nt(dp) - t(dp 1) vs vTrain's LUT: {dp}")
    assert dp["pairs"] == 560 and dp["over_1gib"] == 80 and dp["worst_ms"] < 1e-5


def test_the_set_is_labelled_a_peer_comparison_and_run_without_recompute():
    assert "peer simulator" in V.REFERENCES["vtrain-single"]
    assert V.REFERENCES["vtrain-multi"].startswith("measured")
    cases, _ = V.vtrain_cases("single")
    assert {c.workload.parallel.recompute for c in cases} == {"none"}
    v = V.Validation(("vtrain-single",), (V.CaseResult(cases[0], 0.1),), (), 0.0)
    assert "peer simulator" in V.table(v, verbose=True) and "peer simulator" in str(
        V.json_summary(v)
    )
    header = (V.DATA_DIR / "vtrain_single.csv").read_text().splitlines()[0]
    assert "NOT measurements" in header
