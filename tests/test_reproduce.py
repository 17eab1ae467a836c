"""`simsp reproduce`: every table and figure of the issue, paper beside simsp."""

import pytest

from simsp.cli.main import main
from simsp.validate.reproduce import HEADERS


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    out = tmp_path_factory.mktemp("repro")
    return out


def test_reproduce_prints_every_table_and_writes_the_report(output, capsys):
    assert main(["reproduce", "--out", str(output)]) == 0
    text = capsys.readouterr().out
    for title in HEADERS:
        assert title in text
    page = (output / "reproduction.html").read_text()
    assert page.count("js-plotly-plot") + page.count("plotly-graph-div") >= 4
    for title in HEADERS:
        assert title.split(":")[0] in page
    # Table 2's 175B row as worked out in reference/paper.md §1 (MiB)
    assert "552.0" in text and "342.0" in text and "102.0" in text
