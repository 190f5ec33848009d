"""Bringing back a file a remote system wrote for an item (tts audio), over SFTP or, on a
server without SFTP, through an exec channel running ``cat`` (runners/remote_shell.py).

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
import stat
from pathlib import Path
from typing import BinaryIO

import paramiko

from .remote_parts import FetchRefused, LocalWriteError
from .remote_shell import ShellFiles, create_copy, stalled, write_copy
from .ssh_link import ssh_opener
from .system_files import not_regular

_CHUNK = 1 << 16


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
    if sftp is None:
        return ShellFiles(ssh_opener(transport), timeout).get(remote, host, limit)
    fd = -1
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
            fd = create_copy(host)
            with os.fdopen(fd, "wb", closefd=False) as dest:
                _copy(src, dest, limit)
        return True
    except BaseException as exc:
        if fd >= 0:
            with contextlib.suppress(OSError):
                host.unlink()
        failed = isinstance(exc, OSError | EOFError | paramiko.SSHException)
        if failed and not isinstance(exc, FileNotFoundError | LocalWriteError):
            # Timed out or failed mid-answer: never ask that session again.
            if session is not None and fetching is not None:
                session.drop(fetching)
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
        raise stalled(timeout) from exc
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
        write_copy(dest, chunk)
