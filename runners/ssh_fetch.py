"""Bringing back a file a remote system wrote for an item (tts audio), over SFTP or, on a
server without SFTP, through an exec channel running ``cat``.

The remote file must be a regular file (not a symbolic link, a FIFO or a directory) no
larger than the system's ``max_output_file_bytes``; the copy stops at that size, so a
system cannot fill the controller's disk or keep the transfer going. The local copy is
created exclusively (never through a link) and readable by the controller only.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import stat
from pathlib import Path
from typing import BinaryIO

import paramiko

_CHUNK = 1 << 16
# Exit statuses of the exec-channel script: the file is missing; it is refused (stderr says why).
_MISSING = 5
_REFUSED = 4
_CAT_SCRIPT = r"""f=$1
if [ -L "$f" ]; then echo "is a symbolic link" >&2; exit 4; fi
[ -e "$f" ] || exit 5
if [ ! -f "$f" ]; then echo "is not a regular file" >&2; exit 4; fi
exec cat -- "$f"
"""


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
) -> bool:
    """Copy ``remote`` to ``host`` (which must not exist); False if there is no remote file.

    Raises FetchRefused for a file the controller does not take (the partial copy is
    removed), and OSError, EOFError or paramiko.SSHException when the link fails.
    """
    fd = -1
    try:
        if sftp is not None:
            info = _sftp_check(sftp, remote, limit)
            if info is None:
                return False
            with sftp.open(remote, "rb") as src:
                # The name may have been swapped since lstat: judge what was opened.
                _check_mode(src.stat(), limit)
                src.prefetch(info.st_size)
                fd = _create(host)
                with os.fdopen(fd, "wb", closefd=False) as dest:
                    _copy(src, dest, limit)
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
    if stat.S_ISLNK(mode):
        raise FetchRefused("is a symbolic link; write the file itself")
    if not stat.S_ISREG(mode):
        raise FetchRefused("is not a regular file")
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
        while chunk := chan.recv(_CHUNK):
            copied += len(chunk)
            if copied > limit:
                raise FetchRefused(f"is larger than max_output_file_bytes={limit}")
            _write(dest, chunk)
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
