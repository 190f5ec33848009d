"""`onsite export-store`: copy a run between PostgreSQL and a run directory, either way.

A run directory written here is what `onsite run` would have left: journal.jsonl (one
JSON record per line, in the run's order), site.toml and run.json, and the outputs
files rebuilt from the journal, so `onsite report DIR` works on it. Copying a directory
into the database is one transaction: it is all there or not at all.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem

if TYPE_CHECKING:
    from rich.console import Console

    from harness.store.postgres import PgRunStore


def export_run(store: PgRunStore, run_dir: Path) -> int:
    """Write the store's run as a new run directory; return how many records were copied.

    Written beside the target and renamed into place at the end, so an interrupted
    export never leaves a directory that looks like a complete run.
    """
    from harness.store.directory import completions_in, write_outputs
    from harness.store.journal import complete_lines

    if run_dir.exists() and any(run_dir.iterdir()):
        raise InputError(
            [
                Problem(
                    run_dir,
                    "",
                    "the target directory is not empty",
                    "give a new directory (an export never overwrites a run)",
                )
            ]
        )
    site_toml, meta = store.site()
    work = run_dir.with_name(f".{run_dir.name}.export-tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    count = 0
    with open(work / "journal.jsonl", "wb") as journal:
        for line in store.lines():
            journal.write(line + b"\n")
            count += 1
        journal.flush()
        os.fsync(journal.fileno())
    # As a run directory has them: each job's first completions, rebuilt from the journal.
    write_outputs(
        lambda task, system: work / "outputs" / task / f"{system}.jsonl",
        None,
        completions_in(complete_lines(work / "journal.jsonl")),
    )
    if site_toml is not None:
        (work / "site.toml").write_text(site_toml, encoding="utf-8")
    if meta is not None:
        (work / "run.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    with contextlib.suppress(FileNotFoundError):
        run_dir.rmdir()  # the empty directory the caller may have made
    os.rename(work, run_dir)
    return count


def import_run(run_dir: Path, store: PgRunStore) -> int:
    """Copy a run directory's journal, site file and jobs into the store's (empty) run."""
    from harness.store.journal import read_journal

    journal = run_dir / "journal.jsonl"
    if not journal.is_file():
        raise InputError(
            [
                Problem(
                    run_dir,
                    "",
                    "not a run directory (no journal.jsonl)",
                    "give the directory `onsite run` wrote, e.g. runs/demo",
                )
            ]
        )

    def records() -> Iterator[dict[str, Any]]:
        return read_journal(journal)

    count = store.import_records(records)
    if count < 0:
        raise InputError(
            [
                Problem(
                    journal,
                    "",
                    f"run {store.run!r} in the database already holds records",
                    "give another name with --run, or drop that run first",
                )
            ]
        )
    site_copy, meta_path = run_dir / "site.toml", run_dir / "run.json"
    if site_copy.is_file() and meta_path.is_file():
        store.set_site(
            site_copy.read_text(encoding="utf-8"),
            json.loads(meta_path.read_text(encoding="utf-8")),
        )
    store.add_jobs(_jobs_of(records()))
    finished = _finished_jobs(records())
    for task, system in finished:
        store.mark_finished(task, system)
    return count


def _jobs_of(records: Iterator[dict[str, Any]]) -> list[tuple[str, str]]:
    jobs: dict[tuple[str, str], None] = {}
    for r in records:
        if r.get("event") == "job_settings":
            jobs[(str(r["task"]), str(r["system"]))] = None
    return list(jobs)


def _finished_jobs(records: Iterator[dict[str, Any]]) -> set[tuple[str, str]]:
    finished: set[tuple[str, str]] = set()
    for r in records:
        event = r.get("event")
        if event in ("job_finished", "job_failed", "job_skipped", "job_settings"):
            job = (str(r["task"]), str(r["system"]))
            # The last word about a job counts: a later session may have started it again.
            if event == "job_finished":
                finished.add(job)
            else:
                finished.discard(job)
    return finished


def add_export_store_parser(sub: Any) -> None:
    """Register `onsite export-store` on the CLI's subparsers."""
    parser = sub.add_parser(
        "export-store",
        help="copy a PostgreSQL run to a run directory, or a run directory into PostgreSQL",
    )
    parser.add_argument(
        "source", help="postgresql://... (with --run) or a run directory such as runs/demo"
    )
    parser.add_argument("target", help="a new run directory, or postgresql://...")
    parser.add_argument(
        "--run", help="the run's name in the database (default: the directory's name)"
    )
    parser.set_defaults(handler=cmd_export_store)


def cmd_export_store(args: argparse.Namespace, console: Console) -> int:
    """Copy one run between the PostgreSQL store and a run directory, either way."""
    from harness.store.api import is_pg_location as is_dsn
    from harness.store.postgres import PgRunStore, PgStoreError, run_exists

    source, target = str(args.source), str(args.target)
    if is_dsn(source) == is_dsn(target):
        raise InputError(
            [
                Problem(
                    Path("export-store"),
                    "",
                    "exactly one of SOURCE and TARGET must be a postgresql:// DSN",
                    "e.g. onsite export-store postgresql://host/db --run demo runs/demo-archive",
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
                count = export_run(store, directory)
                console.print(f"copied {count} records of run {run} to {directory}", markup=False)
            else:
                count = import_run(directory, store)
                console.print(f"copied {count} records of {directory} into run {run}", markup=False)
    except PgStoreError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0
