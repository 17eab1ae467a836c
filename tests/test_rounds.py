"""The interleaved schedule and 1F1B walked in rounds (sim/rounds.py), GPipe's walk in closed form
(sim/gpipe.py) against pipeline_time.walk, the rules the engine follows: to the bit where rounds
skip nothing, to 1e-12 where they skip a settled steady state, on chunk times that differ from
one virtual stage to the next."""

import dataclasses
import random
from types import SimpleNamespace

import numpy as np

from simsp.sim import rounds
from simsp.sim.gpipe import gpipe_ends
from simsp.sim.pipeline_time import walk
from simsp.sim.schedule import build


def _chunks(rng: random.Random, n: int, alike: bool) -> tuple[list, list]:
    """Forward and backward times of n virtual stages: all different, or alike but the ends
    (an embedding a little heavier first, a loss heavier last), as a model's stages are."""
    f = [rng.uniform(0.5, 2.0) for _ in range(n)]
    b = [x * rng.uniform(1.5, 3.0) for x in f]
    if alike:
        f, b = [f[0]] * n, [b[0]] * n
        f[0], b[0] = f[0] * 1.3, b[0] * 1.2
        f[-1], b[-1] = f[-1] * rng.uniform(1, 3), b[-1] * rng.uniform(1, 3)
    return f, b


def _walked(schedule: str, p: int, v: int, m: int, f: list, b: list, c: float) -> list:
    """pipeline_time.walk's figures, flattened per stage: end, last backward, each chunk's."""
    chunk = [
        SimpleNamespace(forward_s=x, backward_s=y, paired_forward_s=None, paired_backward_s=None)
        for x, y in zip(f, b, strict=True)
    ]
    costs = SimpleNamespace(
        p=p, v=v, m=m, placement="loop", chunks=chunk, p2p_s=c, schedule=schedule
    )
    ends = walk(costs, build(schedule, p, m, v))
    return [(e, ws, we, *(x for pair in by for x in pair)) for e, ws, we, by in ends]


def _rounds(p: int, v: int, m: int, f: list, b: list, c: float) -> list:
    ends, w_start, w_end, by = rounds.walk_rounds(
        p, v, np.array([m]), np.array([f]), np.array([b]), np.array([c])
    )
    return [
        (ends[0, s], w_start[0, s], w_end[0, s], *by[0, s].reshape(-1).tolist()) for s in range(p)
    ]


def _cases(seed: int, n: int, blocks: tuple[int, ...]):
    """Interleaved runs (v > 1, m a multiple of p) and plain 1F1B (v = 1, any m >= 1)."""
    rng = random.Random(seed)
    for _ in range(n):
        p, v = rng.choice((2, 3, 4, 8)), rng.choice((1, 2, 3, 4))
        f, b = _chunks(rng, p * v, rng.random() < 0.5)
        m = p * rng.choice(blocks) + (rng.randrange(-p + 1, p) if v == 1 else 0)
        yield p, v, max(m, 1), f, b, rng.choice((0.0, 0.01, 0.1, 0.5))


def test_rounds_equal_the_walk_to_the_bit_without_a_skip(monkeypatch):
    """Every round walked (no state ever counts as settled): the same floating-point operations
    in the same order as pipeline_time.walk, so the same bits, for m = p (every forward first),
    2p (the end walked from the first block) and longer runs."""
    monkeypatch.setattr(rounds, "SETTLED", -1.0)
    for p, v, m, f, b, c in _cases(1, 160, (1, 2, 3, 5, 9)):
        schedule = "interleaved" if v > 1 else "1f1b"
        assert _rounds(p, v, m, f, b, c) == _walked(schedule, p, v, m, f, b, c), (p, v, m)


