"""The validation sets' names, in report order: what `simsp validate --set` accepts, readable
without loading the sets (cases.py builds each; a test checks the two agree)."""

SETS = (
    "paper-table4",
    "paper-table5",
    "vtrain-single",
    "vtrain-multi",
    "published-a100",
    "published-h100",
    "published-b200",
    "fp8-pairs",
    "simumax-b200",
    "moe",
    "torch-native",
)
