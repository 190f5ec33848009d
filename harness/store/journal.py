"""The run journal: an append-only JSON-lines record of every event, the run's source of truth.

Each record is written with a single ``os.write`` on an ``O_APPEND``
descriptor the moment it happens, so a controller killed at any instant
(even with SIGKILL) leaves every record it wrote complete in the kernel.
``fsync`` is what protects against the machine losing power; it costs 0.2-1 ms
here, so records are synced every ``fsync_seconds`` (and always on close) by a
thread of the journal's own instead of one by one: the controller's thread never
waits for the disk between two items. A zero interval syncs every record, in the
writer's thread. A record torn by a power loss can only be the last line; readers
skip it.

A full disk tears nothing: a write the disk cut short is taken back (the file is cut
to where the record began), and the journal keeps a reserve file (``journal.reserve``,
:data:`RESERVE_BYTES`) that it gives up when the disk is full, so that the record that
met the full disk and the session's last records (``session_interrupted``) still get
in. ``Journal.disk_full`` then tells the store to stop the run.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
from pydantic import TypeAdapter, ValidationError

from harness.store.events import SCHEMA_VERSION, JournalEvent, Record

_RECORD: TypeAdapter[JournalEvent] = TypeAdapter(Record)
# Room kept on the journal's disk for the last records of a session that fills it.
RESERVE_BYTES = 256 << 10
_FULL_ERRORS = (errno.ENOSPC, errno.EDQUOT)


class Journal:
    """Appends events to journal.jsonl; safe to share between threads."""

    def __init__(self, path: Path, session: str, fsync_seconds: float = 0.05) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.session = session
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self._fsync_seconds = fsync_seconds
        self._dirty = False
        self._failure: OSError | None = None
        self._lock = threading.Lock()
        # Held through each fsync: a sync() that returns has seen every earlier record
        # reach the disk, even one another thread's sync was still writing.
        self._sync_lock = threading.Lock()
        self._closing = threading.Event()
        # Set once the disk was found full and the reserve given up: the store stops.
        self.disk_full = False
        self._reserve = path.with_name("journal.reserve")
        self._repair_tail()
        self._make_reserve()
        self._syncer: threading.Thread | None = None
        if fsync_seconds > 0:
            self._syncer = threading.Thread(
                target=self._sync_every_interval, name="journal-fsync", daemon=True
            )
            self._syncer.start()

    def _repair_tail(self) -> None:
        """End a torn last line so the next record starts on a line of its own."""
        size = os.fstat(self._fd).st_size
        if size == 0:
            return
        with open(self.path, "rb") as fh:
            fh.seek(size - 1)
            if fh.read(1) != b"\n":
                os.write(self._fd, b"\n")

    def _make_reserve(self) -> None:
        """Set aside room for the last records of a session that fills the disk."""
        try:
            fd = os.open(self._reserve, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:
            # No room for it now: a session that starts on a full disk has none.
            with contextlib.suppress(OSError):
                os.unlink(self._reserve)
        finally:
            os.close(fd)

    def _give_up_reserve(self) -> bool:
        """Free the reserve's room for the journal; False when there is none left."""
        try:
            os.unlink(self._reserve)
        except OSError:
            return False
        return True

    def _write(self, line: bytes) -> None:
        """Append one whole line or nothing (under the lock): a write the disk cut short
        is taken back; on a full disk the reserve is given up and the line tried again."""
        try:
            self._write_whole(line)
        except OSError as exc:
            if exc.errno not in _FULL_ERRORS or not self._give_up_reserve():
                raise
            self.disk_full = True
            self._write_whole(line)

    def _write_whole(self, line: bytes) -> None:
        written = os.write(self._fd, line)
        if written < len(line):
            # A short write: the disk filled up mid-record. Cut the part off so that the
            # next record starts on a line of its own; the record was not written.
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))

    def append(self, event: JournalEvent) -> JournalEvent:
        """Write one event now and return it as written (stamped with session and clocks).

        Raises OSError when the disk refused this record, or refused to sync earlier ones.
        A record written into the reserve's room returns normally with ``disk_full`` set.
        """
        if self._failure is not None:
            raise self._failure
        stamped = event.stamped(SCHEMA_VERSION, self.session, time.monotonic(), time.time())
        # The fields are plain JSON values (validated when the event was made), so orjson
        # writes them directly: as fast as the untyped records were.
        line = orjson.dumps(stamped.__dict__) + b"\n"
        with self._lock:
            self._write(line)
            self._dirty = True
        if self._syncer is None:
            self.sync()
        return stamped

    def _sync_every_interval(self) -> None:
        # The wait and the fsync release the interpreter lock: this thread costs the
        # controller nothing but the moment it takes to start each sync.
        while not self._closing.wait(self._fsync_seconds):
            try:
                self.sync()
            except OSError as exc:
                self._failure = exc  # the next append raises it
                return

    def sync(self) -> None:
        """Force everything written so far to disk."""
        with self._sync_lock:
            with self._lock:
                dirty, self._dirty = self._dirty, False
            if dirty:
                try:
                    os.fsync(self._fd)
                except OSError:
                    with self._lock:
                        self._dirty = True
                    raise

    def close(self) -> None:
        """Sync and close; further appends fail."""
        self._closing.set()
        if self._syncer is not None:
            self._syncer.join()
        try:
            self.sync()
            if self._failure is not None:
                raise self._failure
        finally:
            with self._lock:
                os.close(self._fd)


