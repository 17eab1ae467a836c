"""Context parallelism and the rank order of the mesh."""

from simsp.spec.parallel import CP_COMM_TYPES, DIMENSIONS
from simsp.spec.workload import Workload


def rules(w: Workload):
    """(key, value, holds, rule) for context parallelism and the rank order."""
    m, p = w.model, w.parallel
    dims = p.order.split("-")
    yield (
        "parallel.order",
        p.order,
        sorted(dims) == sorted(DIMENSIONS),
        f"must name each of {', '.join(DIMENSIONS)} once, joined by '-'",
    )
    yield (
        "parallel.cp_comm_type",
        p.cp_comm_type,
        p.cp_comm_type in CP_COMM_TYPES,
        f"must be one of {', '.join(CP_COMM_TYPES)}",
    )
    if p.cp == 1:
        return
    yield (
        "parallel.cp",
        p.cp,
        m.seq_len % (2 * p.cp) == 0,
        f"needs 2 x cp ({2 * p.cp}) to divide seq_len ({m.seq_len}): each rank holds two "
        "chunks of the causal load balancing",
    )
    yield (
        "parallel.cp",
        p.cp,
        m.attention == "flash",
        "needs model.attention: flash (Megatron-Core runs context parallelism only inside "
        "Transformer Engine's fused attention)",
    )
    yield (
        "parallel.cp_comm_type",
        p.cp_comm_type,
        p.cp_comm_type != "a2a" or (m.groups // p.tp) % p.cp == 0,
        f"a2a needs cp ({p.cp}) to divide the key/value heads of a TP rank ({m.groups // p.tp})",
    )
