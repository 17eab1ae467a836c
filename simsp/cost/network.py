"""Collective and point-to-point times from measured nccl-tests tables.

Inside a node (NVLink): the measured table for the collective and group size. Where only
all-reduce was measured (the A100 data we have), reduce-scatter and all-gather of S bytes cost
what a ring all-reduce of S/2 costs, because a ring all-reduce *is* a reduce-scatter followed
by an all-gather over the same ring (Patarasuk & Yuan 2009; nccl-tests PERFORMANCE.md busbw
factors 2(n-1)/n = 2 x (n-1)/n). A send/recv of S costs a 2-rank all-reduce of S (each rank moves
S bytes in both). Other group sizes rescale the nearest measured one at equal bus bandwidth.

Across nodes (InfiniBand): a group holding whole nodes reads the measured multi-node
all-reduce directly (nearest group size, rescaled at equal busbw; RS/AG as half an all-reduce).
That table also gives the per-NIC rate: a ring over k nodes crosses each node boundary once per
NIC, so busbw = NICs x per-NIC rate. Groups with g < GPUs-a-node on each of k nodes are
hierarchical: NVLink reduce-scatter over g, InfiniBand all-reduce of S/g over k nodes on each of
g NICs, NVLink all-gather over g; a pipeline send across nodes uses one NIC.

An all-to-all of S bytes (each rank sends S/n to each peer) moves what an all-gather of S moves,
(n-1)/n S a rank, and nccl-tests gives both the same busbw factor; inside a node, without a
measured all-to-all table, it costs the all-gather of S (on NVSwitch nodes every pair has the
full link: H100's all-gather table prices nccl-tests' measured 8-GPU alltoall_perf within 7%).
Across nodes it is `all_to_all_s`: the part of S bound for other nodes through the rank's NIC
share, beside the part for its own node on NVLink (within 15% of 60+ measured H100
alltoall_perf runs of 2 to 10 nodes, tests/test_moe.py).

Link rates as a what-if. Each table was measured on some link: the `nvlink` logs on a node of
`calibration.measured_nvlink_gbps` per GPU, the `infiniband` logs on nodes of
`measured_nics_per_node` NICs of `measured_nic_gbps` each (each 0 or absent: the file's own
node/network value, i.e. tables measured on the machine the file describes; `simsp.io.config`
resolves them before any `--set`, so a `--set` moves the link and not the measurement). Where the
file's (or `--set`'s) rate differs, a table's time of S bytes becomes

    t'(S) = t(S) + (S / A) x (measured / new - 1)

with A the table's best achieved algbw (max over its points of S/t): the alpha-beta split of
NCCL's own cost model, `time = lat * latCount + nBytes / bw` (NVIDIA/nccl src/graph/tuning.cc,
ncclTopoGetAlgoTime), whose bw is set by the links. S/A is the bandwidth-bound part at the best
rate the table reached; it scales with the inverse of the link rate. The rest, t(S) - S/A, is
latency and protocol overhead (small messages, the LL/LL128 region, ramp-up) and is kept as
measured, so small messages keep their latency. This is the scaling the library's vtrain-a100
tables were derived with (hardware/calibration/derive_library.py). Inside a node the ratio is
measured_nvlink_gbps / nvlink_gbps; across nodes it is the per-GPU share of the node's NICs,
(measured_nic_gbps x measured_nics_per_node) / (nic_gbps x nics_per_node) (the node's GPU count
cancels: every GPU of a node runs the same collective at once, so each gets its share). A group
of whole nodes reads the infiniband table and so scales with the NICs alone (its ring is bound
by them); a hierarchical group scales its NVLink steps and its NIC step each by its own link.
Equal rates use the tables untouched, so files that state no change keep their answers to the
bit. Rates more than 1000x from the measured ones are refused (hardware.LINK_SPAN).
"""

import math
from dataclasses import dataclass, field

from simsp.errors import InputError
from simsp.model.blocks.moe import destinations
from simsp.spec.hardware import HardwareSpec
from simsp.tables import BUSBW_FACTORS, CollectiveTable, merge_tables, read_nccl_log
from simsp.units import US

AR, AG, RS, P2P, A2A = "all_reduce", "all_gather", "reduce_scatter", "send_recv", "all_to_all"


def link_scaled_s(t_s: float, nbytes: float, best_algbw_bps: float, slowdown: float) -> float:
    """A measured collective time moved to another link rate: the bandwidth-bound part
    nbytes / best_algbw scales by `slowdown` (measured rate / new rate), the rest is latency and
    stays (NCCL tuning.cc's `time = lat + nBytes / bw`; module docstring)."""
    return t_s + nbytes / best_algbw_bps * (slowdown - 1.0)


def best_algbw_bps(table: CollectiveTable) -> float:
    """The highest algorithm bandwidth (size over time, B/s) any point of the table reached."""
    return max(s / t for s, t in zip(table.sizes_bytes, table.times_s, strict=True))


