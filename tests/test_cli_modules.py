"""One module per command (issue 27): a command's handler and the ``add_<command>_parser``
that registers it live together in a module of their own, and harness/cli/main.py keeps
only the parser and what every command shares."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from harness.cli.main import build_parser


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    return next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)


def _handlers(parser: argparse.ArgumentParser) -> list[Callable[..., Any]]:
    """The handler a command runs, or those of its own subcommands (`score FAMILY`)."""
    handler = parser.get_default("handler")
    if handler is not None:
        return [handler]
    sub = _subparsers(parser)
    return [h for p in (sub.choices.values() if sub else ()) for h in _handlers(p)]


def _module(name: str, parser: argparse.ArgumentParser) -> str:
    modules = {h.__module__ for h in _handlers(parser)}
    assert len(modules) == 1, f"`onsite {name}` runs code of {sorted(modules)}"
    [module] = modules
    assert module != "harness.cli.main", f"`onsite {name}` still lives in main.py"
    registers = [
        n for n in vars(sys.modules[module]) if n.startswith("add_") and n.endswith("_parser")
    ]
    assert registers, f"{module} runs `onsite {name}` but does not register its parser"
    return module


def test_each_command_has_a_module_of_its_own() -> None:
    sub = _subparsers(build_parser())
    assert sub is not None
    # The commands `onsite --help` lists; an old name kept working (no help line) is the
    # same command as its new one, and lives with it.
    shown = {action.dest for action in sub._choices_actions}
    homes: dict[str, str] = {}
    for name, parser in sub.choices.items():
        module = _module(name, parser)
        if name in shown:
            assert module not in homes, f"`onsite {name}` shares {module} with {homes[module]}"
            homes[module] = name
    assert {"run", "status", "report", "score"} <= set(homes.values())
    assert set(homes.values()) == shown


def test_an_old_command_name_works_but_is_not_offered() -> None:
    parser = build_parser()
    usage = parser.format_help()
    assert "copy-run" in usage and "export-store" not in usage
    args = parser.parse_args(["export-store", "runs/demo", "postgresql://h/db"])
    assert args.handler.__module__ == "harness.cli.copy_run"
