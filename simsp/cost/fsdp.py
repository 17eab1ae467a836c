"""Fully sharded data parallelism (ZeRO-3) as PyTorch FSDP2 runs it under torchtitan: the
per-layer parameter all-gathers and gradient reduce-scatters, and what they expose.

Each transformer layer is one FSDP unit. Forward all-gathers a layer's 16-bit parameters
(torchtitan's `mixed_precision_param = bfloat16`) while the layer before computes (FSDP2's
implicit forward prefetch), so the first layer of a chunk waits for its whole gather and each
later one for what the previous layer's forward does not cover. Backward gathers the
parameters again (`reshard_after_forward`, torchtitan's default without pipelining; with
pipelining torchtitan keeps them gathered, so backward gathers nothing) and reduce-scatters each
layer's gradients in fp32 (`mixed_precision_reduce = float32`), both alongside the next layer's
backward; the last reduce-scatter of a chunk is exposed. The gradients go in 16 bits where the
run reduces in bf16 (`grad_reduce_in_fp32` false: Composer's PURE mixed precision, Megatron
FSDP's bf16 reduce). With hybrid sharding the reduce-scatter is followed by an all-reduce over
the replicas of the shard. FSDP2 does this every microbatch
(torchtitan does not skip gradient sync under gradient accumulation). Sources: torchtitan
docs/fsdp.md and parallelize.py @a3104201, torch.distributed.fsdp._fully_shard (research notes in
the commit introducing this module). Under FSDP2 each gather is followed by a copy of the
gathered buffer into the per-parameter tensors on the compute stream (torch
distributed/fsdp/_fully_shard/_fsdp_collectives.py foreach_all_gather_copy_out, pytorch/pytorch
PRs #117203, #119451; #186601 proposes removing it); FSDP2's copy-in before each collective runs
on its own stream, beside the compute, and is not priced.
"""

from dataclasses import dataclass

from simsp.cost.overlap import shared_sms_s
from simsp.model.params import layer_params_per_rank, linear_params_per_rank
from simsp.spec.layout import GRADIENT_GROUP, Group, Layout
from simsp.spec.workload import Workload
from simsp.units import BYTES_16BIT, BYTES_FP32


@dataclass(frozen=True)
class LayerComm:
    """One layer's FSDP collectives, seconds on one rank."""

    gather_s: float
    """All-gather of its 16-bit parameters (once before forward, again before backward)."""
    reduce_s: float
    """Reduce-scatter of its gradients, fp32 or bf16 (grad_bytes), and the replica all-reduce
    with HSDP."""
    backward_gathers: bool
    """Whether backward gathers again (resharded after forward: no pipelining)."""
    sm_share: float = 0.0
    """Share of the SMs the collectives hold while they run (calibration.collective_sm_share):
    the layer computing beside them runs at 1 - share meanwhile."""
    copy_out_s: float = 0.0
    """FSDP2's copy of the gathered buffer into each parameter (`foreach_all_gather_copy_out`,
    split_with_sizes_copy), on the compute stream after each gather; 0 for FSDP1 and
    Megatron-FSDP, whose parameters are views of the gathered buffer."""


