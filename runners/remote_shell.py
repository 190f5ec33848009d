"""Process control, file transfer and the dry-run checks in POSIX sh, over any channel: the
capabilities of runners/remote_parts.py for every device that gives a shell.

Each operation starts one short command through the transport's ``Opener`` (an SSH exec
channel, a new run of a command that gives a shell) and reads its stdout, stderr and exit
status. Files go as plain bytes on the command's stdin and stdout, ended by the end of the
stream: ``cat`` on the device, nothing else.

Fetching a file the system wrote follows the hostile-file rules (docs/security.md): the
name is checked first (a symbolic link, a FIFO, a directory, a socket or a device is
refused), then the file is opened for reading *and writing* (such an open never waits for
a writer when a FIFO has been swapped in since the check) and what was opened is judged
again through ``/proc/self/fd``; the copy stops at the ceiling. The local copy is created
exclusively (never through a link) and readable by the controller only.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import BinaryIO

from .remote_parts import (
    LINK_ERRORS,
    Channel,
    FetchRefused,
    LinkError,
    LocalWriteError,
    Opener,
    PrepareError,
    ProcessControl,
    ResourceMeter,
)
from .remote_wrapper import cleanup_command, kill_command, prepare_command
from .transport import CheckStep

_CHUNK = 1 << 16
# Exit statuses of the fetching script: the file is missing; it is refused (stderr says why).
_MISSING = 5
_REFUSED = 4
_CAT_SCRIPT = r"""f=$1
kind() {
  if [ -d "$1" ]; then echo "a directory"; elif [ -p "$1" ]; then echo "a FIFO"
  elif [ -S "$1" ]; then echo "a socket"; elif [ -c "$1" ]; then echo "a character device"
  elif [ -b "$1" ]; then echo "a block device"; else echo "something else"; fi
}
if [ -L "$f" ]; then echo "is a symbolic link; write the file itself" >&2; exit 4; fi
[ -e "$f" ] || exit 5
if [ ! -f "$f" ]; then echo "is not a regular file but $(kind "$f")" >&2; exit 4; fi
{
  if [ ! -f /proc/self/fd/3 ]; then
    echo "is not a regular file but $(kind /proc/self/fd/3)" >&2; exit 4
  fi
  exec cat <&3
} 3<>"$f"
echo "cannot be opened for reading and writing by the account" >&2; exit 4
"""
# Read-write (3<>), as over SFTP: a FIFO swapped in after the tests never blocks the
# open. What was opened is judged through /proc/self/fd/3, not by the name.
_WORKDIR_PREFIX = "onsite-workdir "
_MIN_FREE_BYTES = 1 << 30


def run_command(open: Opener, command: str, timeout: float) -> tuple[int | None, bytes, bytes]:
    """Run a short command: its exit status (None if the device never said), stdout, stderr.

    Only for commands with small output: stdout is read to the end before stderr.
    """
    chan = open(command, timeout)
    try:
        chan.shutdown_write()
        out = _read_all(chan.recv)
        err = _read_all(chan.recv_stderr)
        return chan.exit_status(timeout), out, err
    finally:
        chan.close()


def _read_all(read: Callable[[int], bytes]) -> bytes:
    got = bytearray()
    while chunk := read(_CHUNK):
        got += chunk
    return bytes(got)


def stalled(timeout: float) -> TimeoutError:
    """The error for a remote open or read that did not end in time."""
    return TimeoutError(
        f"reading it did not finish within {timeout:g} s (a device, or a file held under "
        "a lease?); write a regular file and close it before answering"
    )


def create_copy(host: Path) -> int:
    """A new file for a fetched copy, created exclusively, never through a link, readable by
    the controller only; LocalWriteError when the controller's side cannot make it."""
    try:
        host.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(host, flags, 0o600)
    except OSError as exc:
        raise LocalWriteError(f"cannot create {host}: {exc.strerror or exc}") from exc


def write_copy(dest: BinaryIO, chunk: bytes) -> None:
    """Append to a fetched copy; LocalWriteError when the controller's disk refuses."""
    try:
        dest.write(chunk)
    except OSError as exc:
        raise LocalWriteError(f"cannot write the copy: {exc.strerror or exc}") from exc


