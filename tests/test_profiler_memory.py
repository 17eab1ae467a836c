"""`simsp profile memory` and `simsp calibrate --memory`: the element-wise curve and Megatron's
unfused cross-entropy measured on the device, into a hardware file's memory_bound section. The
measuring tests run on the CPU (torch's CPU build)."""

import itertools

import pytest
import yaml

import simsp.cli.main
from simsp.io.config import load_hardware
from simsp.measure.profiler.memory_bound import EAGER_KEYS
from tests.extras import needs
from tests.test_profiler import BASE_HW, _parser

SMALL = ["--device", "cpu", "--sizes", "6144", "98304", "--tokens", "8", "--vocab", "64"]


@pytest.fixture
def cli(monkeypatch):
    monkeypatch.setattr(simsp.cli.main, "parser", _parser)
    return simsp.cli.main.main


def test_the_unfused_loss_is_a_cross_entropy_and_its_gradient():
    """Megatron's op sequence gives torch's per-token loss and the gradient of their mean."""
    torch = needs("torch")
    from simsp.measure.profiler.memory_bound import unfused_cross_entropy

    torch.manual_seed(1)
    logits = torch.randn(16, 50, dtype=torch.bfloat16)
    target = torch.randint(0, 50, (16,))
    loss, grad = unfused_cross_entropy(torch, logits, target)
    want = torch.nn.functional.cross_entropy(logits.float(), target, reduction="none")
    assert torch.allclose(loss, want, atol=1e-5)
    x = logits.float().requires_grad_()
    torch.nn.functional.cross_entropy(x, target).backward()
    assert grad.dtype == torch.bfloat16
    assert torch.allclose(grad.float(), x.grad, atol=1e-3)


def test_memory_profile_out_file_feeds_calibrate(tmp_path, cli, capsys):
    needs("torch")
    mem, out = tmp_path / "memory.yaml", tmp_path / "new.yaml"
    assert cli(["profile", "memory", *SMALL, "--repeats", "2", "--out", str(mem)]) == 0
    text = mem.read_text()
    assert capsys.readouterr().out == text
    assert "not a GPU's" in text and "8 tokens x 64 vocabulary" in text
    values = yaml.safe_load(text)
    assert sorted(values["stream_gbps"]) == [6144, 98304]
    argv = ["calibrate", "--hardware", str(BASE_HW), "--memory", str(mem), "--out", str(out)]
    assert cli(argv) == 0
    base, hw = load_hardware(BASE_HW), load_hardware(out)
    hbm = base.gpu.hbm_gbps
    want = tuple(
        (
            0.0 if i == 0 else float(size),
            float(f"{min(1.0, values['stream_gbps'][size] / hbm):.6g}"),
        )
        for i, size in enumerate(sorted(values["stream_gbps"]))
    )
    assert hw.memory_bound.efficiency_by_bytes == want
    assert hw.memory_bound.unfused_cross_entropy_gbps == values["unfused_cross_entropy_gbps"]
    assert hw.memory_bound.layernorm_fwd_gbps == base.memory_bound.layernorm_fwd_gbps  # kept
    # the eager kernels of a torchtitan block, each direction, become the file's eager rates
    for key in EAGER_KEYS:
        assert values[key] > 0 and getattr(hw.memory_bound, key) == values[key]
    new_text = out.read_text()
    assert "measured by `simsp profile memory" in new_text.split("memory_bound:")[1]


@pytest.mark.parametrize(
    "body, key",
    [
        ("stream_gbps: {1024: -3}\n", "stream_gbps[1024]"),
        ("stream_gbps: fast\n", "stream_gbps"),
        ("stream_gbps:\n", "stream_gbps"),
        # the largest size past the A100's 2039 GB/s: the base file is another GPU's
        ("stream_gbps: {65536: 5000, 1073741824: 9000}\n", "stream_gbps[1073741824]"),
        ("unfused_cross_entropy_gbps: 0\n", "unfused_cross_entropy_gbps"),
        ("te_cross_entropy_gbps: 3\n", "te_cross_entropy_gbps"),
        ("- 1\n", "file"),
        # a rate past the A100's 2039 GB/s HBM is no measurement (hardware_rules)
        ("unfused_cross_entropy_gbps: 5000\n", "unfused_cross_entropy_gbps"),
    ],
)
def test_calibrate_refuses_a_bad_memory_file_and_writes_nothing(tmp_path, cli, capsys, body, key):
    mem, out = tmp_path / "memory.yaml", tmp_path / "new.yaml"
    mem.write_text(body)
    argv = ["calibrate", "--hardware", str(BASE_HW), "--memory", str(mem), "--out", str(out)]
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and key in err[0]
    assert not out.exists()


@pytest.mark.parametrize(
    "flag, value", [("--tokens", "0"), ("--vocab", "0"), ("--repeats", "0"), ("--sizes", "2")]
)
def test_memory_profile_refuses_nonpositive_sizes(cli, capsys, flag, value):
    needs("torch")
    argv = ["profile", "memory", "--device", "cpu", *([flag, value])]
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and flag in err[0]


