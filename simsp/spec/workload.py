"""One training run: model, batch and parallel plan (the rules binding them: spec/rules/)."""

from dataclasses import dataclass, field, fields
from functools import cached_property

from simsp.spec.model import (
    ModelSpec,
)
from simsp.spec.parallel import ParallelSpec
from simsp.spec.precision import FP8_RECIPES, PRECISIONS, Numerics
from simsp.spec.stack import ELEMENTWISE, FSDP_IMPLS, STACK_KNOBS, STACK_NAMES, resolved

CROSS_ENTROPIES = ("unfused", "native", "te", "torch_fp32", "liger", "flash_attn")
"""The loss kernels a run may name (model/blocks/loss.py prices each; a test holds the two
lists equal)."""


@dataclass(frozen=True)
class TrainingSpec:
    """Batch sizes of one iteration."""

    global_batch: int
    """Sequences per iteration over all replicas (the paper's B in Eq. 7)."""
    micro_batch: int
    """Sequences per microbatch b."""
    precision: str = field(default="bf16", metadata={"choices": PRECISIONS})
    """Linear-layer GEMM precision: bf16, or fp8 as Transformer Engine runs it (spec/precision.py);
    attention, norms and the output layer stay 16-bit."""
    fp8_recipe: str = field(default="", metadata={"choices": FP8_RECIPES})
    """The FP8 scaling recipe under precision fp8, empty for the stack's: Transformer Engine's
    delayed, current (per-tensor current scaling), mxfp8 (Blackwell's 32-element blocks) or
    blockwise (1x128 / 128x128 blocks), or torchao Float8Linear's tensorwise or rowwise
    dynamic scaling."""

    attention_kernel: str = ""
    """Fused-attention kernel the framework runs, a `kernel` of the hardware's flash_attention
    table (fa2, fa3, cudnn, ...); empty means the hardware file's calibration.attention_kernel
    (what Transformer Engine picks there)."""

    fp8_param_gather: bool = False
    """FP8 primary weights (Megatron-LM --fp8-param-gather, Transformer Engine fp8_model_init):
    the linear weights live in FP8, without their BF16 copy, and the distributed optimizer
    all-gathers them in FP8; under FSDP, torchao's float8 all-gather (torchtitan's
    enable_fsdp_float8_all_gather: each rank casts its shard, the gather carries FP8, no weight
    is cast per call); needs precision fp8."""

    cross_entropy: str = field(default="", metadata={"choices": CROSS_ENTROPIES})
    """The loss kernel over the vocabulary shard, empty for the stack's
    (simsp/model/blocks/loss.py): unfused (Megatron's default, one torch op a step), native
    (--cross-entropy-loss-fusion), te (--cross-entropy-fusion-impl te, Transformer Engine's
    Triton kernel), torch_fp32 (F.cross_entropy over an fp32 copy of the logits, as torchtitan
    and Hugging Face run it), liger (Liger-Kernel's fused linear cross-entropy) or flash_attn
    (flash-attn's Triton kernel, llm-foundry's default)."""

    stack: str = field(default="megatron", metadata={"choices": STACK_NAMES})
    """The software stack that runs the model (spec/stack.py): megatron (Megatron-Core with
    Transformer Engine), torchtitan (FSDP2, torch ops or torch.compile, SDPA, torchao float8),
    fsdp (Hugging Face models under accelerate's FSDP) or composer (llm-foundry); it presets
    the knobs below that are left empty."""
    elementwise: str = field(default="", metadata={"choices": ELEMENTWISE})
    """How norms, rotary embedding, activation and residual adds run, empty for the stack's:
    fused (TE / Apex / Megatron fusions), eager (one kernel per torch op) or compiled
    (torch.compile's Inductor fusions) (model/blocks/elementwise.py)."""
    fsdp_impl: str = field(default="", metadata={"choices": FSDP_IMPLS})
    """With parallel.fsdp, its implementation, empty for the stack's: fsdp2 (PyTorch's
    per-parameter sharding; the all-gather output is copied into each parameter), fsdp1
    (PyTorch's flat parameter, viewed in place) or megatron_fsdp (Megatron-Core's buffers,
    viewed in place)."""

    def knob(self, name: str) -> str:
        """A stack knob (spec/stack.py STACK_KNOBS) as the run uses it: its own value, else its
        stack's."""
        return resolved(self.stack, name, getattr(self, name))

    def as_run(self) -> dict:
        """Every setting as the run uses it, the stack's presets filled in."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out.update({k: self.knob(k) for k in STACK_KNOBS})
        return out

    @cached_property
    def numerics(self) -> Numerics:
        """The precision and kernels as the layer and memory models read them."""
        return Numerics(
            self.precision,
            self.knob("fp8_recipe"),
            self.knob("attention_kernel"),
            self.fp8_param_gather,
            self.knob("elementwise"),
            self.knob("cross_entropy"),
        )


@dataclass(frozen=True)
class Workload:
    """A model, its batch and its parallel plan, validated together."""

    name: str
    model: ModelSpec
    training: TrainingSpec
    parallel: ParallelSpec

    @property
    def microbatches(self) -> int:
        """Microbatches each pipeline runs per iteration: B / (b x d)."""
        return self.training.global_batch // (self.training.micro_batch * self.parallel.dp)

    @property
    def chunk_layers(self) -> tuple[int, ...]:
        """Transformer layers of each virtual stage (model chunk), first to last."""
        return self.parallel.chunk_layers(self.model.layers)

    def stage_layers(self, stage: int) -> int:
        """Transformer layers on one pipeline stage, all its chunks together."""
        return self.parallel.stage_layers(self.model.layers, stage)

    @property
    def recomputed_layers(self) -> int | None:
        """Layers of the whole model whose forward re-runs under recompute full (None: all)."""
        from simsp.spec.schedules import stage_and_chunk

        p = self.parallel
        if p.recompute != "full" or not (p.recompute_num_layers or p.recompute_per_stage):
            return None
        return sum(
            p.recomputed_layers(n, stage_and_chunk(p.pp, vs, p.placement)[0])
            for vs, n in enumerate(self.chunk_layers)
        )

    @property
    def layers_per_chunk(self) -> int:
        """Transformer layers in a middle model chunk (every chunk, unless parallel.uneven)."""
        counts = self.chunk_layers
        return counts[min(1, len(counts) - 1)] if self.parallel.uneven else counts[0]
