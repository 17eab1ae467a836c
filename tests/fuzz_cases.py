"""Generated bad and odd inputs to `simsp run`, `memory`, `sweep` and `calibrate` (issue 18).

Every case is an input a user could give by mistake, and every one must end the same way: exit
code 2 and one line naming the file, key, value and rule, within the fuzz limits, with no file
left behind. Cases are plain data (argv with `{d}` for the case's own folder, and the files to
put there), generated deterministically, so a failure names a case that can be re-run by hand.

Classes of input (issue 32's trust classes in trust_cases): file bytes (binary, non-UTF-8,
empty, huge, alias bombs, deep nesting),
structure (a section as a list, string or number), every workload, hardware and sweep key given
every kind of wrong value (NaN, infinity, integers too big for a float, negatives, the wrong
type), physical ranges (efficiencies above 1, achieved rates above peak, zero bandwidths),
command-line flags, output paths that cannot be written, calibration tables and logs that
cannot be true, and unbounded reads (/dev/zero, a FIFO).
"""

import dataclasses
import random
from dataclasses import dataclass
from pathlib import Path

import yaml

from simsp.spec.hardware import CalibrationSpec, GpuSpec, MemoryBoundSpec, NetworkSpec, NodeSpec
from simsp.spec.knobs import KNOBS

ROOT = Path(__file__).resolve().parents[1]
HW = ROOT / "hardware" / "dgx-a100-80gb.yaml"
CAL = ROOT / "hardware" / "calibration" / "dgx-a100-80gb"
SEED = 18


@dataclass(frozen=True)
class Case:
    """One bad input: a command line and the files it reads."""

    name: str
    argv: tuple[str, ...]
    """`{d}` stands for the case's folder."""
    files: tuple[tuple[str, bytes], ...] = ()
    """(name, bytes) written into the case's folder first; they must be unchanged afterwards."""

    @property
    def command(self) -> str:
        return self.argv[0]


# ---------------------------------------------------------------------------- base inputs
def _workload() -> dict:
    """A small valid workload (the 22B, one pipeline stage, 4 sequences): fast when it runs."""
    return {
        "name": "fuzz",
        "model": {"layers": 8, "hidden": 1024, "heads": 16, "seq_len": 512, "vocab": 8192},
        "training": {"global_batch": 8, "micro_batch": 1},
        "parallel": {
            "tp": 2,
            "pp": 2,
            "dp": 1,
            "sequence_parallel": True,
            "recompute": "selective",
            "schedule": "1f1b",
        },
    }


def _hardware() -> dict:
    """The paper's A100 file with its calibration paths made absolute."""
    data = yaml.safe_load(HW.read_text())
    cal = data["calibration"]
    for key in ("gemm", "gemm_model", "flash_attention"):
        cal[key] = str(HW.parent / cal[key])
    for key in ("nvlink", "infiniband"):
        cal[key] = [str(HW.parent / p) for p in cal[key]]
    return data


def _dump(data) -> bytes:
    return yaml.safe_dump(data, sort_keys=False).encode()


def _with(data: dict, dotted: str, value) -> dict:
    """A deep copy of data with one dotted key set (a missing section is created)."""
    out = yaml.safe_load(yaml.safe_dump(data))
    *path, last = dotted.split(".")
    node = out
    for key in path:
        node = node.setdefault(key, {})
    node[last] = value
    return out


# ---------------------------------------------------------------------------- bad values
BIG = 10**400
"""An integer too big for a float."""
NUMBER_BAD = (-1, -0.5, float("nan"), float("inf"), float("-inf"), BIG, -BIG, "abc", True, [1])
"""Wrong for every number key (0 is left out: some keys allow it)."""
INT_BAD = (*NUMBER_BAD, 1.5, 2**70, {"a": 1}, None, "")
FLOAT_BAD = (*NUMBER_BAD, {"a": 1}, None, 1e308 * 10)
BOOL_BAD = ("yes", 1, 0, float("nan"), [], None, "maybe")
CHOICE_BAD = ("bogus", 1, [], float("nan"), None, "", "x" * 5000)
SECTION_BAD = ([], [1, 2], "text", 3, None, True, {"nested": {"deeper": [1, 2, 3]}})


