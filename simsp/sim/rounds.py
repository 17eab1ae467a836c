"""The interleaved schedule and 1F1B walked in rounds: sim/walk.py's rules over their action
lists, for many configurations of one (p, v) at once (numpy over rows), with the periodic middle
of a long run skipped exactly.

Rounds. On stage s the n-th forward of the schedule's list (virtual microbatch n) runs in round
a n + s, the n-th backward in round a n + (p - 1 - s) + d: a = 1 for the interleaved schedule,
2 for plain 1F1B (its waves cross a stage every other round), and d = a W_s + 2 s - (p - 1)
(W_s the warm-up forwards, read off the lists; the same d on every stage, as W_s =
2 (p - 1 - s) + (v - 1) p, or p - 1 - s for 1F1B). Ordered by round, a forward before a
backward of the same round, each stage keeps its list's order, and every arrival
(`walk.arrival`) comes from the round before, so one round is one step over all stages: their
forwards, then their backwards. `_schedule` reads the rounds, the chunks and the senders off
`build("interleaved", ...)` and checks both properties on the lists themselves (`fits`). Each
action starts when its stage is free and its arrival has come, and a remote send blocks the
sender, in the order of floating-point operations of `pipeline_time.walk`: without a skip the two
agree to the last bit.

Periodic middle. Past warm-up each stage repeats a block of rounds with the microbatches moved
on (p v rounds and p microbatches interleaved, 2 rounds and one microbatch for 1F1B), so the
state after round r (each stage's last forward and backward ends) maps to the state a block
later by one max-plus map, the same for every block. Once a block moves every component of the
state by the same amount (to 1e-12 of a block's time), it does so to the end of the steady
state (a max-plus map commutes with adding a constant; it is 1-Lipschitz in the largest
component, so a residual of e a block gives at most n e after n blocks: under 1e-12 of the
iteration), and the blocks up to the cool-down are added as S + n lambda. The last a p v rounds
before the cool-down, and the cool-down, are walked. A row whose state has not settled is
walked round by round, which is exact too.
"""

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from simsp.sim.schedule import build, interleaved_action, stage_and_chunk, virtual_stage
from simsp.sim.walk import arrival, target

SETTLED = 1e-12
"""A block has settled when its components moved by amounts within this share of a block's
time of each other."""


@dataclass(frozen=True)
class _Schedule:
    """A 1F1B-family schedule of one (p, v), by rounds: for a round r, tables indexed by
    r mod (a p v) and stage give each stage's forward and backward of that round."""

    p: int
    v: int
    a: int
    """Rounds a virtual microbatch takes on a stage: 1 interleaved, 2 plain 1F1B (whose
    forward and backward waves cross a stage every other round)."""
    d: int
    """The backwards' round offset."""
    f_on: np.ndarray
    """Whether the stage has a forward in a round of this residue (plain 1F1B: every other)."""
    f_from: np.ndarray
    """The stage whose forward output the forward waits for; p for none (a zero column)."""
    f_vs: np.ndarray
    """The forward's virtual stage."""
    f_sends: np.ndarray
    """1.0 where the forward's output goes to another stage, else 0.0."""
    b_on: np.ndarray
    b_from: np.ndarray
    b_vs: np.ndarray
    b_sends: np.ndarray
    b_chunk: np.ndarray
    """The backward's chunk."""

    @property
    def block(self) -> int:
        """Rounds after which the steady state repeats: p microbatches of v chunks, or one
        microbatch of one."""
        return self.a * (self.p * self.v if self.v > 1 else 1)

    def numbers(self, r: int, stages):
        """(n, on) of each stage's forward and backward in round r: their virtual microbatch
        and whether the stage runs one."""
        f, b = r - stages, r - (self.p - 1 - stages) - self.d
        return f // self.a, f % self.a == 0, b // self.a, b % self.a == 0


