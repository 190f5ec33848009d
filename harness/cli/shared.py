"""What the command modules share: the exit codes of `onsite`, the argument that
names a run (a directory or a run in PostgreSQL), and ``--encoding``'s type.

Apart from harness/cli/main.py, which imports every command module to build the
parser: a command importing these from there would be an import cycle.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_BAD_INPUT = 2
# Ended by Ctrl-C or SIGTERM (128 + SIGINT, as a shell reports it).
EXIT_INTERRUPTED = 130


def add_run_location(parser: argparse.ArgumentParser) -> None:
    """The positional ``run_dir`` of a command that reads a run, wherever it is kept."""
    parser.add_argument(
        "run_dir", help="a run directory, or a run in PostgreSQL: postgresql://HOST/DB?run=NAME"
    )


def text_encoding(text: str) -> str:
    """``--encoding``'s argparse type: harness.kinds.base's, loaded only when an
    ``--encoding`` is given so that building the parser loads no kind."""
    from harness.kinds.base import text_encoding as parse

    return parse(text)


def scored_or_reported(compute: Callable[[], T]) -> T | None:
    """``compute()``, or None after writing the input error it raised to stderr.

    Shared by `onsite score`, `onsite compare` and `onsite meta`: the readers name the
    file and line, and an unreadable path gets its fix.
    """
    from scoring.errors import FormatError

    try:
        return compute()
    except (FormatError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
    except OSError as exc:
        sys.stderr.write(f"error: {_os_error(exc)}\n")
    return None


def _os_error(exc: OSError) -> str:
    """An unreadable path, with the fix: the bare errno text names no remedy."""
    where = exc.filename if exc.filename is not None else "?"
    if isinstance(exc, FileNotFoundError):
        return f"{where}: no such file; check the path (relative paths start at {Path.cwd()})"
    if isinstance(exc, IsADirectoryError):
        return f"{where}: is a directory; give the file inside it"
    if isinstance(exc, PermissionError):
        return f"{where}: permission denied; make the file readable (chmod a+r)"
    return f"{where}: {exc.strerror or exc}; check that the path is a readable file"