def _bad_values(kind, choices) -> tuple:
    if kind is bool:
        return BOOL_BAD
    if kind is int:
        return INT_BAD
    if kind is float:
        return FLOAT_BAD
    return CHOICE_BAD if choices else (1, [], None, float("nan"), "x" * 5000, "1,2,x")


# ---------------------------------------------------------------------------- file bytes
def alias_bomb(levels: int = 9, width: int = 9) -> bytes:
    """The billion-laughs YAML: each anchor a list of `width` of the one before."""
    lines = ["a0: &a0 [lol]"]
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(width))}]")
    lines.append(f"model: *a{levels}")
    return ("\n".join(lines) + "\n").encode()


def deep_nesting(depth: int = 50_000, kind: str = "[") -> bytes:
    closing = {"[": "]", "{": "}"}[kind]
    inner = "1" if kind == "[" else "a: 1"
    return b"model: " + (kind * depth + inner + closing * depth).encode() + b"\n"


def file_bytes() -> list[tuple[str, bytes]]:
    """Whole files that are not a workload (or hardware file, or spec) at all."""
    rng = random.Random(SEED)
    good = _dump(_workload())
    out = [
        ("empty", b""),
        ("whitespace", b"   \n\n\t\n"),
        ("null", b"null\n"),
        ("list", b"- 1\n- 2\n"),
        ("scalar", b"just a string\n"),
        ("number", b"42\n"),
        ("binary-zeros", b"\x00" * 4096),
        ("latin-1", "name: caf\xe9\n".encode("latin-1")),
        ("utf-16", good.decode().encode("utf-16")),
        ("bad-utf8-mid", good[:40] + b"\xff\xfe\xfa" + good[40:]),
        ("bom-then-junk", b"\xef\xbb\xbf\x00\x01\x02"),
        ("tab-indent", b"model:\n\tlayers: 8\n"),
        ("unclosed-flow", b"model: {layers: 8, hidden: [1, 2\n"),
        ("duplicate-anchor-ref", b"model: *nowhere\n"),
        ("python-tag", b"model: !!python/object/apply:os.system ['true']\n"),
        ("binary-tag", b"model: !!binary AAAA\n"),
        ("set-tag", b"model: !!set {a, b}\n"),
        ("timestamp", b"model: 2024-01-01\n"),
        ("alias-bomb", alias_bomb()),
        ("alias-bomb-small", alias_bomb(5, 5)),
        ("alias-bomb-name", alias_bomb().replace(b"model: *a9", b"name: *a9")),
        ("deep-list", deep_nesting(50_000, "[")),
        ("deep-map", deep_nesting(20_000, "{")),
        ("deep-block", b"".join(b"  " * i + b"k:\n" for i in range(3000)) + b"  " * 3000 + b"1\n"),
        ("huge-line", b"name: " + b"x" * (3 << 20) + b"\n"),
        ("huge-file", b"# " + b"y" * (33 << 20) + b"\n"),
        ("many-keys", b"".join(b"k%d: %d\n" % (i, i) for i in range(20000))),
        ("huge-int-key", b"model: {layers: " + b"9" * 5000 + b"}\n"),
    ]
    for i in range(24):  # random binary, some starting like YAML
        n = rng.choice((16, 300, 5000))
        junk = bytes(rng.randrange(256) for _ in range(n))
        out.append((f"random-{i}", (good[: rng.randrange(len(good))] if i % 2 else b"") + junk))
    for i in range(24):  # a valid file cut short or with one byte flipped
        cut = rng.randrange(1, len(good))
        flipped = bytearray(good)
        flipped[rng.randrange(len(good))] = rng.choice(b"{}[]:&*!|>%@`\x00\xff")
        out.append((f"cut-{i}", good[:cut] + b"{"))
        out.append((f"flip-{i}", bytes(flipped)))
    return out


