"""No import cycle among our packages: every module can be understood (and loaded) alone.

The graph is read from the source with ast: imports at module level (not those
under `if TYPE_CHECKING:`, which never run, nor those inside functions, which run
on first use), plus the kind modules the task-kind registry imports when it
scans harness/kinds/.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.helpers import REPO

PACKAGES = ("harness", "runners", "devices", "scoring")


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and not _is_type_checking(node):
            pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)
    return found


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.split(".")
        base = base if is_package else base[:-1]
        base = base[: len(base) - (node.level - 1)]
        prefix = ".".join(base + ([node.module] if node.module else []))
    else:
        prefix = node.module or ""
    # `from .x import y` may name a submodule y or a name in x: both edges are kept
    # where such a module exists (checked against the known modules later).
    return [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports when it is loaded."""
    files = {
        _module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))
    }
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        edges: set[str] = set()
        for node in _top_level_imports(tree):
            for target in _targets(module, is_package, node):
                # Loading a.b.c loads a and a.b first.
                parts = target.split(".")
                for n in range(1, len(parts) + 1):
                    name = ".".join(parts[:n])
                    # A module's own packages are loaded before it: not a dependency.
                    if name in files and name != module and not module.startswith(name + "."):
                        edges.add(name)
        graph[module] = edges
    # The registry imports every kind module of its package when first asked.
    kinds = {m for m in files if m.startswith("harness.kinds.")}
    graph["harness.kinds.registry"] |= kinds - {"harness.kinds.registry", "harness.kinds.base"}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_kinds_do_not_import_the_site_file_models() -> None:
    # The site's task model is built from the registry; a kind importing it back
    # would be a cycle through site.py's import-time registry scan.
    graph = import_graph()
    for module in (m for m in graph if m.startswith("harness.kinds")):
        assert "harness.site" not in graph[module], module
