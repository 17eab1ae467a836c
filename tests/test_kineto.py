"""`simsp calibrate --trace` and `simsp overlay` on a real H100 trace (tests/data/kineto, from
TraceLens) and on a trace this suite records on the CPU (torch.profiler over a tiny GPT).

The CPU tests need torch (tests/extras.needs); the trace reader needs HolisticTraceAnalysis (the
`trace` extra, installed by .ci/run). The browser test is skipped only where no Chromium is
found, as tests/test_browser.py is.
"""

import json
from pathlib import Path

import pytest

from tests.extras import needs

needs("hta")

import simsp.cli.main  # noqa: E402
from simsp.api import run  # noqa: E402
from simsp.io.config import load_hardware, load_workload  # noqa: E402
from simsp.measure.kineto.compare import compare_run  # noqa: E402
from simsp.measure.kineto.match import match_profile  # noqa: E402
from simsp.measure.kineto.reader import read_profile  # noqa: E402
from simsp.present.timeline.overlay import BAR_BUDGET, _merged, overlay_html  # noqa: E402
from simsp.sim.trace import Span  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "kineto"
BERT_TRACE = DATA / "tracelens-h100-bert-small-uncased.json.gz"
BERT = DATA / "bert-small.yaml"
TINY = DATA / "tiny-gpt-cpu.yaml"


def _cli(argv, capsys) -> tuple[int, str, str]:
    try:
        code = simsp.cli.main.main(argv)
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code or 0, out, err


@pytest.fixture(scope="module")
def bert_hw(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bert") / "bert-h100.yaml"
    from simsp.measure.kineto.calibrate import calibrate_from_trace

    return out, calibrate_from_trace(BERT_TRACE, BERT, out)


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory) -> Path:
    needs("torch")
    from simsp.measure.profiler.gpt_trace import record

    return record(load_workload(TINY), tmp_path_factory.mktemp("cpu") / "tiny.json.gz")


@pytest.fixture(scope="module")
def cpu_hw(cpu_trace, tmp_path_factory) -> Path:
    from simsp.measure.kineto.calibrate import calibrate_from_trace

    out = tmp_path_factory.mktemp("cpu-hw") / "tiny-cpu.yaml"
    calibrate_from_trace(cpu_trace, TINY, out)
    return out


def test_real_h100_trace_is_read_with_its_device_and_shapes():
    p = read_profile(BERT_TRACE)
    assert p.device == "NVIDIA H100 80GB HBM3" and not p.cpu
    assert p.iteration == 6 and p.date == "2025-07-18"
    assert len(p.kernels) == 60
    # nanosecond resolution kept: HTA's default rounding to whole us would lose ~18 %
    assert p.kernel_s == pytest.approx(307.2e-6, rel=1e-3)
    addmm = [k for k in p.kernels if k.op == "aten::addmm"]
    assert addmm and all(len(k.dims) >= 3 for k in addmm)


def test_real_h100_trace_matches_over_90_percent_and_lists_the_rest():
    mt = match_profile(read_profile(BERT_TRACE), load_workload(BERT))
    print(f"bert-small H100 trace: {mt.matched_fraction:.1%} of {mt.total_s * 1e6:.1f} us matched")
    assert mt.matched_fraction >= 0.90
    rest = mt.unmatched()
    assert rest and sum(t for _, t, _ in rest) == pytest.approx(mt.total_s - mt.matched_s)
    kinds = {m.kind for m in mt.matches}
    assert {"gemm", "flash_attention", "layernorm", "gelu", "embedding"} <= kinds
    # Hugging Face's separate query, key and value projections are simsp's one fused QKV
    qkv = [m for m in mt.matches if m.op == "qkv" and m.gemm is not None]
    assert len(qkv) == 4 and all((m.gemm.m, m.gemm.n, m.gemm.k) == (141, 1536, 512) for m in qkv)
    assert [m.layer for m in qkv] == [0, 1, 2, 3]


def test_calibrate_trace_json_contract(tmp_path, capsys):
    out = tmp_path / "hw.yaml"
    argv = ["calibrate", "--trace", str(BERT_TRACE), "--workload", str(BERT)]
    code, text, err = _cli([*argv, "--out", str(out), "--json"], capsys)
    assert code == 0, err
    d = json.loads(text)
    assert {"matched_fraction", "unmatched", "out"} <= set(d)
    assert d["out"] == str(out) and d["matched_fraction"] >= 0.9
    assert all({"name", "time_s"} <= set(u) for u in d["unmatched"])
    head = out.read_text().splitlines()[:12]
    assert any("tracelens-h100-bert-small-uncased.json.gz" in h for h in head)
    assert any("NVIDIA H100 80GB HBM3" in h and "2025-07-18" in h for h in head)
    assert any("unmatched" in h for h in head)
    assert load_hardware(out).name == "dgx-h100"  # the trace's GPU's library file is the base


