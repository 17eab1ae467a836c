"""The timeline page itself: plotly figure and self-contained HTML (plotly.js inline)."""

import html as html_module

import numpy as np

from simsp.present.timeline.style import FALLBACK_COLOURS, KIND_STYLE, ROW_ORDER, STREAM_LABELS
from simsp.present.timeline.view import View, choose_view, memory_lines
from simsp.sim.trace import Span
from simsp.textfile import GENERATOR_META
from simsp.units import GIB, MS


def _rows(bars) -> list[tuple[int, str]]:
    """(stage, stream) rows that hold bars, stage by stage, streams in ROW_ORDER."""
    have = {(b.stage, b.stream) for b in bars}
    streams = ROW_ORDER + tuple(sorted({s for _, s in have} - set(ROW_ORDER)))
    return [(st, s) for st in sorted({st for st, _ in have}) for s in streams if (st, s) in have]


def _hover(b: Span) -> str:
    lines = [
        f"<b>{b.name}</b>",
        f"stage {b.stage} · {STREAM_LABELS.get(b.stream, b.stream)} · "
        f"{KIND_STYLE.get(b.kind, (b.kind,))[0]}",
    ]
    ids = []
    if b.microbatch >= 0:
        ids.append(f"microbatch {b.microbatch}")
    if b.chunk >= 0:
        ids.append(f"chunk {b.chunk}")
    if b.layers == 1:
        ids.append(f"layer {b.first_layer}")
    elif b.layers > 1:
        ids.append(f"layers {b.first_layer}-{b.first_layer + b.layers - 1}")
    if ids:
        lines.append(" · ".join(ids))
    lines.append(f"start {b.start_s / MS:.3f} ms · duration {b.dur_s / MS:.3f} ms")
    return "<br>".join(lines)


def _kind_order(bars) -> list[str]:
    kinds = {b.kind for b in bars}
    return [k for k in KIND_STYLE if k in kinds] + sorted(kinds - set(KIND_STYLE))


def _style(kind: str, i: int) -> tuple[str, str]:
    return KIND_STYLE.get(kind, (kind, FALLBACK_COLOURS[i % len(FALLBACK_COLOURS)]))


def _bar_traces(go, bars, row_of: dict, level: str) -> list:
    """One horizontal bar trace per kind."""
    traces = []
    for i, kind in enumerate(_kind_order(bars)):
        mine = [b for b in bars if b.kind == kind]
        label, colour = _style(kind, i)
        totals = (
            kind == "tp_comm" and level == "chunk"
        )  # a chunk's TP totals drawn over the chunk: lighter
        hatch = dict(shape="/", fgcolor="#B0B0B0", size=6) if kind == "idle" else None
        traces.append(
            go.Bar(
                name=label,
                orientation="h",
                legendgroup=kind,
                y=np.array([row_of[(b.stage, b.stream)] for b in mine], dtype=np.int32),
                x=np.array([b.dur_s for b in mine]),
                base=[round(b.start_s, 9) for b in mine],
                width=0.45 if totals else 0.8,
                opacity=0.5 if totals else 1.0,
                marker=dict(color=colour, line=dict(width=0), pattern=hatch),
                hovertext=[_hover(b) for b in mine],
                hoverinfo="text",
            )
        )
    return traces


def _title(result, view: View) -> dict:
    """Workload, hardware and headline numbers; the run's settings; the level of detail."""
    from simsp.present.report import describe

    w, hw = result.workload, result.hardware
    names = html_module.escape(f"{w.name} on {hw.name}")  # plotly's pseudo-HTML: escaped
    head = (
        f"<b>{names}</b> — iteration {result.iteration_time_s:.3f} s, MFU "
        f"{result.mfu():.1%}, peak HBM {result.memory.peak_bytes / GIB:.1f} of "
        f"{result.memory.capacity_bytes / GIB:.0f} GiB"
    )
    return dict(
        text=head,
        x=0.01,
        xanchor="left",
        y=0.995,
        yanchor="top",
        yref="container",
        font=dict(size=18),
        subtitle=dict(
            text=html_module.escape(describe(w, hw).split(": ", 1)[-1]), font=dict(size=13)
        ),
    )


def _wrap(text: str, width: int = 170) -> str:
    """Break a long note into lines (plotly text does not wrap)."""
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + len(word) + 1 > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    return "<br>".join(lines + [line])


