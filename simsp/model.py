"""The transformer being trained: its shape, and the parameter counts that follow from it."""

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelSpec:
    """A GPT-style decoder (learned positions, GeLU MLP, tied embeddings), as in the paper's §3."""

    layers: int
    """Transformer layers L."""
    hidden: int
    """Hidden size h."""
    heads: int
    """Attention heads a."""
    seq_len: int
    """Sequence length s."""
    vocab: int
    """Vocabulary size v (Megatron pads it to a multiple of 128 x tp; we take it as given)."""
    ffn_hidden: int = 0
    """MLP inner size f; 0 means 4h (the paper's models)."""
    tied_embeddings: bool = True
    """Input embedding and output layer share weights (the paper's §3)."""

    @property
    def ffn(self) -> int:
        """The MLP inner size actually used."""
        return self.ffn_hidden or 4 * self.hidden

    @property
    def head_dim(self) -> int:
        """Channels per attention head, h / a."""
        return self.hidden // self.heads


def layer_params(model: ModelSpec) -> int:
    """Parameters of one layer: QKV 3h²+3h, projection h²+h, MLP 2hf+f+h, two layer-norms 4h.

    With f = 4h this is 12h² + 13h, the per-layer term of the paper's §3 parameter count.
    """
    h, f = model.hidden, model.ffn
    return (3 * h * h + 3 * h) + (h * h + h) + (2 * h * f + f + h) + 4 * h


def embedding_params(model: ModelSpec) -> int:
    """Word embeddings vh plus learned position embeddings sh (paper §3)."""
    return (model.vocab + model.seq_len) * model.hidden


def total_params(model: ModelSpec) -> int:
    """12Lh²(1 + 13/(12h) + (v + s)/(12Lh)) for f = 4h, tied output layer (paper §3).

    The final layer-norm (2h) is left out, as the paper's formula does.
    """
    untied = 0 if model.tied_embeddings else model.vocab * model.hidden
    return model.layers * layer_params(model) + embedding_params(model) + untied
