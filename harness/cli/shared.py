"""What the command modules share: the exit codes of `onsite`, and the argument that
names a run (a directory or a run in PostgreSQL).

Apart from harness/cli/main.py, which imports every command module to build the
parser: a command importing these from there would be an import cycle.
"""

from __future__ import annotations

import argparse

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
