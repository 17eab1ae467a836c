"""Context-parallel attention over a ring (Transformer Engine's P2P context parallelism): the
entries of one attention call, its steps, the sends beside them and the corrections after."""

from simsp.cost import ring_correction as rc
from simsp.cost.layer_entries import Entry
from simsp.cost.overlap import ring_exposed_s, shared_sms_s
from simsp.model.layer import Attention, Op


def ring_attention_entries(p, op: Op, phase: str, backward: bool) -> list[Entry]:
    """Context-parallel attention over a ring of c steps (Transformer Engine 2.5
    AttnFuncWithCPAndKVP2P): step 0 is the causal block of the rank's own chunks; each later
    step is a non-causal block of half the rows or half the keys (s/c x s/2c), so every step
    is half an (s/c)² block. Forward, the next rank's K/V travels while a step computes (c -
    1 sends); backward, step 0 sends K/V, the middle steps K/V with the gradients gathered
    so far, the last step the finished dK/dV (2(c - 1) K/V-sized sends in all). A step
    shorter than the transfer alongside it waits for the difference: the ring's exposed
    time; a step runs on the SMs its send leaves. `p` is the layer's pass (op_entries.OpEntries):
    its cost model and its collectives' times."""
    att, cm = op.attention, p.cost.compute
    diagonal = cm.flash_attention(
        Attention(att.batch_heads, att.seq_len, att.head_dim, True, kernel=att.kernel), backward
    )
    half = cm.flash_attention(
        Attention(
            att.batch_heads,
            att.seq_len,
            att.head_dim,
            False,
            att.seq_len // 2,
            kernel=att.kernel,
        ),
        backward,
    )
    c, kv = att.ring_steps, p.collective_s(att.ring)
    label = op.name + (" grad" if backward else "")
    extra = rc.slowest_rank(att, backward, cm.memory_bound)
    sends = [kv] + [2 * kv] * (c - 2) + [kv] if backward else [kv] * (c - 1)
    # each step computes on the SMs its send leaves (overlap.shared_sms_s)
    u = p.cost.hw.calibration.collective_sm_share
    beside = sends + [0.0] * (c - len(sends))
    steps = [
        shared_sms_s(t, send, u)
        for t, send in zip([diagonal.seconds] + [half.seconds] * (c - 1), beside, strict=True)
    ]
    # Backward, a step's dQ accumulation runs before the wait for its send (lines 2320-2395)
    dq = next((k.seconds for k in extra if k.name == rc.DQ_ACCUMULATION), None)
    cover = [t + a for t, a in zip(steps, dq, strict=True)] if dq else steps
    exposed = ring_exposed_s(cover, sends)
    source = diagonal.source
    entries = [
        Entry(
            f"{label}: {k.name}",
            phase,
            "cp_correction",
            "compute",
            k.exposed_s,
            k.busy_s,
            "bandwidth",
        )
        for k in extra
    ]
    return [
        *entries[:1],
        Entry(label, phase, op.kind, "compute", sum(steps), sum(steps), source),
        Entry(
            f"{label}: cp ring send-recv",
            phase,
            "cp_comm",
            "comm",
            exposed,
            sum(sends),
            "nccl",
        ),
        *entries[1:],
    ]
