"""Link rates as a what-if (simsp.cost.network): a node's NVLink rate and its NICs scale the
measured collective tables, the bandwidth-bound part only; `--set SECTION.KEY=VALUE` and an
edited copy of a hardware file give the same answer; `simsp compare --what-if` shows it.

Expected times are computed here from the measured logs and the stated formula
t'(S) = t(S) + S / A x (measured / new - 1), A the log's best algbw (S/t), not from the model."""

import json
from pathlib import Path

import pytest
import yaml

from simsp.api import run
from simsp.cli.main import main
from simsp.cost import cost_model
from simsp.cost.network import link_scaled_s, nic_slowdown, nvlink_slowdown
from simsp.io.config import load_hardware, load_workload
from simsp.model.params import stage_params
from simsp.tables import BUSBW_FACTORS, read_nccl_log

ROOT = Path(__file__).resolve().parents[1]
H100 = ROOT / "hardware" / "dgx-h100.yaml"
CAL = ROOT / "hardware" / "calibration" / "dgx-h100"
GPT3 = str(ROOT / "workloads" / "gpt3-175b.yaml")
DP2 = {"parallel": {"dp": 2}, "training": {"global_batch": 128}}
"""gpt3-175b on 128 GPUs: tp=8 fills a node, so DP pairs and PP neighbours are on two nodes."""
SHIPPED = sorted((ROOT / "hardware").glob("*.yaml"))


def expected_s(log: Path, nbytes: float, slowdown: float) -> float:
    """The stated scaling, from the log itself: measured time plus the bandwidth-bound part
    nbytes / (best algbw) times (slowdown - 1)."""
    table = read_nccl_log(log)
    best = max(s / t for s, t in zip(table.sizes_bytes, table.times_s, strict=True))
    return table.time_s(nbytes) + nbytes / best * (slowdown - 1)


def copy_of(src: Path, tmp_path: Path, **changes) -> Path:
    """src with SECTION__KEY=value changed and its calibration paths made absolute."""
    data = yaml.safe_load(src.read_text())
    for dotted, value in changes.items():
        section, key = dotted.split("__")
        data[section][key] = value
    cal = data["calibration"]
    for k, v in cal.items():
        if k in ("gemm", "gemm_model", "gemm_fp8", "gemm_model_fp8", "flash_attention"):
            cal[k] = str(src.parent / v)
        elif k in ("nvlink", "infiniband"):
            cal[k] = [str(src.parent / p) for p in v]
    path = tmp_path / src.name
    path.write_text(yaml.safe_dump(data))
    return path


def run_json(args, capsys) -> dict:
    assert main(["run", *args, "--json"]) == 0, capsys.readouterr().err
    d = json.loads(capsys.readouterr().out)
    d.pop("configuration")
    d.pop("hardware_overrides", None)
    return d


def test_the_formula_scales_only_the_bandwidth_part():
    # 10 s measured, 100 B at a best algbw of 20 B/s: 5 s of it is bandwidth, 5 s latency
    assert link_scaled_s(10.0, 100.0, 20.0, 0.5) == 7.5
    assert link_scaled_s(10.0, 100.0, 20.0, 2.0) == 15.0


def test_doubled_nic_by_set_by_copy_and_by_nic_count_agree(tmp_path, capsys):
    base = ["--hardware", str(H100), "--dp", "2", "--global-batch", "128"]
    by_set = run_json([GPT3, *base, "--set", "network.nic_gbps=800"], capsys)
    copy = copy_of(H100, tmp_path, network__nic_gbps=800)
    by_copy = run_json([GPT3, *base[2:], "--hardware", str(copy)], capsys)
    by_nics = run_json([GPT3, *base, "--set", "network.nics_per_node=16"], capsys)
    # the copy is not the file the validation ran: its accuracy is the H100 files' pool
    assert by_copy.pop("accuracy")["scope"] == "H100"
    assert by_set.pop("accuracy")["scope"] == by_nics.pop("accuracy")["scope"] == "dgx-h100"
    # and so is the range of measured times beside it
    assert by_copy.pop("range_from").startswith("H100 ")
    assert by_set.pop("range_from") == by_nics.pop("range_from")
    assert by_set.pop("range_s") == by_nics.pop("range_s")
    by_copy.pop("range_s")
    assert by_set == by_copy == by_nics
    assert by_set != run_json([GPT3, *base], capsys)


