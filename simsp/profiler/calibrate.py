"""A new hardware YAML: a base file whose `calibration` section points at freshly measured files.

`calibrate` copies the measured files next to the new YAML (under `calibration/<name>/`) unless
they already lie in its folder, writes paths relative to that folder, rebases the base file's
other calibration paths onto it, keeps every other key (and, where the base file's layout
allows, its comments), and checks the result by loading it and reading every table it names.
`compare` shows how the change moves one workload's prediction.

Only `simsp.config` imports pyyaml (DESIGN.md's import rule): the lines written here come from
its `yaml_flow` / `yaml_text`, and the file is read back through `config.read_yaml` and compared
with what was meant before it is kept.
"""

import dataclasses
import math
import os
import shutil
import typing
from dataclasses import dataclass
from pathlib import Path

from simsp.calibration import read_attention_table, read_gemm_table, read_nccl_log
from simsp.config import load_hardware, read_yaml, yaml_flow, yaml_text
from simsp.cost import CostModel
from simsp.errors import InputError
from simsp.hardware import CalibrationSpec
from simsp.profiler._torch import today
from simsp.textfile import read_text


def _path_keys() -> tuple[str, ...]:
    """The calibration keys holding file paths: CalibrationSpec's str and tuple[str, ...] fields."""
    hints = typing.get_type_hints(CalibrationSpec)
    return tuple(
        f.name
        for f in dataclasses.fields(CalibrationSpec)
        if hints[f.name] in (str, tuple[str, ...]) and f.metadata.get("path", True)
    )


PATH_KEYS = _path_keys()
"""gemm, gemm_model, flash_attention, nvlink, infiniband (relative to the hardware file's
folder)."""


@dataclass(frozen=True)
class Measured:
    """Scalar calibration lines a profiler writes to a file, provenance comments first."""

    option: str
    """`simsp calibrate` option that reads the file."""
    keys: tuple[str, ...]
    unit: str
    source: str
    """How the provenance comment above the lines starts."""


HOST = Measured(
    "--host",
    tuple(f.name for f in dataclasses.fields(CalibrationSpec) if f.name.startswith("host_")),
    "microseconds",
    "# measured by `simsp profile host",
)
"""The host floor, as `simsp profile host --out` writes it."""
OPTIMIZER = Measured("--optimizer", ("adam_gbps",), "GB/s", "# measured by")
"""The fused Adam rate, as `simsp profile optimizer --out` writes it (the shipped files' own
provenance of it, from Megatron-LM timers, also starts `# measured by`)."""
NONE = "none"
"""`--gemm-model none` drops the base file's modeled GEMM table."""


FITTED_SOURCE = "# FITTED by"
"""How the comment block above fitted values starts."""


@dataclass(frozen=True)
class Fitted:
    """Calibration values fitted to a user's measured runs (`simsp calibrate --runs`), written
    together at the end of the calibration section under the comment lines that say so."""

    values: tuple[tuple[str, float | bool], ...]
    comments: tuple[str, ...]
    """Without the leading `# `."""


@dataclass(frozen=True)
class Request:
    """What `simsp calibrate` was asked to do."""

    base: str
    out: str
    gemm: str | None = None
    gemm_model: str | None = None
    """A modeled GEMM table; NONE drops the base file's (it models the base GPU)."""
    nvlink: tuple[str, ...] = ()
    infiniband: tuple[str, ...] = ()
    append: bool = False
    """Add the logs to the base file's lists instead of replacing them."""
    name: str | None = None
    """New `name:` value; None keeps the base file's."""
    command: str = ""
    host: str | None = None
    """A host floor file (`simsp profile host --out`)."""
    optimizer: str | None = None
    """A fused Adam rate file (`simsp profile optimizer --out`)."""
    attention: str | None = None
    """A FlashAttention throughput CSV (`simsp profile attention`) ->
    `calibration.flash_attention`."""
    memory_bound: tuple[tuple[str, object], ...] = ()
    """`memory_bound:` keys to set, with their values (`simsp calibrate --trace`)."""
    notes: tuple[str, ...] = ()
    """Provenance lines for the new file's header (what a trace matched and did not)."""
    fitted: "Fitted | None" = None
    """Values fitted to measured runs (`simsp calibrate --runs`)."""

    def measured(self) -> list[tuple[Measured, str]]:
        """The measured-lines files asked for, with what each holds."""
        return [
            (kind, path) for kind, path in ((HOST, self.host), (OPTIMIZER, self.optimizer)) if path
        ]


def calibrate(req: Request) -> dict:
    """Write the new hardware YAML; return its calibration section as written."""
    base, out = Path(req.base), Path(req.out)
    load_hardware(base)  # the base itself must be valid before anything is copied
    _check_out(out)
    _check_inputs(req)
    scalars = {
        key: value
        for kind, path in req.measured()
        for key, value in read_measured(path, kind).items()
    }
    data = read_yaml(base)
    base_dir, out_dir = base.resolve().parent, out.resolve().parent
    cal = {
        key: _rebase(value, base_dir, out_dir) if key in PATH_KEYS else value
        for key, value in dict(data.get("calibration") or {}).items()
    }
    placer = _Placer(out_dir, out.stem)
    try:
        _place_and_write(req, base, out, data, cal, placer, scalars)
    except BaseException:
        placer.undo()  # a failure leaves no copied table and no folder made for them
        raise
    return cal


