"""The rules that bind a workload's model, batch and parallel plan together, each a (key, value,
holds, rule) row checked in order; `validate` raises the first broken one as an InputError
naming the file, the key, the value and the rule."""

import re
from functools import lru_cache

from simsp.errors import InputError
from simsp.spec.model import (
    ATTENTION_KINDS,
    BIAS_KINDS,
    MLP_KINDS,
    NORM_KINDS,
    NORM_PLACEMENTS,
    POSITION_KINDS,
    QK_NORM_KINDS,
    ROUTER_SCORES,
    ModelSpec,
)
from simsp.spec.parallel import (
    CP_COMM_TYPES,
    DIMENSIONS,
    DISPATCHERS,
    FLEX_BACKENDS,
    RECOMPUTE_MODES,
    RECOMPUTE_MODULES,
    RESHARD_AFTER_FORWARD,
    SCHEDULES,
)
from simsp.spec.pipeline_layout import parse as parse_layout
from simsp.spec.precision import FP8_RECIPES, PRECISIONS
from simsp.spec.schedules import REGISTRY
from simsp.spec.stack import ELEMENTWISE, FSDP_IMPLS, STACK_NAMES
from simsp.spec.workload import CROSS_ENTROPIES, Workload

KERNEL_NAME = re.compile(r"[a-z][a-z0-9_.-]*")
"""What a kernel column of a FlashAttention table holds (fa2, fa3, cudnn, trace)."""


MAX_LAYERS = 10_000
"""Most layers a model may have: a run sums over its layer kinds, so a million layers takes
tens of seconds and a billion hangs (issue 32's bound on every input)."""


