"""The closed form over columns: closed_form.estimate of many configurations at once, equal to it
bit for bit, for a screening tier that evaluates tens of thousands of layouts a second.

The configurations come as columns of one base workload (workload_columns.py). What the scalar
closed form memoises (a layer's costs and bytes, the stages' terms, the in-flight microbatches,
the FLOPs) is taken once per distinct key, from a representative row, by the same scalar
functions (sim/column_tables.py). Everything after is array arithmetic over the rows: the
chunks' costs, the stages' work, each stage's end (the 1F1B formula, pipeline_time.pipeline_s
and stage_finish_s; the rounds of sim/rounds.py and GPipe's sim/gpipe.py over the rows they
walk: sim/pipeline_columns.py), gradient reduction and step (stage_done_s, param_gather), the
bubble, and the peak HBM of the stages that can hold it (memory.peak_bytes), each in the scalar
code's order of floating-point operations: numpy's elementwise +, -, *, / and maximum on
float64 round as Python's floats do, and every sum is taken term by term, left to right, as the
scalar code takes it (never np.sum's pairwise sum).

Rows this form does not cover take the scalar closed form, one by one: schedules that need the
walk (zero-bubble, V), uneven or per-stage splits, a stack of differing layers, MTP, experts,
FSDP, partial recompute, kept pipeline outputs, per-chunk gradient or parameter-gather windows
(interleaving with overlapped reductions over more than one rank).
"""

from dataclasses import dataclass

import numpy as np

from simsp.model import stack
from simsp.model.flops import utilization
from simsp.sim.closed_form import Estimate, estimate
from simsp.sim.closed_form import clear_caches as clear_scalar_caches
from simsp.sim.column_tables import clear as clear_tables
from simsp.sim.column_tables import distinct_costs, triples
from simsp.sim.memory import CLASSIC
from simsp.sim.pipeline_columns import clear as clear_walks
from simsp.sim.pipeline_columns import pipeline_ends_columns
from simsp.sim.plan import check_numerics
from simsp.sim.workload_columns import NAMES, WorkloadColumns, from_workloads
from simsp.spec.hardware import HardwareSpec
from simsp.spec.workload import Workload

_CLASSIC = np.array([s in CLASSIC for s in NAMES["schedule"]])
_INTERLEAVED = NAMES["schedule"].index("interleaved")


@dataclass(frozen=True, eq=False)
class EstimateColumns:
    """closed_form.Estimate's figures for many configurations, one array each, row by row."""

    iteration_time_s: np.ndarray
    mfu: np.ndarray
    hfu: np.ndarray
    tokens_per_s: np.ndarray
    peak_bytes: np.ndarray
    capacity_bytes: np.ndarray
    bubble_s: np.ndarray
    reserve_bytes: np.ndarray
    vectorised: np.ndarray
    """Whether each row took the array path (else the scalar closed form)."""

    def __len__(self) -> int:
        return len(self.iteration_time_s)

    @property
    def fits(self) -> np.ndarray:
        """Estimate.fits of each row: the peak and the reserve within the capacity."""
        return self.peak_bytes + self.reserve_bytes <= self.capacity_bytes

    def row(self, i: int) -> Estimate:
        """Row i as the scalar closed form's Estimate."""
        return Estimate(
            iteration_time_s=float(self.iteration_time_s[i]),
            mfu=float(self.mfu[i]),
            hfu=float(self.hfu[i]),
            tokens_per_s=float(self.tokens_per_s[i]),
            peak_bytes=float(self.peak_bytes[i]),
            capacity_bytes=int(self.capacity_bytes[i]),
            bubble_s=float(self.bubble_s[i]),
            reserve_bytes=int(self.reserve_bytes[i]),
        )

    def rows(self) -> list[Estimate]:
        """Every row as an Estimate."""
        return [self.row(i) for i in range(len(self))]


