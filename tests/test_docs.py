"""The documentation: the README stays two screens, the CLI reference is the parsers' own help,
and the site's pages include files that exist (mkdocs build --strict runs in .ci/run)."""

import re
from pathlib import Path

from simsp.cli.reference import reference

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_two_screens():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 150


def test_the_cli_reference_is_the_parsers_help():
    page = (ROOT / "docs" / "cli.md").read_text()
    assert page == reference(), "run: python -m simsp.cli.reference docs/cli.md"


def test_the_support_page_is_this_trees():
    """docs/support.md: every shipped hardware file, stack preset and Hugging Face family, with
    the accuracy the validation measured for it."""
    from simsp.present.support import page

    text = (ROOT / "docs" / "support.md").read_text()
    assert text == page(), "run: python -m simsp.present.support docs/support.md"
    for hw in (ROOT / "hardware").glob("*.yaml"):
        assert f"| `{hw.stem}` |" in text
    assert "| `qwen3_moe` | yes |" in text and "| `torchtitan` |" in text


def test_every_subcommand_has_a_section():
    page = (ROOT / "docs" / "cli.md").read_text()
    for name in ("run", "memory", "layer", "plan", "sweep", "compare", "validate", "calibrate"):
        assert f"\n## simsp {name}\n" in page


def test_the_pages_name_files_that_exist():
    """Every snippet the site includes, and every page the README and the nav link to."""
    for page in (ROOT / "docs").glob("*.md"):
        for included in re.findall(r'--8<-- "([^"]+)"', page.read_text()):
            assert (ROOT / included).is_file(), f"{page.name} includes {included}"
    readme = (ROOT / "README.md").read_text()
    for link in re.findall(r"\]\((docs/[^)#]+)", readme):
        assert (ROOT / link).is_file(), link
    nav = (ROOT / "mkdocs.yml").read_text()
    for name in re.findall(r": (\w+\.md)", nav):
        assert (ROOT / "docs" / name).is_file(), name
