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

_MCORE = "NVIDIA/Megatron-LM core_r0.14.0"
_TT = "pytorch/torchtitan@b5bcd76c66d0acb1a08b176d9639425bc55e0b2a"

STACKS = {
    "megatron": Stack(
        "megatron",
        elementwise=Setting(
            "fused",
            f"{_MCORE} megatron/core/extensions/transformer_engine.py (TELayerNormColumnParallel"
            "Linear), fusions/fused_bias_swiglu.py, fused_bias_dropout.py",
        ),
        cross_entropy=Setting(
            "unfused",
            f"{_MCORE} megatron/training/arguments.py: --cross-entropy-loss-fusion off by "
            "default (tensor_parallel/cross_entropy.py)",
        ),
        fp8_recipe=Setting(
            "delayed",
            f"{_MCORE} megatron/training/arguments.py --fp8-recipe default 'delayed'",
        ),
        fsdp_impl=Setting(
            "megatron_fsdp",
            f"{_MCORE} megatron/core/distributed/fsdp/src/megatron_fsdp/param_and_grad_buffer.py:"
            " parameters are views into the all-gather bucket (--use-megatron-fsdp)",
        ),
        attention_kernel=Setting(
            "",
            "NVIDIA/TransformerEngine transformer_engine/pytorch/attention/"
            "dot_product_attention/utils.py get_attention_backend: the backend per GPU, the "
            "hardware file's calibration.attention_kernel",
        ),
    ),
    "torchtitan": Stack(
        "torchtitan",
        elementwise=Setting(
            "eager",
            f"{_TT} torchtitan/config/job_config.py: Compile.enable false by default; the "
            "model's RMSNorm, RoPE (models/common/rope.py view_as_complex), SwiGLU "
            "(feed_forward.py F.silu(w1(x)) * w3(x)) and residual adds are torch ops",
        ),
        cross_entropy=Setting(
            "torch_fp32",
            f"{_TT} torchtitan/components/loss.py: F.cross_entropy(pred.flatten(0, 1).float(), "
            "...)",
        ),
        fp8_recipe=Setting(
            "tensorwise",
            f"{_TT} torchtitan/config/job_config.py Float8Linear recipe_name default None: "
            "torchao Float8LinearConfig's tensorwise dynamic scaling",
        ),
        fsdp_impl=Setting(
            "fsdp2",
            f"{_TT} torchtitan/models/llama3/infra/parallelize.py apply_fsdp: fully_shard per "
            "TransformerBlock",
        ),
        attention_kernel=Setting(
            "",
            f"{_TT} models/common/attention.py: sdpa_kernel([CUDNN_ATTENTION, FLASH_ATTENTION, "
            "MATH], set_priority=True), so cuDNN where the GPU runs it (PR #1776, 2025-10); "
            "before that FA2 on Hopper (set attention_kernel fa2)",
        ),
    ),
    "fsdp": Stack(
        "fsdp",
        elementwise=Setting(
            "eager",
            "huggingface/transformers models/llama/modeling_llama.py: LlamaRMSNorm (fp32 "
            "upcast), rotate_half RoPE, act_fn(gate_proj(x)) * up_proj(x) as torch ops",
        ),
        cross_entropy=Setting(
            "torch_fp32",
            "huggingface/transformers loss/loss_utils.py ForCausalLMLoss: logits.float(), "
            "nn.functional.cross_entropy",
        ),
        fp8_recipe=Setting(
            "tensorwise",
            "huggingface/accelerate utils/ao.py: torchao Float8LinearConfig() default (tensorwise)",
        ),
        fsdp_impl=Setting(
            "fsdp1",
            "huggingface/accelerate utils/dataclasses.py FullyShardedDataParallelPlugin "
            "fsdp_version default 1",
        ),
        attention_kernel=Setting(
            "fa2",
            "torch.nn.functional.scaled_dot_product_attention's default priority puts flash "
            "(FlashAttention-2) first (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp)",
        ),
    ),
    "composer": Stack(
        "composer",
        elementwise=Setting(
            "eager",
            "mosaicml/llm-foundry llmfoundry/models/mpt/modeling_mpt.py: torch LayerNorm "
            "(LPLayerNorm), GeLU and residual adds as torch ops",
        ),
        cross_entropy=Setting(
            "torch_fp32",
            "mosaicml/llm-foundry llmfoundry/models/mpt/modeling_mpt.py: "
            "torch.nn.CrossEntropyLoss on the logits",
        ),
        fp8_recipe=Setting(
            "delayed",
            "mosaicml/composer composer/core/precision.py get_precision_context: amp_fp8 runs "
            "Transformer Engine's fp8_autocast with DelayedScaling",
        ),
        fsdp_impl=Setting(
            "fsdp1",
            "mosaicml/composer composer/distributed/dist_strategy.py prepare_fsdp_module: "
            "torch FullyShardedDataParallel",
        ),
        attention_kernel=Setting(
            "fa2",
            "mosaicml/llm-foundry llmfoundry/models/layers/attention.py "
            "flash_attn_fn (attn_impl flash): flash_attn_varlen_func of flash-attn 2",
        ),
    ),
}
"""The stacks a run may name, by `training.stack`."""

STACK_NAMES = tuple(STACKS)


def resolved(stack: str, knob: str, value: str) -> str:
    """A stack knob's value as a run uses it: its own, else its stack's preset."""
    return value or STACKS[stack].settings()[knob].value
