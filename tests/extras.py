"""The optional extras a test may need, and the one way a test skips without one: `needs(module)`
imports the module or skips, the skip naming the extra that installs it."""

import pytest

INSTALLS = {
    "torch": "the profile extra: pip install -e '.[profile]'",
    "transformers": "the test extra: pip install -e '.[test]'",
    "hta": "the trace extra: pip install -e '.[trace]'",
    "pyarrow.parquet": "the parquet extra: pip install -e '.[parquet]'",
    "distributed": "the distributed extra: pip install -e '.[distributed]'",
    "nvMatmulHeuristics": "pip install nvidia-matmul-heuristics==0.1.0.27 (as .ci/run does)",
}
"""Module -> what installs it (pyproject.toml's optional dependencies)."""


def needs(module: str):
    """The module, or a skip that names the extra installing it."""
    return pytest.importorskip(module, reason=f"needs {module}: {INSTALLS[module]}")
