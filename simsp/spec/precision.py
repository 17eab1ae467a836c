"""Numeric precision of a run: BF16 throughout, or FP8 linear layers as Transformer Engine runs
them.

With `precision: fp8` every linear layer of a transformer layer (QKV, projection, fc1, fc2) runs
its three GEMMs (forward, dgrad, wgrad) on FP8 operands with a BF16 output, as Megatron-Core's
TE layers do inside `fp8_autocast` (Megatron-LM `--fp8-format hybrid`: E4M3 forward, E5M2
gradients). Core attention, norms, activations, the embedding and the output layer stay 16-bit
(Megatron-Core wraps only the transformer layers; FlashAttention runs BF16).

What FP8 adds, per linear layer, from Transformer Engine's modules (`pytorch/module/linear.py`,
`layernorm_linear.py`, 1.x and 2.5):
- Quantize kernels, memory-bound, costed by their bytes (`cast_bytes`): the layer's input in
  forward and its output gradient in backward are read in BF16 and written as FP8 in both
  layouts a GEMM needs (Hopper's FP8 tensor cores take only the TN layout, so TE writes a
  row-wise copy and a transposed copy: `fp8_cast_transpose_fused`). A column-parallel layer fed
  by a norm (QKV, fc1) gets its FP8 input from the fused norm kernel (`layernorm_fwd_fp8`) with
  no extra pass, and transposes the saved copy in backward (`fp8_transpose`) for its wgrad.
  Current scaling reads the tensor once more for its amax before casting
  (`Float8CurrentScalingQuantizer`), and cannot take the norm's fused output. MXFP8 (Blackwell)
  and FP8 block scaling write both layouts with one scale per 32 elements (E8M0, one byte) or
  one FP32 scale per 128 (`MXFP8Quantizer`, `Float8BlockQuantizer`), amax taken per block in the
  same pass.
- Memory: the input a linear layer saves for its wgrad is its FP8 copy (one byte an element,
  plus block scales), not BF16; FlashAttention still saves its BF16 output, which was the
  projection's saved input. Each linear weight keeps an FP8 row-wise and transposed copy for the
  whole iteration (TE caches them from the first microbatch, `is_first_microbatch`), beside the
  BF16 weight and the FP32 master and moments, which do not change.
- Communication: under sequence parallelism a column-parallel layer all-gathers its input
  already in FP8 (TE's LayerNormLinear quantizes `ln_out` before `gather_along_first_dim`, and
  re-gathers the saved FP8 copy for wgrad); reduce-scatters carry BF16 gradients.
Not modelled: delayed scaling's amax-history all-reduce (one small message a step), FP8 weight
all-gathers (`--fp8-param-gather`), FP8 attention.
"""

from dataclasses import dataclass

from simsp.units import BYTES_16BIT

PRECISIONS = ("bf16", "fp8")
BYTES_FP8 = 1


@dataclass(frozen=True)
class Recipe:
    """How an FP8 recipe scales and lays out its tensors."""

    name: str
    scale_bytes: float
    """Bytes of scaling factors per element and per copy (0 for one per-tensor scale)."""
    amax_pass: bool
    """Reads the BF16 tensor once more for its amax before casting (current scaling)."""
    fused_norm: bool
    """The norm kernel writes the FP8 input of the linear layer after it."""
    both_layouts: bool
    """The quantize kernel writes the column-wise copy too, so nothing is transposed later."""
    reduces_amax_history: bool = False
    """Scales come from an amax history the ranks agree on: an all-reduce of the region's amaxes
    when each chunk's forward and backward ends (delayed scaling; cost/stage_time.py)."""
    cast_bytes_per_element: float = 0.0
    """HBM bytes of casting one BF16 activation element into both FP8 layouts, where the
    recipe's kernels are not `cast_bytes`'s read-then-write (0: that formula)."""
    weight_cast_bytes: float = 0.0
    """HBM bytes per weight element of casting the weights every microbatch's forward and
    backward (torchao casts in each Float8Linear call); 0 where the FP8 copies are cached for
    the iteration (Transformer Engine)."""

    @property
    def caches_weights(self) -> bool:
        """The FP8 weight copies live through the iteration (Transformer Engine's cache)."""
        return not self.weight_cast_bytes


RECIPES = {
    "delayed": Recipe("delayed", 0.0, False, True, False, reduces_amax_history=True),
    "current": Recipe("current", 0.0, True, False, False),
    "mxfp8": Recipe("mxfp8", 1 / 32, False, True, True),
    "blockwise": Recipe("blockwise", 4 / 128, False, False, True),
    # torchao Float8Linear, dynamic scaling, as torchao's own roofline counts its kernels
    # (pytorch/ao@36027d82 torchao/testing/training/roofline_utils.py
    # get_tensor_memory_traffic_ovhd_s): tensorwise input / grad_output: amax read (2), one
    # cast writing both layouts (2 + 1 + 1): 6 B; weight: amax (2), two casts (2 + 1 each): 8 B.
    # Each Float8Linear casts its own input: no norm fusion.
    "tensorwise": Recipe(
        "tensorwise", 0.0, True, False, True, cast_bytes_per_element=6.0, weight_cast_bytes=8.0
    ),
    # rowwise: input / grad_output: kernel 1 writes the dim-0 copy and a BF16 transpose
    # (2 + 1 + 2), kernel 2 casts the transpose (2 + 1): 8 B, a 4-byte scale a row (not
    # counted); weight: 2 + 1, 2 x 2, 2 + 1: 10 B (ibid.).
    "rowwise": Recipe(
        "rowwise", 0.0, False, False, True, cast_bytes_per_element=8.0, weight_cast_bytes=10.0
    ),
}
FP8_RECIPES = tuple(RECIPES)
"""Transformer Engine's recipes: DelayedScaling, Float8CurrentScaling, MXFP8BlockScaling,
Float8BlockScaling (transformer_engine/common/recipe); torchao's Float8Linear tensorwise and
rowwise (torchao/float8/config.py Float8LinearRecipeName)."""


