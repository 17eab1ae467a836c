"""The transformer being trained: its shape and the architectural choices of its layers.

Notation (used across simsp; the paper's §2 plus the modern additions):

    s  sequence length            b  micro batch size         h  hidden size
    a  attention (query) heads    g  key/value heads (GQA)    d  head size (h / a by default)
    f  MLP inner size             v  vocabulary (padded)      L  layers
    t  tensor-parallel size       p  pipeline-parallel size   dp data-parallel size
    m  microbatches per iteration; chunks: model chunks a pipeline stage holds (interleaving)

Parameter counts and FLOPs are not formulas here: they are sums over the op list
(`model/layer.py`, `model/params.py`, `model/flops.py`), so memory, profiler and report cannot
drift apart.
"""

import math
from dataclasses import dataclass, field

from simsp.spec.hashed import HashedOnce

MLP_KINDS = ("gelu", "swiglu", "geglu", "squared_relu")
GATED_MLPS = ("swiglu", "geglu")
NORM_KINDS = ("layernorm", "rmsnorm")
POSITION_KINDS = ("learned", "rope", "alibi", "none")
BIAS_KINDS = (True, False, "qkv")
ATTENTION_KINDS = ("flash", "unfused")
QK_NORM_KINDS = ("none", "head", "full")
NORM_PLACEMENTS = ("pre", "post", "sandwich")
ROUTER_SCORES = ("softmax", "sigmoid")
ZERO_OK = {"allow_zero": True}
"""Field metadata: 0 is a meaningful value (no dropout), not a missing one."""


