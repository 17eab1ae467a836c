"""What each Megatron-Bridge release's benchmark recipe set for a mixture of experts where its
performance table is silent: the token dispatcher and the expert-parallel all-to-all overlap, by
(release, model, GPU). Read from the recipes of each release's code
(`data/moe_recipes_research.md`: Megatron-Bridge r0.1.0 @684a686 for 25.09, v0.2.0 @7af9601 and
gaod/r0.2.0_test @4a82e16 for 25.11, v0.4.0 @0fbfe7d for 26.04; its tables 5b, 6b and 7b give
the source file of every cell).

flex is Megatron-Core's flex dispatcher with HybridEP (32 SMs); the 25.09 Qwen3 runs dropped
tokens at a capacity factor of 1.0, padded, and later ones force-balanced them: both are
balanced (moe_load 1). Not modelled, and said so in each case's notes: CUDA graphs (the host's
launches), the recompute modules layernorm / moe_act of the 26.04 gpt-oss recipes (their rerun
is a norm and an activation), HybridEP's SMs beside compute.
"""

ALLTOALL, FLEX = "alltoall", "flex"

MOE_RECIPES = {
    # (release, model, GPU family): (dispatcher, overlap_moe_expert_parallel_comm)
    # Qwen3-30B-A3B (research note §5b)
    ("25.09", "qwen3-30b-a3b", "GB200"): (ALLTOALL, False),
    ("25.09", "qwen3-30b-a3b", "B200"): (ALLTOALL, False),
    ("25.09", "qwen3-30b-a3b", "H100"): (ALLTOALL, False),
    ("25.11", "qwen3-30b-a3b", "GB300"): (FLEX, False),
    ("25.11", "qwen3-30b-a3b", "GB200"): (FLEX, False),
    ("25.11", "qwen3-30b-a3b", "B200"): (ALLTOALL, False),
    ("25.11", "qwen3-30b-a3b", "H100"): (ALLTOALL, True),
    ("26.04", "qwen3-30b-a3b", "GB300"): (FLEX, False),
    ("26.04", "qwen3-30b-a3b", "GB200"): (FLEX, False),
    ("26.04", "qwen3-30b-a3b", "B300"): (FLEX, False),
    ("26.04", "qwen3-30b-a3b", "B200"): (FLEX, False),
    ("26.04", "qwen3-30b-a3b", "H100"): (FLEX, False),
    # Qwen3-235B-A22B (§6b); the edited 25.11 GB300/GB200 rows are in no branch: the 25.11
    # configs of those GPUs (HybridEP) are taken
    ("25.09", "qwen3-235b-a22b", "GB200"): (ALLTOALL, False),
    ("25.09", "qwen3-235b-a22b", "B200"): (ALLTOALL, False),
    ("25.09", "qwen3-235b-a22b", "H100"): (ALLTOALL, False),
    ("25.11", "qwen3-235b-a22b", "GB300"): (FLEX, False),
    ("25.11", "qwen3-235b-a22b", "GB200"): (FLEX, False),
    ("25.11", "qwen3-235b-a22b", "B200"): (ALLTOALL, True),
    ("25.11", "qwen3-235b-a22b", "H100"): (ALLTOALL, True),
    ("26.04", "qwen3-235b-a22b", "GB300"): (FLEX, False),
    ("26.04", "qwen3-235b-a22b", "GB200"): (FLEX, False),
    ("26.04", "qwen3-235b-a22b", "B300"): (ALLTOALL, False),
    ("26.04", "qwen3-235b-a22b", "H100"): (ALLTOALL, True),
    # gpt-oss-120b (§7b; the edited 25.11 GB300/GB200 rows: gaod/r0.2.0_test)
    ("25.11", "gpt-oss-120b", "GB300"): (ALLTOALL, False),
    ("25.11", "gpt-oss-120b", "GB200"): (FLEX, False),
    ("25.11", "gpt-oss-120b", "B200"): (ALLTOALL, False),
    ("25.11", "gpt-oss-120b", "H100"): (ALLTOALL, False),
    ("26.04", "gpt-oss-120b", "GB300"): (ALLTOALL, False),
    ("26.04", "gpt-oss-120b", "GB200"): (FLEX, True),
    ("26.04", "gpt-oss-120b", "B300"): (FLEX, False),
    ("26.04", "gpt-oss-120b", "B200"): (FLEX, False),
    ("26.04", "gpt-oss-120b", "H100"): (ALLTOALL, False),
}


def moe_recipe(release: str, model: str, family: str) -> tuple[str, bool] | None:
    """(dispatcher, EP all-to-all overlap) the release's recipe used, None where not read."""
    return MOE_RECIPES.get((release, model, family))
