"""The argument parsers of `simsp profile ...` and `simsp calibrate`, one function a
subcommand; `register(sub)` adds them to simsp's subparsers. The commands they run are in
`profile.py` (importing either needs no torch)."""

from simsp.cli.arguments import add_workload_args
from simsp.cli.profile import (
    cmd_calibrate,
    cmd_profile_attention,
    cmd_profile_collectives,
    cmd_profile_gemm,
    cmd_profile_host,
    cmd_profile_memory,
    cmd_profile_optimizer,
)
from simsp.measure.fit_work import DEFAULT_MAX_SECONDS as FIT_MAX_SECONDS

PROFILE_HELP = (
    "measure GEMMs, fused attention, collectives, the host floor, the Adam update or the "
    "element-wise memory rates with torch -> calibration files"
)
GEMM_HELP = "time every GEMM shape the cost model needs for a workload -> GemmTable CSV"
ATTENTION_HELP = (
    "time scaled_dot_product_attention forward and backward for a workload's FlashAttention shapes "
    "-> FlashAttention CSV"
)
HOST_HELP = (
    "time the host (framework) work of one layer's passes -> hardware YAML calibration lines"
)
OPTIMIZER_HELP = (
    "time a fused Adam update over a rank's parameters -> hardware YAML calibration line"
)
MEMORY_HELP = (
    "time a bf16 add by size and Megatron's unfused cross-entropy -> memory_bound lines for "
    "`simsp calibrate --memory`"
)
COLLECTIVES_HELP = (
    "time all_reduce, all_gather, reduce_scatter, send/recv over N processes -> nccl-tests logs"
)
CALIBRATE_HELP = "write a hardware YAML whose calibration points at measured files"


def register(sub) -> None:
    """Add `profile` (gemm, attention, collectives, host, optimizer, memory) and `calibrate` to
    simsp's subparsers `sub`."""
    prof = sub.add_parser("profile", help=PROFILE_HELP, description=PROFILE_HELP)
    what = prof.add_subparsers(
        dest="profile_command",
        required=True,
        parser_class=type(prof),
        metavar="{gemm,attention,collectives,host,optimizer,memory}",
    )
    for add in (_gemm, _attention, _collectives, _host, _optimizer, _memory):
        add(what)
    _calibrate(sub)


def _gemm(what) -> None:
    """`profile gemm`: the GEMM shapes of one or more workloads -> a GemmTable CSV."""
    g = what.add_parser("gemm", help=GEMM_HELP, description=GEMM_HELP)
    add_workload_args(g)
    g.add_argument("--out", default="gemm.csv", help="CSV to write (default gemm.csv)")
    g.add_argument(
        "--add-workload",
        action="append",
        default=[],
        metavar="YAML",
        help=(
            "also time this workload's shapes, with its own settings (repeatable): one table for "
            "several runs"
        ),
    )
    g.add_argument(
        "--grid", action="store_true", help="also a log-spaced grid of m, n, k (factor 4)"
    )
    g.add_argument(
        "--grouped-out",
        metavar="CSV",
        help=(
            "where a mixture of experts' grouped GEMMs go, the CSV calibration.grouped_gemm "
            "reads (default grouped_gemm.csv beside --out; written only for workloads with "
            "experts)"
        ),
    )
    g.add_argument(
        "--dtype", choices=("bf16", "fp16", "fp32"), help="default bf16 on a GPU, fp32 on the CPU"
    )
    g.add_argument(
        "--repeats", type=int, help="timed calls per shape (default 20 on a GPU, 3 on the CPU)"
    )
    g.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    g.set_defaults(func=cmd_profile_gemm, _parser=g)


def _attention(what) -> None:
    """`profile attention`: the fused attention calls of workloads -> a throughput CSV."""
    f = what.add_parser("attention", help=ATTENTION_HELP, description=ATTENTION_HELP)
    add_workload_args(f)
    f.add_argument("--out", default="attention.csv", help="CSV to write (default attention.csv)")
    f.add_argument(
        "--add-workload",
        action="append",
        default=[],
        metavar="YAML",
        help="also time this workload's shapes, with its own settings (repeatable)",
    )
    f.add_argument(
        "--grid",
        action="store_true",
        help="also head_dim 64, 128 x seq_len 512..8192 (128..1024 on the CPU) x causal and not",
    )
    f.add_argument(
        "--dtype", choices=("bf16", "fp16", "fp32"), help="default bf16 on a GPU, fp32 on the CPU"
    )
    f.add_argument(
        "--repeats",
        type=int,
        help="timed calls per shape and direction (default 20 on a GPU, 3 on the CPU)",
    )
    f.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    f.set_defaults(func=cmd_profile_attention, _parser=f)


def _collectives(what) -> None:
    """`profile collectives`: nccl-tests logs over N processes."""
    c = what.add_parser("collectives", help=COLLECTIVES_HELP, description=COLLECTIVES_HELP)
    c.add_argument(
        "--nproc", type=int, required=True, help="processes (GPUs under NCCL), at least 2"
    )
    c.add_argument(
        "--backend",
        choices=("nccl", "gloo"),
        help="default nccl when there are GPUs enough, else gloo",
    )
    c.add_argument("--out", default="nccl-logs", help="folder for the logs (default nccl-logs)")
    c.add_argument("--min-bytes", help="smallest message, e.g. 1K (default 1K)")
    c.add_argument(
        "--max-bytes", help="largest message, e.g. 1G (default 1G under NCCL, 16M under gloo)"
    )
    c.add_argument("--iters", type=int, help="timed calls per size (default 20, after 5 warm-up)")
    c.set_defaults(func=cmd_profile_collectives, _parser=c)