class ShellFiles:
    """File transfer (runners.remote_parts.FileTransfer) with ``cat`` and ``rm`` on the device."""

    def __init__(self, open: Opener, timeout: float) -> None:
        self._open = open
        self._timeout = timeout

    def put(self, local: Path, remote: str) -> None:
        """``cat > remote`` with the file on its stdin; the local file is only ever read."""
        chan = self._open("cat > " + shlex.quote(remote), self._timeout)
        try:
            with open(local, "rb") as fh:
                while chunk := fh.read(1 << 15):
                    chan.sendall(chunk)
            chan.shutdown_write()
            err = _read_all(chan.recv_stderr)
            status = chan.exit_status(self._timeout)
            if status is None:
                raise LinkError(f"the copy to {remote} ended without an exit status")
            if status != 0:
                text = err.decode(errors="replace").strip() or f"exit status {status}"
                raise OSError(f"cannot write {remote}: {text}")
        finally:
            chan.close()

    def get(self, remote: str, local: Path, limit: int) -> bool:
        """Copy ``remote`` to ``local`` under the hostile-file rules (module docstring)."""
        fd = create_copy(local)
        try:
            with os.fdopen(fd, "wb", closefd=False) as dest:
                found = self._cat(remote, dest, limit)
        except BaseException:
            with contextlib.suppress(OSError):
                local.unlink()
            raise
        finally:
            os.close(fd)
        if not found:
            local.unlink()
        return found

    def _cat(self, remote: str, dest: BinaryIO, limit: int) -> bool:
        command = f"sh -c {shlex.quote(_CAT_SCRIPT)} onsite-fetch {shlex.quote(remote)}"
        chan = self._open(command, self._timeout)
        try:
            chan.shutdown_write()
            copied = 0
            try:
                while chunk := chan.recv(_CHUNK):
                    copied += len(chunk)
                    if copied > limit:
                        raise FetchRefused(f"is larger than max_output_file_bytes={limit}")
                    write_copy(dest, chunk)
            except TimeoutError as exc:
                raise stalled(self._timeout) from exc
            err = bytearray()
            while len(err) < _CHUNK and (chunk := chan.recv_stderr(_CHUNK)):
                err += chunk
            status = chan.exit_status(self._timeout)
            why = err.decode(errors="replace").strip()
            if status == _MISSING:
                return False
            if status == _REFUSED:
                raise FetchRefused(why or "is not a regular file")
            if status is None:
                raise LinkError(f"reading {remote} ended without an exit status")
            if status != 0:
                raise OSError(f"cannot read {remote}: {why or f'exit status {status}'}")
            return True
        finally:
            chan.close()

    def remove(self, paths: Sequence[str]) -> list[str]:
        """``rm -f`` of every path in one command; all or none are reported gone."""
        if not paths:
            return []
        command = "rm -f -- " + " ".join(shlex.quote(p) for p in paths)
        try:
            status, _, _ = run_command(self._open, command, self._timeout)
        except LINK_ERRORS:
            return []
        return list(paths) if status == 0 else []


class ShellControl:
    """Process control (runners.remote_parts.ProcessControl) with the sh scripts of
    runners/remote_wrapper.py."""

    def __init__(self, open: Opener, timeout: float) -> None:
        self._open = open
        self._timeout = timeout

    def prepare(self, workdir: str, slug: str, token: str) -> str:
        """Run the preparing script; the absolute workdir, or PrepareError."""
        script = prepare_command(workdir, slug, token)
        status, out, err = run_command(self._open, script, self._timeout)
        found = [
            ln for ln in out.decode(errors="replace").splitlines() if ln.startswith(_WORKDIR_PREFIX)
        ]
        why = err.decode(errors="replace").strip()
        if status != 0 and b"remote workdir" not in err:
            # The account's shell ended before the script could say anything of its own.
            raise PrepareError(why, shell_ended=True, code=status)
        if status != 0 or not found:
            raise PrepareError(why or f"exit status {status}")
        return found[-1][len(_WORKDIR_PREFIX) :]

    def kill(self, sysdir: str, token: str, sid: int | None) -> None:
        """Kill one start's processes (by its token and the session trusted) on a new channel."""
        run_command(self._open, kill_command(sysdir, token, sid), self._timeout)

    def clean_up(self, sysdir: str, token: str | None, sid: int | None) -> bool:
        """Kill everything of the system's starts, remove its directory; whether that ran."""
        status, _, _ = run_command(self._open, cleanup_command(sysdir, token, sid), self._timeout)
        return status == 0


