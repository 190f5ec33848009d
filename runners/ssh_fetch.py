"""Bringing back a file a remote system wrote for an item (tts audio), over SFTP or, on a
server without SFTP, through an exec channel running ``cat``.

The remote file must be a regular file (not a symbolic link, a FIFO, a socket, a device
or a directory) no larger than the system's ``max_output_file_bytes``; the copy stops at
that size, so a system cannot fill the controller's disk or keep the transfer going. The
name is checked first, and what was opened is checked again, since a system that lives on
may swap the name in between. The file is opened for reading *and writing*: that open
never waits for a writer when a FIFO has been swapped in (a read-only one would hold the
reader until a writer comes). What can still hold an open (a device, a file under a lease)
holds only a channel of the fetch's own, which gives up after the timeout and is then
replaced: the SFTP session that stages the next inputs is never the one waiting. The
local copy is created exclusively (never through a link) and readable by the controller
only; the controller reads it like any file a system returns (runners/system_files.py).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
from pathlib import Path
from typing import BinaryIO

import paramiko

from .system_files import not_regular

_CHUNK = 1 << 16
# Exit statuses of the exec-channel script: the file is missing; it is refused (stderr says why).
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


class FetchRefused(Exception):
    """The remote file is not one the controller takes: the item is invalid_output."""


class LocalWriteError(OSError):
    """The controller's side could not hold the copy (disk full): the venue's failure."""


def fetch_file(
    sftp: paramiko.SFTPClient | None,
    transport: paramiko.Transport,
    remote: str,
    host: Path,
    limit: int,
    timeout: float,
    session: FetchSession | None = None,
) -> bool:
    """Copy ``remote`` to ``host`` (which must not exist); False if there is no remote file.

    Over SFTP the copy goes through ``session`` (the connection's fetching session)
    where the server grants one, else through ``sftp``.

    Raises FetchRefused for a file the controller does not take (the partial copy is
    removed), and OSError, EOFError or paramiko.SSHException when the link fails.
    """
    fd = -1
    try:
        if sftp is not None:
            fetching = session.client(transport, timeout) if session is not None else None
            client = fetching or sftp
            try:
                if _sftp_check(client, remote, limit) is None:
                    return False
                src = _sftp_open(client, remote, timeout)
                if src is None:
                    return False
                with src:
                    # The name may have been swapped since lstat: judge what was opened.
                    info = src.stat()
                    _check_mode(info, limit)
                    src.prefetch(info.st_size)
                    fd = _create(host)
                    with os.fdopen(fd, "wb", closefd=False) as dest:
                        _copy(src, dest, limit)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                if not isinstance(exc, FileNotFoundError | LocalWriteError):
                    # Timed out or failed mid-answer: never ask that session again.
                    if session is not None and fetching is not None:
                        session.drop(fetching)
                raise
            return True
        fd = _create(host)
        with os.fdopen(fd, "wb", closefd=False) as dest:
            found = _exec_cat(transport, remote, dest, limit, timeout)
        if not found:
            os.close(fd)
            fd = -1
            host.unlink()
        return found
    except BaseException:
        if fd >= 0:
            with contextlib.suppress(OSError):
                host.unlink()
        raise
    finally:
        if fd >= 0:
            os.close(fd)


class FetchSession:
    """A connection's SFTP session that fetches files: apart from the session that stages
    inputs, so that an open the remote server cannot finish (a device, a file under a
    lease) holds only this one. Opened on first use, replaced after any failure; a runner
    keeps one and closes it with its connection."""

    def __init__(self) -> None:
        self._client: paramiko.SFTPClient | None = None
        self._transport: paramiko.Transport | None = None

    def client(self, transport: paramiko.Transport, timeout: float) -> paramiko.SFTPClient | None:
        """The fetching session on ``transport``; None if the server refuses another
        session (then the staging session fetches as well)."""
        client = self._client
        if client is not None and self._transport is transport:
            chan = client.get_channel()
            if chan is not None and not chan.closed:
                return client
        self.close()
        try:
            chan = transport.open_session(timeout=timeout)
        except (OSError, EOFError, paramiko.SSHException):
            return None
        try:
            chan.settimeout(timeout)
            chan.invoke_subsystem("sftp")
            client = paramiko.SFTPClient(chan)
        except (OSError, EOFError, paramiko.SSHException):
            chan.close()
            return None
        self._client, self._transport = client, transport
        return client

    def drop(self, client: paramiko.SFTPClient) -> None:
        """Forget and close the fetching session after a failure (never the staging one)."""
        if client is self._client:
            self.close()

    def close(self) -> None:
        """Close the session, if any."""
        client, self._client, self._transport = self._client, None, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()


def _sftp_open(
    client: paramiko.SFTPClient, remote: str, timeout: float
) -> paramiko.SFTPFile | None:
    """Open the remote file read-write (a FIFO then never blocks the open); None if gone."""
    try:
        return client.open(remote, "r+")
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise FetchRefused(
            "cannot be opened for reading and writing by the account (the controller opens "
            "it so, never to wait on a FIFO); leave it writable"
        ) from exc
    except TimeoutError as exc:
        raise _stalled(timeout) from exc
    except OSError as exc:
        if type(exc) is not OSError:
            raise  # the link, not the server's answer
        # The server refused the open (a directory swapped in since the check): say what
        # is there now, as far as a second look can tell.
        try:
            mode = client.lstat(remote).st_mode or 0
        except (OSError, EOFError, paramiko.SSHException):
            mode = stat.S_IFREG
        if not stat.S_ISREG(mode):
            raise FetchRefused(not_regular(mode)) from exc
        raise FetchRefused(f"cannot be opened ({exc})") from exc


def _stalled(timeout: float) -> TimeoutError:
    """The error for a remote open or read that did not end in time."""
    return TimeoutError(
        f"reading it did not finish within {timeout:g} s (a device, or a file held under "
        "a lease?); write a regular file and close it before answering"
    )


def _create(host: Path) -> int:
    try:
        host.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(host, flags, 0o600)
    except OSError as exc:
        raise LocalWriteError(f"cannot create {host}: {exc.strerror or exc}") from exc


def _write(dest: BinaryIO, chunk: bytes) -> None:
    try:
        dest.write(chunk)
    except OSError as exc:
        raise LocalWriteError(f"cannot write the copy: {exc.strerror or exc}") from exc


def _sftp_check(
    sftp: paramiko.SFTPClient, remote: str, limit: int
) -> paramiko.SFTPAttributes | None:
    try:
        info = sftp.lstat(remote)
    except FileNotFoundError:
        return None
    _check_mode(info, limit)
    return info


def _check_mode(info: paramiko.SFTPAttributes, limit: int) -> None:
    mode = info.st_mode or 0
    if not stat.S_ISREG(mode):
        raise FetchRefused(not_regular(mode))
    if (info.st_size or 0) > limit:
        raise FetchRefused(f"is larger than max_output_file_bytes={limit}")


def _copy(src: paramiko.SFTPFile, dest: BinaryIO, limit: int) -> None:
    copied = 0
    while chunk := src.read(_CHUNK):
        copied += len(chunk)
        if copied > limit:
            # It grew after the check.
            raise FetchRefused(f"is larger than max_output_file_bytes={limit}")
        _write(dest, chunk)


def _exec_cat(
    transport: paramiko.Transport, remote: str, dest: BinaryIO, limit: int, timeout: float
) -> bool:
    chan = transport.open_session(timeout=timeout)
    try:
        chan.settimeout(timeout)
        chan.exec_command(f"sh -c {shlex.quote(_CAT_SCRIPT)} onsite-fetch {shlex.quote(remote)}")
        chan.shutdown_write()
        copied = 0
        try:
            while chunk := chan.recv(_CHUNK):
                copied += len(chunk)
                if copied > limit:
                    raise FetchRefused(f"is larger than max_output_file_bytes={limit}")
                _write(dest, chunk)
        except TimeoutError as exc:
            raise _stalled(timeout) from exc
        err = bytearray()
        while len(err) < _CHUNK and (chunk := chan.recv_stderr(_CHUNK)):
            err += chunk
        chan.status_event.wait(timeout)
        status = chan.exit_status
        why = err.decode(errors="replace").strip()
        if status == _MISSING:
            return False
        if status == _REFUSED:
            raise FetchRefused(why or "is not a regular file")
        if status != 0:
            raise OSError(f"cannot read {remote}: {why or f'exit status {status}'}")
        return True
    finally:
        chan.close()
