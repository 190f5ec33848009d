"""The CLI's terminal output (a rich Console), plain tables and warning lines: what every
command needs, without the run's models.

Kept apart from harness/cli/render.py (progress, leaderboard and status tables), which
needs the journal's event models and so pydantic: `onsite score` loads only this.
"""

from __future__ import annotations

import os
import re
import sys
import unicodedata
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text


def make_console() -> Console:
    """The terminal's rich Console: fancy only on a real terminal outside CI."""
    plain = bool(os.environ.get("CI")) or not Console().is_terminal
    if plain:
        return Console(no_color=True, highlight=False, emoji=False, width=240)
    return Console()


def is_plain(console: Console) -> bool:
    """True when output goes to a pipe, a file or CI."""
    return not console.is_terminal or console.no_color


# A terminal escape sequence, dropped whole: a string (OSC: window titles, hyperlinks,
# clipboard writes; DCS, SOS, PM, APC) up to its terminator, a CSI (colours, cursor moves,
# screen clears), or ESC with its intermediate and final bytes (ESC c resets the terminal).
_ESCAPE = re.compile(
    r"(?:\x1b[\]P^_X]|[\x9d\x90\x98\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?"
)
# Characters that reorder what follows on the line (bidirectional overrides and isolates).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def printable(text: str) -> str:
    """`text` made safe to show on the operator's terminal, on one line.

    A participant writes its ``ready`` name and version, its stderr and its
    messages: ESC sequences could recolour or clear the screen, set the window
    title or forge lines, CR could overwrite a line, BEL ring. Escape sequences
    are dropped whole; every other control character (C0, DEL, C1) and each
    line or paragraph separator becomes a space; bidirectional overrides are
    dropped.
    """
    if text.isprintable():
        return text
    text = _ESCAPE.sub("", text)
    return "".join(
        " " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") else "" if ch in _BIDI else ch
        for ch in text
    )


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    """A plain rich table of strings: each cell as written (no markup), made `printable`."""
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        out.add_column(column)
    for row in rows:
        out.add_row(*(Text("-" if v is None else printable(str(v))) for v in row))
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
