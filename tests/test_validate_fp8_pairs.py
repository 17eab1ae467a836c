"""NVIDIA's paired BF16 / FP8 runs (validate/fp8_pairs.py): two cases a pair, the same run but
for its precision, and the speedup table beside the times."""

import dataclasses
import json

import pytest

from simsp.cli.main import main
from simsp.validate.fp8_pairs import PAIRS_SET, measured_step_s, pair_cases, read_pairs, speedups
from simsp.validate.metrics import CaseResult


@pytest.fixture(scope="module")
def built():
    return pair_cases()


def test_every_entry_is_a_pair_or_skipped_with_a_reason(built):
    cases, skipped = built
    entries = read_pairs()
    names = {c.name.rsplit(" ", 1)[0] for c in cases} | {s.name.rsplit(" ", 1)[0] for s in skipped}
    assert {p["id"] for p in entries} <= names | {s.name for s in skipped}
    assert all(s.reason for s in skipped)
    assert any("MaxText" in s.reason for s in skipped)
    assert any("not an exact pair" in s.reason for s in skipped)
    assert len(cases) >= 150 and all(c.set == PAIRS_SET for c in cases)


def test_a_pair_differs_only_in_precision(built):
    cases, _ = built
    by_name = {c.name: c for c in cases}
    for name, bf in by_name.items():
        if name.endswith(" bf16") and name[:-5] + " fp8" in by_name:
            f8 = by_name[name[:-5] + " fp8"]
            assert bf.workload.training.precision == "bf16"
            assert f8.workload.training.precision == "fp8"
            # the layout is the pair's; only how the optimizer stores masters follows the
            # precision (NeMo 1.x keeps 16-bit remainders unless FP8 parameters are on)
            f8_parallel = f8.workload.parallel
            if f8.workload.training.fp8_param_gather:
                assert not f8_parallel.store_param_remainders
                f8_parallel = dataclasses.replace(
                    f8_parallel, store_param_remainders=bf.workload.parallel.store_param_remainders
                )
            assert bf.workload.parallel == f8_parallel
            assert bf.workload.model == f8.workload.model
            as_bf16 = dataclasses.replace(
                f8.workload.training, precision="bf16", fp8_param_gather=False
            )
            assert as_bf16 == bf.workload.training
            assert bf.hardware == f8.hardware and "dgxc-benchmarking" in bf.notes


def test_measured_step_is_the_printed_one_or_tokens_over_throughput():
    assert measured_step_s({"printed": {"step_time_s": 11.01}}, 1, 1) == 11.01
    run = {"printed": {"step_time_s": "8.7  5", "tokens_per_s_total": 1000.0}}
    assert measured_step_s(run, 5000, 8) == pytest.approx(5.0)


def test_speedups_from_results(built):
    cases, _ = built
    bf, f8 = cases[0], cases[1]
    assert bf.name.endswith(" bf16") and f8.name == bf.name[:-5] + " fp8"
    rows = speedups([CaseResult(bf, 2.0 * bf.measured_s), CaseResult(f8, f8.measured_s)])
    (row,) = rows
    measured = bf.measured_s / f8.measured_s
    assert row["measured_speedup"] == pytest.approx(measured)
    assert row["simsp_speedup"] == pytest.approx(2.0 * measured)
    assert row["error"] == pytest.approx(1.0)
    assert row["bf16_error"] == pytest.approx(1.0) and row["fp8_error"] == pytest.approx(0.0)


def test_validate_json_reports_the_speedup(capsys):
    assert main(["validate", "--set", PAIRS_SET, "--json", "--workers", "1"]) == 0
    entry = json.loads(capsys.readouterr().out)["sets"][PAIRS_SET]
    sp = entry["speedup"]
    assert sp["n"] == len(sp["pairs"]) >= 80
    assert {"mape", "bias", "max_abs_error"} <= set(sp)
    assert all(r["measured_speedup"] > 1 and r["simsp_speedup"] > 1 for r in sp["pairs"])
    assert entry["skipped"] == len(entry["skipped_cases"]) > 0


def test_nemo2_and_bridge_presets_keep_fp8_primary_weights():
    """The notes' fp8_params / fp8_param_gather, or a NeMo 25.02 / 25.04 NeMo 2.0 or a
    Megatron-Bridge framework (their FP8 presets set it); not the 1.0 launcher by default."""
    from simsp.validate.fp8_pairs import fp8_primary_weights

    def pair(framework, recipe=""):
        return {"framework": framework, "fp8": {"recipe": recipe}}

    assert fp8_primary_weights(pair("NeMo 25.04.01 container, NeMo 2.0 scripts/performance"))
    assert fp8_primary_weights(pair("NeMo 25.02.01, NeMo 2.0"))
    assert fp8_primary_weights(pair("Megatron-Bridge, NeMo 25.11 container"))
    assert not fp8_primary_weights(pair("NeMo 24.12 container, NeMo 1.0 launcher"))
    assert fp8_primary_weights(pair("NeMo 24.12, NeMo 1.0 launcher", "model.fp8_params=True"))


def test_virtual_stages_a_table_leaves_out_come_from_its_launch_script(built):
    """dgxc-benchmarking's NeMo 25.02 Nemotron-4 340B table gives no VP; nemotron/launch.sh of
    the same commit passes -vp 12. Entries whose table states VP keep it."""
    cases, _ = built
    w = {c.name: c.workload.parallel for c in cases}
    nemo2502 = [n for n in w if n.startswith("dgxc-nemo2502-h100-nemotron4-340b-")]
    assert len(nemo2502) == 8
    assert all(w[n].virtual_stages == 12 and w[n].schedule == "interleaved" for n in nemo2502)
    notes = {c.name: c.notes for c in cases}
    assert all("vp 12 (NVIDIA/dgxc-benchmarking nemotron/launch.sh" in notes[n] for n in nemo2502)
    stated = [c for c in cases if "nemotron4-340b" in c.name and c.name not in nemo2502]
    assert stated and all("; vp " not in c.notes for c in stated)


@pytest.mark.slow
def test_nemo_1_launcher_runs_keep_16_bit_master_remainders(built):
    """NeMo 1.x's distributed_fused_adam stores remainders for a bf16 model without FP8
    parameters; NeMo 2.0's Megatron-Core optimizer does not (its precision-aware optimizer is
    off by default)."""
    cases, _ = built
    for c in cases:
        framework = next(p["framework"] for p in read_pairs() if c.name.startswith(p["id"] + " "))
        nemo1 = framework.startswith("NeMo ") and "NeMo 2.0" not in framework
        fp8_params = c.workload.training.fp8_param_gather
        assert c.workload.parallel.store_param_remainders == (nemo1 and not fp8_params), c.name


def test_pairs_name_their_release(built):
    """A pair's framework text gives its release (container or table label): `--by framework`."""
    from simsp.validate.fp8_pairs import release_of

    cases, _ = built
    assert {c.framework for c in cases} == {
        "NeMo 24.09",
        "NeMo 24.11",
        "NeMo 24.12",
        "NeMo 25.02",
        "NeMo 25.04",
    }
    assert release_of({"framework": "Megatron-Bridge, NeMo 25.11 container"}) == (
        "Megatron-Bridge 25.11"
    )
    assert release_of({"framework": "MaxText on JAX"}) == "MaxText on JAX"
