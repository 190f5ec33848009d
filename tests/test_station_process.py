"""How a station judges, on its own machine, that the holder of its name is gone."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

from harness.engine.station import describe_process, holder_is_gone
from harness.store.postgres import Registration


def _holder(pid: int, process: str | None) -> Registration:
    return Registration("room-a", "x", "pc", pid, process, 30.0, datetime.now(UTC), 1.0)


def _process_of(pid: int) -> str:
    """What a station running as ``pid`` on this machine records of itself."""
    mine = describe_process()
    assert mine is not None
    boot, namespace, _ = mine.split(" ")
    stat = open(f"/proc/{pid}/stat", encoding="ascii").read()
    return f"{boot} {namespace} {stat[stat.rindex(')') + 2 :].split()[19]}"


def test_a_live_holder_on_this_machine_is_not_gone_and_an_ended_one_is() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        recorded = _process_of(child.pid)
        assert not holder_is_gone(_holder(child.pid, recorded))
        # The same pid with another start time: the pid was used again by another process.
        boot, namespace, started = recorded.split(" ")
        assert holder_is_gone(_holder(child.pid, f"{boot} {namespace} {int(started) - 1}"))
        child.kill()
        child.wait()
        assert holder_is_gone(_holder(child.pid, recorded))
    finally:
        child.kill()
        child.wait()


def test_a_holder_that_cannot_be_judged_from_here_is_never_taken_as_gone() -> None:
    recorded = _process_of(os.getpid())
    boot, namespace, started = recorded.split(" ")
    # Another machine (a clone shares the host name, not the boot), or another PID namespace.
    assert not holder_is_gone(_holder(999_999_999, f"other-boot {namespace} {started}"))
    assert not holder_is_gone(_holder(999_999_999, f"{boot} pid:[1] {started}"))
    # A holder that did not describe itself, or a nonsense pid (0 would mean a group).
    assert not holder_is_gone(_holder(999_999_999, None))
    assert not holder_is_gone(_holder(0, recorded))
    assert not holder_is_gone(_holder(-1, recorded))
