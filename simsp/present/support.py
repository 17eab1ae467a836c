"""The support page (docs/support.md): which GPUs, software stacks and model families simsp
prices, and how exact it has been on each, generated from the shipped hardware files, the stack
presets, the Hugging Face families and the derived accuracy file. `python -m
simsp.present.support docs/support.md` writes it; a test fails when the page is not this tree's.
"""

import sys
from pathlib import Path

from simsp.present.accuracy import accuracy_of, read_accuracy

PRECISIONS = ("bf16", "fp8")


def _hardware_files() -> list[Path]:
    from simsp.io.config import REPO_ROOT

    return sorted((REPO_ROOT / "hardware").glob("*.yaml"))


def _validated(a) -> str:
    band = "min-max" if a.whole_range else "p10-p90"
    scope = "" if a.files == () else f" ({a.scope} family)"
    return (
        f"{a.precision}: {a.n} runs{scope}, MAPE {a.mape:.1%}, bias {a.bias:+.1%}, "
        f"measured/simsp {a.low:.2f}-{a.high:.2f} ({band})"
    )


def gpu_rows() -> list[str]:
    """One table row a shipped hardware file: the part, its NVLink domain, memory, peaks, and
    the accuracy `simsp run` reports for it."""
    from simsp.io.config import load_hardware

    rows = []
    for path in _hardware_files():
        hw = load_hardware(path)
        g = hw.gpu
        found = [a for p in PRECISIONS if (a := accuracy_of(hw, p)) is not None]
        status = "; ".join(map(_validated, found)) or "no measured run: not validated"
        fp8 = f"{g.peak_fp8_tflops:g}" if g.peak_fp8_tflops else "none"
        rows.append(
            f"| `{path.stem}` | {g.name} | {hw.node.gpus} | {g.hbm_gib:g} | "
            f"{g.peak_tflops:g} / {fp8} | {status} |"
        )
    return rows


def stack_rows() -> list[str]:
    """One row a software-stack preset: its knobs' values and its measured accuracy."""
    from simsp.spec.stack import STACK_KNOBS, STACKS

    _, _, stacks = read_accuracy()
    rows = []
    for name, stack in STACKS.items():
        values = " | ".join(f"{getattr(stack, k).value or '-'}" for k in STACK_KNOBS)
        found = [a for p in PRECISIONS if (a := stacks.get((name, p))) is not None]
        if name == "megatron":
            status = "the GPUs' figures above"
        else:
            status = "; ".join(map(_validated, found)) or "no measured run: not validated"
        rows.append(f"| `{name}` | {values} | {status} |")
    return rows


def family_rows() -> list[str]:
    """One row a Hugging Face model_type `--model config.json` reads, and those it refuses."""
    from simsp.io.hf_families import FAMILIES, TF

    rows = []
    for name, family in sorted(FAMILIES.items()):
        moe = "yes" if family.experts else ""
        source = family.source.split(",")[0].strip()
        source = source if source.startswith("transformers") else TF + source
        rows.append(f"| `{name}` | {moe} | `{source}` |")
    return rows


def page() -> str:
    """The whole page."""
    from simsp.io.hf_families import MOE_TYPES
    from simsp.spec.stack import STACK_KNOBS

    knobs = " | ".join(STACK_KNOBS)
    lines = [
        "# What simsp supports",
        "",
        "Generated from the code (`python -m simsp.present.support docs/support.md`): the shipped",
        "hardware files, the software-stack presets, the Hugging Face families `--model` reads,",
        "and `simsp/validate/data/accuracy.json`, the errors `simsp validate` measured. A row",
        "without measured runs is priced from its sources but not validated. What simsp does",
        "not model at all is in the README's table.",
        "",
        "## GPUs",
        "",
        "A hardware file by name (`--hardware dgx-h100`) or path. Validation: the measured runs",
        "of that file (or of its GPU family, where the file has few), per precision, as the",
        "accuracy line of `simsp run` reports them.",
        "",
        "| file | GPU | NVLink domain | HBM GiB | dense BF16 / FP8 TFLOP/s | validated |",
        "|---|---|---:|---:|---|---|",
        *gpu_rows(),
        "",
        "## Software stacks",
        "",
        "`training.stack` (`--stack`): a preset of the knobs below, each also a knob of its own",
        "(`docs/inputs.md`). Mixtures of experts are validated on Megatron-Core only",
        "(`simsp validate --set moe`, kept apart from the GPU figures).",
        "",
        f"| stack | {knobs} | validated |",
        "|---|" + "---|" * len(STACK_KNOBS) + "---|",
        *stack_rows(),
        "",
        "## Model families",
        "",
        "A Hugging Face `config.json` of these `model_type`s is read by `--model` (parameter",
        "counts as `transformers` builds the model); the workload YAML takes any decoder the",
        "model keys describe.",
        "",
        "| model_type | mixture of experts | follows |",
        "|---|---|---|",
        *family_rows(),
        "",
        "Refused by name (mixtures of experts not read yet): "
        + ", ".join(f"`{t}`" for t in sorted(MOE_TYPES))
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text = page()
    if argv:
        from simsp.textfile import write_text

        write_text(argv[0], text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
