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

from simsp.validate.metrics import BY_FIELDS, CaseResult, grouped, metrics, of_set, worst

# metrics is light (and `metrics` is also a module's name): read at once; the rest when first used
_WHERE = {
    "COLOURS": "scatter",
    "CSV_FIELDS": "report",
    "Case": "cases",
    "DATA_DIR": "data",
    "errors_figure": "errors_page",
    "errors_html": "errors_page",
    "PAPER_HARDWARE": "cases",
    "PEER_SETS": "cases",
    "PUBLISHED_SETS": "published",
    "RECIPES": "published",
    "REFERENCES": "cases",
    "RepeatGroup": "spread",
    "SETS": "cases",
    "Skipped": "cases",
    "VTRAIN_COLUMNS": "data",
    "VTRAIN_HARDWARE": "cases",
    "VTRAIN_PARALLEL": "cases",
    "VTRAIN_SETTINGS": "data",
    "VTRAIN_SOURCE": "data",
    "VTRAIN_VOCAB": "cases",
    "Validation": "runner",
    "build_cases": "cases",
    "case_rows": "report",
    "derive_published": "published_runs",
    "derive_vtrain": "data",
    "json_summary": "report",
    "paper_table4_cases": "cases",
    "paper_table5_cases": "cases",
    "predict": "runner",
    "predict_all": "runner",
    "project_path": "cases",
    "published_cases": "published",
    "read_published": "published_runs",
    "read_shared_csv": "data",
    "read_vtrain": "data",
    "repeat_groups": "spread",
    "repeat_summary": "spread",
    "run_validation": "runner",
    "same_input": "spread",
    "same_published_configuration": "spread",
    "scatter_figure": "scatter",
    "scatter_html": "scatter",
    "subset": "cases",
    "summarize": "summary",
    "table": "report",
    "vtrain_cases": "cases",
    "vtrain_workload": "cases",
    "write_outputs": "report",
}
"""Each name the package offers and the module that defines it: imported when first read, so
that `simsp --help` and a run that never validates do not load the validation sets."""
__all__ = [
    "BY_FIELDS",
    "COLOURS",
    "CSV_FIELDS",
    "Case",
    "CaseResult",
    "DATA_DIR",
    "PAPER_HARDWARE",
    "PEER_SETS",
    "PUBLISHED_SETS",
    "RECIPES",
    "REFERENCES",
    "RepeatGroup",
    "SETS",
    "Skipped",
    "VTRAIN_COLUMNS",
    "VTRAIN_HARDWARE",
    "VTRAIN_PARALLEL",
    "VTRAIN_SETTINGS",
    "VTRAIN_SOURCE",
    "VTRAIN_VOCAB",
    "Validation",
    "build_cases",
    "case_rows",
    "derive_published",
    "derive_vtrain",
    "errors_figure",
    "errors_html",
    "grouped",
    "json_summary",
    "metrics",
    "of_set",
    "paper_table4_cases",
    "paper_table5_cases",
    "predict",
    "predict_all",
    "project_path",
    "published_cases",
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


def __getattr__(name: str):
    """A name of _WHERE, from its module (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_module(_WHERE[name]), name)


def _module(name: str):
    """One of the modules _WHERE names, imported by a literal statement (tests/test_import_rule.py
    reads every edge)."""
    match name:
        case "cases":
            from simsp.validate import cases as module
        case "data":
            from simsp.validate import data as module
        case "errors_page":
            from simsp.validate import errors_page as module
        case "published":
            from simsp.validate import published as module
        case "published_runs":
            from simsp.validate import published_runs as module
        case "report":
            from simsp.validate import report as module
        case "runner":
            from simsp.validate import runner as module
        case "scatter":
            from simsp.validate import scatter as module
        case "spread":
            from simsp.validate import spread as module
        case "summary":
            from simsp.validate import summary as module
    return module
