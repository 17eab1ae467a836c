"""Pipeline schedules as pure data: which forward and backward each pipeline stage runs, in order.

Three schedules, each returning one tuple of `Action`s per pipeline stage:

- ``gpipe``: all forwards, then all backwards (Huang et al., "GPipe", NeurIPS 2019; in
  Megatron-LM the same order as ``forward_backward_no_pipelining`` / a full flush).
- ``1f1b``: PipeDream-flush (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN
  Training", ICML 2021), Megatron-LM ``forward_backward_pipelining_without_interleaving``.
- ``interleaved``: the interleaved 1F1B schedule with ``v`` model chunks per stage (Narayanan
  et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
  SC'21, §2.2.2), Megatron-LM ``forward_backward_pipelining_with_interleaving``
  (``megatron/core/pipeline_parallel/schedules.py``).

No time, no simpy: the engine replays these lists, honouring `dependencies`. Backward actions
include any activation recomputation (the engine decides what a backward costs).
"""

from dataclasses import dataclass

SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True, slots=True)
class Action:
    """One unit of work on one pipeline stage: a forward or backward of one microbatch chunk."""

    kind: str
    """"F" (forward) or "B" (backward; includes recompute)."""
    microbatch: int
    """Microbatch index, 0-based."""
    chunk: int = 0
    """Model chunk (virtual stage) index on this stage, 0-based; 0 unless interleaved."""


Actions = tuple[Action, ...]
"""One pipeline stage's actions, in the order the stage runs them."""
Schedule = tuple[Actions, ...]
"""One `Actions` list per pipeline stage, stage 0 first."""
Dependency = tuple[int, Action]
"""(stage, action) that has to finish first."""


def _check_positive(**values: int) -> None:
    """Raise ValueError unless every named value is an int >= 1."""
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name}={value!r}: must be an integer >= 1")


def _stage_list(forwards: list[Action], backwards: list[Action], warmup: int) -> Actions:
    """Merge one stage's forward and backward lists as Megatron's 1F1B loop does.

    ``warmup`` forwards, then ``len - warmup`` steady-state (forward, backward) pairs, then the
    remaining ``warmup`` cool-down backwards (Megatron-LM ``schedules.py``: warm-up loop,
    ``for k in range(num_microbatches_remaining)``, cool-down loop).
    """
    total = len(forwards)
    steady = total - warmup
    out = list(forwards[:warmup])
    for k in range(steady):
        out.append(forwards[warmup + k])
        out.append(backwards[k])
    out.extend(backwards[steady:])
    return tuple(out)


def gpipe(p: int, m: int) -> Schedule:
    """GPipe (Huang et al. 2019): every stage runs all m forwards, then all m backwards.

    Backwards run in ascending microbatch order, as Megatron-LM's flush schedules (and
    ``forward_backward_no_pipelining``) pop saved activations first-in first-out, not in
    GPipe's reverse order. Every stage holds all m microbatches' activations at its peak.
    """
    _check_positive(p=p, m=m)
    forwards, backwards = _plain_actions(m)
    stage = tuple(forwards + backwards)
    return (stage,) * p


def _plain_actions(m: int) -> tuple[list[Action], list[Action]]:
    """Forwards F0..F(m-1) and backwards B0..B(m-1) of the single chunk 0."""
    return [Action("F", i, 0) for i in range(m)], [Action("B", i, 0) for i in range(m)]


def warmup_1f1b(p: int, m: int, stage: int) -> int:
    """Warm-up forwards on ``stage`` under 1F1B: min(p - stage - 1, m).

    Megatron-LM ``forward_backward_pipelining_without_interleaving``:
    ``num_warmup_microbatches = min(pipeline_parallel_size - rank - 1, num_microbatches)``.
    """
    return min(p - stage - 1, m)


def one_f_one_b(p: int, m: int) -> Schedule:
    """PipeDream-flush 1F1B (Narayanan et al. ICML'21; Megatron-LM non-interleaved schedule).

    Stage s runs min(p - s - 1, m) warm-up forwards, then one-forward-one-backward pairs, then
    cool-down backwards, so it holds at most min(p - s, m) microbatches' activations.
    """
    _check_positive(p=p, m=m)
    forwards, backwards = _plain_actions(m)
    return tuple(_stage_list(forwards, backwards, warmup_1f1b(p, m, s)) for s in range(p))


def warmup_interleaved(p: int, m: int, v: int, stage: int) -> int:
    """Warm-up forwards (chunk-microbatches) on ``stage`` under the interleaved schedule.

    Megatron-LM ``forward_backward_pipelining_with_interleaving``: if m == p, all m*v forwards
    run first (``all_warmup_microbatches``); otherwise
    min((p - stage - 1) * 2 + (v - 1) * p, m * v).
    """
    if m == p:
        return m * v
    return min((p - stage - 1) * 2 + (v - 1) * p, m * v)


