"""Capture a calibration set on this machine and write a hardware file that uses it.

Run from the repository root on a GPU node; it needs torch but no install of simsp (it calls
`python -m simsp`), so it also runs on a bare GPU image that has torch, numpy and pyyaml:

    python hardware/calibration/capture_device.py --base hardware/hgx-h200.yaml

It writes, with slug = device name + date (e.g. `nvidia-h200-2026-11-29`):

    hardware/calibration/<slug>/gemm.csv    every GEMM shape of the paper's four runs + a grid
    hardware/calibration/<slug>/attention.csv  SDPA forward/backward rates of the runs' FlashAttention
                                            shapes (those with `attention: flash`) + a grid; with
                                            --no-grid and no flash run, none (the base file's kept)
    hardware/calibration/<slug>/host.yaml   the host (framework) floor of one layer
    hardware/calibration/<slug>/adam.yaml   the fused Adam update's memory rate
    hardware/calibration/<slug>/memory.yaml the element-wise curve (a bf16 add by size),
                                            Megatron's unfused cross-entropy rate and the eager
                                            torch kernels of a torchtitan Llama block (RMSNorm,
                                            RoPE, silu * mul: memory_bound.eager_*_gbps)
    hardware/calibration/<slug>/nvlink/     nccl-tests-layout logs, when the node has >= 2 GPUs
    hardware/calibration/<slug>/README.md   the commands, the device, the versions, the effect
    hardware/<slug>.yaml                    --base with its calibration pointing at the above

`--tar FILE` also packs those into one archive, for a machine whose outputs come back as files
(the device tool: `python3 hardware/calibration/capture_device.py --base hardware/hgx-h200.yaml
--tar $OUT/capture.tgz`, then unpack it in the repository here).
NCCL runs one rank per GPU, so a one-GPU node yields no collective logs: the hardware file keeps
the base file's NVLink and InfiniBand tables, and the README says so.
"""

import argparse
import os
import re
import subprocess
import sys
import tarfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOE_WORKLOAD = "workloads/qwen3-30b-a3b.yaml"
"""Whose routed experts' grouped GEMMs are timed beside the dense shapes."""
PAPER_WORKLOADS = ("workloads/gpt-22b.yaml", "workloads/gpt3-175b.yaml", "workloads/mt-nlg-530b.yaml",
                   "workloads/gpt-1t.yaml")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", required=True, help="hardware YAML of this kind of machine (comments and other keys kept)")
    p.add_argument("--workload", action="append",
                   help="workload whose GEMMs to time (repeatable; default the paper's four)")
    p.add_argument("--device", help="cuda (default when there is a GPU) or cpu")
    p.add_argument("--moe-workload", default=MOE_WORKLOAD,
                   help=f"workload whose routed experts' grouped GEMMs to time (default {MOE_WORKLOAD}; "
                        "'none' skips them)")
    p.add_argument("--no-grid", action="store_true",
                   help="time only the workloads' shapes (no attention table when none uses flash)")
    p.add_argument("--repeats", type=int, help="timed calls per GEMM shape (profile gemm's default)")
    p.add_argument("--host-repeats", type=int, default=500, help="passes per host timing round")
    p.add_argument("--adam-params", help="parameters the Adam timing updates (profile optimizer's default)")
    p.add_argument("--slug", help="name of the calibration set (default: device name and date)")
    p.add_argument("--root", default=str(ROOT), help="where hardware/ is written (default: this repository)")
    p.add_argument("--tar", help="also pack the outputs into this .tar.gz")
    return p.parse_args(argv)


def slug_of(device: str, day: str) -> str:
    """'NVIDIA H200' on 2026-11-29 -> 'nvidia-h200-2026-11-29'."""
    return f"{re.sub(r'[^a-z0-9]+', '-', device.lower()).strip('-')}-{day}"


def arg(path) -> str:
    """A path as the commands show it: relative to the repository when inside it."""
    path = Path(path).resolve()
    return os.path.relpath(path, ROOT) if path.is_relative_to(ROOT) else str(path)


class Recorder:
    """Runs `python -m simsp ...` in the repository and keeps each command for the README."""

    def __init__(self):
        self.commands: list[str] = []

    def simsp(self, *words: str) -> str:
        self.commands.append("simsp " + " ".join(words))
        # stdout is kept for the README; stderr (the sweeps' progress) streams through as it comes
        done = subprocess.run([sys.executable, "-m", "simsp", *words], cwd=ROOT, text=True, stdout=subprocess.PIPE)
        if done.returncode:
            sys.exit(f"capture_device: `simsp {' '.join(words)}` failed (exit {done.returncode})")
        print(done.stdout, end="")
        return done.stdout


