"""The torch-native validation set (simsp/validate/torch_native.py): its verbatim source copy,
every row a Case or a Skipped with a reason, the stack settings each case names with where the
unstated ones came from, and the iteration times the rows derive. Reads only the repository's
copy (data/sources/torch-native-runs), never the shared data folder."""

import hashlib
import re

import pytest

from simsp.validate import torch_native as T
from simsp.validate.accuracy import MEASURED_SETS
from simsp.validate.case import Case, Skipped
from simsp.validate.cases import APART_SETS, REFERENCES, SETS, build_cases
from simsp.validate.data import DATA_DIR

SOURCES = DATA_DIR / "sources"
COPIED = ("torch-native-runs/README.md", "torch-native-runs/runs.yaml")
ROWS = T.read_torch_native_runs()
BY_ID = {r["id"]: r for r in ROWS}


def test_the_copy_matches_the_sha256_the_sources_readme_lists():
    listed = dict(
        reversed(line.split())
        for line in (SOURCES / "README.md").read_text().splitlines()
        if re.fullmatch(r"[0-9a-f]{64}  \S+", line)
    )
    for name in COPIED:
        assert hashlib.sha256((SOURCES / name).read_bytes()).hexdigest() == listed[name], name


def test_the_set_is_registered_apart_from_the_accuracy_line():
    assert T.SET in SETS and T.SET in APART_SETS and T.SET in REFERENCES
    assert T.SET not in MEASURED_SETS


def test_every_row_becomes_a_case_or_a_skipped_with_a_reason():
    assert len(ROWS) == 22 and len(BY_ID) == 22
    cases, skipped = T.torch_native_cases()
    assert sorted(c.name for c in [*cases, *skipped]) == sorted(BY_ID)
    assert all(isinstance(c, Case) and c.set == T.SET for c in cases)
    assert all(isinstance(s, Skipped) and s.set == T.SET and s.reason for s in skipped)
    for s in skipped:  # the one reason a row may be skipped today: its hardware file
        assert s.reason.startswith("no hardware file hardware/"), (s.name, s.reason)
    built = build_cases((T.SET,))
    assert [c.name for c in built[0]] == [c.name for c in cases]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r["id"])
def test_stack_settings_of_each_row(row):
    training, parallel, notes = T.stack_settings(row)
    text = "; ".join(notes)
    automodel = row["id"].startswith("automodel")
    assert training["stack"] == "torchtitan" and training["fsdp_impl"] == "fsdp2"
    assert training["cross_entropy"] == "torch_fp32"
    assert training["attention_kernel"] == ("" if automodel else "fa2")
    compile_ = row["parallel.torch_compile"]
    if compile_:
        assert training["elementwise"] == {"true": "compiled", "false": "eager"}[compile_]
        assert f"torch_compile {compile_}, as stated" in text
    else:  # unstated: the train config of the code that ran, cited path@commit
        assert re.search(r"elementwise \w+ \((unstated: )?\S+ .*@[0-9a-f]{8}", text), text
    if row["precision"] == "fp8":
        assert training["fp8_recipe"] == "tensorwise"
        assert re.search(r"fp8 tensorwise \(.*@[0-9a-f]{8}", text)
    else:
        assert "fp8_recipe" not in training
    stated = row["parallel.recompute"]
    want = {
        "selective": "op",
        "selective(op)": "op",
        "selective(per-op)": "op",
        "selective(layer)": "full",
        "full": "full",
        "none": "none",
        "": "full",  # AutoModel's activation_checkpointing
    }[stated]
    assert parallel["recompute"] == want
    if stated == "selective(layer)":
        assert parallel["recompute_num_layers"] * 2 == int(row["model.layers"])
    if not stated:
        assert "recompute full (unstated:" in text and "parallelizer.py@2013a4dd" in text
    if stated == "selective":
        assert "selective_ac_option 'op'" in text
    tp = int(row["parallel.tp"])
    assert parallel["sequence_parallel"] == (tp > 1) and parallel["fsdp"] is True
    assert parallel.get("tp_comm_overlap", False) == (row["parallel.async_tp"] == "true")
    for name in ("stack torchtitan", "elementwise", "attention kernel", "cross-entropy"):
        assert name in text, (name, text)
    assert "recompute" in text and "fsdp2" in text
    if not automodel:  # which torchtitan commit ran it
        assert re.search(r"stack torchtitan \(pytorch/torchtitan@[0-9a-f]{8}, 20\d\d-", text)


