"""A system's stderr log that cannot grow without limit: the head and the tail are kept.

The system writes into a pipe; a thread copies what comes into the log file. Once the
file would pass ``max_bytes``, the middle is cut: the first half of the ceiling stays, a
line says how many bytes were left out, and the most recent quarter follows. Cutting
copies at most a quarter of the ceiling after each quarter written, so the cost per byte
stays constant however much a system writes.

`CappedLog` is the file itself (the SSH runner writes a remote system's stderr into one
directly); `LogCap` puts a pipe and a copying thread in front of it for local processes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import struct
import termios
import threading
import time
from pathlib import Path

_CUT_WIDTH = 20


def _cut_line(left_out: int) -> bytes:
    # Fixed width, so that a later cut rewrites it in place.
    return f"\n--- onsite log cut: {left_out:>{_CUT_WIDTH}} bytes left out ---\n".encode()


class LogCap:
    """The write end of a pipe whose bytes end up in ``path``, capped at ``max_bytes``.

    Give :attr:`write_fd` to child processes as their stderr (and stdout, in exec
    mode). :meth:`note` writes the controller's own lines into the same file.
    """

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max(max_bytes, 1024)
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._busy = False
        self._file = CappedLog(path, max_bytes)
        read_fd, write_fd = os.pipe2(os.O_CLOEXEC)
        self._read_fd = read_fd
        self.write_fd: int | None = write_fd
        self._closing = False
        self._thread = threading.Thread(target=self._pump, name=f"log {path.name}", daemon=True)
        self._thread.start()

    def _append(self, data: bytes) -> None:
        self._file.write(data)

    def note(self, text: str) -> None:
        """Write one line of the controller's own into the log."""
        with self._lock:
            self._append(text.encode() + b"\n")

    # -- the pump thread ----------------------------------------------------------------

    def _pump(self) -> None:
        poller = select.poll()
        poller.register(self._read_fd, select.POLLIN | select.POLLHUP)
        while True:
            if not poller.poll(200):
                if self._closing:
                    return
                continue
            try:
                chunk = os.read(self._read_fd, 1 << 16)
            except OSError:
                return
            if not chunk:
                return
            with self._lock:
                self._busy = True
                try:
                    self._append(chunk)
                finally:
                    self._busy = False
                    self._idle.notify_all()

    def _pending(self) -> int:
        try:
            raw = fcntl.ioctl(self._read_fd, termios.FIONREAD, b"\0\0\0\0")
        except OSError:
            return 0
        return int(struct.unpack("i", raw)[0])

    def settle(self, timeout: float = 0.5) -> None:
        """Wait until what is already in the pipe has reached the file (for error messages)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while (self._busy or self._pending() > 0) and self._thread.is_alive():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return
                self._idle.wait(min(remaining, 0.05))

    @property
    def left_out(self) -> int:
        """Bytes cut from the middle of the log so far."""
        return self._file.left_out

    def close(self, timeout: float = 2.0) -> None:
        """Close our write end, let the thread drain what the system left, close the file."""
        if self.write_fd is not None:
            os.close(self.write_fd)
            self.write_fd = None
        # Once every writer is gone the thread sees the end of the pipe; a process that
        # still holds it (a leftover the kill missed) must not keep the controller waiting.
        self._thread.join(timeout)
        self._closing = True
        self._thread.join(1.0)
        if not self._thread.is_alive():
            with contextlib.suppress(OSError):
                os.close(self._read_fd)
            self._file.close()


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
