"""What `simsp calibrate` is asked to do (Request), in its own words: the measured files a new
hardware YAML's calibration section points at, the scalar lines a profiler writes (Measured:
the host floor, the fused Adam rate), values fitted to a user's runs (Fitted), and which
calibration keys hold paths. calibrate.py does it."""

import dataclasses
import typing
from dataclasses import dataclass

from simsp.spec.hardware import CalibrationSpec


def _path_keys() -> tuple[str, ...]:
    """The calibration keys holding file paths: CalibrationSpec's str and tuple[str, ...] fields."""
    hints = typing.get_type_hints(CalibrationSpec)
    return tuple(
        f.name
        for f in dataclasses.fields(CalibrationSpec)
        if hints[f.name] in (str, tuple[str, ...]) and f.metadata.get("path", True)
    )


PATH_KEYS = _path_keys()
"""gemm, gemm_model, flash_attention, nvlink, infiniband (relative to the hardware file's
folder)."""


@dataclass(frozen=True)
class Measured:
    """Scalar calibration lines a profiler writes to a file, provenance comments first."""

    option: str
    """`simsp calibrate` option that reads the file."""
    keys: tuple[str, ...]
    unit: str
    source: str
    """How the provenance comment above the lines starts."""


HOST = Measured(
    "--host",
    tuple(f.name for f in dataclasses.fields(CalibrationSpec) if f.name.startswith("host_")),
    "microseconds",
    "# measured by `simsp profile host",
)
"""The host floor, as `simsp profile host --out` writes it."""
OPTIMIZER = Measured("--optimizer", ("adam_gbps",), "GB/s", "# measured by")
"""The fused Adam rate, as `simsp profile optimizer --out` writes it (the shipped files' own
provenance of it, from Megatron-LM timers, also starts `# measured by`)."""
NONE = "none"
"""`--gemm-model none` drops the base file's modeled GEMM table."""


FITTED_SOURCE = "# FITTED by"
"""How the comment block above fitted values starts."""


@dataclass(frozen=True)
class Fitted:
    """Calibration values fitted to a user's measured runs (`simsp calibrate --runs`), written
    together at the end of the calibration section under the comment lines that say so."""

    values: tuple[tuple[str, float | bool], ...]
    comments: tuple[str, ...]
    """Without the leading `# `."""


@dataclass(frozen=True)
class Request:
    """What `simsp calibrate` was asked to do."""

    base: str
    out: str
    gemm: str | None = None
    gemm_model: str | None = None
    """A modeled GEMM table; NONE drops the base file's (it models the base GPU)."""
    nvlink: tuple[str, ...] = ()
    infiniband: tuple[str, ...] = ()
    append: bool = False
    """Add the logs to the base file's lists instead of replacing them."""
    name: str | None = None
    """New `name:` value; None keeps the base file's."""
    command: str = ""
    host: str | None = None
    """A host floor file (`simsp profile host --out`)."""
    optimizer: str | None = None
    """A fused Adam rate file (`simsp profile optimizer --out`)."""
    attention: str | None = None
    """A FlashAttention throughput CSV (`simsp profile attention`) ->
    `calibration.flash_attention`."""
    grouped_gemm: str | None = None
    """A grouped-GEMM CSV (`simsp profile gemm` of a workload with experts) ->
    `calibration.grouped_gemm`."""
    memory_bound: tuple[tuple[str, object], ...] = ()
    """`memory_bound:` keys to set, with their values (`simsp calibrate --trace`)."""
    notes: tuple[str, ...] = ()
    """Provenance lines for the new file's header (what a trace matched and did not)."""
    fitted: "Fitted | None" = None
    """Values fitted to measured runs (`simsp calibrate --runs`)."""

    def measured(self) -> list[tuple[Measured, str]]:
        """The measured-lines files asked for, with what each holds."""
        return [
            (kind, path) for kind, path in ((HOST, self.host), (OPTIMIZER, self.optimizer)) if path
        ]
