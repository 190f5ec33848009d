"""Reading lines from a pipe with a deadline on the controller's monotonic clock."""

from __future__ import annotations

import os
import select
import time

from .protocol import MAX_LINE_BYTES


class LineTooLong(ValueError):
    """The other side wrote more than MAX_LINE_BYTES without a newline."""


class LineReader:
    """Reads newline-terminated lines from a file descriptor, never blocking past a deadline.

    ``readline`` returns the line (with its newline), ``b""`` at end of file,
    or ``None`` when the deadline passes first. The time the line became
    readable is recorded in ``arrived`` so that parsing is never charged to
    the system.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._buf = bytearray()
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self._eof = False
        self.arrived = 0.0

    def readline(self, deadline: float) -> bytes | None:
        """The next line, b"" at EOF, or None if the deadline passed."""
        while True:
            nl = self._buf.find(b"\n")
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
            if len(self._buf) > MAX_LINE_BYTES:
                raise LineTooLong(f"more than {MAX_LINE_BYTES} bytes without a newline")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not self._poll.poll(min(remaining, 3600.0) * 1000.0):
                continue
            self.arrived = time.monotonic()
            chunk = os.read(self._fd, 1 << 16)
            if not chunk:
                self._eof = True
            else:
                self._buf += chunk