def test_real_trace_tables_drive_the_forward_gemms(bert_hw):
    """Every forward GEMM and data gradient of the traced model comes from the trace's table, and
    no GEMM of the workload falls back to the roofline: the weight gradients (a reduction over
    the 141 tokens), which a forward-only trace lacks, come from the base H100 file's model."""
    out, summary = bert_hw
    r = run(load_workload(BERT), load_hardware(out))
    lt = r.plan.layer
    gemms = [e for e in lt.entries if e.kind == "gemm"]
    assert all(e.source == "table" for e in gemms if e.phase == "forward")
    assert all(e.source == "table" for e in gemms if "dgrad" in e.op)
    assert [e.op for e in gemms if e.source == "roofline"] == []
    assert {e.source for e in gemms if "wgrad" in e.op} <= {"table", "model"}
    flash = [e for e in lt.entries if e.kind == "flash_attention"]
    assert [e.source for e in flash] == ["flash table", "flash table"]
    assert summary["gemm_shapes"] == 5 and summary["attention_rows"] == 1


def test_nccl_kernels_become_nccl_tests_logs(tmp_path):
    """HTA's A100 DDP trace: its all-reduces, sized by record_param_comms, as an nccl-tests log
    the cost model reads back."""
    from simsp.measure.kineto.tables import collective_tables
    from simsp.tables import read_nccl_log, write_nccl_log

    p = read_profile(DATA / "hta-a100-ddp-nccl.json.gz")
    assert p.device == "NVIDIA A100-PG509-200"
    mt = match_profile(p, load_workload(TINY))
    comms = [m for m in mt.matches if m.kind == "comm"]
    assert comms and all(m.kernel.comm is not None for m in comms if m.op == "all_reduce")
    (table,) = collective_tables(mt)
    assert (table.op, table.ranks) == ("all_reduce", 2)
    assert table.sizes_bytes[0] == 2049000 * 4  # 'In msg nelems' x float
    write_nccl_log(table, tmp_path / "all_reduce_2.log", device=p.device)
    back = read_nccl_log(tmp_path / "all_reduce_2.log")
    assert back.sizes_bytes == table.sizes_bytes
    assert back.times_s == pytest.approx(table.times_s, rel=1e-3)