class ShellHost:
    """What a host (runners.remote_parts.RemoteHost) whose ``open`` runs a command in a POSIX
    shell on the device gets from that shell: process control by the sh wrapper's scripts,
    each a command of its own, and the resident meter it keeps in ``_meter`` while
    connected. ``op_seconds`` is what one operation may take."""

    op_seconds: float
    _meter: ResourceMeter | None = None

    def open(self, command: str, timeout: float) -> Channel:
        """Start ``command`` in a shell on the device (the host's own link)."""
        raise NotImplementedError

    @property
    def control(self) -> ProcessControl:
        """The sh wrapper's kill and clean-up scripts."""
        return ShellControl(self.open, self.op_seconds)

    @property
    def meter(self) -> ResourceMeter | None:
        """The resident sampler while connected."""
        return self._meter


def probe_command(open: Opener, timeout: float) -> CheckStep:
    """``onsite check``'s "remote command" step: ``uname`` runs; whether ``setsid`` is there."""
    script = "uname -sm; command -v setsid || echo 'no setsid'"
    try:
        status, out, err = run_command(open, "sh -c " + shlex.quote(script), timeout)
    except LINK_ERRORS as exc:
        return CheckStep("remote command", False, str(exc))
    if status != 0:
        detail = f"exit {status}: {err.decode(errors='replace').strip()}"
        return CheckStep("remote command", False, detail)
    text = out.decode(errors="replace").strip().replace("\n", ", ")
    return CheckStep("remote command", True, text)


def probe_workdir(open: Opener, timeout: float, workdir: str, who: str) -> list[CheckStep]:
    """``onsite check``'s "workdir" and "free disk" steps: the workdir can be made, written
    and can hold a FIFO (``who`` names the account in the message), with 1 GB free."""
    check = (
        'w=$1; mkdir -p "$w" 2>/dev/null && cd "$w" 2>/dev/null || '
        '{ echo "cannot create or enter $w" >&2; exit 3; }; '
        'f=".onsite-probe-$$"; : >"$f" 2>/dev/null && rm -f "$f" || '
        '{ echo "cannot write in $w" >&2; exit 3; }; '
        'mkfifo "$f" 2>/dev/null && rm -f "$f" || '
        '{ echo "cannot make a FIFO in $w (the system gets its stdin through one)" >&2; exit 3; }; '
        "pwd -P"
    )
    try:
        status, out, err = run_command(
            open, f"sh -c {shlex.quote(check)} onsite-probe {shlex.quote(workdir)}", timeout
        )
        if status != 0:
            why = err.decode(errors="replace").strip() or f"exit status {status}"
            detail = (
                f"the remote workdir {workdir} is not writable by {who}: {why}; "
                "make it writable for that account, or set workdir to a directory that is"
            )
            return [CheckStep("workdir", False, detail)]
        absolute = out.decode(errors="replace").strip().splitlines()[-1]
        results = [CheckStep("workdir", True, f"{absolute} is writable")]
        status, out, err = run_command(open, f"df -Pk {shlex.quote(absolute)}", timeout)
    except LINK_ERRORS as exc:
        return [CheckStep("workdir", False, str(exc))]
    rows = out.decode(errors="replace").splitlines()
    try:
        free = int(rows[-1].split()[3]) * 1024
    except (IndexError, ValueError):
        unread = CheckStep("free disk", False, f"cannot read df for {absolute}: {err!r}")
        return [*results, unread]
    detail = f"{free / 1e9:.1f} GB free in {absolute}"
    if free < _MIN_FREE_BYTES:
        detail += f" (need at least {_MIN_FREE_BYTES / 1e9:.1f} GB)"
    return [*results, CheckStep("free disk", free >= _MIN_FREE_BYTES, detail)]