@dataclass(frozen=True)
class Numerics:
    """How a run's kernels compute, as `build_layer` and the memory model read it: the
    precision (and FP8 recipe) and the fused-attention kernel."""

    precision: str = "bf16"
    recipe: str = "delayed"
    attention_kernel: str = ""
    """A kernel of the hardware's flash_attention table; empty: the hardware file's own."""
    fp8_param_gather: bool = False
    """FP8 primary weights (Megatron --fp8-param-gather, TE fp8_model_init): no BF16 copy."""
    elementwise: str = "fused"
    """How the layer's memory-bound ops run: fused, eager or compiled (spec/stack.py)."""
    cross_entropy: str = "unfused"
    """The loss kernels (model/blocks/loss.py)."""

    @property
    def fp8(self) -> bool:
        return self.precision == "fp8"

    @property
    def fp8_recipe(self) -> Recipe:
        return RECIPES[self.recipe]

    def weight_copy_bytes(self) -> float:
        """Bytes a linear weight's parameter keeps beside its BF16 copy: FP8 row-wise and
        transposed copies with their scales under FP8, none under BF16. With FP8 primary
        weights the row-wise copy is the parameter and the BF16 one is gone."""
        if not self.fp8 or not self.fp8_recipe.caches_weights:
            return 0.0
        copies = 2 * (BYTES_FP8 + self.fp8_recipe.scale_bytes)
        return copies - BYTES_16BIT if self.fp8_param_gather else copies

    def gathered_bytes(self) -> float:
        """Bytes a linear weight's parameter moves in the distributed optimizer's all-gather:
        FP8 (and its scales) with FP8 primary weights, "reducing the all-gather overhead by
        half" (Megatron-Bridge docs, performance guide); else BF16."""
        if self.fp8 and self.fp8_param_gather:
            return BYTES_FP8 + self.fp8_recipe.scale_bytes
        return BYTES_16BIT


BF16 = Numerics()

MXFP8_MIN_CAPABILITY = 10.0
"""MXFP8 needs Blackwell's block-scaled tensor cores (TE `check_mxfp8_support`: compute
capability 10.0 or later)."""


def fp8_gemm_layout(layout: str, compute_capability: float) -> str:
    """The layout an FP8 GEMM runs in. On Hopper (and sm_120 Blackwell) FP8 GEMMs are TN only, so
    Transformer Engine runs dgrad and wgrad as TN on FP8 transposed copies; data-centre
    Blackwell runs every layout (TE 2.11 `utils.is_non_tn_fp8_gemm_supported`: compute
    capability 10.x-11.x or 13.0 on)."""
    cc = compute_capability
    return layout if 10.0 <= cc < 12.0 or cc >= 13.0 else "TN"


def precision_rules(numerics: Numerics, gpu) -> list[tuple[str, object, bool, str]]:
    """(key, value, holds, rule) binding a run's precision to the GPU it runs on."""
    if not numerics.fp8:
        return []
    cc = gpu.compute_capability
    return [
        (
            "gpu.peak_fp8_tflops",
            gpu.peak_fp8_tflops,
            gpu.peak_fp8_tflops > 0,
            "training.precision fp8 needs a GPU with FP8 tensor cores (set its dense FP8 peak "
            "and gemm_max_fp8_tflops)",
        ),
        (
            "gpu.compute_capability",
            cc,
            numerics.recipe != "mxfp8" or not cc or cc >= MXFP8_MIN_CAPABILITY,
            f"training.fp8_recipe mxfp8 needs compute capability >= {MXFP8_MIN_CAPABILITY:g} "
            "(Blackwell); Hopper runs delayed, current or blockwise",
        ),
    ]


def saved_fp8_bytes(bf16_bytes: float, recipe: Recipe) -> float:
    """A saved BF16 tensor's size as one FP8 copy with its scales."""
    return bf16_bytes / BYTES_16BIT * (BYTES_FP8 + recipe.scale_bytes)


def cast_bytes(elements: float, recipe: Recipe) -> float:
    """HBM bytes of quantizing a BF16 tensor into its row-wise and column-wise FP8 copies: read
    2 bytes an element (twice with an amax pass), write two 1-byte copies and their scales."""
    if recipe.cast_bytes_per_element:
        return recipe.cast_bytes_per_element * elements
    reads = BYTES_16BIT * elements * (2 if recipe.amax_pass else 1)
    return reads + 2 * elements * (BYTES_FP8 + recipe.scale_bytes)


def transpose_bytes(elements: float) -> float:
    """HBM bytes of transposing an FP8 tensor (read one copy, write the other)."""
    return 2 * BYTES_FP8 * elements
