"""Sweeps: every valid parallel configuration of a workload, on one or more machines.

`simsp sweep SPEC.yaml` reads a spec (a workload, hardware files, a GPU count and a grid of
settings), enumerates the valid configurations, evaluates them with the event simulation (or,
with --screen, all of them in closed form first and only the most promising in the engine),
appends one CSV row per configuration as it finishes, and prints the fastest that fit.
`simsp compare WORKLOAD --hardware A.yaml B.yaml` runs one workload on several machines.

A spec, by example (paths relative to the working directory or to the spec's folder):

    workload: workloads/gpt3-175b.yaml
    hardware: [hardware/dgx-a100-80gb.yaml]
    gpus: 64
    grid: {tp: [1, 2, 4, 8, 16], pp: [1, 2, 4, 8, 16], sp: [true, false],
           recompute: [none, selective, full], micro_batch: [1, 2, 4]}

dp = gpus / (tp x cp x pp). Settings the grid leaves out keep the workload's values; an inherited
interleaved schedule falls back to 1F1B where interleaving is not valid (pp = 1, chunks that do
not divide the layers, a microbatch count that is not a multiple of pp); a schedule listed in
the grid is taken as asked, and its invalid combinations are skipped. Configurations that mean
the same run (SP with tp = 1, interleaved with one chunk) are evaluated once.

Output rows are written whole and flushed one by one; on a restart the rows already in the
output are kept and their configurations skipped (a trailing partial line is dropped first), so
a killed sweep resumes without losing or duplicating a row.

Modules:

* `spec` - reading and checking the spec;
* `configs` - enumerating its valid, distinct configurations;
* `grid_columns` - the same enumeration as columns (the rules as masks), for the screening tier;
* `rows` - the output columns, how values are written, ranking rows;
* `store` - CSV / Parquet output, resume, partial-line handling;
* `execute` - the event and closed-form (screening) tiers; local process pool and dask executors;
* `progress` - the progress bar;
* `work` - what a sweep will cost in CPU time, counted before it runs (--max-seconds);
* `runner` - `run_sweep`: the above, end to end;
* `pareto` - the Pareto front and the time-vs-memory figure spec;
* `summary` - the best-K table and the one-line account of a sweep.

The command lines, `simsp sweep` and `simsp compare`, are `simsp.cli.sweep` and `simsp.cli.compare`.
"""

from simsp.sweep.configs import Config, Counts, config_key, enumerate_configs
from simsp.sweep.execute import (
    dask_address,
    evaluate_analytic,
    evaluate_event,
    event_result,
    executor_rows,
    screen,
)
from simsp.sweep.pareto import RECOMPUTE_COLOURS, figure_page, pareto_figure, pareto_front
from simsp.sweep.progress import Progress
from simsp.sweep.rows import COLUMNS, KEY_COLUMNS, RESULT_COLUMNS, describe_row, fmt
from simsp.sweep.runner import Outcome, run_sweep
from simsp.sweep.spec import (
    CHOICES,
    DEFAULT_KEEP,
    GRID_KEYS,
    SPEC_KEYS,
    SweepSpec,
    load_spec,
    resolve,
)
from simsp.sweep.store import CsvSink, Output, read_csv_rows
from simsp.sweep.summary import best, summary, table

__all__ = [
    "CHOICES",
    "COLUMNS",
    "Config",
    "Counts",
    "CsvSink",
    "DEFAULT_KEEP",
    "GRID_KEYS",
    "KEY_COLUMNS",
    "Outcome",
    "Output",
    "Progress",
    "RECOMPUTE_COLOURS",
    "RESULT_COLUMNS",
    "SPEC_KEYS",
    "SweepSpec",
    "best",
    "config_key",
    "dask_address",
    "describe_row",
    "enumerate_configs",
    "evaluate_analytic",
    "evaluate_event",
    "event_result",
    "executor_rows",
    "figure_page",
    "fmt",
    "load_spec",
    "pareto_figure",
    "pareto_front",
    "read_csv_rows",
    "resolve",
    "run_sweep",
    "screen",
    "summary",
    "table",
]