def _check_out(out: Path) -> None:
    """The new file's path, checked before anything is copied: not a folder, and its folder
    either there or creatable."""
    if out.is_dir():
        raise InputError(out, "--out", str(out), "is a folder; name the new YAML file")
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
    if req.attention:
        cal["flash_attention"] = placer.place(req.attention, "")
        # the new table's rows are what this machine's framework ran: no kernel to pick
        cal.pop("attention_kernel", None)
    for key in ("nvlink", "infiniband"):
        files = [placer.place(f, key) for f in getattr(req, key)]
        if files:
            kept = _as_list(cal.get(key)) if req.append else []
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


def _as_list(value) -> list[str]:
    if not value:
        return []
    return [value] if isinstance(value, str) else list(value)


def _rebase(value, base_dir: Path, out_dir: Path):
    """A base-relative path (or list, glob patterns allowed) made relative to the new folder."""
    if base_dir == out_dir or not value:
        return value
    if isinstance(value, str):
        return value if os.path.isabs(value) else _relative(base_dir / value, out_dir)
    return [_rebase(v, base_dir, out_dir) for v in value]


def _relative(path: Path, folder: Path) -> str:
    """path relative to folder (POSIX separators), or absolute when no relative path exists."""
    try:
        return Path(os.path.relpath(path, folder)).as_posix()
    except ValueError:  # another drive
        return Path(path).as_posix()


class _Placer:
    """Copies measured files under `<out folder>/calibration/<name>/[sub/]`; a second file of the
    same name goes into a numbered folder below (`2/`, ...), never renamed, since the readers
    infer a log's collective and group size from its name when the log does not say them."""

    def __init__(self, out_dir: Path, name: str):
        self.out_dir, self.name, self.used = out_dir, name, {}
        self.made: list[Path] = []
        """Folders this placer created, outermost first (undo removes them)."""

    def mkdir(self, folder: Path) -> None:
        """folder and its missing parents, each remembered for undo."""
        missing = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for f in reversed(missing):
            try:
                f.mkdir()
            except OSError as e:
                raise InputError(
                    f, "--out", str(f), f"cannot be made ({e.strerror or e})"
                ) from None
            self.made.append(f)

    def undo(self) -> None:
        """Remove the copies and the folders made for them (only if left empty)."""
        for dest in self.used:
            dest.unlink(missing_ok=True)
        for folder in reversed(self.made):
            try:
                folder.rmdir()
            except OSError:
                pass

    def place(self, source: str, sub: str) -> str:
        """The path to write into the YAML for `source`, copying it when it lies elsewhere."""
        src = Path(source).resolve()
        if src.is_relative_to(self.out_dir):
            return _relative(src, self.out_dir)
        folder = self.out_dir / "calibration" / self.name / sub
        dest, i = folder / src.name, 1
        while dest in self.used and self.used[dest] != src:
            i += 1
            dest = folder / str(i) / src.name
        if dest not in self.used:
            self.mkdir(dest.parent)
            self.used[dest] = src
            try:
                shutil.copyfile(src, dest)
            except OSError as e:
                raise InputError(
                    dest, "--out", str(dest), f"cannot be written ({e.strerror or e})"
                ) from None
        return _relative(dest, self.out_dir)


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
        i = _find(lines, 0, len(lines), "", "name")
        if i is None:
            return None
        lines[i] = _dump_key("", "name", data["name"])
    if req.memory_bound and not _edit_section(lines, "memory_bound", data["memory_bound"], req):
        return None
    start = _find(lines, 0, len(lines), "", "calibration")
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
            [_dump_key(indent, key, data["calibration"][key])] if key in data["calibration"] else []
        )
        if key in firsts:
            kind, path = firsts[key]
            end = _drop_source(lines, start, end, indent, key, kind.source)
            new[:0] = [indent + line for line in measured_source(path)]
        i = _find(lines, start + 1, end, indent, key)
        if i is None:
            lines[end:end] = new
            end += len(new)
            continue
        j = _extent(lines, i, end, indent)
        lines[i:j] = new
        end -= j - i - len(new)
    if req.fitted:
        _write_fitted(lines, start, end, indent, data["calibration"], req.fitted)
    return "\n".join(lines) + "\n"


