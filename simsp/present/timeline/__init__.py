"""Interactive timeline of one simulated iteration: a self-contained plotly page.

One row per (stage, stream); bars coloured by kind, drawn as one plotly bar trace per kind (not
per span), so tens of thousands of bars stay fast; a subplot below, sharing the time axis, draws
HBM over time per stage (or per group of stages) against the capacity. The page picks one of
three levels of detail by how many bars it would hold, and its title says which:

* op: each chunk span laid out as its layers' ops (`plan.layer` entries), TP collectives on
  their own row, the embedding / output layer as the remainder of the first / last chunk;
* chunk: the engine's spans as they are; the TP row carries each chunk's TP collectives as one
  bar over the chunk, with the totals in its hover;
* aggregated: each stage's compute spans closer than a merge gap become one bar, the PP sends
  and the TP row are left out (the Chrome/Perfetto trace keeps every span).

`view` is plain data over trace records; `page` and `pages` draw with plotly (this package is
the one place allowed to import it, and only where a page is drawn).
"""

from simsp.present.timeline.expand import embedding_share, expand, expand_span, expanded_count
from simsp.present.timeline.page import figure, timeline_html
from simsp.present.timeline.pages import figure_html, reproduction_html
from simsp.present.timeline.style import KIND_STYLE
from simsp.present.timeline.view import (
    BAR_BUDGET,
    View,
    choose_view,
    idle_spans,
    memory_lines,
    merge_runs,
    side_spans,
)

__all__ = [
    "BAR_BUDGET",
    "KIND_STYLE",
    "View",
    "choose_view",
    "embedding_share",
    "expand",
    "expand_span",
    "expanded_count",
    "figure",
    "figure_html",
    "idle_spans",
    "memory_lines",
    "merge_runs",
    "reproduction_html",
    "side_spans",
    "timeline_html",
]
