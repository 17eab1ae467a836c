"""Data parallelism's sharding: FSDP and what the optimizer keeps of its master weights."""

from simsp.spec.workload import Workload


def fsdp_rules(w: Workload):
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


def optimizer_rules(w: Workload):
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
