"""The software stack a run uses: which kernels and data-parallel machinery execute the model.

simsp prices every op by what it moves and computes; the stack decides which kernels do it. A
stack is a named preset of settings, each also a `training` knob of its own, so a run can
describe a stack that is none of them (a knob left empty takes the stack's value):

- `elementwise`: the norms, rotary embedding, activation and residual adds as fused kernels
  (Transformer Engine / Apex / Megatron's fusions), as eager torch ops (each op its own kernel,
  with fp32 intermediates where the model code upcasts), or fused by Inductor under
  `torch.compile` (model/blocks/elementwise.py prices each);
- `cross_entropy`: the loss kernels (model/blocks/loss.py);
- `fp8_recipe`: Transformer Engine's recipes, or torchao's Float8Linear (spec/precision.py);
- `fsdp_impl`: with parallel.fsdp, FSDP2's per-parameter sharding (whose all-gather output is
  copied out into each parameter, cost/fsdp.py), FSDP1's flat parameter or Megatron-FSDP's
  buffers (views of the gathered buffer, no copy);
- `attention_kernel`: the fused-attention kernel (a row of the hardware's flash_attention
  table); empty in a stack too means the hardware file's (what its framework picks there).

Each preset's settings cite the code they were read from (a test checks every one has a
source).
"""

from dataclasses import dataclass

ELEMENTWISE = ("fused", "eager", "compiled")
"""How the memory-bound ops of a layer run (model/blocks/elementwise.py)."""
FSDP_IMPLS = ("fsdp2", "fsdp1", "megatron_fsdp")
"""Fully sharded data parallelism: PyTorch's FSDP2 (`fully_shard`, per-parameter DTensors) or
FSDP1 (`FullyShardedDataParallel`, one flat parameter per wrapped module), or Megatron-FSDP
(Megatron-Core's own, gathering into the buffers its parameters view)."""


@dataclass(frozen=True)
class Setting:
    """One preset value and where it was read."""

    value: str
    source: str


@dataclass(frozen=True)
class Stack:
    """A named software stack: a value for every stack knob, each with its source."""

    name: str
    elementwise: Setting
    cross_entropy: Setting
    fp8_recipe: Setting
    fsdp_impl: Setting
    attention_kernel: Setting

    def settings(self) -> dict[str, Setting]:
        """The stack knobs and their preset values, by knob name."""
        return {k: getattr(self, k) for k in STACK_KNOBS}


STACK_KNOBS = ("elementwise", "cross_entropy", "fp8_recipe", "fsdp_impl", "attention_kernel")
"""The training knobs a stack presets (an empty knob takes its stack's value)."""

_MCORE = "NVIDIA/Megatron-LM@32ad5c89a6b6 (core_r0.14.0)"
_TT = "pytorch/torchtitan@b5bcd76c66d0"

