"""What users tripped over (part of issue 18): safe writes, escaped page titles, --version,
hardware by library name, labels that say what they include."""

import json
import os

import pytest
import yaml

from simsp.cli.main import main
from simsp.errors import InputError
from simsp.textfile import write_text, written_by_simsp

NVLINK_LOG = "hardware/calibration/dgx-a100-80gb/nvlink/AR_GPU2_1M_1024M_LUT"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "t.html"
    target.write_text("old")

    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(InputError, match="cannot be written"):
        write_text(target, "new")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.html"]


@pytest.mark.parametrize("kind", ["gemm", "attention", "nccl"])
def test_the_profilers_tables_are_written_whole_or_not_at_all(tmp_path, monkeypatch, kind):
    """`simsp profile` and `calibrate` write tables through these; a failure keeps the old one."""
    from simsp.tables import attention, gemm, nccl, nccl_writer

    shipped = "hardware/calibration/dgx-a100-80gb"
    write = {
        "gemm": lambda p: gemm.write_gemm_table(gemm.read_gemm_table(f"{shipped}/gemm.csv"), p, []),
        "attention": lambda p: attention.write_attention_table(
            p, attention.read_attention_table(f"{shipped}/flash_attention.csv").points
        ),
        "nccl": lambda p: nccl_writer.write_nccl_log(nccl.read_nccl_log(NVLINK_LOG), p),
    }[kind]
    target = tmp_path / "table"
    write(target)
    assert target.read_text() != "old"  # a table, written
    target.write_text("old")
    monkeypatch.setattr(os, "replace", lambda src, dst: (_ for _ in ()).throw(OSError(28, "full")))
    with pytest.raises(InputError, match="cannot be written"):
        write(target)
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["table"]


def test_a_write_replaces_the_file_whole(tmp_path):
    target = tmp_path / "t.json"
    target.write_text("old")
    write_text(target, "new")
    assert target.read_text() == "new" and len(list(tmp_path.iterdir())) == 1


