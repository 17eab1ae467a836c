"""The command-line reference page (docs/cli.md), generated from the parsers themselves: every
subcommand's --help, as argparse prints it at 100 columns. `python -m simsp.cli.reference
docs/cli.md` writes it; a test fails when the page is not this tree's."""

import os
import sys

WIDTH = "100"


def _subparsers(parser):
    """(name, parser) of each subcommand, nested ones (profile gemm, ...) included, in order."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield name, sub
                for inner, deeper in _subparsers(sub):
                    yield f"{name} {inner}", deeper


def reference() -> str:
    """The page: the top-level help, then each subcommand's."""
    from simsp.cli.main import parser

    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH  # argparse wraps to the terminal: fixed, so the page is stable
    try:
        top = parser()
        parts = [
            "# Command-line reference",
            "",
            "Generated from the parsers (`python -m simsp.cli.reference docs/cli.md`); each "
            "section is the command's `--help`.",
            "",
            "## simsp",
            "",
            "```text",
            top.format_help().rstrip(),
            "```",
        ]
        for name, sub in _subparsers(top):
            parts += ["", f"## simsp {name}", "", "```text", sub.format_help().rstrip(), "```"]
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    text = reference()
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            f.write(text)
    else:
        print(text, end="")