def fits(p: int, v: int, m: int) -> bool:
    """Whether the rounds hold for this (p, v, m), checked on the lists (of 2p microbatches
    where there are more: the warm-up no longer depends on m, and _settled walks those rounds);
    they do for the interleaved schedule and 1F1B (tests/test_rounds.py)."""
    return _schedule(p, v, min(m, 2 * p)) is not None


def may_skip(p: int, v: int, m: int) -> bool:
    """Whether walk_rounds could skip any round of a run of m microbatches: only past a block
    of steady state that ends before its cool-down. Where it cannot, pipeline_time.walk gives the
    same bits, one action at a time (cheaper for a single short run)."""
    if m < 2 * p:
        return False
    sched = _schedule(p, v, 2 * p)
    steady = p - 1 + sched.d + sched.block - 1
    first_check = -(-steady // sched.block) * sched.block
    return sched.a * (m - p) * v > first_check


@lru_cache(maxsize=256)
def _schedule(p: int, v: int, m: int) -> _Schedule | None:
    """The rounds of build("interleaved", p, m, v) (1F1B where v = 1), checked on its lists:
    each stage's order, and arrivals from the round before; None where they do not hold. The
    same for every m >= 2p (the warm-up no longer depends on m)."""
    lists = build("interleaved", p, m, v)
    last, pv, a = p * v - 1, p * v, 1 if v > 1 else 2
    first_b = [next(i for i, x in enumerate(actions) if x.kind == "B") for actions in lists]
    # B(s, 0) in the round of F(s, W_s), W_s = first_b - 1 forwards before it
    d = max(a * (i - 1) + 2 * s for s, i in enumerate(first_b)) - (p - 1)
    # per virtual microbatch n mod pv (classic.interleaved_action) and per virtual stage
    # (walk.arrival, walk.target): then every (round residue, stage) by indexing
    chunk = {k: np.array([interleaved_action(p, v, n, k).chunk for n in range(pv)]) for k in "FB"}
    home = np.array([stage_and_chunk(p, x)[0] for x in range(pv)])
    tables: dict = {}
    res, s = np.arange(a * pv)[:, None], np.arange(p)[None, :]
    for kind, off in (("F", res - s), ("B", res - (p - 1 - s) - d)):
        key = kind.lower()
        needs = [arrival(kind, x, last) for x in range(pv)]
        goes = [target(kind, x, last) for x in range(pv)]
        source = np.array([p if need is None else home[need[1]] for need in needs])
        remote = np.array([to is not None and home[to] != home[x] for x, to in enumerate(goes)])
        c = chunk[kind][(off // a) % pv]
        x = virtual_stage(p, s, c)
        tables.update(
            {
                f"{key}_on": off % a == 0,
                f"{key}_from": source[x],
                f"{key}_vs": x,
                f"{key}_sends": remote[x].astype(float),
            }
        )
        if kind == "B":
            tables["b_chunk"] = c
    sched = _Schedule(p, v, a, d, **tables)
    return sched if _holds(sched, lists) else None


def _holds(sched: _Schedule, lists) -> bool:
    """Whether the rounds keep every stage's order and every arrival comes from the round
    before (found on the lists by walk.arrival)."""
    p, v, a, d = sched.p, sched.v, sched.a, sched.d
    last, when = p * v - 1, {}
    for s, actions in enumerate(lists):
        count, rounds = {"F": 0, "B": 0}, []
        for x in actions:
            r = a * count[x.kind] + (s if x.kind == "F" else p - 1 - s + d)
            count[x.kind] += 1
            rounds.append((r, x.kind == "B"))
            when[(virtual_stage(p, s, x.chunk), x.kind, x.microbatch)] = r
        if rounds != sorted(rounds) or len(set(rounds)) != len(rounds):
            return False
    for s, actions in enumerate(lists):
        for x in actions:
            vs = virtual_stage(p, s, x.chunk)
            need = arrival(x.kind, vs, last)
            if (
                need is not None
                and when[(need[1], need[0], x.microbatch)] != when[(vs, x.kind, x.microbatch)] - 1
            ):
                return False
    return True


class _State:
    """After a round, on every row: the end of each stage's last forward and backward (what the
    next round receives; a zero column p for actions that wait for nothing) and of its last
    action (when the stage is free)."""

    def __init__(self, rows: int, p: int):
        self.f = np.zeros((rows, p + 1))
        self.b = np.zeros((rows, p + 1))
        self.free = np.zeros((rows, p))

    def stacked(self) -> np.ndarray:
        p = self.free.shape[1]
        return np.concatenate((self.f[:, :p], self.b[:, :p], self.free), axis=1)

    def take(self, stacked: np.ndarray) -> None:
        p = self.free.shape[1]
        self.f[:, :p], self.b[:, :p], self.free[:] = np.split(stacked, 3, axis=1)


def _round(sched: _Schedule, st: _State, r: int, live_f, live_b, fwd, bwd, p2p, keep=()) -> None:
    """Round r on every row: each stage's forward (where live_f; True: on every stage), then
    its backward (where live_b), in pipeline_time.walk's order of operations; `keep` (stages,
    by_chunk) records those stages' backwards' (start, end before the send) at their chunks."""
    i, p = r % (sched.a * sched.p * sched.v), sched.p
    end = np.maximum(st.free, st.f[:, sched.f_from[i]]) + fwd[:, sched.f_vs[i]]
    end = end + p2p * sched.f_sends[i]  # + 0.0 where it sends nothing: the same bits
    free = end if live_f is True else np.where(live_f, end, st.free)
    start = np.maximum(free, st.b[:, sched.b_from[i]])
    ran = start + bwd[:, sched.b_vs[i]]
    done = ran + p2p * sched.b_sends[i]
    if live_b is True:  # every stage runs both: the steady state
        st.free = done
        st.f[:, :p], st.b[:, :p] = end, done
    else:
        st.free = np.where(live_b, done, free)
        st.f[:, :p] = end if live_f is True else np.where(live_f, end, st.f[:, :p])
        st.b[:, :p] = np.where(live_b, done, st.b[:, :p])
    if len(keep):
        stages, by_chunk = keep
        chunks = sched.b_chunk[i, stages]
        by_chunk[:, stages, chunks, 0], by_chunk[:, stages, chunks, 1] = (
            start[:, stages],
            ran[:, stages],
        )


def _last_backwards(sched: _Schedule, ends: range, mv: int) -> dict:
    """round -> the stages whose last backward of some chunk runs in it, the rounds `ends`
    covering every stage's last p v backwards (n from mv - pv to mv - 1; n relative to mv where
    mv is 0)."""
    p, v, a, d = sched.p, sched.v, sched.a, sched.d
    out: dict = {}
    for s in range(p):
        for n in range(mv - p * v if mv <= 0 else max(mv - p * v, 0), mv):
            r = a * n + p - 1 - s + d
            assert r in ends
            out.setdefault(r, []).append(s)
    return {r: np.array(sorted(set(stages))) for r, stages in out.items()}


def walk_rounds(p: int, v: int, m, fwd, bwd, p2p):
    """The walk of the interleaved schedule (plain 1F1B where v = 1) on every row: (end of each
    stage's last action, start and end of its last backward, (start, end) of each chunk's last
    backward), arrays of shapes (rows, p), (rows, p), (rows, p), (rows, p, v, 2):
    pipeline_time.walk's figures (module docstring). `m` (rows,) microbatches, each with
    fits(p, v, m); `fwd`, `bwd` (rows, p v) each virtual stage's forward and backward; `p2p`
    (rows,) one send."""
    m = np.asarray(m, dtype=np.int64)
    p2p = np.asarray(p2p, dtype=float)[:, None]
    ends, by_chunk = np.zeros((len(m), p)), np.zeros((len(m), p, v, 2))
    for count in np.unique(m[m < 2 * p]):  # a warm-up that depends on m: each round walked
        rows = np.flatnonzero(m == count)
        ends[rows], by_chunk[rows] = _whole(p, v, int(count), fwd[rows], bwd[rows], p2p[rows])
    rows = np.flatnonzero(m >= 2 * p)
    if len(rows):
        ends[rows], by_chunk[rows] = _settled(p, v, m[rows], fwd[rows], bwd[rows], p2p[rows])
    last = by_chunk[:, :, interleaved_action(p, v, p * v - 1, "B").chunk]  # n = m v - 1's
    return ends, last[..., 0], last[..., 1], by_chunk


def _whole(p, v, m, fwd, bwd, p2p):
    """Every round of rows sharing one microbatch count."""
    sched = _schedule(p, v, m)
    st = _State(len(fwd), p)
    stages, mv = np.arange(p), m * v
    rounds = range(sched.a * (mv - 1) + p + sched.d)  # to the last backward, stage 0's
    keep = _last_backwards(sched, rounds, mv)
    by_chunk = np.zeros((len(fwd), p, v, 2))
    for r in rounds:
        n_f, on_f, n_b, on_b = sched.numbers(r, stages)
        live_f, live_b = on_f & (n_f >= 0) & (n_f < mv), on_b & (n_b >= 0) & (n_b < mv)
        chosen = (keep[r], by_chunk) if r in keep else ()
        _round(sched, st, r, live_f, live_b, fwd, bwd, p2p, chosen)
    return st.free, by_chunk


def _settled(p, v, m, fwd, bwd, p2p):
    """Rows with m >= 2p: the rounds up to p v before the cool-down as an endless steady state
    (skipped once a row's blocks repeat), then the rest relative to the end, alike on every
    row."""
    sched = _schedule(p, v, 2 * p)
    pv, a, d, block, rows = p * v, sched.a, sched.d, sched.block, len(m)
    stages = np.arange(p)
    st = _State(rows, p)
    until = a * (m - p) * v  # the round after which every row walks its end: a (m v - p v)
    steady = p - 1 + d + block - 1  # a block ending here or later is all steady state
    kept = np.zeros((rows, 3 * p))
    todo = np.ones(rows, bool)
    before = None
    r = 0
    started = p - 1 + d  # every stage has run a forward and a backward
    while todo.any():
        if r >= started:  # the steady state: every stage on its rounds
            i = r % (a * pv)
            live_f, live_b = (True, True) if a == 1 else (sched.f_on[i], sched.b_on[i])
        else:
            n_f, on_f, n_b, on_b = sched.numbers(r, stages)
            live_f, live_b = on_f & (n_f >= 0), on_b & (n_b >= 0)
        _round(sched, st, r, live_f, live_b, fwd, bwd, p2p)
        if r % block == 0:
            now = st.stacked()
            here = todo & (until == r)
            kept[here], todo[here] = now[here], False
            if before is not None and r >= steady:
                moved = now - before
                step = moved[:, 0]
                spread = moved.max(axis=1) - moved.min(axis=1)
                settled = todo & (spread <= SETTLED * np.abs(step))
                blocks = (until - r) // block
                kept[settled] = now[settled] + (blocks[settled] * step[settled])[:, None]
                todo[settled] = False
            before = now
        r += 1
    st = _State(rows, p)
    st.take(kept)
    rounds = range(-a * pv + 1, p - a + d)  # relative to a m v, to stage 0's last backward
    keep = _last_backwards(sched, rounds, 0)
    by_chunk = np.zeros((rows, p, v, 2))
    mv = (m * v)[:, None]
    for r in rounds:
        n_f, on_f, n_b, on_b = sched.numbers(r, stages)
        live_f = on_f & (n_f < 0) & (n_f + mv >= 0)
        live_b = on_b & (n_b < 0) & (n_b + mv >= 0)
        chosen = (keep[r], by_chunk) if r in keep else ()
        _round(sched, st, r, live_f, live_b, fwd, bwd, p2p, chosen)
    return st.free, by_chunk
