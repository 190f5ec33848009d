"""No import cycle among our modules, and imports point down the layers.

The graph is read from the source with ast. It counts every import statement that can
run, wherever it stands: at module level, in functions and methods (they run on first
use), in class bodies, try and if blocks; not those under `if TYPE_CHECKING:`, which
never run. Two kinds of import are no statement and are added:

- a lazy name (``lazy_exports``): reading one of a package's lazy names imports the
  module its table names. The tables are read from the imported packages; ``from P
  import name`` depends on that name's module, and a statement that binds a package
  ``P`` itself (``import P``, ``from Q import P``), whose names may then all be read,
  depends on every module of P's table;
- the task-kind registry imports every kind module of its package when first asked, and
  the transport registry every runners/*_device.py.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Mapping
from pathlib import Path

import lazy_exports
from tests.helpers import REPO

PACKAGES = ("harness", "runners", "devices", "scoring")
# Top-level modules of ours outside the packages.
MODULES = ("lazy_exports",)

# What each layer may import of ours besides itself (docs/architecture.md, "The layers").
LAYERS = {
    "lazy_exports": (),
    "scoring": ("lazy_exports",),
    "devices": ("lazy_exports",),
    "runners": ("lazy_exports", "devices"),
    "harness": ("lazy_exports", "runners", "scoring"),
}

Import = ast.Import | ast.ImportFrom


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files() -> dict[str, Path]:
    """Every module of ours: dotted name -> file."""
    files = {
        _module_name(p): p for package in PACKAGES for p in sorted((REPO / package).rglob("*.py"))
    }
    files.update({name: REPO / f"{name}.py" for name in MODULES})
    return files


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST) -> list[Import]:
    """Every import statement in ``tree`` that can run: all but those under TYPE_CHECKING."""
    found: list[Import] = []
    pending: list[ast.AST] = [tree]
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If) and _is_type_checking(node):
            pending.extend(node.orelse)
        else:
            pending.extend(ast.iter_child_nodes(node))
    return found


def _from_module(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute name of the module a ``from ... import`` statement reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, is_package: bool, node: Import) -> list[str]:
    """The modules a statement names: each may be one of ours (checked by the caller)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    prefix = _from_module(module, is_package, node)
    # `from .x import y` may name a submodule y or a name in x: both edges are kept
    # where such a module exists (checked against the known modules later).
    return [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]


def _lazy_loads(
    module: str, is_package: bool, node: Import, tables: Mapping[str, Mapping[str, str]]
) -> set[str]:
    """The modules a statement loads through packages' lazy names."""
    if isinstance(node, ast.Import):
        # `import a.b` reaches a.b's names as a.b.NAME: a.b's table, all of it.
        return {m for alias in node.names for m in tables.get(alias.name, {}).values()}
    prefix = _from_module(module, is_package, node)
    table = tables.get(prefix, {})
    loads: set[str] = set()
    for alias in node.names:
        if alias.name == "*":  # reads every name of __all__
            loads |= set(table.values())
        elif alias.name in table:
            loads.add(table[alias.name])
        # A lazy package bound to a name: any of its names may be read later.
        loads |= set(tables.get(f"{prefix}.{alias.name}", {}).values())
    return loads


def graph_of(
    sources: Mapping[str, str],
    packages: frozenset[str] = frozenset(),
    tables: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, set[str]]:
    """Module -> the modules of ours it imports, from each module's source text.

    ``packages`` names the modules that are packages (an ``__init__``); ``tables`` holds each
    lazy package's lazy names: public name -> the module that defines it.
    """
    tables = tables or {}
    graph: dict[str, set[str]] = {}
    for module, source in sources.items():
        is_package = module in packages
        edges: set[str] = set()
        for node in _imports(ast.parse(source)):
            for target in _targets(module, is_package, node) + sorted(
                _lazy_loads(module, is_package, node, tables)
            ):
                # Loading a.b.c loads a and a.b first.
                parts = target.split(".")
                for n in range(1, len(parts) + 1):
                    name = ".".join(parts[:n])
                    # A module's own packages are loaded before it: not a dependency.
                    if name in sources and name != module and not module.startswith(name + "."):
                        edges.add(name)
        graph[module] = edges
    return graph


def lazy_tables(files: Mapping[str, Path]) -> dict[str, dict[str, str]]:
    """Each module that installs lazy names -> its table (name -> defining module)."""
    tables: dict[str, dict[str, str]] = {}
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if not any(
            isinstance(n, ast.ImportFrom) and n.module == "lazy_exports" for n in _imports(tree)
        ):
            continue
        importlib.import_module(module)
        table = {name: where for name, (where, _) in lazy_exports.exports(module).items()}
        # A module that imports the helper and installs no table would hide its loads here.
        assert table, f"{module} imports lazy_exports but has no lazy names"
        tables[module] = table
    return tables


