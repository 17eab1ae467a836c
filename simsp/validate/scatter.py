"""The peer-simulator page: simsp's seconds against a peer simulator's (vtrain-single: vTrain's
predictor), log-log, one trace per set; `sets` chooses which (all by default). Measured sets have
their own page, error per case (errors_page.py).

`scatter_figure` is plain plotly figure JSON (no plotly here); `scatter_html` hands it to
`simsp.present.timeline.figure_html`, the one place that draws pages with plotly.
"""

import math

from simsp.validate.cases import PEER_SETS
from simsp.validate.metrics import of_set
from simsp.validate.runner import Validation

COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#393b79",
)
"""plotly's ten qualitative colours and d3's category20b first: one a set, distinct while there
are eleven sets or fewer."""


def _set_trace(name: str, rs: list, m: dict, colour: str) -> dict:
    """One set's markers, hovering with the case, its description and its error."""
    return {
        "type": "scatter",
        "mode": "markers",
        "name": f"{name}{' (peer simulator)' if name in PEER_SETS else ''}"
        f" (n={m['n']}, MAPE {m['mape']:.1%})",
        "x": [r.case.measured_s for r in rs],
        "y": [r.predicted_s for r in rs],
        "text": [f"{r.case.name}: {r.case.description}<br>error {r.error:+.1%}" for r in rs],
        "hovertemplate": "%{text}<br>reference %{x:.4g} s<br>simsp %{y:.4g} s<extra>"
        + name
        + "</extra>",
        "marker": {"color": colour, "size": 6, "opacity": 0.7},
    }


def scatter_figure(v: Validation, sets: tuple[str, ...] | None = None) -> dict:
    """Predicted vs reference seconds, log-log, one trace per set (of `sets`, default all), and
    the y = x line, as a plain plotly figure dict (no plotly import)."""
    summary = v.summary()["sets"]
    data, shown = [], []
    for i, name in enumerate(v.sets):
        rs = of_set(v.results, name)
        if rs and (sets is None or name in sets):
            data.append(_set_trace(name, rs, summary[name], COLOURS[i % len(COLOURS)]))
            shown += rs
    values = [x for r in shown for x in (r.case.measured_s, r.predicted_s) if x > 0]
    lo, hi = (min(values) / 1.5, max(values) * 1.5) if values else (1e-3, 1e3)
    span = [math.log10(lo), math.log10(hi)]  # plotly log axes take ranges in decades
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "y = x",
            "x": [lo, hi],
            "y": [lo, hi],
            "line": {"color": "#444", "dash": "dash", "width": 1},
            "hoverinfo": "skip",
        }
    )
    return {
        "data": data,
        "layout": {
            "title": {"text": "simsp validation: predicted vs reference (measured unless marked)"},
            "xaxis": {
                "type": "log",
                "title": {"text": "reference (s)"},
                "range": span,
                "constrain": "domain",
            },
            "yaxis": {
                "type": "log",
                "title": {"text": "simsp (s)"},
                "range": span,
                "scaleanchor": "x",
                "constrain": "domain",
            },
            "hovermode": "closest",
            "height": 750,
            "legend": {"x": 0.01, "y": 0.99},
        },
    }


def scatter_html(v: Validation, sets: tuple[str, ...] | None = None) -> str:
    """The scatter as a self-contained page (plotly.js inline)."""
    from simsp.present.timeline import figure_html  # imports plotly only now, when a page is drawn

    return figure_html(scatter_figure(v, sets))
