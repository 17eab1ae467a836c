"""What the closed form over columns takes once per distinct key, from a representative row, by
the scalar functions (closed_form_columns.py does the rest as arrays): one layer's costs and the
end stages' (closed_form.MEMOISED) with the bytes a layer and the end stages keep, per (tp, cp,
SP, recompute, micro batch, placement); the stages' DP reduction, optimizer step, parameter
all-gather and static HBM (sim/stage_terms.py, memory.static_bytes) per (tp, cp, pp, dp,
schedule, chunks); the in-flight microbatches of each stage (memory.in_flight_chunks,
interleaved_counts) per (schedule, pp, microbatches, chunks); the model and hardware FLOPs per
(global batch, tp, recompute). Memoised on the base workload, the hardware and the key, so a
screen run again costs nothing twice."""

from functools import partial

import numpy as np

from simsp.cost import cost_model
from simsp.cost import stage_time as st
from simsp.model import saved_bytes
from simsp.model.flops import hardware_flops, model_flops
from simsp.sim import memory
from simsp.sim.closed_form import MEMOISED
from simsp.sim.stage_terms import param_gathers, stage_terms
from simsp.sim.workload_columns import NAMES, WorkloadColumns, groups
from simsp.spec.layout import LAYER_GROUPS, layout

_MAX_TABLE = 1 << 17
"""Memoised keys kept before the tables are emptied (a bound on a long process's memory)."""
_TABLES: dict = {}


def clear() -> None:
    """Forget every memoised row."""
    _TABLES.clear()


def _memo(kind: str, cols: WorkloadColumns, hw, columns: tuple, value) -> tuple[list, np.ndarray]:
    """(value(row) for each distinct combination of `columns`' values, from its first row; each
    row's index into them), memoised on the base, the hardware and the values."""
    first, inverse = groups(*columns)
    if sum(map(len, _TABLES.values())) > _MAX_TABLE:
        _TABLES.clear()
    memo = _TABLES.setdefault((kind, cols.base, hw), {})
    found = []
    for i, key in zip(first.tolist(), np.stack(columns, axis=1)[first].tolist(), strict=True):
        key = tuple(key)
        if key not in memo:
            memo[key] = value(i)
        found.append(memo[key])
    return found, inverse


def _table(kind: str, cols: WorkloadColumns, hw, columns: tuple, value) -> np.ndarray:
    """_memo's values (tuples of numbers) as an array, one row per row of cols."""
    found, inverse = _memo(kind, cols, hw, columns, value)
    return np.asarray(found)[inverse]


def _placements(cols: WorkloadColumns, hw) -> np.ndarray:
    """An index of each row's layer placement (the groups a layer's collectives run over and
    the pipeline neighbours' node: closed_form's memo key)."""

    def placement(i: int):
        w = cols.workload(i)
        return layout(w.parallel, hw.node.gpus).placement(*LAYER_GROUPS)

    found, inverse = _memo("placement", cols, hw, (cols.tp, cols.cp, cols.pp, cols.dp), placement)
    ids: dict = {}
    return np.asarray([ids.setdefault(x, len(ids)) for x in found], dtype=np.int64)[inverse]


LAYER_FIELDS = (
    "layer_f",
    "layer_b",
    "emb_f",
    "emb_b",
    "out_f",
    "out_b",
    "p2p",
    "act_layer",
    "act_emb",
    "act_out",
    "loss_work",
)


def _layer_row(cols: WorkloadColumns, hw, i: int) -> tuple:
    """One layer's forward and backward, the end stages' and a send (closed_form.MEMOISED),
    the bytes a layer and the end stages keep, and the loss's working set."""
    w = cols.workload(i)
    cost = cost_model(hw)
    lay = layout(w.parallel, hw.node.gpus)
    lt, ends = MEMOISED.layer(w, cost, lay), MEMOISED.ends(w, cost, lay)
    par, b, num = w.parallel, w.training.micro_batch, w.training.numerics
    kept = saved_bytes.activation_per_layer_bytes(w.model, par, b, num)
    emb, out = saved_bytes.end_stage_bytes(w.model, par, b, w.training.knob("cross_entropy"))
    return (lt.forward_s, lt.backward_s, *ends[:5], kept, emb, out, memory.loss_working_bytes(w))


STAGE_FIELDS = (
    "dp_0",
    "dp_mid",
    "dp_last",
    "buckets_0",
    "buckets_mid",
    "buckets_last",
    "step_0",
    "step_mid",
    "step_last",
    "gather_0",
    "gather_mid",
    "gather_last",
    "sync",
    "static_0",
    "static_1",
    "static_last",
    "amax_f",
    "amax_b",
)


