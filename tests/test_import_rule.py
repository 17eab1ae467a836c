"""The tiers of docs/architecture.md, checked on every import of the package, imports inside
functions included: each module imports only tiers below its own (or its own package), and no
cycle closes between modules or between the packages of any folder. Also the heavy-library rule:
only the engine imports simpy, only present plotly and rich, only io yaml, only measure torch and
HTA."""

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "simsp"

TIERS = (
    ("errors",),
    ("units",),
    ("textfile",),
    ("spec",),
    ("model",),
    ("tables",),
    ("cost",),
    ("sim",),
    ("io",),
    ("api",),
    ("present",),
    ("measure", "validate", "sweep"),
    ("cli",),
    ("__main__",),
)
"""Bottom to top. A tier's packages import lower tiers only; packages of one tier import none of
each other (the edges know the core, not each other, save present below them)."""
RANK = {name: rank for rank, names in enumerate(TIERS) for name in names}

ALLOWED = {
    "simpy": {"sim/engine.py"},
    "plotly": {"present"},
    "rich": {"present"},
    "yaml": {"io"},
    "torch": {"measure"},
    "hta": {"measure"},
}


def modules() -> dict[str, Path]:
    """Dotted name -> file of every module of the package (a package is its __init__)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports_of(name: str, path: Path, known) -> set[str]:
    """The package's modules `name` imports, at any depth of its code."""
    out = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        targets = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        elif isinstance(node, ast.Call) and _imports_by_name(node):
            arg = node.args[0] if node.args else None
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                targets = [arg.value]
            else:  # an import whose target the rule cannot read is refused outright
                targets = ["simsp.<computed>"]
        for t in targets:
            if t in API_NAMES:  # `from simsp import run`: the lazy public API is simsp.api
                t = "simsp.api"
            if t == "simsp.<computed>":
                out.add(t)
                continue
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t.startswith("simsp") and t != name:
                out.add(t)
    return out


API_NAMES = {
    f"simsp.{n}" for n in ("estimate", "load_hardware", "load_workload", "memory_report", "run")
}
"""simsp/__init__.py's lazy names (PEP 562), which import simsp.api."""


def _imports_by_name(node: ast.Call) -> bool:
    """importlib.import_module(...) or __import__(...)."""
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "import_module") or (
        isinstance(f, ast.Name) and f.id in ("import_module", "__import__")
    )


def graph() -> dict[str, set[str]]:
    known = modules()
    edges = {n: imports_of(n, p, known) for n, p in known.items()}
    for n in edges:  # importing a.b.c runs a and a.b first; their own imports are theirs
        edges[n] = {t for t in edges[n] if t != "simsp"}
    edges["simsp"] = set()  # its lazy __getattr__ imports simsp.api by name, on first use
    return edges


def tier(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else ""


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_tier():
    assert not [n for n in modules() if n != "simsp" and tier(n) not in RANK]


def test_every_import_names_its_module():
    """No import_module / __import__ of a computed name hides an edge from the checks."""
    assert not [a for a, bs in graph().items() if "simsp.<computed>" in bs]


def test_the_public_api_names_are_simsp_s():
    import simsp

    assert {f"simsp.{n}" for n in simsp._API} == API_NAMES


def test_no_import_runs_upward_or_across_a_tier():
    bad = [
        f"{a} imports {b}"
        for a, bs in graph().items()
        if a != "simsp"
        for b in bs
        if tier(a) != tier(b) and RANK[tier(b)] >= RANK[tier(a)]
    ]
    assert not bad, "\n".join(sorted(bad))


def test_no_cycle_between_modules():
    assert not cycles(graph())


def test_no_cycle_between_the_packages_of_any_folder():
    """For each folder, its modules and sub-packages as nodes: the imports between them are
    acyclic (sim/schedule and sim/engine, measure/kineto and measure/profiler, ...)."""
    edges = graph()
    found = []
    for folder in {n.rpartition(".")[0] for n in edges} | {"simsp"}:
        depth = len(folder.split(".")) + 1

        def node(n, depth=depth, folder=folder):
            return ".".join(n.split(".")[:depth]) if n.startswith(folder + ".") else None

        g = defaultdict(set)
        for a, bs in edges.items():
            for b in bs:
                na, nb = node(a), node(b)
                if na and nb and na != nb:
                    g[na].add(nb)
        found += cycles(g)
    assert not found, found


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_the_test_sees_lazy_and_cyclic_imports(tmp_path):
    """The checks would fail on an import inside a function that closes a cycle."""
    a = tmp_path / "a.py"
    a.write_text("def f():\n    from simsp.cli import main\n")
    assert imports_of("simsp.spec.a", a, {"simsp.cli", "simsp.spec.a"}) == {"simsp.cli"}
    a.write_text("from simsp import run\nimport importlib\nimportlib.import_module('simsp.cli')\n")
    known = {"simsp", "simsp.api", "simsp.cli", "simsp.spec.a"}
    assert imports_of("simsp.spec.a", a, known) - {"simsp"} == {"simsp.api", "simsp.cli"}
    assert cycles({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == [["x", "y", "z"]]


def test_only_the_owning_module_imports_each_heavy_library():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        for lib, owners in ALLOWED.items():
            if lib in imported_roots(path) and not (
                rel.as_posix() in owners or rel.parts[0] in owners
            ):
                offenders.append(f"{rel} imports {lib}")
    assert not offenders, offenders


def test_importing_the_package_does_not_pull_torch():
    code = (
        "import sys, simsp.cli.main, simsp.present.report, simsp.sim.memory; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
