"""DESIGN.md's import rule: only engine imports simpy, only timeline plotly, only config yaml,
only profiler torch."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "simsp"
ALLOWED = {
    "simpy": {"engine.py"},
    "plotly": {"timeline"},
    "yaml": {"config.py"},
    "torch": {"profiler"},
    "hta": {"kineto"},
}


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_the_owning_module_imports_each_heavy_library():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        for lib, owners in ALLOWED.items():
            if lib in imported_roots(path) and not (rel.name in owners or rel.parts[0] in owners):
                offenders.append(f"{rel} imports {lib}")
    assert not offenders, offenders


def test_importing_the_package_does_not_pull_torch():
    import subprocess
    import sys

    code = "import sys, simsp.cli, simsp.report, simsp.memory; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
