"""What each framework version's performance recipe sets where a published table is silent, and
the published runs simsp treats specially: per-run overrides the configs state, runs it cannot
express, and the written reasons for the ones it misses by far. Data only; published.py reads it.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Recipe:
    """What a framework version's performance recipe sets where the published table is silent."""

    source: str
    """Where the defaults were read (repository, path, tag or commit)."""
    fp8_recipe: str
    """Transformer Engine scaling recipe its FP8 runs use, and why."""
    fp8_why: str
    tp_comm_overlap: bool = True
    """Userbuffers TP overlap where tp > 1 (needs SP)."""
    grad_reduce_in_fp32: bool = False
    """False where the recipe reduces gradients in bf16 (grad_sync_dtype / grad_reduce_in_fp32)."""
    overlap: bool = True
    """Distributed optimizer with overlapped grad reduce and param gather."""
    attention_kernel: str = ""
    """The fused-attention kernel its runs use, where not Transformer Engine's (the hardware
    file's attention_kernel)."""
    fp8_param_gather: bool = False
    """Its FP8 preset keeps FP8 primary weights (Megatron fp8_param_gather); not with FSDP,
    whose gathers simsp prices in 16 bits (NeMo v2.3.0 scripts/performance/utils.py lines
    352-354 turn it off under Megatron FSDP)."""
    store_param_remainders: bool = False
    """Its optimizer keeps 16-bit remainders of the fp32 master weights where the model is bf16
    without FP8 parameters (ParallelSpec.store_param_remainders): NeMo 1.x's
    distributed_fused_adam (Apex DistributedFusedAdam) does, megatron_base_model.py r2.0.0rc1
    lines 796-804."""
    cudnn_kernel: str = ""
    """The attention-table kernel measured at the cuDNN its container shipped, taken where the
    run's hardware table has it (where TE runs cuDNN: no attention_kernel of its own); elsewhere
    the hardware file's kernel."""
    cross_entropy: str = "unfused"
    """The loss kernel its runs use (TrainingSpec.cross_entropy): Megatron's unfused one unless
    the recipe turns on --cross-entropy-loss-fusion (native) or picks TE's (te)."""
    cached_dummy_wgrads: bool = False
    """Its Transformer Engine is 2.3 or later (get_dummy_wgrad, TE PR #1651), which caches one
    dummy weight gradient per linear shape (ParallelSpec.cached_dummy_wgrads; memory only),
    where the release pins its TE; not under FSDP, whose gradients are not Megatron's fused
    main_grad."""


_LAUNCHER = "NVIDIA/NeMo-Framework-Launcher launcher_scripts/conf/training/*"
_NEMO2 = "NVIDIA/NeMo nemo/collections/llm/recipes/*.py + scripts"
_MB = "NVIDIA-NeMo/Megatron-Bridge scripts/performance + src/megatron/bridge/recipes"
_CUDNN_2025 = (
    # cuDNN 9.13.0's B200 rows (FA4 paper figures, hardware/calibration/dgx-b200/README.md): the
    # cuDNN of 2025's containers. Megatron-Bridge v0.2.0 (25.11) docker/Dockerfile.ci builds on
    # nvcr.io/nvidia/pytorch:25.09-py3, cuDNN 9.13.1 (NVIDIA/cudnn-frontend benchmark README
    # @0b1577c); nemo:25.09.00 ships CUDA 12.9 (NVIDIA/dgxc-benchmarking llmb-run
    # nsys_mount_handler.py), an NGC base of 25.06-25.08 (cuDNN 9.10.2 in 25.06, measured within
    # 3% of 9.13.1); NeMo 25.02 and 25.04 predate 9.10, the oldest B200 cuDNN measured, so their
    # rows are if anything fast
    "cudnn-9.13"
)
_NO_CUDNN_ATTENTION = (
    # The launcher switched Transformer Engine's cuDNN attention off for these releases, so TE
    # ran flash-attn 2 (with and without CP: TE >= 1.3's AttnFuncWithCP calls either kernel;
    # TE's own rule would pick cuDNN on sm90, attention.py v1.4 lines 2834-2839)
    "fa2"
)

