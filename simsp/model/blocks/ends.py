"""The work outside the layers that memory and parameter counts need: what full recompute keeps
of a layer, and the first stage's embedding and the last stage's output layer."""

from simsp.model.blocks.loss import CROSS_ENTROPY
from simsp.model.ops import SP, TP, WHOLE, Saved, Weight
from simsp.spec.model import ModelSpec
from simsp.units import BYTES_16BIT, BYTES_MASK


def layer_input(model: ModelSpec, micro_batch: int, cp: int = 1) -> Saved:
    """What full recompute keeps per layer: its input, 2sbh (paper §5; sequence-sharded under
    SP), of the s/c tokens a context-parallel rank holds."""
    s = model.seq_len // cp
    return Saved("layer input", BYTES_16BIT * s * micro_batch * model.hidden, SP)


def embedding_saves(model: ModelSpec, micro_batch: int, cp: int = 1) -> tuple[Saved, ...]:
    """First stage, per microbatch: the embedding dropout mask, sbh (paper §4.3), if dropout."""
    if model.dropout <= 0:
        return ()
    sbh = model.seq_len // cp * micro_batch * model.hidden
    return (Saved("embedding dropout mask", BYTES_MASK * sbh, SP),)


def output_saves(
    model: ModelSpec, tp: int, micro_batch: int, cp: int, cross_entropy: str
) -> tuple[Saved, ...]:
    """Last stage, per microbatch: final norm input 2sbh, projection input 2sbh, and what the
    cross-entropy keeps of the logits: Megatron's fp32 softmax, 4sbv (§4.3), or Transformer
    Engine's gradient in the bf16 logits, 2sbv (simsp/model/blocks/loss.py); of the s/c tokens a
    context-parallel rank holds."""
    sb = model.seq_len // cp * micro_batch
    ce = CROSS_ENTROPY[cross_entropy]
    return (
        Saved("final norm input", BYTES_16BIT * sb * model.hidden, SP),
        Saved("output projection input", BYTES_16BIT * sb * model.hidden, SP),
        Saved(ce.saved, ce.saved_bytes * sb * model.padded_vocab(tp), TP),
    )


def embedding_weights(model: ModelSpec, tp: int) -> tuple[Weight, ...]:
    """The first stage's tables: vocab-parallel word embeddings (padded vocabulary) and, for
    learned positions, a replicated s x h position table."""
    words = (Weight("word embeddings", model.padded_vocab(tp) * model.hidden, TP),)
    return words + (
        (Weight("position embeddings", model.seq_len * model.hidden, WHOLE),)
        if model.position == "learned"
        else ()
    )


def output_weights(model: ModelSpec, tp: int, pipelined: bool) -> tuple[Weight, ...]:
    """The last stage's final norm and output layer. A tied output layer reuses the word
    embeddings, but with pp > 1 the last stage keeps its own copy (Megatron's
    `shared_embedding`, synchronised by an all-reduce)."""
    norm = Weight("final norm", (2 if model.norm == "layernorm" else 1) * model.hidden, WHOLE)
    if model.tied_embeddings and not pipelined:
        return (norm,)
    return (norm, Weight("output layer", model.padded_vocab(tp) * model.hidden, TP))
