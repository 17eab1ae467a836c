"""A new hardware YAML: a base file whose `calibration` section points at freshly measured files.

`calibrate` places the measured files next to the new YAML (`measured_files`), keeps every
other key of the base file (and, where its layout allows, its comments: `yaml_lines`), and
checks the result by loading it and reading every table it names. `prediction_change` shows
how the change moves one workload's prediction.

Only `simsp.io.config` imports pyyaml (docs/architecture.md's import rule): the lines written
come from its `yaml_flow` (through `yaml_lines`) or `yaml_text`, and the file is read back
through `config.read_yaml` and compared with what was meant before it is kept.
"""

import math
import os
from pathlib import Path

from simsp.cost import CostModel
from simsp.errors import InputError
from simsp.io.config import check_name, load_hardware, read_yaml, yaml_text
from simsp.measure.profiler._torch import today
from simsp.measure.profiler.calibrate_request import (
    FITTED_SOURCE,
    HOST,
    NONE,
    PATH_KEYS,
    Fitted,
    Measured,
    Request,
)
from simsp.measure.profiler.measured_files import Placer, as_list, rebase
from simsp.measure.profiler.yaml_lines import (
    drop_source,
    entry_end,
    find_key,
    key_line,
    replace_section_keys,
)
from simsp.tables import read_attention_table, read_gemm_table, read_nccl_log
from simsp.tables.grouped_gemm import read_grouped_gemm_table
from simsp.textfile import read_text


def calibrate(req: Request) -> dict:
    """Write the new hardware YAML; return its calibration section as written."""
    base, out = Path(req.base), Path(req.out)
    load_hardware(base)  # the base itself must be valid before anything is copied
    check_new_file(out, req)
    if req.name is not None:  # before anything is staged: the error names the flag
        check_name("--name", req.name)
    _check_inputs(req)
    scalars = {
        key: value
        for kind, path in req.measured()
        for key, value in read_measured(path, kind).items()
    }
    data = read_yaml(base)
    base_dir, out_dir = base.resolve().parent, out.resolve().parent
    cal = {
        key: rebase(value, base_dir, out_dir) if key in PATH_KEYS else value
        for key, value in dict(data.get("calibration") or {}).items()
    }
    placer = Placer(out_dir, out.stem)
    try:
        _place_and_write(req, base, out, data, cal, placer, scalars)
    except BaseException:
        placer.undo()  # a failure leaves no copied table and no folder made for them
        raise
    return cal


def check_new_file(out: Path, req: Request) -> None:
    """The new file's path, checked before anything is copied: not a folder, a symbolic link,
    a device or FIFO, nor any file the command reads; its folder either there or creatable."""
    if out.is_dir():
        raise InputError(out, "--out", str(out), "is a folder; name the new YAML file")
    if out.is_symlink():
        raise InputError(out, "--out", str(out), "is a symbolic link; name a file")
    if out.exists() and not out.is_file():
        raise InputError(out, "--out", str(out), "is not a regular file (a device, a FIFO)")
    inputs = (req.base, req.gemm, req.gemm_model, *req.nvlink, *req.infiniband, req.host)
    inputs += (req.optimizer, req.attention, req.grouped_gemm)
    for given in inputs:
        if given and out.exists() and Path(given).exists() and out.samefile(given):
            raise InputError(out, "--out", str(out), "is an input of this command")
    folder = out.resolve().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK):
        raise InputError(out, "--out", str(out), f"cannot be written under {folder}")