RECIPES = {
    "NeMo 24.07": Recipe(
        f"{_LAUNCHER} and examples/training/*/h100/*_fp8.sh @ tag 24.07 (8325688d): SP where "
        "tp > 1, activations_checkpoint_granularity null (none), optim distributed_fused_adam "
        "with overlap_grad_sync/overlap_param_sync, ub_tp_comm_overlap as each config sets it, "
        "grad_sync_dtype=bf16 in the FP8 examples",
        "delayed",
        "fp8_hybrid with fp8_amax_history_len/compute_algo: TE DelayedScaling",
        store_param_remainders=True,
        # launcher_scripts/conf/config.yaml @ 24.07 line 72: `NVTE_FUSED_ATTN: 0 # Disable
        # cudnn FA until we've tested it more` (added 562dcb45, removed a6490ffe before 24.09)
        attention_kernel=_NO_CUDNN_ATTENTION,
    ),
    "NeMo 24.03": Recipe(
        f"{_LAUNCHER}/llama/llama2_7b.yaml @ tag 24.03 (d4ec7c8b): micro_batch_size 1, "
        "checkpointing null (none), distributed_fused_adam with overlap_grad_sync/"
        "overlap_param_sync; SP taken on where tp > 1 as in every launcher config with tp > 1",
        "delayed",
        "fp8 amax history 1024 / max: TE DelayedScaling",
        tp_comm_overlap=False,
        grad_reduce_in_fp32=True,
        store_param_remainders=True,
        # launcher_scripts/conf/config.yaml @ 24.03.01 line 68: NVTE_FUSED_ATTN: 0, as 24.07
        attention_kernel=_NO_CUDNN_ATTENTION,
    ),
    "NeMo 25.02": Recipe(
        f"{_NEMO2}/llm/performance (v2.2.0): utils.py sequence_parallel = tp > 1; recipes' "
        "distributed_fused_adam_with_cosine_annealing, DistributedDataParallelConfig("
        "overlap_grad_reduce, overlap_param_gather), MegatronCommOverlapCallback("
        "tp_comm_overlap=True); no recompute",
        "delayed",
        "v2.2.0 has no --fp8_recipe; its fp8 plugin bf16_with_fp8_mixed is delayed scaling",
        # every NeMo 25.02 row here is FP8: scripts/llm/performance/pretrain_*.py (v2.2.0,
        # e.g. pretrain_llama3_8b.py lines 64-66) take bf16_with_fp8_mixed() and then set
        # grad_reduce_in_fp32 = False; that plugin sets fp8_params = True
        # (recipes/precision/mixed_precision.py line 53), i.e. FP8_PARAMETERS and
        # fp8_param_gather (recipes/CONFIGURATION-HIERARCHY.md line 153)
        grad_reduce_in_fp32=False,
        fp8_param_gather=True,
        cudnn_kernel=_CUDNN_2025,
        # nemo/collections/llm/gpt/model/base.py (v2.2.0) line 184: GPTConfig
        # cross_entropy_loss_fusion = True; its Megatron-Core 0.11 has only the native fusion
        # (language_module.py core_v0.11.0 line 79: fused_vocab_parallel_cross_entropy)
        cross_entropy="native",
    ),
    "NeMo 25.04": Recipe(
        f"{_NEMO2}/performance (v2.3.0): utils.set_primary_perf_configs (SP = tp > 1, "
        "grad_reduce_in_fp32 False under fp8, recompute_layers / use_mcore_fsdp from "
        "recommended_model_configs/model_configs_*.csv), recipes as 25.02",
        "delayed",
        "argument_parser --fp8_recipe default 'ds' (per-tensor delayed scaling)",
        # recipes/precision/mixed_precision.py (v2.3.0) bf16_with_fp8_mixed line 70
        fp8_param_gather=True,
        cudnn_kernel=_CUDNN_2025,
        # gpt/model/base.py (v2.3.0) line 290: cross_entropy_loss_fusion = True, and
        # scripts/performance/utils.py set_primary_perf_configs line 291 sets
        # cross_entropy_fusion_impl "te" for every model
        cross_entropy="te",
    ),
    "Megatron-Bridge 25.09": Recipe(
        f"{_MB} @ v0.1.0rc3: perf yaml mixed_precision.grad_reduce_in_fp32 false, recipes' "
        "distributed optimizer with overlap_grad_reduce/overlap_param_gather, CommOverlapConfig("
        "tp_comm_overlap=True) for tp > 1, SP for tp > 1, no recompute in the rows used",
        "delayed",
        "table says per-tensor FP8 without naming it; argument_parser --fp8_recipe default 'ds'",
        # src/megatron/bridge/training/mixed_precision.py @ v0.1.0rc3 line 197
        # (bf16_with_fp8_delayed_scaling_mixed), which scripts/performance/utils/helpers.py
        # get_precision_config returns for 'ds' unchanged
        fp8_param_gather=True,
        # pyproject.toml @ v0.1.0rc3 line 91: transformer-engine >=2.6.0a0,<2.8.0
        cached_dummy_wgrads=True,
        cudnn_kernel=_CUDNN_2025,
        # gpt_provider.py @ v0.1.0rc3 line 152 cross_entropy_loss_fusion = True; the Llama 3 8B /
        # 70B and 3.1 405B providers set cross_entropy_fusion_impl "te" (llama_provider.py lines
        # 186, 205, 259), as do scripts/performance/configs/llama3/*_llm_pretrain.yaml
        cross_entropy="te",
    ),
    "Megatron-Bridge 25.11": Recipe(
        f"{_MB} @ v0.2.0 (workload_base_configs.py, helpers.py): as 25.09",
        "current",
        "table column Precision 'FP8-CS' (current scaling)",
        # mixed_precision.py @ v0.2.0 line 289 (bf16_with_fp8_current_scaling_mixed)
        fp8_param_gather=True,
        # pyproject.toml @ v0.2.0 line 83: transformer-engine >=2.9.0a0,<2.10.0
        cached_dummy_wgrads=True,
        cudnn_kernel=_CUDNN_2025,
        # scripts/performance/utils/helpers.py @ v0.2.0 line 108: cross_entropy_fusion_impl "te"
        cross_entropy="te",
    ),
    "Megatron-Bridge 26.04": Recipe(
        f"{_MB} @ v0.4.1 (configs/llama/*_workload_base_configs.py): as 25.09",
        "current",
        "table 'FP8' beside separate 'MXFP8' rows; v0.4 --compute_dtype offers fp8_cs as the "
        "only per-tensor FP8",
        # mixed_precision.py @ v0.4.1 line 294
        fp8_param_gather=True,
        # pyproject.toml @ v0.4.1 line 122: TE 71bbefbf (2026-03-24)
        cached_dummy_wgrads=True,
        # scripts/performance/utils/overrides.py @ v0.4.1 line 66: cross_entropy_fusion_impl "te"
        cross_entropy="te",
    ),
    "Megatron-Bridge 26.06": Recipe(
        f"{_MB} @ v0.5.0 (configs/llama/llama31_workload_base_configs.py): as 25.09",
        "current",
        "as 26.04",
        # mixed_precision.py @ v0.5.0 line 302
        fp8_param_gather=True,
        # pyproject.toml @ v0.5.0 line 131: TE 4220403e (2026-05-29)
        cached_dummy_wgrads=True,
        # scripts/performance/utils/overrides.py @ v0.5.0 line 70: cross_entropy_fusion_impl "te"
        cross_entropy="te",
    ),
    "dgxc-benchmarking grok1 25.04": Recipe(
        "NVIDIA/dgxc-benchmarking grok1/cfg/grok1_314b.yaml, configure.sh and launch.sh @741c886 "
        "(nemo:24.12, NeMo-1 Megatron GPT; data/moe_recipes_research.md section 9): "
        "mcore_distributed_optim with overlap_grad_sync/overlap_param_sync and grad_sync_dtype "
        "bf16, sequence_parallel true, configure.sh's model.ub_tp_comm_overlap=true, "
        "activations_checkpoint_* null (none), moe_token_dispatcher_type alltoall, "
        "moe_grouped_gemm false, capacity factor 1.0 padded, NVTE_FUSED_ATTN=0",
        "delayed",
        "fp8_hybrid, amax history 1024 / max (NeMo-1's TE DelayedScaling), fp8_params on",
        grad_reduce_in_fp32=False,
        fp8_param_gather=True,
        # launch.sh's NVTE_FUSED_ATTN=0 switches Transformer Engine's cuDNN attention off
        attention_kernel=_NO_CUDNN_ATTENTION,
    ),
    "llm-foundry": Recipe(
        "mosaicml/llm-foundry scripts/train/benchmarking/ @ b2a43a147 (the A100 and H100 8-GPU "
        "tables) and 5e85bd62d (H100 >= 128 GPUs): sweep.sh runs submit_benchmarks.py with no "
        "--attn_impl, whose default is triton; FSDP FULL_SHARD, activation checkpointing as the "
        "table states, no dropout; the pretrain mpt yamls set neither alibi nor no_bias, so "
        "configuration_mpt.py's defaults hold: learned positions, biases",
        "delayed",
        "amp_fp8 runs TE's fp8_autocast, whose default recipe is DelayedScaling (assumed: the "
        "table names no recipe)",
        tp_comm_overlap=False,
        overlap=False,
        # the table's MP Mode DEFAULT reduces in fp32; its PURE rows are COMPOSER_REDUCE_FP32's
        grad_reduce_in_fp32=True,
        # attn_impl triton is llmfoundry/models/layers/flash_attn_triton.py: HazyResearch's
        # pre-MLIR Triton FlashAttention (flash-attention eff9fe6b), whose docstring says its
        # forward + backward is "slightly slower" than the CUDA FlashAttention of the time
        # (v1). Not TE's cuDNN backend, and no Hopper instructions: FlashAttention v1's measured
        # rows (FA2 paper Figs. 4-7) are the nearest kernel, slightly fast.
        attention_kernel="fa1",
    ),
}

