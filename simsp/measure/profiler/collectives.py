"""Measure collectives over N local processes and write nccl-tests logs (`read_nccl_log` reads
them).

`run` spawns N processes (torch.multiprocessing, MASTER_ADDR=127.0.0.1, a free port), one rank
each (GPU `rank` under NCCL, the CPU under gloo). For each collective and each size of a doubling
sweep every rank runs `warmup` untimed calls, a barrier, then `iters` timed calls between host
timestamps, synchronising the device at the end, as nccl-tests does; the time kept is the mean
per call averaged over the ranks (nccl-tests' default `-a 1`). Sizes follow nccl-tests' `size`
column: the whole buffer (all_gather: the gathered output; reduce_scatter: the input before it
is scattered; send_recv: what each rank sends). Rank 0 writes one log per collective in the
current nccl-tests layout (`write_nccl_log`): `all_reduce_perf.log`, `all_gather_perf.log`,
`reduce_scatter_perf.log`, `sendrecv_perf.log`.

Each collective runs with the first torch API the backend supports, named in its log's
`# method:` line; where a backend has none for reduce_scatter it is emulated by an all-reduce of
the whole buffer keeping this rank's chunk, an upper bound, and the log says so.
"""

import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path

from simsp.errors import InputError
from simsp.measure.profiler._torch import Progress, device_name, require_torch, today, versions
from simsp.tables import CollectiveTable, write_nccl_log

OPS = ("all_reduce", "all_gather", "reduce_scatter", "send_recv")
LOG_NAMES = {
    "all_reduce": "all_reduce_perf.log",
    "all_gather": "all_gather_perf.log",
    "reduce_scatter": "reduce_scatter_perf.log",
    "send_recv": "sendrecv_perf.log",
}
"""nccl-tests' binary names, so logs from both tools sit side by side alike."""
BACKENDS = ("nccl", "gloo")
ELEMENT_BYTES = 4
"""float32 elements ('float' in the log)."""
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


@dataclass(frozen=True)
class Settings:
    """One sweep."""

    nproc: int
    backend: str
    min_bytes: int
    max_bytes: int
    iters: int
    warmup: int
    out_dir: str
    command: str = ""
    progress: bool = True


def parse_bytes(text: str) -> int:
    """'1024', '64K', '128M', '1G' (powers of 1024, as nccl-tests' -b/-e) -> bytes."""
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)i?B?\s*", str(text), re.I)
    if not m or int(m.group(1)) <= 0:
        raise InputError(
            "--min-bytes/--max-bytes",
            "bytes",
            text,
            "must be a positive size such as 1024, 64K, 128M or 1G",
        )
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


def sweep_sizes(min_bytes: int, max_bytes: int) -> list[int]:
    """min, 2 min, 4 min, ... up to max_bytes."""
    sizes, size = [], min_bytes
    while size <= max_bytes:
        sizes.append(size)
        size *= 2
    return sizes