def read_journal(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete record in a journal as plain JSON objects, in order; a torn line is
    skipped (``read_events`` gives them typed)."""
    for line in complete_lines(path):
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(record, dict) and "event" in record:
            yield record


class FileTail:
    """Follows a journal file as it grows: each ``read`` gives the lines added since the last."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._inode: int | None = None
        self._partial = b""

    def read(self) -> tuple[bool, list[bytes]]:
        """(restarted, lines): the whole lines appended since the last read (a line still
        being written waits for the next). ``restarted`` when the file was replaced under
        its name (``onsite run --fresh``) or cut: the lines are then read from its start,
        and what the earlier reads gave no longer holds."""
        try:
            fh = open(self.path, "rb")
        except FileNotFoundError:
            return False, []
        with fh:
            stat = os.fstat(fh.fileno())
            restarted = self._inode is not None and (
                stat.st_ino != self._inode or stat.st_size < self._offset
            )
            if restarted:
                self._offset, self._partial = 0, b""
            self._inode = stat.st_ino
            fh.seek(self._offset)
            chunk = fh.read()
        self._offset += len(chunk)
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()  # a line still being written (or torn)
        return restarted, lines


def complete_lines(path: Path) -> Iterator[bytes]:
    """The journal's lines up to the first one torn by a crash (none if there is no file)."""
    try:
        fh = open(path, "rb")
    except FileNotFoundError:
        return
    with fh:
        for line in fh:
            if not line.endswith(b"\n"):
                break  # torn by a crash mid-write; the next writer ends it with a newline
            yield line


def parse_record(line: bytes | str) -> JournalEvent | None:
    """One journal line as its typed event; None for a garbled line or an unknown event."""
    try:
        return _RECORD.validate_json(line)
    except ValidationError:
        return None


def as_event(record: dict[str, Any]) -> JournalEvent | None:
    """A record already decoded from JSON as its typed event (None when it is not one)."""
    try:
        return _RECORD.validate_python(record)
    except ValidationError:
        return None


# Nearly every line of a journal is one of these two, written by this version with its
# header first (``Journal.append``): the readers that replay a whole run take them as
# plain JSON (about a third of the cost of building the model) when they need no model.
DISPATCHED_PREFIX = b'{"v":%d,"event":"dispatched",' % SCHEMA_VERSION
COMPLETED_PREFIX = b'{"v":%d,"event":"completed",' % SCHEMA_VERSION
_VERDICTS = frozenset(("ok", "over_budget", "timeout", "crashed", "error", "invalid_output"))
_NUMBERS = (int, float)  # as JSON numbers: a bool is neither here (type(True) is bool)


def quick_record(line: bytes) -> dict[str, Any] | None:
    """A dispatched or completed line as plain JSON, its required fields checked as its
    model checks them; None for any other line, or one that needs the model to judge
    it (read those with ``parse_record``)."""
    if line.startswith(DISPATCHED_PREFIX):
        completed = False
    elif line.startswith(COMPLETED_PREFIX):
        completed = True
    else:
        return None
    try:
        record = orjson.loads(line)
        # Plain type tests, not a loop: this runs for every line of a replay.
        budget = record["budget_seconds"]
        if (
            type(record["session"]) is not str
            or type(record["task"]) is not str
            or type(record["system"]) is not str
            or type(record["item"]) is not str
            or type(record["anon_id"]) is not str
            or type(record["attempt"]) is not int
            or type(record["mono"]) not in _NUMBERS
            or type(record["wall"]) not in _NUMBERS
            or (budget is not None and type(budget) not in _NUMBERS)
        ):
            return None
        if completed:
            output = record["output"]
            if (
                record["verdict"] not in _VERDICTS
                or (output is not None and type(output) is not dict)
                or type(record["seconds"]) not in _NUMBERS
                or type(record.get("message", "")) is not str
            ):
                return None
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None
    return record


def read_events(path: Path) -> Iterator[JournalEvent]:
    """Every complete record of a journal as its typed event, in order.

    Reads journals of every schema version so far. As with ``read_journal``, a line torn
    by a crash ends the reading and a garbled line is skipped; so is a record of an
    event this version does not know (written by a newer onsite) or one missing the
    fields its event needs.
    """
    for line in complete_lines(path):
        event = parse_record(line)
        if event is not None:
            yield event
