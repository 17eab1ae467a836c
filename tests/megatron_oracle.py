"""Test oracle: a line-by-line transcription of Megatron-LM's own FLOP and memory estimates.

Source: github.com/NVIDIA/Megatron-LM, tag ``core_r0.8.0`` = commit
baf94af3c667248865f23df73b9fb8e2395e6fd0 (2024-08-12, "Merge branch
'ko3n1g/chore/remove-prerelease' into 'core_r0.8.0'").  The tag and the branch of the same name
point at the same commit.  Line numbers below are in that commit.

Files transcribed:
  * megatron/training/training.py                 L73-107   num_floating_point_operations
  * megatron/training/theoretical_memory_usage.py L11-89    compute_weight_and_optimizer_memory
                                                  L92-163   compute_activation_memory
                                                  L166-187  report_theoretical_memory (guard only)
  * megatron/training/tokenizer/tokenizer.py      L86-99    _vocab_size_with_padding
  * megatron/training/arguments.py                L378-391  ffn_hidden_size / kv_channels defaults

This module is deliberately independent of simsp: it imports only ``math`` and ``dataclasses``
and every function takes keyword-only arguments in place of Megatron's ``args`` namespace.

Argument mapping to Megatron's ``args``:
  * ``num_query_groups=None`` means ``--group-query-attention`` was NOT given, in which case the
    source overwrites ``args.num_query_groups = args.num_attention_heads`` (plain MHA).  Any other
    value means ``--group-query-attention --num-query-groups N``.
  * ``kv_channels=None`` means ``--kv-channels`` was not given and is resolved to the
    arguments.py default ``hidden_size // num_attention_heads``.
  * ``ffn_hidden_size`` must be given already resolved (Megatron's functions read the resolved
    ``args.ffn_hidden_size``); use :func:`megatron_default_ffn_hidden_size` for the default.
  * ``num_experts=None`` is the dense (non-MoE) path.

Note: this r0.8 FLOP count does NOT halve the attention score/context matmuls for causal masks;
that halving (``seq_length / hidden_size / 2``) arrived later, in commit
8873b55d6aad08f0f535174746d2836df3dfa93b (2025-03-06, "Fixes in number of floating-point
operation estimates for MoE and attention layer").
"""

import math
from dataclasses import dataclass

MEGATRON_REPO = "NVIDIA/Megatron-LM"
MEGATRON_TAG = "core_r0.8.0"
MEGATRON_COMMIT = "baf94af3c667248865f23df73b9fb8e2395e6fd0"

# theoretical_memory_usage.py L8.
NUM_BYTES_IN_MEGABYTE = 1024 * 1024


# ---------------------------------------------------------------------------------------------
# arguments.py / tokenizer.py defaults
# ---------------------------------------------------------------------------------------------


def megatron_vocab_size_with_padding(
    *, orig_vocab_size, make_vocab_size_divisible_by=128, tensor_model_parallel_size=1
):
    """``_vocab_size_with_padding(orig_vocab_size, args)``.

    NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3), megatron/training/tokenizer/tokenizer.py L86-99;
    called at L79-81 as ``args.padded_vocab_size = _vocab_size_with_padding(tokenizer.vocab_size,
    args)`` unless padded_vocab_size was already set (e.g. from a checkpoint).
    ``--make-vocab-size-divisible-by`` defaults to 128 (arguments.py L793).
    """
    # "Pad vocab size so it is divisible by model parallel size and still having GPU friendly size."
    after = orig_vocab_size
    multiple = make_vocab_size_divisible_by * tensor_model_parallel_size
    while (after % multiple) != 0:
        after += 1
    return after


def megatron_default_ffn_hidden_size(*, hidden_size, swiglu):
    """Default ``args.ffn_hidden_size`` when ``--ffn-hidden-size`` is not given.

    NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3), megatron/training/arguments.py L378-387.
    """
    if swiglu:
        # reduce the dimnesion for MLP since projections happens on
        # two linear layers. this keeps the number of paramters in
        # the same ballpark as the counterpart with 4*h size
        # we keep it a multiple of 64, which means the actual tensor size
        # will be a multiple of 64 / tp_size
        return int((4 * hidden_size * 2 / 3) / 64) * 64
    return 4 * hidden_size