# ---------------------------------------------------------------------------- run / memory
def workload_cases() -> list[Case]:
    """Bad workload files for `run` and `memory`: bytes, sections, every key, every bad value."""
    cases, base = [], _workload()
    for label, data in file_bytes():
        for cmd in ("run", "memory"):
            cases.append(Case(f"{cmd}/file/{label}", (cmd, "{d}/w.yaml"), (("w.yaml", data),)))
    for section in ("model", "training", "parallel"):
        for value in SECTION_BAD:
            if section == "parallel" and value is None:
                continue  # `parallel:` left empty: every default, valid
            data = _dump({**base, section: value})
            cases.append(
                Case(
                    f"run/section/{section}={value!r:.30}",
                    ("run", "{d}/w.yaml"),
                    (("w.yaml", data),),
                )
            )
    for k in KNOBS:
        for value in _bad_values(k.kind, k.choices):
            if k.name == "bias" and value in (1, 0):
                continue  # bias: true/false read as 1/0 are valid
            data = _dump(_with(base, f"{k.section}.{k.name}", value))
            for cmd in ("run", "memory"):
                cases.append(
                    Case(
                        f"{cmd}/key/{k.section}.{k.name}={value!r:.30}",
                        (cmd, "{d}/w.yaml"),
                        (("w.yaml", data),),
                    )
                )
    for extra in ("name", "optimiser", "model.hiden", "parallel.tensor", "training.lr"):
        value = 5 if extra == "name" else 1
        cases.append(
            Case(
                f"run/unknown/{extra}",
                ("run", "{d}/w.yaml"),
                (("w.yaml", _dump(_with(base, extra, value))),),
            )
        )
    return cases


def _flag_values(kind) -> tuple[str, ...]:
    if kind is int:
        return ("nan", "inf", "-1", "1.5", "1e400", "9" * 400, "", "x", "0x10")
    if kind is float:
        return ("nan", "inf", "-inf", "-1", "1e400", "x", "")
    return ("bogus", "")


def flag_cases() -> list[Case]:
    """Bad command-line values for the workload flags, and unreadable workload paths."""
    files = (("w.yaml", _dump(_workload())),)
    cases = []
    for k in KNOBS:
        if k.kind is bool:
            continue
        flag = "--" + k.short.replace("_", "-")
        for v in _flag_values(k.kind):
            if k.kind is str and not k.choices and v == "bogus":
                continue
            cases.append(Case(f"run/flag/{flag}={v:.20}", ("run", "{d}/w.yaml", flag, v), files))
    cases += [
        Case("run/flag/tp-huge", ("run", "{d}/w.yaml", "--tp", str(2**62)), files),
        Case(
            "run/flag/global-batch-huge", ("run", "{d}/w.yaml", "--global-batch", "9" * 30), files
        ),
        Case("run/flag/micro-huge", ("run", "{d}/w.yaml", "--micro-batch", str(2**60)), files),
        Case("run/flag/set-bogus", ("run", "{d}/w.yaml", "--set", "gpu.peak=1"), files),
        Case("run/path/missing", ("run", "{d}/nowhere.yaml")),
        Case("run/path/folder", ("run", "{d}")),
        Case("run/path/dev-zero", ("run", "/dev/zero")),
        Case("memory/path/dev-zero", ("memory", "/dev/zero")),
        Case("run/path/dev-null", ("run", "/dev/null")),
        Case("run/path/fifo", ("run", "{d}/fifo.yaml")),  # the runner makes the FIFO
        Case("run/hardware/dev-zero", ("run", "{d}/w.yaml", "--hardware", "/dev/zero"), files),
        Case("run/hardware/fifo", ("run", "{d}/w.yaml", "--hardware", "{d}/fifo.yaml"), files),
        Case("run/hardware/no-such-name", ("run", "{d}/w.yaml", "--hardware", "dgx-z900"), files),
        Case("run/model/dev-zero", ("run", "{d}/w.yaml", "--model", "/dev/zero"), files),
        Case(
            "run/model/binary",
            ("run", "{d}/w.yaml", "--model", "{d}/c.json"),
            files + (("c.json", b"\xff\x00" * 100),),
        ),
        Case(
            "run/model/json-list",
            ("run", "{d}/w.yaml", "--model", "{d}/c.json"),
            files + (("c.json", b"[1, 2]"),),
        ),
        Case(
            "run/model/json-nan",
            ("run", "{d}/w.yaml", "--model", "{d}/c.json"),
            files + (("c.json", b'{"hidden_size": NaN, "num_hidden_layers": 2}'),),
        ),
        Case(
            "run/model/json-deep",
            ("run", "{d}/w.yaml", "--model", "{d}/c.json"),
            files + (("c.json", b"[" * 100_000 + b"]" * 100_000),),
        ),
        Case(
            "run/model/json-bigint",
            ("run", "{d}/w.yaml", "--model", "{d}/c.json"),
            files + (("c.json", b'{"hidden_size": 1' + b"0" * 5000 + b"}"),),
        ),
    ]
    return cases