def _place_and_write(req: Request, base: Path, out: Path, data: dict, cal: dict, placer, scalars):
    """Copy the measured files into place and write the new YAML (the caller undoes the copies
    when this fails)."""
    if req.gemm:
        cal["gemm"] = placer.place(req.gemm, "")
    if req.gemm_model == NONE:
        cal.pop("gemm_model", None)
    elif req.gemm_model:
        cal["gemm_model"] = placer.place(req.gemm_model, "")
    if req.grouped_gemm:
        cal["grouped_gemm"] = placer.place(req.grouped_gemm, "")
    if req.attention:
        cal["flash_attention"] = placer.place(req.attention, "")
        # the new table's rows are what this machine's framework ran: no kernel to pick
        cal.pop("attention_kernel", None)
    for key in ("nvlink", "infiniband"):
        files = [placer.place(f, key) for f in getattr(req, key)]
        if files:
            kept = as_list(cal.get(key)) if req.append else []
            cal[key] = kept + [f for f in files if f not in kept]
            if not req.append:
                _measured_here(cal, data, key)
    cal.update(scalars)
    if req.fitted:
        cal.update(req.fitted.values)
    data["calibration"] = cal
    if req.memory_bound:
        data["memory_bound"] = {**dict(data.get("memory_bound") or {}), **dict(req.memory_bound)}
    if req.name:
        data["name"] = req.name
    _write_yaml(base, out, data, req, placer)


LINK_KEYS = {
    "nvlink": (("measured_nvlink_gbps", "node", "nvlink_gbps"),),
    "infiniband": (
        ("measured_nic_gbps", "network", "nic_gbps"),
        ("measured_nics_per_node", "network", "nics_per_node"),
    ),
}
"""The link rates each list of logs was measured at, and the file's own key each defaults to."""


def _measured_here(cal: dict, data: dict, key: str) -> None:
    """Logs replaced by new ones were measured on the machine the file describes: a stated
    measured link rate of the base file's old logs becomes the file's own rate."""
    for measured, section, own in LINK_KEYS[key]:
        if measured in cal:
            cal[measured] = (data.get(section) or {}).get(own, cal[measured])


def _check_inputs(req: Request) -> None:
    """Every measured file exists and parses (errors name the file), before anything is written."""
    for table in (req.gemm, req.gemm_model):
        if table and table != NONE:
            read_gemm_table(table)
    if req.attention:
        read_attention_table(req.attention)
    if req.grouped_gemm:
        read_grouped_gemm_table(req.grouped_gemm)
    for f in (*req.nvlink, *req.infiniband):
        read_nccl_log(f)


def read_measured(path: str, kind: Measured) -> dict[str, float]:
    """The values of a measured-lines file (`simsp profile host|optimizer --out`), checked."""
    values = read_yaml(path)
    holds = f"{', '.join(kind.keys)} in {kind.unit}"
    if not isinstance(values, dict) or not values:
        raise InputError(path, "file", type(values).__name__, f"must map {holds}")
    for key, value in values.items():
        if key not in kind.keys:
            raise InputError(path, key, value, f"unknown key; a {kind.option} file holds {holds}")
        number = not isinstance(value, bool) and isinstance(value, (int, float))
        if not number or not 0 <= value < math.inf or value > 2**53:
            raise InputError(
                path, key, value, f"must be a finite non-negative number of {kind.unit}"
            )
    return {key: float(value) for key, value in values.items()}


def measured_source(path: str) -> list[str]:
    """The provenance comments of a measured-lines file (the profiler writes them first)."""
    lines = [line.strip() for line in read_text(path).splitlines()]
    return [line for line in lines if line.startswith("#")] or [f"# from {path}"]


# ---------------------------------------------------------------- writing the YAML


def _write_yaml(base: Path, out: Path, data: dict, req: Request, placer) -> None:
    """Base text with the calibration entries replaced (comments kept); a plain dump if that
    fails. Written to a temporary name beside `out`, read back and loaded there, and only then
    renamed into place: a failure leaves no new file and an existing one untouched."""
    header = [
        f"# Written by `simsp calibrate` on {today()} from {base}; calibration section updated.",
        f"# command: {req.command}" if req.command else "",
        *(f"# {line}" for line in req.notes),
    ]
    header = "\n".join(h for h in header if h) + "\n"
    edited = _edit_calibration(read_text(base), data, req)
    placer.mkdir(out.resolve().parent)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        texts = [header + edited] if edited is not None else []
        texts.append(
            header
            + f"# (layout of {base.name} not kept: its comments are lost)\n"
            + yaml_text(data)
        )
        for text in texts:
            _write(tmp, text)
            if _reads_back(tmp, data):
                break
        else:
            raise InputError(
                base,
                "file",
                str(base),
                "cannot be rewritten faithfully; edit the calibration section by hand",
            )
        _validate(tmp, out)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text)
    except OSError as e:
        raise InputError(
            path, "--out", str(path), f"cannot be written ({e.strerror or e})"
        ) from None


