"""The sweep's picture: iteration time against peak HBM per GPU, with the Pareto front of the
configurations that fit, as a plotly figure spec (a plain dict; the timeline package draws it,
so this module imports no plotly)."""

import html
import math

from simsp.sweep.rows import describe_row, on_off, peak_gib
from simsp.units import GIB

RECOMPUTE_COLOURS = {
    "none": ("#4C78A8", "#9ECAE9"),
    "selective": ("#F58518", "#FFBF79"),
    "full": ("#54A24B", "#88D27A"),
}
"""(SP on, SP off) marker colours per recompute mode."""


def pareto_front(rows: list[dict]) -> list[dict]:
    """Fitting rows no other fitting row beats on both time and peak memory, by memory."""
    front, best_t = [], math.inf
    for r in sorted(
        (r for r in rows if r["fits"] == "true"),
        key=lambda r: (int(r["peak_bytes"]), float(r["iteration_time_s"])),
    ):
        if float(r["iteration_time_s"]) < best_t:
            front.append(r)
            best_t = float(r["iteration_time_s"])
    return front


def _hover(r: dict) -> str:
    """The hover text of a point (plotly's pseudo-HTML: the names in it escaped)."""
    return (
        f"{html.escape(r['hardware'])}<br>{html.escape(describe_row(r))}<br>"
        f"{float(r['iteration_time_s']):.3f} s, "
        f"MFU {float(r['mfu']):.1%}<br>peak {peak_gib(r):.2f} GiB "
        f"({'fits' if r['fits'] == 'true' else 'does not fit'}), {r['tier']}"
    )


def _xy(rows: list[dict]) -> dict:
    """A trace's points: peak GiB across, iteration time up."""
    return {"x": [peak_gib(r) for r in rows], "y": [float(r["iteration_time_s"]) for r in rows]}


def pareto_figure(rows: list[dict], title: str = "sweep") -> dict:
    """Iteration time against peak HBM as a plotly figure (plain JSON-able dict, no plotly import):
    one trace per (recompute, SP), hollow markers for configurations that do not fit, the Pareto
    front of those that fit, and each machine's HBM capacity as a vertical line."""
    data = []
    for recompute, (on, off) in RECOMPUTE_COLOURS.items():
        for sp, colour in (("true", on), ("false", off)):
            group = [r for r in rows if r["recompute"] == recompute and r["sp"] == sp]
            if not group:
                continue
            data.append(
                {
                    "type": "scatter",
                    "mode": "markers",
                    "name": f"{recompute}, SP {on_off(sp)}",
                    **_xy(group),
                    "text": [_hover(r) for r in group],
                    "hovertemplate": "%{text}<extra></extra>",
                    "marker": {
                        "color": colour,
                        "size": 9,
                        "line": {"color": colour, "width": 1.5},
                        "symbol": [
                            "circle" if r["fits"] == "true" else "circle-open" for r in group
                        ],
                    },
                }
            )
    front = pareto_front(rows)
    if front:
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": "Pareto front (fits)",
                **_xy(front),
                "line": {"color": "#333333", "dash": "dot", "shape": "hv"},
                "hoverinfo": "skip",
            }
        )
    capacities = sorted({int(r["capacity_bytes"]) for r in rows})
    shapes = [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": c / GIB,
            "x1": c / GIB,
            "y0": 0,
            "y1": 1,
            "line": {"color": "#D62728", "dash": "dash", "width": 1.5},
        }
        for c in capacities
    ]
    notes = [
        {
            "xref": "x",
            "yref": "paper",
            "x": math.log10(c / GIB),  # annotations on a log axis take log10
            "y": 1,
            "yanchor": "bottom",
            "showarrow": False,
            "text": f"HBM {c / GIB:.0f} GiB",
            "font": {"color": "#D62728"},
        }
        for c in capacities
    ]
    return {
        "data": data,
        "layout": {
            "title": {"text": html.escape(title)},
            "template": "plotly_white",
            "hovermode": "closest",
            "xaxis": {
                "title": {"text": "peak HBM per GPU (GiB, log scale)"},
                "type": "log",
                **_gib_axis([peak_gib(r) for r in rows], [c / GIB for c in capacities]),
            },
            "yaxis": {"title": {"text": "iteration time (s)"}, "type": "log"},
            "legend": {"title": {"text": "recompute, SP"}},
            "shapes": shapes,
            "annotations": notes,
        },
    }


NEAR_HBM = 16.0
"""The x range reaches at most this factor below and above the HBM line(s): configurations
needing a sixteenth of the HBM or sixteen times it are far from the question the figure asks
(which configurations just fit), and a range spent on them squeezes those near the line."""


def _gib_ticks(lo: float, hi: float) -> list[float]:
    """1-2-5 steps in GiB from lo to hi."""
    ticks, decade = [], 10 ** math.floor(math.log10(lo))
    while decade <= hi:
        ticks += [m * decade for m in (1, 2, 5) if lo <= m * decade <= hi]
        decade *= 10
    return ticks


def _gib_axis(xs: list[float], capacities: list[float]) -> dict:
    """The log x axis in GiB: its range around the HBM lines (and the data within NEAR_HBM of
    them), a labelled tick at every 1-2-5 step ("64 GiB", not plotly's bare "2" and "5")."""
    xs = [x for x in xs if x > 0]
    if not xs or not capacities:
        return {}
    lo = max(min(xs + capacities), min(capacities) / NEAR_HBM) / 1.15
    hi = min(max(xs + capacities), max(capacities) * NEAR_HBM) * 1.15
    ticks = _gib_ticks(lo, hi)
    return {
        "range": [math.log10(lo), math.log10(hi)],
        "tickvals": ticks,
        "ticktext": [f"{t:g} GiB" for t in ticks],
    }


def figure_page(spec: dict) -> str:
    """An HTML page of a figure spec, plotly.js inlined (drawn by the timeline package)."""
    from simsp.present.timeline import figure_html

    return figure_html(spec)
