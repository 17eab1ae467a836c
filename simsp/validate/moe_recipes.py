"""What each Megatron-Bridge release's benchmark recipe set for a mixture of experts where its
performance table is silent: the token dispatcher and the expert-parallel all-to-all overlap, by
(release, model, GPU). Read from the recipes of each release's code
(`data/moe_recipes_research.md`: Megatron-Bridge r0.1.0 @684a686 for 25.09, v0.2.0 @7af9601 and
gaod/r0.2.0_test @4a82e16 for 25.11, v0.4.0 @0fbfe7d for 26.04; its tables 5b, 6b and 7b give
the source file of every cell).

flex is Megatron-Core's flex dispatcher, with HybridEP (32 SMs) in every release that sets it
except 25.09's H100 DeepSeek-V3, which enables DeepEP (moe_enable_deepep); the 25.09 Qwen3
runs dropped tokens at a capacity factor of 1.0, padded, and later ones force-balanced them:
both are balanced (moe_load 1). Not modelled, and said so in each case's notes: CUDA graphs
(the host's launches), HybridEP's SMs beside compute.
"""

ALLTOALL, FLEX, DEEPEP = "alltoall", "flex/hybridep", "flex/deepep"
"""The dispatcher, and after a slash the flex dispatcher's backend (parallel.moe_flex_backend)."""

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
    # DeepSeek-V3 (§4b): 25.09's token-drop runs turn DeepEP off; H100 DeepEP with EP overlap
    ("25.09", "deepseek-v3", "GB200"): (ALLTOALL, False),
    ("25.09", "deepseek-v3", "B200"): (ALLTOALL, False),
    ("25.09", "deepseek-v3", "H100"): (DEEPEP, True),
    ("25.11", "deepseek-v3", "GB300"): (FLEX, False),
    ("25.11", "deepseek-v3", "GB200"): (FLEX, False),
    ("25.11", "deepseek-v3", "B200"): (ALLTOALL, False),
    ("26.04", "deepseek-v3", "GB300"): (FLEX, False),
    ("26.04", "deepseek-v3", "GB200"): (FLEX, False),
    ("26.04", "deepseek-v3", "B300"): (FLEX, False),
    ("26.04", "deepseek-v3", "B200"): (FLEX, False),
    ("26.04", "kimi-k2", "GB300"): (FLEX, False),
}

SHARED_EXPERT_OVERLAP = {
    ("25.09", "deepseek-v3", "GB200"),
    ("25.09", "deepseek-v3", "B200"),
    ("25.11", "deepseek-v3", "B200"),
}
"""The recipes that run DeepSeek-V3's shared expert beside the all-to-alls
(moe_shared_expert_overlap True, research note §4b: the alltoall runs; flex and EP overlap turn
it off, apply_flex_dispatcher_backend and moe_a2a_overlap set it False)."""

DSV3_MTP = "Et*4|(t*4|)*14tmL"
"""Megatron-Bridge's DeepSeek-V3 layout for 16 virtual stages with MTP (its (4, 4) and (16, 1)
pp_vp maps: recipes/deepseek/deepseek_v3.py, research note §4c)."""
LAYOUTS = {
    # row id: (pipeline_layout, virtual stages per pipeline stage) as the release's code ran it
    "mb2509-gb200-deepseekv3-tokendrop": (DSV3_MTP, 4),
    # the table's PP 8 / VP 2 is not in r0.1.0 (it hard-codes (4, 4)); its 16 stages taken
    "mb2509-gb200-deepseekv3-tokendrop-mxfp8": (DSV3_MTP, 2),
    "mb2509-b200-deepseekv3-tokendrop": (DSV3_MTP, 1),
    "mb2509-b200-deepseekv3-tokendrop-mxfp8": (DSV3_MTP, 1),
    "mb2509-h100-deepseekv3-dropless": ("Et|(tt|)*30mL", 4),
    # gaod/r0.2.0_test's "Et*3|(t*4|)*14ttL" (16 stages, no MTP): VP 8 at PP 2, VP 4 at PP 4
    "mb2511-gb300-deepseekv3-nomtp-bf16": ("Et*3|(t*4|)*14ttL", 8),
    "mb2511-gb300-deepseekv3-nomtp-mxfp8": ("Et*3|(t*4|)*14ttL", 8),
    "mb2511-gb200-deepseekv3-nomtp-bf16": ("Et*3|(t*4|)*14ttL", 4),
    "mb2511-b200-deepseekv3-mtp": (DSV3_MTP, 1),
    "mb2604-gb300-deepseekv3": (DSV3_MTP, 8),
    "mb2604-gb200-deepseekv3": (DSV3_MTP, 4),
    "mb2604-b300-deepseekv3": (DSV3_MTP, 1),
    "mb2604-b200-deepseekv3": (DSV3_MTP, 1),
}
"""The pipeline layouts of the DeepSeek-V3 runs (61 layers, which no equal split divides). Not
found in any branch: 25.11's GB200 MXFP8 row (PP 8 / VP 4 / EP 32) and Kimi-K2's."""


def moe_recipe(release: str, model: str, family: str) -> tuple[str, bool] | None:
    """(dispatcher, EP all-to-all overlap) the release's recipe used, None where not read."""
    return MOE_RECIPES.get((release, model, family))


def shared_expert_overlap(release: str, model: str, family: str) -> bool:
    """Whether the release's recipe overlaps the shared expert with the all-to-alls."""
    return (release, model, family) in SHARED_EXPERT_OVERLAP


MOE_RECOMPUTE = {
    # row id: the recompute modules of selective recompute as each release's code set it
    # (research note §4c, §7b)
    "mb2509-gb200-deepseekv3-tokendrop": "mla_up_proj",
    "mb2509-gb200-deepseekv3-tokendrop-mxfp8": "mla_up_proj",
    "mb2509-b200-deepseekv3-tokendrop": "mla_up_proj",
    "mb2509-b200-deepseekv3-tokendrop-mxfp8": "mla_up_proj",
    "mb2509-h100-deepseekv3-dropless": "mla_up_proj,mlp",
    "mb2511-gb300-deepseekv3-nomtp-bf16": "moe_act,mlp",
    "mb2511-gb300-deepseekv3-nomtp-mxfp8": "moe_act,mlp",
    "mb2511-gb200-deepseekv3-nomtp-bf16": "mla_up_proj",
    "mb2511-b200-deepseekv3-mtp": "mla_up_proj",
    "mb2604-gb300-deepseekv3": "mla_up_proj",
    "mb2604-gb200-deepseekv3": "mlp",
    "mb2604-b300-deepseekv3": "mla_up_proj",
    "mb2604-b200-deepseekv3": "mla_up_proj",
    "mb2604-gb200-gpt-oss-120b": "layernorm,moe_act",
    "mb2604-b200-gpt-oss-120b": "layernorm,moe_act",
    "mb2604-h100-gpt-oss-120b": "layernorm,moe_act",
}
"""The MoE recipes' selective recompute modules. Megatron-Core's `mlp` recomputes the dense MLP
only (DeepSeek-V3's three first layers), never an MoE layer's."""
