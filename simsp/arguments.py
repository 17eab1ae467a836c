"""Command-line pieces every subcommand shares: the parser, the workload flags, loading, output.

The override flags are generated from the spec dataclasses (`ModelSpec`, `TrainingSpec`,
`ParallelSpec`): one flag per field, named like the field (underscores as dashes), its help text
the field's docstring. A new field is a new flag without an edit here. `cli.py`,
`profiler/commands.py` and `sweep/commands.py` all import from this module, none from another.
"""

import argparse
import ast
import dataclasses
import functools
import inspect
import json
import sys
import typing

from simsp.config import load_hardware, load_workload
from simsp.errors import InputError
from simsp.model import ATTENTION_KINDS, MLP_KINDS, NORM_KINDS, POSITION_KINDS, ModelSpec
from simsp.parallel import RECOMPUTE_MODES, SCHEDULES, ParallelSpec
from simsp.workload import TrainingSpec

SECTIONS = (("model", ModelSpec), ("training", TrainingSpec), ("parallel", ParallelSpec))
"""The workload sections whose fields are override flags, in --help order."""
CHOICES = {"recompute": RECOMPUTE_MODES, "schedule": SCHEDULES, "mlp": MLP_KINDS, "norm": NORM_KINDS,
           "position": POSITION_KINDS, "attention": ATTENTION_KINDS, "bias": ("true", "false", "qkv")}
"""Fields whose value is one of a few names."""
FLAG_ALIASES = {"sequence_parallel": ("--sp", "--no-sp")}
"""Flags the contract spells differently from their field (DESIGN.md: `--sp | --no-sp`)."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message):
        print(f"simsp: error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


@functools.cache
def field_docs(cls) -> dict[str, str]:
    """The docstring under each field of a dataclass (read from its source), first sentence."""
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            text = " ".join(str(nxt.value.value).split())
            docs[node.target.id] = text.split(". ")[0].rstrip(".")
    return docs


def _bias(text: str):
    """--bias true|false|qkv as the ModelSpec value."""
    return {"true": True, "false": False}.get(text, text)


def _add_field(p: argparse.ArgumentParser, section: str, f: dataclasses.Field, kind, doc: str) -> None:
    dest = f.name  # field names are unique across the sections (a test checks)
    flag = "--" + f.name.replace("_", "-")
    if kind is bool:
        on, off = FLAG_ALIASES.get(f.name, (flag, "--no-" + flag[2:]))
        p.add_argument(on, dest=dest, action="store_true", default=None, help=doc)
        p.add_argument(off, dest=dest, action="store_false", help=argparse.SUPPRESS)
        return
    choices = CHOICES.get(f.name)
    p.add_argument(flag, dest=dest, type=kind if kind in (int, float) else str, choices=choices,
                   metavar="|".join(choices) if choices else None, help=doc)


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """The workload file, the hardware file, --model, and one override flag per spec field."""
    p.add_argument("workload", help="workload YAML (see workloads/)")
    p.add_argument("--hardware", help="hardware YAML (default hardware/dgx-a100-80gb.yaml)")
    p.add_argument("--model", dest="hf_model", metavar="CONFIG.json",
                   help="replace the workload's model by this Hugging Face config.json (seq_len kept)")
    for section, cls in SECTIONS:
        group = p.add_argument_group(f"{section} overrides")
        hints, docs = typing.get_type_hints(cls), field_docs(cls)
        for f in dataclasses.fields(cls):
            kind = hints[f.name]
            _add_field(group, section, f, bool if kind is bool else kind if kind in (int, float) else str,
                       docs.get(f.name, ""))
    p.add_argument("--json", action="store_true", help="print one JSON object")


def overrides(args) -> dict:
    """The flags given, as {'model': {...}, 'training': {...}, 'parallel': {...}}.

    `--schedule X` (not interleaved) without `--virtual-stages` resets the chunks to 1.
    """
    out = {section: {f.name: getattr(args, f.name, None) for f in dataclasses.fields(cls)}
           for section, cls in SECTIONS}
    if out["model"]["bias"] is not None:
        out["model"]["bias"] = _bias(out["model"]["bias"])
    par = out["parallel"]
    if par["schedule"] and par["schedule"] != "interleaved" and par["virtual_stages"] is None:
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


def write_text(path, text: str) -> None:
    """Write an output file, or raise InputError naming it."""
    try:
        with open(path, "w") as f:
            f.write(text)
    except OSError as e:
        raise InputError(path, "output", str(path), f"cannot be written ({e.strerror or e})") from None