def interleaved_action(p: int, v: int, k: int, kind: str) -> Action:
    """The (microbatch, chunk) that virtual microbatch ``k`` means on a stage.

    Megatron-LM ``get_model_chunk_id``: chunk = (k mod p*v) // p for a forward, and
    v - 1 - that for a backward; ``get_microbatch_id_in_model_chunk``: microbatch =
    (k // (p*v)) * p + k mod p. Microbatches therefore pass through the chunks in groups of p.
    """
    group, in_group = divmod(k, p * v)
    chunk = in_group // p
    if kind == "B":
        chunk = v - 1 - chunk
    return Action(kind, group * p + in_group % p, chunk)


def interleaved(p: int, m: int, v: int) -> Schedule:
    """Interleaved 1F1B (Narayanan et al. SC'21 §2.2.2; Megatron-LM interleaved schedule).

    Each stage holds v model chunks; virtual stage chunk * p + stage. Requires m % p == 0
    (as Megatron-LM does). v == 1 is plain 1F1B. For m > p, stage 0 holds p*v + p - 1
    chunk-microbatches at peak, i.e. L * (1 + (p - 1) / (p * v)) layers (Korthikanti et al.
    2023, §4.2.3); for m == p every stage runs all forwards first, as Megatron-LM does.
    """
    _check_positive(p=p, m=m, v=v)
    if v == 1:
        return one_f_one_b(p, m)
    if m % p != 0:
        raise ValueError(f"m={m}: the interleaved schedule needs m divisible by p={p}")
    forwards = [interleaved_action(p, v, k, "F") for k in range(m * v)]
    backwards = [interleaved_action(p, v, k, "B") for k in range(m * v)]
    warmups = (warmup_interleaved(p, m, v, s) for s in range(p))
    return tuple(_stage_list(forwards, backwards, w) for w in warmups)


def build(schedule: str, p: int, m: int, v: int = 1) -> Schedule:
    """Per-stage action lists for ``schedule`` (one of `SCHEDULES`); ValueError if unknown.

    ``v`` (model chunks per stage) is used only by "interleaved"; interleaved with v == 1 is 1F1B.
    """
    if schedule == "gpipe":
        return gpipe(p, m)
    if schedule == "1f1b":
        return one_f_one_b(p, m)
    if schedule == "interleaved":
        return interleaved(p, m, v)
    raise ValueError(f"schedule={schedule!r}: must be one of {', '.join(SCHEDULES)}")


def max_in_flight(actions: Actions) -> int:
    """Peak over one stage's action list of (forwards done - backwards done), in chunk-microbatches.

    The number of chunk-microbatches whose activations the stage holds at once.
    """
    return peak_in_flight_layers(actions, 1)


def peak_in_flight_layers(actions: Actions, layers_per_chunk: int) -> int:
    """`max_in_flight` weighted by layers: peak layer-microbatches of activations on one stage.

    With layers_per_chunk = L / (p * v), stage 0 of the interleaved schedule gives the
    L * (1 + (p - 1) / (p * v)) layers of Korthikanti et al. 2023 §4.2.3.
    """
    held = peak = 0
    for action in actions:
        held += layers_per_chunk if action.kind == "F" else -layers_per_chunk
        peak = max(peak, held)
    return peak


def virtual_stage(p: int, stage: int, chunk: int) -> int:
    """Position of (stage, chunk) in the model: chunk * p + stage (Megatron-LM layer placement)."""
    return chunk * p + stage


def stage_and_chunk(p: int, vstage: int) -> tuple[int, int]:
    """Inverse of `virtual_stage`: (stage, chunk) holding virtual stage ``vstage``."""
    chunk, stage = divmod(vstage, p)
    return stage, chunk


def dependencies(p: int, v: int, stage: int, a: Action) -> tuple[Dependency, ...]:
    """The (stage, action) pairs that must finish before ``a`` can start on ``stage``.

    A forward waits for the previous virtual stage's forward of the same microbatch; a
    backward waits for its own forward and for the next virtual stage's backward (the last
    virtual stage's backward follows its own forward, the loss). Point-to-point sends are
    left to the engine.
    """
    vs = virtual_stage(p, stage, a.chunk)
    if a.kind == "F":
        if vs == 0:
            return ()
        prev_stage, prev_chunk = stage_and_chunk(p, vs - 1)
        return ((prev_stage, Action("F", a.microbatch, prev_chunk)),)
    own = (stage, Action("F", a.microbatch, a.chunk))
    if vs == p * v - 1:
        return (own,)
    next_stage, next_chunk = stage_and_chunk(p, vs + 1)
    return (own, (next_stage, Action("B", a.microbatch, next_chunk)))
