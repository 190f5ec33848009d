"""Local process trees: kill them whole, measure them (runners/spawn.py starts them)."""

from __future__ import annotations

import contextlib
import os
import signal
import time

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


def _has_children_files() -> bool:
    me = os.getpid()
    return os.path.exists(f"/proc/{me}/task/{me}/children")


# Kernels built without CONFIG_PROC_CHILDREN have no children lists: descendants are then
# found by psutil, which reads every process's stat file on the machine.
_CHILDREN_FILES = _has_children_files()


def descendants(pid: int) -> set[int] | None:
    """``pid`` and every live descendant, from the kernel's children lists
    (``/proc/PID/task/*/children``): as many files read as the tree has processes and
    threads, however many processes the machine runs. None where the kernel has no such
    lists."""
    if not _CHILDREN_FILES:
        return None
    found: set[int] = set()
    queue = [pid]
    while queue and len(found) < 65536:
        current = queue.pop()
        if current in found:
            continue
        try:
            tids = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue  # gone since its parent listed it
        found.add(current)
        for tid in tids:
            try:
                with open(f"/proc/{current}/task/{tid}/children", "rb") as fh:
                    queue.extend(int(kid) for kid in fh.read().split())
            except (OSError, ValueError):
                continue
    return found


class TreeMeter:
    """CPU seconds and peak resident memory of a process and its descendants.

    CPU time counts each live process and the children it already reaped; a
    descendant orphaned to init is lost. Peak memory is the sum of each live
    process's own high-water mark (VmHWM), an upper bound on the tree's
    simultaneous peak that needs no sampling thread; since the kernel keeps
    the mark, reading it (and the list of descendants) at most every
    ``refresh_seconds`` loses nothing but freshness on very fast items.

    A sample reads only the stat files of the processes already known. The
    descendants are found again from the kernel's children lists; on a kernel
    without them, psutil reads every process on the machine, so that scan is
    spaced out until it costs at most ``budget`` of one core (a process that
    starts and ends between two scans is still counted through its parent's
    reaped-children time).
    """

    def __init__(self, pid: int, refresh_seconds: float = 0.25, budget: float = 0.005) -> None:
        self._root = psutil.Process(pid)
        self._fds: dict[int, int] = {}
        root_fd = _stat_fd(pid)
        if root_fd is not None:
            self._fds[pid] = root_fd
        self._refreshed = -1.0
        self._refresh_seconds = refresh_seconds
        self._budget = budget
        self._interval = refresh_seconds
        self._peak = 0
        self.refreshes = 0

    def _tree(self) -> set[int]:
        pids = descendants(self._root.pid)
        if pids is not None:
            return pids | {self._root.pid}
        spent = time.thread_time()
        try:
            pids = {self._root.pid} | {p.pid for p in self._root.children(recursive=True)}
        except psutil.Error:
            pids = {self._root.pid}
        cost = time.thread_time() - spent
        self._interval = max(self._refresh_seconds, cost / self._budget)
        return pids

    def _refresh(self) -> None:
        self.refreshes += 1
        pids = self._tree()
        for pid, fd in list(self._fds.items()):
            # A file of a process that ended reads nothing, even once its pid is reused.
            if pid not in pids or _cpu_seconds(fd) is None:
                os.close(self._fds.pop(pid))
        for pid in pids - set(self._fds):
            opened = _stat_fd(pid)
            if opened is not None:
                self._fds[pid] = opened
        peak = sum(_hwm_bytes(pid) or 0 for pid in pids)
        self._peak = max(self._peak, peak)

    def sample(self, now: float) -> tuple[float | None, int | None]:
        """Total CPU seconds so far and the peak RSS in bytes so far, or None if unreadable."""
        if now - self._refreshed >= self._interval:
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