COMPOSER_REDUCE_FP32 = {"DEFAULT": True, "FULL": True, "PURE": False}
"""Whether Composer's FSDP mixed-precision mode (llm-foundry's table column 'MP Mode') reduces
gradients in fp32: get_mixed_precision (mosaicml/composer composer/distributed/
mosaic_parallelism.py) gives DEFAULT reduce_dtype float32, PURE the autocast type (bf16), FULL
no cast (fp32)."""

TP_OVERLAP_OFF = {
    # launcher 24.07 configs with ub_tp_comm_overlap False although tp > 1
    "nemo2407-h100-gpt3-175b-128": "gpt3/175b.yaml ub_tp_comm_overlap False",
    "nemo2407-h100-gpt3-175b-512": "gpt3/175b.yaml ub_tp_comm_overlap False",
    "nemo2407-h100-nemotron-340b": "nemotron/nemotron_340b.yaml ub_tp_comm_overlap False",
}
RECOMPUTE = {
    "nemo2407-h100-nemotron-340b": (
        "selective",
        "launcher 24.07 nemotron/nemotron_340b.yaml activations_checkpoint_granularity selective",
    ),
}
_GPT_OSS = (
    "gpt-oss-120b: all nine rows are 12-47% fast, on every GPU, dispatcher and release. Its "
    "learnable attention sinks take FlashAttention out of Transformer Engine's choice (TE's "
    "own log line: 'Disabling FlashAttention for softmax_type = learnable'); cuDNN runs them "
    "only past its version gates, else TE's unfused attention, while simsp prices cuDNN's "
    "vanilla-softmax rate. Which backend these containers ran, and at what rate, is not "
    "measured: a suspected reason, not a priced one"
)
_QWEN3_30B = (
    "Qwen3-30B-A3B, the set's finest experts (128 of 768): all thirteen rows are 12-63% fast, "
    "on every GPU and release; the gap is 2.9-5.8 ms a layer and microbatch at micro batches 1 "
    "to 8 on H100 to GB300 alike, and 1.2-2.1 ms where the recipe graphed the whole layer: a "
    "host-bound layer's signature, and TE's host time per grouped-GEMM group is measured "
    "nowhere found (docs/validation.md): a suspected reason, not a priced one"
)
KNOWN_GAPS: dict[str, str] = {
    # Suspected, unmeasured: what the rows of one model share (docs/validation.md)
    "mb2511-b200-gpt-oss-120b": _GPT_OSS,
    "mb2604-h100-gpt-oss-120b": _GPT_OSS,
    "mb2604-b200-gpt-oss-120b": _GPT_OSS,
    "mb2604-b300-gpt-oss-120b": _GPT_OSS,
    "mb2604-gb200-gpt-oss-120b": _GPT_OSS,
    "mb2511-gb200-gpt-oss-120b-seq8k": _GPT_OSS,
    "mb2604-h100-qwen3-30b-a3b": _QWEN3_30B,
    "mb2511-gb200-qwen3-30b-a3b": _QWEN3_30B,
    "mb2604-gb200-qwen3-30b-a3b": _QWEN3_30B,
    # Mixture-of-experts rows whose own source contradicts itself (moe-runs/README.md caveat 4;
    # the recipe reading in data/moe_recipes_research.md §5a, §6a, §7a)
    "mb2511-b200-qwen3-30b-a3b": (
        "the table's 28.19 s is twice 25.09's 14.51 s for the same configuration and recipe "
        "(mb2509-b200-qwen3-30b-a3b-tokendrop; `validate --set moe` repeat group): a regression "
        "in the release or a defect of the table"
    ),
    "mb2511-h100-qwen3-30b-a3b": (
        "half the throughput of 25.09's same configuration (the row's own note), and v0.2.0's "
        "config runs micro batch 1 and VP 12 where the table says 2 and 24"
    ),
    "mb2511-b200-qwen3-235b-a22b": (
        "v0.2.0's config runs VP 4 where the table says VP 2, and 25.09 measured 15.97 s for the "
        "table's configuration (mb2509-b200-qwen3-235b-a22b)"
    ),
    "mb2511-h100-gpt-oss-120b": (
        "the table's micro batch 4 does not give its own gradient accumulation of 2 (512 / (4 x "
        "64)); v0.2.0's config runs micro batch 1"
    ),
}
"""Cases simsp misses by more than validate's GAP_REPORTED, and the written reason."""

SKIP = {
    "mb2604-gb200-llama3-70b-fsdp": (
        "the recipe offloads 40 layers' activations to CPU (Megatron-Bridge v0.4.1 "
        "LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V2 cpu_offloading_num_layers=40): simsp has no "
        "activation offloading"
    ),
}
