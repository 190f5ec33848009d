"""The CLI's terminal output (a rich Console), plain tables and warning lines: what every
command needs, without the run's models.

Kept apart from harness/cli/render.py (progress, leaderboard and status tables), which
needs the journal's event models and so pydantic: `onsite score` loads only this.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Table


def make_console() -> Console:
    """The terminal's rich Console: fancy only on a real terminal outside CI."""
    plain = bool(os.environ.get("CI")) or not Console().is_terminal
    if plain:
        return Console(no_color=True, highlight=False, emoji=False, width=240)
    return Console()


def is_plain(console: Console) -> bool:
    """True when output goes to a pipe, a file or CI."""
    return not console.is_terminal or console.no_color


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    """A plain rich table of strings."""
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        out.add_column(column)
    for row in rows:
        out.add_row(*("-" if v is None else str(v) for v in row))
    return out


# How Python shows a warning, kept for the warnings that are not the operator's.
_python_showwarning = warnings.showwarning


def show_warnings_plainly() -> None:
    """Show a warning meant for the operator (one that carries a ``problem``, such as an old
    spelling in a site file: harness.errors.SiteDeprecationWarning) as one plain
    ``warning:`` line on stderr, as errors are shown; other warnings as Python shows them."""
    warnings.showwarning = _show_warning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    problem = getattr(message, "problem", None)
    if problem is None:
        _python_showwarning(message, category, filename, lineno, file, line)
        return
    # Plain, as an error line: never re-wrapped or coloured.
    sys.stderr.write(f"warning: {problem}\n")
