"""The output contract (docs/architecture.md): shipped file names, CLI flags and the JSON keys
outside checks read."""

import json
from pathlib import Path

import pytest

from simsp.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
MEMORY_KEYS = {
    "capacity_bytes",
    "fits",
    "reserve_bytes",
    "peak_bytes",
    "stages",
    "activation_per_layer_bytes",
}
STAGE_KEYS = {"stage", "peak_bytes", "weights_and_optimizer_bytes", "activation_bytes"}
BREAKDOWN_KEYS = {"compute_s", "tp_comm_s", "pp_comm_s", "dp_comm_s", "bubble_s", "optimizer_s"}


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["gpt-22b", "gpt3-175b", "mt-nlg-530b", "gpt-1t"])
def test_shipped_workloads_and_default_hardware(name):
    assert (ROOT / "workloads" / f"{name}.yaml").is_file()
    assert (ROOT / "hardware" / "dgx-a100-80gb.yaml").is_file()


def test_run_json_holds_the_contract_keys(capsys):
    d = run_json(capsys, "run", str(ROOT / "workloads" / "gpt3-175b.yaml"), "--json")
    assert {
        "iteration_time_s",
        "mfu",
        "hfu",
        "tokens_per_s",
        "per_layer_ms",
        "memory",
        "breakdown",
    } <= set(d)
    assert 0 < d["mfu"] < 1 and 0 < d["hfu"] < 1
    assert set(d["per_layer_ms"]) >= {"forward", "backward"}
    assert MEMORY_KEYS <= set(d["memory"]) and all(
        STAGE_KEYS <= set(s) for s in d["memory"]["stages"]
    )
    assert BREAKDOWN_KEYS <= set(d["breakdown"])


def test_memory_json_is_the_memory_object_alone(capsys):
    d = run_json(capsys, "memory", str(ROOT / "workloads" / "gpt-1t.yaml"), "--json")
    assert MEMORY_KEYS <= set(d) and len(d["stages"]) == 64


def test_memory_json_holds_the_parameter_count_run_json_has(capsys):
    """The output contract: `params` in memory --json too, the same integer as run --json's."""
    workload = str(ROOT / "workloads" / "gpt3-175b.yaml")
    memory = run_json(capsys, "memory", workload, "--json")
    run = run_json(capsys, "run", workload, "--json")
    assert isinstance(memory["params"], int) and memory["params"] == run["params"] > 170e9


def test_every_override_flag_is_accepted(capsys):
    d = run_json(
        capsys,
        "run",
        str(ROOT / "workloads" / "gpt3-175b.yaml"),
        "--hardware",
        str(ROOT / "hardware" / "dgx-a100-80gb.yaml"),
        "--tp",
        "4",
        "--pp",
        "4",
        "--dp",
        "4",
        "--no-sp",
        "--recompute",
        "full",
        "--micro-batch",
        "2",
        "--global-batch",
        "128",
        "--schedule",
        "1f1b",
        "--virtual-stages",
        "1",
        "--json",
    )
    assert len(d["memory"]["stages"]) == 4
    d = run_json(
        capsys,
        "run",
        str(ROOT / "workloads" / "gpt3-175b.yaml"),
        "--sp",
        "--schedule",
        "interleaved",
        "--virtual-stages",
        "2",
        "--json",
    )
    assert d["iteration_time_s"] > 0


def test_a_configuration_that_does_not_fit_is_an_answer(capsys):
    d = run_json(
        capsys,
        "memory",
        str(ROOT / "workloads" / "gpt-1t.yaml"),
        "--no-sp",
        "--recompute",
        "none",
        "--json",
    )
    assert d["fits"] is False
