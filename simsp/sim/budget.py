"""Bounded work: what a run would cost, counted before it starts, and the limit it must keep.

The event simulation replays every action of every stage (stages x chunks x microbatches, each
a forward and a backward), holding a record of each; the memory report walks the same actions
for the schedules whose in-flight counts have no closed form. Both grow with the microbatch
count, so `--global-batch 10000000` would run for minutes and take tens of GiB. Counting first
turns that into one line before any work: the estimate, the limit, the flag that raises it, and,
where the closed form (simsp.sim.closed_form) does not itself walk the schedule, that closed form.
"""

from dataclasses import dataclass

from simsp.errors import InputError

DEFAULT_MAX_ACTIONS = 100_000
"""Stage-chunk-microbatches one run may replay: three times the largest shipped workload (the 1T,
64 x 512), about 0.6 s and 16 MB of engine time (benchmarks/engine_speed.py); what bounds a run
past it is the memory report's walk and the trace file, not the engine."""
SECONDS_PER_ACTION = 6e-6
"""Engine CPU time per stage-chunk-microbatch (a forward and a backward): the 1T at 32,768
microbatches, 2,097,152 of them in 11.2 s (benchmarks/engine_speed.py, 2026-12-03)."""
RESIDENT_BYTES_PER_ACTION = 160
"""Engine memory per stage-chunk-microbatch: the same run's 329 MB peak RSS (columns of spans
and memory samples, sim/columns.py)."""
TRACE_BYTES_PER_ACTION = 820
"""--trace JSON per stage-chunk-microbatch (the 175B, 1T and Llama-70B runs: 790 to 812)."""
NOTICE_S = 3.0
"""Runs estimated longer than this say so on stderr before they start."""


@dataclass(frozen=True)
class Work:
    """The size of one workload's simulation."""

    stages: int
    chunks: int
    microbatches: int

    @property
    def actions(self) -> int:
        """Stage-chunk-microbatches the engine replays (each a forward and a backward)."""
        return self.stages * self.chunks * self.microbatches

    @property
    def seconds(self) -> float:
        return self.actions * SECONDS_PER_ACTION

    @property
    def resident_bytes(self) -> float:
        return self.actions * RESIDENT_BYTES_PER_ACTION

    @property
    def trace_bytes(self) -> float:
        return self.actions * TRACE_BYTES_PER_ACTION

    def describe(self) -> str:
        """`8 stages x 3 chunks x 10,000,000 microbatches = 240,000,000 actions (...)`."""
        return (
            f"{self.stages} stages x {self.chunks} chunks x {self.microbatches:,} microbatches = "
            f"{self.actions:,} actions (about {duration(self.seconds)} and "
            f"{_size(self.resident_bytes)} to simulate, a {_size(self.trace_bytes)} trace)"
        )


def _size(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB" if n < 2**30 else f"{n / 2**30:,.1f} GiB"


def duration(seconds: float) -> str:
    """`under 0.0001 s`, `0.0023 s`, `0.25 s`, `42 s`, `12 min`, `3 h`."""
    if seconds < 1e-4:
        return "under 0.0001 s"
    if seconds < 1:
        return f"{seconds:.2g} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:,.0f} h"


def work(w) -> Work:
    """The size of a validated workload's simulation."""
    return Work(w.parallel.pp, w.parallel.chunks, w.microbatches)


def memory_walks(w) -> bool:
    """Whether the memory report (and so the closed form) walks all the schedule's actions: every
    schedule but the classic three with deallocated outputs and even stages (interleaving's end
    stages walk a steady few microbatches, memory.steady_microbatches), and any schedule under
    EP overlap (its pairs: sim/memory.py, pipeline_time.pipeline_ends)."""
    from simsp.sim.memory import CLASSIC

    par = w.parallel
    return (
        par.schedule not in CLASSIC
        or not par.deallocate_pipeline_outputs
        or par.uneven
        or par.moe_a2a_overlap
    )


def check_limit(limit) -> int:
    """--max-actions as given: a positive integer."""
    if limit < 1:
        raise InputError("--max-actions", "max_actions", limit, "must be a positive integer")
    return limit


def check_seconds(limit) -> float:
    """--max-seconds as given (a sweep's, a fit's): a positive number of CPU seconds."""
    if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not limit > 0:
        raise InputError("--max-seconds", "max_seconds", limit, "must be a positive number")
    return float(limit)


def _refusal(source, w, size: Work, limit: int, what: str) -> InputError:
    return InputError(
        source,
        "training.global_batch",
        w.training.global_batch,
        f"{what} {size.describe()}, over the limit of {limit:,} (--max-actions raises it)",
    )


def check_memory(w, source, limit: int = DEFAULT_MAX_ACTIONS) -> None:
    """InputError when the memory report would walk more actions than limit."""
    size = work(w)
    if size.actions > check_limit(limit) and memory_walks(w):
        raise _refusal(source, w, size, limit, f"the {w.parallel.schedule} memory walk needs")


def plan_run(w, source, limit: int = DEFAULT_MAX_ACTIONS) -> bool:
    """True to simulate, False to answer in closed form (the simulation is over limit but the
    closed form does not walk); InputError when neither fits in the limit."""
    size = work(w)
    if size.actions <= check_limit(limit):
        return True
    if memory_walks(w):
        raise _refusal(source, w, size, limit, "the event simulation and the memory walk need")
    return False


def over_limit_reason(size: Work, limit: int) -> str:
    """The sentence a closed-form answer opens with."""
    return (
        f"closed form (simsp.sim.closed_form), not simulated: the event simulation needs "
        f"{size.describe()}, over the limit of {limit:,} (--max-actions raises it)"
    )
