"""`onsite copy-run`: copy a run between PostgreSQL and a run directory, either way
(`onsite export-store`, its old name, still works and says to use `copy-run`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem

if TYPE_CHECKING:
    from rich.console import Console


# The command's old names, still read but not listed in `onsite --help`.
OLD_COMMAND_NAMES = frozenset({"export-store"})

# What `onsite export-store` (the command's old name) says before it does the copy.
OLD_NAME_NOTICE = (
    "note: `onsite export-store` is now `onsite copy-run` (the same arguments); "
    "the old name will go away\n"
)


def add_copy_run_parser(sub: Any) -> None:
    """Register `onsite copy-run` on the CLI's subparsers, and its old name `export-store`
    (given no help line; it says to use `copy-run`, then copies)."""
    what = "copy a PostgreSQL run to a run directory, or a run directory into PostgreSQL"
    for name, handler, shown in (
        ("copy-run", cmd_copy_run, {"help": what}),
        ("export-store", _cmd_old_name, {}),
    ):
        parser = sub.add_parser(name, description=what, **shown)
        parser.add_argument(
            "source", help="postgresql://... (with --run) or a run directory such as runs/demo"
        )
        parser.add_argument("target", help="a new run directory, or postgresql://...")
        parser.add_argument(
            "--run", help="the run's name in the database (default: the directory's name)"
        )
        parser.set_defaults(handler=handler)


def _cmd_old_name(args: argparse.Namespace, console: Console) -> int:
    sys.stderr.write(OLD_NAME_NOTICE)
    return cmd_copy_run(args, console)


def cmd_copy_run(args: argparse.Namespace, console: Console) -> int:
    """Copy one run between the PostgreSQL store and a run directory, either way."""
    from harness.store.api import is_pg_location as is_dsn
    from harness.store.copy import copy_to_database, copy_to_directory
    from harness.store.postgres import PgRunStore, PgStoreError, run_exists

    source, target = str(args.source), str(args.target)
    if is_dsn(source) == is_dsn(target):
        raise InputError(
            [
                Problem(
                    Path("copy-run"),
                    "",
                    "exactly one of SOURCE and TARGET must be a postgresql:// DSN",
                    "e.g. onsite copy-run postgresql://host/db --run demo runs/demo-archive",
                )
            ]
        )
    directory = Path(target if is_dsn(source) else source)
    dsn = source if is_dsn(source) else target
    run = args.run or directory.resolve().name
    try:
        if is_dsn(source) and not run_exists(dsn, run):
            raise InputError(
                [
                    Problem(
                        Path("--run"),
                        "",
                        f"the database holds no run named {run!r}",
                        "give the run's name with --run (the site's name)",
                    )
                ]
            )
        with PgRunStore(dsn, run) as store:
            if is_dsn(source):
                if store.last_seq() == 0:
                    raise InputError(
                        [
                            Problem(
                                Path("--run"),
                                "",
                                f"run {run!r} has no records in the database",
                                "give the run's name with --run (the site's name)",
                            )
                        ]
                    )
                count = copy_to_directory(store, directory)
                console.print(f"copied {count} records of run {run} to {directory}", markup=False)
            else:
                count = copy_to_database(directory, store)
                console.print(f"copied {count} records of {directory} into run {run}", markup=False)
    except PgStoreError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0
