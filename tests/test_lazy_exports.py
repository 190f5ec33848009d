"""The one lazy-name helper (lazy_exports) and the packages that use it.

A package's public names load their modules on first use; a name loads exactly the
module its table names; an unknown name is an AttributeError; a submodule imported
later never hides a public name of the same name; dir() lists the lazy names.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from importlib import import_module
from pathlib import Path

import pytest

import lazy_exports
from tests.helpers import REPO
from tests.test_import_graph import lazy_tables, module_files

PACKAGE = """
from lazy_exports import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__, {"thing": ".thing", "Other": ".other:Renamed", "dumps": "json"}
)
__all__ = ["Other", "dumps", "thing"]
"""


@pytest.fixture
def lazypkg(tmp_path: Path) -> Iterator[str]:
    """A package of three lazy names in a fresh directory on sys.path: its name."""
    root = tmp_path / "lazypkg"
    root.mkdir()
    (root / "__init__.py").write_text(PACKAGE, encoding="utf-8")
    (root / "thing.py").write_text("def thing() -> str:\n    return 'the function'\n")
    (root / "other.py").write_text("class Renamed:\n    pass\n")
    sys.path.insert(0, str(tmp_path))
    try:
        yield "lazypkg"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.split(".")[0] == "lazypkg"]:
            del sys.modules[name]


def test_a_name_loads_its_module_on_first_use(lazypkg: str) -> None:
    pkg = import_module(lazypkg)
    assert f"{lazypkg}.thing" not in sys.modules and f"{lazypkg}.other" not in sys.modules
    assert pkg.Other.__name__ == "Renamed"  # "module:name": another name there
    assert f"{lazypkg}.other" in sys.modules and f"{lazypkg}.thing" not in sys.modules
    assert pkg.dumps is json.dumps  # an absolute module
    assert lazy_exports.exports(lazypkg) == {
        "thing": (f"{lazypkg}.thing", "thing"),
        "Other": (f"{lazypkg}.other", "Renamed"),
        "dumps": ("json", "dumps"),
    }


def test_a_submodule_never_hides_a_name(lazypkg: str) -> None:
    pkg = import_module(lazypkg)
    # The import binds the submodule on the package under the function's name.
    import_module(f"{lazypkg}.thing")
    assert pkg.thing() == "the function"
    from lazypkg import thing

    assert thing() == "the function"


def test_an_unknown_name_is_an_attribute_error(lazypkg: str) -> None:
    pkg = import_module(lazypkg)
    with pytest.raises(AttributeError, match="module 'lazypkg' has no attribute 'nothing'"):
        pkg.nothing  # noqa: B018
    with pytest.raises(ImportError):
        from lazypkg import nothing  # noqa: F401
    assert not hasattr(pkg, "nothing")


def test_dir_lists_the_lazy_names_before_and_after_use(lazypkg: str) -> None:
    pkg = import_module(lazypkg)
    assert {"thing", "Other", "dumps"} <= set(dir(pkg))
    pkg.thing  # noqa: B018
    listed = dir(pkg)
    assert len(listed) == len(set(listed)) and {"thing", "Other", "dumps"} <= set(listed)


def _lazy_packages() -> dict[str, dict[str, str]]:
    return lazy_tables(module_files())


def test_every_lazy_name_of_ours_is_its_modules_object() -> None:
    packages = _lazy_packages()
    assert {"harness", "harness.cli", "harness.engine", "harness.store", "devices"} <= set(packages)
    for package in packages:
        module = import_module(package)
        for name, (where, attr) in lazy_exports.exports(package).items():
            assert getattr(module, name) is getattr(import_module(where), attr), (package, name)
        public = getattr(module, "__all__", [])
        assert set(public) <= set(dir(module)), package
        for name in public:
            getattr(module, name)


def test_importing_a_lazy_package_loads_none_of_its_names_modules(tmp_path: Path) -> None:
    # Each package in a fresh interpreter: what its own import statements load, nothing of
    # its table (a table naming a module the package also imports eagerly would be a lie).
    packages = _lazy_packages()
    code = (
        "import importlib, json, sys\n"
        "importlib.import_module(sys.argv[1])\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    for package, table in packages.items():
        proc = subprocess.run(
            [sys.executable, "-c", code, package],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        loaded = set(json.loads(proc.stdout))
        early = sorted(set(table.values()) & loaded - {package})
        assert not early, f"import {package} loaded {early}"


def test_the_cli_exports_its_entry_point() -> None:
    import harness.cli
    import harness.cli.main  # binds the submodule's name on the package

    assert harness.cli.main is sys.modules["harness.cli.main"].main
    assert harness.cli.main.__module__ == "harness.cli.main"