@dataclass(frozen=True)
class LinkTable:
    """A measured table priced on a link `slowdown` times slower than the one it was measured
    on (1: as measured)."""

    table: CollectiveTable
    slowdown: float = 1.0
    """measured link rate / this file's link rate."""
    _best_bps: float = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_best_bps", best_algbw_bps(self.table))

    @property
    def op(self) -> str:
        return self.table.op

    @property
    def ranks(self) -> int:
        return self.table.ranks

    @property
    def sizes_bytes(self) -> tuple[int, ...]:
        return self.table.sizes_bytes

    @property
    def times_s(self) -> tuple[float, ...]:
        """As measured (time_s prices them on this link)."""
        return self.table.times_s

    def time_s(self, nbytes: float) -> float:
        """Seconds for nbytes (whole buffer) on this link."""
        t = self.table.time_s(nbytes)
        if self.slowdown == 1.0 or t == 0.0:
            return t  # as measured, to the bit
        return link_scaled_s(t, nbytes, self._best_bps, self.slowdown)


def _index(paths, slowdown: float) -> dict[tuple[str, int], LinkTable]:
    """Tables by (op, ranks); a later file fills sizes the first one for that key lacks."""
    tables: dict[tuple[str, int], CollectiveTable] = {}
    for path in paths:
        t = read_nccl_log(path)
        key = (t.op, t.ranks)
        tables[key] = merge_tables(tables[key], t) if key in tables else t
    return {key: LinkTable(t, slowdown) for key, t in tables.items()}


def nvlink_slowdown(hw: HardwareSpec) -> float:
    """How much slower this file's NVLink is than the one its `nvlink` logs were measured on."""
    measured = hw.calibration.measured_nvlink_gbps or hw.node.nvlink_gbps
    return measured / hw.node.nvlink_gbps


def nic_slowdown(hw: HardwareSpec) -> float:
    """How much slower a GPU's share of this file's NICs is than in the `infiniband` logs'
    measurement: (measured NIC rate x NICs) / (NIC rate x NICs), GPUs a node cancelling."""
    cal, net = hw.calibration, hw.network
    measured = (cal.measured_nic_gbps or net.nic_gbps) * (
        cal.measured_nics_per_node or net.nics_per_node
    )
    return measured / (net.nic_gbps * net.nics_per_node)


def _nearest(ranks: int, available) -> int:
    """The measured group size closest to `ranks` in log scale (ties: the larger)."""
    return min(available, key=lambda n: (abs(math.log(n / ranks)), -n))


