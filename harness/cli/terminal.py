"""The CLI's rich console and plain tables: what every command needs, without the run's models.

Kept apart from harness/cli/render.py (progress, leaderboard and status tables), which
needs the journal's event models and so pydantic: `onsite score` loads only this.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table


def make_console() -> Console:
    """A console that is fancy only on a real terminal outside CI."""
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