def _rules(w: Workload, batch: bool = True):
    """(key, value, holds, rule) for every cross-field rule, in the order they are checked;
    without the batch's rules (_batch_rules) where `batch` is false."""
    m, t, p = w.model, w.training, w.parallel
    chunks = p.pp * p.chunks
    yield (
        "model.layers",
        m.layers,
        m.layers <= MAX_LAYERS,
        f"must be at most {MAX_LAYERS:,} (the deepest published model has under 200)",
    )
    yield (
        "parallel.recompute",
        p.recompute,
        p.recompute in RECOMPUTE_MODES,
        f"must be one of {', '.join(RECOMPUTE_MODES)}",
    )
    yield (
        "parallel.recompute",
        p.recompute,
        p.recompute != "op" or not (m.experts or m.mla),
        "op (torchtitan's per-op checkpointing) is modelled for dense layers without latent "
        "attention only",
    )
    yield (
        "parallel.schedule",
        p.schedule,
        p.schedule in SCHEDULES,
        f"must be one of {', '.join(SCHEDULES)}",
    )
    yield from _model_choices(m)
    yield (
        "training.precision",
        t.precision,
        t.precision in PRECISIONS,
        f"must be one of {', '.join(PRECISIONS)}",
    )
    yield (
        "training.stack",
        t.stack,
        t.stack in STACK_NAMES,
        f"must be one of {', '.join(STACK_NAMES)}",
    )
    for key, names in (
        ("fp8_recipe", FP8_RECIPES),
        ("elementwise", ELEMENTWISE),
        ("fsdp_impl", FSDP_IMPLS),
    ):
        value = getattr(t, key)
        yield (
            f"training.{key}",
            value,
            not value or value in names,
            f"must be one of {', '.join(names)}, or empty for the stack's",
        )
    yield (
        "training.fp8_param_gather",
        t.fp8_param_gather,
        not t.fp8_param_gather or t.precision == "fp8",
        "needs training.precision fp8 (Megatron-LM: --fp8-param-gather requires --fp8-format)",
    )
    yield (
        "training.cross_entropy",
        t.cross_entropy,
        not t.cross_entropy or t.cross_entropy in CROSS_ENTROPIES,
        f"must be one of {', '.join(CROSS_ENTROPIES)}, or empty for the stack's",
    )
    yield (
        "training.attention_kernel",
        t.attention_kernel,
        not t.attention_kernel or bool(KERNEL_NAME.fullmatch(t.attention_kernel)),
        "must be a kernel name of the hardware's flash_attention table (fa2, fa3, cudnn, ...)",
    )
    yield (
        "training.attention_kernel",
        t.attention_kernel,
        not t.attention_kernel or m.attention == "flash",
        f"names a fused-attention kernel, which model.attention {m.attention} does not run",
    )
    yield (
        "model.heads",
        m.heads,
        m.head_dim or m.hidden % m.heads == 0,
        f"must divide hidden ({m.hidden}) unless head_dim is set",
    )
    yield (
        "model.kv_heads",
        m.kv_heads,
        m.heads % m.groups == 0,
        f"must divide model.heads ({m.heads})",
    )
    yield "model.dropout", m.dropout, 0 <= m.dropout < 1, "must be a rate in [0, 1)"
    yield "parallel.tp", p.tp, m.heads % p.tp == 0, f"must divide model.heads ({m.heads})"
    yield (
        "parallel.tp",
        p.tp,
        m.groups % p.tp == 0,
        f"must divide the key/value heads ({m.groups}), as Megatron-Core requires",
    )
    yield "parallel.tp", p.tp, m.ffn % p.tp == 0, f"must divide the MLP size ({m.ffn})"
    yield from _context_rules(w)
    yield from _window_rules(w)
    yield from _mla_rules(w)
    yield from _expert_rules(w)
    yield from _fsdp_rules(w)
    yield from _optimizer_rules(w)
    yield (
        "parallel.sequence_parallel",
        p.sequence_parallel,
        not p.sequence_parallel or m.seq_len % (p.tp * p.cp) == 0,
        f"needs tp x cp ({p.tp} x {p.cp}) to divide seq_len ({m.seq_len})",
    )
    yield (
        "parallel.tp_comm_overlap",
        p.tp_comm_overlap,
        not p.tp_comm_overlap or p.tp == 1 or p.sequence_parallel,
        "needs sequence_parallel when tp > 1 (Megatron-LM arguments.py: TP comm/GEMM overlap "
        "happens only with sequence parallelism)",
    )
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
    if batch:
        yield from _batch_rules(w)
    modules = [m.strip() for m in p.recompute_modules.split(",")]
    yield (
        "parallel.recompute_modules",
        p.recompute_modules,
        all(m in RECOMPUTE_MODULES for m in modules),
        f"must list modules of {', '.join(RECOMPUTE_MODULES)}, comma-separated",
    )
    yield (
        "parallel.recompute_modules",
        p.recompute_modules,
        p.recompute_modules == "core_attn" or p.recompute == "selective",
        "needs recompute: selective (Megatron-Core's --recompute-modules)",
    )
    yield (
        "parallel.recompute_num_layers",
        p.recompute_num_layers,
        p.recompute_num_layers == 0 or p.recompute == "full",
        "needs recompute: full (Megatron's --recompute-method block)",
    )
    if p.recompute_per_stage:
        yield from _per_stage_rules(w)


def _batch_rules(w: Workload):
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


def _window_rules(w: Workload):
    """(key, value, holds, rule) for a sliding window and its pattern of local layers."""
    m, p = w.model, w.parallel
    yield (
        "model.global_every",
        m.global_every,
        not m.global_every or m.sliding_window > 0 or m.attention_chunk > 0,
        "needs model.sliding_window or attention_chunk: it says which layers are global",
    )
    if m.chunk:
        yield (
            "model.attention_chunk",
            m.attention_chunk,
            not m.window and m.attention == "flash" and p.cp == 1 and not m.mla,
            "needs model.attention flash, cp 1, no sliding_window and no MLA",
        )
    if not m.window:
        return
    yield (
        "model.sliding_window",
        m.sliding_window,
        m.attention == "flash",
        "needs model.attention: flash (the unfused kernels hold the whole s x s square)",
    )
    yield (
        "model.sliding_window",
        m.sliding_window,
        p.cp == 1,
        f"is not modelled under context parallelism (cp {p.cp}): use cp 1 or no window",
    )