@dataclass(frozen=True)
class ModelSpec(HashedOnce):
    """A dense decoder-only transformer. The defaults are the paper's GPT (§3): learned
    positions, GeLU MLP of 4h, layer-norm, biases, dropout 0.1, tied embeddings, unfused
    attention; every modern choice is a switch with its source."""

    layers: int
    """Transformer layers L."""
    hidden: int
    """Hidden size h."""
    heads: int
    """Attention (query) heads a."""
    seq_len: int
    """Training sequence length s (a Hugging Face config.json does not hold it)."""
    vocab: int
    """Vocabulary size as the tokenizer has it; Megatron pads it (`padded_vocab`)."""
    ffn_hidden: int = 0
    """MLP inner size f; 0 means Megatron's default: 4h, or for SwiGLU int(8h/3 / 64) * 64
    (megatron/training/arguments.py, `if args.swiglu`)."""
    kv_heads: int = 0
    """Key/value heads g; 0 means g = a (multi-head). g < a is grouped-query attention
    (Ainslie et al. 2023, arXiv 2305.13245), g = 1 multi-query (Shazeer 2019, arXiv 1911.02150);
    Megatron-Core's `num_query_groups`."""
    head_dim: int = 0
    """Head size d; 0 means h / a. Megatron's `kv_channels`; set where a model sets it
    (Mistral-NeMo, Gemma), so that a x d may differ from h."""
    mlp: str = field(default="gelu", metadata={"choices": MLP_KINDS})
    """gelu (the paper's h->4h->h), swiglu (gated: two input projections, Shazeer 2020,
    arXiv 2002.05202; Llama, Mistral, Qwen), geglu (the same gate with GeLU, ibid.; Gemma) or
    squared_relu (Primer, So et al. 2021, arXiv 2109.08668; Nemotron-4)."""
    norm: str = field(default="layernorm", metadata={"choices": NORM_KINDS})
    """layernorm (weight and bias) or rmsnorm (weight only; Zhang & Sennrich 2019, arXiv
    1910.07467)."""
    position: str = field(default="learned", metadata={"choices": POSITION_KINDS})
    """learned absolute positions (an s x h table), rope (rotary, Su et al., arXiv 2104.09864,
    applied to Q and K), alibi (Press et al., arXiv 2108.12409, a bias inside the attention
    kernel) or none."""
    bias: bool | str = field(default=True, metadata={"choices": ("true", "false", "qkv")})
    """Biases on the linear layers: true (the paper's GPT), false (Llama, Mistral, Nemotron)
    or qkv (only the QKV projection, Qwen2's `attention_bias`)."""
    dropout: float = field(default=0.1, metadata=ZERO_OK)
    """Hidden and attention dropout rate; 0 means no dropout kernels and no masks saved."""
    attention: str = field(default="unfused", metadata={"choices": ATTENTION_KINDS})
    """unfused (softmax and dropout as their own kernels, s x s tensors saved: the paper) or
    flash (FlashAttention, Dao et al. 2022/2023: no s x s tensor, output and log-sum-exp saved)."""
    tied_embeddings: bool = True
    """Input embedding and output layer share weights (the paper's §3; Llama-3 unties them)."""
    qk_norm: str = field(default="none", metadata={"choices": QK_NORM_KINDS})
    """A norm on the queries and keys before rotary positions: none, head (one weight of d
    shared by every head: Qwen3, Gemma-3; Megatron-Core `qk_layernorm`) or full (over the whole
    query and key projections: OLMo-2, arXiv 2501.00656 §3.2)."""
    norm_placement: str = field(default="pre", metadata={"choices": NORM_PLACEMENTS})
    """Where a block's norms sit: pre (on its input: the paper, Llama), post (on its output
    before the residual add, none on the input: OLMo-2) or sandwich (both: Gemma-2/3)."""
    sliding_window: int = field(default=0, metadata=ZERO_OK)
    """Keys a query of a local layer attends to, itself included (Mistral-7B-v0.1 4096,
    Gemma-2 4096, Gemma-3 1024); 0, or a window at least seq_len, means every layer attends
    to the whole causal prefix."""
    attention_chunk: int = field(default=0, metadata=ZERO_OK)
    """Chunked attention (Llama-4's attention_chunk_size 8192): a local layer's queries attend
    causally within their own chunk of this many tokens; 0, or a chunk at least seq_len, means
    none. global_every then says which layers attend globally (Llama-4: every 4th, its no-RoPE
    layers)."""
    global_every: int = field(default=0, metadata=ZERO_OK)
    """With a sliding window: every n-th layer, counting from 1, attends globally and the rest
    locally (Gemma-2 2, Gemma-3 6: transformers' `layer_types`); 0 makes every layer local
    (Mistral-7B-v0.1)."""
    experts: int = field(default=0, metadata=ZERO_OK)
    """Routed experts E of a mixture-of-experts layer (Megatron-Core `num_moe_experts`); 0 is a
    dense model."""
    moe_ffn: int = field(default=0, metadata=ZERO_OK)
    """Inner size of one routed expert (`moe_ffn_hidden_size`); 0 means f."""
    router_topk: int = 2
    """Experts each token is routed to, k (`moe_router_topk`, default 2)."""
    shared_expert_ffn: int = field(default=0, metadata=ZERO_OK)
    """Inner size of the shared experts together, a dense MLP every token passes through beside
    the routed ones (`moe_shared_expert_intermediate_size`: DeepSeek-V3 1 x 2048); 0: none."""
    dense_layers: int = field(default=0, metadata=ZERO_OK)
    """The first k layers keep a dense MLP of f (DeepSeek-V3's `first_k_dense_replace` 3,
    Megatron-Core `moe_layer_freq [0]*3+[1]*58`)."""
    moe_every: int = 1
    """After them, every n-th layer, counting from 1, is a mixture of experts and the rest dense
    (Llama-4 Maverick's `interleave_moe_layer_step` 2; 1: every layer)."""
    router_score: str = field(default="softmax", metadata={"choices": ROUTER_SCORES})
    """How the router scores experts: softmax (Mixtral, Qwen3) or sigmoid (DeepSeek-V3)
    (`moe_router_score_function`)."""
    attention_sinks: bool = False
    """A learned logit per head that joins every softmax's denominator (gpt-oss's `sinks`,
    arXiv 2508.10925): its parameters; its share of the fused kernel's time is not modelled."""
    kv_lora_rank: int = field(default=0, metadata=ZERO_OK)
    """Multi-head latent attention (DeepSeek-V2/V3, arXiv 2412.19437 §2.1.1; Megatron-Core
    MLASelfAttention): keys and values are projected down to a latent of this width and back
    up per head; 0 is ordinary attention. head_dim is then the heads' non-rotary width."""
    q_lora_rank: int = field(default=0, metadata=ZERO_OK)
    """With MLA, the queries' latent width (DeepSeek-V3 1536); 0 projects queries directly."""
    qk_rope_dim: int = field(default=0, metadata=ZERO_OK)
    """With MLA, the rotary part of each query and key head, its key part shared by the heads
    (DeepSeek-V3 64; Megatron-Core qk_pos_emb_head_dim)."""
    v_head_dim: int = field(default=0, metadata=ZERO_OK)
    """With MLA, the width of each value head (DeepSeek-V3 128); 0 means head_dim."""
    mtp_layers: int = field(default=0, metadata=ZERO_OK)
    """Multi-token-prediction depth (DeepSeek-V3 1; Megatron-Core mtp_num_layers): each predicts
    one more token with a layer of the model's last kind, a projection of [h; embedding] to h and
    another pass of the output layer and loss, on the last pipeline stage. Its parameters are
    not counted in total_params (transformers builds none)."""
    vocab_divisible_by: int = 128
    """Megatron pads the vocabulary to a multiple of this times t
    (`--make-vocab-size-divisible-by`, default 128; megatron/training/tokenizer
    `_vocab_size_with_padding`)."""

    __hash__ = HashedOnce.__hash__  # the fields' hash, once (spec/hashed.py)

    @property
    def ffn(self) -> int:
        """The MLP inner size f actually used."""
        if self.ffn_hidden:
            return self.ffn_hidden
        if self.gated:
            return int(4 * self.hidden * 2 / 3 / 64) * 64
        return 4 * self.hidden

    @property
    def head_size(self) -> int:
        """Channels per attention head d."""
        return self.head_dim or self.hidden // self.heads

    @property
    def groups(self) -> int:
        """Key/value heads g."""
        return self.kv_heads or self.heads

    @property
    def gated(self) -> bool:
        """The MLP's first projection is doubled (a gate and an up projection)."""
        return self.mlp in GATED_MLPS

    @property
    def window(self) -> int:
        """The sliding window where it is narrower than the sequence, else 0."""
        return self.sliding_window if 0 < self.sliding_window < self.seq_len else 0

    @property
    def chunk(self) -> int:
        """The attention chunk where it is shorter than the sequence, else 0."""
        return self.attention_chunk if 0 < self.attention_chunk < self.seq_len else 0

    def local(self, layer: int) -> bool:
        """Whether layer `layer` (from 0) attends locally: through the sliding window or within
        its chunk."""
        if not (self.window or self.chunk):
            return False
        return not (self.global_every and (layer + 1) % self.global_every == 0)

    @property
    def mla(self) -> bool:
        """The layers attend through multi-head latent attention."""
        return self.kv_lora_rank > 0

    @property
    def expert_ffn(self) -> int:
        """The inner size of one routed expert."""
        return self.moe_ffn or self.ffn

    def moe_layer(self, layer: int) -> bool:
        """Whether layer `layer` (from 0) is a mixture of experts."""
        if not self.experts or layer < self.dense_layers:
            return False
        return (layer - self.dense_layers + 1) % self.moe_every == 0

    def linear_bias(self, which: str) -> bool:
        """Whether the `qkv`, `projection` or `mlp` linear layers carry a bias."""
        return self.bias is True or (self.bias == "qkv" and which == "qkv")

    def padded_vocab(self, tp: int) -> int:
        """v after Megatron's padding to a multiple of vocab_divisible_by x t."""
        multiple = self.vocab_divisible_by * tp
        return math.ceil(self.vocab / multiple) * multiple
