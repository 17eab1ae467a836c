"""The vocabulary-parallel cross-entropy at the end of the last stage: what each implementation
Megatron can run moves through HBM, keeps for backward and sends between TP ranks, per logit
(one token's score for one vocabulary entry of a rank's shard)."""

from dataclasses import dataclass

from simsp.units import BYTES_16BIT, BYTES_FP32


@dataclass(frozen=True)
class CrossEntropy:
    """One implementation's cost per logit and per token."""

    name: str
    forward_bytes: float
    """HBM bytes its forward kernels move per logit."""
    backward_bytes: float
    """HBM bytes its backward kernels move per logit."""
    saved_bytes: float
    """Bytes per logit it keeps from forward for backward."""
    saved: str
    """What those bytes are, as the memory table names them."""
    all_reduce_floats: tuple[int, ...]
    """Its forward's all-reduces over the TP group, each as the fp32 values a token it sums."""
    all_gather_floats: int
    """fp32 values a token each TP rank all-gathers in forward (0: no all-gather)."""
    working_bytes: float = 0.0
    """Bytes per logit the loss holds for a moment beyond what it keeps (its largest working set
    less `saved_bytes`), counted once on the last stage's peak; 0 where not counted (Megatron's
    and TE's kernels work in place on the logits' buffer)."""


UNFUSED = CrossEntropy(
    "unfused",
    # bf16 -> fp32 (2 + 4), max (4), subtract in place (4 + 4), exp in place (4 + 4), sum (4),
    # divide in place for backward (4 + 4)
    forward_bytes=38.0,
    # the saved softmax times the loss gradient in place (4 + 4), to bf16 for the logits GEMM
    # (4 + 2); the one-hot target is subtracted at one indexed logit a token
    backward_bytes=14.0,
    saved_bytes=BYTES_FP32,
    saved="fp32 softmax",
    all_reduce_floats=(1, 1, 1),
    all_gather_floats=0,
)
"""Megatron's _VocabParallelCrossEntropy, one torch op a step (Megatron-LM core_v0.14.0
tensor_parallel/cross_entropy.py): all-reduces of the max, the target's logit and the sum of
exponentials (lines 130, 148, 154; the paper's Megatron all-reduces the same three,
megatron/mpu/cross_entropy.py); the fp32 softmax is saved."""

NATIVE = CrossEntropy(
    "native",
    # calculate_logits_max: bf16 in, its fp32 copy out, max on the way (2 + 4);
    # calculate_predicted_logits: subtract the max and exp in place, summing (4 + 4);
    # calculate_cross_entropy_loss: divide in place by the sum (4 + 4)
    forward_bytes=22.0,
    # calculate_gradients: times the loss gradient, the saved softmax updated in place and
    # written out as bf16 (4 + 4 + 2)
    backward_bytes=10.0,
    saved_bytes=BYTES_FP32,
    saved="fp32 softmax",
    all_reduce_floats=(1, 2),
    all_gather_floats=0,
)
"""Megatron's fused_vocab_parallel_cross_entropy (--cross-entropy-loss-fusion with
--cross-entropy-fusion-impl native, Megatron-LM core_v0.12.0 fusions/fused_cross_entropy.py):
the same steps as UNFUSED, each @jit_fuser function (torch.compile) taken as one kernel, the
fp32 copy written by the max's own kernel; the target's logit and the sum travel in one
all-reduce of two values a token (the torch.cat, line 42); the fp32 softmax is saved."""

TE = CrossEntropy(
    "te",
    # online_softmax_kernel reads the bf16 logits (2); cross_entropy_kernel reads them again and
    # writes the gradient over them in place (2 + 2)
    forward_bytes=6.0,
    # element_mul_kernel scales that gradient by the loss gradient in place (2 + 2)
    backward_bytes=4.0,
    saved_bytes=BYTES_16BIT,
    saved="logits gradient (bf16)",
    all_reduce_floats=(),
    all_gather_floats=3,
)
"""Transformer Engine's Triton parallel_cross_entropy (--cross-entropy-fusion-impl te;
TransformerEngine v2.6 pytorch/triton/cross_entropy.py): each rank's max, sum of exponentials
and target logit (3 fp32 a token) are all-gathered; forward leaves the gradient in the logits'
own bf16 buffer, which is what backward keeps."""

TORCH_FP32 = CrossEntropy(
    "torch_fp32",
    # pred.float() (2 + 4); log_softmax (read 4, write 4); nll_loss reads one logit a token
    forward_bytes=14.0,
    # nll_loss_backward writes a dense fp32 gradient (4); log_softmax_backward reads it and the
    # saved output, writes the input gradient (4 + 4 + 4); back to bf16 (4 + 2)
    backward_bytes=22.0,
    saved_bytes=BYTES_FP32,
    saved="fp32 log-softmax",
    all_reduce_floats=(1, 1, 1),
    all_gather_floats=0,
    # forward: the bf16 logits (2, held by the train step until the loss returns) and their
    # fp32 copy (4) beside the log-softmax; backward: nll_loss's dense fp32 gradient (4) and
    # log_softmax_backward's fp32 output (4) beside the saved log-softmax: the larger, 8
    working_bytes=2 * BYTES_FP32,
)
"""torch.nn.functional.cross_entropy over an fp32 copy of the logits, each step an eager ATen
kernel: torchtitan (pytorch/torchtitan@b5bcd76 torchtitan/components/loss.py
`cross_entropy_loss`: F.cross_entropy(pred.flatten(0, 1).float(), ...)) and Hugging Face's
ForCausalLMLoss (logits.float()). Under TP, DTensor's loss_parallel reduces the max, the sum
and the target's logit over the vocabulary shards, as Megatron does
(torch/distributed/tensor/parallel/loss.py)."""

LIGER = CrossEntropy(
    "liger",
    # LigerFusedLinearCrossEntropy: per chunk of tokens, write the bf16 logits (2), read them
    # for max and sum (2), write the gradient over them (2); backward only scales the gradients
    # it already computed
    forward_bytes=6.0,
    backward_bytes=0.0,
    saved_bytes=0.0,
    saved="no logits (fused linear cross-entropy)",
    all_reduce_floats=(),
    all_gather_floats=0,
)
"""Liger-Kernel's fused linear cross-entropy (linkedin/Liger-Kernel src/liger_kernel/ops/
fused_linear_cross_entropy.py): the output layer's GEMM and the loss over chunks of tokens,
the logits' and the input's gradients computed in forward, so no logits are kept; one GPU's
vocabulary (no TP sharding of the loss)."""

FLASH_ATTN = CrossEntropy(
    "flash_attn",
    # cross_entropy_fwd_kernel reads the bf16 logits once (2), writing a loss and an lse a row
    forward_bytes=2.0,
    # cross_entropy_bwd_kernel reads them again (2) and writes the gradient (2)
    backward_bytes=4.0,
    saved_bytes=BYTES_16BIT,
    saved="bf16 logits",
    all_reduce_floats=(1,),
    all_gather_floats=1,
)
"""flash-attn's Triton CrossEntropyLoss (Dao-AILab/flash-attention@0251105a
flash_attn/ops/triton/cross_entropy.py): the logits are saved (ctx.save_for_backward(logits,
lse, labels)); over a TP group each rank's lse is all-gathered and the losses all-reduced (lines
224-229). llm-foundry's default loss (ComposerMPTCausalLM loss_fn 'fused_crossentropy')."""

CROSS_ENTROPY = {c.name: c for c in (UNFUSED, NATIVE, TE, TORCH_FP32, LIGER, FLASH_ATTN)}
CROSS_ENTROPIES = tuple(CROSS_ENTROPY)
