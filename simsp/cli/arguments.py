"""Command-line pieces every subcommand shares: the parser, the workload flags, loading, output.

The override flags are generated from `knobs.KNOBS` (the fields of `ModelSpec`, `TrainingSpec`
and `ParallelSpec`): one flag per field, named like the field (underscores as dashes), its help
text the field's docstring. A new field is a new flag without an edit here. `main.py`,
`profile_parsers.py`, `profile.py`, `sweep.py` and `compare.py` all import from this module,
none from another.
"""

import argparse
import json
import sys

from simsp.errors import InputError, printable
from simsp.io.config import load_hardware, load_workload, workload_hardware
from simsp.sim.budget import DEFAULT_MAX_ACTIONS
from simsp.sim.schedule import REGISTRY
from simsp.spec.knobs import KNOBS, SECTIONS, Knob, parse_bias

MAX_MESSAGE = 400
"""Longest usage error printed (argparse's message with what was typed)."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line and exit code 2."""

    def error(self, message):
        """One line, its control characters escaped and cut to MAX_MESSAGE characters: argparse
        repeats what was typed (an unknown flag, an invalid choice), which may be anything."""
        text = printable(message, MAX_MESSAGE)
        print(f"simsp: error: {text} (see `{self.prog} --help`)", file=sys.stderr)
        raise SystemExit(2)


def _add_knob(p: argparse.ArgumentParser, k: Knob) -> None:
    flag = k.flag
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


def add_set_arg(p: argparse.ArgumentParser) -> None:
    """`--set SECTION.KEY=VALUE`, repeatable: a numeric hardware key over the file's value."""
    p.add_argument(
        "--set",
        dest="hardware_set",
        action="append",
        default=[],
        metavar="SECTION.KEY=VALUE",
        help="set a numeric hardware key over the file's value, e.g. network.nic_gbps=800 "
        "(repeatable; link rates scale the measured collective tables)",
    )
    p.add_argument(
        "--hbm-headroom",
        dest="hardware_set",
        action="append",
        type=lambda gib: f"gpu.hbm_reserve_gib={gib}",
        metavar="GIB",
        help="HBM a layout must leave free beside its peak for the CUDA context and NCCL "
        "(default the hardware file's gpu.hbm_reserve_gib, 4 GiB on an H100; the allocator's "
        "share, gpu.allocator_reserve, comes on top)",
    )


def add_max_actions(p: argparse.ArgumentParser, what: str) -> None:
    """`--max-actions N`: the most stage x chunk x microbatch actions a run or a configuration
    may take (sim/budget.py), and `what` happens past it."""
    p.add_argument(
        "--max-actions",
        type=int,
        default=DEFAULT_MAX_ACTIONS,
        metavar="N",
        help=f"most stage x chunk x microbatch actions (default {DEFAULT_MAX_ACTIONS:,}); {what}",
    )


def add_workload_args(p: argparse.ArgumentParser) -> None:
    """The workload file, the hardware file, --model, and one override flag per knob."""
    p.add_argument(
        "workload",
        nargs="?",
        help="workload YAML (see workloads/); may be left out with --model, --seq-len and "
        "--global-batch",
    )
    p.add_argument(
        "--hardware",
        help="hardware YAML or library name (default: the one the workload names, else "
        "hardware/dgx-a100-80gb.yaml)",
    )
    add_set_arg(p)
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


def source(args) -> str:
    """The file a run's workload came from: the workload YAML, or the --model config.json."""
    return str(args.workload or args.hf_model)


def hardware_of(args) -> str | None:
    """The hardware a command runs on: --hardware, else the one the workload file names, else
    None (the default machine)."""
    return args.hardware or workload_hardware(args.workload)


def flag_error(e: InputError, args) -> InputError:
    """An error about a value a flag gave, said of the flag (`--tp`), not of the workload file
    the flag overrode; one about the file under flags says which; any other as it is."""
    section, _, name = str(e.key).partition(".")
    given = [k for k in KNOBS if getattr(args, k.name, None) is not None]
    for k in given:
        if (k.section, k.name) == (section, name):
            return InputError(k.flag, e.key, e.value, e.rule)
    if given and e.file == str(args.workload):  # a rule across keys: say which flags joined in
        flags = " ".join(f"{k.flag} {getattr(args, k.name)}" for k in given)
        return InputError(f"{e.file} with {flags}", e.key, e.value, e.rule)
    return e


def load(args):
    """(workload, hardware) from parsed arguments."""
    try:
        w = load_workload(args.workload, overrides(args))
    except InputError as e:
        raise flag_error(e, args) from None
    return w, load_hardware(hardware_of(args), args.hardware_set)


def print_json(obj) -> None:
    """One JSON object on stdout."""
    print(json.dumps(obj, indent=2, sort_keys=False))