def figure(result, view: View | None = None):
    """The plotly figure: timeline rows above, HBM per stage below, one shared time axis (s)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from simsp.present.accuracy import accuracy_line

    view = view or choose_view(result)
    rows = _rows(view.bars)
    row_of = {r: i for i, r in enumerate(rows)}
    row_px = 20 if len(rows) <= 32 else 14 if len(rows) <= 64 else 10
    # the line `simsp run` ends with (how exact simsp has been): the picture keeps its caveat
    t = result.workload.training
    accuracy = accuracy_line(result.hardware, t.precision, stack=t.stack)
    note = _wrap(view.note) + "<br>" + _wrap(html_module.escape(accuracy, quote=False))
    timeline_px, memory_px = max(300, row_px * len(rows)), 230
    top_px = 90 + 16 * (note.count("<br>") + 1)
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=60 / (timeline_px + memory_px + 60),
        row_heights=[timeline_px, memory_px],
    )
    for t in _bar_traces(go, view.bars, row_of, view.level):
        fig.add_trace(t, row=1, col=1)
    _memory_traces(go, fig, result)
    _stage_bands(fig, rows)
    ticks = [
        f"stage {st} · {STREAM_LABELS.get(s, s)}"
        if s != "compute" or len(rows) > 2 * len({r[0] for r in rows})
        else f"<b>stage {st}</b> · compute"
        for st, s in rows
    ]
    fig.update_yaxes(
        row=1,
        col=1,
        tickmode="array",
        tickvals=list(range(len(rows))),
        ticktext=ticks,
        range=[len(rows) - 0.5, -0.5],
        showgrid=False,
        zeroline=False,
        tickfont=dict(size=12 if row_px >= 20 else 10 if row_px >= 14 else 8),
    )
    fig.update_yaxes(row=2, col=1, title_text="HBM (GiB)", rangemode="tozero")
    fig.update_xaxes(
        ticksuffix=" s", showspikes=True, spikemode="across", spikethickness=1, spikecolor="#888"
    )
    fig.update_xaxes(row=1, col=1, showticklabels=True, range=[0, result.iteration_time_s * 1.005])
    fig.update_xaxes(row=2, col=1, title_text="time since the iteration started")
    fig.add_annotation(
        text=note,
        xref="paper",
        yref="paper",
        x=0,
        y=1,
        xanchor="left",
        yanchor="bottom",
        yshift=8,
        showarrow=False,
        align="left",
        font=dict(size=12, color="#B22222" if view.level == "aggregated" else "#444"),
    )
    fig.update_layout(
        title=_title(result, view),
        barmode="overlay",
        bargap=0,
        template="plotly_white",
        hovermode="closest",
        height=timeline_px + memory_px + top_px + 120,
        margin=dict(l=170, r=230, t=top_px, b=60),
        legend=dict(
            title=dict(text="<b>kind</b>"),
            x=1.01,
            xanchor="left",
            y=1,
            yanchor="top",
            yref="paper",
            font=dict(size=12),
            tracegroupgap=2,
        ),
        legend2=dict(
            title=dict(text="<b>HBM</b>"),
            x=1.01,
            xanchor="left",
            yanchor="top",
            yref="paper",
            y=memory_px / (timeline_px + memory_px + 60),
            font=dict(size=11),
        ),
        meta=dict(level=view.level),
        uirevision="simsp",
    )
    return fig


def _memory_traces(go, fig, result) -> None:
    for label, t, v in memory_lines(result):
        fig.add_trace(
            go.Scatter(
                x=np.round(t, 9),
                y=np.round(v / GIB, 4),
                name=label,
                legend="legend2",
                mode="lines",
                line=dict(shape="hv", width=1.5),
                hovertemplate=f"HBM {label}<br>%{{x:.6f}} s: %{{y:.2f}} GiB<extra></extra>",
            ),
            row=2,
            col=1,
        )
    cap = result.memory.capacity_bytes / GIB
    fig.add_trace(
        go.Scatter(
            x=[0.0, result.iteration_time_s],
            y=[cap, cap],
            name=f"capacity ({cap:.0f} GiB)",
            legend="legend2",
            mode="lines",
            line=dict(color="#D62728", dash="dash", width=2),
            hovertemplate=f"HBM capacity {cap:.0f} GiB<extra></extra>",
        ),
        row=2,
        col=1,
    )


def _stage_bands(fig, rows) -> None:
    """Shade every other stage's rows, so that rows read as stage groups."""
    stages = sorted({st for st, _ in rows})
    for k, stage in enumerate(stages):
        if k % 2:
            ys = [i for i, (st, _) in enumerate(rows) if st == stage]
            fig.add_hrect(
                y0=min(ys) - 0.5,
                y1=max(ys) + 0.5,
                fillcolor="#EEF1F5",
                line_width=0,
                layer="below",
                row=1,
                col=1,
            )


def timeline_html(result) -> str:
    """The whole page, plotly.js inline so it opens offline."""
    fig = figure(result)
    html = fig.to_html(
        include_plotlyjs=True,
        full_html=True,
        div_id="simsp-timeline",
        config={"displaylogo": False, "scrollZoom": True, "responsive": True},
    )
    # names are the user's: escaped, so a workload called "</title><script>" is only text
    names = html_module.escape(f"{result.workload.name} on {result.hardware.name}")
    title = f"<title>simsp timeline: {names}</title>"
    return html.replace("<head>", '<head><meta charset="utf-8" />' + GENERATOR_META + title, 1)