def output_cases() -> list[Case]:
    """`run --timeline/--trace` to paths that cannot be written: nothing may be left."""
    files = (("w.yaml", _dump(_workload())),)
    cases = []
    for flag in ("--timeline", "--trace"):
        for path in ("{d}/nodir/t.html", "{d}/w.yaml/t.html", "/proc/t.html", "{d}"):
            cases.append(Case(f"run/out{flag}={path}", ("run", "{d}/w.yaml", flag, path), files))
    # folder outputs that are a file, missing a parent, or under a file: refused before the work
    for path in ("{d}/w.yaml", "{d}/nodir/out", "{d}/w.yaml/out"):
        cases.append(Case(f"reproduce/out={path}", ("reproduce", "--out", path), files))
        cases.append(
            Case(
                f"validate/out={path}",
                ("validate", "--set", "paper-table4", "--out", path),
                files,
            )
        )
    # keys a terminal would run: escape sequences, newlines, a bell, megabytes
    for key in ("gpu.\x1b[2J\x1b[31mx", "gpu.a\nb", "\x07\x1b]0;title\x07", "k" * 200_000):
        key = key.encode().decode("unicode_escape")
        cases.append(
            Case(f"run/set-key={key[:12]!r}", ("run", "{d}/w.yaml", "--set", key + "=1"), files)
        )
    return cases


# ---------------------------------------------------------------------------- hardware
HW_SECTIONS = (
    ("gpu", GpuSpec),
    ("node", NodeSpec),
    ("network", NetworkSpec),
    ("memory_bound", MemoryBoundSpec),
    ("calibration", CalibrationSpec),
)

RANGE_CASES = (
    ("gpu.gemm_max_tflops", 400.0, "above peak_tflops"),
    ("memory_bound.efficiency_by_bytes", {0: 0.3, 1e6: 1.5}, "efficiency above 1"),
    ("memory_bound.efficiency_by_bytes", {0: 0.0, 1e6: 0.5}, "efficiency 0"),
    ("memory_bound.efficiency_by_bytes", {0: float("nan")}, "efficiency NaN"),
    ("memory_bound.efficiency_by_bytes", {float("inf"): 0.5}, "threshold inf"),
    ("memory_bound.efficiency_by_bytes", "fast", "a string"),
    ("memory_bound.efficiency_by_bytes", [[1, 2, 3]], "a triple"),
    ("memory_bound.efficiency_by_bytes", {}, "empty"),
    ("memory_bound.layernorm_fwd_gbps", 5000.0, "above hbm_gbps"),
    ("memory_bound.layernorm_bwd_gbps", 1e9, "above hbm_gbps"),
    ("calibration.gemm_fallback_efficiency", {0: 1.2}, "efficiency above 1"),
    ("calibration.gemm_fallback_efficiency", {0: -0.1}, "negative efficiency"),
    ("calibration.collective_sm_share", 1.0, "all SMs"),
    ("calibration.collective_sm_share", 3.0, "share above 1"),
    ("calibration.kernel_launch_us", 1e12, "a launch of 11 days"),
    ("calibration.host_forward_us", 1e15, "a host floor of 30 years"),
    ("gpu.hbm_gib", 1e15, "a petabyte of HBM"),
    ("gpu.peak_tflops", 1e30, "peak far beyond physics"),
    ("node.gpus", 2**40, "a trillion GPUs in a node"),
    ("network.nics_per_node", 10**9, "a billion NICs"),
    ("calibration.gemm", "/dev/zero", "GEMM table from /dev/zero"),
    ("calibration.gemm", str(HW), "GEMM table that is YAML"),
    ("calibration.nvlink", ["/dev/null"], "an empty nccl log"),
    ("calibration.nvlink", [str(HW)], "a YAML file as nccl log"),
    ("calibration.nvlink", ["/nowhere/*.log"], "a glob matching nothing"),
    ("calibration.flash_attention", str(CAL / "gemm.csv"), "a GEMM table as attention"),
)


