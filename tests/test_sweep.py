"""Sweeps: enumeration, output rows, resume after a kill, executors, screening, compare, figure."""

import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from simsp import sweep
from simsp.cli.main import main as cli_main
from simsp.errors import InputError
from simsp.spec.rules import validate
from tests.extras import needs

ROOT = Path(__file__).resolve().parents[1]
SPEC_175B = ROOT / "workloads" / "sweeps" / "gpt3-175b-64gpu.yaml"
REQUIRED = (
    "hardware",
    "tp",
    "pp",
    "dp",
    "sp",
    "recompute",
    "micro_batch",
    "schedule",
    "virtual_stages",
    "iteration_time_s",
    "mfu",
    "hfu",
    "tokens_per_s",
    "peak_bytes",
    "fits",
)


def write_spec(folder: Path, grid: dict, workload=None, **extra) -> Path:
    """A spec in folder; workload given as a mapping is written beside it (global batch changes)."""
    if isinstance(workload, dict):
        (folder / "w.yaml").write_text(yaml.safe_dump(workload))
        workload = "w.yaml"
    data = {
        "workload": workload or str(ROOT / "workloads" / "gpt3-175b.yaml"),
        "hardware": [str(ROOT / "hardware" / "dgx-a100-80gb.yaml")],
        "gpus": 64,
        "grid": grid,
        **extra,
    }
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def rows_of(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def key(row: dict) -> tuple:
    return tuple(row[c] for c in sweep.KEY_COLUMNS)


# ---------------------------------------------------------------------------- enumeration
def test_enumeration_is_valid_distinct_and_fills_dp():
    spec = sweep.load_spec(SPEC_175B)
    configs, counts = sweep.enumerate_configs(spec)
    assert counts.grid_points == 5 * 5 * 2 * 3 * 3
    assert counts.grid_points == counts.configs + counts.invalid + counts.duplicates
    assert len({c.key for c in configs}) == len(configs) == counts.configs
    for c in configs:
        p = c.workload.parallel
        validate(c.workload, "test")
        assert p.tp * p.pp * p.dp == 64
        assert not (p.sequence_parallel and p.tp == 1)  # same run as SP off: deduped
        assert c.key == sweep.config_key(c.workload, c.hardware)
    # SP with tp = 1: one duplicate per (pp, recompute, micro batch) that is valid
    assert counts.duplicates == sum(1 for c in configs if c.workload.parallel.tp == 1)
    # the inherited interleaved schedule falls back to 1F1B where it cannot run (pp = 1 at least)
    pp1 = [c for c in configs if c.workload.parallel.pp == 1]
    assert pp1 and all(c.workload.parallel.schedule == "1f1b" for c in pp1)
    wanted = dict(
        tp="8",
        pp="8",
        dp="1",
        sp="true",
        recompute="selective",
        micro_batch="1",
        global_batch="64",
        schedule="interleaved",
        virtual_stages="3",
    )
    paper = [
        c
        for c in configs
        if all(dict(zip(sweep.KEY_COLUMNS, c.key, strict=True))[k] == v for k, v in wanted.items())
    ]
    assert len(paper) == 1


def test_explicit_schedule_grid_skips_invalid_interleaving(tmp_path):
    spec = sweep.load_spec(
        write_spec(
            tmp_path,
            {
                "tp": [8],
                "pp": [1, 2, 8],
                "schedule": ["1f1b", "interleaved"],
                "virtual_stages": [1, 2, 3],
            },
        )
    )
    configs, counts = sweep.enumerate_configs(spec)
    got = sorted(
        (c.workload.parallel.pp, c.workload.parallel.schedule, c.workload.parallel.virtual_stages)
        for c in configs
    )
    # pp=1 interleaved is invalid (skipped: the grid asks for it, so no fallback); interleaved v=1
    # is 1F1B (deduped); 1F1B ignores virtual_stages (deduped)
    assert got == [
        (1, "1f1b", 1),
        (2, "1f1b", 1),
        (2, "interleaved", 2),
        (2, "interleaved", 3),
        (8, "1f1b", 1),
        (8, "interleaved", 2),
        (8, "interleaved", 3),
    ]
    assert counts.fallback == 0
    assert counts.grid_points == counts.configs + counts.invalid + counts.duplicates


def test_tp_pp_not_dividing_gpus_is_invalid(tmp_path):
    spec = sweep.load_spec(write_spec(tmp_path, {"tp": [8], "pp": [3, 8]}, gpus=64))
    configs, counts = sweep.enumerate_configs(spec)
    assert [c.workload.parallel.pp for c in configs] == [8] and counts.invalid == 1


@pytest.mark.parametrize(
    "change,words",
    [
        ({"grid": {"tp": [8], "tpp": [2]}}, ["grid.tpp", "unknown grid key"]),
        ({"grid": {"tp": [0]}}, ["grid.tp", "positive integer"]),
        ({"grid": {"recompute": ["some"]}}, ["grid.recompute", "must be one of"]),
        ({"grid": {"sp": ["yes"]}}, ["grid.sp", "true or false"]),
        ({"grid": {"sp": [True], "sequence_parallel": [False]}}, ["grid", "twice"]),
        ({"gpus": 0}, ["gpus", "positive"]),
        ({"workload": "nowhere.yaml"}, ["workload", "no such file"]),
        ({"colour": "red"}, ["colour", "unknown key"]),
        ({"keep": 2}, ["keep", "fraction"]),
    ],
)
def test_bad_spec_is_one_line_and_exit_2(tmp_path, capsys, change, words):
    path = write_spec(tmp_path, {"tp": [8]})
    data = yaml.safe_load(path.read_text())
    data.update(change)
    path.write_text(yaml.safe_dump(data))
    assert cli_main(["sweep", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and str(path) in err and all(w in err for w in words)


def test_spec_paths_resolve_next_to_the_spec(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path.parent)  # neither path is relative to here
    spec = sweep.load_spec(SPEC_175B)
    assert spec.workload.name == "gpt3-175b" and spec.hardware[0].name == "dgx-a100-80gb"


def test_a_spec_may_not_reach_outside_its_trees_without_a_flag(tmp_path, monkeypatch):
    """A spec names files next to (or below) itself, under the working directory, or among
    simsp's shipped workloads and hardware; anything else needs --allow-outside."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "specs").mkdir()
    other = tmp_path / "elsewhere" / "w.yaml"
    other.write_text((ROOT / "workloads" / "gpt3-175b.yaml").read_text())
    spec = write_spec(tmp_path / "specs", {"tp": [8]}, workload=str(other))
    monkeypatch.chdir(tmp_path / "specs")
    with pytest.raises(InputError, match="outside the spec's folder.*--allow-outside"):
        sweep.load_spec(spec)
    assert sweep.load_spec(spec, allow_outside=True).workload.name == "gpt3-175b"
    assert cli_main(["sweep", str(spec), "--jobs", "1"]) == 2


# ---------------------------------------------------------------------------- rows and files
SMALL = {"tp": [8], "pp": [4, 8], "sp": [True], "recompute": ["selective", "full"]}


def test_csv_columns_and_values(tmp_path):
    out = tmp_path / "rows.csv"
    assert (
        cli_main(
            [
                "sweep",
                str(write_spec(tmp_path, SMALL)),
                "--out",
                str(out),
                "--jobs",
                "1",
                "--no-progress",
            ]
        )
        == 0
    )
    header = out.read_text().splitlines()[0].split(",")
    assert tuple(header) == sweep.COLUMNS and set(REQUIRED) <= set(header)
    rows = rows_of(out)
    assert len(rows) == 4 and all(
        r["tier"] == "event" and r["fits"] in ("true", "false") for r in rows
    )
    for r in rows:
        assert int(r["tp"]) * int(r["pp"]) * int(r["dp"]) == 64
        assert float(r["mfu"]) < float(r["hfu"])  # recompute counted in HFU only
        assert float(r["tokens_per_s"]) == pytest.approx(64 * 2048 / float(r["iteration_time_s"]))


def test_paper_setting_row_equals_simsp_run_and_best_is_no_slower(tmp_path, workloads, hardware):
    from simsp.api import run

    grid = {
        "tp": [4, 8],
        "pp": [4, 8],
        "sp": [True, False],
        "recompute": ["selective", "full"],
        "micro_batch": [1],
    }
    outcome = sweep.run_sweep(sweep.load_spec(write_spec(tmp_path, grid)), jobs=1, progress=False)
    paper = [
        r
        for r in outcome.rows
        if sweep.describe_row(r) == "tp=8 pp=8 dp=1 sp=on selective interleaved v=3 b=1 B=64"
    ]
    assert len(paper) == 1
    expected = run(workloads["gpt3-175b"], hardware).to_dict()
    assert float(paper[0]["iteration_time_s"]) == expected["iteration_time_s"]
    assert int(paper[0]["peak_bytes"]) == expected["memory"]["peak_bytes"]
    assert paper[0]["fits"] == "true"
    top = sweep.best(outcome.rows, 3)
    assert float(top[0]["iteration_time_s"]) <= expected["iteration_time_s"]
    assert all(r["fits"] == "true" for r in top)
    assert [float(r["iteration_time_s"]) for r in top] == sorted(
        float(r["iteration_time_s"]) for r in top
    )


SLOW_WORKLOAD = {
    "name": "gpt3-175b-b512",
    "model": {"layers": 96, "hidden": 12288, "heads": 96, "seq_len": 2048, "vocab": 51200},
    "training": {"global_batch": 384, "micro_batch": 1},
    "parallel": {
        "tp": 8,
        "pp": 8,
        "dp": 1,
        "sequence_parallel": True,
        "recompute": "selective",
        "schedule": "interleaved",
        "virtual_stages": 3,
    },
}
SLOW_GRID = {
    "tp": [8],
    "pp": [8],
    "sp": [True, False],
    "recompute": ["none", "selective", "full"],
    "micro_batch": [1, 2],
}


def test_kill_and_resume_loses_and_duplicates_no_row(tmp_path):
    spec_path = write_spec(tmp_path, SLOW_GRID, workload=SLOW_WORKLOAD)
    reference = sweep.run_sweep(sweep.load_spec(spec_path), jobs=1, progress=False).rows
    assert len(reference) == 12
    out = tmp_path / "killed.csv"
    code = (
        f"import sys; from simsp.cli.main import main; sys.exit(main(['sweep', {str(spec_path)!r}, "
        f"'--out', {str(out)!r}, '--jobs', '1', '--no-progress']))"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        if out.exists() and out.read_text().count("\n") >= 4:  # header + 3 rows
            break
        time.sleep(0.005)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the sweep finished before it could be killed"
    partial = rows_of(out)
    assert 3 <= len(partial) < 12
    with open(out, "a") as f:  # as if killed in the middle of a write
        f.write("gpt3-175b-b512,dgx-a100-80gb,64,8,8")
    outcome = sweep.run_sweep(sweep.load_spec(spec_path), str(out), jobs=2, progress=False)
    assert outcome.resumed == len(partial) and outcome.simulated == 12 - len(partial)
    final = rows_of(out)
    keys = [key(r) for r in final]
    assert len(keys) == len(set(keys)) == 12
    assert sorted(tuple(r.values()) for r in final) == sorted(tuple(r.values()) for r in reference)
    assert final[: len(partial)] == partial  # earlier rows untouched


def test_rerun_of_a_finished_sweep_adds_nothing(tmp_path):
    out = tmp_path / "rows.csv"
    spec = sweep.load_spec(write_spec(tmp_path, SMALL))
    sweep.run_sweep(spec, str(out), jobs=1, progress=False)
    before = out.read_text()
    again = sweep.run_sweep(spec, str(out), jobs=1, progress=False)
    assert (
        out.read_text() == before
        and again.simulated == 0
        and again.resumed == 4
        and len(again.rows) == 4
    )


def test_output_with_other_columns_is_refused(tmp_path, capsys):
    out = tmp_path / "rows.csv"
    out.write_text("a,b\n1,2\n")
    assert (
        cli_main(["sweep", str(write_spec(tmp_path, SMALL)), "--out", str(out), "--no-progress"])
        == 2
    )
    assert "other columns" in capsys.readouterr().err
    assert out.read_text() == "a,b\n1,2\n"


def test_parquet_output_and_resume(tmp_path):
    pq = needs("pyarrow.parquet")
    out = tmp_path / "rows.parquet"
    spec = sweep.load_spec(write_spec(tmp_path, SMALL))
    first = sweep.run_sweep(spec, str(out), jobs=1, progress=False)
    table = pq.read_table(out).to_pylist()
    assert (
        len(table) == 4
        and isinstance(table[0]["iteration_time_s"], float)
        and isinstance(table[0]["fits"], bool)
    )
    assert not (tmp_path / "rows.parquet.partial.csv").exists()
    again = sweep.run_sweep(spec, str(out), jobs=1, progress=False)
    assert again.simulated == 0 and sorted(map(key, again.rows)) == sorted(map(key, first.rows))


def test_dask_executor_matches_local(tmp_path):
    distributed = needs("distributed")
    spec = sweep.load_spec(write_spec(tmp_path, SMALL))
    local = sweep.run_sweep(spec, jobs=1, progress=False).rows
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None, protocol="tcp"
    ) as cluster:
        address = cluster.scheduler_address.split("://", 1)[1]
        remote = sweep.run_sweep(spec, executor=f"dask://{address}", progress=False).rows
    assert remote == local


def test_unknown_executor_is_an_input_error(tmp_path, capsys):
    assert (
        cli_main(
            ["sweep", str(write_spec(tmp_path, SMALL)), "--executor", "spark://x", "--no-progress"]
        )
        == 2
    )
    assert "local or dask://HOST:PORT" in capsys.readouterr().err


def test_screen_simulates_the_best_quarter_of_those_that_fit(tmp_path):
    grid = {
        "tp": [4, 8],
        "pp": [4, 8, 16],
        "sp": [True, False],
        "recompute": ["none", "selective", "full"],
    }
    spec = sweep.load_spec(write_spec(tmp_path, grid))
    out = tmp_path / "screen.csv"
    outcome = sweep.run_sweep(spec, str(out), jobs=1, screening=True, progress=False)
    rows = rows_of(out)
    assert len(rows) == outcome.counts.configs == len({key(r) for r in rows})
    fitting = [r for r in rows if r["fits"] == "true"]
    events = [r for r in rows if r["tier"] == "event"]
    assert len(events) == math.ceil(0.25 * len(fitting)) and all(
        r["fits"] == "true" for r in events
    )
    # the event-simulated ones are the best by closed-form time, and the closed form is within 2%
    analytic = {key(r): r for r in sweep.screen(sweep.enumerate_configs(spec)[0], 1.0)[0]}
    worst_event = max(float(analytic[key(r)]["iteration_time_s"]) for r in events)
    assert all(
        float(analytic[key(r)]["iteration_time_s"]) >= worst_event
        for r in fitting
        if r["tier"] == "analytic"
    )
    for r in events:
        assert float(analytic[key(r)]["iteration_time_s"]) == pytest.approx(
            float(r["iteration_time_s"]), rel=0.02
        )
    # rows not simulated are the closed-form rows, to the digit
    assert all(r == analytic[key(r)] for r in rows if r["tier"] == "analytic")


def test_cli_prints_best_table_and_json(tmp_path, capsys):
    spec = str(write_spec(tmp_path, SMALL))
    assert cli_main(["sweep", spec, "--top", "2", "--jobs", "1", "--no-progress"]) == 0
    out = capsys.readouterr()
    assert "best 2 that fit" in out.out and "configurations (" in out.err
    assert cli_main(["sweep", spec, "--top", "1", "--jobs", "1", "--no-progress", "--json"]) == 0
    best = json.loads(capsys.readouterr().out)
    assert len(best) == 1 and best[0]["fits"] is True and set(REQUIRED) <= set(best[0])


def test_register_adds_both_commands():
    from simsp.cli import compare
    from simsp.cli import sweep as sweep_command
    from simsp.cli.arguments import Parser as _Parser

    top = _Parser(prog="simsp")
    sweep_command.register(top.add_subparsers(dest="command", parser_class=_Parser))
    args = top.parse_args(
        ["sweep", "s.yaml", "--screen", "--keep", "0.5", "--executor", "dask://h:8786"]
    )
    assert (args.func, args.screen, args.keep, args.executor) == (
        sweep_command.cmd_sweep,
        True,
        0.5,
        "dask://h:8786",
    )
    args = top.parse_args(
        ["compare", "w.yaml", "--hardware", "a.yaml", "b.yaml", "--tp", "4", "--json"]
    )
    assert (args.func, args.hardware, args.tp, args.json) == (
        compare.cmd_compare,
        ["a.yaml", "b.yaml"],
        4,
        True,
    )
    assert sweep.dask_address("dask://h:8786") == "tcp://h:8786"


# ---------------------------------------------------------------------------- compare
def half_memory_hardware(tmp_path: Path) -> Path:
    """The DGX A100 with 40 GiB, calibration paths made absolute."""
    src = ROOT / "hardware" / "dgx-a100-80gb.yaml"
    data = yaml.safe_load(src.read_text())
    data["name"] = "dgx-a100-40gb"
    data["gpu"]["hbm_gib"] = 40
    cal = data["calibration"]
    for k, v in cal.items():
        if k in ("gemm", "gemm_model", "flash_attention"):
            cal[k] = str(src.parent / v)
        elif k in ("nvlink", "infiniband"):
            cal[k] = [str(src.parent / p) for p in v]
    path = tmp_path / "dgx-a100-40gb.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_compare_one_row_per_hardware(tmp_path, capsys):
    workload = str(ROOT / "workloads" / "gpt3-175b.yaml")
    hw = [str(ROOT / "hardware" / "dgx-a100-80gb.yaml"), str(half_memory_hardware(tmp_path))]
    assert cli_main(["compare", workload, "--hardware", *hw, "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert [r["hardware"] for r in results] == ["dgx-a100-80gb", "dgx-a100-40gb"]
    assert [r["memory"]["fits"] for r in results] == [True, False]
    assert results[0]["iteration_time_s"] == results[1]["iteration_time_s"]
    assert cli_main(["compare", workload, "--hardware", *hw, "--pp", "16", "--tp", "4"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert "tp=4 pp=16" in lines[0] and lines[2].startswith("dgx-a100-80gb")
    # then each machine's measured accuracy: the shipped file's own, the copy its GPU's pool
    assert len(lines) == 6 and "with hardware/dgx-a100-80gb.yaml" in lines[4]
    assert " on A100 GPUs (" in lines[5]


def test_compare_bad_hardware_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [")
    assert (
        cli_main(["compare", str(ROOT / "workloads" / "gpt3-175b.yaml"), "--hardware", str(bad)])
        == 2
    )
    assert "not valid YAML" in capsys.readouterr().err


# ---------------------------------------------------------------------------- Pareto figure
def render(spec: dict) -> str:
    """What timeline.figure_html is asked to do: a self-contained plotly page."""
    import plotly.graph_objects as go

    return go.Figure(spec).to_html(include_plotlyjs=True, full_html=True)


def test_pareto_figure_is_a_valid_plotly_figure(tmp_path):
    grid = {
        "tp": [4, 8],
        "pp": [4, 8],
        "sp": [True, False],
        "recompute": ["none", "selective", "full"],
    }
    rows = sweep.run_sweep(
        sweep.load_spec(write_spec(tmp_path, grid)), screening=True, keep=0.01, progress=False
    ).rows
    spec = sweep.pareto_figure(rows, "175B")
    html = render(spec)
    assert "Pareto front" in html and "HBM 80 GiB" in html
    names = [t["name"] for t in spec["data"]]
    assert {"none, SP on", "selective, SP off", "full, SP on"} <= set(names)
    assert sum(len(t["x"]) for t in spec["data"] if t["mode"] == "markers") == len(rows)
    assert any("tp=8 pp=8" in text for t in spec["data"] if "text" in t for text in t["text"])
    front = sweep.pareto_front(rows)
    for r in front:  # nothing that fits beats a front point on both axes
        assert not any(
            o["fits"] == "true"
            and int(o["peak_bytes"]) < int(r["peak_bytes"])
            and float(o["iteration_time_s"]) < float(r["iteration_time_s"])
            for o in rows
        )
    json.dumps(spec)  # plain data


def test_pareto_option_writes_a_page(tmp_path):
    page = tmp_path / "pareto.html"
    assert (
        cli_main(
            [
                "sweep",
                str(write_spec(tmp_path, SMALL)),
                "--screen",
                "--pareto",
                str(page),
                "--no-progress",
            ]
        )
        == 0
    )
    text = page.read_text()
    assert "<html" in text.lower() and "Pareto" in text and "iteration time" in text


@pytest.mark.parametrize(
    "path", sorted((ROOT / "workloads" / "sweeps").glob("*.yaml")), ids=lambda p: p.stem
)
def test_shipped_specs_load_and_enumerate(path):
    configs, counts = sweep.enumerate_configs(sweep.load_spec(path))
    assert configs and counts.grid_points == counts.configs + counts.invalid + counts.duplicates


def test_several_hardware_files_give_a_row_each(tmp_path):
    spec_path = write_spec(tmp_path, {"tp": [8], "pp": [4, 8], "recompute": ["selective"]})
    data = yaml.safe_load(spec_path.read_text())
    data["hardware"].append(str(half_memory_hardware(tmp_path)))
    spec_path.write_text(yaml.safe_dump(data))
    rows = sweep.run_sweep(sweep.load_spec(spec_path), jobs=1, progress=False).rows
    by_hw = {}
    for r in rows:
        by_hw.setdefault(r["hardware"], []).append(r)
    assert sorted(by_hw) == ["dgx-a100-40gb", "dgx-a100-80gb"] and all(
        len(v) == 2 for v in by_hw.values()
    )
    for a, b in zip(by_hw["dgx-a100-80gb"], by_hw["dgx-a100-40gb"], strict=True):
        assert a["iteration_time_s"] == b["iteration_time_s"] and a["peak_bytes"] == b["peak_bytes"]
        assert int(b["capacity_bytes"]) * 2 == int(a["capacity_bytes"])


def test_a_second_sweep_on_the_same_output_stops_at_once(tmp_path):
    """Issue 32 class 3: two sweeps on one --out both exited 0 with every row twice."""
    from simsp.errors import InputError
    from simsp.sweep.store import CsvSink

    out = tmp_path / "rows.csv"
    first = CsvSink(out)
    try:
        with pytest.raises(InputError, match="another sweep"):
            CsvSink(out)
    finally:
        first.close()
    CsvSink(out).close()  # free again once the first is done


def test_a_row_that_cannot_be_written_whole_leaves_no_half_row(tmp_path, monkeypatch):
    """Issue 32 class 7: a full disk left half a row and a traceback."""
    import errno

    from simsp.errors import InputError
    from simsp.sweep.rows import COLUMNS
    from simsp.sweep.store import CsvSink

    out = tmp_path / "rows.csv"
    sink = CsvSink(out)
    header = out.read_bytes()
    real = sink.f

    class Full:
        def tell(self):
            return real.tell()

        def write(self, data):
            real.write(data[:5])  # a few bytes reach the disk, then it is full
            raise OSError(errno.ENOSPC, "No space left on device")

        def truncate(self, n):
            return real.truncate(n)

        def close(self):
            real.close()

    sink.f = Full()
    with pytest.raises(InputError, match="No space left"):
        sink.write(dict.fromkeys(COLUMNS, "1"))
    sink.close()
    assert out.read_bytes() == header


# ---------------------------------------------------------------------------- bounded work
WORK_GRID = {"tp": [4, 8], "pp": [4, 8, 16], "recompute": ["selective", "full"]}


def test_work_estimate_counts_each_phase():
    """The estimate is counts times simsp's measured CPU costs: enumeration by column grids,
    points and valid configurations (before the enumeration a bound: every point valid), or by
    points one at a time; screening by array and scalar rows; event simulations by runs and
    actions; the kept share of a screened sweep bounded by the costliest of those left."""
    from simsp.sim.budget import work
    from simsp.sweep import work as W

    assert W.enumeration(1000, 0).seconds == pytest.approx(1000 * W.SCALAR_POINT_S)
    bound, counted = W.enumeration(1000, 4), W.enumeration(1000, 4, 250)
    assert bound.at_most and not counted.at_most and counted.seconds < bound.seconds
    assert counted.describe().startswith("about") and bound.describe().startswith("up to")
    spec = sweep.load_spec(SPEC_175B)
    ws = [c.workload for c in sweep.enumerate_configs(spec)[0]]
    events = W.evaluation(ws, False, W.SweepWork())
    assert events.simulated == len(ws) and events.screen_s == 0 and events.event_s > 0
    screened = W.evaluation(ws, True, W.SweepWork(enumerate_s=1.0))
    assert screened.event_s == 0 and screened.enumerate_s == 1.0
    assert len(ws) * W.VECTOR_ROW_S <= screened.screen_s <= len(ws) * W.SCALAR_ROW_S
    assert "event simulations" in events.describe() and "closed form" in screened.describe()
    kept = W.kept_bound(ws, 10, screened)
    by_actions = sorted(ws, key=lambda w: work(w).actions)
    cheapest = W.evaluation(by_actions[:10], False, W.SweepWork())
    assert kept.simulated == 10 and kept.at_most and kept.event_s > cheapest.event_s
    assert W.kept_bound(ws[:3], 10, screened).simulated == 3  # never more than are left
    assert W.kept_bound([], 10, screened).seconds == screened.seconds


def test_a_refused_sweep_leaves_its_output_as_it_was_and_a_finished_one_resumes(tmp_path):
    """An empty --out stays empty when the sweep is refused; a screened sweep resumed with
    nothing left to simulate is not refused for what it no longer has to do."""
    spec_path = write_spec(tmp_path, WORK_GRID)
    out = tmp_path / "rows.csv"
    out.write_bytes(b"")
    argv = ["sweep", str(spec_path), "--out", str(out), "--jobs", "1", "--no-progress"]
    assert cli_main([*argv, "--screen", "--max-seconds", "1e-9"]) == 2
    assert out.read_bytes() == b""
    assert cli_main([*argv, "--screen"]) == 0
    rows = out.read_bytes()
    assert cli_main([*argv, "--screen", "--max-seconds", "0.05"]) == 0  # only the closed form
    assert out.read_bytes() == rows


@pytest.mark.parametrize("screening", [False, True])
def test_a_sweep_estimated_past_max_seconds_is_refused_before_writing(tmp_path, capsys, screening):
    """Past --max-seconds: one line naming the estimate, the limit and the flag, exit 2, no
    output file; without --screen it says what screening would take; with it, the bound on
    its event simulations (the kept share that costs most) counts before screening starts."""
    from simsp.sweep import work as W
    from simsp.sweep.spec import grid_points

    spec_path = write_spec(tmp_path, WORK_GRID)
    spec = sweep.load_spec(spec_path)
    configs = sweep.enumerate_configs(spec)[0]
    before = W.enumeration(grid_points(spec), 1, len(configs))
    screen = W.evaluation([c.workload for c in configs], True, before).seconds
    listing = W.enumeration(grid_points(spec), 1).seconds  # the bound checked before it
    limit = screen * 1.01 if screening else max(before.seconds, listing) * 1.01
    out = tmp_path / "rows.csv"
    argv = ["sweep", str(spec_path), "--out", str(out), "--max-seconds", f"{limit:.9f}"]
    assert cli_main(argv + (["--screen"] if screening else []) + ["--jobs", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--max-seconds raises it" in err
    assert "event simulations" in err and ("--screen would take" in err) == (not screening)
    assert "up to" in err
    assert not out.exists()
    with pytest.raises(InputError, match="grid points"):  # the enumeration alone, before it
        sweep.run_sweep(spec, str(out), jobs=1, progress=False, max_seconds=before.seconds / 4)
    for bad in ("0", "-1", "nan"):
        assert cli_main(["sweep", str(spec_path), "--max-seconds", bad]) == 2
