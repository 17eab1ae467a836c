"""Pipeline schedules as a user names them: each kind's name, where its model chunks sit, how
many a stage holds and the rule a configuration must meet. The action lists themselves are built
by simsp.sim.schedule (its BUILDERS, one per name here).

Placement: ``loop`` puts chunk c of stage s at virtual stage c * p + s (Megatron-LM's
interleaving); ``v`` puts chunk 0 at s and chunk 1 at 2p - 1 - s (the zero-bubble paper's V,
DualPipeV), so the first and last layers share the first rank.
"""

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["REGISTRY", "SCHEDULES", "Kind", "chunks_of", "stage_and_chunk", "virtual_stage"]


@dataclass(frozen=True)
class Kind:
    """One schedule as a user names it: where its chunks sit and the rule it needs (its action
    lists are sim/schedule's BUILDERS)."""

    name: str
    placement: str
    """loop or v (module docstring)."""
    chunks: int | None
    """Chunks a stage holds: fixed (1, or 2 for the V schedules), or None for the workload's
    virtual_stages."""
    needs: Callable[[int, int, int], tuple[str, str] | None]
    """(p, m, chunks) -> (workload key, rule) the configuration breaks, or None."""
    source: str


def _none(p: int, m: int, v: int) -> tuple[str, str] | None:
    return None


def _interleaved_needs(p: int, m: int, v: int) -> tuple[str, str] | None:
    if p < 2:
        return "parallel.schedule", "interleaved needs pp > 1"
    if m % p:
        return (
            "training.global_batch",
            f"interleaved needs the microbatch count to be a multiple of pp ({p})",
        )
    return None


def _zb_needs(p: int, m: int, v: int) -> tuple[str, str] | None:
    rounds = max(1, m // p)
    if m % rounds:
        return (
            "training.global_batch",
            f"zb-h1 needs the microbatches ({m}) divisible by {rounds} rounds",
        )
    return None


def _dualpipe_needs(p: int, m: int, v: int) -> tuple[str, str] | None:
    if m < 2 * p:
        return "training.global_batch", f"dualpipev needs at least 2 x pp = {2 * p} microbatches"
    return None


REGISTRY = {
    k.name: k
    for k in (
        Kind("gpipe", "loop", 1, _none, "Huang et al. 2019"),
        Kind("1f1b", "loop", 1, _none, "Narayanan et al. ICML'21"),
        Kind(
            "interleaved",
            "loop",
            None,
            _interleaved_needs,
            "Narayanan et al. SC'21 §2.2.2",
        ),
        Kind(
            "zb-h1",
            "loop",
            None,
            _zb_needs,
            "Qi et al. ICLR'24 §3.1 (ZB1P with chunks)",
        ),
        Kind("zb-h2", "loop", 1, _none, "Qi et al. ICLR'24 §3.1"),
        Kind("zbv", "v", 2, _none, "Qi et al. ICLR'24 §6"),
        Kind(
            "dualpipev",
            "v",
            2,
            _dualpipe_needs,
            "DeepSeek-V3 arXiv 2412.19437 §3.2.1",
        ),
    )
}
SCHEDULES = tuple(REGISTRY)


def chunks_of(schedule: str, virtual_stages: int) -> int:
    """Model chunks a stage holds under a schedule."""
    fixed = REGISTRY[schedule].chunks
    return fixed if fixed is not None else virtual_stages


def virtual_stage(p: int, stage: int, chunk: int, placement: str = "loop") -> int:
    """Position of (stage, chunk) in the model (module docstring)."""
    if placement == "v":
        return stage if chunk == 0 else 2 * p - 1 - stage
    return chunk * p + stage


def stage_and_chunk(p: int, vstage: int, placement: str = "loop") -> tuple[int, int]:
    """Inverse of `virtual_stage`: (stage, chunk) holding virtual stage ``vstage``."""
    if placement == "v":
        return (vstage, 0) if vstage < p else (2 * p - 1 - vstage, 1)
    chunk, stage = divmod(vstage, p)
    return stage, chunk
