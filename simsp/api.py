"""The public API: read a workload and a hardware file, simulate an iteration or estimate it in
closed form, and the memory report alone.

    >>> from simsp import load_workload, load_hardware, run, estimate
    >>> w = load_workload("workloads/gpt3-175b.yaml")
    >>> hw = load_hardware("hardware/dgx-a100-80gb.yaml")
    >>> run(w, hw).iteration_time_s        # event simulation
    >>> estimate(w, hw).iteration_time_s   # closed form
"""

from simsp.cost import cost_model
from simsp.io.config import load_hardware, load_workload
from simsp.sim.closed_form import estimate
from simsp.sim.engine import simulate
from simsp.sim.memory import memory_report
from simsp.sim.plan import build_plan
from simsp.sim.result import Result
from simsp.spec.hardware import HardwareSpec
from simsp.spec.workload import Workload

__all__ = ["Result", "estimate", "load_hardware", "load_workload", "memory_report", "run"]


def run(w: Workload, hw: HardwareSpec, progress=None) -> Result:
    """Plan, simulate and report one iteration; `progress` (a sweep.Progress of
    engine.PROGRESS_STEPS steps) is stepped as the replay goes, against the closed form's
    iteration time."""
    plan = build_plan(w, cost_model(hw))
    expected = 0.0
    if progress is not None:
        from simsp.sim.pipeline_time import iteration_s

        expected = iteration_s(plan)
    return Result(w, hw, plan, simulate(plan, progress, expected), memory_report(w, hw))