STACKS = {
    "megatron": Stack(
        "megatron",
        elementwise=Setting(
            "fused",
            f"{_MCORE} megatron/core/extensions/transformer_engine.py:412 "
            "TELayerNormColumnParallelLinear; fusions/fused_bias_swiglu.py, fused_bias_dropout.py "
            "(training/arguments.py:1937-1946 --no-*-fusion: on by default)",
        ),
        cross_entropy=Setting(
            "unfused",
            f"{_MCORE} megatron/training/arguments.py:1954 --cross-entropy-loss-fusion store_true "
            "(off): language_module.py:159 tensor_parallel.vocab_parallel_cross_entropy",
        ),
        fp8_recipe=Setting(
            "delayed",
            f"{_MCORE} megatron/training/arguments.py:1224 --fp8-recipe default='delayed'",
        ),
        fsdp_impl=Setting(
            "megatron_fsdp",
            f"{_MCORE} megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py"
            ":939 fetch_bucket: p.data = a .view of the all-gathered bucket (--use-megatron-fsdp)",
        ),
        attention_kernel=Setting(
            "",
            "NVIDIA/TransformerEngine@d0067d0d transformer_engine/pytorch/attention/"
            "dot_product_attention/utils.py:393 get_attention_backend: the backend per GPU, the "
            "hardware file's calibration.attention_kernel",
        ),
    ),
    "torchtitan": Stack(
        "torchtitan",
        elementwise=Setting(
            "eager",
            f"{_TT} torchtitan/config/configs.py:295 CompileConfig.enable = False; the llama3 "
            "RMSNorm, ComplexRoPE (models/common/rope.py:260 view_as_complex), SwiGLU "
            "(feed_forward.py:54 F.silu(w1(x)) * w3(x)) and residual adds are torch ops",
        ),
        cross_entropy=Setting(
            "torch_fp32",
            f"{_TT} torchtitan/components/loss.py:57 cross_entropy_loss: "
            "F.cross_entropy(pred.float(), labels, reduction='sum')",
        ),
        fp8_recipe=Setting(
            "rowwise",
            f"{_TT} torchtitan/components/quantization/float8.py:58 Float8LinearConverter "
            "recipe_name default 'rowwise' (tensorwise dropped by PR #3127, 2026-04)",
        ),
        fsdp_impl=Setting(
            "fsdp2",
            f"{_TT} torchtitan/distributed/fsdp.py:362 apply_fsdp_to_decoder: fully_shard per "
            "transformer block, then the root (models/llama3/parallelize.py:68)",
        ),
        attention_kernel=Setting(
            "",
            f"{_TT} torchtitan/models/common/attention.py:389 sdpa_kernel([CUDNN_ATTENTION, "
            "FLASH_ATTENTION, MATH], set_priority=True): cuDNN where the GPU runs it (PR #1776, "
            "2025-10; before that FA2 on Hopper: set attention_kernel fa2)",
        ),
    ),
    "fsdp": Stack(
        "fsdp",
        elementwise=Setting(
            "eager",
            "huggingface/transformers@5dd4a635 src/transformers/models/llama/modeling_llama.py: "
            "LlamaRMSNorm (.to(torch.float32)), rotate_half RoPE, "
            "act_fn(gate_proj(x)) * up_proj(x) as torch ops",
        ),
        cross_entropy=Setting(
            "torch_fp32",
            "huggingface/transformers@0114da07 src/transformers/loss/loss_utils.py "
            "ForCausalLMLoss: logits.float(), then nn.functional.cross_entropy",
        ),
        fp8_recipe=Setting(
            "tensorwise",
            "huggingface/accelerate@16cb6eb8 src/accelerate/utils/dataclasses.py:354 "
            "AORecipeKwargs: torchao Float8LinearConfig() (pytorch/ao@36027d8 "
            "torchao/float8/config.py:107 CastConfig TENSORWISE)",
        ),
        fsdp_impl=Setting(
            "fsdp1",
            "huggingface/accelerate@16cb6eb8 src/accelerate/utils/dataclasses.py:1823 "
            "FullyShardedDataParallelPlugin: fsdp_version from FSDP_VERSION, default 1",
        ),
        attention_kernel=Setting(
            "fa2",
            "pytorch/pytorch@21c3369e aten/src/ATen/native/transformers/cuda/sdp_utils.cpp "
            "priority_order: flash (FlashAttention-2) first, then efficient, math, cudnn",
        ),
    ),
    "composer": Stack(
        "composer",
        elementwise=Setting(
            "eager",
            "mosaicml/llm-foundry@8c8dd48f llmfoundry/models/layers/norm.py:35 LPLayerNorm "
            "(MPT's default norm, bf16), ffn.py MPTMLP GeLU and residual adds as torch ops",
        ),
        cross_entropy=Setting(
            "flash_attn",
            "mosaicml/llm-foundry@8c8dd48f llmfoundry/models/mpt/modeling_mpt.py:1513 "
            "ComposerMPTCausalLM loss_fn default 'fused_crossentropy': flash-attn's Triton "
            "CrossEntropyLoss",
        ),
        fp8_recipe=Setting(
            "delayed",
            "mosaicml/composer@64051888 composer/core/precision.py:97 get_precision_context: "
            "amp_fp8 runs te.fp8_autocast with DelayedScaling",
        ),
        fsdp_impl=Setting(
            "fsdp1",
            "mosaicml/composer@64051888 composer/trainer/trainer.py:3769 an fsdp dict is "
            "FSDPConfig unless FSDP_VERSION=2: dist_strategy.py:454 FullyShardedDataParallel",
        ),
        attention_kernel=Setting(
            "fa2",
            "mosaicml/llm-foundry@8c8dd48f llmfoundry/models/layers/attention.py:418 "
            "flash_attn_fn (attn_impl flash, the default): flash-attn 2's flash_attn_varlen_func",
        ),
    ),
}
"""The stacks a run may name, by `training.stack`."""

STACK_NAMES = tuple(STACKS)


def resolved(stack: str, knob: str, value: str) -> str:
    """A stack knob's value as a run uses it: its own, else its stack's preset."""
    return value or STACKS[stack].settings()[knob].value
