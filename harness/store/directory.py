"""The run directory: journal, per-system outputs, logs, and the state a resumed run starts from.

Layout of runs/<site>/:
    journal.jsonl                  every event (the source of truth)
    outputs/<task>/<system>.jsonl  one line per completed item, rebuilt from the journal
    logs/<task>/<system>.log       the system's stderr
    stage/                         inputs under anonymous names while an item runs
    site.toml                      the site file as it was when the run (re)started
    run.lock                       held while a controller works here
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import threading
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

import orjson

from harness.collector import cycle_collector_held
from harness.store.events import (
    BY_NAME,
    DISPUTE_RECORDS,
    AuditSeed,
    Completed,
    Dispatched,
    Ingested,
    JobFailed,
    JobFinished,
    JobSettings,
    JournalEvent,
    LinkLost,
    SessionFinished,
    SessionInterrupted,
    SessionStarted,
    SiteChangeAccepted,
    StartFailed,
    SystemStarted,
    TestsetHashes,
)
from harness.store.journal import (
    DISPATCHED_PREFIX,
    Journal,
    complete_lines,
    parse_record,
    quick_record,
)

JobKey = tuple[str, str]  # (task, system)
E = TypeVar("E", bound=JournalEvent)

OUTPUT_FIELDS = (
    "id",
    "output",
    "verdict",
    "seconds",
    "budget_seconds",
    "rtf",
    "speed",
    "attempt",
    "message",
    "cpu_seconds",
    "peak_rss_bytes",
    "stage_seconds",
    "round_trip_seconds",
    "audit_of",
    "latency_seconds",
    "late",
    "spawn_seconds",
    "clock_start",
    "resent",
    "lost_seconds",
)


class RunLocked(RuntimeError):
    """Another controller is working in this run directory."""


class RunStoreError(RuntimeError):
    """The run directory cannot be written (disk full, I/O error): the run stops cleanly."""

    @classmethod
    def from_os_error(cls, exc: OSError, run_dir: Path) -> RunStoreError:
        """The one-line message for an operating-system error in the run directory."""
        return _store_error(exc, run_dir)


@dataclass
class JobSummary:
    """What readers need of one job beyond its completions, kept as the journal is read."""

    starts: list[SystemStarted] = field(default_factory=list)
    # Failures in journal order, each with the attempt it happened on where that is known:
    # first completions that were not ok, lost links, failed starts, a failed job.
    incidents: list[tuple[JournalEvent, int | None]] = field(default_factory=list)
    # False once a job_finished record follows the job's last dispatch.
    in_progress: bool = True
    link_lost: int = 0


@dataclass(frozen=True)
class SessionSummary:
    """One controller session: when it started and how it ended (Unix times)."""

    session: str
    started: float | None = None
    ended: float | None = None
    end_event: str | None = None


@dataclass
class RunState:
    """What the journal says has happened so far.

    ``keep_records`` keeps every record (``job_records`` needs them). Without them the
    state holds one entry per item plus a small summary per job and session, which is
    what the leaderboard and the report read. ``keep_answers`` (default: as
    ``keep_records``) keeps each completion (``completed``, answers included): readers
    that score need it. A controller replays without: it keeps the ids of the completed
    items (``done``) and the attempt numbers of items not completed, never a record per
    item, so its memory and its replay stay small however long the run.
    """

    completed: dict[JobKey, dict[str, Completed]] = field(default_factory=lambda: defaultdict(dict))
    # The ids of every job's completed items (first completions), kept in every mode.
    done: dict[JobKey, set[str]] = field(default_factory=lambda: defaultdict(set))
    attempts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    # Items not yet completed that lost attempts to venue failures: how many, and the
    # seconds those attempts ran (charged to the item when it completes).
    lost: dict[tuple[str, str, str], tuple[int, float]] = field(default_factory=dict)
    records: list[JournalEvent] = field(default_factory=list)
    keep_records: bool = True
    keep_answers: bool | None = None
    jobs: dict[JobKey, JobSummary] = field(default_factory=lambda: defaultdict(JobSummary))
    sessions: dict[str, SessionSummary] = field(default_factory=dict)
    site_changes: list[SiteChangeAccepted] = field(default_factory=list)
    # Facts a resumed controller needs without the records.
    audit_seed: int | None = None
    job_settings: dict[JobKey, dict[str, Any]] = field(default_factory=dict)
    testset_hashes: dict[str, dict[str, str]] = field(default_factory=dict)
    # Disputes, decisions and appeal attempts in journal order (harness/disputes.py reads
    # them), kept in every mode: they are few.
    disputes: list[JournalEvent] = field(default_factory=list)
    _by_job: dict[JobKey, list[JournalEvent]] = field(default_factory=dict, repr=False)
    _by_job_size: int = field(default=-1, repr=False)
    _fields_sets: dict[int, set[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_journal(
        cls,
        path: Path,
        keep_records: bool = True,
        keep_answers: bool | None = None,
        first_completions: Callable[[Completed | Ingested | dict[str, Any]], None] | None = None,
    ) -> RunState:
        """Replay a journal file (``from_lines`` over its complete lines)."""
        return cls.from_lines(complete_lines(path), keep_records, keep_answers, first_completions)

    @classmethod
    def from_lines(
        cls,
        lines: Iterable[bytes],
        keep_records: bool = True,
        keep_answers: bool | None = None,
        first_completions: Callable[[Completed | Ingested | dict[str, Any]], None] | None = None,
    ) -> RunState:
        """Replay a run's records, given as their journal lines in order (a run directory's
        journal.jsonl or a run in PostgreSQL: ``RunSource.lines``). The first completion
        of an item wins; later ones are ignored. An ``ingested`` record (`onsite ingest`)
        starts its job again: the completions that follow it are the job's.

        ``first_completions`` is handed each item's first completion as it is read (as
        plain JSON where ``quick_record`` vouches for the line, else typed): the same
        pass then rebuilds the outputs files (``RunStore``).
        """
        state = cls(keep_records=keep_records, keep_answers=keep_answers)
        with cycle_collector_held():
            state._replay(lines, first_completions)
        return state

    def _replay(
        self,
        lines: Iterable[bytes],
        sink: Callable[[Completed | Ingested | dict[str, Any]], None] | None,
    ) -> None:
        state = self
        keep_records = self.keep_records
        keep = keep_records if self.keep_answers is None else self.keep_answers
        done = self.done
        for line in lines:
            # Dispatches (and, for a controller, completions) are folded in from plain
            # JSON: a replay of 100,000 items then costs about a second, not several.
            quick = None if keep_records else quick_record(line)
            if quick is not None:
                if quick["event"] == "dispatched":
                    state._dispatched(
                        quick["session"],
                        quick["task"],
                        quick["system"],
                        quick["item"],
                        quick["attempt"],
                    )
                    continue
                if not keep and quick["verdict"] == "ok":
                    first = state._completed_ok(
                        quick["session"], quick["task"], quick["system"], quick["item"]
                    )
                    if first and sink is not None:
                        sink(quick)
                    continue
            record = parse_record(line)
            if record is None:
                continue
            if sink is not None and isinstance(record, Completed):
                if record.item not in done.get((record.task, record.system), ()):
                    sink(record if quick is None else quick)
            elif sink is not None and isinstance(record, Ingested):
                sink(record)  # the outputs copy starts the job again
            state.apply(record)

    def _session(self, session: str) -> SessionSummary:
        summary = self.sessions.get(session)
        if summary is None:
            summary = self.sessions[session] = SessionSummary(session)
        return summary

    def _dispatched(self, session: str, task: str, system: str, item: str, attempt: int) -> None:
        """Fold in one dispatch (as ``apply`` does with a Dispatched record)."""
        self._session(session)
        key = (task, system, item)
        self.attempts[key] = max(self.attempts.get(key, 0), attempt)
        self.jobs[(task, system)].in_progress = True

    def _completed_ok(self, session: str, task: str, system: str, item: str) -> bool:
        """Fold in an ok completion for a state that keeps no answers; True if the item's
        first."""
        self._session(session)
        done = self.done[(task, system)]
        if item in done:
            return False
        done.add(item)
        # Its attempt number is never asked again: an item is sent until completed.
        self.attempts.pop((task, system, item), None)
        self.lost.pop((task, system, item), None)
        return True

    def apply(self, record: JournalEvent) -> None:
        """Fold one record into the state."""
        if self.keep_records:
            self.records.append(record)
        session = self._session(record.session)
        if isinstance(record, Dispatched):
            self._dispatched(
                record.session, record.task, record.system, record.item, record.attempt
            )
        elif isinstance(record, Completed):
            done = self.done[(record.task, record.system)]
            if record.item not in done:
                done.add(record.item)
                self.lost.pop((record.task, record.system, record.item), None)
                keep = self.keep_records if self.keep_answers is None else self.keep_answers
                if keep:
                    self.completed[(record.task, record.system)][record.item] = record
                    self._share_fields_set(record)
                else:
                    self.attempts.pop((record.task, record.system, record.item), None)
                    if record.verdict != "ok":
                        # Only a failure is kept (the job's incidents), without its answer.
                        record = record.model_copy(update={"output": None, "message": ""})
                if record.verdict != "ok":
                    self.jobs[(record.task, record.system)].incidents.append((record, None))
        elif isinstance(record, SystemStarted):
            self.jobs[(record.task, record.system)].starts.append(record)
        elif isinstance(record, LinkLost):
            job = self.jobs[(record.task, record.system)]
            job.link_lost += 1
            key = (record.task, record.system, record.item)
            attempt = self.attempts.get(key)
            job.incidents.append((record, attempt))
            if record.item not in self.done.get((record.task, record.system), ()):
                count, seconds = self.lost.get(key, (0, 0.0))
                self.lost[key] = (count + 1, seconds + (record.seconds or 0.0))
        elif isinstance(record, StartFailed | JobFailed):
            self.jobs[(record.task, record.system)].incidents.append((record, None))
        elif isinstance(record, JobFinished):
            self.jobs[(record.task, record.system)].in_progress = False
        elif isinstance(record, SessionStarted):
            self.sessions[record.session] = replace(session, started=record.wall)
        elif isinstance(record, SessionFinished | SessionInterrupted):
            self.sessions[record.session] = replace(
                session, ended=record.wall, end_event=record.event
            )
        elif isinstance(record, SiteChangeAccepted):
            self.site_changes.append(record)
        elif isinstance(record, AuditSeed) and self.audit_seed is None:
            self.audit_seed = record.seed
        elif isinstance(record, JobSettings):
            self.job_settings[(record.task, record.system)] = record.settings
        elif isinstance(record, TestsetHashes):
            self.testset_hashes[record.task] = record.files
        elif isinstance(record, DISPUTE_RECORDS):
            self.disputes.append(record)
        elif isinstance(record, Ingested):
            self._forget_job((record.task, record.system))

    def _forget_job(self, job: JobKey) -> None:
        """An ingested file (`onsite ingest`) is the job's outputs from here: what was
        recorded before stops counting (it stays in the journal)."""
        self.completed.pop(job, None)
        self.done.pop(job, None)
        self.jobs[job] = JobSummary()
        for key in [k for k in self.attempts if k[:2] == job]:
            del self.attempts[key]
        for key in [k for k in self.lost if k[:2] == job]:
            del self.lost[key]

    def _share_fields_set(self, record: Completed) -> None:
        """Let kept completions share one set of the names of their fields.

        Each model read from JSON carries the set of the fields its line gave (about
        2 KB for a completion: most of what it costs to keep). Completions written by one
        version all give the same fields, and a frozen model never changes its set, so
        one shared set serves them all.
        """
        fields = record.__pydantic_fields_set__
        shared = self._fields_sets.get(len(fields))
        if shared is None or shared != fields:
            self._fields_sets[len(fields)] = fields
        elif shared is not fields:
            object.__setattr__(record, "__pydantic_fields_set__", shared)

    def with_answers(self, journal: Path | Iterable[bytes]) -> RunState:
        """This controller's state, with each item's first completion read back from its
        journal (the file it was replayed from and written to, or its lines) for scoring.

        What a reader's replay (``keep_answers``) gives, for the leaderboard at the end of
        ``onsite run``: the summaries are this state's own, so only the completions are
        read again, and the dispatches (half the journal) are passed over unparsed.
        """
        state = replace(
            self, completed=defaultdict(dict), records=[], keep_records=False, keep_answers=True
        )
        state._fields_sets = {}
        completed = state.completed
        lines = complete_lines(journal) if isinstance(journal, Path) else journal
        with cycle_collector_held():
            for line in lines:
                if line.startswith(DISPATCHED_PREFIX):
                    continue
                # Any other line may be a completion (of this version or an older one).
                record = parse_record(line)
                if isinstance(record, Ingested):
                    completed.pop((record.task, record.system), None)
                if not isinstance(record, Completed):
                    continue
                answers = completed[(record.task, record.system)]
                if record.item not in answers:
                    answers[record.item] = record
                    state._share_fields_set(record)
        return state

    def lost_attempts(self, task: str, system: str, item: str) -> tuple[int, float]:
        """Attempts of an item not yet completed lost to venue failures, and what they ran."""
        return self.lost.get((task, system, item), (0, 0.0))

    def next_attempt(self, task: str, system: str, item: str) -> int:
        """1 for a fresh item; one more than the last dispatch for an item that was in flight."""
        return self.attempts.get((task, system, item), 0) + 1

    def job_records(self, task: str, system: str) -> list[JournalEvent]:
        """Every record about one (task, system) job, in order (needs ``keep_records``).

        Indexed once per replay, so reading every job costs one pass, not one per job.
        """
        if not self.keep_records:
            raise RuntimeError("this state was replayed without its records")
        if self._by_job_size != len(self.records):
            index: dict[JobKey, list[JournalEvent]] = defaultdict(list)
            for r in self.records:
                task_of, system_of = getattr(r, "task", None), getattr(r, "system", None)
                if task_of is not None and system_of is not None:
                    index[(task_of, system_of)].append(r)
            self._by_job = index
            self._by_job_size = len(self.records)
        return list(self._by_job.get((task, system), ()))


def output_line(record: Completed | Mapping[str, Any]) -> dict[str, Any]:
    """The outputs/<task>/<system>.jsonl line for one completion (typed, or as journaled)."""
    # Plain values: faster than an attribute lookup per field.
    fields = record if isinstance(record, Mapping) else record.__dict__
    line = {k: fields.get(k) for k in OUTPUT_FIELDS}
    line["id"] = fields["item"]
    if fields.get("offline"):
        line["offline"] = True  # a submitted file's (`onsite ingest`): no timing
    return line


def read_outputs_file(path: Path) -> list[dict[str, Any]]:
    """A job's outputs file as the records its scorer reads (``item`` is the line's ``id``).

    Read while the run appends to it: a last line still being written is left out, and
    so is a line that is not a JSON object. No file is no record yet.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    records = []
    for line in data.split(b"\n")[:-1]:  # what follows the last newline is unfinished
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict) and "id" in row:
            row["item"] = row["id"]
            records.append(row)
    return records


