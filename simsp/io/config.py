"""The only module that reads YAML: workload and hardware files become validated frozen specs.

Every problem is raised as one InputError naming the file, the key, the value and the rule.
"""

import dataclasses
import glob
import json
import re
from pathlib import Path

import yaml

from simsp import textfile
from simsp.errors import InputError
from simsp.io.hardware_set import HARDWARE_SECTIONS, apply_sets, own_link_rates, parse_set
from simsp.spec.fields import build, check_scalar, required_section, unknown_top_keys
from simsp.spec.hardware import CalibrationSpec, HardwareSpec, hardware_rules
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.rules import validate
from simsp.spec.workload import TrainingSpec, Workload
from simsp.tables.plausible import check_tables

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_HARDWARE = "hardware/dgx-a100-80gb.yaml"


def read_text(path) -> str:
    """A file's text, bounded (simsp.textfile), or InputError naming it."""
    return textfile.read_text(path)


MAX_DEPTH = 64
"""Deepest nesting of lists and mappings read: a workload needs three levels; PyYAML's composer
recurses once per level, so a file of 50,000 `[` would otherwise end in a RecursionError."""
MAX_NODES = 1_000_000
"""Most values a document may expand to with its aliases counted each time they are used: an
alias bomb (each anchor a list of nine of the one before) is tiny on disk and 387 million values
to anything that walks it."""


class _Limit(yaml.YAMLError):
    """A document past MAX_DEPTH or MAX_NODES (the rule broken, as one line)."""


