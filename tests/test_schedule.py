"""Tests for simsp.sim.schedule: pipeline schedules as pure data (no simpy).

A tiny list-scheduling loop replays each schedule with unit costs and free communication,
honouring `dependencies`, to check completeness, deadlock freedom and the textbook makespans
(Narayanan et al. SC'21 §2.2: bubble (p-1)(tf+tb), or (p-1)(tf+tb)/v interleaved).
"""

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsp.sim.schedule import (
    SCHEDULES,
    Action,
    build,
    gpipe,
    interleaved,
    max_in_flight,
    one_f_one_b,
    peak_in_flight_layers,
    virtual_stage,
    warmup_1f1b,
    warmup_interleaved,
)
from simsp.sim.walk import dependencies

TF, TB = Fraction(1), Fraction(2)


def cases():
    """Every (schedule, p, m, v): p 1..8, m 1..24, v 1..4 (m % p == 0 if interleaved)."""
    for p in range(1, 9):
        for m in range(1, 25):
            yield "gpipe", p, m, 1
            yield "1f1b", p, m, 1
            if m % p == 0:
                for v in range(2, 5):
                    yield "interleaved", p, m, v


CASES = list(cases())


def replay(sched, p, v, tf=TF, tb=TB):
    """Finish time of every (stage, action), running each stage in order as soon as deps allow.

    Raises AssertionError on deadlock or on a dependency whose producer never appears.
    """
    scheduled = {(s, a) for s, stage in enumerate(sched) for a in stage}
    finish, free = {}, [Fraction(0)] * p
    pos = [0] * p
    while any(pos[s] < len(sched[s]) for s in range(p)):
        progressed = False
        for s in range(p):
            while pos[s] < len(sched[s]):
                a = sched[s][pos[s]]
                deps = dependencies(p, v, s, a)
                assert all(d in scheduled for d in deps), (s, a, deps)
                if not all(d in finish for d in deps):
                    break
                start = max([free[s]] + [finish[d] for d in deps])
                free[s] = finish[(s, a)] = start + (tf if a.kind == "F" else tb)
                pos[s] += 1
                progressed = True
        assert progressed, f"deadlock at {pos}"
    return finish


def makespan(sched, p, v, tf=TF, tb=TB):
    """Time the last action finishes under `replay`."""
    return max(replay(sched, p, v, tf, tb).values())


def leading_forwards(actions):
    """How many forwards a stage runs before its first backward."""
    return next((i for i, a in enumerate(actions) if a.kind == "B"), len(actions))


# --- completeness, order and dependencies ---------------------------------------------


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_every_chunk_microbatch_once_forward_then_backward(schedule):
    for name, p, m, v in (c for c in CASES if c[0] == schedule):
        sched = build(name, p, m, v)
        assert len(sched) == p
        expected = {(i, c) for i in range(m) for c in range(v)}
        for stage in sched:
            assert len(stage) == 2 * m * v
            where = {(a.kind, a.microbatch, a.chunk): i for i, a in enumerate(stage)}
            assert len(where) == len(stage)
            assert {(i, c) for k, i, c in where if k == "F"} == expected
            assert {(i, c) for k, i, c in where if k == "B"} == expected
            assert all(where[("F", i, c)] < where[("B", i, c)] for i, c in expected)


@pytest.mark.parametrize("p", range(1, 9))
def test_replay_never_deadlocks_and_respects_dependencies(p):
    for name, _, m, v in (c for c in CASES if c[1] == p):
        sched = build(name, p, m, v)
        finish = replay(sched, p, v)
        for s, stage in enumerate(sched):
            for a in stage:
                cost = TF if a.kind == "F" else TB
                for d in dependencies(p, v, s, a):
                    assert finish[d] <= finish[(s, a)] - cost


def test_dependencies_follow_virtual_stages():
    p, v = 4, 2
    assert dependencies(p, v, 0, Action("F", 5, 0)) == ()
    assert dependencies(p, v, 0, Action("F", 5, 1)) == ((3, Action("F", 5, 0)),)
    assert dependencies(p, v, 2, Action("F", 5, 1)) == ((1, Action("F", 5, 1)),)
    assert dependencies(p, v, 3, Action("B", 5, 1)) == ((3, Action("F", 5, 1)),)
    assert dependencies(p, v, 3, Action("B", 5, 0)) == (
        (3, Action("F", 5, 0)),
        (0, Action("B", 5, 1)),
    )
    assert dependencies(1, 1, 0, Action("B", 0, 0)) == ((0, Action("F", 0, 0)),)
    assert virtual_stage(p, 3, 1) == 7


