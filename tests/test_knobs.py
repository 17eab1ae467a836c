"""One definition per knob: every field of the spec dataclasses is a CLI flag, a sweep grid key,
a sweep CSV column and a validate --by setting, with nothing typed again elsewhere."""

import dataclasses

import pytest

from simsp import sweep
from simsp.cli.main import parser
from simsp.spec import knobs
from simsp.spec.model import ModelSpec
from simsp.spec.parallel import ParallelSpec
from simsp.spec.workload import TrainingSpec
from simsp.validate.metrics import BY_FIELDS

FIELDS = [
    (section, f.name)
    for section, cls in (
        ("model", ModelSpec),
        ("training", TrainingSpec),
        ("parallel", ParallelSpec),
    )
    for f in dataclasses.fields(cls)
]


def _flags(command: str) -> set[str]:
    sub = next(a for a in parser()._actions if a.dest == "command").choices[command]
    return {s for a in sub._actions for s in a.option_strings}


@pytest.mark.parametrize("section,name", FIELDS)
def test_every_field_is_a_flag_a_grid_key_and_a_column(section, name):
    short = knobs.SHORT_NAMES.get(name, name)
    flag = "--" + short.replace("_", "-")
    for command in ("run", "memory", "layer", "compare"):
        assert flag in _flags(command), (command, flag)
    assert name == "dp" or sweep.GRID_KEYS[name][:2] == (section, name)
    assert short in sweep.KEY_COLUMNS
    assert name in BY_FIELDS
    assert knobs.BY_NAME[name].doc, f"{section}.{name} has no docstring"


def test_a_model_flag_reaches_the_workload(tmp_path):
    from simsp.cli.arguments import load

    args = parser().parse_args(
        [
            "run",
            "workloads/gpt3-175b.yaml",
            "--kv-heads",
            "8",
            "--mlp",
            "swiglu",
            "--bias",
            "qkv",
            "--no-tied-embeddings",
            "--attention",
            "flash",
        ]
    )
    w, _ = load(args)
    assert (
        w.model.groups,
        w.model.mlp,
        w.model.bias,
        w.model.tied_embeddings,
        w.model.attention,
    ) == (8, "swiglu", "qkv", False, "flash")


def test_a_grid_over_model_choices_enumerates_them():
    from simsp.io.config import load_hardware, load_workload

    base = load_workload("workloads/llama-3.1-8b.yaml")
    spec = sweep.SweepSpec(
        "t",
        base,
        (load_hardware("hardware/dgx-h100.yaml"),),
        base.parallel.gpus,
        (("attention", ("flash", "unfused")), ("kv_heads", (8, 32)), ("cp", (1, 2))),
    )
    configs, counts = sweep.enumerate_configs(spec)
    seen = {(c.workload.model.attention, c.workload.model.groups) for c in configs}
    assert seen == {("flash", 8), ("flash", 32), ("unfused", 8), ("unfused", 32)}
    # context parallelism runs only inside fused attention (a workload rule): skipped, not run
    assert {c.workload.parallel.cp for c in configs if c.workload.model.attention == "unfused"} == {
        1
    }


def test_knob_docs_are_the_spec_classes_docstrings():
    """spec/knob_docs.py is what write_knob_docs reads from the source today (not stale)."""
    from pathlib import Path

    written = (Path(knobs.__file__).parent / "knob_docs.py").read_text()
    assert written == knobs.write_knob_docs(), "run write_knob_docs (see spec/knob_docs.py)"


def test_the_cli_knows_the_validation_sets_and_fields_without_loading_them():
    from simsp.cli import validate as cli
    from simsp.validate.cases import SETS
    from simsp.validate.metrics import BY_FIELDS, CASE_FIELDS

    assert cli.SETS == SETS
    assert cli.CASE_FIELDS == CASE_FIELDS and cli.BY_FIELDS == BY_FIELDS