def _mla_rules(w: Workload):
    """(key, value, holds, rule) for multi-head latent attention."""
    m, p = w.model, w.parallel
    if not m.mla:
        for key in ("q_lora_rank", "qk_rope_dim", "v_head_dim"):
            yield (
                f"model.{key}",
                getattr(m, key),
                getattr(m, key) == 0,
                "needs model.kv_lora_rank (multi-head latent attention)",
            )
        return
    yield "model.attention", m.attention, m.attention == "flash", "must be flash with MLA"
    yield "parallel.cp", p.cp, p.cp == 1, "is not modelled with MLA yet (use cp 1)"
    yield "model.qk_norm", m.qk_norm, m.qk_norm == "none", "must be none with MLA"
    yield "model.sliding_window", m.sliding_window, not m.window, "is not modelled with MLA"
    yield (
        "model.qk_rope_dim",
        m.qk_rope_dim,
        (m.head_size + m.qk_rope_dim + (m.v_head_dim or m.head_size)) % 2 == 0,
        "head_dim + qk_rope_dim + v_head_dim must be even (the fused kernel's mean head)",
    )


def _expert_rules(w: Workload):
    """(key, value, holds, rule) for a mixture of experts and its expert layout."""
    m, p = w.model, w.parallel
    yield (
        "model.router_score",
        m.router_score,
        m.router_score in ROUTER_SCORES,
        f"must be one of {', '.join(ROUTER_SCORES)}",
    )
    yield (
        "parallel.fsdp_reshard_after_forward",
        p.fsdp_reshard_after_forward,
        p.fsdp_reshard_after_forward in RESHARD_AFTER_FORWARD,
        f"must be one of {', '.join(RESHARD_AFTER_FORWARD)}",
    )
    yield (
        "parallel.moe_dispatcher",
        p.moe_dispatcher,
        p.moe_dispatcher in DISPATCHERS,
        f"must be one of {', '.join(DISPATCHERS)}",
    )
    yield (
        "parallel.moe_flex_backend",
        p.moe_flex_backend,
        p.moe_flex_backend in FLEX_BACKENDS,
        f"must be one of {', '.join(FLEX_BACKENDS)}",
    )
    if not m.experts:
        for key, value in (
            ("moe_fp8_dispatch", p.moe_fp8_dispatch),
            ("moe_shared_expert_overlap", p.moe_shared_expert_overlap),
            ("moe_a2a_overlap", p.moe_a2a_overlap),
        ):
            yield (
                f"parallel.{key}",
                value,
                not value,
                "needs model.experts: a dense model dispatches no tokens",
            )
        for key, value, default in (("ep", p.ep, 1), ("etp", p.etp, 0)):
            yield (
                f"parallel.{key}",
                value,
                value == default,
                "needs model.experts: a dense model has no expert layout",
            )
        return
    yield (
        "model.router_topk",
        m.router_topk,
        1 <= m.router_topk <= m.experts,
        f"must be between 1 and model.experts ({m.experts})",
    )
    yield (
        "model.dense_layers",
        m.dense_layers,
        m.dense_layers < m.layers,
        f"must be below model.layers ({m.layers}): at least one layer has experts",
    )
    yield (
        "parallel.ep",
        p.ep,
        m.experts % p.ep == 0,
        f"must divide model.experts ({m.experts}): each rank holds whole experts",
    )
    etp = p.size("etp")
    yield (
        "parallel.ep",
        p.ep,
        (p.tp * p.cp * p.dp) % (etp * p.ep) == 0,
        f"etp x ep ({etp} x {p.ep}) must divide tp x cp x dp ({p.tp * p.cp * p.dp}): the "
        "expert layout folds over the same GPUs of a pipeline stage (Megatron-Core's expert "
        "RankGenerator)",
    )
    yield (
        "parallel.sequence_parallel",
        p.sequence_parallel,
        p.tp == 1 or p.sequence_parallel,
        "must be true with tp > 1 in a mixture of experts (Megatron-Core TransformerConfig: "
        "tensor parallelism with experts needs sequence parallelism)",
    )
    yield (
        "parallel.moe_load",
        p.moe_load,
        1.0 <= p.moe_load <= p.ep,
        f"must be between 1 (balanced) and ep ({p.ep}: every token on one rank)",
    )
    yield (
        "parallel.fsdp",
        p.fsdp,
        not p.fsdp,
        "is not modelled with experts yet (use distributed_optimizer)",
    )
    yield (
        "parallel.recompute_modules",
        p.recompute_modules,
        not (p.moe_a2a_overlap and p.recomputes("moe")),
        "may not name moe with moe_a2a_overlap (Megatron-Core transformer_config.py: 'disable "
        "moe in recompute_modules when enabling overlap_moe_expert_parallel_comm')",
    )
    yield (
        "parallel.moe_a2a_overlap",
        p.moe_a2a_overlap,
        not p.moe_a2a_overlap or (p.moe_dispatcher != "allgather" and p.recompute != "full"),
        "needs moe_dispatcher alltoall or flex and no full recompute (Megatron-Core "
        "TransformerConfig: 'overlap_moe_expert_parallel_comm is supported with alltoall/flex "
        "token dispatcher', 'disable full recomputation when enabling "
        "overlap_moe_expert_parallel_comm')",
    )
    yield (
        "parallel.moe_a2a_overlap",
        p.moe_a2a_overlap,
        not p.moe_a2a_overlap or p.ep > 1,
        "needs ep > 1 (Megatron-Core TransformerConfig: 'overlap_moe_expert_parallel_comm is "
        "only supported with expert model parallelism')",
    )
    yield (
        "parallel.moe_a2a_overlap",
        p.moe_a2a_overlap,
        not p.moe_a2a_overlap
        or p.schedule == "dualpipev"
        or (p.schedule in ("1f1b", "interleaved") and (p.pp == 1 or p.chunks > 1)),
        "pairs a forward with another microbatch's backward in 1F1B without a pipeline, the "
        "interleaved schedule (Megatron-Core TransformerConfig: 'virtual_pipeline_model_"
        "parallel_size must be specified when pipeline_model_parallel_size > 1') or dualpipev",
    )
    yield (
        "parallel.moe_shared_expert_overlap",
        p.moe_shared_expert_overlap,
        not p.moe_shared_expert_overlap
        or (m.shared_expert_ffn > 0 and p.moe_dispatcher == "alltoall"),
        "needs model.shared_expert_ffn and moe_dispatcher alltoall (Megatron-Core "
        "TransformerConfig: 'moe_shared_expert_overlap only works with alltoall token "
        "dispatcher')",
    )
    yield (
        "parallel.moe_shared_expert_overlap",
        p.moe_shared_expert_overlap,
        not (p.moe_shared_expert_overlap and p.moe_a2a_overlap),
        "may not be set with moe_a2a_overlap (Megatron-Core TransformerConfig: 'disable "
        "moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm')",
    )
    yield (
        "parallel.recompute_modules",
        p.recompute_modules,
        not (p.moe_shared_expert_overlap and p.recomputes("shared_experts")),
        "may not name shared_experts with moe_shared_expert_overlap (Megatron-Core "
        "TransformerConfig: 'shared_experts recompute cannot work with "
        "--moe-shared-expert-overlap')",
    )
    yield (
        "parallel.moe_fp8_dispatch",
        p.moe_fp8_dispatch,
        not p.moe_fp8_dispatch
        or (w.training.precision == "fp8" and p.moe_dispatcher in ("alltoall", "flex")),
        "needs training.precision fp8 and moe_dispatcher alltoall or flex (the tokens an "
        "all-to-all sends are what it quantizes)",
    )


