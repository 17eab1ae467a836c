"""The classic schedules: each stage runs forwards and full backwards (F and B) of one or v chunks.

Each returns one tuple of `Action`s per pipeline stage:

- ``gpipe``: all forwards, then all backwards (Huang et al., "GPipe", NeurIPS 2019; in
  Megatron-LM the same order as ``forward_backward_no_pipelining`` / a full flush).
- ``1f1b``: PipeDream-flush (Narayanan et al., "Memory-Efficient Pipeline-Parallel DNN
  Training", ICML 2021), Megatron-LM ``forward_backward_pipelining_without_interleaving``.
- ``interleaved``: the interleaved 1F1B schedule with ``v`` model chunks per stage (Narayanan
  et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM",
  SC'21, §2.2.2), Megatron-LM ``forward_backward_pipelining_with_interleaving``
  (``megatron/core/pipeline_parallel/schedules.py``).

No time, no simpy: the engine replays these lists. Backward actions include any activation
recomputation (the engine decides what a backward costs).
"""

from dataclasses import replace

from simsp.sim.schedule.action import Action, Actions, Schedule
from simsp.sim.schedule.action import check_positive as _check_positive


def _stage_list(
    forwards: list[Action], backwards: list[Action], warmup: int, paired: bool = False
) -> Actions:
    """Merge one stage's forward and backward lists as Megatron's 1F1B loop does.

    ``warmup`` forwards, then ``len - warmup`` steady-state (forward, backward) pairs, then the
    remaining ``warmup`` cool-down backwards (Megatron-LM ``schedules.py``: warm-up loop,
    ``for k in range(num_microbatches_remaining)``, cool-down loop). `paired`: each
    steady-state pair runs overlapped (Action.overlapped), as Megatron-Core's combined 1F1B
    does under EP all-to-all overlap.
    """
    total = len(forwards)
    steady = total - warmup
    out = list(forwards[:warmup])
    for k in range(steady):
        f, b = forwards[warmup + k], backwards[k]
        if paired:
            f, b = replace(f, overlapped=True), replace(b, overlapped=True)
        out.append(f)
        out.append(b)
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


def one_f_one_b(p: int, m: int, paired: bool = False) -> Schedule:
    """PipeDream-flush 1F1B (Narayanan et al. ICML'21; Megatron-LM non-interleaved schedule).

    Stage s runs min(p - s - 1, m) warm-up forwards, then one-forward-one-backward pairs, then
    cool-down backwards, so it holds at most min(p - s, m) microbatches' activations.

    `paired` (EP all-to-all overlap): the steady state's pairs overlapped. Without a pipeline
    (p = 1) a forward pairs with the backward of the microbatch before it, as Megatron-Core's
    combined_1f1b_schedule_for_no_pipelining runs them: F0, then F(i) with B(i - 1), then
    B(m - 1), two microbatches in flight. With p > 1 Megatron-Core pairs only in the
    interleaved schedule (TransformerConfig: 'virtual_pipeline_model_parallel_size must be
    specified when pipeline_model_parallel_size > 1'; spec/rules/experts.py refuses the rest).
    """
    _check_positive(p=p, m=m)
    forwards, backwards = _plain_actions(m)
    if paired and p == 1:
        return (_stage_list(forwards, backwards, min(1, m), paired=True),)
    return tuple(_stage_list(forwards, backwards, warmup_1f1b(p, m, s), paired) for s in range(p))


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


def interleaved(p: int, m: int, v: int, paired: bool = False) -> Schedule:
    """Interleaved 1F1B (Narayanan et al. SC'21 §2.2.2; Megatron-LM interleaved schedule).

    Each stage holds v model chunks; virtual stage chunk * p + stage. `paired`: the steady
    state's pairs overlapped (EP all-to-all overlap, see one_f_one_b), after one more warm-up
    forward than without, as Megatron-Core runs it, so that no pair holds a backward and its
    own forward. Requires m % p == 0
    (as Megatron-LM does). v == 1 is plain 1F1B. For m > p, stage 0 holds p*v + p - 1
    chunk-microbatches at peak, i.e. L * (1 + (p - 1) / (p * v)) layers (Korthikanti et al.
    2023, §4.2.3); for m == p every stage runs all forwards first, as Megatron-LM does.
    """
    _check_positive(p=p, m=m, v=v)
    if v == 1:
        return one_f_one_b(p, m, paired)
    if m % p != 0:
        raise ValueError(f"m={m}: the interleaved schedule needs m divisible by p={p}")
    forwards = [interleaved_action(p, v, k, "F") for k in range(m * v)]
    backwards = [interleaved_action(p, v, k, "B") for k in range(m * v)]
    # EP overlap: one more warm-up forward, so that each steady-state pair joins independent
    # microbatches (Megatron-Core schedules.py: `if overlap_moe_expert_parallel_comm:
    # num_warmup_microbatches += 1`)
    warmups = (min(warmup_interleaved(p, m, v, s) + int(paired), m * v) for s in range(p))
    return tuple(_stage_list(forwards, backwards, w, paired) for w in warmups)
