"""A mixture of experts and its expert layout: routing, expert parallelism on the mesh, the
dispatchers and their overlaps, as Megatron-Core's TransformerConfig checks them."""

from simsp.spec.model import ROUTER_SCORES
from simsp.spec.parallel import DISPATCHERS, FLEX_BACKENDS, RESHARD_AFTER_FORWARD
from simsp.spec.workload import Workload


def rules(w: Workload):
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
