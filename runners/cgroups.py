"""A control group of its own for each sealed system: its memory and process limits, the
kill of everything it started, and whether the kernel killed it for memory.

The controller makes one where it can: with cgroup v2 (a unified hierarchy whose root
offers the memory and pids controllers) under ``<cgroup2>/onsite/``; with cgroup v1 (the
memory and pids hierarchies mounted apart, as on hybrid machines) under the controller's
own group of each. Both need the right to write there (root, or a delegated subtree).
Where none can be made, ``SystemCgroup.make`` returns None and the sandbox falls back to
per-process limits (RLIMIT_AS, RLIMIT_NPROC): docs/security.md says what that loses.

A system's group is named by a key derived from its stage directory (one per run and
system), so a controller that resumes after a ``kill -9`` finds the group its
predecessor made and kills what is still in it before it starts the system again.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
_PARENT = "onsite"
# Joining a group: the first process writes its pid into each group's procs file, then
# becomes the sandbox; everything it starts is born inside.
_JOIN_SCRIPT = 'while [ "$1" != -- ]; do echo $$ >"$1" || exit 125; shift; done; shift; exec "$@"'


@dataclass(frozen=True)
class _Mounts:
    """Where the hierarchies are: the unified one (v2) and the v1 memory and pids ones."""

    unified: Path | None
    memory: Path | None
    pids: Path | None


def _mounts() -> _Mounts:
    unified = memory = pids = None
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return _Mounts(None, None, None)
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, extra = left.split(), right.split()
        if len(fields) < 5 or len(extra) < 3:
            continue
        point, fstype, options = Path(fields[4]), extra[0], extra[2].split(",")
        if fstype == "cgroup2" and unified is None:
            unified = point
        elif fstype == "cgroup":
            if "memory" in options and memory is None:
                memory = point
            if "pids" in options and pids is None:
                pids = point
    return _Mounts(unified, memory, pids)


def _own_group(hierarchy: str) -> str:
    """The controller's own group in a v1 hierarchy (by controller name) or v2 (""), or "/"."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return "/"
    for line in lines:
        _, names, path = line.split(":", 2)
        if hierarchy in names.split(","):
            return path or "/"
    return "/"


def _write(path: Path, text: str) -> bool:
    try:
        path.write_text(text)
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _parents() -> tuple[tuple[str, ...], tuple[Path, ...]] | None:
    """(controllers, parent directories) where system groups go, or None where none can.

    v2: one parent whose subtree offers memory and pids. v1: the memory and the pids
    hierarchies' parents, each under the controller's own group there.
    """
    mounts = _mounts()
    if mounts.unified is not None:
        root = mounts.unified
        offered = (
            (root / "cgroup.controllers").read_text().split()
            if (root / "cgroup.controllers").exists()
            else []
        )
        if {"memory", "pids"} <= set(offered):
            parent = root / _PARENT
            with contextlib.suppress(OSError):
                parent.mkdir(exist_ok=True)
            enabled = (root / "cgroup.subtree_control").read_text().split()
            if not {"memory", "pids"} <= set(enabled):
                _write(root / "cgroup.subtree_control", "+memory +pids")
            if parent.is_dir() and _write(parent / "cgroup.subtree_control", "+memory +pids"):
                return ("v2",), (parent,)
    if mounts.memory is not None and mounts.pids is not None:
        parents = []
        for mount, name in ((mounts.memory, "memory"), (mounts.pids, "pids")):
            parent = mount / _own_group(name).lstrip("/") / _PARENT
            try:
                parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                return None
            parents.append(parent)
        return ("memory", "pids"), tuple(parents)
    return None


class SystemCgroup:
    """One system's control group (one directory per hierarchy)."""

    def __init__(self, kind: str, dirs: Sequence[Path]) -> None:
        self.kind = kind  # "v2" or "v1"
        self.dirs = tuple(dirs)

    @classmethod
    def make(cls, key: str, memory_bytes: int | None, max_processes: int) -> SystemCgroup | None:
        """The group named ``key`` with these limits (made or reused), or None where this
        controller cannot make groups. Whatever an earlier controller left running in a
        group of the same key is killed first."""
        found = _parents()
        if found is None:
            return None
        controllers, parents = found
        dirs = [parent / key for parent in parents]
        try:
            for path in dirs:
                path.mkdir(exist_ok=True)
        except OSError:
            return None
        group = cls("v2" if controllers == ("v2",) else "v1", dirs)
        group.kill_all()
        if not group._limit(memory_bytes, max_processes):
            return None
        return group

    def _limit(self, memory_bytes: int | None, max_processes: int) -> bool:
        memory = "max" if memory_bytes is None else str(memory_bytes)
        if self.kind == "v2":
            (path,) = self.dirs
            # One kill takes the whole system, not a random process of it.
            _write(path / "memory.oom.group", "1")
            _write(path / "memory.swap.max", "0")
            return _write(path / "memory.max", memory) and _write(
                path / "pids.max", str(max_processes)
            )
        mem, pids = self.dirs
        limit = "-1" if memory_bytes is None else memory
        # memsw (memory + swap) may only be set at or above the memory limit: raise the
        # memory limit's ceiling first when lowering both.
        _write(mem / "memory.memsw.limit_in_bytes", "-1")
        ok = _write(mem / "memory.limit_in_bytes", limit)
        _write(mem / "memory.memsw.limit_in_bytes", limit)
        return ok and _write(pids / "pids.max", str(max_processes))

    def join_prefix(self) -> list[str]:
        """The command prefix that puts a process into this group before it execs."""
        files = [str(d / "cgroup.procs") for d in self.dirs]
        return ["/bin/sh", "-c", _JOIN_SCRIPT, "onsite-join", *files, "--"]

    def pids(self) -> list[int]:
        """The processes in the group now."""
        found: set[int] = set()
        for path in self.dirs:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (path / "cgroup.procs").read_text().split())
        return sorted(found)

    def kill_all(self, timeout: float = 5.0) -> int:
        """SIGKILL every process in the group, again until none is left; how many were."""
        killed: set[int] = set()
        if self.kind == "v2" and _write(self.dirs[0] / "cgroup.kill", "1"):
            killed.update(self.pids())
        deadline = time.monotonic() + timeout
        while True:
            left = self.pids()
            if not left or time.monotonic() > deadline:
                return len(killed | set(left))
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            killed.update(left)
            time.sleep(0.01)

    def oom_kills(self) -> int:
        """How many processes of the group the kernel killed for memory so far."""
        name = "memory.events" if self.kind == "v2" else "memory.oom_control"
        try:
            text = (self.dirs[0] / name).read_text()
        except OSError:
            return 0
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                with contextlib.suppress(ValueError):
                    return int(value)
        return 0

    def remove(self) -> None:
        """Kill what is left and remove the group's directories."""
        self.kill_all()
        for path in self.dirs:
            with contextlib.suppress(OSError):
                path.rmdir()
