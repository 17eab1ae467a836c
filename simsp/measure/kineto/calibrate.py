"""`simsp calibrate --trace`: a hardware file calibrated from a real iteration's Kineto trace.

The base hardware file is `--hardware`, else the library file whose GPU the trace ran on (its
model and memory size in the trace's device name), else the default (a CPU trace has no GPU of
its own: its tables are CPU rates, labelled so). The trace's tables replace the base file's GEMM
table (and FlashAttention table, memory-bound rates, collective logs, host floor, where the
trace holds them). Where the base is the trace's GPU, what the trace did not run keeps the base
file's own measurements: its modeled GEMM table, or, without one, its measured GEMM table as the
shape model the trace's points anchor; its FlashAttention rows of a direction the trace lacks.
A base of another GPU keeps none of its GEMM tables, so shapes the trace lacks fall to the
roofline, visibly.
"""

import re
from pathlib import Path

from simsp.errors import InputError
from simsp.io.config import REPO_ROOT, default_hardware_path, load_hardware, load_workload
from simsp.measure.kineto.match import match_profile
from simsp.measure.kineto.reader import read_profile
from simsp.measure.kineto.tables import cleanup, provenance, staging, tables, write_files
from simsp.tables import read_attention_table


def _gpu_key(name: str) -> tuple[str, str]:
    """(model, memory) tokens of a GPU name: ('H100', '80GB'), ('A100', '40GB'), ..."""
    text = name.upper()
    model = re.search(r"\b[ABHGL]\d{2,3}", text)
    mem = re.search(r"\b(\d{2,3})\s*GB", text)
    return (model.group(0) if model else "", mem.group(1) if mem else "")


def same_gpu(a: str, b: str) -> bool:
    """Two device names name the same GPU (model, and memory size where both say it)."""
    (ma, ga), (mb, gb) = _gpu_key(a), _gpu_key(b)
    return bool(ma) and ma == mb and (not ga or not gb or ga == gb)


def base_for(device: str) -> Path:
    """The library hardware file of the trace's GPU, else the default."""
    if device != "CPU":
        for path in sorted((REPO_ROOT / "hardware").glob("*.yaml")):
            hw = load_hardware(path)
            if same_gpu(hw.gpu.name, device) and "assumed" not in hw.gpu.name:
                return path
    return default_hardware_path()


def _attention_rows(files: dict, base_hw, folder: Path) -> None:
    """Add the base file's rows of a (direction, mask) the trace lacks (each row keeps its
    source), so a forward-only trace's backward is the base's, scaled by the lookup's causal /
    non-causal forward ratio where the base measured the other mask only."""
    from simsp.tables import write_attention_table

    mine = read_attention_table(files["attention"]).points
    have = {(p.direction, p.causal) for p in mine}
    if not base_hw.calibration.flash_attention:
        return
    kernel = base_hw.calibration.attention_kernel  # the base's framework kernel, if named
    extra = [
        p
        for p in read_attention_table(base_hw.calibration.flash_attention).points
        if (p.direction, p.causal) not in have and p.kernel in (kernel or p.kernel,)
    ]
    if extra:
        write_attention_table(
            folder / "flash_attention.csv",
            (*mine, *extra),
            ("trace rows first; rows of other sources fill the directions it lacks",),
        )


def _lacks(model) -> str:
    if model is None:
        return "the base file's modeled GEMM table"
    if model == "none":
        return "the roofline (the base file is another GPU's, its tables are not kept)"
    return "the base file's measured GEMM table, as the shape model the trace's points anchor"


def calibrate_from_trace(trace, workload, out, hardware=None, command: str = "") -> dict:
    """Write the calibrated hardware file; return the summary `--json` prints."""
    from simsp.measure.profiler.calibrate import calibrate
    from simsp.measure.profiler.calibrate_request import NONE, Request

    w = load_workload(workload)
    prof = read_profile(trace)
    base = Path(hardware) if hardware else base_for(prof.device)
    hw = load_hardware(base)
    mt = match_profile(prof, w)
    t = tables(mt, hw.gpu.hbm_gbps)
    if not t.gemm:
        raise InputError(trace, "kernels", 0, f"no GEMM of {w.name} found in the trace")
    own = same_gpu(hw.gpu.name, prof.device)
    folder = staging()
    try:
        files = write_files(t, mt, folder, hw.node.gpus)
        if own and "attention" in files:
            _attention_rows(files, hw, folder)
        model = None if own and hw.calibration.gemm_model else NONE
        if own and not hw.calibration.gemm_model and hw.calibration.gemm:
            model = hw.calibration.gemm
        notes = [*provenance(mt), *t.notes, f"GEMM shapes the trace did not run: {_lacks(model)}"]
        calibrate(
            Request(
                str(base),
                str(out),
                gemm=files.get("gemm"),
                gemm_model=model,
                nvlink=tuple(files["nvlink"]),
                infiniband=tuple(files["infiniband"]),
                command=command,
                host=files.get("host"),
                attention=files.get("attention"),
                memory_bound=tuple(t.memory_bound.items()),
                notes=tuple(notes),
            )
        )
    except InputError as e:
        if not Path(e.file).resolve().is_relative_to(Path(folder).resolve()):
            raise
        # a table derived from the trace breaks a rule: the trace is what the user gave
        key = f"{Path(e.file).name}: {e.key}"
        raise InputError(trace, "traceEvents", None, f"yields {key} that {e.rule}") from None
    finally:
        cleanup(folder)
    return {
        "matched_fraction": mt.matched_fraction,
        "unmatched": [{"name": n, "time_s": s, "kernels": c} for n, s, c in mt.unmatched()],
        "out": str(out),
        "base": str(base),
        "device": prof.device,
        "cpu_trace": prof.cpu,
        "kernel_time_s": mt.total_s,
        "gemm_shapes": len(t.gemm),
        "attention_rows": len(t.attention),
        "collective_tables": len(t.collectives),
        "memory_bound": sorted(t.memory_bound),
        "host_floor": t.host,
    }