def _context_rules(w: Workload):
    """(key, value, holds, rule) for context parallelism and the rank order."""
    m, p = w.model, w.parallel
    dims = p.order.split("-")
    yield (
        "parallel.order",
        p.order,
        sorted(dims) == sorted(DIMENSIONS),
        f"must name each of {', '.join(DIMENSIONS)} once, joined by '-'",
    )
    yield (
        "parallel.cp_comm_type",
        p.cp_comm_type,
        p.cp_comm_type in CP_COMM_TYPES,
        f"must be one of {', '.join(CP_COMM_TYPES)}",
    )
    if p.cp == 1:
        return
    yield (
        "parallel.cp",
        p.cp,
        m.seq_len % (2 * p.cp) == 0,
        f"needs 2 x cp ({2 * p.cp}) to divide seq_len ({m.seq_len}): each rank holds two "
        "chunks of the causal load balancing",
    )
    yield (
        "parallel.cp",
        p.cp,
        m.attention == "flash",
        "needs model.attention: flash (Megatron-Core runs context parallelism only inside "
        "Transformer Engine's fused attention)",
    )
    yield (
        "parallel.cp_comm_type",
        p.cp_comm_type,
        p.cp_comm_type != "a2a" or (m.groups // p.tp) % p.cp == 0,
        f"a2a needs cp ({p.cp}) to divide the key/value heads of a TP rank ({m.groups // p.tp})",
    )


def _optimizer_rules(w: Workload):
    """(key, value, holds, rule) for how the optimizer stores its master weights."""
    p, t = w.parallel, w.training
    yield (
        "parallel.store_param_remainders",
        p.store_param_remainders,
        not p.store_param_remainders or p.distributed_optimizer,
        "needs distributed_optimizer (Apex's DistributedFusedAdam and Megatron-Core's "
        "precision-aware optimizer keep remainders of their own master shards)",
    )
    yield (
        "parallel.store_param_remainders",
        p.store_param_remainders,
        not (p.store_param_remainders and t.fp8_param_gather),
        "cannot be combined with training.fp8_param_gather: a remainder completes a bf16 "
        "weight, and FP8 primary weights keep full fp32 masters (NeMo sets store_params)",
    )


def _fsdp_rules(w: Workload):
    """(key, value, holds, rule) for fully sharded data parallelism."""
    p = w.parallel
    ranks = p.dp * p.cp
    yield (
        "parallel.cached_dummy_wgrads",
        p.cached_dummy_wgrads,
        not (p.cached_dummy_wgrads and p.fsdp),
        "cannot be combined with fsdp: the dummies stand in for gradients fused into "
        "Megatron's main_grad, which FSDP's sharded gradients are not",
    )
    yield (
        "parallel.fsdp",
        p.fsdp,
        not (p.fsdp and p.distributed_optimizer),
        "cannot be combined with distributed_optimizer (FSDP shards the optimizer itself)",
    )
    yield (
        "parallel.fsdp_shard",
        p.fsdp_shard,
        p.fsdp_shard == 0 or (p.fsdp and ranks % p.fsdp_shard == 0),
        f"needs fsdp and must divide dp x cp ({p.dp} x {p.cp})",
    )


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


def _per_stage_rules(w: Workload):
    """(key, value, holds, rule) for recompute_per_stage: pp counts within a chunk's layers."""
    p, key = w.parallel, "parallel.recompute_per_stage"
    items = p.recompute_per_stage.split(",")
    ints = all(x.strip().isdecimal() and x.strip().isascii() for x in items)
    yield key, p.recompute_per_stage, p.recompute == "full", "needs recompute: full"
    yield (
        key,
        p.recompute_per_stage,
        ints and len(items) == p.pp,
        f"must list pp ({p.pp}) whole numbers, comma-separated",
    )
    yield (
        key,
        p.recompute_per_stage,
        max(int(x) for x in items) <= w.layers_per_chunk,
        f"each must be at most the layers of a chunk ({w.layers_per_chunk})",
    )


@lru_cache(maxsize=256)
def _model_choices(m: ModelSpec) -> tuple:
    """(key, value, holds, rule) for the model's named choices (cached: a sweep checks one model
    many times)."""
    return tuple(_model_choice_rules(m))


def _model_choice_rules(m: ModelSpec):
    for key, kinds in (
        ("mlp", MLP_KINDS),
        ("norm", NORM_KINDS),
        ("position", POSITION_KINDS),
        ("attention", ATTENTION_KINDS),
        ("bias", BIAS_KINDS),
        ("qk_norm", QK_NORM_KINDS),
        ("norm_placement", NORM_PLACEMENTS),
    ):
        value = getattr(m, key)
        names = ", ".join(str(k).lower() for k in kinds)
        yield (
            f"model.{key}",
            value,
            any(value is k or (isinstance(k, str) and value == k) for k in kinds),
            f"must be one of {names}",
        )


def first_broken(w: Workload, batch: bool = True) -> tuple | None:
    """(key, value, rule) of the first broken rule, None where every rule holds; without the
    batch's rules (_batch_rules) where `batch` is false."""
    for key, value, holds, rule in _rules(w, batch):
        if not holds:
            return key, value, rule
    return None


def validate(w: Workload, source: str, batch: bool = True) -> Workload:
    """Raise InputError naming source, key, value and rule for the first broken rule; without
    the batch's rules (_batch_rules) where `batch` is false."""
    broken = first_broken(w, batch)
    if broken is not None:
        raise InputError(source, *broken)
    return w
