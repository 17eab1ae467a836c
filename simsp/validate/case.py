"""One validation case: a measured (or published) time and the run that produced it, or why a
run was skipped."""

from dataclasses import dataclass
from pathlib import Path

from simsp.spec.workload import Workload


@dataclass(frozen=True)
class Case:
    """One measured value and the simsp run that predicts it."""

    set: str
    name: str
    """Unique within the set, e.g. `single-0012` or `gpt3-175b full`."""
    measured_s: float
    workload: Workload
    hardware: str
    """Path of the hardware YAML (cases travel to worker processes as plain data)."""
    quantity: str = "iteration"
    """iteration, layer_forward or layer_backward (one layer, one microbatch)."""
    description: str = ""
    baseline_s: float = 0.0
    """The naive estimate a user computes by hand (published sets: model FLOPs / (0.5 x peak x
    GPUs)); 0 where none is computed."""
    notes: str = ""
    """Where the settings the source did not state came from (published sets)."""
    known_gap: str = ""
    """Why simsp is known to miss this case by far, in writing (published sets); printed beside
    any case beyond GAP_REPORTED."""
    framework: str = ""
    """The framework release that ran the measurement, where the source names it (published
    sets: the recipe's key, e.g. `NeMo 25.02`; fp8-pairs: the NeMo release)."""
    measured_peak_bytes: float = 0.0
    """The run's measured HBM peak, the largest over its ranks of `measured_peak_kind`
    (simumax-b200, torch-native); 0 where the source measured none."""
    measured_peak_kind: str = "max_memory_allocated"
    """What the measured peak counts: torch.cuda's max_memory_allocated (tensors) or
    max_memory_reserved (the caching allocator's segments, torchtitan's logged `memory`)."""
    peer_s: float = 0.0
    """Another simulator's answer for the same run, where its authors published one beside the
    measurement (simumax-b200: SimuMax's own); 0 where none."""


@dataclass(frozen=True)
class Skipped:
    """A source row that is not a valid simsp workload, and why."""

    set: str
    name: str
    reason: str


def project_path(rel: str) -> Path:
    """A project file (hardware/, workloads/) from the working directory, else the source
    checkout."""
    from simsp.io.config import REPO_ROOT

    local = Path(rel)
    return local if local.exists() else REPO_ROOT / rel