def test_a_workload_name_cannot_inject_script_into_the_page_title(tmp_path):
    data = yaml.safe_load(open("workloads/gpt-22b.yaml"))
    data["name"] = "</title><script>alert(1)</script>"
    data["training"]["global_batch"] = 8
    w = tmp_path / "evil.yaml"
    w.write_text(yaml.safe_dump(data))
    page = tmp_path / "t.html"
    assert main(["run", str(w), "--timeline", str(page)]) == 0
    text = page.read_text()
    head = text[: text.index("</head>")]
    assert "<title>simsp timeline: &lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in head
    assert "<script>alert(1)</script>" not in head


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        from simsp.cli.main import parser

        parser().parse_args(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("simsp ")


def test_hardware_by_library_name(capsys):
    assert main(["run", "workloads/gpt3-175b.yaml", "--hardware", "dgx-h100", "--json"]) == 0
    assert '"hardware": "dgx-h100"' in capsys.readouterr().out


def test_recompute_is_named_only_when_there_is_some(capsys):
    assert main(["run", "workloads/gpt-22b.yaml", "--recompute", "none"]) == 0
    assert "recompute included" not in capsys.readouterr().out
    assert main(["run", "workloads/gpt-22b.yaml"]) == 0
    assert "(selective recompute included)" in capsys.readouterr().out


# ---------------------------------------------------------------------------- issue 18, continued
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HW = os.path.join(ROOT, "hardware", "dgx-a100-80gb.yaml")
W175 = os.path.join(ROOT, "workloads", "gpt3-175b.yaml")


def _spec(tmp_path, grid=None, **extra):
    data = {
        "workload": W175,
        "hardware": [HW],
        "gpus": 64,
        "grid": grid or {"tp": [8], "pp": [4, 8], "recompute": ["selective", "full"]},
        **extra,
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    "foreign",
    [
        b"a,b,c\n1,2,3\n",
        b"a,b,c\n1,2",  # no final newline: a resume would cut it, were it simsp's
        b"\xff\xfe\x00\x01",
        b"workload,hardware\nmine\n",
        b"the user's notes, not a sweep\n" * 1000,
    ],
)
def test_sweep_out_never_changes_a_file_that_is_not_its_own(tmp_path, capsys, foreign):
    out = tmp_path / "notes.csv"
    out.write_bytes(foreign)
    assert main(["sweep", str(_spec(tmp_path)), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not this sweep's output" in err
    assert out.read_bytes() == foreign
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.csv", "spec.yaml"]


def test_output_paths_are_checked_before_the_sweep_runs(tmp_path, capsys, monkeypatch):
    from simsp.sweep import runner

    def no_work(*a, **k):
        raise AssertionError("the sweep ran before its output path was checked")

    monkeypatch.setattr(runner, "executor_rows", no_work)
    spec = str(_spec(tmp_path))
    for flags in (
        ["--pareto", str(tmp_path / "nodir" / "p.html")],
        ["--out", str(tmp_path / "nodir" / "rows.csv")],
        ["--pareto", str(tmp_path / "p.png")],
    ):
        assert main(["sweep", spec, "--no-progress", *flags]) == 2
        assert capsys.readouterr().err.count("\n") == 1
    assert main(["run", W175, "--timeline", str(tmp_path / "nodir" / "t.html")]) == 2
    assert "has no folder" in capsys.readouterr().err


def test_sweep_rows_come_out_in_the_same_order_every_run(tmp_path):
    grid = {"tp": [4, 8], "pp": [2, 4, 8], "recompute": ["selective", "full"]}
    texts = []
    for i in range(2):
        out = tmp_path / f"rows{i}.csv"
        assert (
            main(
                [
                    "sweep",
                    str(_spec(tmp_path, grid)),
                    "--out",
                    str(out),
                    "--jobs",
                    "2",
                    "--no-progress",
                ]
            )
            == 0
        )
        texts.append(out.read_text().splitlines())
    assert texts[0] == texts[1] and len(texts[0]) == 13


def test_jobs_are_capped_by_the_tasks_and_the_cpus():
    from simsp.sweep.execute import local_jobs

    cpus = len(os.sched_getaffinity(0))
    assert local_jobs(10**30, 3) == min(3, cpus)
    assert local_jobs(None, 10**6) == cpus
    assert local_jobs(1, 5) == 1


def _children(pid: int) -> list[int]:
    """Processes whose parent is pid (read from /proc)."""
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                kids.append(int(entry))
    return kids


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads /proc")
def test_a_killed_sweep_leaves_no_worker(tmp_path):
    import signal
    import subprocess
    import sys
    import time

    grid = {
        "tp": [1, 2, 4, 8],
        "pp": [1, 2, 4, 8],
        "recompute": ["none", "selective", "full"],
        "micro_batch": [1, 2],
    }
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "simsp.cli.main",
            "sweep",
            str(_spec(tmp_path, grid)),
            "--jobs",
            "2",
            "--no-progress",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline, workers = time.monotonic() + 60, []
    while time.monotonic() < deadline and proc.poll() is None and len(workers) < 2:
        workers = _children(proc.pid)
        time.sleep(0.05)
    assert proc.poll() is None and len(workers) >= 2, "no pool started"
    time.sleep(0.5)  # the workers are busy
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.05)
    assert not [w for w in workers if _alive(w)], "workers outlived the killed sweep"


def test_a_global_batch_of_ten_million_is_answered_by_the_closed_form(capsys):
    """The 175B's interleaved schedule: the closed form walks a steady 3p microbatches for its
    end stages' memory (memory.steady_microbatches), so it answers, and says it did."""
    assert main(["run", W175, "--global-batch", "10000000"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("closed form (simsp.sim.closed_form), not simulated")
    assert "240,000,000 actions" in out and "--max-actions" in out


def test_past_the_limit_a_schedule_that_walks_is_refused_in_one_line(capsys):
    assert main(["run", W175, "--global-batch", "10000000", "--schedule", "zb-h1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "240,000,000 actions" in err and "--max-actions" in err


def test_past_the_limit_a_closed_form_answer_says_it_is_one(capsys):
    argv = ["run", os.path.join(ROOT, "workloads", "gpt-1t.yaml"), "--global-batch", "1000000"]
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["tier"] == "analytic" and d["note"].startswith("closed form (simsp.sim.closed_form)")
    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("closed form (simsp.sim.closed_form), not simulated")


def test_run_json_states_the_configuration_it_ran(capsys):
    assert main(["run", W175, "--tp", "4", "--pp", "16", "--json"]) == 0
    c = json.loads(capsys.readouterr().out)["configuration"]
    assert c["parallel"]["tp"] == 4 and c["parallel"]["pp"] == 16 and c["parallel"]["dp"] == 1
    assert c["training"] == {
        "global_batch": 64,
        "micro_batch": 1,
        "precision": "bf16",
        "fp8_recipe": "delayed",
        "attention_kernel": "",
        "fp8_param_gather": False,
        "cross_entropy": "unfused",
        "stack": "megatron",
        "elementwise": "fused",
        "fsdp_impl": "megatron_fsdp",
    }
    assert c["model"]["layers"] == 96 and c["hardware_file"].endswith("dgx-a100-80gb.yaml")


def test_run_says_which_files_it_wrote(tmp_path, capsys):
    page = tmp_path / "t.json"
    assert main(["run", os.path.join(ROOT, "workloads", "gpt-22b.yaml"), "--trace", str(page)]) == 0
    assert f"wrote {page}" in capsys.readouterr().err


def test_every_flag_has_help_text():
    import argparse

    from simsp.cli.main import parser

    missing = []

    def walk(p, path):
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                for name, sub in a.choices.items():
                    walk(sub, [*path, name])
            elif a.help is None:
                missing.append((path, a.option_strings or a.dest))

    walk(parser(), ["simsp"])
    assert missing == []


def test_scientific_notation_is_a_number(tmp_path, capsys):
    data = yaml.safe_load(open(os.path.join(ROOT, "workloads", "gpt-22b.yaml")))
    w = tmp_path / "sci.yaml"
    w.write_text(
        yaml.safe_dump(data)
        .replace("hidden: 6144", "hidden: 6.144e3")
        .replace("global_batch: 4", "global_batch: 4e0")
    )
    hw = tmp_path / "hw.yaml"
    from tests.fuzz_cases import _hardware

    text = yaml.safe_dump(_hardware(), sort_keys=False)
    assert "peak_tflops: 312\n" in text
    hw.write_text(text.replace("peak_tflops: 312\n", "peak_tflops: 3.12e2\n"))
    assert main(["run", str(w), "--hardware", str(hw), "--json"]) == 0
    sci = json.loads(capsys.readouterr().out)
    assert main(["run", os.path.join(ROOT, "workloads", "gpt-22b.yaml"), "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert sci["iteration_time_s"] == plain["iteration_time_s"] and sci["mfu"] == plain["mfu"]


def test_dp_comm_is_named_what_it_is_at_dp_one(capsys):
    assert main(["run", W175]) == 0
    out = capsys.readouterr().out
    assert "embedding all-reduce" in out and "DP comm" not in out
    assert main(["run", W175, "--tp", "4", "--dp", "2"]) == 0
    assert "DP comm" in capsys.readouterr().out


def test_interleaved_with_one_chunk_is_named_1f1b(capsys):
    assert main(["run", W175, "--virtual-stages", "1"]) == 0
    assert "1f1b (interleaved with one chunk)" in capsys.readouterr().out


def test_a_calibration_faster_than_the_gpu_is_refused_and_nothing_is_left(tmp_path, capsys):
    table = tmp_path / "fast.csv"
    table.write_text("# device: x\nm,n,k,batch,layout,tflops\n4096,4096,4096,1,TN,400\n")
    out = tmp_path / "out" / "new.yaml"
    argv = ["calibrate", "--hardware", HW, "--gemm", str(table), "--out", str(out)]
    assert main(argv) == 2
    assert "peak_tflops (312)" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fast.csv"]


def test_a_failed_calibrate_removes_what_it_copied(tmp_path, capsys):
    host = tmp_path / "host.yaml"
    host.write_text("host_forward_us: 1e9\n")  # past the sanity ceiling: found when loading
    gemm = os.path.join(ROOT, "hardware", "calibration", "dgx-a100-80gb", "gemm.csv")
    out = tmp_path / "new" / "my.yaml"
    argv = ["calibrate", "--hardware", HW, "--gemm", gemm, "--host", str(host), "--out", str(out)]
    assert main(argv) == 2
    assert "would not load" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.yaml"]


def test_gemm_lookups_equal_a_scan_of_every_point():
    import itertools
    import math
    import random

    from simsp.tables.gemm import GemmPoint, GemmTable

    rng = random.Random(18)
    sizes = [2**i for i in range(6, 15)]
    points = tuple(
        GemmPoint(m, n, k, b, lay, rng.uniform(10, 300))
        for m, n, k, b, lay in itertools.product(sizes, sizes, sizes[::2], (1, 4), ("TN", "NT"))
        if rng.random() < 0.3
    )
    table = GemmTable(points)

    def scan(m, n, k, b, layout):
        q = [math.log2(x) for x in (m, n, k, b)]
        near = []
        for pts in ([p for p in points if p.layout == layout], points):
            for p in pts:
                d = [a - math.log2(c) for a, c in zip(q, (p.m, p.n, p.k, p.batch), strict=True)]
                if max(map(abs, d)) <= 1:
                    near.append((math.sqrt(sum(x * x for x in d)), p.tflops))
            if near:
                break
        near = sorted(near)[:4]
        if not near:
            return None
        if near[0][0] == 0:
            return near[0][1]
        w = [1 / (d * d) for d, _ in near]
        return sum(x * v for x, (_, v) in zip(w, near, strict=True)) / sum(w)

    for _ in range(300):
        shape = [rng.randint(40, 30000) for _ in range(3)] + [rng.choice((1, 2, 4, 8))]
        layout = rng.choice(("TN", "NN", "NT"))
        assert table.lookup_tflops(*shape, layout) == scan(*shape, layout)


def test_the_pareto_axis_is_labelled_in_gib_and_centred_on_the_hbm_line():
    from simsp.sweep.pareto import pareto_figure

    row = {
        "recompute": "selective",
        "sp": "true",
        "fits": "true",
        "tier": "event",
        "hardware": "hw",
        "tp": "8",
        "pp": "8",
        "dp": "1",
        "schedule": "1f1b",
        "virtual_stages": "1",
        "micro_batch": "1",
        "global_batch": "64",
        "mfu": "0.5",
        "capacity_bytes": str(80 * 2**30),
    }
    rows = [
        {**row, "peak_bytes": str(int(g * 2**30)), "iteration_time_s": str(10 / g)}
        for g in (0.5, 30, 60, 79, 95, 4000)
    ]
    layout = pareto_figure(rows)["layout"]
    x = layout["xaxis"]
    assert all(t.endswith(" GiB") for t in x["ticktext"]) and len(x["ticktext"]) >= 3
    lo, hi = (10**v for v in x["range"])
    assert 80 / 16 / 1.2 <= lo < 30 and 95 < hi <= 80 * 16 * 1.2
    note = layout["annotations"][0]
    assert note["y"] == 1 and note["yanchor"] == "bottom" and note["showarrow"] is False


def test_the_reproduction_page_is_the_same_bytes_on_every_run(tmp_path):
    """plotly names each figure's div with a random uuid unless told; simsp names them."""
    from simsp.validate.reproduce import reproduce, write_report

    tables = reproduce()
    pages = [write_report(tables, tmp_path / str(k)).read_bytes() for k in range(2)]
    assert pages[0] == pages[1]


def test_an_output_is_never_an_input_nor_through_a_link(tmp_path, capsys):
    """Issue 32 class 3: `run W --timeline W` replaced the workload with HTML; a link as the
    output was replaced (or written through). Both are refused before any work."""
    import shutil

    from simsp.cli.main import main

    workload = tmp_path / "w.yaml"
    shutil.copy(os.path.join(ROOT, "tests", "data", "kineto", "tiny-gpt-cpu.yaml"), workload)
    before = workload.read_bytes()
    assert main(["run", str(workload), "--timeline", str(workload)]) == 2
    assert "is an input" in capsys.readouterr().err and workload.read_bytes() == before
    link = tmp_path / "t.html"
    link.symlink_to(tmp_path / "elsewhere.html")
    assert main(["run", str(workload), "--trace", str(link)]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert link.is_symlink() and not (tmp_path / "elsewhere.html").exists()


def test_calibrate_keeps_a_file_it_did_not_write(tmp_path, capsys):
    """Issue 32 class 3: calibrate copied over an existing calibration/<name>/gemm.csv and
    followed a symlink there. Another file there, or a link, is refused and left as it was; the
    same measurement again is kept without a copy."""
    gemm = os.path.join(ROOT, "hardware", "calibration", "dgx-a100-80gb", "gemm.csv")
    out = tmp_path / "my.yaml"
    argv = ["calibrate", "--hardware", HW, "--gemm", gemm, "--out", str(out)]
    assert main(argv) == 0
    copied = next((tmp_path / "calibration").rglob("gemm.csv"))
    out.unlink()
    assert main(argv) == 0  # the same file again: fine
    capsys.readouterr()
    copied.write_text("someone else's table\n")
    out.unlink()
    assert main(argv) == 2
    assert "other contents" in capsys.readouterr().err
    assert copied.read_text() == "someone else's table\n" and not out.exists()
    copied.unlink()
    elsewhere = tmp_path / "elsewhere.csv"
    copied.symlink_to(elsewhere)
    assert main(argv) == 2
    assert "symbolic link" in capsys.readouterr().err and not elsewhere.exists()


def test_csv_cells_that_a_spreadsheet_would_run_are_escaped():
    """Issue 32: every CSV simsp writes (sweep, plan --out, validate's cases.csv) escapes a cell
    starting as a formula, and only such a cell: numbers keep their sign."""
    from simsp.textfile import csv_safe

    assert [csv_safe(c) for c in ("=1+1", "+cmd", "@SUM(A1)", "-x", "\tx")] == [
        "'=1+1",
        "'+cmd",
        "'@SUM(A1)",
        "'-x",
        "'\tx",
    ]
    assert [csv_safe(c) for c in ("-0.05", "+1e3", "dgx-h100", "1f1b", "")] == [
        "-0.05",
        "+1e3",
        "dgx-h100",
        "1f1b",
        "",
    ]


def test_multi_file_outputs_are_written_all_or_none(tmp_path, monkeypatch):
    """validate --out and reproduce --out write through write_files: a failure on the last file
    leaves none of the new ones, keeps what the folder held and removes a folder it made."""
    from simsp.textfile import write_files

    out = tmp_path / "new"
    real = os.replace
    calls = []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        real(src, dst)

    monkeypatch.setattr(os, "replace", second_fails)
    with pytest.raises(InputError, match="cannot be written"):
        write_files(out, {"a.csv": "1", "b.html": "2"})
    assert not out.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "b.html").write_text("old")
    calls.clear()
    with pytest.raises(InputError):
        write_files(kept, {"b.html": "new", "c.csv": "3"})
    assert (kept / "b.html").read_text() in ("old", "new")
    assert sorted(p.name for p in kept.iterdir() if not p.name.startswith(".")) in (
        ["b.html"],
        ["b.html", "c.csv"],
    )
    assert not [p for p in kept.iterdir() if p.name.endswith(".tmp")]
    monkeypatch.setattr(os, "replace", real)
    assert [p.name for p in write_files(out, {"a.csv": "1", "b.html": "2"})] == ["a.csv", "b.html"]


@pytest.mark.parametrize("command", [["reproduce"], ["validate", "--set", "paper-table4"]])
def test_a_folder_output_that_is_a_file_is_refused_before_any_work(tmp_path, capsys, command):
    """`reproduce --out FILE` used to run every experiment, then fail with a traceback."""
    target = tmp_path / "report"
    target.write_text("mine")
    assert main([*command, "--out", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is a file; name a folder" in err
    assert target.read_text() == "mine"


def test_an_error_line_escapes_control_characters_and_cuts_long_names(capsys):
    """An escape sequence in a --set key reaches the terminal as text, not as colour; a key of
    100,000 characters is cut."""
    assert main(["run", "workloads/gpt3-175b.yaml", "--set", "gpu.\x1b[31mred=1"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\\x1b[31mred" in err and len(err.splitlines()) == 1
    assert main(["run", "workloads/gpt3-175b.yaml", "--set", "a" * 100_000 + "=1"]) == 2
    assert len(capsys.readouterr().err) < 1000


# ---------------------------------------------------------------------------- issue 32, continued
GEMM_CSV = os.path.join(ROOT, "hardware", "calibration", "dgx-a100-80gb", "gemm.csv")


def test_an_output_is_never_a_device_or_a_fifo(tmp_path, capsys):
    """A FIFO (or a device node) at an output path is refused, not replaced by a file."""
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    assert main(["run", W175, "--timeline", str(fifo)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a regular file" in err
    assert not fifo.is_file() and fifo.exists()


def test_the_pareto_page_is_never_written_over_what_the_spec_read(tmp_path, capsys):
    """`sweep --pareto` naming the spec's own workload (or the spec) is refused before the
    sweep, and the file is left as it was."""
    workload = tmp_path / "w.html"
    workload.write_text(open(W175).read())
    spec = _spec(tmp_path, workload=str(workload))
    before = workload.read_bytes()
    assert main(["sweep", str(spec), "--pareto", str(workload), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is an input" in err
    assert workload.read_bytes() == before


def test_calibrate_never_writes_its_output_over_an_input_or_through_a_link(tmp_path, capsys):
    """`calibrate --out` equal to its --gemm or --hardware file, or a calibration/<stem>
    folder that is a symbolic link, is refused, and nothing is written."""
    gemm = tmp_path / "g.csv"
    gemm.write_text(open(GEMM_CSV).read())
    base = ["calibrate", "--hardware", HW, "--gemm", str(gemm)]
    for out in (str(gemm), HW):
        before = open(out, "rb").read()
        assert main([*base, "--out", out]) == 2
        assert "is an input" in capsys.readouterr().err
        assert open(out, "rb").read() == before
    elsewhere, out = tmp_path / "elsewhere", tmp_path / "out"
    elsewhere.mkdir()
    (out / "calibration").mkdir(parents=True)
    (out / "calibration" / "new").symlink_to(elsewhere)
    assert main([*base, "--out", str(out / "new.yaml")]) == 2
    assert "symbolic link" in capsys.readouterr().err
    assert list(elsewhere.iterdir()) == [] and not (out / "new.yaml").exists()


def test_a_copy_cut_short_is_removed(tmp_path, monkeypatch, capsys):
    """A measured file whose copy fails part-way (a full disk) leaves no fragment behind."""
    import shutil

    from simsp.measure.profiler import measured_files

    def half_copy(src, dest, **_):
        with open(dest, "wb") as f:
            f.write(open(src, "rb").read()[:100])
        raise OSError(28, "No space left on device")

    gemm = tmp_path / "src" / "g.csv"
    gemm.parent.mkdir()
    shutil.copy(GEMM_CSV, gemm)
    monkeypatch.setattr(measured_files.shutil, "copyfile", half_copy)
    out = tmp_path / "out" / "new.yaml"
    out.parent.mkdir()
    assert main(["calibrate", "--hardware", HW, "--gemm", str(gemm), "--out", str(out)]) == 2
    assert "No space left" in capsys.readouterr().err
    assert sorted(p.name for p in out.parent.iterdir()) == []


def test_usage_errors_are_one_bounded_line_without_escapes(capsys):
    """argparse repeats what was typed; an escape sequence in it is written escaped and a
    100,000-character value is cut."""
    assert main(["run", W175, "--\x1b[31mfoo"]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and err.count("\n") == 1
    assert main(["validate", "--set", "a" * 100_000]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and len(err) < 600


def test_workers_are_bounded_by_the_cpus(capsys):
    assert main(["validate", "--set", "paper-table4", "--workers", str(os.cpu_count() + 1)]) == 2
    assert "the CPUs" in capsys.readouterr().err


def test_a_spec_path_resolves_next_to_the_spec_first(tmp_path, monkeypatch):
    """A spec's `workload: w.yaml` is the one beside the spec even where the working directory
    holds another w.yaml (paths resolve relative to the file that names them)."""
    beside, other = tmp_path / "specs", tmp_path / "cwd"
    beside.mkdir()
    other.mkdir()
    data = yaml.safe_load(open(W175))
    data["name"] = "beside"
    (beside / "w.yaml").write_text(yaml.safe_dump(data))
    data["name"] = "cwd"
    (other / "w.yaml").write_text(yaml.safe_dump(data))
    spec = beside / "s.yaml"
    spec.write_text(yaml.safe_dump({"workload": "w.yaml", "hardware": [HW], "gpus": 64}))
    monkeypatch.chdir(other)
    from simsp.sweep import load_spec

    assert load_spec(spec).workload.name == "beside"


def test_a_second_sweep_reads_the_rows_under_the_lock(tmp_path):
    """The output's lock is taken before the rows already there are read: while one sweep holds
    it, another on the same output stops at once."""
    from simsp.sweep.store import Output

    path = tmp_path / "rows.csv"
    first = Output(str(path))
    assert first.existing() == []
    with pytest.raises(InputError, match="another sweep"):
        Output(str(path)).existing()
    first.close([])


def test_a_model_of_a_billion_layers_is_refused_at_once(tmp_path, capsys):
    w = tmp_path / "deep.yaml"
    w.write_text(
        "model: {layers: 1000000000, hidden: 64, heads: 2, seq_len: 16, vocab: 100}\n"
        "training: {global_batch: 1, micro_batch: 1}\n"
    )
    assert main(["run", str(w)]) == 2
    assert "at most 10,000" in capsys.readouterr().err


def test_an_error_about_a_file_the_spec_named_does_not_quote_its_value(tmp_path, capsys):
    """Issue 32 class 1: a spec (or a runs CSV) from someone else names a YAML; a bad value
    there is reported by file and key, never copied into the log. Named on the command line,
    the same file's error quotes it."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: x\nmodel: {layers: S3CR3T-val, hidden: 64, heads: 2, seq_len: 16, vocab: 100}\n"
        "training: {global_batch: 1, micro_batch: 1}\n"
    )
    spec = tmp_path / "s.yaml"
    spec.write_text(f"workload: bad.yaml\nhardware: [{HW}]\ngpus: 1\n")
    assert main(["sweep", str(spec), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "model.layers=(not shown)" in err and "S3CR3T" not in err
    runs = tmp_path / "runs.csv"
    runs.write_text("workload,iteration_s\nbad.yaml,1.0\n")
    out = tmp_path / "fitted.yaml"
    assert main(["calibrate", "--hardware", HW, "--runs", str(runs), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "S3CR3T" not in err and err.count("\n") == 1
    assert main(["run", str(bad)]) == 2
    assert "S3CR3T" in capsys.readouterr().err


TINY = os.path.join(ROOT, "tests", "data", "kineto", "tiny-gpt-cpu.yaml")


@pytest.mark.parametrize("flag, name", [("--timeline", "t.html"), ("--trace", "t.json")])
def test_an_output_replaces_only_a_file_simsp_wrote(tmp_path, capsys, flag, name):
    """Issue 32 class 3: `run --timeline FILE` replaced any file there. A file simsp did not
    write (no generator mark in its head) is refused before any work, and left as it was; one
    simsp wrote, or an empty one, is replaced as before."""
    out = tmp_path / name
    out.write_text("my notes, not a timeline\n")
    assert main(["run", TINY, flag, str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a file simsp wrote" in err
    assert out.read_text() == "my notes, not a timeline\n"
    out.write_text("")
    assert main(["run", TINY, flag, str(out)]) == 0
    first = out.read_bytes()
    assert written_by_simsp(out)  # its generator mark, near the start
    assert main(["run", TINY, flag, str(out)]) == 0
    assert out.read_bytes() == first


def test_plan_and_folder_outputs_replace_only_their_own_files(tmp_path, capsys):
    """plan --out knows its CSV by its header line; validate --out and reproduce --out check
    the files they would replace before any set or experiment runs."""
    out = tmp_path / "plan.csv"
    out.write_text("a,b\n1,2\n")
    args = ["plan", TINY, "--gpus", "2", "--hardware", "dgx-a100-80gb"]
    assert main([*args, "--out", str(out)]) == 2
    assert "is not a file simsp wrote" in capsys.readouterr().err
    out.unlink()
    assert main([*args, "--out", str(out)]) == 0
    capsys.readouterr()
    assert main([*args, "--out", str(out)]) == 0  # its own CSV: replaced
    folder = tmp_path / "report"
    folder.mkdir()
    (folder / "errors.html").write_text("<html>mine</html>")
    assert main(["validate", "--set", "paper-table4", "--out", str(folder)]) == 2
    assert "errors.html" in capsys.readouterr().err
    assert sorted(p.name for p in folder.iterdir()) == ["errors.html"]
    (folder / "errors.html").write_text("")
    # a page this run would not write (no peer simulator's set) is neither checked nor touched
    (folder / "peers.html").write_text("<html>mine</html>")
    assert main(["validate", "--set", "paper-table4", "--out", str(folder)]) == 0
    capsys.readouterr()
    assert (folder / "peers.html").read_text() == "<html>mine</html>"
    assert main(["validate", "--set", "vtrain-single", "--out", str(folder)]) == 2
    assert "peers.html" in capsys.readouterr().err
    (folder / "peers.html").unlink()
    (folder / "reproduction.html").write_text("<html>mine</html>")
    assert main(["reproduce", "--out", str(folder)]) == 2
    assert "reproduction.html" in capsys.readouterr().err
    assert (folder / "reproduction.html").read_text() == "<html>mine</html>"


def test_a_table_simsp_wrote_is_known_by_its_header_after_its_provenance(tmp_path):
    """The profiler's grouped-GEMM table starts with '#' provenance lines, then its header: a
    second profile run replaces it; a CSV of someone else's is refused."""
    from simsp.tables.grouped_gemm import GroupedPoint, write_grouped_gemm_table
    from simsp.textfile import check_output

    out = tmp_path / "grouped_gemm.csv"
    points = [GroupedPoint(2, 64, 64, 64, layout, 10.0) for layout in ("TN", "NN", "NT")]
    write_grouped_gemm_table(points, out, ["measured by simsp profile gemm"])
    header = b"groups,m,n,k,layout,"
    assert check_output(out, (".csv",), header=header) == out
    out.write_text("# mine\ngroups,x\n1,2\n")
    with pytest.raises(InputError, match="not a file simsp wrote"):
        check_output(out, (".csv",), header=header)


@pytest.mark.parametrize("kind", ["host", "optimizer", "memory"])
def test_profile_lines_never_replace_a_file_simsp_did_not_write(tmp_path, capsys, kind):
    """Issue 32: `profile ... --out` is checked before anything is measured (no torch needed
    for the refusal); a file of calibration lines simsp wrote is known by its first line."""
    out = tmp_path / "lines.yaml"
    out.write_text("api_token: not yours\n")
    assert main(["profile", kind, "--device", "cpu", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a file simsp wrote" in err
    assert out.read_text() == "api_token: not yours\n"
    out.write_text(f"# measured by `simsp profile {kind}` on CPU, torch 2.13, 2026-12-03\nx: 1\n")
    assert written_by_simsp(out)
    log = tmp_path / "all_reduce_perf.log"
    log.write_text("# nccl-tests version simsp-profile nccl-headers=0 nccl-library=0\n")
    assert written_by_simsp(log)
    # a hardware file carries profile lines in its comments: it is not the profiler's to replace
    hardware = tmp_path / "mine-h100.yaml"
    hardware.write_text(open(os.path.join(ROOT, "hardware", "dgx-h100.yaml")).read())
    assert b"# measured by `simsp profile " in hardware.read_bytes()
    assert not written_by_simsp(hardware)
    assert main(["profile", kind, "--device", "cpu", "--out", str(hardware)]) == 2