# --- the orders themselves --------------------------------------------------------------


def test_one_f_one_b_golden_order():
    stage0 = "".join(f"{a.kind}{a.microbatch}" for a in one_f_one_b(4, 8)[0])
    assert stage0 == "F0F1F2F3B0F4B1F5B2F6B3F7B4B5B6B7"
    last = "".join(f"{a.kind}{a.microbatch}" for a in one_f_one_b(4, 8)[3])
    assert last == "F0B0F1B1F2B2F3B3F4B4F5B5F6B6F7B7"


def test_gpipe_is_all_forwards_then_ascending_backwards():
    for stage in gpipe(3, 5):
        assert [a.kind for a in stage] == ["F"] * 5 + ["B"] * 5
        assert [a.microbatch for a in stage] == list(range(5)) * 2


def megatron_chunk_id(k, p, v, forward):
    """Megatron-LM get_model_chunk_id, transcribed."""
    chunk = (k % (p * v)) // p
    return chunk if forward else v - chunk - 1


def megatron_microbatch_id(k, p, v):
    """Megatron-LM get_microbatch_id_in_model_chunk, transcribed."""
    return (k // (p * v)) * p + k % p


@pytest.mark.parametrize("p,m,v", [(4, 8, 2), (4, 12, 3), (8, 64, 3), (2, 6, 4)])
def test_interleaved_mapping_matches_megatron(p, m, v):
    for _s, stage in enumerate(interleaved(p, m, v)):
        forwards = [a for a in stage if a.kind == "F"]
        backwards = [a for a in stage if a.kind == "B"]
        for k, (f, b) in enumerate(zip(forwards, backwards, strict=True)):
            mb = megatron_microbatch_id(k, p, v)
            assert (f.microbatch, f.chunk) == (mb, megatron_chunk_id(k, p, v, True))
            assert (b.microbatch, b.chunk) == (mb, megatron_chunk_id(k, p, v, False))


def test_interleaved_golden_first_stage():
    stage0 = [f"{a.kind}{a.microbatch}.{a.chunk}" for a in interleaved(2, 4, 2)[0]]
    # warm-up (2-0-1)*2 + (2-1)*2 = 4 forwards, then 1F1B pairs, then cool-down.
    assert stage0 == [
        "F0.0", "F1.0", "F0.1", "F1.1",
        "F2.0", "B0.1", "F3.0", "B1.1", "F2.1", "B0.0", "F3.1", "B1.0",
        "B2.1", "B3.1", "B2.0", "B3.0",
    ]  # fmt: skip


def test_interleaved_with_one_chunk_is_1f1b():
    assert build("interleaved", 4, 6, 1) == build("1f1b", 4, 6)
    assert interleaved(4, 6, 1) == one_f_one_b(4, 6)


def test_warmup_steady_cooldown_shape():
    """Megatron-LM's three loops: W forwards, (total - W) F/B pairs, W backwards."""
    for name, p, m, v in CASES:
        if name == "gpipe":
            continue
        total = m * v
        for s, stage in enumerate(build(name, p, m, v)):
            w = warmup_interleaved(p, m, v, s) if name == "interleaved" else warmup_1f1b(p, m, s)
            assert "".join(a.kind for a in stage) == "F" * w + "FB" * (total - w) + "B" * w


# --- warm-up counts ---------------------------------------------------------------------


def test_1f1b_warmup_counts():
    for p in range(1, 9):
        for m in range(1, 25):
            for s, stage in enumerate(one_f_one_b(p, m)):
                warmup = min(p - s - 1, m)
                # warm-up forwards, then the first steady pair starts with one more forward
                assert leading_forwards(stage) == min(warmup + 1, m)


def test_interleaved_warmup_counts():
    for _, p, m, v in (c for c in CASES if c[0] == "interleaved"):
        for s, stage in enumerate(interleaved(p, m, v)):
            if m == p:  # Megatron-LM: all_warmup_microbatches
                expected = m * v
            else:
                expected = min((p - s - 1) * 2 + (v - 1) * p, m * v)
            assert warmup_interleaved(p, m, v, s) == expected
            assert leading_forwards(stage) == min(expected + 1, m * v)


# --- activation memory: in-flight bounds ------------------------------------------------


def test_in_flight_gpipe_and_1f1b():
    for p in range(1, 9):
        for m in range(1, 25):
            assert all(max_in_flight(stage) == m for stage in gpipe(p, m))
            for s, stage in enumerate(one_f_one_b(p, m)):
                assert max_in_flight(stage) == min(p - s, m)


def test_in_flight_interleaved_per_stage():
    for _, p, m, v in (c for c in CASES if c[0] == "interleaved"):
        for s, stage in enumerate(interleaved(p, m, v)):
            if m == p:
                expected = m * v
            else:
                expected = min(2 * (p - s - 1) + (v - 1) * p + 1, m * v)
            assert max_in_flight(stage) == expected


@pytest.mark.parametrize("p,v,layers,m", [(8, 3, 96, 64), (35, 3, 105, 280), (4, 2, 32, 8)])
def test_interleaved_first_stage_matches_paper(p, v, layers, m):
    """Korthikanti et al. 2023 §4.2.3: first stage holds L * (1 + (p-1)/(p*v)) layers."""
    per_chunk = layers // (p * v)
    assert per_chunk * p * v == layers
    expected = layers * (1 + Fraction(p - 1, p * v))
    got = peak_in_flight_layers(interleaved(p, m, v)[0], per_chunk)
    assert got == expected
    if (p, v, layers) == (8, 3, 96):
        assert got == 124


def test_1f1b_first_stage_holds_all_layers():
    """Korthikanti et al. 2023 §4.2.3: 1F1B's first stage holds p microbatches of L/p layers."""
    assert peak_in_flight_layers(one_f_one_b(8, 64)[0], 96 // 8) == 96


# --- makespan with unit costs and free communication ------------------------------------


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
def test_makespan_flush_schedules(schedule):
    for _, p, m, _v in (c for c in CASES if c[0] == schedule):
        assert makespan(build(schedule, p, m), p, 1) == (m + p - 1) * (TF + TB)


def test_makespan_interleaved():
    for _, p, m, v in (c for c in CASES if c[0] == "interleaved"):
        got = makespan(interleaved(p, m, v), p, v, TF / v, TB / v)
        assert got == (m + Fraction(p - 1, v)) * (TF + TB), (p, m, v)


@settings(max_examples=40, deadline=None)
@given(
    p=st.integers(1, 12),
    groups=st.integers(1, 4),
    v=st.integers(1, 4),
    tf=st.integers(1, 5),
    tb=st.integers(1, 5),
)
def test_makespan_property(p, groups, v, tf, tb):
    m = p * groups
    tf, tb = Fraction(tf), Fraction(tb)
    assert makespan(one_f_one_b(p, m), p, 1, tf, tb) == (m + p - 1) * (tf + tb)
    got = makespan(build("interleaved", p, m, v), p, v, tf / v, tb / v)
    assert got == (m + Fraction(p - 1, v)) * (tf + tb)


# --- errors and speed -------------------------------------------------------------------


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="schedule"):
        build("zero-bubble", 4, 8)
    with pytest.raises(ValueError, match="divisible"):
        interleaved(4, 6, 2)
    for bad in ({"p": 0, "m": 4}, {"p": 4, "m": 0}, {"p": 2.0, "m": 4}, {"p": True, "m": 4}):
        with pytest.raises(ValueError):
            one_f_one_b(**bad)
    with pytest.raises(ValueError):
        interleaved(4, 8, 0)


def test_actions_are_frozen():
    with pytest.raises(AttributeError):
        Action("F", 0, 0).kind = "B"


@pytest.mark.parametrize("args", [("1f1b", 64, 512, 1), ("interleaved", 64, 512, 2)])
def test_one_trillion_workload_builds(args):
    """The 1T run's schedule (its speed is benchmarks/engine_speed.py's to measure)."""
    sched = build(*args)
    assert len(sched) == 64


def test_every_named_schedule_has_a_builder():
    """spec.schedules names each kind once; sim.schedule builds each of them, and no other."""
    from simsp.sim.schedule import BUILDERS
    from simsp.spec.schedules import REGISTRY

    assert set(BUILDERS) == set(REGISTRY)