def test_malformed_trace_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2")
    argv = [
        "calibrate",
        "--trace",
        str(bad),
        "--workload",
        str(BERT),
        "--out",
        str(tmp_path / "o.yaml"),
    ]
    code, _, err = _cli(argv, capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "bad.json" in err
    assert not (tmp_path / "o.yaml").exists()


def test_cpu_trace_round_trip_gemms_within_10_percent(cpu_trace, cpu_hw):
    """Record a CPU step, calibrate from it, simulate the same tiny workload: the overlay's GEMM
    rows agree within 10 % and no GEMM look-up falls to the roofline."""
    r = run(load_workload(TINY), load_hardware(cpu_hw))
    assert "roofline" not in r.to_dict()["gemm_sources"], r.to_dict()["gemm_sources"]
    cmp = compare_run(cpu_trace, TINY, cpu_hw)
    assert cmp.matching.profile.cpu
    for kind in ("gemm", "attention_gemm"):
        row = cmp.row(kind)
        print(f"round trip {kind}: real {row.real_s * 1e3:.3f} ms, sim {row.sim_s * 1e3:.3f} ms")
        assert row.real_s > 0 and abs(row.error) <= 0.10, (kind, row)
    assert {r.key for r in cmp.by_layer} == {"layer 0", "layer 1"}
    assert "CPU trace" in Path(cpu_hw).read_text()


def test_overlay_perfetto_holds_both(cpu_trace, cpu_hw, tmp_path, capsys):
    page, pf = tmp_path / "o.html", tmp_path / "o.json"
    argv = ["overlay", str(cpu_trace), str(TINY), "--hardware", str(cpu_hw), "--out", str(page)]
    code, text, err = _cli([*argv, "--perfetto", str(pf)], capsys)
    assert code == 0, err
    assert "gemm" in text
    doc = json.loads(pf.read_text())
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"}
    assert any(n.startswith("real: ") for n in names)
    assert any(n.startswith("simulated: ") for n in names)
    assert {e["pid"] for e in doc["traceEvents"] if e["ph"] == "X"} == {1, 2}
    assert doc["otherData"]["by_kind"]


def test_merging_keeps_a_side_within_the_bar_budget():
    spans = [Span(-1, "stream 7", "gemm", "g", i * 1e-6, 0.9e-6) for i in range(3 * BAR_BUDGET)]
    merged = _merged(spans, BAR_BUDGET)
    assert len(merged) <= BAR_BUDGET
    assert sum(s.dur_s for s in merged) >= sum(s.dur_s for s in spans)


def test_overlay_page_renders_both_iterations(cpu_trace, cpu_hw, tmp_path):
    from tests.browser.chromium import find_chromium, probe_page, screenshot

    binary = find_chromium()
    if binary is None:
        pytest.skip("no Chromium/Chrome binary found; `apt-get install -y chromium`")
    html = overlay_html(compare_run(cpu_trace, TINY, cpu_hw))
    found = probe_page(binary, html, tmp_path, "overlay.html", timeout_s=120)
    assert found["errors"] == [], found["errors"]
    names = found["trace_names"][0]
    assert any(n.startswith("real: ") for n in names)
    assert any(n.startswith("simulated: ") for n in names)
    assert found["drawn_bars"][0] > 0
    page = tmp_path / "plain.html"
    page.write_text(html)
    png = tmp_path / "overlay.png"
    screenshot(binary, page.resolve().as_uri(), png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 30_000, "a blank page compresses to a few kB"


@pytest.mark.parametrize(
    "name, content, words",
    [
        ("a.json", b'{"a": 1}', "must be a list"),
        ("deep.json", b"[" * 100_000 + b"]" * 100_000, "not a Chrome/Kineto trace"),
        ("nan.json", b'{"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "dur": NaN}]}', "finite"),
        (
            "line.json",
            b'{"traceEvents": [{"ph": "X", "name": "k\\nx", "ts": 1, "dur": 2}]}',
            "control",
        ),
        ("types.json", b'{"traceEvents": [{"ph": "X", "name": 5, "ts": 1, "dur": 2}]}', "string"),
        ("cut.json.gz", None, "cannot be read"),
        (
            "sep.json",
            '{"traceEvents": [{"ph": "X", "name": "k\u2028x", "ts": 1, "dur": 2}]}'.encode(),
            "control",
        ),
        ("props.json", b'{"traceEvents": [], "deviceProperties": "H100"}', "list of objects"),
        (
            "device.json",
            b'{"traceEvents": [], "deviceProperties": [{"name": "=HYPERLINK(1)"}]}',
            "formula",
        ),
        (
            "devline.json",
            b'{"traceEvents": [], "deviceProperties": [{"name": "H100\\nx"}]}',
            "control",
        ),
    ],
)
def test_a_bad_trace_is_one_input_error_before_hta(tmp_path, name, content, words):
    """Issue 32 class 4: what HTA would meet as a traceback (or read as a CPU trace, for a NaN
    duration) is refused first, in one line, without HTA installed; so are names that would
    break the tables calibrate writes from a trace (a Unicode line separator, a device name that
    is a formula or holds a newline) and device properties that are not objects."""
    import gzip

    from simsp.errors import InputError
    from simsp.measure.kineto.reader import read_profile

    path = tmp_path / name
    if content is None:
        whole = gzip.compress(b'{"traceEvents": [' + b'{"ph": "i"},' * 50_000 + b'{"ph": "i"}]}')
        content = whole[: len(whole) // 2]
    path.write_bytes(content)
    with pytest.raises(InputError) as e:
        read_profile(path)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_trace_that_inflates_past_the_bound_is_refused_as_it_is_read(tmp_path, monkeypatch):
    import gzip

    from simsp.errors import InputError
    from simsp.measure.kineto import reader, trace_file

    monkeypatch.setattr(trace_file, "MAX_TRACE_BYTES", 1 << 20)
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b" " * (4 << 20)))  # 4 MiB of spaces, a few KiB compressed
    with pytest.raises(InputError, match="more than 1 MiB"):
        reader.read_profile(path)


def test_overlay_refuses_one_file_for_both_outputs_and_an_input_as_output(tmp_path, capsys):
    """Issue 32 class 3: `overlay --out X --perfetto X` exited 0 with one output lost; `--out`
    naming the trace replaced the trace."""
    page = tmp_path / "o.html"
    argv = ["overlay", str(BERT_TRACE), str(BERT), "--out", str(page), "--perfetto", str(page)]
    assert simsp.cli.main.main(argv) == 2
    assert "is also the --out page" in capsys.readouterr().err and not page.exists()
    argv = ["overlay", str(BERT_TRACE), str(BERT), "--out", str(BERT_TRACE)]
    assert simsp.cli.main.main(argv) == 2
    assert "is an input" in capsys.readouterr().err


def test_a_table_the_trace_yields_that_breaks_a_rule_names_the_trace(tmp_path, monkeypatch):
    """Issue 32: a value derived from the trace that a hardware file may not hold (a host floor
    of 1e299 us from a duration of 1e300) is reported against the trace, not simsp's staging
    folder."""
    from simsp.errors import InputError
    from simsp.measure.kineto import calibrate as from_trace
    from simsp.measure.profiler import calibrate as placing

    def refuse(req):
        raise InputError(Path(req.gemm).parent / "host.yaml", "host_forward_us", 1e299, "is big")

    monkeypatch.setattr(placing, "calibrate", refuse)
    with pytest.raises(InputError) as e:
        from_trace.calibrate_from_trace(BERT_TRACE, BERT, tmp_path / "hw.yaml", None, "test")
    assert str(e.value).startswith(str(BERT_TRACE)) and "simsp-trace" not in str(e.value)
    assert "host.yaml: host_forward_us" in str(e.value)
