"""What a remote transport is made of: small capabilities, each a typing.Protocol, as labgrid
splits a driver into protocols.

A device reached by a remote transport (a participant's machine over SSH, a container, a
phone or a board behind a command that gives a shell) offers:

- an **execution stream** (:class:`ExecStream`): the system's command started on the device,
  with its stdin, its stdout lines (timed when their bytes arrived), its stderr and its exit;
- **file transfer** (:class:`FileTransfer`): put an input, get a file the system wrote under
  the hostile-file rules (a regular file only, at most a ceiling, never waiting on a FIFO),
  remove what was staged;
- **process control** (:class:`ProcessControl`): prepare a system's directory, kill a start by
  its token, clean up after a session;
- a **resource meter** (:class:`ResourceMeter`): CPU seconds and peak memory of a start;
- a **link** (:class:`RemoteHost`): connecting, whether it is up, and the evidence of whose
  failure a session that died is (docs/security.md, "Failures have an owner").

The serve runner for remote systems (runners/remote.py) is written once against these. A
transport implements them (runners/ssh.py with paramiko, runners/command.py through any
command that gives a shell); where the device has a POSIX shell, process control, file
transfer and the meter are the shell implementations of runners/remote_shell.py and
runners/remote_meter.py, written against a :class:`Channel`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from .base import DeviceUnreachable
from .exchange import Lines
from .lines import LineBuffer, LineTooLong


class LinkError(OSError):
    """The link to a device failed. A transport raises its own library's errors as this, so
    that the runner catches one family (:data:`LINK_ERRORS`)."""


# What a capability raises when the link fails (EOFError: a stream that ended mid-answer).
LINK_ERRORS: tuple[type[BaseException], ...] = (OSError, EOFError)


class FileServiceHung(LinkError):
    """The device's file service (its SFTP server) stopped answering while its sessions
    still do: the venue's failure, not the system's (the item is sent again)."""


class FetchRefused(Exception):
    """A file the system wrote is not one the controller takes: the item is invalid_output."""


class LocalWriteError(OSError):
    """The controller's side could not hold a fetched copy (disk full): the venue's failure."""


class PrepareError(Exception):
    """A system's directory on the device could not be prepared.

    ``shell_ended`` when the account's shell ended before onsite's script ran (its start-up
    files exited): ``code`` is its exit status. Otherwise ``why`` is what the device said.
    """

    def __init__(self, why: str, shell_ended: bool = False, code: int | None = None) -> None:
        super().__init__(why)
        self.why = why
        self.shell_ended = shell_ended
        self.code = code


class Channel(Protocol):
    """A command started on the device, as bytes: what the shell implementations are
    written against. ``recv`` raises TimeoutError when nothing comes within the timeout
    the channel was opened with."""

    @property
    def closed(self) -> bool:
        """Whether the channel was closed (by either side)."""
        ...

    def sendall(self, data: bytes) -> None:
        """Write all of ``data`` to the command's stdin."""
        ...

    def recv(self, size: int) -> bytes:
        """Up to ``size`` bytes of the command's stdout; b"" at its end."""
        ...

    def recv_stderr(self, size: int) -> bytes:
        """Up to ``size`` bytes of the command's stderr; b"" at its end."""
        ...

    def shutdown_write(self) -> None:
        """End the command's stdin."""
        ...

    def exit_status(self, timeout: float) -> int | None:
        """The command's exit status once it ended, waiting up to ``timeout``; None when it
        is not known (still running, or the link died before it was said)."""
        ...

    def close(self) -> None:
        """Close the channel (the command sees its stdin end)."""
        ...


# Starts a command on the device: (the command line for its sh, seconds each wait may take).
Opener = Callable[[str, float], Channel]


class ExecStream(Protocol):
    """The system's wrapper running on the device: the participant protocol's stream."""

    @property
    def lines(self) -> Lines:
        """Its stdout, line by line, each timed when its bytes reached the controller."""
        ...

    @property
    def closed(self) -> bool:
        """Whether the stream was closed."""
        ...

    def write(self, data: bytes) -> None:
        """Send bytes to the system's stdin (raises a link error if that side is gone)."""
        ...

    def handed_over(self, before: float) -> float:
        """When the last write's bytes went to the kernel, given the time before it."""
        ...

    def close_stdin(self) -> None:
        """End the system's stdin (after bye)."""
        ...

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the command to end; whether it did."""
        ...

    def ended(self, wait: float) -> tuple[int | None, str | None]:
        """After its stdout ended: (exit status, None) when the device said how the command
        ended; (None, why) when the link died; (None, None) when neither is known within
        ``wait``. The stderr read so far is in the system's log when it returns."""
        ...

    def close(self) -> None:
        """Close the stream; the wrapper on the device then kills the start (docs/ssh.md)."""
        ...


class FileTransfer(Protocol):
    """Files to and from the device."""

    def put(self, local: Path, remote: str) -> None:
        """Copy a local file (only ever read) to ``remote``."""
        ...

    def get(self, remote: str, local: Path, limit: int) -> bool:
        """Copy ``remote`` to ``local`` (which must not exist); False when there is none.

        The hostile-file rules (docs/security.md): only a regular file of at most ``limit``
        bytes, judged on what was opened, never waiting on a FIFO; anything else raises
        FetchRefused (the partial copy removed). LocalWriteError when the controller's side
        cannot hold the copy; a link error when the link fails.
        """
        ...

    def remove(self, paths: Sequence[str]) -> list[str]:
        """Remove files; returns those now gone (never raises: the rest is kept for later)."""
        ...


