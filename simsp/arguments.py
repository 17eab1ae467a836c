"""Command-line pieces every subcommand shares: the parser, the workload flags, loading, output.

The override flags are generated from `knobs.KNOBS` (the fields of `ModelSpec`, `TrainingSpec`
and `ParallelSpec`): one flag per field, named like the field (underscores as dashes), its help
text the field's docstring. A new field is a new flag without an edit here. `cli.py`,
`profiler/commands.py` and `sweep/commands.py` all import from this module, none from another.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from simsp.config import load_hardware, load_workload
from simsp.errors import InputError
from simsp.knobs import KNOBS, SECTIONS, Knob, parse_bias
from simsp.schedule import REGISTRY


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message):
        print(f"simsp: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def _add_knob(p: argparse.ArgumentParser, k: Knob) -> None:
    flag = "--" + k.short.replace("_", "-")
    if k.kind is bool:
        p.add_argument(
            flag,
            dest=k.name,
            action="store_true",
            default=None,
            help=f"{k.doc} (--no-{flag[2:]}: off)",
        )
        p.add_argument(
            "--no-" + flag[2:], dest=k.name, action="store_false", help=argparse.SUPPRESS
        )
        return
    p.add_argument(
        flag,
        dest=k.name,
        type=k.kind,
        choices=k.choices,
        metavar="|".join(k.choices) if k.choices else None,
        help=k.doc,
    )


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """The workload file, the hardware file, --model, and one override flag per knob."""
    p.add_argument("workload", help="workload YAML (see workloads/)")
    p.add_argument("--hardware", help="hardware YAML (default hardware/dgx-a100-80gb.yaml)")
    p.add_argument(
        "--model",
        dest="hf_model",
        metavar="CONFIG.json",
        help="replace the workload's model by this Hugging Face config.json (seq_len kept)",
    )
    for section, _ in SECTIONS:
        group = p.add_argument_group(f"{section} overrides")
        for k in KNOBS:
            if k.section == section:
                _add_knob(group, k)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def overrides(args) -> dict:
    """The flags given, as {'model': {...}, 'training': {...}, 'parallel': {...}}.

    `--schedule X` of fixed chunks (not interleaved or zb-h1) without `--virtual-stages` resets
    virtual_stages to 1.
    """
    out = {section: {} for section, _ in SECTIONS}
    for k in KNOBS:
        out[k.section][k.name] = getattr(args, k.name, None)
    out["model"]["bias"] = parse_bias(out["model"]["bias"])
    par = out["parallel"]
    fixed = par["schedule"] in REGISTRY and REGISTRY[par["schedule"]].chunks is not None
    if fixed and par["virtual_stages"] is None:  # a schedule of fixed chunks drops the workload's
        par["virtual_stages"] = 1
    if getattr(args, "hf_model", None):
        out["model"]["hf_config"] = args.hf_model
    return out


def load(args):
    """(workload, hardware) from parsed arguments."""
    return load_workload(args.workload, overrides(args)), load_hardware(args.hardware)


def print_json(obj) -> None:
    """One JSON object on stdout."""
    print(json.dumps(obj, indent=2, sort_keys=False))


def _temporary(target: Path) -> Path:
    """The name a file is written under before it is renamed into place (same folder, so the
    rename is atomic)."""
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


def _cannot_write(path, e: OSError) -> InputError:
    return InputError(path, "output", str(path), f"cannot be written ({e.strerror or e})")


def check_output(path, suffixes: tuple[str, ...] = ()) -> Path:
    """An output path that can be written, checked before any work starts: its folder exists,
    it is not a folder itself, it ends in one of suffixes (when given), and a file can be
    created beside it (tried and removed)."""
    target = Path(path)
    if suffixes and target.suffix.lower() not in suffixes:
        raise InputError(path, "output", str(path), f"must end in {' or '.join(suffixes)}")
    if target.is_dir():
        raise InputError(path, "output", str(path), "is a folder; name a file in it")
    if not target.parent.is_dir():
        raise InputError(path, "output", str(path), f"has no folder {target.parent}; create it")
    probe = _temporary(target)
    try:
        probe.open("x").close()
        probe.unlink()
    except OSError as e:
        raise _cannot_write(path, e) from None
    return target


def write_text(path, text: str) -> None:
    """Write an output file whole or not at all: to a temporary name beside it, then renamed into
    place, so a failure leaves an existing file untouched; InputError names the path."""
    write_bytes(path, text.encode())


def write_bytes(path, data: bytes) -> None:
    """write_text for bytes."""
    target = Path(path)
    tmp = _temporary(target)
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as e:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:  # its folder is not there either
            pass
        raise _cannot_write(path, e) from None