def op_sizes(op: str, sizes: list[int], nproc: int) -> list[int]:
    """Sizes this op can run exactly in float32: a whole number of elements (per rank for the
    gather/scatter ops), rounded down; duplicates and empties dropped."""
    unit = ELEMENT_BYTES * (nproc if op in ("all_gather", "reduce_scatter") else 1)
    return sorted({s // unit * unit for s in sizes if s >= unit})


def default_settings(
    nproc: int,
    backend: str | None,
    min_bytes: str | None,
    max_bytes: str | None,
    iters: int | None,
    out_dir: str,
    command: str = "",
    progress: bool = True,
) -> Settings:
    """Checked settings; NCCL with GPUs enough, else gloo; 1 KiB up to 1 GiB (NCCL) or 16 MiB
    (gloo)."""
    torch = require_torch()
    import torch.distributed as dist

    if nproc is None or nproc < 2:
        raise InputError("--nproc", "nproc", nproc, "a collective needs at least 2 processes")
    if not dist.is_available():
        raise InputError(
            "--backend", "backend", backend, "this torch build has no torch.distributed"
        )
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    backend = backend or ("nccl" if gpus >= nproc and dist.is_nccl_available() else "gloo")
    if backend == "nccl" and (gpus < nproc or not dist.is_nccl_available()):
        raise InputError(
            "--backend",
            "backend",
            backend,
            f"NCCL needs one GPU per process: {nproc} asked, {gpus} visible",
        )
    if backend == "gloo" and not dist.is_gloo_available():
        raise InputError("--backend", "backend", backend, "this torch build has no gloo backend")
    lo = parse_bytes(min_bytes or "1K")
    hi = parse_bytes(max_bytes or ("1G" if backend == "nccl" else "16M"))
    if hi < lo:
        raise InputError("--max-bytes", "max_bytes", hi, f"must be at least --min-bytes ({lo})")
    if iters is not None and iters < 1:
        raise InputError("--iters", "iters", iters, "must be at least 1")
    if not op_sizes("all_gather", sweep_sizes(lo, hi), nproc):
        raise InputError("--max-bytes", "max_bytes", hi, f"too small for {nproc} ranks of float32")
    return Settings(nproc, backend, lo, hi, iters or 20, 5, str(out_dir), command, progress)


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ProfileFailed(InputError):
    """A spawned rank failed; the CLI prints this one line and exits 2."""

    def __init__(self, detail: str):
        super().__init__("profile collectives", "rank", None, detail)
        self.detail = detail

    def __str__(self):
        return f"profile collectives failed: {self.detail}"


def run(s: Settings) -> list[Path]:
    """Spawn the ranks, measure every collective, return the logs rank 0 wrote."""
    require_torch()
    import torch.multiprocessing as mp

    Path(s.out_dir).mkdir(parents=True, exist_ok=True)
    try:
        mp.spawn(_worker, args=(s, free_port()), nprocs=s.nproc, join=True)
    except Exception as e:  # a rank raised or died: report its last line, not a traceback
        lines = [line for line in str(e).splitlines() if line.strip()]
        raise ProfileFailed(lines[-1] if lines else type(e).__name__) from None
    return [Path(s.out_dir) / LOG_NAMES[op] for op in OPS]


# ---------------------------------------------------------------- inside each rank


class _Rank:
    """One process's view: torch, its device, and how to wait for the device."""

    def __init__(self, torch, dist, rank: int, s: Settings):
        self.torch, self.dist, self.rank, self.s = torch, dist, rank, s
        self.n = s.nproc
        self.device = f"cuda:{rank}" if s.backend == "nccl" else "cpu"

    def sync(self) -> None:
        if self.device != "cpu":
            self.torch.cuda.synchronize(self.device)

    def barrier(self) -> None:
        self.sync()
        if self.device != "cpu":
            self.dist.barrier(device_ids=[self.rank])
        else:
            self.dist.barrier()
        self.sync()

    def empty(self, nbytes: int):
        return self.torch.ones(
            nbytes // ELEMENT_BYTES, dtype=self.torch.float32, device=self.device
        )

    def mean_over_ranks(self, value: float) -> float:
        t = self.torch.tensor([value], dtype=self.torch.float64, device=self.device)
        self.dist.all_reduce(t)
        return float(t.item()) / self.n


def _candidates(r: _Rank, op: str):
    """(label, factory) pairs, preferred first; factory(size) -> a no-argument callable."""
    dist, n = r.dist, r.n

    def reduce_all(size):
        buf = r.empty(size)
        return lambda: dist.all_reduce(buf)

    def gather_single(api):
        def make(size):
            out, inp = r.empty(size), r.empty(size // n)
            return lambda: api(out, inp)

        return make

    def gather_list(size):
        outs, inp = [r.empty(size // n) for _ in range(n)], r.empty(size // n)
        return lambda: dist.all_gather(outs, inp)

    def scatter_single(api):
        def make(size):
            out, inp = r.empty(size // n), r.empty(size)
            return lambda: api(out, inp)

        return make

    def scatter_list(size):
        out, inp = r.empty(size // n), r.empty(size)
        chunks = list(inp.chunk(n))
        return lambda: dist.reduce_scatter(out, chunks)

    def scatter_emulated(size):
        out, inp = r.empty(size // n), r.empty(size)
        mine = inp.chunk(n)[r.rank]
        return lambda: (dist.all_reduce(inp), out.copy_(mine))

    def ring_batch(size):
        send, recv = r.empty(size), r.empty(size)
        ops = [
            dist.P2POp(dist.isend, send, (r.rank + 1) % n),
            dist.P2POp(dist.irecv, recv, (r.rank - 1) % n),
        ]
        return lambda: [w.wait() for w in dist.batch_isend_irecv(ops)]

    def ring_pair(size):
        send, recv = r.empty(size), r.empty(size)
        return lambda: [
            w.wait()
            for w in (dist.isend(send, (r.rank + 1) % n), dist.irecv(recv, (r.rank - 1) % n))
        ]

    apis = {
        name: getattr(dist, name)
        for name in (
            "all_gather_single",
            "all_gather_into_tensor",
            "reduce_scatter_single",
            "reduce_scatter_tensor",
        )
        if hasattr(dist, name)
    }
    if op == "all_reduce":
        return [("torch.distributed.all_reduce", reduce_all)]
    if op == "all_gather":
        return [
            (f"torch.distributed.{name}", gather_single(apis[name]))
            for name in ("all_gather_single", "all_gather_into_tensor")
            if name in apis
        ] + [("torch.distributed.all_gather (list of tensors)", gather_list)]
    if op == "reduce_scatter":
        return [
            (f"torch.distributed.{name}", scatter_single(apis[name]))
            for name in ("reduce_scatter_single", "reduce_scatter_tensor")
            if name in apis
        ] + [
            ("torch.distributed.reduce_scatter (list of tensors)", scatter_list),
            (
                "EMULATED: this backend has no reduce_scatter; all_reduce of the whole buffer, "
                "then this rank's chunk copied out (an upper bound on a real reduce_scatter)",
                scatter_emulated,
            ),
        ]
    return [
        (
            "torch.distributed.batch_isend_irecv ring: send to rank+1, receive from rank-1",
            ring_batch,
        ),
        ("torch.distributed.isend/irecv ring: send to rank+1, receive from rank-1", ring_pair),
    ]


def _pick(r: _Rank, op: str, size: int):
    """The first candidate that runs on this backend: (label, factory)."""
    last = None
    for label, make in _candidates(r, op):
        try:
            make(size)()
            r.sync()
            return label, make
        except (RuntimeError, NotImplementedError, ValueError, AttributeError, TypeError) as e:
            last = e
    raise RuntimeError(f"{r.s.backend} runs no form of {op}: {last}")


def _time_one(r: _Rank, make, size: int) -> float:
    """Mean seconds per call over s.iters timed calls, after s.warmup, averaged over ranks."""
    fn = make(size)
    for _ in range(r.s.warmup):
        fn()
    r.barrier()
    t0 = time.perf_counter()
    for _ in range(r.s.iters):
        fn()
    r.sync()
    return r.mean_over_ranks((time.perf_counter() - t0) / r.s.iters)


def _worker(rank: int, s: Settings, port: int) -> None:
    """One rank: join the group, sweep every collective, rank 0 writes the logs."""
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    import torch
    import torch.distributed as dist

    if s.backend == "nccl":
        torch.cuda.set_device(rank)
    else:
        torch.set_num_threads(1)
    dist.init_process_group(s.backend, rank=rank, world_size=s.nproc)
    try:
        r = _Rank(torch, dist, rank, s)
        sweeps = {op: op_sizes(op, sweep_sizes(s.min_bytes, s.max_bytes), s.nproc) for op in OPS}
        bar = (
            Progress("simsp profile collectives", sum(map(len, sweeps.values())))
            if rank == 0 and s.progress
            else None
        )
        for op in OPS:
            label, make = _pick(r, op, sweeps[op][0])
            times = []
            for size in sweeps[op]:
                times.append(_time_one(r, make, size))
                if bar:
                    bar.step(f"{op} {size} B")
            if rank == 0:
                _write(torch, r, op, sweeps[op], times, label)
        r.barrier()
    finally:
        dist.destroy_process_group()


def _write(torch, r: _Rank, op: str, sizes: list[int], times: list[float], method: str) -> None:
    """Rank 0: one nccl-tests log with our provenance as '# key: value' lines."""
    s, path = r.s, Path(r.s.out_dir) / LOG_NAMES[op]
    device = device_name(torch, r.device)
    nccl = _nccl_code(torch) if s.backend == "nccl" else 0
    extra = {
        "version": "simsp-profile",
        "nccl_headers": nccl,
        "nccl_library": nccl,
        "warmup_iters": s.warmup,
        "iters": s.iters,
        "validation": 0,
        "hostname": socket.gethostname(),
        "measured by": "simsp profile collectives (torch.distributed)",
        "backend": s.backend,
        "world size": s.nproc,
        "device": device,
        "method": method,
        "timing": f"host clock around {s.iters} calls after {s.warmup} warm-up calls and a "
        "barrier, device synchronised, mean per call averaged over ranks",
        "versions": versions(torch),
        "date": today(),
        "command": s.command,
    }
    table = CollectiveTable(op, s.nproc, tuple(sizes), tuple(times), str(path))
    write_nccl_log(table, path, dtype="float", device=device, header_extra=extra)


def _nccl_code(torch) -> int:
    """NCCL_VERSION_CODE of torch's NCCL (2.21.5 -> 22105), as nccl-tests prints it; 0 if
    unknown."""
    try:
        v = torch.cuda.nccl.version()
        major, minor, patch = v[:3] if isinstance(v, tuple) else (v // 1000, v // 100 % 10, v % 100)
        return int(major) * 10000 + int(minor) * 100 + int(patch)
    except Exception:  # provenance only: never fail a measurement over it
        return 0
