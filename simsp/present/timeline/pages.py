"""Other self-contained plotly pages: a figure given as plotly JSON (the sweep's Pareto front)
and the paper reproduction report (tables and charts side by side)."""

import html

from simsp.textfile import GENERATOR_META

PAGE_CSS = (
    "body{font-family:system-ui,sans-serif;margin:24px;max-width:1200px}"
    "table{border-collapse:collapse;margin:8px 0 24px}td,th{border:1px solid #ccc;padding:3px 8px;"
    "text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}"
)


def figure_html(spec: dict) -> str:
    """A self-contained page (plotly.js inline) of a figure given as plotly JSON, its <title>
    the figure's title with its HTML escaped (the title holds user names: a workload called
    `</title><script>` stays text)."""
    import re

    import plotly.graph_objects as go

    page = go.Figure(spec).to_html(include_plotlyjs=True, full_html=True, div_id="simsp-figure")
    title = ((spec.get("layout") or {}).get("title") or {}).get("text") or "simsp"
    text = html.escape(html.unescape(re.sub(r"<[^>]*>", "", title)))
    return page.replace("<head>", f"<head>{GENERATOR_META}<title>{text}</title>", 1)


def html_table(head: list, rows: list[list]) -> str:
    """A plain HTML table, every cell escaped."""
    cells = "".join(f"<th>{html.escape(str(h))}</th>" for h in head)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{cells}</tr>{body}</table>"


def _charts(tables: dict, headers: dict, figure7_pct: dict) -> dict:
    """One plotly figure per table, keyed by the table's title; ``figure7_pct`` the paper's
    Figure 7 bars beside simsp's."""
    import plotly.graph_objects as go

    titles = list(headers)
    t2, t4, t5, f1 = (tables[t] for t in titles)
    figs = {}
    head = headers[titles[0]]
    fig7 = go.Figure(
        [
            go.Bar(
                name=f"simsp: {head[6 + i][2:]}",
                x=[r[0] for r in t2],
                y=[r[6 + i] for r in t2],
                offsetgroup=str(i),
            )
            for i in range(4)
        ]
    )
    for i in range(4):
        fig7.add_trace(
            go.Scatter(
                name="paper (Figure 7)" if i == 0 else None,
                showlegend=i == 0,
                mode="markers",
                x=[r[0] for r in t2],
                y=[figure7_pct[r[0]][i] for r in t2],
                offsetgroup=str(i),
                marker={"symbol": "diamond", "color": "black", "size": 9},
            )
        )
    fig7.update_layout(
        title="Figure 7: activation memory, % of the TP baseline (bars simsp, diamonds paper)",
        yaxis_title="%",
        barmode="group",
        scattermode="group",
    )
    figs[titles[0]] = fig7
    fig4 = go.Figure()
    for col, label in (
        (1, "paper forward"),
        (2, "simsp forward"),
        (4, "paper backward"),
        (5, "simsp backward"),
    ):
        fig4.add_trace(go.Bar(name=label, x=[r[0] for r in t4], y=[r[col] for r in t4]))
    fig4.update_layout(title="Table 4: one 22B layer (ms)", barmode="group", yaxis_title="ms")
    figs[titles[1]] = fig4
    fig5 = go.Figure()
    for col, label in (
        (1, "paper full recompute"),
        (2, "simsp full recompute"),
        (4, "paper present work"),
        (5, "simsp present work"),
    ):
        fig5.add_trace(go.Bar(name=label, x=[r[0] for r in t5], y=[r[col] for r in t5]))
    fig5.update_layout(
        title="Table 5: iteration time (s)", barmode="group", yaxis_type="log", yaxis_title="s"
    )
    figs[titles[2]] = fig5
    x = [f"{r[0]}<br>{r[1]}" for r in f1]
    fig1 = go.Figure(
        [
            go.Bar(name="parameters + optimizer", x=x, y=[r[2] for r in f1]),
            go.Bar(name="activations", x=x, y=[r[3] for r in f1]),
        ]
    )
    fig1.add_hline(
        y=f1[0][4], line_dash="dash", line_color="red", annotation_text=f"{f1[0][4]:.0f} GiB HBM"
    )
    fig1.update_layout(
        title="Figure 1: memory per GPU (GiB), baseline vs present work", barmode="stack"
    )
    figs[titles[3]] = fig1
    return figs


def reproduction_html(tables: dict, headers: dict, figure7_pct: dict) -> str:
    """The reproduction report: each table beside its chart, plotly.js inline once; the paper's
    Figure 7 (``figure7_pct``, validate.paper) drawn beside simsp's bars."""
    figs = _charts(tables, headers, figure7_pct)
    parts = [
        f"<html><head><meta charset='utf-8'>{GENERATOR_META}<title>simsp "
        f"reproduction</title><style>{PAGE_CSS}</style></head><body><h1>Korthikanti et al. 2022, "
        "reproduced by simsp</h1>"
    ]
    for i, (title, rows) in enumerate(tables.items()):
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(html_table(headers[title], rows))
        figs[title].update_layout(height=460, template="plotly_white")
        # a fixed div id per figure: plotly's default is a random uuid, and the same tables
        # should give the same page byte for byte
        div = f"simsp-figure-{i}"
        parts.append(figs[title].to_html(include_plotlyjs=(i == 0), full_html=False, div_id=div))
    parts.append("</body></html>")
    return "\n".join(parts)
