"""Calibration tables from a matched real iteration, and the hardware file that names them.

* GEMM table: each workload GEMM (shape and layout) the trace ran, at its FLOPs over its kernels'
  time summed over every call (a split GEMM's parts summed into the whole);
* FlashAttention table: each direction's benchmark FLOPs (flash-attention's count: halved when
  causal, backward x 2.5) over the mean time of one call (a call's kernels summed);
* memory-bound rates: each element-wise kind's bytes per call (from the workload's op list) over
  its mean call time; the fused layer-norm forward / backward rates as measured, the others as
  the achieved-fraction-of-hbm_gbps steps by bytes the cost model reads;
* collectives: per (collective, group size), the median time at each message size, as
  nccl-tests logs (inside a node when the group fits one, else across);
* host floor (GPU traces): where the GPU sat idle with its next kernel not yet launched, the host
  was the bottleneck; a pass's host time is then its GPU busy time plus those gaps, per layer.
  Without such gaps the host kept ahead and its floor is not measured (the base value stays).

Every number comes from the trace; the file's header says which trace, device and date, and what
was and was not matched.
"""

import math
import shutil
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from simsp.measure.kineto.match import Matching
from simsp.model.layer import build_layer
from simsp.tables import (
    AttentionPoint,
    CollectiveTable,
    GemmPoint,
    GemmTable,
    write_attention_table,
    write_gemm_table,
    write_nccl_log,
)
from simsp.tables.attention import BACKWARD_FLOPS_FACTOR
from simsp.units import GB, TERA, US

NORMS = ("layernorm", "rmsnorm")
NOT_MEMORY_BOUND = ("gemm", "attention_gemm", "flash_attention", "comm", "embedding", "loss")


@dataclass(frozen=True)
class Tables:
    """What a trace measured, ready to write."""

    gemm: tuple[GemmPoint, ...]
    attention: tuple[AttentionPoint, ...]
    memory_bound: dict
    """memory_bound: keys (layernorm_fwd_gbps, layernorm_bwd_gbps, efficiency_by_bytes)."""
    collectives: tuple[CollectiveTable, ...]
    host: dict
    """host_forward_us / host_backward_us, where the GPU waited for the host."""
    notes: tuple[str, ...] = field(default=())


def _calls(matches) -> dict:
    """call id -> its matches (kernels of one CPU-op call)."""
    out: dict = {}
    for m in matches:
        out.setdefault(m.kernel.call if m.kernel.call >= 0 else id(m), []).append(m)
    return out


def gemm_points(mt: Matching) -> tuple[GemmPoint, ...]:
    """One point per (m, n, k, batch, layout) the workload's GEMMs ran."""
    flops: dict = {}
    secs: dict = {}
    whole: dict = {}
    pending = None
    for m in mt.matches:
        if m.kind not in ("gemm", "attention_gemm"):
            continue
        if m.gemm is not None:
            pending = (m.gemm.m, m.gemm.n, m.gemm.k, m.gemm.batch, m.layout)
            whole[pending] = m.gemm
            flops[pending] = flops.get(pending, 0.0) + m.gemm.flops
        if pending is not None:
            secs[pending] = secs.get(pending, 0.0) + m.kernel.dur_s
    return tuple(
        GemmPoint(key[0], key[1], key[2], key[3], key[4], flops[key] / secs[key] / TERA)
        for key in sorted(secs)
        if secs[key] > 0
    )


def attention_points(mt: Matching, device: str) -> tuple[AttentionPoint, ...]:
    """Per direction, the workload's fused attention at the trace's mean call time."""
    op = next(
        (o for o in _ops(mt) if o.kind == "flash_attention" and o.attention is not None), None
    )
    if op is None:
        return ()
    att = op.attention
    out = []
    for phase, direction, factor in (
        ("forward", "fwd", 1.0),
        ("backward", "bwd", BACKWARD_FLOPS_FACTOR),
    ):
        calls = _calls(m for m in mt.matches if m.kind == "flash_attention" and m.phase == phase)
        if not calls:
            continue
        mean_s = sum(m.kernel.dur_s for ms in calls.values() for m in ms) / len(calls)
        out.append(
            AttentionPoint(
                device,
                "trace",
                att.head_dim,
                att.seq_len,
                att.causal,
                direction,
                att.benchmark_flops * factor / mean_s / TERA,
                Path(mt.profile.path).name,
            )
        )
    return tuple(out)


def _ops(mt: Matching):
    w = mt.workload
    return build_layer(w.model, w.parallel, w.training.micro_batch)


def memory_bound_rates(mt: Matching, hbm_gbps: float) -> dict:
    """Fused-norm rates and the efficiency steps of the other element-wise kinds."""
    by_kind = {}
    for o in _ops(mt):
        if o.kind not in NOT_MEMORY_BOUND and (o.fwd_bytes or o.bwd_bytes):
            by_kind.setdefault(o.kind, o)
    out, steps = {}, {}
    for kind, op in by_kind.items():
        for phase, nbytes in (("forward", op.fwd_bytes), ("backward", op.bwd_bytes)):
            calls = _calls(m for m in mt.matches if m.kind == kind and m.phase == phase)
            if not calls or nbytes <= 0:
                continue
            mean_s = sum(m.kernel.dur_s for ms in calls.values() for m in ms) / len(calls)
            gbps = nbytes / mean_s / GB
            if kind in NORMS:
                out[f"layernorm_{'fwd' if phase == 'forward' else 'bwd'}_gbps"] = round(
                    min(gbps, hbm_gbps), 3
                )
            else:
                steps.setdefault(nbytes, []).append(min(1.0, gbps / hbm_gbps))
    if steps:
        sizes = sorted(steps)
        curve = {0.0 if i == 0 else float(b): _eff(steps[b]) for i, b in enumerate(sizes)}
        out["efficiency_by_bytes"] = curve
    return out