def shard_groups(w: Workload, lay: Layout) -> tuple[Group, Group | None]:
    """(shard group, replica group or None): all of dp x cp, or with fsdp_shard the first
    fsdp_shard of them (contiguous ranks, torchtitan's dp_shard mesh dimension inside
    dp_replicate) and the replicas across."""
    full = lay.group("-".join(GRADIENT_GROUP))
    shard = w.parallel.fsdp_shard or full.size
    if shard == full.size:
        return full, None
    on_node = min(shard, full.ranks_per_node)
    replicas = full.size // shard
    return Group("fsdp", shard, on_node), Group(
        "fsdp-replica", replicas, max(1, full.ranks_per_node // on_node)
    )


def layer_comm(w: Workload, cost, lay: Layout) -> LayerComm:
    """The collectives of one layer's parameters on one TP rank."""
    params = layer_params_per_rank(w.model, w.parallel.tp)
    shard, replica = shard_groups(w, lay)
    net = cost.network
    gather = net.group_s("all_gather", gathered_bytes(w, params), shard)
    grad = grad_bytes(w)
    reduce = net.group_s("reduce_scatter", grad * params, shard)
    if replica is not None:
        reduce += net.group_s("all_reduce", grad * params / shard.size, replica)
    copy = 0.0
    if w.training.knob("fsdp_impl") == "fsdp2":  # read the gathered bf16 buffer, write params
        copy = cost.compute.memory_bound(2 * BYTES_16BIT * params, "copy").seconds
    return LayerComm(
        gather,
        reduce,
        backward_gathers=w.parallel.fsdp_reshards,
        sm_share=cost.hw.calibration.collective_sm_share,
        copy_out_s=copy,
    )


def gathered_bytes(w: Workload, params: float) -> float:
    """Bytes of one layer's all-gather: 16-bit parameters, the linear weights in FP8 with
    training.fp8_param_gather (torchao's float8 all-gather under FSDP2, torchtitan's
    enable_fsdp_float8_all_gather: each rank casts its shard before the gather)."""
    linear = linear_params_per_rank(w.model, w.parallel.tp)
    per_linear = w.training.numerics.gathered_bytes()
    return BYTES_16BIT * (params - linear) + per_linear * linear


def grad_bytes(w: Workload) -> float:
    """Bytes a gradient element is reduced in: fp32 (torchtitan's mixed_precision_reduce,
    Composer's DEFAULT) unless the run reduces in bf16 (parallel.grad_reduce_in_fp32 false)."""
    return BYTES_FP32 if w.parallel.grad_reduce_in_fp32 else BYTES_16BIT


def exposed_s(comm: LayerComm, layers: int, forward_s: float, backward_s: float):
    """(forward, backward) seconds FSDP adds to a chunk of `layers` layers, one microbatch: the
    first gather whole, then for each later layer what its compute beside the next one's
    collectives takes beyond its own time (the compute on the SMs they leave, or the
    collectives where they last longer: beside_s), and the last reduce-scatter whole."""
    if layers <= 0:
        return 0.0, 0.0
    u = comm.sm_share
    fwd = comm.gather_s + (layers - 1) * beside_s(forward_s, comm.gather_s, u)
    gather_b = comm.gather_s if comm.backward_gathers else 0.0
    bwd = gather_b + (layers - 1) * beside_s(backward_s, gather_b + comm.reduce_s, u)
    copies_b = comm.copy_out_s if comm.backward_gathers else 0.0
    return fwd + layers * comm.copy_out_s, bwd + comm.reduce_s + layers * copies_b


def exposed_layers_s(comm: LayerComm, forwards: list[float], backwards: list[float]):
    """`exposed_s` over layers that differ: each layer but the last beside the next one's
    collectives, with its own compute time."""
    if not forwards:
        return 0.0, 0.0
    u = comm.sm_share
    fwd = comm.gather_s + sum(beside_s(f, comm.gather_s, u) for f in forwards[:-1])
    gather_b = comm.gather_s if comm.backward_gathers else 0.0
    bwd = gather_b + sum(beside_s(b, gather_b + comm.reduce_s, u) for b in backwards[:-1])
    copies = len(forwards) * comm.copy_out_s
    return fwd + copies, bwd + comm.reduce_s + (copies if comm.backward_gathers else 0.0)


def beside_s(compute_s: float, comm_s: float, sm_share: float) -> float:
    """What a compute pass and a collective beside it take beyond the compute alone: the
    longer of the compute slowed by the SMs the collective holds (overlap.shared_sms_s) and
    the collective."""
    return max(shared_sms_s(compute_s, comm_s, sm_share), comm_s) - compute_s


def in_flight_bytes(w: Workload, stage_params: float) -> float:
    """Unsharded buffers one rank holds at its peak: with resharding, two layers' gathered
    16-bit parameters (the one computing and the one prefetched) and two layers' unsharded
    gradients in their reduce type (the one reduce-scattering and the one being produced);
    kept gathered (pipelining, or fsdp_reshard_after_forward never) the whole stage's 16-bit
    parameters instead of the two layers."""
    layer = layer_params_per_rank(w.model, w.parallel.tp)
    gathered = BYTES_16BIT * (2 * layer if w.parallel.fsdp_reshards else stage_params)
    return gathered + 2 * grad_bytes(w) * layer


def weight_bytes_per_param(shards: int) -> float:
    """Sharded fp32 parameters, fp32 gradients and Adam's two fp32 moments: 16 / shards
    (torchtitan keeps the model in fp32 and casts for compute)."""
    return 16.0 / shards
