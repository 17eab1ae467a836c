"""How the model is split across GPUs and what is recomputed: the parallel plan."""

from dataclasses import dataclass, field
from functools import cached_property, lru_cache

from simsp.spec.hashed import HashedOnce
from simsp.spec.schedules import REGISTRY, SCHEDULES, chunks_of

RECOMPUTE_MODES = ("none", "selective", "full", "op")
RESHARD_AFTER_FORWARD = ("default", "always", "never")
"""FSDP2's reshard_after_forward policies, as torchtitan names them
(parallelism.fsdp_reshard_after_forward)."""
RECOMPUTE_MODULES = (
    "core_attn",
    "moe_act",
    "layernorm",
    "mla_up_proj",
    "mlp",
    "moe",
    "shared_experts",
)
"""Megatron-Core's recompute modules (--recompute-modules; transformer_config.py @d98e8a64dd):
core attention; a mixture of experts' activation; the norms before a linear layer; MLA's
up-projections (these four discard their outputs); and three checkpointed whole: the dense MLP
(`mlp`, never an MoE layer's: transformer_layer.py sets recompute_mlp only where the MLP is not
an MoELayer), the MoE layer with its dispatch and combine (`moe`), the shared experts."""
DIMENSIONS = ("tp", "cp", "ep", "dp", "pp")
"""The parallel dimensions, in Megatron-Core's default rank order (fastest first)."""
EXPERT_DIMENSIONS = {"tp": "etp", "cp": "cp", "ep": "ep", "dp": "edp", "pp": "pp"}
"""The expert layers' name for each dense dimension: Megatron-Core numbers the same GPUs a second
time for them (parallel_state.initialize_model_parallel's expert RankGenerator, same order
string, tp -> expert tensor parallel, cp 1, dp -> expert data parallel)."""
CP_COMM_TYPES = ("p2p", "a2a")
DISPATCHERS = ("allgather", "alltoall", "flex")
FLEX_BACKENDS = ("deepep", "hybridep")
__all__ = [
    "DISPATCHERS",
    "FLEX_BACKENDS",
    "CP_COMM_TYPES",
    "DIMENSIONS",
    "EXPERT_DIMENSIONS",
    "RECOMPUTE_MODES",
    "RESHARD_AFTER_FORWARD",
    "SCHEDULES",
    "ParallelSpec",
]


