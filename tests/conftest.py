"""Shared fixtures: the shipped workloads and hardware, loaded once."""

from pathlib import Path

import pytest

from simsp.io.config import load_hardware, load_workload

ROOT = Path(__file__).resolve().parents[1]
PAPER_MODELS = ("gpt-22b", "gpt3-175b", "mt-nlg-530b", "gpt-1t")


@pytest.fixture(scope="session")
def hardware():
    return load_hardware(ROOT / "hardware" / "dgx-a100-80gb.yaml")


@pytest.fixture(scope="session")
def workloads():
    return {name: load_workload(ROOT / "workloads" / f"{name}.yaml") for name in PAPER_MODELS}


@pytest.fixture(scope="session")
def results(workloads, hardware):
    """run() of a paper workload by name, each simulated once per test session."""
    from simsp.api import run

    cache = {}

    def get(name):
        if name not in cache:
            cache[name] = run(workloads[name], hardware)
        return cache[name]

    return get