def test_each_case_names_its_stack_settings_and_their_sources():
    cases, _ = T.torch_native_cases()
    for c in cases:
        for name in ("stack torchtitan", "elementwise", "attention kernel", "cross-entropy"):
            assert name in c.notes, (c.name, name)
        assert "recompute" in c.notes and "iteration_s" in c.notes
        assert c.baseline_s > 0 and c.measured_s > 0


def test_without_the_stack_the_case_is_priced_as_megatron():
    row = BY_ID["tt-a100-llama3-8b-sel-op"]
    c = T.torch_native_case(row, stack=False)
    assert isinstance(c, Case), c
    assert "priced as Megatron-Core" in c.notes
    assert c.workload.training.attention_kernel == ""
    for key in ("stack", "elementwise", "cross_entropy"):
        if hasattr(c.workload.training, key):
            assert getattr(c.workload.training, key) in ("", "megatron")


def _tokens_time(row) -> float:
    dp = int(row["parallel.dp"])
    local = row["parallel.local_batch"] or row["parallel.micro_batch"]
    batch = int(row["parallel.global_batch"] or int(local) * dp)
    return (
        batch
        * int(row["model.seq"])
        / (float(row["measured.tokens_per_s_per_gpu"]) * int(row["gpus"]))
    )


def test_derived_iteration_times_are_b_s_over_tokens_per_second():
    derived = [
        r
        for r in ROWS
        if "measured.iteration_s (derived" in r["inferred_fields"] or not r["measured.iteration_s"]
    ]
    assert len(derived) == 21  # all but AutoModel's, whose table prints its step time
    for row in derived:
        _, _, seconds, how = T.batch_and_time(row)
        assert seconds == pytest.approx(_tokens_time(row), rel=1e-9, abs=0), row["id"]
        assert "B s / (tokens/s/GPU x GPUs)" in how
    unstated = [r for r in ROWS if not r["parallel.global_batch"]]
    assert {r["id"] for r in unstated} == {
        "tt2506-h100-llama3-70b-tp8-bf16-asynctp",
        "tt2506-h100-llama3-8b-tp8-bf16-asynctp",
    }
    for row in unstated:
        batch, _, _, how = T.batch_and_time(row)
        assert batch == int(row["parallel.micro_batch"]) * int(row["parallel.dp"])
        assert "local batch" in how and "(unstated)" in how
    automodel = BY_ID["automodel-h100-llama3-70b-fsdp-cp2"]
    _, _, seconds, how = T.batch_and_time(automodel)
    assert seconds == float(automodel["measured.iteration_s"]) and how == "iteration_s as published"


def test_pipeline_rows_take_torchtitans_defaults_of_their_commit():
    for rid, vp in (
        ("tt2412-h100-llama31-405b-3d-1f1b", 1),
        ("tt2412-h100-llama31-405b-3d-interleaved", 2),
    ):
        row = BY_ID[rid]
        training, parallel, notes = T.stack_settings(row)
        pp = int(row["parallel.pp"])
        assert parallel["virtual_stages"] == vp
        assert parallel["schedule"] == ("interleaved" if vp > 1 else "1f1b")
        assert training["micro_batch"] * pp == int(row["parallel.local_batch"])  # n_micro = pp
        from simsp.spec.pipeline_layout import parse

        stages = parse(parallel["pipeline_layout"])
        assert len(stages) == pp * vp and sum(s.layers for s in stages) == 126
        assert stages[0].embedding and stages[-1].loss
        assert "pipelining_utils.py@9dec370a" in "; ".join(notes)


def test_cases_past_30_percent_say_why():
    """A case simsp misses by more than 30% carries its suspected reason (KNOWN_GAPS)."""
    from simsp.api import run
    from simsp.io.config import load_hardware

    cases, _ = T.torch_native_cases()
    for c in cases:
        error = run(c.workload, load_hardware(c.hardware)).iteration_time_s / c.measured_s - 1
        if abs(error) > 0.30:
            assert c.known_gap, (c.name, error)


def test_each_named_attention_kernel_is_in_its_hardware_table():
    from simsp.io.config import load_hardware
    from simsp.validate.attention_kernel import _table_kernels

    cases, _ = T.torch_native_cases()
    for c in cases:
        kernel = c.workload.training.attention_kernel
        if kernel:
            table = load_hardware(c.hardware).calibration.flash_attention
            assert kernel in _table_kernels(table), (c.name, kernel, table)