def test_doubled_nic_moves_dp_and_pp_comm_as_stated():
    w = load_workload(GPT3, DP2)
    before, after = (run(w, load_hardware(H100, s)) for s in ((), ["network.nic_gbps=800"]))
    log = CAL / "infiniband" / "all_reduce_32.log"  # the full-node table nearest 2 x 8 ranks
    per_gpu = 8  # a cross-node group of one GPU a node runs on that GPU's share of the NICs

    def one_gpu_a_node_s(nbytes, slowdown):
        """A 2-node collective of one GPU a node (or a send): the per-NIC rate the full-node
        log gives for per_gpu x nbytes, over the all-reduce's 2(n-1)/n of that log."""
        return expected_s(log, per_gpu * nbytes, slowdown) / BUSBW_FACTORS["all_reduce"](32)

    grads = 4 * stage_params(w.model, w.parallel, 0)  # fp32 gradient all-reduce of stage 0
    m = w.model
    tied = 4 * m.padded_vocab(8) * m.hidden / 8  # word-embedding gradient, first <-> last stage
    send = 2 * m.seq_len * w.training.micro_batch * m.hidden / 8  # SP activation shard
    for r, slowdown in ((before, 1.0), (after, 0.5)):
        br = r.breakdown()
        dp = one_gpu_a_node_s(grads, slowdown) + one_gpu_a_node_s(tied, slowdown)
        assert br["dp_comm_s"] == pytest.approx(dp, rel=1e-9)
        assert r.plan.p2p_s == pytest.approx(one_gpu_a_node_s(send, slowdown), rel=1e-9)
    sends = before.breakdown()["pp_comm_s"] / before.plan.p2p_s
    assert after.breakdown()["pp_comm_s"] == pytest.approx(
        sends * one_gpu_a_node_s(send, 0.5), rel=1e-9
    )
    # a 1.4 GB gradient all-reduce is bandwidth-bound (nearly halves), a 6 MB send less so
    assert 0.50 < after.breakdown()["dp_comm_s"] / before.breakdown()["dp_comm_s"] < 0.51
    assert 0.7 < after.plan.p2p_s / before.plan.p2p_s < 0.8


def test_latency_bound_messages_keep_their_time():
    before = cost_model(load_hardware(H100)).network
    after = cost_model(load_hardware(H100, ["network.nic_gbps=800", "node.nvlink_gbps=900"]))
    for ranks, per_node in ((8, 8), (2, 1), (16, 8)):
        small = after.network.collective_s("all_reduce", 1024, ranks, per_node)
        assert small == pytest.approx(
            before.collective_s("all_reduce", 1024, ranks, per_node), 1e-3
        )


def test_doubled_nvlink_moves_tp_comm_as_stated():
    w = load_workload(GPT3)
    before, after = (run(w, load_hardware(H100, s)) for s in ((), ["node.nvlink_gbps=900"]))
    nbytes = 2 * w.model.seq_len * w.training.micro_batch * w.model.hidden  # SP gather/scatter
    logs = {
        "all-gather": CAL / "nvlink" / "all_gather_8.log",
        "reduce-scatter": CAL / "nvlink" / "reduce_scatter_8.log",
    }
    exposed_before = exposed_after = 0.0
    comm = [
        (a, b)
        for a, b in zip(before.plan.layer.entries, after.plan.layer.entries, strict=True)
        if a.kind == "comm"
    ]
    assert len(comm) == 10
    for a, b in comm:
        log = logs[a.op.split(": ")[1]]
        assert a.busy_s == pytest.approx(expected_s(log, nbytes, 1.0), rel=1e-12)
        assert b.busy_s == pytest.approx(expected_s(log, nbytes, 0.5), rel=1e-12)
        exposed = a.seconds > 0  # the rest hides behind weight-gradient GEMMs, both times
        assert (b.seconds > 0) == exposed
        exposed_before += exposed * expected_s(log, nbytes, 1.0)
        exposed_after += exposed * expected_s(log, nbytes, 0.5)
    tp_before, tp_after = (r.breakdown()["tp_comm_s"] for r in (before, after))
    assert tp_after == pytest.approx(tp_before * exposed_after / exposed_before, rel=1e-9)
    assert after.breakdown()["pp_comm_s"] == before.breakdown()["pp_comm_s"]  # NICs unchanged


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_shipped_files_price_their_tables_as_measured(path):
    hw = load_hardware(path)
    cal = hw.calibration
    assert (cal.measured_nvlink_gbps, cal.measured_nic_gbps, cal.measured_nics_per_node) == (
        hw.node.nvlink_gbps,
        hw.network.nic_gbps,
        hw.network.nics_per_node,
    )
    assert nvlink_slowdown(hw) == 1.0 and nic_slowdown(hw) == 1.0
    net = cost_model(hw).network
    for table in (*net.nvlink.values(), *net.ib.values()):
        for nbytes in (1.0, 1e5, 3.3e7, 1e11):
            assert table.time_s(nbytes) == table.table.time_s(nbytes)  # to the bit