def _host(what) -> None:
    """`profile host`: the framework's host time of one layer."""
    o = what.add_parser("host", help=HOST_HELP, description=HOST_HELP)
    o.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N")
    o.add_argument("--repeats", type=int, default=500, help="passes per timing round (default 500)")
    o.add_argument(
        "--out", help="also write the lines to this YAML file (for `simsp calibrate --host`)"
    )
    o.set_defaults(func=cmd_profile_host, _parser=o)


def _optimizer(what) -> None:
    """`profile optimizer`: the fused Adam rate."""
    a = what.add_parser("optimizer", help=OPTIMIZER_HELP, description=OPTIMIZER_HELP)
    a.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    a.add_argument(
        "--params", type=float, help="parameters to update (default 5e8 on a GPU, 2e7 on the CPU)"
    )
    a.add_argument(
        "--hidden",
        type=int,
        help="hidden size of the layers they are shaped as (default 2048 / 512)",
    )
    a.add_argument(
        "--repeats", type=int, help="steps per timing round (default 20 on a GPU, 3 on the CPU)"
    )
    a.add_argument(
        "--out", help="also write the lines to this YAML file (for `simsp calibrate --optimizer`)"
    )
    a.set_defaults(func=cmd_profile_optimizer, _parser=a)


def _memory(what) -> None:
    """`profile memory`: element-wise bandwidth by size and the unfused loss's rate."""
    m = what.add_parser("memory", help=MEMORY_HELP, description=MEMORY_HELP)
    m.add_argument("--device", help="cuda, cuda:N or cpu (default cuda when available)")
    m.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        metavar="BYTES",
        help="bytes the add moves a call (default 64 KiB to 1 GiB, 2x apart; to 4 MiB on a CPU)",
    )
    m.add_argument("--tokens", type=int, help="tokens of the loss (default 4096; 64 on a CPU)")
    m.add_argument(
        "--vocab", type=int, help="vocabulary shard of the loss (default 32064; 4096 on a CPU)"
    )
    m.add_argument(
        "--repeats", type=int, help="calls per timing round (default 20 on a GPU, 3 on the CPU)"
    )
    m.add_argument(
        "--out", help="also write the lines to this YAML file (for `simsp calibrate --memory`)"
    )
    m.set_defaults(func=cmd_profile_memory, _parser=m)


def _calibrate(sub) -> None:
    """`calibrate`: a new hardware YAML from measured files, traces or runs."""
    k = sub.add_parser("calibrate", help=CALIBRATE_HELP, description=CALIBRATE_HELP)
    k.add_argument(
        "--hardware",
        help="base hardware YAML (required, except with --trace: the trace's GPU's library file)",
    )
    k.add_argument(
        "--trace",
        metavar="TRACE.json[.gz]",
        help="a Kineto (torch.profiler) trace of a real iteration of --workload: its tables",
    )
    k.add_argument(
        "--json", action="store_true", help="with --trace or --runs: print one JSON object"
    )
    k.add_argument("--gemm", help="GEMM table CSV (simsp profile gemm)")
    k.add_argument(
        "--gemm-model",
        metavar="FILE|none",
        help="modeled GEMM table for shapes --gemm does not cover; 'none' drops the base file's",
    )
    k.add_argument(
        "--attention", metavar="CSV", help="FlashAttention throughput CSV (simsp profile attention)"
    )
    k.add_argument(
        "--grouped-gemm",
        metavar="CSV",
        help="grouped-GEMM CSV of routed experts (simsp profile gemm of a workload with experts)",
    )
    k.add_argument(
        "--nvlink",
        nargs="+",
        default=[],
        metavar="LOG",
        help="nccl-tests logs measured inside one node",
    )
    k.add_argument(
        "--infiniband",
        nargs="+",
        default=[],
        metavar="LOG",
        help="nccl-tests logs measured across nodes",
    )
    k.add_argument(
        "--host", metavar="YAML", help="host floor lines written by `simsp profile host --out`"
    )
    k.add_argument(
        "--optimizer",
        metavar="YAML",
        help="fused Adam rate written by `simsp profile optimizer --out`",
    )
    k.add_argument(
        "--memory",
        metavar="YAML",
        help="element-wise rates written by `simsp profile memory --out` -> memory_bound",
    )
    k.add_argument(
        "--append",
        action="store_true",
        help="add the logs to the base file's lists instead of replacing them",
    )
    k.add_argument("--name", help="the new file's `name:` (default: the base file's)")
    k.add_argument("--out", required=True, help="new hardware YAML to write")
    k.add_argument("--workload", help="workload YAML: show how the change moves its prediction")
    k.add_argument(
        "--runs",
        metavar="RUNS.csv",
        help="fit host time, collective latency and GEMM fraction to measured iteration times "
        "(schema: simsp/measure/runs.py)",
    )
    k.add_argument("--folds", type=int, default=5, help="cross-validation folds for --runs (5)")
    k.add_argument(
        "--max-seconds",
        type=float,
        default=FIT_MAX_SECONDS,
        metavar="S",
        help=f"most CPU seconds a --runs fit is estimated to take, refused up front past it "
        f"(default {FIT_MAX_SECONDS:g})",
    )
    k.add_argument(
        "--allow-outside",
        action="store_true",
        help="let --runs name workload files outside its own folder tree",
    )
    k.add_argument(
        "--fit",
        metavar="NAMES",
        help="comma-separated parameters for --runs (default: all of host_forward_us, "
        "collective_latency_us, gemm_table_fraction)",
    )
    k.set_defaults(func=cmd_calibrate, _parser=k)