def megatron_default_kv_channels(*, hidden_size, num_attention_heads):
    """Default ``args.kv_channels`` when ``--kv-channels`` is not given.

    NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3), megatron/training/arguments.py L389-391.
    """
    assert hidden_size % num_attention_heads == 0
    return hidden_size // num_attention_heads


def _resolve(hidden_size, num_attention_heads, num_query_groups, kv_channels):
    if kv_channels is None:
        kv_channels = megatron_default_kv_channels(
            hidden_size=hidden_size, num_attention_heads=num_attention_heads
        )
    # Group Query Attention.
    # (source:
    # ``if not args.group_query_attention: args.num_query_groups = args.num_attention_heads``)
    if num_query_groups is None:
        num_query_groups = num_attention_heads
    return num_query_groups, kv_channels


# ---------------------------------------------------------------------------------------------
# training.py: num_floating_point_operations
# ---------------------------------------------------------------------------------------------


def megatron_flops(
    *,
    batch_size,
    seq_length,
    num_layers,
    hidden_size,
    num_attention_heads,
    num_query_groups=None,
    kv_channels=None,
    ffn_hidden_size,
    swiglu,
    padded_vocab_size,
    num_experts=None,
    moe_router_topk=2,
):
    """``num_floating_point_operations(args, batch_size)`` -- FLOPs of one iteration (fwd+bwd).

    NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3), megatron/training/training.py L73-107.
    ``batch_size`` is the global batch in sequences: the callers (L817, L1093-1097) pass
    ``data_parallel_world_size * micro_batch_size * num_microbatches``.  Model FLOPs only: no
    term for activation recomputation.  No causal-mask halving in this version.
    ``moe_router_topk`` defaults to 2 (arguments.py L1736); it is only read when num_experts is set.

        F = 12 B s L h^2 [ (1 + g/a + s/h) (d a / h) + (f/h) k m + V / (2 L h) ]

    with g = num_query_groups, a = heads, d = kv_channels, f = ffn_hidden_size,
    k = 1 (dense) or moe_router_topk, m = 3/2 if swiglu else 1, V = padded_vocab_size.
    """
    num_query_groups, kv_channels = _resolve(
        hidden_size, num_attention_heads, num_query_groups, kv_channels
    )
    # Attention projection size.
    query_projection_size = kv_channels * num_attention_heads
    query_projection_to_hidden_size_ratio = query_projection_size / hidden_size
    # MoE.
    num_experts_routed_to = 1 if num_experts is None else moe_router_topk
    gated_linear_multiplier = 3 / 2 if swiglu else 1
    return (
        12
        * batch_size
        * seq_length
        * num_layers
        * hidden_size
        * hidden_size
        * (
            # Attention.
            (
                (1 + (num_query_groups / num_attention_heads) + (seq_length / hidden_size))
                * query_projection_to_hidden_size_ratio
            )
            # MLP.
            + ((ffn_hidden_size / hidden_size) * num_experts_routed_to * gated_linear_multiplier)
            # Logit.
            + (padded_vocab_size / (2 * num_layers * hidden_size))
        )
    )


# ---------------------------------------------------------------------------------------------
# theoretical_memory_usage.py: compute_weight_and_optimizer_memory
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MegatronParameterCounts:
    """The intermediate quantities of ``compute_weight_and_optimizer_memory`` (its verbose
    prints)."""

    num_parameters_in_transformer_layers: float
    num_parameters_in_embedding_layers: float
    num_total_parameters: float
    num_parameters_on_most_loaded_model_shard: float
    num_parameters_on_other_model_shards: (
        float | None
    )  # None when pipeline_model_parallel_size == 1
    num_bytes_per_parameter: float


