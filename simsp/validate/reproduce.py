"""`simsp reproduce`: the paper's experiments side by side with simsp's answers.

Table 2 (activation bytes per layer), Figure 7 (% of the TP baseline), Table 4 (one 22B layer),
Table 5 (whole iterations, MFU, HFU) and a Figure 1-style chart of memory per GPU, as terminal
tables and one HTML report.
"""

import dataclasses
from pathlib import Path

from simsp.api import run
from simsp.cost import cost_model
from simsp.cost.layer_time import layer_time
from simsp.io.config import REPO_ROOT, load_hardware, load_workload
from simsp.model.layer import build_layer
from simsp.model.saved_bytes import activation_per_layer_bytes
from simsp.sim.memory import memory_report
from simsp.spec.layout import layer_placement
from simsp.validate.paper import (
    FIGURE7_PCT,
    MODELS,
    TABLE4_22B_MS,
    TABLE4_LABELS,
    TABLE5_MFU_HFU,
    TABLE5_S,
)

ROWS = (
    ("none", False, "TP baseline"),
    ("none", True, "TP + SP"),
    ("selective", False, "TP + selective"),
    ("selective", True, "TP + SP + selective"),
    ("full", False, "full recompute"),
)


def _variant(w, recompute, sp):
    return dataclasses.replace(
        w, parallel=dataclasses.replace(w.parallel, recompute=recompute, sequence_parallel=sp)
    )


def table2(workloads) -> list[list]:
    """Per-layer activation MiB per model and configuration, and % of the TP baseline (Figure 7)."""
    rows = []
    for name, w in workloads.items():
        mib = [
            activation_per_layer_bytes(w.model, _variant(w, r, sp).parallel, w.training.micro_batch)
            / 2**20
            for r, sp, _ in ROWS
        ]
        rows.append(
            [name] + [round(x, 1) for x in mib] + [round(100 * x / mib[0], 1) for x in mib[1:]]
        )
    return rows


def table4(w, hw) -> list[list]:
    """One 22B layer: paper vs simsp forward and backward (ms) and their errors."""
    rows = []
    for key, (pf, pb) in TABLE4_22B_MS.items():
        par = _variant(w, *key).parallel
        lt = layer_time(
            build_layer(w.model, par, w.training.micro_batch),
            cost_model(hw),
            par,
            layer_placement(par, 8),
        )
        sf, sb = lt.forward_s * 1e3, lt.backward_s * 1e3
        rows.append(
            [
                TABLE4_LABELS[key],
                pf,
                round(sf, 2),
                f"{sf / pf - 1:+.1%}",
                pb,
                round(sb, 2),
                f"{sb / pb - 1:+.1%}",
            ]
        )
    return rows


def table5(workloads, hw) -> tuple[list[list], dict]:
    """Iteration seconds (full recompute without SP, present work), MFU and HFU, paper vs simsp."""
    rows, results = [], {}
    for name, w in workloads.items():
        full, present = run(_variant(w, "full", False), hw), run(w, hw)
        results[name] = (full, present)
        pf, pp = TABLE5_S[name]
        pm, ph = TABLE5_MFU_HFU[name]
        rows.append(
            [
                name,
                pf,
                round(full.iteration_time_s, 2),
                f"{full.iteration_time_s / pf - 1:+.1%}",
                pp,
                round(present.iteration_time_s, 2),
                f"{present.iteration_time_s / pp - 1:+.1%}",
                f"{pm:.1%}",
                f"{present.mfu():.1%}",
                f"{ph:.1%}",
                f"{present.hfu():.1%}",
            ]
        )
    return rows, results


def figure1(workloads, hw) -> list[list]:
    """Most-loaded stage's memory per GPU (GiB): TP baseline (no SP, no recompute) vs present
    work."""
    rows = []
    for name, w in workloads.items():
        for label, ww in (("baseline", _variant(w, "none", False)), ("present work", w)):
            r = memory_report(ww, hw)
            s = max(r.stages, key=lambda st: st.peak_bytes)
            rows.append(
                [
                    name,
                    label,
                    round(s.weights_and_optimizer_bytes / 2**30, 2),
                    round(s.activation_bytes / 2**30, 2),
                    round(hw.hbm_bytes / 2**30, 1),
                ]
            )
    return rows


HEADERS = {
    "Table 2 / Figure 7: activation memory per layer (MiB) and % of the TP baseline": ["model"]
    + [r[2] for r in ROWS]
    + [f"% {r[2]}" for r in ROWS[1:]],
    "Table 4: one 22B layer (ms)": [
        "experiment",
        "paper fwd",
        "simsp fwd",
        "err",
        "paper bwd",
        "simsp bwd",
        "err",
    ],
    "Table 5: iteration time (s), MFU, HFU": [
        "model",
        "paper full",
        "simsp full",
        "err",
        "paper present",
        "simsp present",
        "err",
        "paper MFU",
        "simsp MFU",
        "paper HFU",
        "simsp HFU",
    ],
    "Figure 1: memory per GPU (GiB), most loaded stage": [
        "model",
        "setting",
        "weights+optimizer",
        "activations",
        "HBM",
    ],
}


def reproduce(hardware_path=None, sets=()) -> dict[str, list[list]]:
    """All tables, keyed by the HEADERS titles."""
    hw = load_hardware(hardware_path, sets)
    workloads = {n: load_workload(REPO_ROOT / "workloads" / f"{n}.yaml") for n in MODELS}
    t5, _ = table5(workloads, hw)
    tables = [table2(workloads), table4(workloads["gpt-22b"], hw), t5, figure1(workloads, hw)]
    return dict(zip(HEADERS, tables, strict=True))


def text_tables(tables: dict[str, list[list]]) -> str:
    """Terminal rendering: one aligned table per title."""
    out = []
    for title, rows in tables.items():
        head = HEADERS[title]
        widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
        out += [title, "  ".join(str(h).rjust(wd) for h, wd in zip(head, widths, strict=True))]
        out += [
            "  ".join(str(x).rjust(wd) for x, wd in zip(row, widths, strict=True)) for row in rows
        ] + [""]
    return "\n".join(out)


def write_report(tables: dict[str, list[list]], out_dir) -> Path:
    """The HTML report with every table and its chart."""
    from simsp.present.timeline import reproduction_html
    from simsp.textfile import write_files

    html = reproduction_html(tables, HEADERS, FIGURE7_PCT)
    return write_files(out_dir, {"reproduction.html": html})[0]  # whole, or the old one kept