class RunWriterBase(ABC):
    """What both run stores share: the state a controller runs from, and the files it
    keeps on its own disk under ``dir`` (outputs, logs, staged inputs, media, the site
    copy), which it holds locked (``run.lock``) while it works there.

    Where the records go is each store's own: ``RunStore`` appends them to
    ``journal.jsonl`` in ``dir``; ``harness.store.postgres_run.PgRunWriter`` commits them to
    PostgreSQL. Both are the ``harness.store.api.RunWriter`` the controller writes through.
    """

    state: RunState

    def __init__(self, run_dir: Path, lock_fd: int | None = None) -> None:
        self.dir = run_dir
        self._outputs: dict[JobKey, int] = {}
        self._rebuilt: set[JobKey] = set()
        # Jobs on different devices record from their own threads.
        self._lock = threading.Lock()
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            self._lock_fd = lock_fd if lock_fd is not None else lock_run_dir(run_dir)
        except OSError as exc:
            raise _store_error(exc, run_dir) from exc

    # -- the records: each store's own -------------------------------------------------

    @abstractmethod
    def _append(self, event: JournalEvent) -> JournalEvent:
        """Write one event and return it as written (stamped with session and clocks)."""

    @abstractmethod
    def lines(self, job: JobKey | None = None) -> Iterator[bytes]:
        """The run's records in order, each its journal line; with ``job``, at least that
        job's (a store may give all of them)."""

    @abstractmethod
    def sync(self) -> None:
        """Make every record written so far durable."""

    @abstractmethod
    def keep_media(self, path: str) -> None:
        """A file a kind kept under ``dir`` (``path`` relative to it) is complete: keep
        it wherever else the store keeps the run."""

    @abstractmethod
    def _close_records(self) -> None:
        """Sync and close what holds the records (raises OSError when the disk refused)."""

    @abstractmethod
    def _check_room(self, record: JournalEvent) -> None:
        """Raise OSError when no record may follow this one (the journal's disk is full)."""

    # -- the files on this machine ---------------------------------------------------

    def _clear_stage(self) -> None:
        # Inputs a killed controller left staged are nobody's now.
        shutil.rmtree(self.stage_dir, ignore_errors=True)

    def log_path(self, task: str, system: str) -> Path:
        """Where a system's stderr goes."""
        return self.dir / "logs" / task / f"{system}.log"

    @property
    def stage_dir(self) -> Path:
        """Where inputs are staged under anonymous names."""
        return self.dir / "stage"

    def outputs_path(self, task: str, system: str) -> Path:
        """outputs/<task>/<system>.jsonl"""
        return self.dir / "outputs" / task / f"{system}.jsonl"

    def keep_site_copy(self, site_path: Path, site_root: Path) -> None:
        """Keep the site file beside the run so reports read what the run used."""
        try:
            shutil.copyfile(site_path, self.dir / "site.toml")
            (self.dir / "run.json").write_text(
                json.dumps(site_meta(site_path, site_root), indent=2) + "\n", encoding="utf-8"
            )
        except OSError as exc:
            raise _store_error(exc, self.dir) from exc

    def rebuild_outputs(self, jobs: Iterable[JobKey]) -> None:
        """Rewrite every given job's outputs file from the records, in one streaming pass.

        Rebuilding at every start, finished jobs included, is what makes "each item
        exactly once" hold whatever moment the last controller died at and whatever
        happened to the files since: an output line is only ever a copy of a journal
        record. The records are streamed, so answers are never all in memory.
        """
        # Rebuilt in this session already (at the store's opening), and appended to since.
        wanted = {j for j in jobs if j not in self._rebuilt or not self.outputs_path(*j).exists()}
        if not wanted:
            return
        only = next(iter(wanted)) if len(wanted) == 1 else None
        try:
            write_outputs(self.outputs_path, wanted, completions_in(self.lines(only)))
        except OSError as exc:
            raise _store_error(exc, self.dir) from exc

    def open_outputs(self, task: str, system: str) -> None:
        """Keep a job's outputs file open for appends (rebuild_outputs wrote it at start)."""
        path = self.outputs_path(task, system)
        if not path.exists():
            self.rebuild_outputs([(task, system)])
        try:
            self._outputs[(task, system)] = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as exc:
            raise _store_error(exc, self.dir) from exc

    # -- writing -------------------------------------------------------------------------

    def emit(self, event: E) -> E:
        """Journal an event, fold it into the state, and copy completions to the outputs file.

        Returns the event as journaled (stamped with the session and the clocks): the
        object the caller hands on to its listeners. Raises RunStoreError when the run
        directory cannot be written (disk full).
        """
        with self._lock:
            try:
                return self._emit(event)
            except OSError as exc:
                raise _store_error(exc, self.dir) from exc

    def record(self, event: str, **fields: Any) -> JournalEvent:
        """Journal an event given by name and fields (validated into its model)."""
        return self.emit(BY_NAME[event](**fields))

    def _emit(self, event: E) -> E:
        record = cast(E, self._append(event))
        first = isinstance(record, Completed) and record.item not in self.state.done.get(
            (record.task, record.system), ()
        )
        self.state.apply(record)
        if isinstance(record, Completed) and first:
            out = self._outputs.get((record.task, record.system))
            if out is not None:
                os.write(out, orjson.dumps(output_line(record)) + b"\n")
        self._check_room(record)
        return record

    def _close_outputs(self, job: JobKey) -> None:
        """Close a job's outputs file if it is open (its records are about to be reread)."""
        with self._lock:
            out = self._outputs.pop(job, None)
        if out is not None:
            os.close(out)

    def close(self) -> None:
        """Sync the records and the outputs, close them and release the lock.

        Raises RunStoreError if the disk refused the last writes; the lock is released
        whatever happens.
        """
        failure: OSError | None = None
        for out in self._outputs.values():
            try:
                os.fsync(out)
            except OSError as exc:
                failure = failure or exc
            os.close(out)
        self._outputs.clear()
        try:
            self._close_records()
        except OSError as exc:
            failure = failure or exc
        with contextlib.suppress(OSError):
            os.close(self._lock_fd)
        if failure is not None:
            raise _store_error(failure, self.dir) from failure