def _stage_row(cols: WorkloadColumns, hw, i: int) -> tuple:
    """The first, a middle and the last stage's DP reduction, buckets, optimizer step and whole
    parameter all-gather (sim/stage_terms.py), the embedding sync, the static HBM of stages 0,
    min(1, p - 1) and p - 1, and a chunk's amax reductions."""
    w = cols.workload(i)
    cost = cost_model(hw)
    lay = layout(w.parallel, hw.node.gpus)
    terms = stage_terms(w, cost, lay)
    p = w.parallel.pp
    gathers = (
        param_gathers(w, cost, lay, terms.params, terms.experts)
        if w.parallel.distributed_optimizer
        else (0.0,) * p
    )
    mid = 1 if p > 2 else 0
    amax = st.amax_reduction_s(w, cost, lay, w.layers_per_chunk)
    return (
        *(terms.dp_s[s] for s in (0, mid, p - 1)),
        *(terms.buckets[s] for s in (0, mid, p - 1)),
        *(terms.optimizer_s[s] for s in (0, mid, p - 1)),
        *(gathers[s] for s in (0, mid, p - 1)),
        terms.embedding_sync_s,
        *(memory.static_bytes(w, s) for s in (0, min(1, p - 1), p - 1)),
        *amax,
    )


def _counts_row(schedule: int, p: int, m: int, v: int) -> tuple:
    """Chunk-microbatches stages 0, min(1, p - 1) and p - 1 hold at their peak
    (memory.in_flight_chunks)."""
    name = NAMES["schedule"][schedule]
    return tuple(memory.in_flight_chunks(name, p, m, v, s) for s in (0, min(1, p - 1), p - 1))


def triples(p: np.ndarray, m: np.ndarray, v: np.ndarray, stage: np.ndarray) -> np.ndarray:
    """memory.interleaved_counts of each row's stage, padded to one length by repeating the
    first triple: an array [rows, triples, 3]."""
    first, inverse = groups(p, m, v, stage)
    found = []
    for i in first.tolist():
        pi, mi = int(p[i]), int(m[i])
        found.append(
            memory.interleaved_counts(
                pi, memory.steady_microbatches(pi, mi), int(v[i]), int(stage[i])
            )
        )
    width = max(len(t) for t in found)
    padded = np.array([list(t) + [t[0]] * (width - len(t)) for t in found], dtype=np.int64)
    return padded[inverse]


def _flops_row(cols: WorkloadColumns, i: int) -> tuple:
    """Model and hardware FLOPs of an iteration (closed_form.estimate's)."""
    model, gb, tp = cols.base.model, int(cols.global_batch[i]), int(cols.tp[i])
    recompute = NAMES["recompute"][cols.recompute[i]]
    modules = cols.base.parallel.recompute_modules
    return (model_flops(model, gb, tp), hardware_flops(model, gb, recompute, tp, None, modules))


def distinct_costs(
    cols: WorkloadColumns, hw
) -> tuple[dict, dict, np.ndarray, np.ndarray, np.ndarray]:
    """Each row's layer costs (LAYER_FIELDS), stage terms (STAGE_FIELDS), chunk-microbatches held
    at the peak by stages 0, min(1, p - 1) and p - 1 (3 rows), and model and hardware FLOPs,
    each taken once per distinct key."""
    par = cols.base.parallel
    placement = _placements(cols, hw)
    lay_cols = (cols.tp, cols.cp, cols.sequence_parallel, cols.recompute, cols.micro_batch)
    layer_table = _table("layer", cols, hw, (*lay_cols, placement), partial(_layer_row, cols, hw))
    lt = dict(zip(LAYER_FIELDS, layer_table.T, strict=True))
    stage_cols = (cols.tp, cols.cp, cols.pp, cols.dp, cols.schedule, cols.virtual_stages)
    if par.cached_dummy_wgrads:  # their shapes come from the layer's op list
        stage_cols += (cols.micro_batch, cols.sequence_parallel, cols.recompute)
    stage_table = _table("stage", cols, hw, stage_cols, partial(_stage_row, cols, hw))
    sg = dict(zip(STAGE_FIELDS, stage_table.T, strict=True))
    p, v, m = cols.pp, cols.chunks(), cols.microbatches()
    count_cols = (cols.schedule, p, m, v)
    counts_of = _table(
        "counts", cols, hw, count_cols, lambda i: _counts_row(*(int(c[i]) for c in count_cols))
    ).T
    flops = (cols.global_batch, cols.tp, cols.recompute)
    model_f, hardware_f = _table("flops", cols, hw, flops, partial(_flops_row, cols)).T

    return lt, sg, counts_of, model_f, hardware_f