_FLOATS = ("iteration_time_s", "mfu", "hfu", "tokens_per_s", "peak_bytes", "bubble_s")
_INTS = ("capacity_bytes", "reserve_bytes")


def _empty(n: int) -> dict:
    out = {f: np.zeros(n) for f in _FLOATS}
    out.update({f: np.zeros(n, dtype=np.int64) for f in _INTS})
    out["vectorised"] = np.zeros(n, dtype=bool)
    return out


def base_vectorisable(base: Workload) -> bool:
    """Whether the array path covers this base's configurations at all: one kind of layer, no
    MTP, experts or FSDP, even stages that all recompute alike, pipeline outputs freed."""
    m, par = base.model, base.parallel
    return (
        stack.uniform(m)
        and not m.mtp_layers
        and not m.experts
        and not par.fsdp
        and not par.uneven
        and not par.recompute_per_stage
        and not par.recompute_num_layers
        and par.deallocate_pipeline_outputs
    )


def vectorisable(cols: WorkloadColumns) -> np.ndarray:
    """The rows the array path covers: those of a covered base on a classic schedule, without
    a gradient reduction or parameter all-gather timed per model chunk."""
    if not base_vectorisable(cols.base):
        return np.zeros(len(cols), dtype=bool)
    par = cols.base.parallel
    covered = _CLASSIC[cols.schedule]
    per_chunk = cols.chunks() > 1
    if par.overlap_grad_reduce:  # plan.stage_costs's dp_chunks
        covered &= ~(per_chunk & (cols.dp * cols.cp > 1))
    if par.distributed_optimizer and par.overlap_param_gather:  # param_gather's per_chunk
        covered &= ~(per_chunk & (cols.schedule == _INTERLEAVED))
    return covered


def estimate_columns(cols: WorkloadColumns, hw: HardwareSpec) -> EstimateColumns:
    """closed_form.estimate of every row of `cols` on `hw`, equal to it bit for bit: the rows
    `vectorisable` covers as arrays, the others by the scalar closed form."""
    n = len(cols)
    out = _empty(n)
    out["capacity_bytes"][:] = hw.hbm_bytes
    fast = vectorisable(cols)
    if fast.any():
        rows = np.flatnonzero(fast)
        sub = cols if len(rows) == n else cols.take(rows)
        check_numerics(sub.base, hw)
        for field, values in _arrays(sub, hw).items():
            out[field][rows] = values
        out["vectorised"][rows] = True
    for i in np.flatnonzero(~fast):
        e = estimate(cols.workload(int(i)), hw)
        for field in _FLOATS + _INTS:
            out[field][i] = getattr(e, field)
    return EstimateColumns(**out)


def estimate_many(workloads, hardware) -> EstimateColumns:
    """closed_form.estimate of each workload, in order, on `hardware` (one HardwareSpec, or one
    for each workload), through columns of the workloads that differ only in their columns'
    settings (workload_columns.from_workloads)."""
    n = len(workloads)
    hws = [hardware] * n if isinstance(hardware, HardwareSpec) else list(hardware)
    out = _empty(n)
    by_hw: dict = {}
    for i, hw in enumerate(hws):
        by_hw.setdefault(hw, []).append(i)
    for hw, positions in by_hw.items():
        for cols, rows in from_workloads([workloads[i] for i in positions]):
            found = estimate_columns(cols, hw)
            at = np.asarray(positions)[rows]
            for field in out:
                out[field][at] = getattr(found, field)
    return EstimateColumns(**out)


def clear_caches() -> None:
    """Forget every memoised cost, the scalar closed form's with the tables here."""
    clear_tables()
    clear_walks()
    clear_scalar_caches()


# ---------------------------------------------------------------------------- the arithmetic
def _by_stage(table: dict, name: str, s: int, p: np.ndarray) -> np.ndarray:
    """stage_terms.by_stage's value of stage s on each row: the first's, the last's or a middle
    one's."""
    return np.where(
        s == 0,
        table[name + "_0"],
        np.where(s == p - 1, table[name + "_last"], table[name + "_mid"]),
    )