class RunStore(RunWriterBase):
    """A run directory: its records in journal.jsonl (harness/store/journal.py), files beside."""

    def __init__(
        self,
        run_dir: Path,
        session: str,
        fsync_seconds: float = 0.05,
        lock_fd: int | None = None,
        outputs: Iterable[JobKey] = (),
    ) -> None:
        """Take the run directory and replay its journal.

        ``outputs``: the jobs whose outputs files to rebuild from the journal in the same
        pass (a controller's, at every start); ``rebuild_outputs`` then has nothing left
        to do for them.
        """
        super().__init__(run_dir, lock_fd)
        try:
            copies = _OutputsCopies(self.outputs_path, set(outputs))
            try:
                self.state = RunState.from_journal(
                    self.journal_path, keep_records=False, first_completions=copies.add
                )
                self._rebuilt = copies.finish()
            finally:
                copies.close()
            self.journal = Journal(self.journal_path, session, fsync_seconds)
            self._clear_stage()
        except OSError as exc:
            raise _store_error(exc, run_dir) from exc

    @property
    def journal_path(self) -> Path:
        """runs/<site>/journal.jsonl"""
        return self.dir / "journal.jsonl"

    def _append(self, event: JournalEvent) -> JournalEvent:
        return self.journal.append(event)

    def lines(self, job: JobKey | None = None) -> Iterator[bytes]:
        """The journal's complete lines (all of them, whatever ``job``)."""
        return complete_lines(self.journal_path)

    def sync(self) -> None:
        """Force every record written so far to disk."""
        self.journal.sync()

    def keep_media(self, path: str) -> None:
        """Nothing more to do: the run directory is where the file was kept."""

    def _close_records(self) -> None:
        self.journal.close()

    def _check_room(self, record: JournalEvent) -> None:
        if self.journal.disk_full and not isinstance(record, SessionInterrupted):
            # The record is kept (in the journal's reserve), but the run must stop: what
            # comes next would find no room.
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.journal.path))