def hardware_cases() -> list[Case]:
    """Bad hardware files for `run`: bytes, sections, every key, every bad value, ranges."""
    base, cases = _hardware(), []
    work = ("w.yaml", _dump(_workload()))

    def case(name, data):
        body = data if isinstance(data, bytes) else _dump(data)
        return Case(
            f"run/hw/{name}",
            ("run", "{d}/w.yaml", "--hardware", "{d}/hw.yaml"),
            (work, ("hw.yaml", body)),
        )

    for label, data in file_bytes()[:30]:
        cases.append(case(f"file/{label}", data))
    for section, cls in HW_SECTIONS:
        for value in SECTION_BAD:
            if section == "calibration" and value is None:
                continue  # `calibration:` left empty means none: valid
            cases.append(case(f"section/{section}={value!r:.30}", {**base, section: value}))
        for f in dataclasses.fields(cls):
            if f.type in (str, tuple[str, ...]):
                values = (5, [], {"a": 1}, float("nan")) if section == "calibration" else (5, [])
            elif f.type in (int, float):
                values = FLOAT_BAD if f.type is float else INT_BAD
            else:
                values = ("x", [1], {"a": "b"}, {-1: 0.5}, {0: float("inf")}, 7)
            for value in values:
                cases.append(
                    case(
                        f"key/{section}.{f.name}={value!r:.30}",
                        _with(base, f"{section}.{f.name}", value),
                    )
                )
    for dotted, value, why in RANGE_CASES:
        cases.append(case(f"range/{dotted}: {why}", _with(base, dotted, value)))
    for section, _ in HW_SECTIONS[:4]:
        cut = {k: v for k, v in base.items() if k != section}
        cases.append(case(f"missing/{section}", cut))
    return cases


# ---------------------------------------------------------------------------- sweep
def _spec() -> dict:
    return {
        "workload": "w.yaml",
        "hardware": [str(HW)],
        "gpus": 8,
        "grid": {"tp": [1, 2], "pp": [1, 2]},
    }


def sweep_cases() -> list[Case]:
    """Bad sweep specs, grids, outputs and flags."""
    work = ("w.yaml", _dump(_workload()))
    base, cases = _spec(), []

    def case(name, data, *flags, extra=()):
        body = data if isinstance(data, bytes) else _dump(data)
        argv = ("sweep", "{d}/s.yaml", "--no-progress", "--jobs", "1", *flags)
        return Case(f"sweep/{name}", argv, (work, ("s.yaml", body), *extra))

    for label, data in file_bytes()[:40]:
        cases.append(case(f"file/{label}", data))
    for key in ("workload", "hardware", "gpus", "grid", "keep", "name"):
        for value in (*NUMBER_BAD, None, [], {"a": 1}, "nowhere.yaml"):
            if key == "name" and isinstance(value, str):
                continue
            if key == "hardware" and value is None:
                continue  # no hardware: the default file
            if key == "grid" and value in (None, []):
                continue  # an empty grid: the workload as it is
            cases.append(case(f"key/{key}={value!r:.30}", _with(base, key, value)))
    cases.append(case("key/unknown", {**base, "grids": {}}))
    for k in KNOBS:
        if k.name == "dp":
            continue
        for value in _bad_values(k.kind, k.choices)[:6]:
            if k.name == "bias" and value in (1, 0):
                continue
            if k.kind is str and not k.choices and value in (None, [], "1,2,x"):
                continue
            grid = {"tp": [1, 2], k.short: [value]}
            cases.append(case(f"grid/{k.short}={value!r:.30}", _with(base, "grid", grid)))
    huge = {k.short: list(range(1, 65)) for k in KNOBS if k.kind is int and k.name != "dp"}
    cases += [
        case("grid/huge", _with(base, "grid", huge)),
        case("grid/no-valid", _with(base, "grid", {"tp": [3], "pp": [3]})),
        case("grid/empty-list", _with(base, "grid", {"tp": []})),
        case("grid/sp-twice", _with(base, "grid", {"sp": [True], "sequence_parallel": [False]})),
        case("out/nodir", base, "--out", "{d}/nodir/o.csv"),
        case("out/suffix", base, "--out", "{d}/o.txt"),
        case("out/folder", base, "--out", "{d}"),
        case("out/foreign", base, "--out", "{d}/o.csv", extra=(("o.csv", b"a,b,c\n1,2,3\n"),)),
        case("out/foreign-partial", base, "--out", "{d}/o.csv", extra=(("o.csv", b"a,b,c\n1,2"),)),
        case("out/binary", base, "--out", "{d}/o.csv", extra=(("o.csv", b"\xff\xfe\x00\x01"),)),
        case(
            "out/parquet-junk",
            base,
            "--out",
            "{d}/o.parquet",
            extra=(("o.parquet", b"not parquet"),),
        ),
        case("pareto/nodir", base, "--pareto", "{d}/nodir/p.html"),
        case("pareto/suffix", base, "--pareto", "{d}/p.png"),
        case("jobs/zero", base, "--jobs", "0"),
        case("jobs/negative", base, "--jobs", "-3"),
        case("keep/nan", base, "--keep", "nan"),
        case("keep/two", base, "--keep", "2"),
        case("keep/zero", base, "--keep", "0"),
        case("top/negative", base, "--top", "-1"),
        case("executor/bogus", base, "--executor", "ssh://x"),
        Case("sweep/path/dev-zero", ("sweep", "/dev/zero")),
        Case("sweep/path/fifo", ("sweep", "{d}/fifo.yaml")),
        Case("sweep/path/missing", ("sweep", "{d}/none.yaml")),
    ]
    return cases


