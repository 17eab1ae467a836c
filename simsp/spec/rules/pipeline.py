"""Pipeline parallelism: chunks and schedules, even and uneven stages, pipeline_layout, and the
batch's microbatch count a schedule needs."""

from simsp.spec.pipeline_layout import parse as parse_layout
from simsp.spec.schedules import REGISTRY
from simsp.spec.workload import Workload


def rules(w: Workload):
    """(key, value, holds, rule) for the chunks a stage holds and how the layers split."""
    m, p = w.model, w.parallel
    chunks = p.pp * p.chunks
    yield (
        "parallel.virtual_stages",
        p.virtual_stages,
        p.virtual_stages == 1
        or (p.schedule in REGISTRY and REGISTRY[p.schedule].chunks in (None, p.virtual_stages)),
        "must be 1 unless schedule is interleaved or zb-h1 (2 is allowed for zbv and dualpipev)",
    )
    if p.uneven:
        yield from _split_rules(w)
    else:
        yield (
            "model.layers",
            m.layers,
            m.layers % chunks == 0,
            f"must divide into pp x virtual_stages ({p.pp} x {p.chunks}) equal chunks",
        )


def batch_rules(w: Workload):
    """(key, value, holds, rule) for the batch: the only rules that read the micro and global
    batch (and the microbatch count they give), so a sweep can check them apart, as masks over
    its columns (sweep/grid_columns.py), and the others once per parallel layout."""
    t, p = w.training, w.parallel
    yield (
        "training.global_batch",
        t.global_batch,
        t.global_batch % (t.micro_batch * p.dp) == 0,
        f"must be a multiple of micro_batch x dp ({t.micro_batch} x {p.dp})",
    )
    broken = schedule_rule(p.schedule, p.pp, w.microbatches, p.chunks)
    if broken is not None:  # the schedule's own rule (simsp/sim/schedule/), with its key
        key, rule = broken
        section, name = key.split(".")
        yield key, getattr(getattr(w, section), name), False, rule


def schedule_rule(schedule: str, pp: int, microbatches: int, chunks: int) -> tuple[str, str] | None:
    """(key, rule) of the schedule's own rule on its microbatch count (spec/schedules.py Kind.
    needs) where it is broken, else None (None too for a schedule simsp does not know: its own
    rule says so)."""
    if schedule not in REGISTRY:
        return None
    return REGISTRY[schedule].needs(pp, microbatches, chunks)


def _split_rules(w: Workload):
    """(key, value, holds, rule) for uneven pipeline stages, as Megatron-Core r0.13's
    TransformerConfig.__post_init__ checks them."""
    m, p = w.model, w.parallel
    first, last, v = p.first_stage_layers, p.last_stage_layers, p.chunks
    if p.pipeline_layout:
        yield from _layout_rules(w)
        return
    accounted = p.account_for_embedding_in_pipeline_split or p.account_for_loss_in_pipeline_split
    if accounted:
        key = "parallel.account_for_embedding_in_pipeline_split"
        yield key, True, not (first or last), "cannot be combined with first/last_stage_layers"
        slots = m.layers + p.account_for_embedding_in_pipeline_split
        slots += p.account_for_loss_in_pipeline_split
        yield (
            "model.layers",
            m.layers,
            slots % (p.pp * v) == 0 and slots // (p.pp * v) >= 2,
            f"with the embedding and loss counted ({slots} layer slots) must divide into "
            f"pp x virtual_stages ({p.pp} x {v}) equal chunks of two or more",
        )
        return
    for key, n in (("first_stage_layers", first), ("last_stage_layers", last)):
        yield (
            f"parallel.{key}",
            n,
            n >= 0 and n % v == 0 and (n == 0 or p.pp > 1),
            f"must be a multiple of the chunks a stage holds ({v}), with pp > 1",
        )
    left = p.pp - bool(first) - bool(last)
    rest = m.layers - first - last
    yield (
        "model.layers",
        m.layers,
        (rest == 0 if left == 0 else rest > 0 and rest % (left * v) == 0),
        f"less first/last_stage_layers ({rest}) must divide into the other {left} stages x "
        f"{v} chunks equally",
    )


def _layout_rules(w: Workload):
    """(key, value, holds, rule) for a pipeline_layout string."""
    m, p, key = w.model, w.parallel, "parallel.pipeline_layout"
    stages = parse_layout(p.pipeline_layout)
    yield (
        key,
        p.pipeline_layout,
        stages is not None,
        ("must be virtual stages of E, t, m, L separated by '|', with x*n and (...)*n repeats"),
    )
    others = (p.first_stage_layers, p.last_stage_layers, p.account_for_embedding_in_pipeline_split)
    yield (
        key,
        p.pipeline_layout,
        not any(others) and not p.account_for_loss_in_pipeline_split,
        "cannot be combined with first/last_stage_layers or account_for_*_in_pipeline_split",
    )
    n = p.pp * p.chunks
    yield (
        key,
        p.pipeline_layout,
        len(stages) == n,
        (f"must name pp x virtual stages ({p.pp} x {p.chunks} = {n}) stages, not {len(stages)}"),
    )
    yield (
        key,
        p.pipeline_layout,
        sum(s.layers for s in stages) == m.layers,
        (f"must hold model.layers ({m.layers}) t's, not {sum(s.layers for s in stages)}"),
    )
    ends = stages[0].embedding and stages[-1].loss
    placed = not any(s.embedding for s in stages[1:]) and not any(s.loss for s in stages[:-1])
    yield (
        key,
        p.pipeline_layout,
        ends and placed,
        ("must open with E on the first stage and close with L on the last, once each"),
    )
    mtp = sum(s.mtp for s in stages)
    yield (
        key,
        p.pipeline_layout,
        mtp == stages[-1].mtp == m.mtp_layers,
        (f"must place model.mtp_layers ({m.mtp_layers}) m's, all on the last stage"),
    )
