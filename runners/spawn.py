"""Starting processes without copying the controller, and waiting for them without polling.

``subprocess.Popen`` without ``preexec_fn`` starts children with vfork (CPython 3.11+):
the controller's pages are never copied, so start-up costs the same however large the
controller has grown. What ``preexec_fn`` used to do is done otherwise: CPU affinity is
set on the spawning thread and inherited by the child; dying with the controller is
bubblewrap's ``--die-with-parent`` or setpriv's ``--pdeathsig``.
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
from collections.abc import Iterator, Sequence
from typing import Any


@contextlib.contextmanager
def thread_affinity(cpus: Sequence[int] | None) -> Iterator[None]:
    """Keep the calling thread on ``cpus`` meanwhile, so that children it starts inherit it.

    Affinity on Linux belongs to a thread, so other threads of the controller are untouched.
    """
    if not cpus:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cpus))
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def spawn(argv: Sequence[str], cpus: Sequence[int] | None = None, **popen: Any) -> Any:
    """Start ``argv`` in a new session on ``cpus``; ``popen`` are Popen's other arguments."""
    with thread_affinity(cpus):
        return subprocess.Popen(list(argv), start_new_session=True, **popen)


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> int | None:
    """The exit code once ``proc`` has ended, or None after ``timeout`` seconds.

    Blocks on a pidfd (woken by the exit itself), not on a sleep loop.
    """
    if proc.returncode is not None:
        return proc.returncode
    try:
        pidfd = os.pidfd_open(proc.pid)
    except OSError:
        # Already reaped elsewhere, or no pidfds on this kernel.
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(max(0.0, timeout) * 1000.0):
            return None
    finally:
        os.close(pidfd)
    return proc.wait()