# ---------------------------------------------------------------------------- calibrate
GEMM_HEAD = b"# device: fuzz\n# dtype: bf16\nm,n,k,batch,layout,tflops\n"
NCCL_GOOD = (CAL / "nvlink").glob("*")


def _gemm_rows(*rows: str) -> bytes:
    return GEMM_HEAD + "".join(r + "\n" for r in rows).encode()


def calibrate_cases() -> list[Case]:
    """Bad measured files for `calibrate`: tables faster than the GPU, NaN, binary, logs."""
    cases = []

    def case(name, option, data, *more):
        argv = (
            "calibrate",
            "--hardware",
            str(HW),
            option,
            "{d}/m.in",
            "--out",
            "{d}/new.yaml",
            *more,
        )
        return Case(f"calibrate/{name}", argv, (("m.in", data),))

    gemm_rows = {
        "faster-than-peak": "4096,4096,4096,1,TN,400.0",
        "nan": "4096,4096,4096,1,TN,nan",
        "inf": "4096,4096,4096,1,TN,inf",
        "negative": "4096,4096,4096,1,TN,-5",
        "zero": "4096,4096,4096,1,TN,0",
        "huge-m": f"{10**400},4096,4096,1,TN,100",
        "float-m": "4096.5,4096,4096,1,TN,100",
        "layout": "4096,4096,4096,1,XX,100",
        "short-row": "4096,4096",
        "long-row": "4096,4096,4096,1,TN,100,7,8",
        "text": "a,b,c,d,e,f",
        "sci-huge": "4096,4096,4096,1,TN,1e400",
    }
    for label, row in gemm_rows.items():
        cases.append(case(f"gemm/{label}", "--gemm", _gemm_rows("1024,1024,1024,1,TN,100", row)))
        cases.append(case(f"gemm-model/{label}", "--gemm-model", _gemm_rows(row)))
    for label, data in file_bytes()[:30]:
        cases.append(case(f"gemm/file/{label}", "--gemm", data))
        cases.append(case(f"nvlink/file/{label}", "--nvlink", data))
        cases.append(case(f"host/file/{label}", "--host", data))
        cases.append(case(f"memory/file/{label}", "--memory", data))
    att_head = b"gpu,kernel,head_dim,seq_len,causal,direction,tflops,source\n"
    for label, row in {
        "faster-than-peak": b"A100,fa2,128,2048,true,fwd,900,x",
        "nan": b"A100,fa2,128,2048,true,fwd,nan,x",
        "negative": b"A100,fa2,128,2048,true,fwd,-1,x",
        "bad-causal": b"A100,fa2,128,2048,maybe,fwd,100,x",
        "bad-direction": b"A100,fa2,128,2048,true,up,100,x",
    }.items():
        cases.append(case(f"attention/{label}", "--attention", att_head + row + b"\n"))
    log = next(iter(sorted(NCCL_GOOD))).read_bytes()
    lines = log.splitlines()
    for label, data in {
        "nan-time": b"\n".join(lines[:2] + [lines[2].replace(b"53430", b"nan")] + lines[3:]),
        "negative-time": b"\n".join(
            lines[:2] + [lines[2].replace(b"53430", b"-53430")] + lines[3:]
        ),
        "zero-time": b"\n".join(lines[:2] + [lines[2].replace(b"53430", b"0")] + lines[3:]),
        "header-only": lines[0] + b"\n",
        "truncated": log[: len(log) // 3] + b"\xff",
    }.items():
        cases.append(case(f"nvlink/{label}", "--nvlink", data))
    for label, data in {
        "unknown-key": b"host_sideways_us: 3\n",
        "nan": b"host_forward_us: .nan\n",
        "inf": b"host_forward_us: .inf\n",
        "negative": b"host_forward_us: -3\n",
        "string": b"host_forward_us: fast\n",
        "list": b"- host_forward_us\n",
        "huge": b"host_forward_us: 1" + b"0" * 400 + b"\n",
    }.items():
        cases.append(case(f"host/{label}", "--host", data))
        cases.append(
            case(
                f"optimizer/{label}", "--optimizer", data.replace(b"host_forward_us", b"adam_gbps")
            )
        )
        loss = data.replace(b"host_forward_us", b"unfused_cross_entropy_gbps")
        cases.append(case(f"memory/{label}", "--memory", loss))
    for label, data in {
        "stream-empty": b"stream_gbps:\n",
        "stream-list": b"stream_gbps: [1, 2]\n",
        "stream-nan": b"stream_gbps: {65536: .nan}\n",
        "stream-zero-size": b"stream_gbps: {0: 100}\n",
        "stream-text-size": b"stream_gbps: {big: 100}\n",
        "stream-over-hbm": b"stream_gbps: {1073741824: 99999}\n",
        "loss-over-hbm": b"unfused_cross_entropy_gbps: 99999\n",
    }.items():
        cases.append(case(f"memory/{label}", "--memory", data))
    good = (CAL / "gemm.csv").read_bytes()
    cases += [
        case("later-failure/workload", "--gemm", good, "--workload", "{d}/none.yaml"),
        case("later-failure/nvlink", "--gemm", good, "--nvlink", "/dev/zero"),
        case("out/nodir-file", "--gemm", good, "--out", "/proc/nope/new.yaml"),
        case("out/is-folder", "--gemm", good, "--out", "{d}"),
        Case(
            "calibrate/base/dev-zero",
            ("calibrate", "--hardware", "/dev/zero", "--out", "{d}/new.yaml"),
        ),
        Case(
            "calibrate/base/binary",
            ("calibrate", "--hardware", "{d}/b.yaml", "--out", "{d}/new.yaml"),
            (("b.yaml", b"\xff" * 64),),
        ),
        case("gemm/dev-zero", "--gemm", b"", "--gemm", "/dev/zero"),
        case("gemm/fifo", "--gemm", b"", "--gemm", "{d}/fifo.yaml"),
    ]
    return cases


# ---------------------------------------------------------------------------- issue 32
def _trace(events: list, **meta) -> bytes:
    import json

    return json.dumps({"traceEvents": events, **meta}).encode()


def trust_cases() -> list[Case]:
    """Issue 32's classes: outputs over inputs, formulas, traces that break what is written
    from them, typed text a terminal would run, and bounds on what an input may ask for."""
    w = _dump(_workload())
    cases = []
    # an output may never be an input: the pareto page over the spec's workload, calibrate's
    # new file over the table it reads
    spec = _dump({"workload": "w.html", "hardware": [str(HW)], "gpus": 4})
    cases.append(
        Case(
            "sweep/pareto-over-workload",
            ("sweep", "{d}/s.yaml", "--pareto", "{d}/w.html", "--no-progress"),
            (("w.html", w), ("s.yaml", spec)),
        )
    )
    gemm = (CAL / "gemm.csv").read_bytes()
    argv = ("calibrate", "--hardware", str(HW), "--gemm", "{d}/g.csv", "--out", "{d}/g.csv")
    cases.append(Case("calibrate/out-is-gemm", argv, (("g.csv", gemm),)))
    # names a spreadsheet would run
    argv = ("calibrate", "--hardware", str(HW), "--name", "=HYPERLINK(1)", "--out", "{d}/n.yaml")
    cases.append(Case("calibrate/name-formula", argv))
    for name in ("=HYPERLINK(1)", "+1+cmd", "@SUM(1)", "-2+3"):
        files = (("w.yaml", _dump({**_workload(), "name": name})),)
        cases.append(Case(f"run/name={name}", ("run", "{d}/w.yaml"), files))
    # traces whose names would break the tables calibrate writes, or HTA itself
    kernel = {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}
    traces = {
        "device-props-string": _trace([kernel], deviceProperties="H100"),
        "device-formula": _trace([kernel], deviceProperties=[{"name": "=HYPERLINK(1)"}]),
        "device-newline": _trace([kernel], deviceProperties=[{"name": "H100\nx"}]),
        "kernel-line-separator": _trace([{**kernel, "name": "k\u2028x"}]),
        "kernel-dur-nan": _trace([{**kernel, "dur": float("nan")}]),
        "deep": b"[" * 100_000 + b"]" * 100_000,
    }
    for label, data in traces.items():
        files = (("t.json", data), ("w.yaml", w))
        cases.append(
            Case(
                f"calibrate/trace/{label}",
                (
                    "calibrate",
                    "--trace",
                    "{d}/t.json",
                    "--workload",
                    "{d}/w.yaml",
                    "--hardware",
                    str(HW),
                    "--out",
                    "{d}/new.yaml",
                ),
                files,
            )
        )
    # an output path holding a file simsp did not write: refused, the file kept as it was
    mine = b"my notes, not an output of simsp\n"
    for label, flag, name in (
        ("timeline", "--timeline", "t.html"),
        ("trace", "--trace", "t.json"),
    ):
        files = (("w.yaml", w), (name, mine))
        cases.append(
            Case(f"run/{label}-over-foreign", ("run", "{d}/w.yaml", flag, f"{{d}}/{name}"), files)
        )
    plan = ("plan", "{d}/w.yaml", "--gpus", "2", "--hardware", str(HW), "--out", "{d}/p.csv")
    cases.append(Case("plan/out-over-foreign", plan, (("w.yaml", w), ("p.csv", b"a,b\n1,2\n"))))
    argv = ("validate", "--set", "paper-table4", "--out", "{d}/report")
    cases.append(Case("validate/out-over-foreign", argv, (("report/errors.html", mine),)))
    for kind in ("host", "optimizer", "memory"):  # refused before anything is measured
        argv = ("profile", kind, "--device", "cpu", "--out", "{d}/lines.yaml")
        cases.append(Case(f"profile/{kind}-over-foreign", argv, (("lines.yaml", mine),)))
    # work past its limit: refused up front with the estimate, no output left
    grid = {"tp": [1, 2], "pp": [1, 2], "micro_batch": [1, 2]}
    spec = _dump({"workload": "w.yaml", "hardware": [str(HW)], "gpus": 4, "grid": grid})
    argv = ("sweep", "{d}/s.yaml", "--out", "{d}/rows.csv", "--max-seconds", "1e-6")
    cases.append(Case("sweep/past-max-seconds", argv, (("w.yaml", w), ("s.yaml", spec))))
    runs = "layers,hidden,heads,seq_len,vocab,global_batch,micro_batch,iteration_s\n"
    runs += "2,64,4,128,256,8,1,1.0\n2,64,4,128,256,8,1,1.1\n"
    argv = ("calibrate", "--runs", "{d}/r.csv", "--hardware", str(HW), "--out", "{d}/f.yaml")
    argv += ("--folds", "2", "--max-seconds", "1e-6")
    cases.append(Case("calibrate/runs-past-max-seconds", argv, (("r.csv", runs.encode()),)))
    # typed text: an escape in an unknown flag, a 100,000-character choice, a huge pool
    files = (("w.yaml", w),)
    cases.append(Case("run/flag-escape", ("run", "{d}/w.yaml", "--\x1b[31mfoo"), files))
    cases.append(Case("validate/set-100k", ("validate", "--set", "a" * 100_000)))
    cases.append(Case("validate/workers-1e6", ("validate", "--workers", "1000000")))
    # bounds: a billion layers
    deep = {**_workload(), "model": {**_workload()["model"], "layers": 10**9}}
    cases.append(Case("run/layers-1e9", ("run", "{d}/w.yaml"), (("w.yaml", _dump(deep)),)))
    return cases


def all_cases() -> list[Case]:
    """Every generated case, in a fixed order."""
    return (
        workload_cases()
        + flag_cases()
        + output_cases()
        + hardware_cases()
        + sweep_cases()
        + calibrate_cases()
        + trust_cases()
    )
