"""The overlay page: a real iteration (Kineto trace) and simsp's simulated one, stream beside
stream on one time axis, with the attribution tables below (per op kind, per layer).

Bars are coloured by op kind, one plotly bar trace per kind and side. A side with more bars than
`BAR_BUDGET` draws each row's runs of same-kind bars closer than a gap as one bar (its hover says
how many kernels), so a 175B-sized iteration stays a page a browser opens.
"""

import html

import numpy as np

from simsp.present.timeline.pages import PAGE_CSS, html_table
from simsp.sim.trace import Span
from simsp.textfile import GENERATOR_META
from simsp.units import MS

BAR_BUDGET = 20_000
"""At most this many bars a side."""
KIND_COLOURS = {
    "gemm": "#4C78A8",
    "attention_gemm": "#72B7B2",
    "flash_attention": "#54A24B",
    "layernorm": "#EECA3B",
    "rmsnorm": "#EECA3B",
    "softmax": "#B279A2",
    "gelu": "#FF9DA6",
    "swiglu": "#FF9DA6",
    "dropout": "#9D755D",
    "residual_add": "#BAB0AC",
    "residual_grad": "#BAB0AC",
    "bias_dropout_add": "#BAB0AC",
    "comm": "#E45756",
    "tp_comm": "#E45756",
    "copy": "#D37295",
    "embedding": "#F58518",
    "loss": "#F58518",
    "optimizer": "#79706E",
    "unmatched": "#D9D9D9",
}


def _merged(spans: list[Span], budget: int) -> list[Span]:
    """Runs of same-kind neighbours on a row joined until the side fits the budget."""
    if len(spans) <= budget:
        return spans
    total = max(s.end_s for s in spans) - min(s.start_s for s in spans)
    gap = total / budget
    out: list[Span] = []
    rows: dict = {}
    for s in sorted(spans, key=lambda s: (s.stream, s.start_s)):
        last = rows.get(s.stream)
        if last is not None and last.kind == s.kind and s.start_s - last.end_s <= gap:
            joined = Span(
                last.stage,
                s.stream,
                s.kind,
                "merged",
                last.start_s,
                max(last.end_s, s.end_s) - last.start_s,
                -1,
                -1,
                -1,
                last.layers + 1,
            )
            out[-1] = rows[s.stream] = joined
            continue
        out.append(s)
        rows[s.stream] = s
    return out


def _hover(side: str, s: Span) -> str:
    what = f"{s.layers} bars merged" if s.name == "merged" else html.escape(s.name)
    layer = f" · layer {s.first_layer}" if s.first_layer >= 0 and s.name != "merged" else ""
    return (
        f"<b>{what}</b><br>{side} · {s.stream} · {s.kind}{layer}<br>"
        f"start {s.start_s / MS:.3f} ms · {s.dur_s / MS * 1e3:.1f} us"
    )


def figure(cmp):
    """The plotly figure: real rows on top, simulated rows below."""
    import plotly.graph_objects as go

    sides = (
        ("real", _merged(list(cmp.real), BAR_BUDGET)),
        ("simulated", _merged(list(cmp.sim), BAR_BUDGET)),
    )
    rows = []
    for side, spans in sides:
        rows += [f"{side} · {r}" for r in sorted({s.stream for s in spans})]
    y_of = {r: i for i, r in enumerate(rows)}
    fig = go.Figure()
    for side, spans in sides:
        kinds = sorted({s.kind for s in spans})
        for kind in kinds:
            mine = [s for s in spans if s.kind == kind]
            fig.add_trace(
                go.Bar(
                    name=f"{side}: {kind}",
                    legendgroup=kind,
                    orientation="h",
                    y=np.array([y_of[f"{side} · {s.stream}"] for s in mine], dtype=np.int32),
                    x=np.array([s.dur_s / MS for s in mine]),
                    base=[round(s.start_s / MS, 6) for s in mine],
                    marker=dict(color=KIND_COLOURS.get(kind, "#BAB0AC"), line=dict(width=0)),
                    hovertext=[_hover(side, s) for s in mine],
                    hoverinfo="text",
                    opacity=1.0 if side == "real" else 0.85,
                )
            )
    d = cmp.to_dict()
    title = (
        f"{html.escape(d['workload'])}: real {d['real_iteration_s'] * 1e3:.3f} ms on "
        f"{html.escape(d['device'])}{' (CPU trace)' if d['cpu_trace'] else ''} vs "
        f"simulated {d['sim_iteration_s'] * 1e3:.3f} ms on {html.escape(d['hardware'])}; "
        f"{d['matched_fraction']:.1%} of kernel time matched"
    )
    fig.update_layout(
        title=dict(text=title),
        barmode="overlay",
        height=max(360, 90 + 44 * len(rows)),
        xaxis=dict(title="time from the iteration's start (ms)"),
        yaxis=dict(
            tickmode="array", tickvals=list(range(len(rows))), ticktext=rows, autorange="reversed"
        ),
        legend=dict(orientation="h", y=-0.25),
        margin=dict(l=170, r=30, t=60, b=40),
        plot_bgcolor="white",
    )
    return fig


def _rows(rows: list[dict]) -> list[list]:
    return [
        [
            r["key"],
            f"{r['real_s'] * 1e3:.3f}",
            f"{r['sim_s'] * 1e3:.3f}",
            "n/a" if r["error"] is None else f"{r['error']:+.1%}",
            f"{r['share_of_error']:.1%}",
        ]
        for r in rows
    ]


def overlay_html(cmp) -> str:
    """The self-contained page (plotly.js inline)."""
    d = cmp.to_dict()
    head = ["", "real ms", "simulated ms", "error", "share of total error"]
    page = figure(cmp).to_html(
        include_plotlyjs=True,
        full_html=True,
        div_id="simsp-overlay",
        config={"displaylogo": False, "scrollZoom": True},
    )
    tables = (
        f"<div><h3>By op kind</h3>{html_table(['op kind', *head[1:]], _rows(d['by_kind']))}"
        f"<h3>By layer</h3>{html_table(['layer', *head[1:]], _rows(d['by_layer']))}"
        f"<p>Real: kernel time per kind from {html.escape(d['trace'])}; simulated: stream-busy "
        "time of stage 0. Share: |simulated - real| over the sum of it over the rows.</p></div>"
    )
    name = html.escape(f"{d['workload']}: real vs simulated")
    head_html = (
        f'<head><meta charset="utf-8" />{GENERATOR_META}<title>simsp overlay: {name}</title>'
        f"<style>{PAGE_CSS}</style>"
    )
    return page.replace("<head>", head_html, 1).replace("</body>", tables + "</body>", 1)
