"""Tensor and sequence parallelism: what tp must divide, and what sequence parallelism and TP
communication overlap need."""

from simsp.spec.workload import Workload


def rules(w: Workload):
    """(key, value, holds, rule) for tp against the layer's heads, groups and MLP."""
    m, p = w.model, w.parallel
    yield "parallel.tp", p.tp, m.heads % p.tp == 0, f"must divide model.heads ({m.heads})"
    yield (
        "parallel.tp",
        p.tp,
        m.groups % p.tp == 0,
        f"must divide the key/value heads ({m.groups}), as Megatron-Core requires",
    )
    yield "parallel.tp", p.tp, m.ffn % p.tp == 0, f"must divide the MLP size ({m.ffn})"


def sequence_rules(w: Workload):
    """(key, value, holds, rule) for sequence parallelism and TP communication overlap."""
    m, p = w.model, w.parallel
    yield (
        "parallel.sequence_parallel",
        p.sequence_parallel,
        not p.sequence_parallel or m.seq_len % (p.tp * p.cp) == 0,
        f"needs tp x cp ({p.tp} x {p.cp}) to divide seq_len ({m.seq_len})",
    )
    yield (
        "parallel.tp_comm_overlap",
        p.tp_comm_overlap,
        not p.tp_comm_overlap or p.tp == 1 or p.sequence_parallel,
        "needs sequence_parallel when tp > 1 (Megatron-LM arguments.py: TP comm/GEMM overlap "
        "happens only with sequence parallelism)",
    )