def site_meta(site_path: Path, site_root: Path) -> dict[str, str]:
    """The run.json facts kept beside a run's copy of its site file."""
    return {"site_file": str(site_path), "site_root": str(site_root)}


def completions_in(
    lines: Iterable[bytes],
) -> Iterator[Completed | Ingested | dict[str, Any]]:
    """The completions among a run's journal lines: as plain JSON where ``quick_record``
    can vouch for a line, else as the typed event; and the ``ingested`` records, after
    which a job's outputs start again."""
    for line in lines:
        if line.startswith(DISPATCHED_PREFIX):
            continue  # half the journal, and no output in it
        record = quick_record(line)
        if record is None:
            typed = parse_record(line)
            if isinstance(typed, Completed | Ingested):
                yield typed  # an ingestion starts its job's outputs again
        else:
            yield record


def write_outputs(
    outputs_path: Callable[[str, str], Path],
    jobs: set[JobKey] | None,
    completions: Iterable[Completed | Ingested | dict[str, Any]],
) -> set[JobKey]:
    """Write the outputs files of ``jobs`` (None: of every job with a completion) from a
    run's completions in journal order, each item's first only (since the job's last
    ``ingested`` record); return the jobs written."""
    copies = _OutputsCopies(outputs_path, jobs)
    try:
        seen: set[tuple[str, str, str]] = set()
        for record in completions:
            if isinstance(record, Ingested):
                seen = {k for k in seen if k[:2] != (record.task, record.system)}
                copies.add(record)
                continue
            fields = record if isinstance(record, dict) else record.__dict__
            key = (fields["task"], fields["system"], fields["item"])
            if key not in seen:
                seen.add(key)
                copies.add(record)
        return copies.finish()
    finally:
        copies.close()