@dataclass(frozen=True)
class ParallelSpec(HashedOnce):
    """Megatron-LM's parallel and recompute settings for one run."""

    tp: int = 1
    """Tensor-parallel size t."""
    pp: int = 1
    """Pipeline-parallel size p."""
    dp: int = 1
    """Data-parallel size d."""
    cp: int = 1
    """Context-parallel size c: each rank holds 1/c of every sequence (2c chunks, two a rank,
    balancing the causal mask), Megatron-Core's --context-parallel-size."""
    cp_comm_type: str = field(default="p2p", metadata={"choices": CP_COMM_TYPES})
    """How context-parallel attention sees the other ranks' keys and values: p2p (a ring of
    send/recv overlapped with the blockwise attention, Transformer Engine's default) or a2a
    (all-to-all from sequence to heads and back, DeepSpeed-Ulysses)."""
    ep: int = 1
    """Expert-parallel size: the routed experts are split over ep ranks, each holding E / ep of
    them (Megatron-Core --expert-model-parallel-size)."""
    etp: int = 0
    """Expert tensor-parallel size: each expert's weights split over etp ranks; 0 means t, as
    Megatron-Core defaults --expert-tensor-parallel-size to the tensor-parallel size."""
    moe_dispatcher: str = field(default="allgather", metadata={"choices": DISPATCHERS})
    """How tokens reach their experts (Megatron-Core --moe-token-dispatcher-type, default
    allgather): allgather (every rank of tp x ep gathers all their tokens, then reduce-scatters
    the outputs back), alltoall (each token sent to the ranks of its experts and back, over ep),
    or flex (DeepEP / HybridEP: a token crosses the network once per destination node and is
    forwarded over NVLink there)."""
    moe_flex_backend: str = field(default="deepep", metadata={"choices": FLEX_BACKENDS})
    """The library behind the flex dispatcher (Megatron-Core --moe-flex-dispatcher-backend,
    default deepep): deepep (DeepEP's kernels send each token once to each rank holding one of
    its experts; the rank then permutes what it received into expert order with Transformer
    Engine's permute, and unpermutes before combine) or hybridep (HybridEP's
    dispatch_with_permute and combine_with_unpermute write the tokens straight into expert order
    and back: no permute kernel of their own). Read only with moe_dispatcher flex."""
    moe_load: float = 1.0
    """Tokens the busiest expert-parallel rank processes, over the balanced share: 1 for
    force-balanced routing (--moe-router-force-load-balancing, Megatron-Bridge's benchmarks since
    25.11) and for experts padded to a capacity factor of 1; the capacity factor when padded to
    another; a measured max/mean for real routing. The slowest rank sets every layer's pace."""
    moe_fp8_dispatch: bool = False
    """Send the dispatch all-to-all's tokens in FP8 with one fp32 scale per 128 elements, the
    combine and every backward all-to-all staying BF16 (DeepSeek-V3, arXiv 2412.19437 §3.3.2;
    DeepEP's FP8 dispatch): about half the dispatch bytes. An FP8 run's what-if: Megatron-Core's
    alltoall, DeepEP and HybridEP paths dispatch BF16, and no recipe of the moe set sets it."""
    moe_shared_expert_overlap: bool = False
    """Run the shared experts on a side stream beside the token all-to-alls (Megatron-Core
    --moe-shared-expert-overlap, shared_experts.py and token_dispatcher.py): the shared expert's
    first linear and activation beside the dispatch all-to-all, its second linear beside the
    combine, each pair taking the longer of the two (the collective holding its SMs meanwhile).
    Needs shared experts and the alltoall dispatcher (TransformerConfig: 'moe_shared_expert_overlap
    only works with alltoall token dispatcher')."""
    moe_a2a_overlap: bool = False
    """Hide the expert-parallel all-to-alls of one microbatch behind the compute of another in
    the 1F1B steady state (Megatron-Core --overlap-moe-expert-parallel-comm with
    --delay-wgrad-compute); warm-up and cool-down run alone. Needs ep > 1, and with pp > 1 the
    interleaved schedule (or dualpipev)."""
    order: str = "tp-cp-ep-dp-pp"
    """Rank order, fastest-varying dimension first (Megatron-Core's `order`): decides which
    groups share a node."""
    sequence_parallel: bool = False
    """Shard layer-norm and dropout activations along the sequence (paper §4.2.2)."""
    tp_comm_overlap: bool = False
    """Overlap the TP/SP collectives with the GEMMs beside them, Transformer Engine's userbuffers
    (Megatron-LM --tp-comm-overlap; TE 2.5 module/base.py initialize_ub defaults): the input
    all-gather of the QKV and first MLP GEMMs, and the output-gradient all-gather of the
    projection and second MLP dgrads, by ring exchange on copy engines; the reduce-scatter after
    the projection and second MLP GEMMs pipelined over 4 chunks. Needs sequence_parallel (Megatron
    arguments.py)."""
    recompute: str = field(default="none", metadata={"choices": RECOMPUTE_MODES})
    """Activation recomputation: none, selective (paper §5), full (every layer) or op
    (torchtitan's per-op selective checkpointing: every op but matrix multiplies and attention
    re-run, and every second matrix multiply; model/blocks/checkpoint.py)."""
    recompute_modules: str = "core_attn"
    """With recompute selective, the modules re-run in backward, comma-separated
    (RECOMPUTE_MODULES; Megatron-Core --recompute-modules, default core_attn): each drops the
    tensors its output would have kept and re-runs its forward. In a YAML flow mapping, quote
    it: `recompute_modules: "mla_up_proj,moe_act"`."""
    recompute_num_layers: int = 0
    """With recompute full: how many layers of each model chunk are recomputed, the first ones,
    the rest keeping their activations (Megatron-LM --recompute-method block
    --recompute-num-layers N); 0 means every layer."""
    recompute_per_stage: str = field(default="", metadata={"number_list": True})
    """With recompute full: the recomputed layers of each chunk stage by stage, first to last,
    comma-separated ("4,2,0,0"; there 0 means none), for pipelines whose stages are not equally
    memory-bound (zero-bubble schedules); empty means recompute_num_layers on every stage. In a
    YAML flow mapping, quote it: `recompute_per_stage: "4,2,0,0"`."""
    schedule: str = field(default="1f1b", metadata={"choices": SCHEDULES})
    """Pipeline schedule: gpipe, 1f1b (PipeDream-flush), interleaved, zb-h1, zb-h2 (zero
    bubble), zbv or dualpipev (V-shaped); see simsp/sim/schedule/."""
    virtual_stages: int = 1
    """Model chunks per pipeline stage for the interleaved and zb-h1 schedules (the paper's m);
    the V schedules always hold two."""
    distributed_optimizer: bool = False
    """Shard optimizer state over DP (and CP): 6 + 12/(d c) bytes a parameter instead of 18."""
    store_param_remainders: bool = False
    """The distributed optimizer keeps the low 16 bits of each fp32 master weight, the bf16
    weight being its high 16: 10/(d c) bytes of state a parameter instead of 12. Apex's
    DistributedFusedAdam store_param_remainders, which NeMo 1.x turns on for a bf16 model
    without FP8 parameters (megatron_base_model.py, r2.0.0rc1 lines 796-804); Megatron-Core's
    OptimizerConfig.store_param_remainders with its precision-aware optimizer."""
    cached_dummy_wgrads: bool = False
    """Transformer Engine's cached dummy weight gradients (TE 2.3 on, PR #1651): with Megatron's
    gradient-accumulation fusion a linear layer's backward accumulates into main_grad and hands
    autograd a dummy weight gradient, one cached tensor per weight shape and dtype
    (`get_dummy_wgrad`, TE v2.11 module/base.py lines 79-92), which Megatron-Core's own output
    layer shares (core_r0.14.0 tensor_parallel/layers.py lines 573-602). They live for the run:
    2 bytes an element of each distinct linear weight shape a rank holds, the output layer's on
    its stage. Before TE 2.3 each backward allocated that tensor afresh and freed it."""
    fsdp: bool = False
    """Fully sharded data parallelism (ZeRO-3; PyTorch FSDP2 as torchtitan and llm-foundry run
    it): parameters, gradients and optimizer state sharded over the dp x cp ranks, each layer's
    parameters all-gathered before its forward and again before its backward (one layer
    prefetched), its gradients reduce-scattered after its backward."""
    fsdp_shard: int = 0
    """With fsdp, the ranks a parameter is sharded over; 0 means all of dp x cp, fewer is
    hybrid sharding (HSDP: torchtitan's data_parallel_shard_degree), the gradients then
    all-reduced over the replicas of a shard."""
    fsdp_reshard_after_forward: str = field(
        default="default", metadata={"choices": RESHARD_AFTER_FORWARD}
    )
    """With fsdp, whether a layer's gathered parameters are freed after its forward and gathered
    again for its backward (FSDP2's reshard_after_forward): default (torchtitan's: yes without
    pipelining, no with it, torchtitan/distributed/fsdp.py), always or never (kept gathered
    from forward to backward: the stage's parameters in flight)."""
    overlap_grad_reduce: bool = False
    """Overlap the gradient all-reduce (reduce-scatter with the distributed optimizer) with
    backward, bucket by bucket (Megatron-Core's --overlap-grad-reduce)."""
    overlap_param_gather: bool = False
    """With the distributed optimizer, all-gather the updated parameters bucket by bucket in the
    next forward, each bucket prefetched one ahead, instead of all at once after the step
    (Megatron-Core's --overlap-param-gather)."""
    grad_reduce_in_fp32: bool = True
    """Keep and reduce gradients in fp32 (Megatron-LM's --accumulate-allreduce-grads-in-fp32,
    forced on for bf16 runs unless --grad-reduce-in-bf16): 4 bytes a parameter, else 2. With
    fsdp, the type of its reduce-scatters (torchtitan's mixed_precision_reduce: fp32)."""
    bucket_params: int = 0
    """Parameters per gradient bucket of the overlapped reduction; 0 means Megatron-Core's
    default, max(40M, 1M x d x c) (training.py `bucket_size`)."""
    first_stage_layers: int = 0
    """Transformer layers on the first pipeline stage, if not an equal share (Megatron-Core's
    --decoder-first-pipeline-num-layers); the stages left share the rest equally."""
    last_stage_layers: int = 0
    """Transformer layers on the last pipeline stage, if not an equal share
    (--decoder-last-pipeline-num-layers)."""
    pipeline_layout: str = ""
    """Which layers each virtual stage holds, Megatron-Core's --pipeline-model-parallel-layout
    (spec/pipeline_layout.py: "Et|(tt|)*30mL"); empty: the equal split and the flags above.
    The embedding must open the first virtual stage, the loss and any MTP layers close the last.
    In a YAML flow mapping, quote it."""
    account_for_embedding_in_pipeline_split: bool = False
    """Count the embedding as one layer when splitting the layers over the pipeline: the first
    model chunk holds one transformer layer fewer (Megatron-Core's flag of that name)."""
    account_for_loss_in_pipeline_split: bool = False
    """Count the output layer and loss as one layer: the last model chunk holds one transformer
    layer fewer (Megatron-Core's flag of that name)."""
    deallocate_pipeline_outputs: bool = True
    """Free a stage's output tensor after sending it (the paper's Appendix B)."""

    __hash__ = HashedOnce.__hash__  # the fields' hash, once (spec/hashed.py)

    @property
    def gpus(self) -> int:
        """GPUs the run occupies, t x c x p x d."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def optimizer_shards(self) -> int:
        """Ranks one parameter's optimizer state is spread over: d x c with the distributed
        optimizer (Megatron-Core shards over the data-parallel group with its context-parallel
        ranks), the shard group with FSDP, else 1."""
        if self.fsdp:
            return self.fsdp_shard or self.dp * self.cp
        return self.dp * self.cp if self.distributed_optimizer else 1

    @property
    def expert_optimizer_shards(self) -> int:
        """Ranks a routed expert's optimizer state is spread over: the expert-data-parallel
        group with the distributed optimizer (Megatron-Core builds the experts' optimizer over
        it, megatron/core/optimizer/__init__.py), else 1."""
        return self.size("edp") if self.distributed_optimizer else 1

    def size(self, dim: str) -> int:
        """The size of one parallel dimension: DIMENSIONS, or EXPERT_DIMENSIONS of the expert
        layers' layout: etp (t unless set), ep, and edp, the ranks of a pipeline stage left to
        the experts' data parallelism (Megatron-Core's expert_data_parallel_size = world /
        (etp x ep x pp)). The dense layout's ep is 1 (spec/layout.py)."""
        if dim == "etp":
            return self.etp or self.tp
        if dim == "edp":
            return self.tp * self.cp * self.dp // (self.size("etp") * self.size("ep"))
        return getattr(self, dim)

    def for_layer(self) -> "ParallelSpec":
        """These settings with those one layer's ops cannot depend on (pipeline, data
        parallelism, optimizer) at their defaults: the key under which layer costs are cached."""
        return self._layer_settings

    @cached_property
    def _layer_settings(self) -> "ParallelSpec":
        return ParallelSpec(
            tp=self.tp,
            cp=self.cp,
            cp_comm_type=self.cp_comm_type if self.cp > 1 else "p2p",
            sequence_parallel=self.sequence_parallel,
            tp_comm_overlap=self.tp_comm_overlap,
            recompute=self.recompute,
            ep=self.ep,
            etp=self.etp,
            moe_dispatcher=self.moe_dispatcher,
            moe_flex_backend=self.moe_flex_backend if self.moe_dispatcher == "flex" else "deepep",
            moe_load=self.moe_load,
            moe_fp8_dispatch=self.moe_fp8_dispatch,
            moe_a2a_overlap=self.moe_a2a_overlap,
            moe_shared_expert_overlap=self.moe_shared_expert_overlap,
            recompute_modules=self.recompute_modules,
        )

    @property
    def fsdp_reshards(self) -> bool:
        """Whether FSDP frees a layer's gathered parameters after its forward (and gathers
        them again for its backward)."""
        if self.fsdp_reshard_after_forward == "default":
            return self.pp == 1
        return self.fsdp_reshard_after_forward == "always"

    def recomputes(self, module: str) -> bool:
        """Whether selective recompute re-runs this module (RECOMPUTE_MODULES)."""
        return self.recompute == "selective" and module in self._modules

    @cached_property
    def _modules(self) -> frozenset:
        return frozenset(m.strip() for m in self.recompute_modules.split(","))

    def recomputed_layers(self, layers_per_chunk: int, stage: int = 0) -> int:
        """Layers of each of a stage's chunks that re-run their forward in backward."""
        if self.recompute != "full":
            return 0
        if self.recompute_per_stage:
            return min(self.stage_recompute[stage], layers_per_chunk)
        return min(self.recompute_num_layers or layers_per_chunk, layers_per_chunk)

    @property
    def uneven(self) -> bool:
        """Whether some model chunks hold more layers than others."""
        return bool(
            self.pipeline_layout
            or self.first_stage_layers
            or self.last_stage_layers
            or self.account_for_embedding_in_pipeline_split
            or self.account_for_loss_in_pipeline_split
        )

    def chunk_layers(self, layers: int) -> tuple[int, ...]:
        """Transformer layers of each virtual stage (model chunk), first to last."""
        return split_layers(self, layers)

    def stage_layers(self, layers: int, stage: int) -> int:
        """Transformer layers on one pipeline stage, all its chunks together."""
        if not self.uneven:
            return layers // self.pp
        from simsp.spec.schedules import virtual_stage

        counts = split_layers(self, layers)
        return sum(
            counts[virtual_stage(self.pp, stage, c, self.placement)] for c in range(self.chunks)
        )

    @cached_property
    def stage_recompute(self) -> tuple[int, ...]:
        """recompute_per_stage as integers (the workload rules check its form)."""
        return tuple(int(x) for x in self.recompute_per_stage.split(","))

    @cached_property
    def last_stage(self) -> int:
        """The stage holding the model's last layers and output layer: p - 1, or 0 under the V
        schedules (their last virtual stage folds back onto the first rank)."""
        from simsp.spec.schedules import stage_and_chunk

        return stage_and_chunk(self.pp, self.pp * self.chunks - 1, self.placement)[0]

    @property
    def placement(self) -> str:
        """Where the schedule puts each chunk: loop or v (simsp/sim/schedule/)."""
        return REGISTRY[self.schedule].placement if self.schedule in REGISTRY else "loop"

    @cached_property
    def chunks(self) -> int:
        """Model chunks per stage under the schedule: virtual_stages where it takes chunks,
        2 for the V schedules, else 1."""
        if self.schedule not in REGISTRY:
            return 1
        return chunks_of(self.schedule, self.virtual_stages)