def _arrays(cols: WorkloadColumns, hw: HardwareSpec) -> dict:
    """Estimate's figures of every row of covered columns, as the scalar closed form computes
    each (the functions named on each step)."""
    base, par = cols.base, cols.base.parallel
    lt, sg, counts_of, model_f, hardware_f = distinct_costs(cols, hw)
    p, v, m = cols.pp, cols.chunks(), cols.microbatches()
    n_rows = len(cols)
    pv = p * v
    last = pv - 1
    layers = base.model.layers // pv  # chunk_costs: every chunk alike
    p2p = np.where(p > 1, lt["p2p"], 0.0)

    # chunk_costs: n layers, the amax reductions, the embedding on the first virtual
    # stage and the output layer on the last
    fwd = layers * lt["layer_f"] + sg["amax_f"]
    bwd = layers * lt["layer_b"] + sg["amax_b"]
    single = pv == 1
    f_first = fwd + (lt["emb_f"] + np.where(single, lt["out_f"], 0.0))
    b_first = bwd + (lt["emb_b"] + np.where(single, lt["out_b"], 0.0))
    f_mid, b_mid = fwd + (0.0 + 0.0), bwd + (0.0 + 0.0)
    f_last, b_last = fwd + (0.0 + lt["out_f"]), bwd + (0.0 + lt["out_b"])

    def at(vs, first, mid, final):
        return np.where(vs == 0, first, np.where(vs == last, final, mid))

    def work(stage):  # pipeline_time.stage_work_s of one stage
        total = np.zeros(n_rows)
        for k in range(int(v.max())):
            vs = stage + k * p
            sends = (vs < last).astype(np.int64) + (vs > 0).astype(np.int64)
            term = (at(vs, f_first, f_mid, f_last) + at(vs, b_first, b_mid, b_last)) + sends * p2p
            total = np.where(k < v, total + term, total)
        return total

    work_0 = work(0)
    most = np.maximum(work_0, np.where(p > 2, work(np.minimum(1, p - 1)), work_0))
    most = np.maximum(most, np.where(p > 1, work(p - 1), work_0))

    # pipeline_time.pipeline_s
    chunk_sum = f_first + b_first
    middle = f_mid + b_mid
    for j in range(1, int(pv.max()) - 1):
        chunk_sum = np.where(j < last, chunk_sum + middle, chunk_sum)
    chunk_sum = np.where(pv > 1, chunk_sum + (f_last + b_last), chunk_sum)
    end = (m - 1) * most + (p + v - 1) / (p * v) * chunk_sum + 2 * (p - 1) * p2p
    walked, walked_ends = pipeline_ends_columns(
        cols.schedule, p, v, m, p2p, (f_first, f_mid, f_last), (b_first, b_mid, b_last)
    )

    # pipeline_time.stage_finish_s, stage_done_s; stage_terms.param_gather; the optimizer step
    share = hw.calibration.collective_sm_share
    overlap, gather = par.overlap_grad_reduce, par.distributed_optimizer
    prefetch = par.overlap_param_gather
    warmup = np.where(v == 1, 1, np.minimum(p, m))
    fill = np.zeros(n_rows)
    done_max = step_max = np.full(n_rows, -np.inf)
    for s in range(int(p.max())):
        live = s < p
        if s > 0:
            end = end - (at(s - 1, b_first, b_mid, b_last) + (p2p if s > 1 else 0.0))
        b_s = at(s, b_first, b_mid, b_last)
        start = (end - (p2p if s > 0 else 0.0)) - b_s
        w_end = start + b_s
        end_s = np.where(walked, walked_ends[0][:, s], end)  # pipeline_time.pipeline_ends
        start = np.where(walked, walked_ends[1][:, s], start)
        w_end = np.where(walked, walked_ends[2][:, s], w_end)

        dp, k = _by_stage(sg, "dp", s, p), _by_stage(sg, "buckets", s, p)
        if overlap:  # gradient_sync.chunked_gradients_done_s, one window
            t = np.maximum(np.maximum(end_s, w_end + dp / k), start + (w_end - start) / k + dp)
            hidden = np.maximum(0.0, dp - np.maximum(0.0, t - end_s))
            done = np.maximum(t, end_s + share * hidden)
        else:
            done = end_s + dp
        done = np.where(dp > 0, done, end_s)
        synced = (sg["sync"] > 0) & ((s == 0) | (s == p - 1))
        done = np.where(synced, done + sg["sync"], done)
        if gather:  # gradient_sync.param_gather_exposed_s, gather_beside_forwards_s
            total = _by_stage(sg, "gather", s, p)
            f_s = at(s, f_first, f_mid, f_last)
            if prefetch:
                first = total / k
                exposed = np.maximum(
                    0.0, first + np.maximum(0.0, total - first - f_s * warmup) - fill
                )
                exposed = np.where(total <= 0, total, exposed)
            else:
                exposed = total
            gathered = exposed + share * np.maximum(0.0, total - exposed - fill)
            fill = fill + (f_s + p2p)
        else:
            gathered = 0.0
        step = _by_stage(sg, "step", s, p) + gathered
        if s == 0:
            done_0, end_0, step_0 = done, end_s, step
        done_max = np.where(live, np.maximum(done_max, done), done_max)
        step_max = np.where(live, np.maximum(step_max, step), step_max)

    t = done_max + step_max  # closed_form.estimate
    busy = m * work_0  # pipeline_time.stage_busy_s
    bubble = t - busy - (done_0 - end_0) - step_0

    # memory.peak_bytes: stages 0, min(1, p - 1) and p - 1
    chunk = layers * lt["act_layer"]
    gpipe = cols.schedule == NAMES["schedule"].index("gpipe")
    peak = None
    for stage, static, count in zip(
        (np.zeros_like(p), np.minimum(1, p - 1), p - 1),
        (sg["static_0"], sg["static_1"], sg["static_last"]),
        counts_of.astype(np.int64),
        strict=True,
    ):  # memory._held_activation_bytes and stage_activation_bytes
        first = np.where(stage == 0, lt["act_emb"], 0.0)
        final = np.where(stage == p - 1, lt["act_out"], 0.0)
        last_count = np.where(gpipe, count, 1)  # 1F1B's last stage holds one microbatch
        held = count * (chunk + first) + last_count * final
        walked = (v > 1) & ((first != 0) | (final != 0))
        if walked.any():
            rows = np.flatnonzero(walked)
            tri = triples(p[rows], m[rows], v[rows], stage[rows])
            each = (
                tri[:, :, 0] * chunk[rows, None]
                + tri[:, :, 1] * first[rows, None]
                + tri[:, :, 2] * final[rows, None]
            )
            held[rows] = each.max(axis=1)
        act = np.where(stage == p - 1, held + lt["loss_work"], held)
        here = static + act
        peak = here if peak is None else np.maximum(peak, here)

    gpus, peak_flops = cols.gpus(), hw.gpu.peak_tflops
    reserve = hw.gpu.hbm_reserve_gib * 1024**3 + hw.gpu.allocator_reserve * peak
    return {  # utilization is plain arithmetic: it takes the arrays as they are
        "iteration_time_s": t,
        "mfu": utilization(model_f, t, gpus, peak_flops),
        "hfu": utilization(hardware_f, t, gpus, peak_flops),
        "tokens_per_s": cols.global_batch * base.model.seq_len / t,
        "peak_bytes": peak,
        "bubble_s": bubble,
        # HardwareSpec.reserve_bytes: rint rounds half to even, as round() does
        "reserve_bytes": np.rint(reserve).astype(np.int64),
    }
