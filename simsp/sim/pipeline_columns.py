"""pipeline_time.pipeline_ends over columns, for the rows the closed form walks: the interleaved
schedule and 1F1B where its formula is not exact in rounds (sim/rounds.py, per (p, v)), GPipe
in closed form (sim/gpipe.py, per p); each row's chunks its first, middle and last chunk's
(every chunk between alike, as the rows closed_form_columns covers are). Memoised per distinct
row, as the costs are: a screen run again walks nothing. Equal to the scalar closed form bit
for bit."""

import numpy as np

from simsp.sim.chunk_costs import ChunkCost
from simsp.sim.gpipe import gpipe_ends
from simsp.sim.pipeline_time import walk
from simsp.sim.plan import StageCosts
from simsp.sim.rounds import fits as rounds_fit
from simsp.sim.rounds import walk_rounds
from simsp.sim.schedule import build
from simsp.sim.workload_columns import NAMES

_INTERLEAVED = NAMES["schedule"].index("interleaved")
_GPIPE = NAMES["schedule"].index("gpipe")
_MAX_WALKS = 1 << 15
"""Rows memoised at most (about 1 KiB each at p = 32); past it the memo starts again."""
_WALKS: dict = {}


def clear() -> None:
    """Forget every memoised walk (for benchmarks that measure a cold start)."""
    _WALKS.clear()


def pipeline_ends_columns(schedule, p, v, m, p2p, fwd, bwd) -> tuple:
    """pipeline_time.pipeline_ends of the rows it walks (the interleaved schedule, GPipe, and
    1F1B where its formula is not exact: _groups), from each row's first, middle and last
    chunk's forward `fwd` and backward `bwd`: (which rows, (each stage's end, the start and
    end of its last backward), each (rows, max p))."""
    rows, width = len(p), int(p.max())
    ends = np.zeros((3, rows, width))
    interleaved = (schedule == _INTERLEAVED) & (v > 1) & (p > 1)
    (f_first, f_mid, f_last), (b_first, b_mid, b_last) = fwd, bwd
    middle = (p == 2) | ((f_mid <= f_first) & (b_mid <= b_first))  # pipeline_time.formula_exact
    inexact = (v == 1) & (p > 1) & (schedule != _GPIPE)
    inexact &= ~(middle & (f_first <= f_last) & (b_first <= b_last))
    walked = interleaved | ((schedule == _GPIPE) & (p > 1)) | inexact
    if not walked.any():
        return walked, ends
    if len(_WALKS) > _MAX_WALKS:
        _WALKS.clear()
    index = np.flatnonzero(walked)
    inputs = np.stack((schedule, p, v, m, p2p, *fwd, *bwd), axis=1)[index]
    keys = [row.tobytes() for row in inputs]
    first: dict = {}  # a row not walked yet: the first with its inputs
    for i, key in zip(index.tolist(), keys, strict=True):
        if key not in _WALKS:
            first.setdefault(key, i)
    key_of = {i: key for key, i in first.items()}
    todo = np.array(sorted(key_of), dtype=np.int64)
    for group, found in _groups(todo, interleaved, inexact, schedule, p, v, m, p2p, fwd, bwd):
        for i, row in zip(group.tolist(), np.stack(found, axis=1), strict=True):
            _WALKS[key_of[i]] = row
    for i, key in zip(index.tolist(), keys, strict=True):
        row = _WALKS[key]
        ends[:, i, : row.shape[1]] = row
    return walked, ends


def _groups(todo, interleaved, inexact, schedule, p, v, m, p2p, fwd, bwd):
    """(rows, (end, start, end of the last backward) of each) per group of rows walked alike:
    the interleaved schedule and 1F1B where its formula is not exact in rounds, per (p, v);
    GPipe per p; 1F1B whose lists the rounds would not fit (rounds.fits: none is known) one
    row at a time by pipeline_time.walk."""
    pick = np.zeros(len(p), bool)
    pick[todo] = True
    fit = np.zeros(len(p), bool)
    for i in np.flatnonzero(pick & inexact):
        fit[i] = rounds_fit(int(p[i]), 1, int(m[i]))
    in_rounds = pick & (interleaved | (inexact & fit))
    for i in np.flatnonzero(pick & inexact & ~fit):
        pp, mm, name = int(p[i]), int(m[i]), NAMES["schedule"][int(schedule[i])]
        f, b = _by_virtual_stage(pp, [i], fwd)[0], _by_virtual_stage(pp, [i], bwd)[0]
        chunks = tuple(ChunkCost(x, y, 0.0, 0.0, 0.0, 0.0) for x, y in zip(f, b, strict=True))
        zeros = (0.0,) * pp
        costs = StageCosts(
            pp, 1, mm, chunks, float(p2p[i]), zeros, False, (1,) * pp, 0.0, zeros, schedule=name
        )
        found = walk(costs, build(name, pp, mm, 1))
        yield np.array([i]), tuple(np.array([[x[k] for x in found]]) for k in range(3))
    kinds = zip(p[in_rounds].tolist(), v[in_rounds].tolist(), strict=True)
    for pp, vv in sorted(set(kinds)):
        rows = np.flatnonzero(in_rounds & (p == pp) & (v == vv))
        f, b = _by_virtual_stage(pp * vv, rows, fwd), _by_virtual_stage(pp * vv, rows, bwd)
        yield rows, walk_rounds(pp, vv, m[rows], f, b, p2p[rows])[:3]
    gpipe = pick & ~interleaved & ~inexact
    for pp in sorted(set(p[gpipe].tolist())):
        rows = np.flatnonzero(gpipe & (p == pp))
        f, b = _by_virtual_stage(pp, rows, fwd), _by_virtual_stage(pp, rows, bwd)
        yield rows, gpipe_ends(f, b, p2p[rows], m[rows])


def _by_virtual_stage(pv: int, rows, chunk) -> np.ndarray:
    """(rows, pv): each virtual stage's time from its rows' (first, middle, last) chunk's."""
    first, middle, last = (x[rows] for x in chunk)
    out = np.repeat(middle[:, None], pv, axis=1)
    out[:, 0], out[:, pv - 1] = first, last
    return out
