"""How a new hardware file moves one workload's prediction (`simsp calibrate --workload`): the
iteration, MFU and one layer under the base and the new file, and where each file's GEMM
look-ups came from."""

from simsp.present.table import Column, render, words


def predict(w, hw) -> dict[str, float]:
    """The numbers `simsp calibrate --workload` compares: the iteration and one layer."""
    from simsp.api import run  # the simulation (simpy) only when a comparison is asked for

    d = run(w, hw).to_dict()
    return {
        "iteration s": d["iteration_time_s"],
        "MFU %": 100 * d["mfu"],
        "per-layer forward ms": d["per_layer_ms"]["forward"],
        "per-layer backward ms": d["per_layer_ms"]["backward"],
    }


def gemm_sources(w, hw) -> dict[str, int]:
    """How many of the layer's GEMM look-ups each source answered (table, model, roofline)."""
    from simsp.api import run
    from simsp.sim.result import gemm_sources as layer_gemm_sources

    return layer_gemm_sources(run(w, hw).plan.layer)


def compare(w, base_hw, new_hw) -> str:
    """A small table: each predicted number under the base and the new hardware file, and the
    change."""
    before, after = predict(w, base_hw), predict(w, new_hw)
    cells = [
        [
            key,
            f"{old:.4f}",
            f"{after[key]:.4f}",
            f"{(after[key] - old) / old * 100:+.1f}%" if old else "n/a",
        ]
        for key, old in before.items()
    ]
    columns = (words(w.name), Column("base"), Column("new"), Column("change"))
    rows = render(columns, cells).splitlines()
    for label, hw in (("base", base_hw), ("new", new_hw)):
        counts = ", ".join(f"{src} {n}" for src, n in sorted(gemm_sources(w, hw).items()))
        rows.append(f"  GEMM look-ups by source, {label}: {counts}")
    return "\n".join(rows)