def main(argv=None) -> None:
    args = parse_args(argv)
    import torch  # the profiler's own dependency: fail here, before anything is written

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    gpus = torch.cuda.device_count() if device.startswith("cuda") else 0
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    slug = args.slug or slug_of(name, day)
    root = Path(args.root).resolve()
    folder, out = root / "hardware" / "calibration" / slug, root / "hardware" / f"{slug}.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    workloads = [arg(ROOT / w) for w in (args.workload or PAPER_WORKLOADS)]

    run = Recorder()
    gemm = [workloads[0], *(x for w in workloads[1:] for x in ("--add-workload", w)), "--device", device,
            "--out", arg(folder / "gemm.csv")]
    # a mixture of experts' routed experts too: their grouped GEMMs go to grouped_gemm.csv
    if args.moe_workload != "none":
        gemm += ["--add-workload", arg(ROOT / args.moe_workload), "--grouped-out", arg(folder / "grouped_gemm.csv")]
    gemm += [] if args.no_grid else ["--grid"]
    gemm += ["--repeats", str(args.repeats)] if args.repeats else []
    run.simsp("profile", "gemm", *gemm)
    # FlashAttention shapes exist only where the model uses it; the paper's runs are unfused, so
    # with no flash workload the attention table is the grid alone (and, with --no-grid, none)
    flash = flash_workloads(workloads)
    attention = []
    if flash or not args.no_grid:
        attention = [*(flash[:1] or workloads[:1]), *(x for w in flash[1:] for x in ("--add-workload", w)),
                     "--device", device, "--out", arg(folder / "attention.csv")]
        attention += [] if args.no_grid else ["--grid"]
        attention += ["--repeats", str(args.repeats)] if args.repeats else []
        run.simsp("profile", "attention", *attention)
    run.simsp("profile", "host", "--device", device, "--repeats", str(args.host_repeats),
              "--out", arg(folder / "host.yaml"))
    run.simsp("profile", "optimizer", "--device", device, *(["--params", args.adam_params] if args.adam_params else []),
              "--out", arg(folder / "adam.yaml"))
    run.simsp("profile", "memory", "--device", device, "--out", arg(folder / "memory.yaml"))
    logs = []
    if gpus >= 2:
        run.simsp("profile", "collectives", "--nproc", str(gpus), "--backend", "nccl", "--out", arg(folder / "nvlink"))
        logs = sorted(arg(p) for p in (folder / "nvlink").glob("*.log"))
    calibrate = ["--hardware", arg(args.base), "--gemm", arg(folder / "gemm.csv"),
                 *(["--attention", arg(folder / "attention.csv")] if attention else []), "--host", arg(folder / "host.yaml"),
                 *(["--grouped-gemm", arg(folder / "grouped_gemm.csv")] if (folder / "grouped_gemm.csv").exists() else []),
                 "--optimizer", arg(folder / "adam.yaml"), "--memory", arg(folder / "memory.yaml"),
                 "--name", slug, "--out", arg(out)]
    # the before/after prediction runs the simulation, which needs simpy: a bare GPU image may lack it
    simulate = _importable("simpy")
    calibrate += ["--workload", "workloads/gpt3-175b.yaml"] if simulate else []
    effect = run.simsp("calibrate", *calibrate, *(["--nvlink", *logs] if logs else []))
    if not simulate:
        effect += f"(not simulated here: no simpy; run `simsp run workloads/gpt3-175b.yaml --hardware {arg(out)}`)\n"
    write_readme(folder / "README.md", name, gpus, torch, run.commands, effect, bool(logs), args.base)
    if args.tar:
        with tarfile.open(args.tar, "w:gz") as tar:
            tar.add(folder, arcname=f"hardware/calibration/{slug}")
            tar.add(out, arcname=f"hardware/{slug}.yaml")
    print(f"captured {slug}: {out}")


def flash_workloads(workloads: list[str]) -> list[str]:
    """The workloads (paths as given) whose model uses FlashAttention (`model.attention: flash`)."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))  # simsp from this repository, installed or not
    from simsp.io.config import load_workload
    return [w for w in workloads if load_workload(ROOT / w).model.attention == "flash"]


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def write_readme(path: Path, device: str, gpus: int, torch, commands: list[str], effect: str, nccl: bool,
                 base: str) -> None:
    """Provenance of the set: what ran where, and what it changed."""
    cuda = torch.version.cuda or "none"
    lines = [f"# Calibration captured on {device}", "",
             f"Captured {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC} by `hardware/calibration/capture_device.py` "
             f"on {device} ({gpus} GPU{'s' if gpus != 1 else ''} visible), torch {torch.__version__}, CUDA {cuda}.",
             f"Base hardware file: `{base}`.", "", "Commands, in order:", "", "```",
             *commands, "```", ""]
    if not nccl:
        lines += ["No collective logs: NCCL runs one rank per GPU and this node had fewer than two, so the",
                  "hardware file keeps the base file's NVLink and InfiniBand tables.", ""]
    lines += ["Effect on the paper's 175B run (`simsp calibrate --workload`):", "", "```", effect.strip(), "```", ""]
    path.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