_FLOAT_1_2 = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
"""YAML 1.2 floats with an exponent and no dot (`1e6`, `3.12e2` is YAML 1.1 already), which
PyYAML's YAML 1.1 resolver leaves as strings."""


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads `1e6` as a number and bounds nesting depth and alias expansion."""

    yaml_implicit_resolvers = {
        k: list(v) for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }

    def compose_node(self, parent, index):
        self._depth = getattr(self, "_depth", 0) + 1
        if self._depth > MAX_DEPTH:
            raise _Limit(f"nests deeper than {MAX_DEPTH} levels")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT_1_2, list("-+0123456789"))


def _expanded_size(node, memo: dict) -> int:
    """Values in node with every alias expanded (memoised by node, so linear in the file)."""
    if id(node) in memo:
        return memo[id(node)]
    size = 1
    if isinstance(node, yaml.SequenceNode):
        size += sum(_expanded_size(n, memo) for n in node.value)
    elif isinstance(node, yaml.MappingNode):
        size += sum(_expanded_size(k, memo) + _expanded_size(v, memo) for k, v in node.value)
    memo[id(node)] = size
    if size > MAX_NODES:
        raise _Limit(f"expands to more than {MAX_NODES:,} values (an alias bomb?)")
    return size


def parse_yaml(text: str):
    """YAML text -> Python data through the bounded loader (raises yaml.YAMLError, ValueError)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, {})
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml(path) -> dict:
    """Load a YAML mapping, or raise InputError for a missing, unreadable or non-mapping file."""
    text = read_text(path)
    try:
        data = parse_yaml(text)
    except _Limit as e:
        raise InputError(path, "file", str(path), str(e)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise InputError(path, "file", str(path), f"is not valid YAML{where}") from None
    except (ValueError, OverflowError) as e:  # e.g. an integer of more than 4,300 digits
        raise InputError(
            path, "file", str(path), f"holds a value Python cannot read ({str(e)[:80]})"
        ) from None
    if not isinstance(data, dict):
        raise InputError(
            path, "file", type(data).__name__, "must be a YAML mapping of keys to values"
        )
    return data


def read_json(path) -> dict:
    """Load a JSON object (a Hugging Face config.json), or raise InputError."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except ValueError as e:
        raise InputError(path, "file", str(path), f"is not valid JSON ({str(e)[:80]})") from None
    except RecursionError:
        raise InputError(path, "file", str(path), "nests too deep to read") from None
    if not isinstance(data, dict):
        raise InputError(path, "file", type(data).__name__, "must be a JSON object")
    return data


def _model_section(data: dict, file, model_overrides: dict) -> ModelSpec:
    """The `model:` mapping, with `hf_config: PATH` (relative to the workload file) expanded
    into its fields and the mapping's own keys, then the CLI's, laid over them.

    `--model PATH` (relative to the working directory) replaces the model but keeps seq_len."""
    section = data.get("model")
    if section is None:
        raise InputError(file, "model", None, "is required")
    if not isinstance(section, dict):
        raise InputError(file, "model", section, "must be a mapping")
    section = dict(section)
    given = {k: v for k, v in model_overrides.items() if v is not None}
    if "hf_config" in given:
        section = {"seq_len": section["seq_len"]} if "seq_len" in section else {}
        section["hf_config"] = str(Path(given.pop("hf_config")).resolve())
    if "hf_config" in section:
        from simsp.io.hf_config import model_fields

        given_path = check_scalar(file, "model.hf_config", section.pop("hf_config"), str, False)
        hf_path = Path(file).parent / given_path
        if not hf_path.is_file():
            raise InputError(file, "model.hf_config", given_path, f"no such file ({hf_path})")
        section = {**model_fields(read_json(hf_path), str(hf_path)), **section}
    section.update(given)
    return build(ModelSpec, section, file, prefix="model.")


WORKLOAD_KEYS = ("name", "hardware", "model", "training", "parallel")
"""A workload file's top-level keys; `hardware` (optional) names the machine it was made for."""


def workload_hardware(path) -> str | None:
    """The hardware a workload file names (`hardware: dgx-h100`, a library name or a path
    relative to the file), for a run that gives no --hardware; None where it names none."""
    if path is None:
        return None
    given = read_yaml(path).get("hardware")
    if given is None:
        return None
    check_scalar(path, "hardware", given, str, False)
    if not given:
        raise InputError(path, "hardware", given, "must name a hardware file")
    beside = Path(path).parent / given
    return str(beside) if beside.is_file() else given


def check_name(path, value) -> str:
    """A workload's or machine's name: a string that goes into table rows and CSV cells, so it
    may not start as a formula would, nor hold a control character (a newline would split a
    row, or an error's one line)."""
    name = check_scalar(path, "name", value, str, False)
    if name.startswith(textfile.FORMULA_STARTS):
        raise InputError(path, "name", name, "must not start with =, +, - or @ (a formula)")
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise InputError(path, "name", name, "must not hold a control character")
    return name


def model_name(hf_path) -> str:
    """A model's name from its config.json: the folder holding it
    (workloads/models/llama-3.1-70b/config.json -> llama-3.1-70b), or the file's stem where the
    file has a name of its own (qwen3.json -> qwen3)."""
    path = Path(hf_path).resolve()
    return path.parent.name if path.name == "config.json" else path.stem


def load_workload(path, overrides: dict | None = None, read=None) -> Workload:
    """Read a workload YAML, apply CLI overrides ({'model': ..., 'parallel': {...},
    'training': {...}}), validate. A `--model` override names the run after its model. `read`:
    what reads the file's mapping (read_yaml; a runs file naming one YAML 10,000 times reads it
    once and passes a copy each time).

    With no file (path None) the workload is the `--model` config.json alone: its seq_len and
    global batch must be given (`--seq-len`, `--global-batch`), the micro batch is 1 and every
    other setting takes its default (spec/workload.py, spec/parallel.py)."""
    overrides = dict(overrides or {})
    hf_model = (overrides.get("model") or {}).get("hf_config")
    if path is None:
        if not hf_model:
            raise InputError("workload", "workload", None, "give a workload file or --model")
        for flag, section, key in (
            ("--seq-len", "model", "seq_len"),
            ("--global-batch", "training", "global_batch"),
        ):
            if (overrides.get(section) or {}).get(key) is None:
                raise InputError(flag, key, None, "is required with --model and no workload")
        path = hf_model
        data = {"model": {}, "training": {"micro_batch": 1}}
    else:
        data = (read or read_yaml)(path)
    unknown_top_keys(data, path, WORKLOAD_KEYS)
    if hf_model:
        data["name"] = model_name(hf_model)
    model_overrides = overrides.pop("model", {}) or {}
    for section in ("training", "parallel"):
        given = data.get(section)
        if given is not None and not isinstance(given, dict):
            raise InputError(path, section, given, "must be a mapping of keys to values")
    for section, values in overrides.items():
        merged = dict(data.get(section) or {})
        merged.update({k: v for k, v in values.items() if v is not None})
        data[section] = merged
    name = check_name(path, data.get("name", Path(path).stem))
    w = Workload(
        name=name,
        model=_model_section(data, path, model_overrides),
        training=required_section(data, path, "training", TrainingSpec),
        parallel=build(ParallelSpec, data.get("parallel", {}), path, prefix="parallel."),
    )
    return validate(w, str(path))


def _resolve_paths(file, key, patterns, folder: Path) -> tuple[str, ...]:
    """Expand calibration paths (globs allowed) relative to the hardware file's folder."""
    found = []
    for pattern in patterns:
        matches = sorted(glob.glob(str(folder / pattern)))
        if not matches:
            raise InputError(file, key, pattern, f"matches no file under {folder}")
        found.extend(matches)
    return tuple(found)


def load_hardware(path=None, sets=()) -> HardwareSpec:
    """Read a hardware YAML; calibration paths become absolute. A bare name (`dgx-h100`) is a
    file of the hardware library (hardware/NAME.yaml). `sets` are `--set SECTION.KEY=VALUE`
    strings, laid over the file's values before the file's rules are checked (a later one for
    the same key wins)."""
    given = dict(parse_set(text) for text in sets)
    path = library_path(path) if path else default_hardware_path()
    data = read_yaml(path)
    unknown_top_keys(data, path, ("name", *HARDWARE_SECTIONS))
    given_cal = data.get("calibration")
    cal = build(CalibrationSpec, {} if given_cal is None else given_cal, path, "calibration.")
    folder = path.resolve().parent
    cal = dataclasses.replace(
        cal,
        gemm=_resolve_paths(path, "calibration.gemm", [cal.gemm], folder)[0] if cal.gemm else "",
        **{
            key: _resolve_paths(path, f"calibration.{key}", [getattr(cal, key)], folder)[0]
            for key in ("gemm_model", "gemm_fp8", "gemm_model_fp8", "grouped_gemm")
            if getattr(cal, key)
        },
        flash_attention=(
            _resolve_paths(path, "calibration.flash_attention", [cal.flash_attention], folder)[0]
            if cal.flash_attention
            else ""
        ),
        nvlink=_resolve_paths(path, "calibration.nvlink", cal.nvlink, folder),
        infiniband=_resolve_paths(path, "calibration.infiniband", cal.infiniband, folder),
    )
    hw = HardwareSpec(
        name=check_name(path, data.get("name", path.stem)),
        **{
            section: required_section(data, path, section, cls)
            for section, cls in HARDWARE_SECTIONS.items()
            if section != "calibration"  # built above, its paths resolved
        },
        calibration=cal,
        source=str(path),
    )
    hw = apply_sets(own_link_rates(hw), given)
    for key, value, holds, rule in hardware_rules(hw):
        if not holds:
            raise InputError("--set" if key in given else path, key, value, rule)
    check_tables(hw)
    return hw


def inside_trees(path, *folders) -> bool:
    """Whether `path` lies in one of `folders` (each with everything below it) or in simsp's own
    shipped workloads/ and hardware/: where a file another file names may be read without the
    user saying so (a spec or runs file from someone else must not reach the rest of the disk)."""
    found = Path(path).resolve()
    trees = (*folders, REPO_ROOT / "workloads", REPO_ROOT / "hardware")
    return any(found.is_relative_to(Path(t).resolve()) for t in trees)


def library_path(given) -> Path:
    """A hardware path as given, or, for a bare name with no such file, the library's file of
    that name (in ./hardware, else in the source checkout)."""
    path = Path(given)
    if path.exists() or path.suffix or len(path.parts) > 1:
        return path
    for root in (Path("hardware"), REPO_ROOT / "hardware"):
        if (root / f"{path.name}.yaml").exists():
            return root / f"{path.name}.yaml"
    return path


def default_hardware_path() -> Path:
    """hardware/dgx-a100-80gb.yaml from the working directory, else from the source checkout."""
    local = Path(DEFAULT_HARDWARE)
    return local if local.exists() else REPO_ROOT / DEFAULT_HARDWARE


def yaml_text(data: dict) -> str:
    """A mapping as block-style YAML text, keys in their order (the one place YAML is produced)."""
    return yaml.safe_dump(data, sort_keys=False)


def yaml_flow(value) -> str:
    """One value as single-line flow-style YAML, e.g. `[a.log, b.log]` or `calibration/x.csv`."""
    return (
        yaml.safe_dump(value, default_flow_style=True, width=float("inf"))
        .strip()
        .removesuffix("\n...")
        .strip()
    )