def _eff(values: list[float]) -> float:
    """The median achieved fraction, kept above zero (the file's rule is (0, 1])."""
    return max(round(statistics.median(values), 6), 1e-6)


def collective_tables(mt: Matching) -> tuple[CollectiveTable, ...]:
    """Per (collective, group size), median time by nccl-tests message size."""
    seen: dict = {}
    for m in mt.matches:
        c = m.kernel.comm
        if m.kind != "comm" or c is None or c.group_size < 2:
            continue
        size = c.out_bytes if m.op == "all_gather" else c.in_bytes
        if size > 0:
            seen.setdefault((m.op, c.group_size), {}).setdefault(int(size), []).append(
                m.kernel.dur_s
            )
    out = []
    for (op, ranks), sizes in sorted(seen.items()):
        keys = sorted(sizes)
        out.append(
            CollectiveTable(
                op,
                ranks,
                tuple(keys),
                tuple(max(statistics.median(sizes[s]), 1e-9) for s in keys),
                Path(mt.profile.path).name,
            )
        )
    return tuple(out)


def host_floor(mt: Matching) -> tuple[dict, float]:
    """(host_forward_us / host_backward_us where the GPU waited, total wait seconds).

    GPU busy time is the union of kernel intervals; a gap before a kernel whose launch call began
    after the gap opened is time the GPU waited for the host."""
    if mt.profile.cpu:
        return {}, 0.0
    ks = sorted((m.kernel for m in mt.matches), key=lambda k: k.start_s)
    busy = {"forward": 0.0, "backward": 0.0}
    wait = {"forward": 0.0, "backward": 0.0}
    end = None
    for k in ks:
        phase = "backward" if k.backward else "forward"
        if end is not None and k.start_s > end and k.launch_s > end:
            wait[phase] += k.start_s - end
        lo = k.start_s if end is None else max(end, k.start_s)
        busy[phase] += max(0.0, k.start_s + k.dur_s - lo)
        end = max(end or 0.0, k.start_s + k.dur_s)
    w = mt.workload
    per = w.model.layers * max(
        1, w.training.global_batch // (w.training.micro_batch * w.parallel.dp)
    )
    out = {}
    for phase in ("forward", "backward"):
        if wait[phase] > 0:
            out[f"host_{phase}_us"] = round((busy[phase] + wait[phase]) / per / US, 1)
    return out, wait["forward"] + wait["backward"]


def tables(mt: Matching, hbm_gbps: float) -> Tables:
    """Everything the trace measured for the workload."""
    host, waited = host_floor(mt)
    notes = (f"GPU waited for the host {waited * 1e3:.3f} ms of the iteration",) if host else ()
    return Tables(
        gemm_points(mt),
        attention_points(mt, mt.profile.device),
        memory_bound_rates(mt, hbm_gbps),
        collective_tables(mt),
        host,
        notes,
    )


def provenance(mt: Matching, limit: int = 12) -> list[str]:
    """Header lines: the trace, device, date, and what was matched and what not."""
    p = mt.profile
    kind = "CPU trace: aten ops by self time stand in for kernels" if p.cpu else "GPU kernels"
    lines = [
        f"calibrated from the Kineto trace {p.path} ({kind})",
        f"trace device: {p.device}; recorded {p.date or 'on an unknown date'}; iteration "
        f"{p.iteration}; workload {mt.workload.name}",
        f"matched {mt.matched_fraction:.1%} of {mt.total_s * 1e3:.3f} ms of kernel time to the "
        "workload's ops; unmatched:",
    ]
    rest = mt.unmatched()
    lines += [f"  {t * 1e3:.4f} ms in {n} x {name[:110]}" for name, t, n in rest[:limit]]
    if len(rest) > limit:
        more_s = sum(t for _, t, _ in rest[limit:])
        lines.append(f"  ... and {len(rest) - limit} more ({more_s * 1e3:.4f} ms)")
    return lines


def write_files(t: Tables, mt: Matching, folder: Path, node_gpus: int) -> dict:
    """Write the tables under `folder`; return calibrate's inputs (paths, host lines file)."""
    src = provenance(mt)
    out: dict = {"nvlink": [], "infiniband": []}
    if t.gemm:
        path = folder / "gemm.csv"
        table = GemmTable(t.gemm, "", mt.profile.device)
        write_gemm_table(table, path, src)
        out["gemm"] = str(path)
    if t.attention:
        path = folder / "flash_attention.csv"
        write_attention_table(path, t.attention, tuple(src))
        out["attention"] = str(path)
    for table in t.collectives:
        link = "nvlink" if table.ranks <= node_gpus else "infiniband"
        path = folder / link / f"{table.op}_{table.ranks}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_nccl_log(table, path, device=mt.profile.device, header_extra={"source": src[0]})
        out[link].append(str(path))
    if t.host:
        path = folder / "host.yaml"
        lines = [f"# measured by `simsp calibrate --trace` from {mt.profile.path}"]
        lines += [f"{k}: {v}" for k, v in t.host.items()]
        path.write_text("\n".join(lines) + "\n")
        out["host"] = str(path)
    return out


def staging() -> Path:
    """A temporary folder for the tables before `calibrate` places them beside the new file."""
    return Path(tempfile.mkdtemp(prefix="simsp-trace-"))


def cleanup(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def finite(x: float) -> bool:
    return math.isfinite(x)