def test_slow_rates_keep_their_digits():
    """A contended CPU can time an add at 0.04 GB/s: written as 0.0 it would be refused."""
    from simsp.measure.profiler.memory_bound import MemoryRates

    rates = MemoryRates(((65536, 19.93), (262144, 0.0412)), 0.0123, 1.5, 8, 64, "CPU x", "v", "d")
    values = yaml.safe_load("\n".join(rates.yaml_lines("simsp profile memory")))
    assert values["stream_gbps"] == {65536: 19.93, 262144: 0.0412}
    assert values["unfused_cross_entropy_gbps"] == 0.0123


def test_a_small_size_past_hbm_is_capped_not_refused(tmp_path, cli):
    """A small size timed at or past HBM (timer noise at a few microseconds) is held at 1; only
    the largest size's rate tells a wrong base file."""
    mem, out = tmp_path / "memory.yaml", tmp_path / "new.yaml"
    mem.write_text("stream_gbps: {65536: 2500, 1073741824: 1800}\n")
    argv = ["calibrate", "--hardware", str(BASE_HW), "--memory", str(mem), "--out", str(out)]
    assert cli(argv) == 0
    hbm = load_hardware(BASE_HW).gpu.hbm_gbps
    assert load_hardware(out).memory_bound.efficiency_by_bytes == (
        (0.0, 1.0),
        (1073741824.0, float(f"{1800 / hbm:.6g}")),
    )


def test_each_size_streams_from_memory(monkeypatch):
    """A size below the cache cycles through slices of buffers that together fill ROTATE_BYTES
    (so no call finds its operands cached); one that fills it alone uses one. 2 warmup calls and
    7 rounds of 2 make 16 calls, enough to visit all 10 slices of the first."""
    torch = needs("torch")
    from simsp.measure.profiler import memory_bound

    class Spy:
        def __init__(self):
            self.outs = set()

        def __getattr__(self, name):
            return getattr(torch, name)

        def add(self, a, b, out):
            self.outs.add(out.data_ptr())
            return torch.add(a, b, out=out)

    monkeypatch.setitem(memory_bound.ROTATE_BYTES, "cpu", 60000)
    for nbytes, buffers in ((6000, 10), (60000, 1)):
        spy = Spy()
        moved, gbps = memory_bound._add_gbps(spy, "cpu", "cpu", nbytes, 2)
        assert (moved, len(spy.outs)) == (nbytes, buffers) and gbps > 0


def test_tiny_sizes_keep_memory_bounded(monkeypatch):
    """A 6-byte add would rotate through 10**8 slices of a 512 MiB buffer: only the slices the
    timed calls use are made."""
    torch = needs("torch")
    from simsp.measure.profiler import memory_bound

    monkeypatch.setitem(memory_bound.ROTATE_BYTES, "cpu", 6 * 10**6)
    made = []
    real = itertools.cycle

    def counting(items):
        made.append(len(items))
        return real(items)

    monkeypatch.setattr(memory_bound.itertools, "cycle", counting)
    moved, gbps = memory_bound._add_gbps(torch, "cpu", "cpu", 6, 1)
    assert moved == 6 and gbps > 0
    assert made == [memory_bound.WARMUP + memory_bound.ROUNDS]


def test_a_tiny_stream_rate_is_kept_not_rounded_to_zero(tmp_path, cli):
    mem, out = tmp_path / "memory.yaml", tmp_path / "new.yaml"
    mem.write_text("stream_gbps: {65536: 0.0001, 1073741824: 1800}\n")
    argv = ["calibrate", "--hardware", str(BASE_HW), "--memory", str(mem), "--out", str(out)]
    assert cli(argv) == 0
    steps = load_hardware(out).memory_bound.efficiency_by_bytes
    assert steps[0][1] == float(f"{0.0001 / load_hardware(BASE_HW).gpu.hbm_gbps:.6g}") > 0


def test_the_eager_forms_compute_what_they_name():
    """The profiled eager forms are an RMSNorm, a rotation of each (even, odd) pair of q and k
    by its angle (complex form), and silu(a) * b."""
    torch = needs("torch")
    from simsp.measure.profiler.memory_bound import _rmsnorm, _rope

    torch.manual_seed(0)
    x, w = torch.randn(4, 8), torch.rand(8)
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    assert torch.allclose(_rmsnorm(torch, x, w), want, atol=1e-5)
    q, k = torch.randn(3, 2, 4), torch.randn(3, 1, 4)
    angles = torch.rand(3, 1, 2)
    rq, rk = _rope(torch, q, k, torch.polar(torch.ones_like(angles), angles))
    c, s = torch.cos(angles), torch.sin(angles)
    even, odd = q[..., 0::2], q[..., 1::2]
    assert torch.allclose(rq[..., 0::2], even * c - odd * s, atol=1e-6)
    assert torch.allclose(rq[..., 1::2], even * s + odd * c, atol=1e-6)
    assert rk.shape == k.shape
