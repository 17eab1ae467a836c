"""The validation page: simsp's error on every measured case, set by set, sorted, with the
naive baseline's beside it where a set has one. Peer simulators' outputs are not measurements:
they get a page of their own (scatter.py), not a place here.

`errors_figure` is plain plotly figure JSON (no plotly here); `errors_html` hands it to
`simsp.present.timeline.figure_html`, the one place that draws pages with plotly.
"""

from simsp.validate.cases import PEER_SETS
from simsp.validate.metrics import of_set
from simsp.validate.runner import Validation
from simsp.validate.scatter import COLOURS

NAIVE_COLOUR = "#7f7f7f"


def errors_figure(v: Validation) -> dict:
    """One marker a measured case at its signed error (simsp / measured - 1, percent), the cases
    of each set together and sorted by error, the naive baseline's error beside each case that
    has one (open grey circles), and the zero line."""
    data, labels = [], []
    naive_x, naive_y, naive_text = [], [], []
    summary = v.summary()["sets"]
    for i, name in enumerate(s for s in v.sets if s not in PEER_SETS):
        rs = sorted(of_set(v.results, name), key=lambda r: (r.error, r.case.name))
        if not rs:
            continue
        xs = [f"{name}: {r.case.name}" for r in rs]
        labels += xs
        m = summary[name]
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": f"{name} (n={m['n']}, MAPE {m['mape']:.1%}, bias {m['bias']:+.1%})",
                "x": xs,
                "y": [100 * r.error for r in rs],
                "text": [f"{r.case.name}: {r.case.description}" for r in rs],
                "hovertemplate": "%{text}<br>simsp %{y:+.1f}%<extra>" + name + "</extra>",
                "marker": {"color": COLOURS[i % len(COLOURS)], "size": 6},
            }
        )
        for x, r in zip(xs, rs, strict=True):
            if r.naive_error is not None:
                naive_x.append(x)
                naive_y.append(100 * r.naive_error)
                naive_text.append(r.case.name)
    if naive_x:
        data.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": "naive: model FLOPs / (0.5 x peak x GPUs)",
                "x": naive_x,
                "y": naive_y,
                "text": naive_text,
                "hovertemplate": "%{text}<br>naive %{y:+.1f}%<extra>naive</extra>",
                "marker": {"color": NAIVE_COLOUR, "size": 6, "symbol": "circle-open"},
            }
        )
    return {
        "data": data,
        "layout": {
            "title": {"text": "simsp against measurement: error per case, by set, sorted"},
            "xaxis": {
                "type": "category",
                "categoryorder": "array",
                "categoryarray": labels,
                "showticklabels": False,
                "title": {"text": f"{len(labels)} measured cases (hover for each)"},
            },
            "yaxis": {"title": {"text": "simsp / measured - 1 (%)"}, "zeroline": True},
            "hovermode": "closest",
            "height": 650,
            "legend": {"orientation": "h", "y": -0.15},
        },
    }


def errors_html(v: Validation) -> str:
    """The page, self-contained (plotly.js inline)."""
    from simsp.present.timeline import figure_html  # imports plotly only now, when a page is drawn

    return figure_html(errors_figure(v))