def test_rounds_skip_a_settled_steady_state_within_1e_12(monkeypatch):
    """Long runs: the rounds skip their repeating blocks (counted: far fewer rounds than the
    schedule has) and every figure stays within 1e-12 of the walk's."""
    calls = []
    counted = rounds._round

    def counting(*args, **kwargs):
        calls.append(1)
        return counted(*args, **kwargs)

    monkeypatch.setattr(rounds, "_round", counting)
    worst, walked_rounds, all_rounds = 0.0, 0, 0
    for p, v, m, f, b, c in _cases(2, 80, (12, 40, 100)):
        calls.clear()
        schedule = "interleaved" if v > 1 else "1f1b"
        got, want = _rounds(p, v, m, f, b, c), _walked(schedule, p, v, m, f, b, c)
        walked_rounds += len(calls)
        all_rounds += (1 if v > 1 else 2) * m * v + p - 1
        for row_got, row_want in zip(got, want, strict=True):
            for x, y in zip(row_got, row_want, strict=True):
                worst = max(worst, abs(x / y - 1))
    assert worst < 1e-12
    assert walked_rounds < all_rounds / 3, (walked_rounds, all_rounds)


def test_a_wrong_round_offset_is_caught_on_the_lists():
    """_schedule checks its rounds on the schedule's own lists: one round off, and the check
    fails; 1F1B with fewer microbatches than stages has no such rounds and is walked."""
    p, v, m = 4, 2, 8
    sched = rounds._schedule(p, v, m)
    assert rounds._holds(sched, build("interleaved", p, m, v))
    assert not rounds._holds(
        dataclasses.replace(sched, d=sched.d + 1), build("interleaved", p, m, v)
    )
    assert rounds.fits(8, 1, 8) and rounds.fits(8, 1, 64)


def test_gpipe_in_closed_form_equals_its_walk():
    """GPipe's two flow shops in closed form: each stage's end and last backward within 1e-12
    of pipeline_time.walk, on stages that all differ, one to 16p microbatches."""
    rng = random.Random(3)
    worst = 0.0
    for _ in range(300):
        p = rng.choice((1, 2, 3, 4, 8))
        m = rng.choice((1, 2, 3, p, 2 * p, 3 * p + 1, 16 * p))
        f, b = _chunks(rng, p, rng.random() < 0.5)
        c = rng.choice((0.0, 0.01, 0.3))
        want = _walked("gpipe", p, 1, m, f, b, c)
        ends, start, ran = gpipe_ends(np.array([f]), np.array([b]), np.array([c]), np.array([m]))
        for s in range(p):
            for x, y in zip((ends[0, s], start[0, s], ran[0, s]), want[s][:3], strict=True):
                worst = max(worst, abs(x / y - 1))
    assert worst < 1e-12


def test_the_closed_form_ends_every_classic_schedule_as_its_walk():
    """pipeline_time.pipeline_ends on random stages, alike but the ends or all different, heavier
    first or last, under 1F1B (the formula where formula_exact holds, else rounds), interleaved
    (rounds) and GPipe (closed form): each stage's end and last backward within 1e-12 of
    pipeline_time.walk; the formula is taken (and exact) on about half of the 1F1B runs."""
    from simsp.sim import pipeline_time
    from simsp.sim.chunk_costs import ChunkCost
    from simsp.sim.plan import StageCosts

    rng = random.Random(4)
    worst, formula = 0.0, 0
    for _ in range(240):
        p, v = rng.choice((2, 3, 4, 8)), rng.choice((1, 1, 2, 3))
        schedule = "interleaved" if v > 1 else rng.choice(("1f1b", "gpipe"))
        f, b = _chunks(rng, p * v, rng.random() < 0.7)
        if rng.random() < 0.5:  # the loss's end heavier than the embedding's
            f[-1], b[-1] = max(f[-1], f[0]), max(b[-1], b[0])
        m = p * rng.choice((1, 2, 5, 20)) + (rng.randrange(0, p) if v == 1 else 0)
        chunks = tuple(ChunkCost(x, y, 0.0, 0.0, 0.0, 0.0) for x, y in zip(f, b, strict=True))
        zeros = (0.0,) * p
        costs = StageCosts(
            p,
            v,
            m,
            chunks,
            rng.choice((0.0, 0.05)),
            zeros,
            False,
            (1,) * p,
            0.0,
            zeros,
            schedule=schedule,
        )
        formula += schedule == "1f1b" and pipeline_time.formula_exact(costs)
        want = pipeline_time.walk(costs, build(schedule, p, m, v))
        for got, row in zip(pipeline_time.pipeline_ends(costs), want, strict=True):
            for x, y in zip(got[:3], row[:3], strict=True):
                worst = max(worst, abs(x / y - 1))
    assert worst < 1e-12
    assert formula > 20