@lru_cache(maxsize=4096)
def split_layers(par: ParallelSpec, layers: int) -> tuple[int, ...]:
    """Layers of each virtual stage as Megatron-Core r0.13 builds them (transformer_block.py
    `get_num_layers_to_build`): an equal share by default; with first/last_stage_layers those
    stages hold that many and the stages left share the rest, each stage's layers split equally
    over its chunks; with account_for_embedding/loss_in_pipeline_split the embedding and the loss
    count as a layer each, taken from the first and last chunk. The workload rules check that
    the shares are whole (spec/rules/pipeline.py); a pipeline_layout names each virtual stage's
    layers."""
    from simsp.spec.pipeline_layout import parse
    from simsp.spec.schedules import stage_and_chunk

    p, v = par.pp, par.chunks
    if par.pipeline_layout:
        return tuple(stage.layers for stage in parse(par.pipeline_layout))
    flags = par.account_for_embedding_in_pipeline_split + par.account_for_loss_in_pipeline_split
    if not (par.first_stage_layers or par.last_stage_layers):
        counts = [(layers + flags) // (p * v)] * (p * v)
        counts[0] -= par.account_for_embedding_in_pipeline_split
        counts[-1] -= par.account_for_loss_in_pipeline_split
        return tuple(counts)
    ends = {0: par.first_stage_layers, p - 1: par.last_stage_layers}
    fixed = {s: n for s, n in ends.items() if n}
    left = p - len(fixed)
    share = (layers - sum(fixed.values())) // left if left else 0
    stage = [fixed.get(s, share) for s in range(p)]
    return tuple(stage[stage_and_chunk(p, vs, par.placement)[0]] // v for vs in range(p * v))
