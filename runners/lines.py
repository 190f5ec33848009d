"""Reading lines from a pipe or channel with a deadline on the controller's monotonic clock."""

from __future__ import annotations

import os
import select
import time

from .protocol import MAX_LINE_BYTES


class LineTooLong(ValueError):
    """The other side wrote more than MAX_LINE_BYTES without a newline."""


class LineBuffer:
    """Newline-terminated lines, never blocking past a deadline.

    ``readline`` returns the line (with its newline), ``b""`` at end of stream,
    or ``None`` when the deadline passes first. The time the bytes completing a
    line arrived is kept in ``arrived``, so parsing is never charged to the
    system. Subclasses say how to wait for and read more bytes (``_fill``).
    """

    def __init__(self, limit: int = MAX_LINE_BYTES) -> None:
        self._limit = limit
        self._buf = bytearray()
        self._eof = False
        self.arrived = 0.0

    def _fill(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds; append what came to _buf, or set _eof."""
        raise NotImplementedError

    def readline(self, deadline: float) -> bytes | None:
        """The next line, b"" at end of stream, or None if the deadline passed."""
        while True:
            nl = self._buf.find(b"\n", 0, self._limit + 1)
            if nl >= 0:
                line = bytes(self._buf[: nl + 1])
                del self._buf[: nl + 1]
                return line
            if self._eof:
                if self._buf:
                    line = bytes(self._buf)
                    self._buf.clear()
                    return line
                return b""
            if len(self._buf) > self._limit:
                raise LineTooLong(f"more than {self._limit} bytes without a newline")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self._fill(min(remaining, 3600.0))


class LineReader(LineBuffer):
    """Lines from a file descriptor (a local system's stdout pipe)."""

    def __init__(self, fd: int, limit: int = MAX_LINE_BYTES) -> None:
        super().__init__(limit)
        self._fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)

    def _fill(self, timeout: float) -> None:
        if not self._poll.poll(timeout * 1000.0):
            return
        self.arrived = time.monotonic()
        chunk = os.read(self._fd, 1 << 16)
        if chunk:
            self._buf += chunk
        else:
            self._eof = True