class ProcessControl(Protocol):
    """A system's processes and files on the device, found by the token of each start."""

    def prepare(self, workdir: str, slug: str, token: str) -> str:
        """Kill what earlier starts of the system left, empty its directory, make the stage
        directory of the start with ``token``; returns the absolute workdir. PrepareError
        when that cannot be done."""
        ...

    def kill(self, sysdir: str, token: str, sid: int | None) -> None:
        """Kill every process of one start and remove its state files."""
        ...

    def clean_up(self, sysdir: str, token: str | None, sid: int | None) -> bool:
        """Kill everything of the system's starts and remove its directory; whether done."""
        ...


class ResourceMeter(Protocol):
    """CPU seconds and peak memory of a start's processes, read on the device."""

    def sample(self, sid: int) -> tuple[float | None, int | None]:
        """Total CPU seconds (reaped children included) and summed peak RSS in bytes."""
        ...

    def ping(self) -> float | None:
        """Seconds for one request and its answer (None if it failed)."""
        ...

    def summary(self) -> str | None:
        """One line for the system's log on what metering cost the device."""
        ...

    def close(self) -> None:
        """Stop metering; the next sample starts again."""
        ...


@dataclass(frozen=True)
class Evidence:
    """What the venue's own check of a device found right after a session died mid-item.

    ``up``: the device answered at once, so it and the network were up and the session
    ended there: the participant's failure. Otherwise the venue cannot show it was up:
    the venue's, bounded by the controller (docs/security.md). ``detail`` says what the
    check found, for the attempt's message.
    """

    up: bool
    detail: str


class RemoteHost(Protocol):
    """One device reached by a transport: the link, and the capabilities made from it."""

    transport_name: str  # the transport, as messages name it ("ssh")
    address: str  # the device, as messages name it ("eval@10.0.0.17:22")
    account: str  # who runs commands there, in messages ("the account 'eval'")
    session: str  # what one started command is called ("SSH session")

    def connect(self, retry_seconds: float, first: bool) -> list[str]:
        """Connect (``first``: the first contact, tried once and quickly), retrying network
        failures for ``retry_seconds``; notes for the system's log. DeviceUnreachable when the
        device does not answer, StartError for anything else."""
        ...

    def connected(self) -> bool:
        """Whether the link is up, as far as is known."""
        ...

    def close(self) -> None:
        """Drop the link and everything opened on it."""
        ...

    def lost_reason(self, wait: float) -> str | None:
        """Why the link is down, or None if it is up (waiting up to ``wait`` to tell)."""
        ...

    def evidence(self) -> Evidence:
        """The venue's independent check of the device, right after a session died."""
        ...

    def round_trip(self, workdir: str) -> float | None:
        """One measurement of the link's round trip (None if it failed)."""
        ...

    def shell_ended(self, code: int | None) -> str:
        """The message for the account's shell ending before onsite's command ran."""
        ...

    def start(self, command: str, log: Callable[[bytes], None], max_bytes: int) -> ExecStream:
        """Start the wrapper ``command``; its stderr (and what the account's shell prints
        before it) goes to ``log``; answer lines longer than ``max_bytes`` are refused."""
        ...

    @property
    def files(self) -> FileTransfer:
        """File transfer over the link."""
        ...

    @property
    def control(self) -> ProcessControl:
        """Process control over the link."""
        ...

    @property
    def meter(self) -> ResourceMeter | None:
        """The resource meter while connected."""
        ...


class AnswerLines(LineBuffer):
    """A remote system's stdout, line by line, refusing an answer longer than ``max_bytes``
    (reading no further than that). Subclasses say how bytes arrive (``_receive``)."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__()
        self.max_bytes = max_bytes

    def readline(self, deadline: float) -> bytes | None:
        line = super().readline(deadline)
        if line and len(line) > self.max_bytes:
            raise LineTooLong(self._too_long())
        return line

    def _too_long(self) -> str:
        return f"an answer of more than max_output_bytes={self.max_bytes} bytes"

    def _receive(self, timeout: float) -> tuple[bytes, float] | None:
        """Bytes that came within ``timeout`` (b"" at the end) and when they reached the
        controller; None if none came."""
        raise NotImplementedError

    def _fill(self, timeout: float) -> None:
        if len(self._buf) > self.max_bytes and b"\n" not in self._buf:
            # Never hold more than the ceiling of an answer that is already too long.
            raise LineTooLong(self._too_long())
        got = self._receive(max(timeout, 0.0))
        if got is None:
            return
        data, self.arrived = got
        if data:
            self._buf += data
        else:
            self._eof = True


# Delays between connection attempts; their sum bounds how long a reconnect keeps trying.
BACKOFF_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0)

T = TypeVar("T")


def retry_unreachable(once: Callable[[], T], retry_seconds: float, hint: str) -> T:
    """``once()``, tried again with exponential backoff while the device does not answer
    (DeviceUnreachable), for about ``retry_seconds`` (0: once). The last error names the
    tries and ends with ``hint`` (how to check the device by hand)."""
    started = time.monotonic()
    tries = 0
    while True:
        tries += 1
        try:
            return once()
        except DeviceUnreachable as exc:
            delay = BACKOFF_SECONDS[min(tries - 1, len(BACKOFF_SECONDS) - 1)]
            # Attempts themselves take time: count them, not just the sleeps.
            spent = time.monotonic() - started
            if spent + delay > retry_seconds:
                counted = f" ({tries} tries over {spent:.1f} s)" if tries > 1 else ""
                raise type(exc)(f"{exc}{counted}; {hint}") from exc
            time.sleep(delay)
