"""Local process trees: kill them whole, measure them (runners/spawn.py starts them)."""

from __future__ import annotations

import contextlib
import os
import signal

import psutil


def kill_tree(pid: int) -> None:
    """SIGKILL a process, its process group and every descendant, even ones that left the group."""
    try:
        root = psutil.Process(pid)
        descendants = root.children(recursive=True)
    except psutil.Error:
        descendants = []
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    for proc in descendants:
        with contextlib.suppress(psutil.Error):
            proc.kill()


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _hwm_bytes(pid: int) -> int | None:
    """The kernel's high-water mark of resident memory for one process (VmHWM)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _stat_fd(pid: int) -> int | None:
    try:
        return os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None


def _cpu_seconds(fd: int) -> float | None:
    """User + system time of a process and of the children it reaped, from its /proc stat.

    The file stays open and is re-read with pread: this runs after every item
    and was the largest part of the harness's own per-item cost through psutil.
    """
    try:
        data = os.pread(fd, 4096, 0)
        # Fields after the parenthesised command name start at field 3 (state);
        # utime, stime, cutime, cstime are fields 14-17.
        fields = data[data.rindex(b")") + 2 :].split()
        return sum(int(f) for f in fields[11:15]) / _TICKS
    except (OSError, ValueError):
        return None


class TreeMeter:
    """CPU seconds and peak resident memory of a process and its descendants.

    CPU time counts each live process and the children it already reaped; a
    descendant orphaned to init is lost. Peak memory is the sum of each live
    process's own high-water mark (VmHWM), an upper bound on the tree's
    simultaneous peak that needs no sampling thread; since the kernel keeps
    the mark, reading it (and the list of descendants) at most every
    ``refresh_seconds`` loses nothing but freshness on very fast items.
    """

    def __init__(self, pid: int, refresh_seconds: float = 0.25) -> None:
        self._root = psutil.Process(pid)
        self._fds: dict[int, int] = {}
        root_fd = _stat_fd(pid)
        if root_fd is not None:
            self._fds[pid] = root_fd
        self._refreshed = -1.0
        self._refresh_seconds = refresh_seconds
        self._peak = 0

    def _refresh(self) -> None:
        try:
            pids = {self._root.pid} | {p.pid for p in self._root.children(recursive=True)}
        except psutil.Error:
            pids = {self._root.pid}
        for pid in list(self._fds):
            if pid not in pids:
                os.close(self._fds.pop(pid))
        for pid in pids - set(self._fds):
            fd = _stat_fd(pid)
            if fd is not None:
                self._fds[pid] = fd
        peak = sum(_hwm_bytes(pid) or 0 for pid in pids)
        self._peak = max(self._peak, peak)

    def sample(self, now: float) -> tuple[float | None, int | None]:
        """Total CPU seconds so far and the peak RSS in bytes so far, or None if unreadable."""
        if now - self._refreshed >= self._refresh_seconds:
            self._refreshed = now
            self._refresh()
        root_fd = self._fds.get(self._root.pid)
        total = _cpu_seconds(root_fd) if root_fd is not None else None
        if total is None:
            return None, self._peak or None
        for pid, fd in self._fds.items():
            if pid != self._root.pid:
                total += _cpu_seconds(fd) or 0.0
        return total, self._peak or None

    def close(self) -> None:
        """Release the /proc files this meter keeps open."""
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()
