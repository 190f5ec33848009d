"""Copying a run between PostgreSQL and a run directory, either way (`onsite copy-run`,
whose command is harness/cli/copy_run.py).

A run directory written here is what `onsite run` would have left: journal.jsonl (one
JSON record per line, in the run's order), site.toml and run.json, the outputs
files rebuilt from the journal, and the media files the run kept (every station's
synthesized audio), so `onsite report DIR` and the judging station work on it.
Copying a directory into the database is one transaction (records and media): it is
all there or not at all.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem

if TYPE_CHECKING:
    from harness.store.postgres import PgRunStore


def copy_to_directory(store: PgRunStore, run_dir: Path) -> int:
    """Write the store's run as a new run directory; return how many records were copied.

    Written beside the target and renamed into place at the end, so an interrupted
    copy never leaves a directory that looks like a complete run.
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
                    "give a new directory (a copy never overwrites a run)",
                )
            ]
        )
    site_toml, meta = store.site()
    work = run_dir.with_name(f".{run_dir.name}.copy-tmp")
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
    try:
        for path, data in store.media():
            _write_media(work, path, data)
    except InputError:
        shutil.rmtree(work, ignore_errors=True)
        raise
    if site_toml is not None:
        (work / "site.toml").write_text(site_toml, encoding="utf-8")
    if meta is not None:
        (work / "run.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    with contextlib.suppress(FileNotFoundError):
        run_dir.rmdir()  # the empty directory the caller may have made
    os.rename(work, run_dir)
    return count


def copy_to_database(run_dir: Path, store: PgRunStore) -> int:
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

    def media() -> Iterator[tuple[str, bytes]]:
        for path in media_files(run_dir):
            yield path, (run_dir / path).read_bytes()

    count = store.import_records(records, media)
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


def media_files(run_dir: Path) -> list[str]:
    """The files a run directory keeps under media/ (a synthesizer's audio), as paths
    relative to it (media/<task>/<name>), in order."""
    root = run_dir / "media"
    if not root.is_dir():
        return []
    return sorted(
        path.relative_to(run_dir).as_posix()
        for path in root.rglob("*")
        if path.is_file() and not path.is_symlink() and path.suffix != ".part"
    )


def _write_media(run_dir: Path, path: str, data: bytes) -> None:
    """Write one media file the database keeps, refusing a path outside media/."""
    parts = Path(path).parts
    if len(parts) < 3 or parts[0] != "media" or any(p in ("", ".", "..") for p in parts):
        raise InputError(
            [
                Problem(
                    Path(path),
                    "",
                    "a media file in the database has a path outside media/<task>/",
                    "the run's onsite_media rows were not written by onsite; remove that row",
                )
            ]
        )
    target = run_dir / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


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
