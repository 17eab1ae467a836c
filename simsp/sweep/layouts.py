"""The layouts a planner searches: every parallel layout of one model on N GPUs, as grid points.

A layout is the settings `simsp plan` chooses: tp, cp, pp, the schedule and its virtual stages,
dp (what the GPUs leave), the micro batch, recompute, SP, the distributed optimizer or FSDP,
and for a mixture of experts ep and etp. Each key's candidates follow from the model and the
machine; the workload's rules (spec/rules/) then drop what is not valid, as in any sweep:

* tp: powers of two within one NVLink domain (node.gpus), as Megatron-Core places TP first in
  its rank order so that it stays on NVLink (parallel_state.py, order tp-cp-ep-dp-pp);
* cp: powers of two; pp: every divisor of the GPUs left; interleaving with every chunk count
  that divides the layers a stage holds;
* one stage runs no pipeline schedule (Megatron-Core's forward_backward_no_pipelining, whatever
  the schedule asked): pp = 1 is searched as 1F1B with one chunk only;
* micro batch: powers of two up to 8; recompute: none, selective, full;
* ep: powers of two up to the expert count, etp the powers of two tp takes (Megatron-Core's MoE
  parallel folding: etp x ep divides tp x cp x dp).

A setting the user fixes with a flag (`--tp 8`) is not searched. `grid_points` drops what the
rules refuse on arithmetic alone before any workload is built (a chunk count with a schedule
that ignores it, tp x cp x pp not dividing the GPUs, ...).
"""

import itertools
import math
from dataclasses import dataclass

from simsp.sim.schedule import REGISTRY
from simsp.spec.hardware import HardwareSpec
from simsp.spec.workload import Workload

SEARCHED = (
    "tp",
    "cp",
    "pp",
    "schedule",
    "virtual_stages",
    "micro_batch",
    "recompute",
    "sp",
    "distributed_optimizer",
    "fsdp",
    "ep",
    "etp",
)
"""The grid keys a plan searches (sweep/spec.py GRID_KEYS names), in the order its table shows
them; dp is not a key, it is what the GPUs leave (gpus / (tp cp pp))."""
SCHEDULES = ("1f1b", "interleaved", "zb-h1", "zbv", "dualpipev")
"""Schedules searched: GPipe is left out, as 1F1B runs the same passes in the same time with
fewer microbatches in flight (Narayanan et al. SC'21 §2.2.1)."""
MICRO_BATCHES = (1, 2, 4, 8)
RECOMPUTE = ("none", "selective", "full")


def powers_of_two(limit: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to limit."""
    out, n = [], 1
    while n <= limit:
        out.append(n)
        n *= 2
    return tuple(out)


def divisors(n: int) -> tuple[int, ...]:
    """Every divisor of n, ascending."""
    return tuple(d for d in range(1, n + 1) if n % d == 0)


@dataclass(frozen=True)
class Space:
    """The candidates of each searched key (a key the user fixed has its one value), and what
    the arithmetic rules need: the GPUs, the global batch, the layers and whether they split
    evenly."""

    values: tuple[tuple[str, tuple], ...]
    gpus: int
    global_batch: int
    layers: int
    uneven: bool

    @property
    def points(self) -> int:
        """Points of the space, all keys' candidates multiplied."""
        return math.prod(len(v) for _, v in self.values)


def space(w: Workload, hw: HardwareSpec, gpus: int, fixed: dict) -> Space:
    """The candidates of every searched key for w's model on `gpus` GPUs of hw; `fixed` maps a
    key the user set to its value."""
    m = w.model
    tp = powers_of_two(min(hw.node.gpus, gpus))
    values = {
        "tp": tp,
        "cp": powers_of_two(gpus),
        "pp": tuple(d for d in divisors(gpus) if d <= m.layers),
        "schedule": SCHEDULES,
        "virtual_stages": (1, *(d for d in divisors(m.layers) if 1 < d <= m.layers // 2)),
        "micro_batch": tuple(b for b in MICRO_BATCHES if b <= w.training.global_batch),
        "recompute": RECOMPUTE,
        "sp": (True, False),
        "distributed_optimizer": (True, False),
        "fsdp": (False, True),
    }
    if m.experts:
        values["ep"] = powers_of_two(min(m.experts, gpus))
        values["etp"] = tuple(sorted({1, *tp}))
    for key, value in fixed.items():
        if key in values or key in SEARCHED:
            values[key] = (value,)
    return Space(
        tuple((k, values[k]) for k in SEARCHED if k in values),
        gpus,
        w.training.global_batch,
        m.layers,
        w.parallel.uneven,
    )


def grid_points(s: Space):
    """Every point of the space as a {key: value} dict, in the spec's order, dropping up front
    what the workload's rules would refuse on arithmetic alone: tp x cp x pp not dividing the
    GPUs, a global batch not a multiple of micro batch x dp, layers not dividing into the
    stages' chunks (even splits), the schedule's own microbatch rule, etp x ep not dividing
    tp x cp x dp (spec/rules/ states the same rules; the admitted points are validated in
    full). Yields (values, None) for a point kept and (None, count of points dropped) for a
    block dropped: the counts sum, with the points kept, to Space.points."""
    v = dict(s.values)
    experts = [k for k in ("ep", "etp") if k in v]
    rest = [k for k in ("recompute", "sp", "distributed_optimizer", "fsdp") if k in v]
    n_rest = math.prod(len(v[k]) for k in rest)
    n_experts = math.prod(len(v[k]) for k in experts)
    n_chunked = len(v["schedule"]) * len(v["virtual_stages"])
    per_b = n_chunked * n_experts * n_rest
    for tp, cp, pp in itertools.product(v["tp"], v["cp"], v["pp"]):
        if s.gpus % (tp * cp * pp):
            yield None, per_b * len(v["micro_batch"])
            continue
        dp = s.gpus // (tp * cp * pp)
        for b in v["micro_batch"]:
            if s.global_batch % (b * dp):
                yield None, per_b
                continue
            m = s.global_batch // (b * dp)
            for sched, chunk_count in itertools.product(v["schedule"], v["virtual_stages"]):
                kind = REGISTRY[sched]
                chunks = kind.chunks or chunk_count
                if (
                    (kind.chunks is not None and chunk_count != 1)
                    or (pp == 1 and (sched != "1f1b" or chunks != 1))
                    or (not s.uneven and s.layers % (pp * chunks))
                    or kind.needs(pp, m, chunks) is not None
                ):
                    yield None, n_experts * n_rest
                    continue
                for folded in itertools.product(*(v[k] for k in experts)):
                    fold = dict(zip(experts, folded, strict=True))
                    etp = fold.get("etp") or tp
                    if experts and (tp * cp * dp) % (etp * fold["ep"]):
                        yield None, n_rest
                        continue
                    head = {
                        "tp": tp,
                        "cp": cp,
                        "pp": pp,
                        "schedule": sched,
                        "virtual_stages": chunk_count,
                        "micro_batch": b,
                        **fold,
                    }
                    for combo in itertools.product(*(v[k] for k in rest)):
                        yield {**head, **dict(zip(rest, combo, strict=True))}, None