def megatron_parameter_counts(
    *,
    num_layers,
    hidden_size,
    num_attention_heads,
    num_query_groups=None,
    kv_channels=None,
    ffn_hidden_size,
    swiglu,
    padded_vocab_size,
    untie_embeddings_and_output_weights=False,
    pipeline_model_parallel_size=1,
    tensor_model_parallel_size=1,
    data_parallel_size=1,
    use_distributed_optimizer=False,
    num_experts=None,
):
    """Body of ``compute_weight_and_optimizer_memory(args)`` up to the final product.

    NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3),
    megatron/training/theoretical_memory_usage.py L11-84.

        P_layers = 2 L h^2 [ (1 + g/a)(d a / h) + (f/h) E m + 2/h + 1/(L h) ]
        P_emb    = V h  (x2 if untied)
        shard    = (P_layers / pp + V h) / tp   (+ V h / tp if untied and pp == 1)
        bytes/param = 18, or 6 + 12/dp with the distributed optimizer

    Counted: QKV+proj weights, MLP weights, two 2h-parameter LayerNorms per layer and a 2h final
    LayerNorm.  Not counted: linear-layer biases, position embeddings.  All of it, LayerNorms
    included, is divided by tp.  ``data_parallel_size`` is Megatron's ``args.data_parallel_size``
    = world / (tp * pp * cp) (arguments.py L182), i.e. it excludes context parallelism.
    """
    num_query_groups, kv_channels = _resolve(
        hidden_size, num_attention_heads, num_query_groups, kv_channels
    )
    # Attention projection size.
    query_projection_size = kv_channels * num_attention_heads
    query_projection_to_hidden_size_ratio = query_projection_size / hidden_size
    # MoE.
    num_experts = 1 if num_experts is None else num_experts
    gated_linear_multiplier = 3 / 2 if swiglu else 1
    num_parameters_in_transformer_layers = (
        2
        * num_layers
        * hidden_size
        * hidden_size
        * (
            # Attention.
            ((1 + (num_query_groups / num_attention_heads)) * query_projection_to_hidden_size_ratio)
            # MLP.
            + ((ffn_hidden_size / hidden_size) * num_experts * gated_linear_multiplier)
            # Transformer layernorms.
            + (2 / hidden_size)
            # Final layernorm.
            + (1 / (num_layers * hidden_size))
        )
    )
    embedding_size = hidden_size * padded_vocab_size
    if untie_embeddings_and_output_weights:
        num_parameters_in_embedding_layers = 2 * embedding_size
    else:
        num_parameters_in_embedding_layers = embedding_size
    num_total_parameters = num_parameters_in_transformer_layers + num_parameters_in_embedding_layers

    # Most loaded model shard has (1/pp_size transformer layers + 1 embedding layer) / tp_size.
    num_parameters_on_most_loaded_model_shard = (
        (num_parameters_in_transformer_layers / pipeline_model_parallel_size) + embedding_size
    ) / tensor_model_parallel_size
    if untie_embeddings_and_output_weights and pipeline_model_parallel_size == 1:
        num_parameters_on_most_loaded_model_shard += embedding_size / tensor_model_parallel_size

    num_parameters_on_other_model_shards = None
    if pipeline_model_parallel_size > 1:
        # Other shards just have (1/pp_size transformer layers) / tp_size.
        num_parameters_on_other_model_shards = num_parameters_in_transformer_layers / (
            pipeline_model_parallel_size * tensor_model_parallel_size
        )

    num_bytes_per_parameter = 18 if not use_distributed_optimizer else 6 + (12 / data_parallel_size)
    return MegatronParameterCounts(
        num_parameters_in_transformer_layers=num_parameters_in_transformer_layers,
        num_parameters_in_embedding_layers=num_parameters_in_embedding_layers,
        num_total_parameters=num_total_parameters,
        num_parameters_on_most_loaded_model_shard=num_parameters_on_most_loaded_model_shard,
        num_parameters_on_other_model_shards=num_parameters_on_other_model_shards,
        num_bytes_per_parameter=num_bytes_per_parameter,
    )


def megatron_weight_and_optimizer_memory(**kwargs):
    """``compute_weight_and_optimizer_memory(args)`` -- bytes on the most loaded model shard.

    NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3),
    megatron/training/theoretical_memory_usage.py L11-89 (product at L85-87).
    Keyword arguments are those of :func:`megatron_parameter_counts`.
    """
    c = megatron_parameter_counts(**kwargs)
    weight_and_optimizer_memory = (
        c.num_parameters_on_most_loaded_model_shard * c.num_bytes_per_parameter
    )
    return weight_and_optimizer_memory


# ---------------------------------------------------------------------------------------------
# theoretical_memory_usage.py: compute_activation_memory
# ---------------------------------------------------------------------------------------------


def megatron_theoretical_activation_memory_applies(*, sequence_parallel, recompute_granularity):
    """The guard in ``report_theoretical_memory``: Megatron only reports the activation estimate
    with sequence parallelism AND selective recomputation (otherwise it prints weights+optimizer
    only).  NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3),
    megatron/training/theoretical_memory_usage.py L171-176.
    """
    # Formulae here assume sequence parallelism and selective activation recomputation.
    return bool(sequence_parallel) and recompute_granularity == "selective"


