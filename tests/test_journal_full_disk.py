"""A full disk tears no journal record and loses no session's last words
(docs/run-directory.md): a record the disk cut short is taken back, and the journal's
reserve takes the record that met the full disk and the session_interrupted after it."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from harness.store.directory import RunStore, RunStoreError
from harness.store.events import Dispatched, SessionInterrupted
from harness.store.journal import RESERVE_BYTES, Journal, complete_lines, read_events


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB file system of its own (a tmpfs: mounting needs root)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small file system needs root")
    point = tmp_path / "disk"
    point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(point)], check=True)
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


def _dispatch(n: int) -> Dispatched:
    # Records of odd sizes, so that the disk fills in the middle of one.
    return Dispatched(
        task="asr",
        system="s" * (1 + n % 37),
        item=f"item-{n}-" + "x" * (n % 300),
        attempt=1,
        anon_id=f"{n:016x}",
        budget_seconds=1.0,
    )


def _fill(path: Path, keep: int) -> None:
    """Fill the file system but ``keep`` bytes."""
    free = os.statvfs(path).f_bavail * os.statvfs(path).f_frsize
    with open(path / "filler", "wb") as fh:
        fh.write(b"\0" * max(0, free - keep))


def test_a_full_disk_tears_no_record_and_keeps_the_last_ones(small_disk: Path) -> None:
    journal = Journal(small_disk / "journal.jsonl", "s1", fsync_seconds=0)
    assert (small_disk / "journal.reserve").stat().st_size == RESERVE_BYTES
    _fill(small_disk, 3000)  # room for a few records, then a write cut short
    written = 0
    with pytest.raises(OSError):
        for n in range(100_000):
            journal.append(_dispatch(n))
            written += 1
            if journal.disk_full:
                raise OSError("full")
    assert journal.disk_full, "the reserve took the record that met the full disk"
    # The session's last words still get in, after the reserve was given up.
    journal.append(SessionInterrupted(reason="the disk is full"))
    journal.close()
    lines = list(complete_lines(small_disk / "journal.jsonl"))
    raw = (small_disk / "journal.jsonl").read_bytes()
    assert raw.endswith(b"\n") and len(lines) == raw.count(b"\n"), "a torn line"
    for line in lines:
        orjson.loads(line)  # every line whole
    events = list(read_events(small_disk / "journal.jsonl"))
    assert len(events) == written + 1
    assert events[-1].event == "session_interrupted"


def test_the_store_stops_the_run_but_keeps_the_record(small_disk: Path) -> None:
    store = RunStore(small_disk / "run", "s1", fsync_seconds=0)
    _fill(small_disk, 2000)
    kept = 0
    with pytest.raises(RunStoreError, match="the disk is full"):
        for n in range(100_000):
            store.emit(_dispatch(n))
            kept += 1
    # The record that met the full disk is in the journal, though emit raised.
    store.record("session_interrupted", reason="the disk is full")
    store.close()
    events = list(read_events(small_disk / "run" / "journal.jsonl"))
    assert [e.event for e in events[-2:]] == ["dispatched", "session_interrupted"]
    assert len(events) == kept + 2
