"""The closed form over columns equals the scalar closed form bit for bit, and a sweep's grid
enumerated as columns equals enumerate_configs: the same configurations, order and counts."""

import dataclasses
import importlib.util

import numpy as np
import pytest

from simsp.io.config import load_hardware, load_workload
from simsp.sim import closed_form
from simsp.sim.closed_form_columns import estimate_columns, estimate_many
from simsp.sim.workload_columns import WorkloadColumns, from_workloads
from simsp.sweep import SweepSpec, enumerate_configs, load_spec
from simsp.sweep.grid_columns import enumerate_columns, enumerate_mixed

from .conftest import ROOT

FIELDS = (
    "iteration_time_s",
    "mfu",
    "hfu",
    "tokens_per_s",
    "bubble_s",
    "peak_bytes",
    "reserve_bytes",
    "capacity_bytes",
)


def _benchmark():
    """benchmarks/screening_speed.py as a module (not a package's), for its grid."""
    path = ROOT / "benchmarks" / "screening_speed.py"
    spec = importlib.util.spec_from_file_location("screening_speed", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BENCHMARK = _benchmark()
BENCHMARK_GRID, BENCHMARK_GPUS = BENCHMARK.GRID, BENCHMARK.GPUS

SMALL_GRID = (
    ("tp", (1, 2)),
    ("cp", (1, 2)),
    ("pp", (1, 2, 4)),
    ("recompute", ("selective", "full")),
    ("micro_batch", (1, 2)),
    ("schedule", ("1f1b", "interleaved", "gpipe")),
    ("virtual_stages", (2, 4)),
    ("global_batch", (64, 128)),
)


@pytest.fixture(scope="module")
def h100():
    return load_hardware(ROOT / "hardware" / "dgx-h100.yaml")


def assert_equal(found, configs, hw=None):
    """Every row of `found` equal, field by field and in `fits`, to the scalar closed form."""
    assert len(found) == len(configs)
    for i, c in enumerate(configs):
        w, on = (c.workload, c.hardware) if hw is None else (c, hw)
        want = closed_form.estimate(w, on)
        got = found.row(i)
        for f in FIELDS:
            assert getattr(got, f) == getattr(want, f), (f, i, w.parallel)
        assert bool(found.fits[i]) == want.fits == got.fits


def test_equal_on_the_benchmark_grid(workloads, hardware):
    """GPT-3 175B over benchmarks/screening_speed.py's grid: every configuration the grid
    enumerates, as columns, evaluated as arrays and equal to closed_form.estimate."""
    for gpus in BENCHMARK_GPUS:
        spec = SweepSpec("test", workloads["gpt3-175b"], (hardware,), gpus, BENCHMARK_GRID)
        grid = enumerate_columns(spec)
        found = estimate_columns(grid.columns, hardware)
        assert found.vectorised.all()
        assert_equal(found, grid.configs())


@pytest.mark.parametrize(
    "settings",
    [
        {},  # the workload's: overlapped gradient reduction under the distributed optimizer
        {"overlap_param_gather": True, "cached_dummy_wgrads": True},
        {"overlap_grad_reduce": False},
        {"overlap_grad_reduce": False, "overlap_param_gather": True, "bucket_params": 10**8},
        {"distributed_optimizer": False, "grad_reduce_in_fp32": False},
    ],
)
def test_equal_with_other_settings(h100, settings):
    """Llama-3.1-8B on H100s with context parallelism, RoPE, untied embeddings and the
    distributed optimizer's gathers (overlapped or not), FP8 with delayed scaling's amax
    reductions on the first: the rows the arrays cover and those they leave to the scalar
    closed form (interleaving with a reduction or gather per chunk) are all equal to it."""
    base = load_workload(ROOT / "workloads" / "llama-3.1-8b.yaml")
    par = dataclasses.replace(base.parallel, **settings)
    training = base.training
    if not settings:
        training = dataclasses.replace(training, precision="fp8", fp8_recipe="delayed")
    base = dataclasses.replace(base, parallel=par, training=training)
    grid = enumerate_columns(SweepSpec("test", base, (h100,), 32, SMALL_GRID))
    found = estimate_columns(grid.columns, h100)
    interleaved = grid.columns.chunks() > 1
    assert found.vectorised[~interleaved].all()
    per_chunk = par.overlap_grad_reduce or (par.distributed_optimizer and par.overlap_param_gather)
    assert found.vectorised[interleaved].any() != per_chunk
    assert_equal(found, grid.configs())


def test_rows_it_does_not_cover_take_the_scalar_path(workloads, hardware):
    """Zero-bubble and V schedules (walked), and an uneven split, go through closed_form.estimate
    row by row, in their places among the rows the arrays cover."""
    base = workloads["gpt3-175b"]
    grid = (("pp", (2, 4)), ("schedule", ("1f1b", "zb-h1", "zbv")), ("micro_batch", (1, 2)))
    configs = enumerate_configs(SweepSpec("test", base, (hardware,), 64, grid))[0]
    uneven = dataclasses.replace(
        base.parallel, pp=4, dp=2, first_stage_layers=18, schedule="1f1b", virtual_stages=1
    )
    ws = [c.workload for c in configs] + [dataclasses.replace(base, parallel=uneven)]
    found = estimate_many(ws, hardware)
    covered = [w.parallel.schedule == "1f1b" and not w.parallel.uneven for w in ws]
    assert found.vectorised.tolist() == covered
    assert not all(covered) and any(covered)
    assert_equal(found, ws, hardware)


def test_estimate_many_keeps_the_order_of_mixed_workloads(workloads, hardware, h100):
    """Workloads of several bases and machines, interleaved: grouped into columns and returned
    in their own order."""
    a = workloads["gpt3-175b"]
    b = dataclasses.replace(a, parallel=dataclasses.replace(a.parallel, distributed_optimizer=True))
    c = dataclasses.replace(a, parallel=dataclasses.replace(a.parallel, pp=4, dp=2))
    ws = [a, b, c, b, a]
    hws = [hardware, hardware, h100, h100, hardware]
    assert len(from_workloads(ws)) == 2
    found = estimate_many(ws, hws)
    for i, (w, hw) in enumerate(zip(ws, hws, strict=True)):
        assert found.row(i) == closed_form.estimate(w, hw)


def grid_specs(workloads, hardware, h100):
    """Sweep specs whose grids enumerate_columns covers: the benchmark's, two machines, an
    inherited interleaved schedule (falling back to 1F1B) and a non-interleaved one, one point
    only."""
    gpt3 = workloads["gpt3-175b"]
    plain = dataclasses.replace(
        gpt3, parallel=dataclasses.replace(gpt3.parallel, schedule="1f1b", virtual_stages=1)
    )
    return [
        SweepSpec("a", gpt3, (hardware,), 64, BENCHMARK_GRID),
        SweepSpec("b", plain, (hardware, h100), 96, BENCHMARK_GRID[:5]),
        SweepSpec("c", plain, (hardware,), 128, (("tp", (4, 8)), ("global_batch", (256, 100)))),
        SweepSpec("d", plain, (hardware,), 64, ()),
        SweepSpec("e", gpt3, (hardware,), 64, BENCHMARK_GRID[:5]),
        SweepSpec("f", gpt3, (hardware,), 64, ()),
    ]


def test_grid_columns_enumerate_as_enumerate_configs(workloads, hardware, h100):
    """The same configurations (keys and workloads), in the same order, and the same counts,
    the first skipped point's reason among them; with a small max_actions, the same too-big."""
    for spec in grid_specs(workloads, hardware, h100):
        for max_actions in (100_000, 64):
            want, counts = enumerate_configs(spec, max_actions)
            grid = enumerate_columns(spec, max_actions)
            assert grid.counts == counts
            assert counts.fallback or spec.source != "e"
            got = grid.configs()
            assert [c.key for c in got] == [c.key for c in want]
            assert [c.workload for c in got] == [c.workload for c in want]
            assert [c.hardware for c in got] == [c.hardware for c in want]


@pytest.mark.parametrize(
    "path", sorted((ROOT / "workloads" / "sweeps").glob("*.yaml")), ids=lambda p: p.stem
)
def test_shipped_specs_enumerate_as_enumerate_configs(path):
    """Each shipped sweep spec: the same configurations and counts, or not covered (None)."""
    spec = load_spec(path)
    want, counts = enumerate_configs(spec)
    grid = enumerate_columns(spec)
    if grid is None:
        assert any(key in ("ep", "moe_dispatcher") for key, _ in spec.grid)
        return
    assert grid.counts == counts
    assert [c.key for c in grid.configs()] == [c.key for c in want]


def test_grids_it_does_not_cover(workloads, hardware):
    """A model key, a parallel setting outside the columns, a named value the rules refuse:
    None, for enumerate_configs to enumerate."""
    gpt3 = workloads["gpt3-175b"]
    for grid in (
        (("tp", (1, 2)), ("seq_len", (1024, 2048))),
        (("tp", (1, 2)), ("distributed_optimizer", (True, False))),
        (("schedule", ("1F1B",)),),
    ):
        assert enumerate_columns(SweepSpec("t", gpt3, (hardware,), 64, grid)) is None


def test_mixed_grids_enumerate_as_enumerate_configs(workloads, hardware, h100):
    """Grids with keys outside the columns (a model key first, a parallel switch between column
    keys, an inherited interleaving): one column grid per outer combination, merged into the
    same configurations, order and counts as one point at a time, the first skipped point's
    reason (an outer one: heads=97) among them; grids with too few column points: None."""
    gpt3 = workloads["gpt3-175b"]
    mixed = (
        ("heads", (97, 96)),
        ("bias", (True, "true")),  # one value twice: every configuration a duplicate once
        ("tp", (1, 2, 4, 8)),
        ("overlap_grad_reduce", (True, False)),
        ("pp", (1, 2, 4, 8)),
        ("micro_batch", (1, 2)),
        ("virtual_stages", (2, 3)),
        ("global_batch", (128, 192)),
    )
    for spec in (
        SweepSpec("m", gpt3, (hardware, h100), 64, mixed),
        SweepSpec("n", gpt3, (hardware,), 64, mixed[1:]),
    ):
        for max_actions in (100_000, 64):
            want, counts = enumerate_configs(spec, max_actions)
            got, got_counts = enumerate_mixed(spec, max_actions)
            assert got_counts == counts and counts.configs > 0
            assert [c.key for c in got] == [c.key for c in want]
            assert [c.workload for c in got] == [c.workload for c in want]
            assert [c.hardware for c in got] == [c.hardware for c in want]
            assert ("heads=97" in counts.reason) == (spec.source == "m")
            assert counts.duplicates >= counts.configs  # the bias pair, across combinations
    few = (("tp", (1, 2)), ("seq_len", (1024, 2048)))
    assert enumerate_mixed(SweepSpec("t", gpt3, (hardware,), 64, few)) is None
    assert enumerate_mixed(SweepSpec("t", gpt3, (hardware,), 64, mixed[1:2])) is None


def test_columns_round_trip(workloads):
    """from_workloads then workload(i): the workloads given."""
    a = workloads["gpt3-175b"]
    ws = [
        dataclasses.replace(a, parallel=dataclasses.replace(a.parallel, tp=t, dp=8 // t))
        for t in (1, 2, 8)
    ]
    ((cols, rows),) = from_workloads(ws)
    assert rows.tolist() == [0, 1, 2]
    assert [cols.workload(i) for i in range(3)] == ws
    assert np.array_equal(cols.gpus(), [64, 64, 64])


def test_a_warm_pass_builds_no_workload(workloads, hardware, monkeypatch):
    """Every cost a second pass needs is memoised on its key: no row becomes a Workload."""
    spec = SweepSpec("test", workloads["gpt3-175b"], (hardware,), 64, BENCHMARK_GRID[:6])
    grid = enumerate_columns(spec)
    first = estimate_columns(grid.columns, hardware)
    built = []
    monkeypatch.setattr(WorkloadColumns, "workload", lambda self, i: built.append(i))
    again = estimate_columns(grid.columns, hardware)
    assert built == []
    assert all(np.array_equal(getattr(first, f), getattr(again, f)) for f in FIELDS)
