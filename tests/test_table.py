"""The tables (present/table.py, laid out by rich): plain text, cells as written, and the
tables a newcomer meets first fit a 100-column terminal."""

from simsp.api import run
from simsp.io.config import load_hardware, load_workload
from simsp.present.compare import compare_table
from simsp.present.table import UNFOLDED, Column, render, words
from simsp.sweep import load_spec, run_sweep
from simsp.sweep.summary import best, plan_table, table


def test_cells_are_text_aligned_by_kind_without_trailing_blanks():
    """Words left, numbers right, a space between columns; a cell that looks like rich markup
    or holds an escape prints as written, and no line ends in a blank."""
    text = render(
        [words("name"), Column("time s")],
        [["[bold]x[/bold]", "1.5"], ["dgx-h100", "13.402"]],
        width=UNFOLDED,
    )
    assert text.splitlines() == [
        "name           time s",
        "[bold]x[/bold]    1.5",
        "dgx-h100       13.402",
    ]
    tab = render([words("name"), Column("n")], [["a\tb", "1"]], width=UNFOLDED)
    assert tab.splitlines()[1] == "a\\tb 1"  # a tab would have eaten the b


def test_words_fold_numbers_never():
    """Squeezed, a long label folds onto a second line and every number stays whole."""
    text = render(
        [words("hardware", fold=True), Column("tokens/s")],
        [["dgx-h100 [network.nic_gbps=800, gpu.hbm_gib=96]", "1,234,567"]],
        width=30,
    )
    assert all(len(line) <= 30 for line in text.splitlines())
    assert "1,234,567" in text and len(text.splitlines()) > 2


def _sweep_rows(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "workload: workloads/gpt3-175b.yaml\nhardware: dgx-a100-80gb\ngpus: 64\n"
        "grid: {tp: [4, 8], pp: [4, 8], micro_batch: [1, 2], recompute: [selective, full]}\n"
    )
    return run_sweep(load_spec(spec, allow_outside=True), jobs=1, progress=False).rows


def test_the_first_tables_fit_a_100_column_terminal(tmp_path):
    """`sweep`'s best rows (the settings all rows share said once above them), `plan`'s and
    `compare`'s tables, laid out for a 100-column terminal, keep every line within it and every
    number whole; one row alone, or a terminal too narrow for the numbers, is laid out unfolded
    rather than cut."""
    rows = best(_sweep_rows(tmp_path), 10)
    sweep = table(rows, width=100)
    assert sweep.startswith("every row: hardware=dgx-a100-80gb, gpus=64")
    hw = load_hardware("hardware/dgx-a100-80gb.yaml")
    plan = plan_table(rows, ("tp", "cp", "pp", "dp", "micro_batch", "schedule"), hw, width=100)
    w = load_workload("workloads/llama-3.1-70b.yaml")
    results = [run(w, load_hardware(f"hardware/{h}.yaml")) for h in ("dgx-h100", "dgx-b200")]
    compared = compare_table(results, width=100)
    for text in (sweep, plan, compared):
        assert max(len(line) for line in text.splitlines()) <= 100, text
    for r in rows:
        for cell in (f"{float(r['iteration_time_s']):.3f}", f"{float(r['tokens_per_s']):,.0f}"):
            assert cell in sweep
    for r in results:
        assert f"{r.iteration_time_s:.3f}" in compared and f"{r.tokens_per_s:,.0f}" in compared
        assert r.hardware.label[:8] in compared
    one = table(rows[:1], width=80)
    assert "dgx-a100-80gb" in one and f"{float(rows[0]['iteration_time_s']):.3f}" in one
    narrow = compare_table(results, width=50)
    assert "dgx-h100" in narrow and f"{results[0].iteration_time_s:.3f}" in narrow