def _reads_back(out: Path, data: dict) -> bool:
    try:
        return read_yaml(out) == data
    except InputError:
        return False


def _edit_calibration(text: str, data: dict, req: Request) -> str | None:
    """Replace the calibration entries (and `name`) in the base text; None if its layout is
    unusual."""
    lines = text.splitlines()
    if req.name is not None:
        i = find_key(lines, 0, len(lines), "", "name")
        if i is None:
            return None
        lines[i] = key_line("", "name", data["name"])
    if req.memory_bound and not replace_section_keys(
        lines,
        "memory_bound",
        data["memory_bound"],
        [key for key, _ in req.memory_bound],
        req.notes[0] if req.notes else None,
    ):
        return None
    start = find_key(lines, 0, len(lines), "", "calibration")
    if start is None:
        lines += ["calibration:"]
        start = len(lines) - 1
    elif lines[start].split("#")[0].strip() != "calibration:":
        return None  # flow style: `calibration: {...}`
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " #"):
        end += 1
    body = [
        line
        for line in lines[start + 1 : end]
        if line.strip() and not line.lstrip().startswith("#")
    ]
    indent = " " * (len(body[0]) - len(body[0].lstrip())) if body else "  "
    measured_keys: tuple[str, ...] = ()
    firsts = {}  # the first key of each measured file written, with the file and what it holds
    for kind, path in req.measured():
        written = [k for k in kind.keys if k in data["calibration"]]
        firsts[written[0]] = (kind, path)
        measured_keys += tuple(written)
    links = tuple(m for keys in LINK_KEYS.values() for m, _, _ in keys if m in data["calibration"])
    for key in PATH_KEYS + ("attention_kernel",) + measured_keys + links:
        new = (
            [key_line(indent, key, data["calibration"][key])] if key in data["calibration"] else []
        )
        if key in firsts:
            kind, path = firsts[key]
            end = drop_source(lines, start, end, indent, key, kind.source)
            new[:0] = [indent + line for line in measured_source(path)]
        i = find_key(lines, start + 1, end, indent, key)
        if i is None:
            lines[end:end] = new
            end += len(new)
            continue
        j = entry_end(lines, i, end, indent)
        lines[i:j] = new
        end -= j - i - len(new)
    if req.fitted:
        _write_fitted(lines, start, end, indent, data["calibration"], req.fitted)
    return "\n".join(lines) + "\n"


def _write_fitted(lines, start: int, end: int, indent: str, cal: dict, fitted: Fitted) -> None:
    """The fitted keys' old lines out (with a profiler's provenance above them: the values no
    longer are what it measured), then the fitted block at the section's end."""
    for key, _ in fitted.values:
        source = FITTED_SOURCE if key == "fitted" else HOST.source  # a refit drops the old block
        end = drop_source(lines, start, end, indent, key, source)
        i = find_key(lines, start + 1, end, indent, key)
        if i is not None:
            j = entry_end(lines, i, end, indent)
            del lines[i:j]
            end -= j - i
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1  # before the blank lines and top-level comments that lead to the next section
    lines[end:end] = [f"{indent}# {c}" for c in fitted.comments] + [
        key_line(indent, key, cal[key]) for key, _ in fitted.values
    ]


def _validate(tmp: Path, out: Path) -> None:
    """Load the new file (at its temporary name) and read every table it names."""
    try:
        CostModel(load_hardware(tmp))
    except (InputError, ValueError) as e:
        raise InputError(
            out, "calibration", None, f"the new file would not load ({e}); nothing written"
        ) from None
