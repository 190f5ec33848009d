"""The journal's fsync: every ``fsync_seconds`` on the journal's own thread, never on the
writer's, always on close; a refused sync reaches the writer at its next record."""

from __future__ import annotations

import errno
import os
import threading
import time
from pathlib import Path

import pytest

from harness.store.events import AuditSeed, SessionInterrupted
from harness.store.journal import Journal, read_events

_real_fsync = os.fsync


class FsyncLog:
    """os.fsync as the journal calls it: which thread, when it ended; optionally slow or
    refused."""

    def __init__(self, delay: float = 0.0, refuse: bool = False) -> None:
        self.calls: list[tuple[str, float]] = []
        self.delay = delay
        self.refuse = refuse
        self.lock = threading.Lock()

    def __call__(self, fd: int) -> None:
        if self.refuse:
            raise OSError(errno.EIO, "refused by the test")
        time.sleep(self.delay)
        _real_fsync(fd)
        with self.lock:
            self.calls.append((threading.current_thread().name, time.monotonic()))


def _journal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fsync_seconds: float, log: FsyncLog
) -> Journal:
    """A journal in tmp_path whose fsync calls go through ``log``."""
    monkeypatch.setattr(os, "fsync", log)
    return Journal(tmp_path / "journal.jsonl", "s", fsync_seconds=fsync_seconds)


def _wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within 10 s"
        time.sleep(0.005)


def test_records_are_synced_by_the_journals_thread_not_the_writers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FsyncLog()
    journal = _journal(tmp_path, monkeypatch, 0.02, log)
    for seed in range(50):
        journal.append(AuditSeed(seed=seed))
        time.sleep(0.002)
    _wait_for(lambda: len(log.calls) >= 2)
    writer = threading.current_thread().name
    assert all(name == "journal-fsync" for name, _ in log.calls), log.calls
    before_close = len(log.calls)
    journal.append(SessionInterrupted(reason="end"))
    journal.close()
    # The close syncs what the thread had not yet, in the closing thread.
    assert log.calls[before_close:] and log.calls[-1][0] == writer
    assert [e.event for e in read_events(tmp_path / "journal.jsonl")][-1] == "session_interrupted"
    assert not any(t.name == "journal-fsync" for t in threading.enumerate())


def test_nothing_written_means_nothing_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FsyncLog()
    journal = _journal(tmp_path, monkeypatch, 0.01, log)
    time.sleep(0.1)
    journal.close()
    assert log.calls == []


def test_a_sync_returns_only_once_a_sync_in_progress_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The journal's thread takes the record and sleeps in fsync; a sync() asked meanwhile
    # (the controller's at the session's end) must not return before that fsync did.
    log = FsyncLog(delay=0.3)
    journal = _journal(tmp_path, monkeypatch, 0.01, log)
    journal.append(AuditSeed(seed=1))
    time.sleep(0.1)  # the journal's thread is inside its slow fsync now
    journal.sync()
    returned = time.monotonic()
    assert log.calls and log.calls[0][0] == "journal-fsync"
    assert log.calls[0][1] <= returned
    journal.close()


def test_a_refused_sync_fails_the_next_record_and_the_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = Journal(tmp_path / "journal.jsonl", "s", fsync_seconds=0.01)
    monkeypatch.setattr(os, "fsync", FsyncLog(refuse=True))
    written = 0
    deadline = time.monotonic() + 10
    with pytest.raises(OSError, match="refused by the test"):
        while time.monotonic() < deadline:
            journal.append(AuditSeed(seed=written))
            written += 1
            time.sleep(0.005)
    assert written >= 1
    with pytest.raises(OSError, match="refused by the test"):
        journal.close()
    # What was written before stays readable.
    assert [e.seed for e in read_events(tmp_path / "journal.jsonl")] == list(range(written))


def test_zero_interval_syncs_every_record_in_the_writers_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = FsyncLog()
    journal = _journal(tmp_path, monkeypatch, 0, log)
    for seed in range(3):
        journal.append(AuditSeed(seed=seed))
    assert [name for name, _ in log.calls] == [threading.current_thread().name] * 3
    journal.close()
    assert not any(t.name == "journal-fsync" for t in threading.enumerate())