class NetworkModel:
    """Communication times on one cluster."""

    def __init__(self, hw: HardwareSpec):
        self.hw = hw
        self.gpus_per_node = hw.node.gpus
        self.nvlink = _index(hw.calibration.nvlink, nvlink_slowdown(hw))
        self.ib = _index(hw.calibration.infiniband, nic_slowdown(hw))
        self.latency_s = hw.calibration.collective_latency_us * US  # 0 unless fitted to runs

    def _missing(self, key: str, what: str) -> InputError:
        """The error for a run that needs a table the hardware file does not list."""
        return InputError(
            self.hw.source or self.hw.name, key, None, f"this run needs {what}; add it to the list"
        )

    # ------------------------------------------------------------- inside a node
    def intra_s(self, op: str, nbytes: float, ranks: int) -> float:
        """A collective among `ranks` GPUs of one node."""
        if ranks <= 1 or nbytes <= 0:
            return 0.0
        if op == P2P:
            return (
                self._measured(self.nvlink, P2P, nbytes, 2)
                if (P2P, 2) in self.nvlink
                else self._measured(self.nvlink, AR, nbytes, 2)
            )
        if any(key[0] == op for key in self.nvlink):
            return self._measured(self.nvlink, op, nbytes, ranks)
        if op in (AG, RS):
            return self._measured(self.nvlink, AR, nbytes / 2, ranks)
        raise self._missing("calibration.nvlink", f"an NVLink log for {op} or all_reduce")

    def _measured(self, tables, op: str, nbytes: float, ranks: int) -> float:
        """Time from the measured table at `ranks`, or the nearest size rescaled at equal busbw."""
        sizes = [n for (o, n) in tables if o == op]
        if not sizes:
            key = "calibration.nvlink" if tables is self.nvlink else "calibration.infiniband"
            raise self._missing(key, f"a log for {op}")
        n = ranks if ranks in sizes else _nearest(ranks, sizes)
        t = tables[(op, n)].time_s(nbytes)
        return t if n == ranks else t * BUSBW_FACTORS[op](ranks) / BUSBW_FACTORS[op](n)

    # ------------------------------------------------------------- across nodes
    def nic_busbw_gbps(self, nbytes_per_nic: float, nodes: int) -> float:
        """Per-NIC ring bus bandwidth for a per-NIC message, from the full-node multi-node logs."""
        sizes = [n for (o, n) in self.ib if o == AR]
        if not sizes:
            raise self._missing("calibration.infiniband", "an all_reduce log measured across nodes")
        n = _nearest(nodes * self.gpus_per_node, sizes)
        total = nbytes_per_nic * self.gpus_per_node
        t = self.ib[(AR, n)].time_s(total)
        return total * BUSBW_FACTORS[AR](n) / t / self.gpus_per_node / 1e9

    def inter_ring_s(self, op: str, nbytes: float, nodes: int, rings: int) -> float:
        """`rings` concurrent rings over `nodes` nodes, one NIC each, sharing `nbytes` between
        them."""
        per_ring = nbytes / rings
        factor = BUSBW_FACTORS[op](nodes)
        return factor * per_ring / (self.nic_busbw_gbps(per_ring, nodes) * 1e9)

    def collective_s(self, op: str, nbytes: float, ranks: int, ranks_per_node: int) -> float:
        """Any group: NVLink inside a node; across nodes the measured multi-node table where the
        group holds whole nodes, else hierarchical; each call adds the calibration's
        collective_latency_us."""
        if ranks <= 1 or nbytes <= 0:
            return 0.0
        if op == A2A and ranks > ranks_per_node:
            return self.all_to_all_s(nbytes, ranks, ranks_per_node)
        return self.latency_s + self._tables_s(op, nbytes, ranks, ranks_per_node)

    def _tables_s(self, op: str, nbytes: float, ranks: int, ranks_per_node: int) -> float:
        """collective_s from the measured tables alone."""
        if op == A2A and not any(key[0] == A2A for key in self.nvlink):
            op = AG  # inside a node (collective_s sends a cross-node all-to-all elsewhere)
        g = min(ranks_per_node, ranks)
        nodes = ranks // g
        if nodes == 1:
            return self.intra_s(op, nbytes, ranks)
        if g == self.gpus_per_node and op in (AR, AG, RS):
            return self._measured(self.ib, AR, nbytes if op == AR else nbytes / 2, ranks)
        inter = self.inter_ring_s(
            op, nbytes / g if op == AR else nbytes, nodes, 1 if op == AR else g
        )
        if op != AR:
            return inter + self.intra_s(op, nbytes, g)
        return self.intra_s(RS, nbytes, g) + inter + self.intra_s(AG, nbytes, g)

    def all_to_all_s(
        self, nbytes: float, ranks: int, ranks_per_node: int, node_dedup: int = 0
    ) -> float:
        """An all-to-all of nbytes a rank (S / n to each of n peers) over a group of `ranks`,
        `ranks_per_node` on each node. Inside a node: the NVLink table. Across N nodes of g: the
        (g - 1) / n of S bound for the rank's own node goes over NVLink while the (n - g) / n
        bound for other nodes goes out through the rank's share of the NICs, at the bus
        bandwidth the multi-node table measured per GPU (nccl-tests' alltoall busbw factor
        (n - 1) / n is the same per-rank traffic); the two run at once and the slower sets the
        time. `node_dedup` k (DeepEP / HybridEP, arXiv 2412.19437 §3.2.2): the bytes are k routed
        copies of T tokens and a token crosses the network once per distinct destination node,
        expected N (1 - C(E - E/N, k) / C(E, k)) of the N nodes for k of E experts spread evenly
        (drawn without replacement; E taken large, (1 - 1/N)^k: model.blocks.moe.destinations),
        and reaches each distinct destination rank once over NVLink (forwarded inside the
        destination node), not once per copy."""
        if ranks <= 1 or nbytes <= 0:
            return 0.0
        g = min(ranks_per_node, ranks)
        nodes = ranks // g
        remote = nbytes * (ranks - g) / ranks
        if node_dedup:
            per_token = nbytes / node_dedup
            remote = per_token * destinations(nodes, node_dedup) * (nodes - 1) / nodes
            nbytes = per_token * destinations(ranks, node_dedup)  # once a destination rank
        if nodes == 1:
            return self.latency_s + self._tables_s(A2A, nbytes, ranks, g)
        local = self.intra_s(
            A2A if any(k[0] == A2A for k in self.nvlink) else AG, nbytes * g / ranks, g
        )
        network = remote / (self.nic_busbw_gbps(remote, nodes) * 1e9)
        return self.latency_s + max(local, network)

    def group_s(self, op: str, nbytes: float, group) -> float:
        """A collective over one group of the run's layout (layout.Group)."""
        return self.collective_s(op, nbytes, group.size, group.ranks_per_node)

    def p2p_s(self, nbytes: float, same_node: bool) -> float:
        """One pipeline send/recv of nbytes: NVLink inside a node, one NIC across nodes."""
        if nbytes <= 0:
            return 0.0
        if same_node:
            return self.latency_s + self.intra_s(P2P, nbytes, 2)
        return self.latency_s + nbytes / (self.nic_busbw_gbps(nbytes, 2) * 1e9)
