"""`onsite ingest`: a participant's submitted file becomes a job's outputs in a run.

The evaluations that took results as files (the 2005 online mode, CWMT, CESTA) score
them like the systems that ran at the venue. A file is read by its kind's reader
(harness/kinds/submissions.py, the formats `onsite export` writes), checked against the
test set (every item exactly once: the missing, extra and repeated ids are listed with
their lines, and nothing is written), and journaled as one ``ingested`` record (the
file's name, SHA-256, format and item count) followed by one ``completed`` record per
item: verdict ok, the output, ``offline`` set and no timing (``seconds`` 0, no budget),
so the leaderboard leaves the speed figures empty and the running score charges no time.
The job then ends with ``job_finished`` like a job that ran.

Nothing recorded is overwritten: a job with completions is refused unless ``replace``
is given, and then the new ``ingested`` record supersedes the earlier records on replay
(harness/store/directory.py), all of them kept in the journal.

A run directory without a journal is created from the site file (its copy kept beside
the run, as `onsite run` keeps it), so an organizer may collect the offline submissions
before any system runs at the venue; `onsite run` later resumes the same run and runs
the other jobs (an ingested job is complete, so it is never sent).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from harness.errors import InputError, Problem
from harness.kinds.base import Submitted, TaskKind
from harness.site import Site
from harness.testsets import TestSet

__all__ = ["Ingestion", "deduce_format", "ingest", "read_submission"]

_SHOWN = 20
# A file's suffix -> the format it most likely is (the kind must have it).
_SUFFIXES = {
    ".trn": "trn",
    ".ctm": "ctm",
    ".xml": "cwmt-xml",
    ".jsonl": "jsonl",
    ".trec": "trec",
    ".run": "trec",
    ".conll": "conll",
}


@dataclass(frozen=True)
class Ingestion:
    """What `ingest` recorded: the job, the file and its digest, and the run."""

    run_dir: Path
    task: str
    system: str
    file: Path
    sha256: str
    format: str
    items: int
    superseded: int
    created: bool


def _shown(ids: list[str]) -> str:
    more = f" (+{len(ids) - _SHOWN} more)" if len(ids) > _SHOWN else ""
    return ", ".join(ids[:_SHOWN]) + more


def deduce_format(kind: TaskKind, file: Path, given: str | None) -> str:
    """``given`` if the kind reads it, else the format the file's suffix names; an
    InputError listing the kind's formats otherwise."""
    formats = list(kind.submission_formats)
    fmt = given if given is not None else _SUFFIXES.get(file.suffix.lower())
    if fmt is None or fmt not in formats:
        said = f"format {given!r} is not one" if given else f"no format known for {file.name!r}"
        raise InputError(
            [
                Problem(
                    file,
                    "--format",
                    f"{said} of kind {kind.name}'s submission formats",
                    f"give --format with one of: {', '.join(formats)}",
                )
            ]
        )
    return fmt


def read_submission(
    kind: TaskKind,
    testset: TestSet,
    task: str,
    config: object,
    file: Path,
    fmt: str,
    encoding: str | None = None,
) -> list[Submitted]:
    """The file's outputs, one per test-set item in the test set's order.

    Raises InputError listing the missing, extra and repeated ids (with the lines of
    each repeat), or the outputs the kind's checks refuse; a file the reader cannot read
    raises its FormatError (file and line).
    """
    entries = list(kind.submission_formats[fmt](file, testset, task, config, encoding))
    known = {item.id: item for item in testset.items}
    counts = Counter(e.item for e in entries)
    problems: list[Problem] = []
    missing = [i.id for i in testset.items if i.id not in counts]
    if missing:
        problems.append(
            Problem(
                file,
                "missing ids",
                f"{len(missing)} item(s) of the test set have no output: {_shown(missing)}",
                "send one output for every item of the test set",
            )
        )
    extra = [e for e in entries if e.item not in known]
    if extra:
        named = [f"{e.item} (line {e.line})" if e.line else e.item for e in extra]
        problems.append(
            Problem(
                file,
                "extra ids",
                f"{len(extra)} output(s) for no item of task {task!r}: {_shown(named)}",
                "leave out what is not in the test set (or check the --task)",
            )
        )
    repeated = [item for item, n in counts.items() if n > 1]
    if repeated:
        lines = {
            item: ", ".join(str(e.line) for e in entries if e.item == item and e.line)
            for item in repeated
        }
        named = [f"{i} (lines {lines[i]})" if lines[i] else i for i in repeated]
        problems.append(
            Problem(
                file,
                "repeated ids",
                f"{len(repeated)} id(s) given more than once: {_shown(named)}",
                "keep one output per item",
            )
        )
    if problems:
        raise InputError(problems)
    for entry in entries:
        problem = kind.check_output(entry.output)
        if not problem and kind.check_item is not None:
            problem = kind.check_item(known[entry.item], entry.output)
        if problem:
            problems.append(
                Problem(
                    file,
                    f"item {entry.item}",
                    problem,
                    "fix the output",
                    line=entry.line,
                )
            )
    if problems:
        raise InputError(problems)
    order = {item.id: n for n, item in enumerate(testset.items)}
    return sorted(entries, key=lambda e: order[e.item])


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _job_problem(site: Site, run_dir: Path, task: str, system: str) -> Problem | None:
    tasks, systems = site.config.tasks, site.config.systems
    if task not in tasks:
        return Problem(run_dir, "--task", f"no task {task!r}", f"use one of: {', '.join(tasks)}")
    if system not in systems:
        return Problem(
            run_dir, "--system", f"no system {system!r}", f"use one of: {', '.join(systems)}"
        )
    if task not in systems[system].tasks:
        return Problem(
            site.path,
            f"systems.{system}.tasks",
            f"system {system!r} does not enter task {task!r}",
            f"add {task!r} to its tasks in the site file, or give the right --system",
        )
    return None


