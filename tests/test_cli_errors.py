"""Bad input: exit code 2, one line naming file, key, value and rule; no traceback, nothing
written."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simsp.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
GOOD = yaml.safe_load((ROOT / "workloads" / "gpt3-175b.yaml").read_text())


def variant(**changes):
    """The 175B workload with dotted keys replaced (None deletes the key)."""
    data = yaml.safe_load(yaml.safe_dump(GOOD))
    for dotted, value in changes.items():
        *path, last = dotted.split("__")
        node = data
        for key in path:
            node = node[key]
        if value is None:
            node.pop(last)
        else:
            node[last] = value
    return yaml.safe_dump(data)


# (name, workload text, extra CLI args, words the one-line message must contain)
CASES = [
    ("missing model", variant(model=None), [], ["model", "required"]),
    ("missing layers", variant(model__layers=None), [], ["model.layers", "required"]),
    ("missing hidden", variant(model__hidden=None), [], ["model.hidden", "required"]),
    ("missing training", variant(training=None), [], ["training", "required"]),
    (
        "missing micro batch",
        variant(training__micro_batch=None),
        [],
        ["training.micro_batch", "required"],
    ),
    ("unknown top key", variant(optimiser={"lr": 1}), [], ["optimiser", "unknown key"]),
    ("unknown model key", variant(model__hiden=12288), [], ["model.hiden", "unknown key"]),
    ("unknown parallel key", variant(parallel__tensor=8), [], ["parallel.tensor", "unknown key"]),
    ("string layers", variant(model__layers="many"), [], ["model.layers", "integer"]),
    ("float heads", variant(model__heads=96.5), [], ["model.heads", "integer"]),
    ("bool tp", variant(parallel__tp=True), [], ["parallel.tp", "integer"]),
    (
        "string sp",
        variant(parallel__sequence_parallel="yes"),
        [],
        ["parallel.sequence_parallel", "true or false"],
    ),
    ("zero layers", variant(model__layers=0), [], ["model.layers", "positive"]),
    ("negative hidden", variant(model__hidden=-12288), [], ["model.hidden", "positive"]),
    ("zero seq", variant(model__seq_len=0), [], ["model.seq_len", "positive"]),
    (
        "zero micro batch",
        variant(training__micro_batch=0),
        [],
        ["training.micro_batch", "positive"],
    ),
    (
        "negative global batch",
        variant(training__global_batch=-1),
        [],
        ["training.global_batch", "positive"],
    ),
    ("zero pp", variant(parallel__pp=0), [], ["parallel.pp", "positive"]),
    ("tp not dividing heads", variant(parallel__tp=7), [], ["parallel.tp", "7", "heads"]),
    ("tp flag not dividing heads", variant(), ["--tp", "5"], ["parallel.tp", "5", "heads"]),
    (
        "heads not dividing hidden",
        variant(model__heads=97, parallel__tp=1),
        [],
        ["model.heads", "hidden"],
    ),
    ("layers vs pp x v", variant(parallel__pp=5), [], ["model.layers", "pp x virtual_stages"]),
    (
        "layers vs v",
        variant(parallel__virtual_stages=5),
        [],
        ["model.layers", "pp x virtual_stages"],
    ),
    ("layers flag", variant(), ["--pp", "7"], ["model.layers", "96"]),
    (
        "batch vs micro x dp",
        variant(training__global_batch=63, training__micro_batch=2),
        [],
        ["training.global_batch", "micro_batch x dp"],
    ),
    ("batch vs dp flag", variant(), ["--dp", "3"], ["training.global_batch", "micro_batch x dp"]),
    (
        "batch vs micro flag",
        variant(),
        ["--micro-batch", "5"],
        ["training.global_batch", "micro_batch x dp"],
    ),
    (
        "unknown recompute",
        variant(parallel__recompute="partial"),
        [],
        ["parallel.recompute", "partial"],
    ),
    ("unknown schedule", variant(parallel__schedule="zigzag"), [], ["parallel.schedule", "zigzag"]),
    (
        "chunks without interleaving",
        variant(parallel__schedule="1f1b"),
        [],
        ["parallel.virtual_stages", "interleaved"],
    ),
    (
        "interleaved microbatches vs pp",
        variant(training__global_batch=60),
        [],
        ["training.global_batch", "multiple of pp"],
    ),
    ("not yaml", "model: [unclosed\n  - x: {", [], ["not valid YAML"]),
    ("yaml list", "- 1\n- 2\n", [], ["mapping"]),
    ("empty file", "", [], ["mapping"]),
    (
        "sp with seq not divisible",
        variant(model__seq_len=2044, parallel__tp=8),
        [],
        ["sequence_parallel", "seq_len"],
    ),
    (
        "tp not dividing kv heads",
        variant(model__kv_heads=4),
        [],
        ["parallel.tp", "key/value heads"],
    ),
    (
        "kv heads not dividing heads",
        variant(model__kv_heads=5),
        [],
        ["model.kv_heads", "divide model.heads"],
    ),
    ("unknown mlp", variant(model__mlp="relu"), [], ["model.mlp", "relu", "swiglu"]),
    ("unknown norm", variant(model__norm="batchnorm"), [], ["model.norm", "rmsnorm"]),
    ("unknown position", variant(model__position="sinusoid"), [], ["model.position", "rope"]),
    ("unknown attention", variant(model__attention="linear"), [], ["model.attention", "flash"]),
    ("unknown bias", variant(model__bias="mlp"), [], ["model.bias", "qkv"]),
    ("dropout of one", variant(model__dropout=1.0), [], ["model.dropout", "[0, 1)"]),
    ("negative dropout", variant(model__dropout=-0.1), [], ["model.dropout", "negative"]),
    (
        "hf config missing",
        variant(model__hf_config="nowhere/config.json"),
        [],
        ["model.hf_config", "no such file"],
    ),
    (
        "model flag missing",
        variant(),
        ["--model", "nowhere.json"],
        ["model.hf_config", "nowhere.json", "no such file"],
    ),
]


@pytest.mark.parametrize("command", ["memory", "run"])
@pytest.mark.parametrize("name,text,extra,words", CASES, ids=[c[0] for c in CASES])
def test_bad_workload_exits_2_with_one_line(tmp_path, capsys, command, name, text, extra, words):
    workload = tmp_path / "bad.yaml"
    workload.write_text(text)
    out = tmp_path / "out.html"
    code = main(
        [command, str(workload), *extra, "--json"]
        + (["--timeline", str(out)] if command == "run" else [])
    )
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    for word in words:
        assert word in lines[0], (word, lines[0])
    # the source: the flag where a flag gave the value, else the file (with the flags given)
    source = lines[0].removeprefix("simsp: error: ").split(": ")[0]
    assert source == extra[0] if extra and source.startswith("--") else "bad.yaml" in source
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.yaml"]


def test_a_real_process_prints_no_traceback(tmp_path):
    workload = tmp_path / "bad.yaml"
    workload.write_text(variant(parallel__tp=7))
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "memory", str(workload), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and proc.stdout == "" and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_missing_workload_file(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "memory", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and "nope.yaml" in proc.stderr and "cannot be read" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "text,words",
    [
        ("name: x\n", ["gpu", "required"]),
        (
            "gpu: {name: a, peak_tflops: 312, hbm_gib: 80, hbm_gbps: 2039}\n",
            ["gpu.gemm_max_tflops", "required"],
        ),
        ("gpu: 3\n", ["gpu", "mapping"]),
    ],
)
def test_bad_hardware_file(tmp_path, text, words):
    hw = tmp_path / "hw.yaml"
    hw.write_text(text)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "simsp.cli.main",
            "memory",
            str(ROOT / "workloads" / "gpt-22b.yaml"),
            "--hardware",
            str(hw),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    line = proc.stderr.strip()
    assert "hw.yaml" in line and all(w in line for w in words), line


def test_unknown_flag_is_one_line_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "simsp", "memory", "workloads/gpt-22b.yaml", "--tpp", "2"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_a_run_needing_a_table_the_hardware_lacks(tmp_path, capsys):
    """Pipeline stages on different nodes need an InfiniBand log: one line naming file and key."""
    lines = (ROOT / "hardware" / "dgx-a100-80gb.yaml").read_text().splitlines()
    i = next(n for n, line in enumerate(lines) if line.startswith("  infiniband:"))
    text = "\n".join(lines[:i] + lines[i + 2 :]).replace(
        "calibration/", str(ROOT / "hardware" / "calibration") + "/"
    )
    hw = tmp_path / "no-ib.yaml"
    hw.write_text(text)
    assert main(["memory", str(ROOT / "workloads" / "gpt3-175b.yaml"), "--hardware", str(hw)]) == 0
    capsys.readouterr()
    assert main(["run", str(ROOT / "workloads" / "gpt3-175b.yaml"), "--hardware", str(hw)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "no-ib.yaml" in err and "calibration.infiniband" in err


@pytest.mark.parametrize("name", ["=HYPERLINK(1)", "+1+cmd", "@SUM(A1)", "-2", "a\nb", "tab\there"])
def test_a_name_that_a_spreadsheet_would_run_or_that_splits_a_line_is_refused(
    tmp_path, capsys, name
):
    """Issue 32, formula injection: names go into sweep and plan CSV cells and table rows (a
    hardware file's name is read by the same check, io/config.check_name)."""
    workload = tmp_path / "w.yaml"
    workload.write_text(variant(name=name))
    spec = tmp_path / "s.yaml"
    spec.write_text(
        yaml.safe_dump({"name": name, "workload": str(ROOT / "workloads/gpt3-175b.yaml")})
    )
    for argv in (["memory", str(workload)], ["sweep", str(spec), "--no-progress"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "name=" in err, err


def test_an_unknown_key_is_named_but_its_value_never_echoed(tmp_path, capsys):
    """Issue 32: a file someone else named (a runs.csv's workload cell, a spec's hardware) may
    hold anything; the error names the key and the nearest known ones, never the value."""
    path = tmp_path / "w.yaml"
    path.write_text("api_token: S3CR3T-TOKEN\n" + variant())
    assert main(["memory", str(path)]) == 2
    err = capsys.readouterr().err
    assert "api_token" in err and "S3CR3T" not in err
    path.write_text(variant().replace("parallel:", "parallel:\n  pipline: 2", 1))
    assert main(["memory", str(path)]) == 2
    err = capsys.readouterr().err
    assert "parallel.pipline" in err and "did you mean" in err and "2:" not in err


def test_an_interrupt_is_one_line_and_exit_130(monkeypatch, capsys):
    """Issue 32 class 7: Ctrl-C during a sweep printed a KeyboardInterrupt traceback."""
    import simsp.cli.main as cli

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "run", (interrupted, "simulate one training iteration"))
    assert cli.main(["run", str(ROOT / "workloads" / "gpt3-175b.yaml")]) == 130
    assert capsys.readouterr().err == "simsp: interrupted\n"


def test_validate_workers_must_be_a_real_count(capsys):
    assert main(["validate", "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err