class _OutputsCopies:
    """The outputs files of some jobs (None: any job met), written from a journal as it
    is read (while it is replayed at a store's opening, or by ``write_outputs``).

    Each goes to ``<file>.tmp`` first and replaces the file only once the whole journal
    was read (``finish``). The caller hands over first completions only.
    """

    def __init__(self, path: Callable[[str, str], Path], jobs: set[JobKey] | None) -> None:
        self._path = path
        self._jobs = jobs
        self._files: dict[JobKey, Any] = {}

    def _tmp(self, job: JobKey) -> Path:
        return self._path(*job).with_suffix(".jsonl.tmp")

    def _file(self, job: JobKey) -> Any:
        fh = self._files.get(job)
        if fh is None:
            path = self._tmp(job)
            path.parent.mkdir(parents=True, exist_ok=True)
            fh = self._files[job] = open(path, "wb")
        return fh

    def add(self, record: Completed | Ingested | dict[str, Any]) -> None:
        """Write one first completion's outputs line (records of other jobs are passed over);
        an ``ingested`` record empties its job's file (what follows replaces it)."""
        fields = record if isinstance(record, dict) else record.__dict__
        job = (fields["task"], fields["system"])
        if self._jobs is None or job in self._jobs:
            fh = self._file(job)
            if isinstance(record, Ingested):
                fh.seek(0)
                fh.truncate()
                return
            fh.write(orjson.dumps(output_line(record)) + b"\n")

    def finish(self) -> set[JobKey]:
        """Sync every file, an empty one for a job with no completion, and put them in place."""
        jobs = set(self._files) if self._jobs is None else self._jobs
        for job in jobs:
            fh = self._file(job)
            fh.flush()
            os.fsync(fh.fileno())
        self.close()
        for job in jobs:
            os.replace(self._tmp(job), self._path(*job))
        return set(jobs)

    def close(self) -> None:
        """Close what is still open (after ``finish``, nothing)."""
        for fh in self._files.values():
            fh.close()
        self._files.clear()


def lock_run_dir(run_dir: Path) -> int:
    """Take the run directory's controller lock (a flock on run.lock) and return its fd.

    Raises RunLocked when another controller holds it. The kernel releases the lock
    when the holder dies, however it dies.
    """
    run_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(run_dir / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise RunLocked(
            f"{run_dir} is in use by another onsite controller; wait for it to finish "
            "or stop it (a killed controller releases the lock at once)"
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


_FULL = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is exceeded"}


def _store_error(exc: OSError, run_dir: Path) -> RunStoreError:
    what = _FULL.get(exc.errno or 0, exc.strerror or str(exc))
    where = exc.filename or run_dir
    return RunStoreError(
        f"cannot write the run directory: {what} ({where}); free space there (or fix the "
        "error), then run the same command to resume: everything recorded is kept"
    )
