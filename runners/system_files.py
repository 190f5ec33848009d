"""Reading a file a participant system wrote (exec mode's answer, a tts system's audio).

The system chose what is at the path: a link to a file it cannot read, a FIFO that would
block the reader for ever, a device, a socket, a directory, a file of terabytes. The
controller opens it without following a link and without waiting (``O_NOFOLLOW |
O_NONBLOCK``), judges what it opened (``fstat`` of the descriptor, not the name, which the
system may swap), and reads at most a ceiling. Anything else is refused with a sentence
naming what was found: the item is ``invalid_output``, never an error of the controller.
"""

from __future__ import annotations

import errno
import os
import stat

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISLNK, "a symbolic link"),
)
_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK = 1 << 20


class FileRefused(Exception):
    """The file a system left is not one the controller reads; the text says why
    as a predicate ("is a FIFO, not a regular file")."""


def file_kind(mode: int) -> str:
    """What a file of this mode is, for a message: "a FIFO", "a directory"..."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def not_regular(mode: int) -> str:
    """The reason a file of this (non-regular) mode is refused."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link; write the file itself"
    return f"is not a regular file but {file_kind(mode)}"


def read_system_file(path: str | os.PathLike[str], max_bytes: int, limit: str = "") -> bytes | None:
    """The bytes of the regular file a system left at ``path``; None if there is none.

    Raises FileRefused for anything else: a link, a FIFO, a socket, a device, a
    directory, a file larger than ``max_bytes`` (named ``limit`` in the message, e.g.
    "max_output_bytes=65536"), or one that cannot be opened or read.
    """
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise FileRefused(_open_failure(path, exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(not_regular(info.st_mode))
        too_large = f"is larger than {limit or f'{max_bytes} bytes'}"
        if info.st_size > max_bytes:
            # Judged on the size, unread: a sparse file of terabytes costs nothing.
            raise FileRefused(too_large)
        chunks: list[bytes] = []
        total = 0
        # One byte past the ceiling tells a file that grew since fstat.
        want = info.st_size + 1
        while total <= max_bytes:
            chunk = os.read(fd, min(max(want - total, 1), max_bytes + 1 - total, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:
            raise FileRefused(too_large)
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(f"cannot be read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _open_failure(path: str | os.PathLike[str], exc: OSError) -> str:
    """Why an open failed, naming what is there when that is the reason."""
    if exc.errno == errno.EWOULDBLOCK:
        # O_NONBLOCK on a file under a lease that another process holds.
        return "is held under a lease by another process; close it before answering"
    try:
        # Only for the message: the name may have changed since, the verdict stands.
        mode = os.lstat(path).st_mode
    except OSError:
        mode = stat.S_IFREG
    if not stat.S_ISREG(mode):
        return not_regular(mode)
    return f"cannot be opened: {exc.strerror or exc}"