def _sources() -> tuple[dict[str, str], frozenset[str]]:
    """Each module's source, and which modules are packages."""
    files = module_files()
    sources = {module: path.read_text(encoding="utf-8") for module, path in files.items()}
    return sources, frozenset(m for m, p in files.items() if p.name == "__init__.py")


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports when it is loaded or used."""
    sources, packages = _sources()
    graph = graph_of(sources, packages, lazy_tables(module_files()))
    # The registry imports every kind module of its package when first asked.
    kinds = {m for m in sources if m.startswith("harness.kinds.")}
    graph["harness.kinds.registry"] |= kinds - {"harness.kinds.registry", "harness.kinds.base"}
    # The transport registry imports every runners/*_device.py when first asked.
    devices = {m for m in sources if m.startswith("runners.") and m.endswith("_device")}
    graph["runners.registry"] |= devices
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


def test_imports_point_down_the_layers() -> None:
    # Who imports: the statements' modules, and a lazy package for the loads its table
    # makes (`from runners import list_serial_ports` is runners' import of devices).
    sources, packages = _sources()
    graph = graph_of(sources, packages)
    for package, table in lazy_tables(module_files()).items():
        graph[package] |= set(table.values())
    for module, edges in graph.items():
        layer = module.split(".")[0]
        allowed = (layer, *LAYERS[layer])
        wrong = sorted(e for e in edges if e.split(".")[0] not in allowed)
        assert not wrong, f"{module} imports {wrong}: {layer} may import only {allowed}"


def test_the_check_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_check_sees_a_cycle_through_an_import_inside_a_function() -> None:
    # b imports a only when f runs, in a method, in a try block: still a cycle.
    inside = (
        "class C:\n"
        "    def f(self):\n"
        "        try:\n"
        "            from . import a\n"
        "        except ImportError:\n"
        "            pass\n"
    )
    sources = {"p": "", "p.a": "from p.b import C\n", "p.b": inside}
    assert cycles(graph_of(sources, frozenset({"p"}))) == [["p.a", "p.b"]]
    # Under `if TYPE_CHECKING:` it never runs: no cycle; its `else:` does run.
    checking = "if TYPE_CHECKING:\n    import p.a\n"
    sources["p.b"] = checking
    assert cycles(graph_of(sources, frozenset({"p"}))) == []
    sources["p.b"] = checking + "else:\n    def g():\n        import p.a\n"
    assert cycles(graph_of(sources, frozenset({"p"}))) == [["p.a", "p.b"]]


def test_the_check_sees_a_cycle_through_a_lazy_name() -> None:
    # p.x reads p's lazy name Thing, which loads p.y, which imports p.x.
    sources = {"p": "", "p.x": "def f():\n    from p import Thing\n", "p.y": "import p.x\n"}
    tables = {"p": {"Thing": "p.y"}}
    assert cycles(graph_of(sources, frozenset({"p"}))) == []
    assert cycles(graph_of(sources, frozenset({"p"}), tables)) == [["p.x", "p.y"]]
    # Binding the package reads any of its names later.
    for binds in ("import p\n", "from p import *\n"):
        sources["p.x"] = binds
        assert cycles(graph_of(sources, frozenset({"p"}), tables)) == [["p.x", "p.y"]]
    # So does `from r import p` for a lazy package r.p.
    sources = {"r": "", "r.p": "", "r.p.y": "import r.x\n", "r.x": "from r import p\n"}
    tables = {"r.p": {"Thing": "r.p.y"}}
    assert cycles(graph_of(sources, frozenset({"r", "r.p"}))) == []
    assert cycles(graph_of(sources, frozenset({"r", "r.p"}), tables)) == [["r.p.y", "r.x"]]


def test_the_lazy_tables_are_read() -> None:
    tables = lazy_tables(module_files())
    assert {"harness", "harness.cli", "harness.store", "harness.engine", "runners"} <= set(tables)
    assert tables["harness"]["Controller"] == "harness.engine.controller"
    assert tables["runners"]["list_serial_ports"] == "devices"
    # `from harness import __version__` (the manifest, `onsite --version`) loads its module.
    assert "harness.version" in import_graph()["harness.engine.manifest"]


def test_kinds_do_not_import_the_site_file_models() -> None:
    # The site's task model is built from the registry; a kind importing it back
    # would be a cycle through site.py's import-time registry scan.
    graph = import_graph()
    for module in (m for m in graph if m.startswith("harness.kinds")):
        assert "harness.site" not in graph[module], module
