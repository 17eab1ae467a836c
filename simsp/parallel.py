"""How the model is split across GPUs and what is recomputed: the parallel plan."""

from dataclasses import dataclass

RECOMPUTE_MODES = ("none", "selective", "full")
SCHEDULES = ("gpipe", "1f1b", "interleaved")


@dataclass(frozen=True)
class ParallelSpec:
    """Megatron-LM's parallel and recompute settings for one run."""

    tp: int = 1
    """Tensor-parallel size t."""
    pp: int = 1
    """Pipeline-parallel size p."""
    dp: int = 1
    """Data-parallel size d."""
    sequence_parallel: bool = False
    """Shard layer-norm and dropout activations along the sequence (paper §4.2.2)."""
    recompute: str = "none"
    """Activation recomputation: none, selective (paper §5) or full (every layer)."""
    schedule: str = "1f1b"
    """Pipeline schedule: gpipe, 1f1b (PipeDream-flush) or interleaved."""
    virtual_stages: int = 1
    """Model chunks per pipeline stage for the interleaved schedule (the paper's m)."""
    distributed_optimizer: bool = False
    """Shard optimizer state over DP: 6 + 12/d bytes a parameter instead of 18."""
    overlap_dp_comm: bool = False
    """Overlap the DP gradient all-reduce with backward, bucket by bucket."""
    dp_bucket_mb: float = 25.0
    """Gradient bucket size for the overlapped all-reduce, MB (PyTorch DDP's bucket_cap_mb
    default)."""
    deallocate_pipeline_outputs: bool = True
    """Free a stage's output tensor after sending it (the paper's Appendix B)."""

    @property
    def gpus(self) -> int:
        """GPUs the run occupies, t x p x d."""
        return self.tp * self.pp * self.dp

    def for_layer(self) -> "ParallelSpec":
        """These settings with those one layer's ops cannot depend on (pipeline, data
        parallelism, optimizer) at their defaults: the key under which layer costs are cached."""
        return ParallelSpec(
            tp=self.tp, sequence_parallel=self.sequence_parallel, recompute=self.recompute
        )

    @property
    def chunks(self) -> int:
        """Model chunks per stage: v under the interleaved schedule, else 1."""
        return self.virtual_stages if self.schedule == "interleaved" else 1