def _edit_section(lines: list[str], section: str, values: dict, req: Request) -> bool:
    """Replace (or add) the keys of req.memory_bound under `section:` in place; False where the
    section is not in block style."""
    start = _find(lines, 0, len(lines), "", section)
    if start is None or lines[start].split("#")[0].strip() != f"{section}:":
        return False
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end][0] in " #"):
        end += 1
    body = [ln for ln in lines[start + 1 : end] if ln.strip() and not ln.lstrip().startswith("#")]
    indent = " " * (len(body[0]) - len(body[0].lstrip())) if body else "  "
    for key, _ in req.memory_bound:
        new = [_dump_key(indent, key, values[key])]
        i = _find(lines, start + 1, end, indent, key)
        if i is None:
            lines[end:end] = new
            end += 1
            continue
        j = _extent(lines, i, end, indent)
        top = i  # the comments above say where the old value came from: they go with it
        while top > start + 1 and lines[top - 1].strip().startswith("#"):
            top -= 1
        new = ([f"{indent}# {req.notes[0]}"] if req.notes else []) + [
            _dump_key(indent, key, values[key])
        ]
        lines[top:j] = new
        end -= j - top - len(new)
    return True


def _write_fitted(lines, start: int, end: int, indent: str, cal: dict, fitted: Fitted) -> None:
    """The fitted keys' old lines out (with a profiler's provenance above them: the values no
    longer are what it measured), then the fitted block at the section's end."""
    for key, _ in fitted.values:
        source = FITTED_SOURCE if key == "fitted" else HOST.source  # a refit drops the old block
        end = _drop_source(lines, start, end, indent, key, source)
        i = _find(lines, start + 1, end, indent, key)
        if i is not None:
            j = _extent(lines, i, end, indent)
            del lines[i:j]
            end -= j - i
    while end > start + 1 and (not lines[end - 1].strip() or lines[end - 1].startswith("#")):
        end -= 1  # before the blank lines and top-level comments that lead to the next section
    lines[end:end] = [f"{indent}# {c}" for c in fitted.comments] + [
        _dump_key(indent, key, cal[key]) for key, _ in fitted.values
    ]


def _drop_source(lines, start: int, end: int, indent: str, key: str, source: str) -> int:
    """Remove the old provenance above `key` (the comment lines from the one starting with
    `source` down to it), since the new file's replaces it; return the section's new end."""
    i = _find(lines, start + 1, end, indent, key)
    j = i
    while i is not None and j > start + 1 and lines[j - 1].strip().startswith("#"):
        j -= 1
        if lines[j].strip().startswith(source):
            del lines[j:i]
            return end - (i - j)
    return end


def _find(lines, lo: int, hi: int, indent: str, key: str) -> int | None:
    """Index of the line `<indent><key>:` in lines[lo:hi]."""
    for i in range(lo, hi):
        line = lines[i]
        if line.startswith(indent + key + ":") and (
            len(indent) == 0 or not line[len(indent)].isspace()
        ):
            return i
    return None


def _extent(lines, i: int, hi: int, indent: str) -> int:
    """One past the last line of the entry starting at i (deeper lines, same-indent '- ' items)."""
    j = last = i + 1
    while j < hi:
        line = lines[j]
        deeper = line.startswith(indent + " ") or line.startswith(indent + "- ")
        if line.strip() and not deeper:
            break
        if line.strip():
            last = j + 1
        j += 1
    return last


def _dump_key(indent: str, key: str, value) -> str:
    """One `key: value` line in flow style."""
    return f"{indent}{key}: {yaml_flow(value)}"


def _validate(tmp: Path, out: Path) -> None:
    """Load the new file (at its temporary name) and read every table it names."""
    try:
        CostModel(load_hardware(tmp))
    except (InputError, ValueError) as e:
        raise InputError(
            out, "calibration", None, f"the new file would not load ({e}); nothing written"
        ) from None


# ---------------------------------------------------------------- what the change does


def predict(w, hw) -> dict[str, float]:
    """The numbers `simsp calibrate --workload` compares: the iteration and one layer."""
    from simsp.report import run  # the simulation (simpy) only when a comparison is asked for

    d = run(w, hw).to_dict()
    return {
        "iteration s": d["iteration_time_s"],
        "MFU %": 100 * d["mfu"],
        "per-layer forward ms": d["per_layer_ms"]["forward"],
        "per-layer backward ms": d["per_layer_ms"]["backward"],
    }


def gemm_sources(w, hw) -> dict[str, int]:
    """How many of the layer's GEMM look-ups each source answered (table, model, roofline)."""
    from simsp.report import gemm_sources as layer_gemm_sources
    from simsp.report import run

    return layer_gemm_sources(run(w, hw).plan.layer)


def compare(w, base_hw, new_hw) -> str:
    """A small table: each predicted number under the base and the new hardware file, and the
    change."""
    before, after = predict(w, base_hw), predict(w, new_hw)
    rows = [f"{w.name:<30}{'base':>12}{'new':>12}{'change':>10}"]
    for key, old in before.items():
        new = after[key]
        change = f"{(new - old) / old * 100:+.1f}%" if old else "n/a"
        rows.append(f"  {key:<28}{old:12.4f}{new:12.4f}{change:>10}")
    for label, hw in (("base", base_hw), ("new", new_hw)):
        counts = ", ".join(f"{src} {n}" for src, n in sorted(gemm_sources(w, hw).items()))
        rows.append(f"  GEMM look-ups by source, {label}: {counts}")
    return "\n".join(rows)
