"""The resident spawner of an exec-mode system: starts each item's process where it runs.

Run as a script (``python -I -S spawner.py``), inside the system's sandbox or beside the
controller when unsealed, it imports nothing of the project. The controller writes one
JSON line per item, ``{"argv": [...]}``; the spawner starts it with posix_spawn (no copy
of a large process), waits for its exit on a pidfd, answers one JSON line with the exit
status, resource usage and when the program was started on the shared monotonic clock,
and then kills whatever the item left behind (it is the subreaper of everything started
below it). The end of its stdin, which is what the controller's death looks like, kills
everything and ends it.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import time

_PR_SET_DUMPABLE = 4
_PR_SET_CHILD_SUBREAPER = 36


def _prctl(option: int, value: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _descendants() -> list[int]:
    """Every process below this one, from /proc (orphans come here: we are the subreaper)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()
        parents[int(name)] = int(fields[1])
    found: list[int] = []
    frontier = [me]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid:
                found.append(child)
                frontier.append(child)
    return found


def _reap() -> bool:
    """Reap what has exited; True while children remain."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def _kill_leftovers(deadline_seconds: float = 10.0) -> None:
    """SIGKILL and reap every descendant, again until none is left (a fork bomb races us).

    Each round kills through pidfds (no pid reuse can redirect a signal) and waits on them
    for the deaths, which the kernel signals, instead of sleeping and looking again. This
    runs after the answer went out, so an item's time never includes it.
    """
    deadline = time.monotonic() + deadline_seconds
    for _ in range(500):
        if not _reap():
            return
        waiting = select.poll()
        pidfds: list[int] = []
        for pid in _descendants():
            try:
                pidfd = os.pidfd_open(pid)
            except OSError:
                continue  # gone already
            pidfds.append(pidfd)
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            except OSError:
                pass
            waiting.register(pidfd, select.POLLIN)
        try:
            left = len(pidfds)
            while left:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return  # one stuck in the kernel (state D); the next item goes on anyway
                for pidfd, _ in waiting.poll(remaining * 1000.0):
                    waiting.unregister(pidfd)
                    left -= 1
        finally:
            for pidfd in pidfds:
                os.close(pidfd)


def _answer(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _run(argv: list[str], env: dict[str, str], stdin: int) -> bool:
    """Start one item, wait for it, answer; False when the controller went away meanwhile."""
    actions = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_DUP2, 2, 1),
    ]
    started = time.monotonic()
    try:
        # A process group of its own, not a session: a new session makes a new scheduler
        # autogroup, which costs the item about 2 ms to create.
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=actions, setpgroup=0)
    except OSError as exc:
        _answer({"error": f"cannot start {argv[0]!r}: {exc.strerror or exc}"})
        return True
    spawned = time.monotonic()
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(stdin, select.POLLIN | select.POLLHUP)
    while True:
        ready = dict(poller.poll())
        # The pidfd reads ready once the exit is complete (memory released, files closed):
        # the item ends here, not after our bookkeeping.
        exited = time.monotonic()
        if pidfd in ready:
            break
        if stdin in ready:
            os.close(pidfd)
            return False
    _, status, usage = os.wait4(pid, 0)
    os.close(pidfd)
    _answer(
        {
            "status": status,
            "cpu": usage.ru_utime + usage.ru_stime,
            "maxrss": usage.ru_maxrss * 1024,
            "started": started,
            "spawned": spawned,
            "exited": exited,
        }
    )
    _kill_leftovers()
    return True


def main() -> None:
    """Answer item requests on stdin until it ends."""
    # Not dumpable: the system runs as the same user and must not read our pipes or trace us.
    _prctl(_PR_SET_DUMPABLE, 0)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    stdin = sys.stdin.fileno()
    # A plain dict, converted faster per item than os.environ (which encodes each entry).
    env = dict(os.environ)
    _answer({"ready": os.getpid()})
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if not _run(request["argv"], env, stdin):
            break
    _kill_leftovers()


if __name__ == "__main__":
    main()