def ingest(
    run_dir: Path,
    task: str,
    system: str,
    file: Path,
    fmt: str | None = None,
    *,
    site: Site | None = None,
    replace: bool = False,
    encoding: str | None = None,
) -> Ingestion:
    """Journal ``file`` as the outputs of job (``task``, ``system``) in the run directory.

    ``site`` is the site file to create the run from when ``run_dir`` has no journal yet
    (given for a run that exists, it must be the run's own). Raises InputError (nothing
    written) for an unknown job, a file that does not cover the test set exactly, a job
    that has records already without ``replace``, or a test set changed under the run;
    RunLocked while a controller works in the run.
    """
    from harness.engine.integrity import HashCache, testset_file_hashes
    from harness.kinds.registry import task_kind
    from harness.store.directory import RunStore, completions_in, write_outputs
    from harness.store.directory_source import site_of_run
    from harness.store.events import (
        Completed,
        Ingested,
        JobFinished,
        SessionFinished,
        SessionStarted,
        TestsetHashes,
        TestsetLoaded,
    )
    from harness.store.journal import complete_lines

    created = not (run_dir / "journal.jsonl").exists()
    if created and site is None:
        raise InputError(
            [
                Problem(
                    run_dir,
                    "--site",
                    "no run here yet (no journal.jsonl)",
                    "give --site SITE_FILE to create the run from it, as `onsite run` would, "
                    "or check the run directory",
                )
            ]
        )
    if not created:
        own = site_of_run(run_dir)
        if site is not None and site.digest != own.digest:
            raise InputError(
                [
                    Problem(
                        site.path,
                        "--site",
                        f"not the site file the run {run_dir} was made from",
                        "leave --site out: an existing run is read with its own site file",
                    )
                ]
            )
        site = own
    assert site is not None
    problem = _job_problem(site, run_dir, task, system)
    if problem is not None:
        raise InputError([problem])
    if not file.is_file():
        raise InputError([Problem(file, "FILE", "no such file", "give the submitted file")])
    cfg = site.config.tasks[task]
    kind = task_kind(cfg.kind)
    fmt = deduce_format(kind, file, fmt)
    testset = kind.load_testset(site.testset_path(task), cfg)
    entries = read_submission(kind, testset, task, cfg, file, fmt, encoding)
    sha256 = _sha256(file)
    hashes = testset_file_hashes(site.testset_path(task), testset, HashCache())

    store = RunStore(run_dir, secrets.token_hex(6), site.config.site.fsync_seconds)
    try:
        job = (task, system)
        before = len(store.state.done.get(job, ()))
        if before and not replace:
            raise InputError(
                [
                    Problem(
                        run_dir,
                        f"{task}/{system}",
                        f"the job has {before} item(s) recorded already",
                        "give --replace to record this file in their place (both stay in "
                        "the journal), or check --task and --system",
                    )
                ]
            )
        recorded = store.state.testset_hashes.get(task)
        if recorded is not None and recorded != hashes:
            raise InputError(
                [
                    Problem(
                        site.testset_path(task),
                        f"tasks.{task}.testset",
                        "the test set differs from the one the run recorded",
                        "ingest against the run's test set (`onsite run` says what changed)",
                    )
                ]
            )
        if created:
            store.keep_site_copy(site.path, site.root)
        store.emit(SessionStarted(pid=os.getpid(), site=site.name, site_sha256=site.digest))
        store.emit(TestsetLoaded(task=task, items=len(testset.items)))
        if recorded is None:
            store.emit(TestsetHashes(task=task, files=hashes))
        store.emit(
            Ingested(
                task=task,
                system=system,
                file=str(file),
                sha256=sha256,
                format=fmt,
                items=len(entries),
                encoding=encoding,
                supersedes=before,
            )
        )
        for entry in entries:
            store.emit(
                Completed(
                    task=task,
                    system=system,
                    item=entry.item,
                    attempt=1,
                    anon_id="",
                    verdict="ok",
                    output=entry.output,
                    seconds=0.0,
                    budget_seconds=None,
                    offline=True,
                )
            )
        n = len(entries)
        store.emit(JobFinished(task=task, system=system, completed=n, scored=n, total=n))
        store.emit(SessionFinished())
        store.sync()
        write_outputs(store.outputs_path, {job}, completions_in(complete_lines(store.journal_path)))
    finally:
        store.close()
    return Ingestion(run_dir, task, system, file, sha256, fmt, len(entries), before, created)
