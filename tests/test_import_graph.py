"""The house's arrows (docs/architecture.md): read from the code's own imports with `ast`.

Every import counts, at module level or inside a function (a lazy import is still an arrow);
only imports under `if TYPE_CHECKING:` are left out (they never run). Three rules:
no circle between modules, no circle between packages, and the layers point down.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent / "scripts"

# Lower layers may not import any package of a higher layer (the engine sits on top of the
# rooms it drives; the rooms sit on scoring and statistics; everything sits on core).
LAYERS = [
    {"run", "shard"},
    {"invoke", "traces", "judge", "rundir", "replay", "simulate"},
    {"score", "stats", "schemas"},
    {"core"},
]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> list[ast.ImportFrom | ast.Import]:
    found: list[ast.ImportFrom | ast.Import] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    visit(other)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def module_graph(root: Path) -> dict[str, set[str]]:
    """{module: modules of `assay` it imports} for every module under root/assay."""
    def name_of(path: Path) -> str:
        parts = list(path.relative_to(root).with_suffix("").parts)
        return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)

    paths = {name_of(p): p for p in (root / "assay").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for mod, path in paths.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
                continue
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                targets.add(sub if sub in paths else target)
        graph[mod] = {t for t in targets if t in paths and t != mod}
    return graph


def package_of(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 2 or (ROOT / "assay" / parts[-1]).is_dir() else "(top)"


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        comp.append(top)
                        if top == node:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for mod, targets in graph.items():
        src = package_of(mod)
        out.setdefault(src, set()).update(package_of(t) for t in targets if package_of(t) != src)
    return out


def upward_arrows(pgraph: dict[str, set[str]]) -> list[str]:
    rank = {pkg: i for i, layer in enumerate(LAYERS) for pkg in layer}
    bad = []
    for src, targets in pgraph.items():
        if src not in rank:
            continue
        for tgt in targets:
            if tgt in rank and rank[tgt] < rank[src]:
                bad.append(f"{src} -> {tgt}")
            elif tgt not in rank and rank[src] > 0:
                bad.append(f"{src} -> {tgt} (a room below the engine imports a package outside the layers)")
    return sorted(bad)


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    """The library's import graph, parsed once when a test of this file first runs (not at
    collection, which every parallel worker repeats)."""
    return module_graph(ROOT)


def test_no_module_imports_another_in_a_circle(graph):
    assert cycles(graph) == []


def test_no_package_imports_another_in_a_circle(graph):
    assert cycles(package_graph(graph)) == []


def test_the_layers_point_down(graph):
    assert upward_arrows(package_graph(graph)) == []


def test_the_engine_rooms_exist_where_the_house_says():
    for pkg in ("run", "invoke", "traces", "judge", "rundir", "compare", "view"):
        assert (ROOT / "assay" / pkg / "__init__.py").is_file(), pkg
    assert not (ROOT / "assay" / "run" / "invoke").exists()


# ------------------------------------------------------------- the checks can fail

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / "assay" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_lazy_import_is_an_arrow_and_type_checking_is_not(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "", "a/__init__.py": "", "b/__init__.py": "",
        "a/x.py": "def f():\n    from ..b import y\n",
        "b/y.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a import x\n",
    })
    graph = module_graph(root)
    assert graph["assay.a.x"] == {"assay.b.y"} and graph["assay.b.y"] == set()
    assert cycles(graph) == []


def test_a_circle_and_an_upward_arrow_are_found(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "", "core/__init__.py": "", "run/__init__.py": "",
        "core/low.py": "from ..run import high\n",
        "run/high.py": "from ..core import low\n",
    })
    graph = module_graph(root)
    assert cycles(graph) == [["assay.core.low", "assay.run.high"]]
    pgraph = {"core": {"run"}, "run": {"core"}}
    assert cycles(pgraph) == [["core", "run"]]
    assert upward_arrows(pgraph) == ["core -> run"]


@pytest.mark.parametrize("name", ["secrets", "strict_yaml"])
def test_shared_helpers_live_in_core(name):
    assert (ROOT / "assay" / "core" / f"{name}.py").is_file()