def megatron_activation_memory(
    *,
    seq_length,
    micro_batch_size,
    hidden_size,
    ffn_hidden_size,
    num_layers,
    padded_vocab_size,
    tensor_model_parallel_size=1,
    pipeline_model_parallel_size=1,
    virtual_pipeline_model_parallel_size=None,
    num_microbatches=None,
):
    """``compute_activation_memory(args, num_microbatches)`` -- bytes on the first pipeline stage.

    NVIDIA/Megatron-LM @ core_r0.8.0 (baf94af3),
    megatron/training/theoretical_memory_usage.py L92-163.  Only meaningful with
    sequence_parallel and recompute_granularity == 'selective' (see
    :func:`megatron_theoretical_activation_memory_applies`); the function itself does not check.
    Ignores num_attention_heads, kv_channels / GQA and swiglu (source TODO at L97-98); there is no
    a*s/h term because selective recompute drops the attention score activations.

        A = [ s b h (18 + 4 f/h) L  +  8 s b p  +  s b h p ] * penalty * discount
            + [p == 1] * 4 s b h (1 + V/h)
        return A / tp

    ``num_layers`` is the *whole model's* L, not L/p: the first stage holds L/p layers for p
    in-flight microbatches under 1F1B, i.e. L layers' worth.  penalty = 1 + (p-1)/(p v) with the
    interleaved schedule; discount = min(1, m/p) for non-interleaved p > 1 when m is known.
    """
    # Using formula in Table 2 of https://arxiv.org/pdf/2205.05198.pdf.
    # We are trying to compute the maximum activation footprint, so all calculations in this
    # function are for the first pipeline stage.

    # TODO: This function needs to take into account query_projection_size potentially being
    # different from hidden_size.

    # Memory footprint from transformer layer (self-attention and MLP).
    activation_memory = (seq_length * micro_batch_size * hidden_size) * (
        18 + (4 * (ffn_hidden_size / hidden_size))
    )
    activation_memory *= num_layers

    # Now add activation memory required for input embeddings, last LayerNorm and output layer.

    # Input to embedding (pp_size microbatches in flight).
    activation_memory += 8 * seq_length * micro_batch_size * pipeline_model_parallel_size
    # Dropout in embedding layer (pp_size microbatches in flight).
    activation_memory += seq_length * micro_batch_size * hidden_size * pipeline_model_parallel_size

    # Multiply by interleaved PP memory factor.
    if virtual_pipeline_model_parallel_size is not None:
        interleaved_schedule_memory_penalty = 1 + (
            (pipeline_model_parallel_size - 1)
            / (pipeline_model_parallel_size * virtual_pipeline_model_parallel_size)
        )
        # (source also computes, for its verbose print only:
        #  in_flight_microbatches = math.ceil(penalty * pipeline_model_parallel_size))
        activation_memory *= interleaved_schedule_memory_penalty

    # If using non-interleaved schedule, number of microbatches in pipeline can be less than
    # pp_size, so discount accordingly.
    if virtual_pipeline_model_parallel_size is None and pipeline_model_parallel_size > 1:
        if num_microbatches is not None:
            activation_memory *= min(1, num_microbatches / pipeline_model_parallel_size)

    if pipeline_model_parallel_size == 1:
        # Inputs to output layer and CE loss.
        activation_memory += (
            seq_length
            * micro_batch_size
            * hidden_size
            * 4
            * (1 + (padded_vocab_size / hidden_size))
        )

    # Activation memory is partitioned by TP size due to tensor and sequence model parallelism.
    return activation_memory / tensor_model_parallel_size


def megatron_in_flight_microbatches(
    *,
    pipeline_model_parallel_size,
    virtual_pipeline_model_parallel_size=None,
    num_microbatches=None,
):
    """The ``in_flight_microbatches`` that ``compute_activation_memory`` prints when verbose
    (theoretical_memory_usage.py L131-148); it does not enter the returned bytes.  None when the
    source never sets it (pp == 1 without interleaving)."""
    p, v = pipeline_model_parallel_size, virtual_pipeline_model_parallel_size
    if v is not None:
        return math.ceil((1 + (p - 1) / (p * v)) * p)
    if p > 1:
        return min(num_microbatches, p) if num_microbatches is not None else p
    return None
