"""Lazy re-exports (PEP 562): a package's public names load their modules on first use.

A package's ``__init__`` says where each of its public names lives; importing the package
loads none of those modules, and reading a name (``package.name`` or ``from package import
name``) loads the one module that defines it. So ``onsite --help`` does not pay for the
controller, the transports' libraries or numpy. Used by every package of the project, so
it imports nothing of the project (docs/architecture.md, "The layers")::

    from lazy_exports import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "Controller": ".engine.controller",  # relative to the package
            "list_serial_ports": "devices:list_ports",  # another module, another name
        },
    )

Keep the names' ``if TYPE_CHECKING:`` imports beside the table: mypy reads those.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping
from importlib import import_module
from importlib.util import resolve_name
from typing import Any

__all__ = ["exports", "lazy_exports"]

# Package -> public name -> (absolute module, its name there), for every package that
# installed lazy names: read by `exports` (tests/test_import_graph.py counts these loads).
_TABLES: dict[str, dict[str, tuple[str, str]]] = {}


class _LazyModule(types.ModuleType):
    """A module with lazy names: a submodule imported later never hides one of them.

    Importing ``harness.leaderboard`` binds the submodule to the package's ``leaderboard``
    attribute, where callers expect the function of that name (as when every name was
    imported eagerly); the binding is dropped and the name stays with ``__getattr__``.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _TABLES.get(self.__name__, {}):
            return
        super().__setattr__(name, value)


def lazy_exports(
    module_name: str, table: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of module ``module_name`` for its lazy names.

    ``table`` maps each public name to ``"module"`` (the same name there) or
    ``"module:name"``; a module starting with a dot is relative to the package. A name's
    value is kept in the module once loaded; a name not in the table is an AttributeError.
    """
    module = sys.modules[module_name]
    anchor = module_name if hasattr(module, "__path__") else module_name.rpartition(".")[0]
    resolved: dict[str, tuple[str, str]] = {}
    for name, where in table.items():
        path, _, attr = where.partition(":")
        resolved[name] = (resolve_name(path, anchor), attr or name)
    _TABLES[module_name] = resolved
    namespace = module.__dict__
    module.__class__ = _LazyModule

    def __getattr__(name: str) -> Any:
        try:
            path, attr = resolved[name]
        except KeyError:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}") from None
        value = getattr(import_module(path), attr)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *resolved})

    return __getattr__, __dir__


def exports(module_name: str) -> dict[str, tuple[str, str]]:
    """The lazy names of an imported module: public name -> (absolute module, its name there).

    Empty for a module that has none.
    """
    return dict(_TABLES.get(module_name, {}))
