"""Validation: simsp's predictions against published and measured times, set by set.

Sets (each a list of Cases, a measured time and the run that produced it):

* `paper-table4`: the paper's Table 4, one 22B layer's forward and backward in five settings
  (10 values) on hardware/dgx-a100-80gb.yaml;
* `paper-table5`: the paper's Table 5, four models' iteration times with full recompute and with
  the present work (8 values), same hardware;
* `vtrain-multi`: vTrain's measured Megatron-DeepSpeed iterations (109 on up to 512 A100s),
  derived into `simsp/validate/data/` by `derive_vtrain`, on hardware/vtrain-a100.yaml;
* `published-a100`, `published-h100`, `published-b200` (B200 and GB200): 64 published runs
  (NeMo / Megatron-Bridge performance tables, llm-foundry's MPT tables) derived into
  `data/published_runs.csv` by `published_runs.derive_published`; unstated settings from the
  named framework version's recipe (`recipes.RECIPES`), each case with the naive baseline beside it;
* `vtrain-single`: NOT measurement but a comparison with a peer simulator: vTrain's 1,440
  single-node rows are its own predictor's output without recompute (`peer` holds the checks;
  data/README.md), so simsp runs them without recompute too.

Errors are fractions, predicted / reference - 1. Per set: n, MAPE (mean |error|), max |error|,
bias (mean signed error) and the worst cases. Nothing here sets a cost parameter: these times
are held out from calibration.

Modules: `data` (the derived vTrain CSVs), `peer` (why the single-node file is a prediction),
`cases` (reference values paired with simsp runs), `metrics` (errors and their summary),
`runner` (predicting every case), `spread` (configurations measured more than once: the
measurements' own spread, a floor beside simsp's error), `scatter` (the predicted-vs-reference
page), `report` (the tables, --json, --out's files; `simsp.cli.validate` runs them).
"""

from simsp.validate.cases import (
    PAPER_HARDWARE,
    PEER_SETS,
    REFERENCES,
    SETS,
    VTRAIN_HARDWARE,
    VTRAIN_PARALLEL,
    VTRAIN_VOCAB,
    Case,
    Skipped,
    build_cases,
    paper_table4_cases,
    paper_table5_cases,
    project_path,
    subset,
    vtrain_cases,
    vtrain_workload,
)
from simsp.validate.data import (
    DATA_DIR,
    VTRAIN_COLUMNS,
    VTRAIN_SETTINGS,
    VTRAIN_SOURCE,
    derive_vtrain,
    read_shared_csv,
    read_vtrain,
)
from simsp.validate.metrics import BY_FIELDS, CaseResult, grouped, metrics, of_set, worst
from simsp.validate.published import PUBLISHED_SETS, RECIPES, published_cases
from simsp.validate.published_runs import derive_published, read_published
from simsp.validate.report import CSV_FIELDS, case_rows, json_summary, table, write_outputs
from simsp.validate.runner import Validation, predict, predict_all, run_validation
from simsp.validate.scatter import COLOURS, scatter_figure, scatter_html
from simsp.validate.spread import (
    RepeatGroup,
    repeat_groups,
    repeat_summary,
    same_input,
    same_published_configuration,
)
from simsp.validate.summary import summarize

__all__ = [
    "BY_FIELDS",
    "COLOURS",
    "CSV_FIELDS",
    "DATA_DIR",
    "PAPER_HARDWARE",
    "PEER_SETS",
    "PUBLISHED_SETS",
    "RECIPES",
    "REFERENCES",
    "SETS",
    "VTRAIN_COLUMNS",
    "VTRAIN_HARDWARE",
    "VTRAIN_PARALLEL",
    "VTRAIN_SETTINGS",
    "VTRAIN_SOURCE",
    "VTRAIN_VOCAB",
    "Case",
    "CaseResult",
    "RepeatGroup",
    "Skipped",
    "Validation",
    "build_cases",
    "case_rows",
    "derive_published",
    "derive_vtrain",
    "grouped",
    "json_summary",
    "metrics",
    "of_set",
    "paper_table4_cases",
    "paper_table5_cases",
    "predict",
    "predict_all",
    "published_cases",
    "project_path",
    "read_published",
    "read_shared_csv",
    "read_vtrain",
    "repeat_groups",
    "repeat_summary",
    "run_validation",
    "same_input",
    "same_published_configuration",
    "scatter_figure",
    "scatter_html",
    "subset",
    "summarize",
    "table",
    "vtrain_cases",
    "vtrain_workload",
    "worst",
    "write_outputs",
]
