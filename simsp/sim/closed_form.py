"""Closed-form iteration time and HBM: the fast tier of sweeps, equal to the engine to 1e-12.

Time. The same chunk costs the engine replays (plan.py, from the shared cost model), and the
pipeline's ends found without an event loop, by the rules the engine follows (sim/walk.py),
one way per schedule (sim/pipeline_time.py: the 1F1B formula where it is exact, rounds,
GPipe's closed form, the walk).

Memory. memory.py itself: its per-layer bytes and the schedule walk of interleaved end stages
are cached there, and the peak is taken over the stages that can hold it.

Everything costly (one layer's op-by-op time, the embedding and logits, collectives by size) is
memoised on hashable frozen specs, keyed only by what it depends on, so a sweep over pp, dp and
the schedule costs each layer variant once.
"""

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

from simsp.cost import cost_model
from simsp.cost import stage_time as st
from simsp.cost.layer_time import layer_time
from simsp.model import layer as L
from simsp.model import stack
from simsp.model.flops import hardware_flops, model_flops, utilization
from simsp.sim import memory
from simsp.sim.pipeline_time import bubble_s, pipeline_ends, stage_done_s
from simsp.sim.plan import Parts, StageCosts, stage_costs
from simsp.spec.hardware import HardwareSpec
from simsp.spec.layout import LAYER_GROUPS, layout
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.workload import TrainingSpec, Workload

_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Estimate:
    """One configuration evaluated in closed form."""

    iteration_time_s: float
    mfu: float
    hfu: float
    tokens_per_s: float
    peak_bytes: float
    capacity_bytes: int
    bubble_s: float = 0.0
    """Stage 0's idle time: the iteration less its passes, sends, exposed DP time and optimizer
    step (the event tier's breakdown()['bubble_s'])."""
    reserve_bytes: int = 0
    """What must stay free beside the peak (HardwareSpec.reserve_bytes)."""

    @property
    def fits(self) -> bool:
        """Whether the most loaded stage fits in HBM with the reserve left free."""
        return self.peak_bytes + self.reserve_bytes <= self.capacity_bytes


@lru_cache(maxsize=_CACHE_SIZE)
def _layer(model, layer_parallel, micro_batch, hw, place, numerics):
    return layer_time(
        L.build_layer(model, layer_parallel, micro_batch, numerics),
        cost_model(hw),
        layer_parallel,
        place,
    )


@lru_cache(maxsize=_CACHE_SIZE)
def _ends(model, layer_parallel, micro_batch, hw, place, numerics):
    w, cost = _canonical(model, layer_parallel, micro_batch, numerics), cost_model(hw)
    return (*st.embedding_s(w, cost, place), *st.output_s(w, cost, place), st.p2p_s(w, cost, place))


def _canonical(
    model: ModelSpec, layer_parallel: ParallelSpec, micro_batch: int, numerics
) -> Workload:
    """A one-stage workload with just what a layer's and the end stages' costs depend on."""
    training = TrainingSpec(
        micro_batch,
        micro_batch,
        cross_entropy=numerics.cross_entropy,
        elementwise=numerics.elementwise,
    )
    return Workload("canonical", model, training, layer_parallel)


def _memo_key(w: Workload, cost, lay) -> tuple:
    """What a layer's and the end stages' costs depend on, hashable."""
    par = w.parallel.for_layer()
    return (w.model, par, w.training.micro_batch, cost.hw, lay.placement(*LAYER_GROUPS))


def _layer_key(w: Workload, cost, lay) -> tuple:
    """What a layer's cost depends on: the end stages' key and the run's precision."""
    return (*_memo_key(w, cost, lay), w.training.numerics)


MEMOISED = Parts(
    layer=lambda w, cost, lay: _layer(*_layer_key(w, cost, lay)),
    ends=lambda w, cost, lay: _ends(*_memo_key(w, cost, lay), w.training.numerics),
)
"""plan.stage_costs's pieces, memoised on the model, the layer's parallel settings, the micro
batch, the hardware and the placement, and the layer's numerics or the end stages' loss kernel:
a sweep over pp, dp and schedules costs each layer once."""


def costs(w: Workload, hw: HardwareSpec) -> StageCosts:
    """The plan's costs without its schedule: plan.stage_costs with memoised pieces (equal to
    build_plan's to the bit)."""
    return stage_costs(w, cost_model(hw), MEMOISED)[0]


def estimate(w: Workload, hw: HardwareSpec) -> Estimate:
    """Closed-form time, MFU/HFU and peak HBM of one validated workload on one machine."""
    c = costs(w, hw)
    ends = pipeline_ends(c)
    done = stage_done_s(c, ends)
    t = max(done) + max(c.step_s)
    gb, gpus, peak_flops = w.training.global_batch, w.parallel.gpus, hw.gpu.peak_tflops
    peak = memory.peak_bytes(w)
    return Estimate(
        iteration_time_s=t,
        mfu=utilization(model_flops(w.model, gb, w.parallel.tp), t, gpus, peak_flops),
        hfu=utilization(
            hardware_flops(
                w.model,
                gb,
                w.parallel.recompute,
                w.parallel.tp,
                w.recomputed_layers,
                w.parallel.recompute_modules,
            ),
            t,
            gpus,
            peak_flops,
        ),
        tokens_per_s=gb * w.model.seq_len / t,
        peak_bytes=peak,
        capacity_bytes=hw.hbm_bytes,
        bubble_s=bubble_s(c, ends, done),
        reserve_bytes=hw.reserve_bytes(peak),
    )


def floor_s(w: Workload, hw: HardwareSpec) -> float:
    """A lower bound of estimate(w, hw).iteration_time_s, for a search to skip what cannot win:
    the most loaded stage's layer passes, m microbatches of them (a forward, and the cheaper of
    a backward or its input and weight halves), nothing else. Every other term of the closed
    form (the end stages' embedding and loss, sends, the bubble, exposed DP, the optimizer)
    adds time. Where the layers differ (a mixed stack) every layer is taken at the cheapest
    kind's time; 0 where only some layers recompute."""
    par = w.parallel
    if par.recompute_num_layers or par.recompute_per_stage:
        return 0.0
    cost, lay = cost_model(hw), layout(par, hw.node.gpus)
    kinds = (w.model,) if stack.uniform(w.model) else tuple(set(stack.kinds(w.model)))
    per_layer = min(  # an overlapped pair's halves take no longer than the passes alone
        min(lt.forward_s, lt.paired_forward_s)
        + min(lt.backward_s, lt.paired_backward_s, lt.input_s + lt.weight_s)
        for lt in (MEMOISED.layer(dataclasses.replace(w, model=k), cost, lay) for k in kinds)
    )  # where the layers differ, the cheapest kind's
    most = max(par.stage_layers(w.model.layers, s) for s in range(par.pp))
    return w.microbatches * most * per_layer


def clear_caches() -> None:
    """Forget every memoised cost (for benchmarks that measure a cold start)."""
    from simsp.model import flops, params, saved_bytes

    for f in (
        _layer,
        _ends,
        memory.interleaved_counts,
        memory.peak_bytes,
        saved_bytes._per_layer_bytes,
        saved_bytes._end_stage_bytes,
        params.layer_weights,
        params._layer_params,
        params._stage_params,
        params._chunk_params,
        params._linear_params,
        flops._layer_forward,
    ):
        f.cache_clear()