def test_a_set_moves_the_link_not_the_measurement():
    hw = load_hardware(H100, ["node.nvlink_gbps=900", "network.nics_per_node=4"])
    assert hw.calibration.measured_nvlink_gbps == 450 and hw.calibration.measured_nics_per_node == 8
    assert nvlink_slowdown(hw) == 0.5 and nic_slowdown(hw) == 2.0
    assert hw.overrides == (("node.nvlink_gbps", 900.0), ("network.nics_per_node", 4))
    assert hw.label == "dgx-h100 [node.nvlink_gbps=900, network.nics_per_node=4]"


def test_the_run_states_its_overrides(capsys):
    args = [GPT3, "--hardware", "dgx-h100", "--set", "network.nic_gbps=800"]
    assert main(["run", *args]) == 0
    assert "on dgx-h100 [network.nic_gbps=800]:" in capsys.readouterr().out.splitlines()[0]
    assert main(["run", *args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hardware_overrides"] == {"network.nic_gbps": 800}
    assert main(["run", GPT3, "--json"]) == 0
    assert "hardware_overrides" not in json.loads(capsys.readouterr().out)


SET_ERRORS = [
    ("network.nic_speed=800", ["network.nic_speed", "unknown key", "nic_gbps"]),
    ("fabric.nic_gbps=800", ["fabric.nic_gbps", "unknown hardware section"]),
    ("calibration.gemm=x.csv", ["calibration.gemm", "not a numeric key"]),
    ("gpu.name=H200", ["gpu.name", "not a numeric key"]),
    ("memory_bound.efficiency_by_bytes=0.5", ["efficiency_by_bytes", "not a numeric key"]),
    ("network.nic_gbps=fast", ["network.nic_gbps", "'fast'", "must be a number"]),
    ("network.nic_gbps=-800", ["network.nic_gbps", "-800", "must be positive"]),
    ("network.nic_gbps=nan", ["network.nic_gbps", "must be a number"]),
    ("network.nic_gbps=1e999", ["network.nic_gbps", "finite"]),
    ("node.gpus=8.5", ["node.gpus", "8.5", "integer"]),
    ("network.nic_gbps", ["must be SECTION.KEY=VALUE"]),
    ("gpu.gemm_max_tflops=5000", ["gpu.gemm_max_tflops", "5000", "peak_tflops"]),
    ("network.nic_gbps=1e9", ["network.nic_gbps", "1000x", "8 NICs of 400 Gb/s"]),
    ("gpu.hbm_gib=1e9", ["gpu.hbm_gib", "sanity ceiling"]),
    ("node.nvlink_gbps=0.1", ["node.nvlink_gbps", "1000x", "450 GB/s"]),
]


@pytest.mark.parametrize("text,words", SET_ERRORS, ids=[t for t, _ in SET_ERRORS])
@pytest.mark.parametrize("command", ["run", "memory", "compare"])
def test_a_bad_set_is_one_line_exit_2(text, words, command, capsys):
    assert main([command, GPT3, "--hardware", "dgx-h100", "--set", text]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("simsp: error: --set: "), err
    for word in words:
        assert word in err, (word, err)


def test_every_command_taking_hardware_takes_set(capsys):
    assert main(["layer", GPT3, "--set", "node.nvlink_gbps=600", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ops"]
    assert main(["memory", GPT3, "--set", "gpu.hbm_gib=40", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["capacity_bytes"] == 40 * 2**30
    assert main(["reproduce", "--set", "network.nic_gbps=fast"]) == 2
    assert "--set: network.nic_gbps='fast'" in capsys.readouterr().err


def test_compare_what_if_rows_against_the_machines_own(capsys):
    args = ["compare", GPT3, "--hardware", "dgx-h100", "--dp", "2", "--global-batch", "128"]
    assert main([*args, "--what-if", "network.nic_gbps=200,800"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[5].startswith("validated with hardware/dgx-h100.yaml")  # one line: one file
    assert len(lines) == 6
    assert [line.split()[0:2] for line in lines[2:5]] == [
        ["dgx-h100", lines[2].split()[1]],
        ["dgx-h100", "[network.nic_gbps=200]"],
        ["dgx-h100", "[network.nic_gbps=800]"],
    ]
    assert lines[3].split()[4].startswith("+") and lines[4].split()[4].startswith("-")
    assert "-" in lines[2].split()[2]  # the measured range beside the time
    assert main([*args, "--what-if", "network.nic_gbps=800", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r.get("hardware_overrides") for r in rows] == [None, {"network.nic_gbps": 800}]
    w = load_workload(GPT3, DP2)
    direct = run(w, load_hardware(H100, ["network.nic_gbps=800"])).iteration_time_s
    assert rows[1]["iteration_time_s"] == direct
    assert main([*args, "--what-if", "network.nic_gbps"]) == 2
    assert "--what-if" in capsys.readouterr().err


def test_calibrate_with_new_logs_measures_them_on_the_files_own_link(tmp_path, capsys):
    base = copy_of(H100, tmp_path, node__nvlink_gbps=900)  # stated as measured at 450
    assert nvlink_slowdown(load_hardware(base)) == 0.5
    out = tmp_path / "mine.yaml"
    log = str(CAL / "nvlink" / "all_reduce_8.log")
    argv = ["calibrate", "--hardware", str(base), "--nvlink", log, "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().err
    hw = load_hardware(out)
    assert hw.calibration.measured_nvlink_gbps == 900 and nvlink_slowdown(hw) == 1.0
    assert hw.calibration.measured_nic_gbps == 400  # the infiniband logs were kept


def test_sweep_with_set_rows_are_another_machine(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text(
        f"workload: {GPT3}\nhardware: [{H100}]\ngpus: 128\n"
        "grid: {tp: [8], pp: [8], micro_batch: [1]}\n"
    )
    out = str(tmp_path / "rows.csv")
    argv = ["sweep", str(spec), "--out", out, "--jobs", "1", "--no-progress", "--json"]
    assert main([*argv, "--set", "network.nic_gbps=800"]) == 0, capsys.readouterr().err
    fast = json.loads(capsys.readouterr().out)
    assert main(argv) == 0  # the same CSV: the file's own row is not the --set one resumed
    own = json.loads(capsys.readouterr().out)
    assert [r["hardware"] for r in fast + own] == ["dgx-h100 [network.nic_gbps=800]", "dgx-h100"]
    w = load_workload(GPT3, {"parallel": {"dp": 2}})  # the workload's global batch of 64
    assert fast[0]["iteration_time_s"] == pytest.approx(
        run(w, load_hardware(H100, ["network.nic_gbps=800"])).iteration_time_s, rel=1e-12
    )
    assert own[0]["iteration_time_s"] > fast[0]["iteration_time_s"]


def test_a_gpu_name_is_not_required(tmp_path):
    data = yaml.safe_load(copy_of(H100, tmp_path).read_text())
    del data["gpu"]["name"]
    path = tmp_path / "anonymous.yaml"
    path.write_text(yaml.safe_dump(data))
    assert load_hardware(path).gpu.name == ""
