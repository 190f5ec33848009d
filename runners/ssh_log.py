"""The local log of a remote system's stderr, capped: the head and the tail are kept.

Once the file would pass ``max_bytes``, the middle is cut: the first half of the ceiling
stays, a line says how many bytes were left out, and the most recent quarter follows.
A cut copies at most a quarter of the ceiling and happens at most once per quarter
written, so the cost per byte stays constant however much a system writes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_CUT_WIDTH = 20


def _cut_line(left_out: int) -> bytes:
    # Fixed width, so that a later cut rewrites it in place.
    return f"\n--- onsite log cut: {left_out:>{_CUT_WIDTH}} bytes left out ---\n".encode()


class CappedLog:
    """An append-only log file that never grows past ``max_bytes`` (thread-safe)."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max(max_bytes, 1024)
        self._head = self.max_bytes // 2
        self._tail = self.max_bytes // 4
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fd: int | None = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        self._size = os.lseek(self._fd, 0, os.SEEK_END)
        self._cut_at: int | None = None
        self.left_out = 0

    def write(self, data: bytes) -> None:
        """Append bytes, cutting the middle when the ceiling is passed."""
        with self._lock:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                self._size = os.lseek(self._fd, 0, os.SEEK_END)
            view = memoryview(data)
            while view:
                written = os.pwrite(self._fd, view, self._size)
                self._size += written
                view = view[written:]
            if self._size > self.max_bytes:
                self._cut(self._fd)

    def _cut(self, fd: int) -> None:
        if self._cut_at is None:
            # A log that already held more than the head (an earlier session's) is cut there.
            self._cut_at = self._head
            start = self._head
        else:
            start = self._cut_at + len(_cut_line(0))
        keep_from = max(start, self._size - self._tail)
        tail = os.pread(fd, self._size - keep_from, keep_from)
        self.left_out += keep_from - start
        marker = _cut_line(self.left_out)
        os.pwrite(fd, marker, self._cut_at)
        end = self._cut_at + len(marker)
        os.pwrite(fd, tail, end)
        self._size = end + len(tail)
        os.ftruncate(fd, self._size)

    def close(self) -> None:
        """Close the file; a later write opens it again."""
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None
