"""No sealed system outlives its controller, whatever user the controller runs as, and a
resumed controller ends what an earlier one left before it starts anything
(docs/security.md, "No survivors")."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

import runners.cgroups as cgroups
from runners import LocalServeRunner, Sandbox
from runners.cgroups import SystemCgroup
from runners.sandbox import auto_uid
from tests.helpers import REPO, make_testset, write_site
from tests.test_sandbox import Venue

pytestmark = pytest.mark.sandbox

HOSTILE = str(REPO / "tests" / "systems" / "hostile.py")


def tagged(tag: str) -> list[psutil.Process]:
    """Live processes with ``tag`` on their command line."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            cmdline = proc.info["cmdline"] or []
            # The system's own processes, not the sandbox's wrappers that name it.
            if (
                tag in cmdline
                and os.path.basename(cmdline[0]).startswith("python")
                and proc.status() != "zombie"
            ):
                found.append(proc)
    return found


def _wait_for(tag: str, count: int, timeout: float = 60.0) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while len(found := tagged(tag)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    return found


def test_kill_9_of_the_controller_ends_the_system_and_its_daemons(tmp_path: Path) -> None:
    tag = "onsite-survivor-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:12]
    testset = make_testset(tmp_path / "set", [("u1", 1600, "x"), ("u2", 1600, "y")])
    (tmp_path / "sys").mkdir()
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {
            "daemonic": {
                "command": [sys.executable, HOSTILE, tag],
                "workdir": "sys",
                # Starts a setsid daemon, then works on for a long time.
                "env": {"HOSTILE": "daemon", "HOSTILE_SLEEP": "600"},
            }
        },
        budget={"seconds": 900.0, "hang_seconds": 900.0},
    )
    controller = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        env={**os.environ, "CI": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # The system and its double-forked daemon.
        started = _wait_for(tag, 2)
        assert len(started) >= 2, "the system and its daemon never ran"
        if os.geteuid() == 0:
            assert all(p.uids().real != 0 for p in started)
    finally:
        controller.send_signal(signal.SIGKILL)
        controller.wait()
    _, alive = psutil.wait_procs(started, timeout=10)
    assert not alive, f"survived the controller: {[p.cmdline() for p in alive]}"


def _plant(venue: Venue, spec_uid: int, tag: str, group: SystemCgroup | None) -> psutil.Process:
    """A process of the system's own user (and group) as an earlier controller's
    system would have left it."""
    command = [sys.executable, "-c", "import time; time.sleep(600)", tag]
    if os.geteuid() == 0:
        command = [
            "/usr/bin/setpriv",
            f"--reuid={spec_uid}",
            f"--regid={spec_uid}",
            "--clear-groups",
            "--",
            *command,
        ]
    prefix = group.join_prefix() if group is not None else []
    proc = subprocess.Popen([*prefix, *command], start_new_session=True)
    found = _wait_for(tag, 1, 10)
    assert found, "the planted process did not start"
    return psutil.Process(proc.pid)


@pytest.mark.parametrize("cgroup", [True, False], ids=["cgroup", "own-user"])
def test_a_start_ends_what_an_earlier_controller_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cgroup: bool
) -> None:
    if os.geteuid() != 0:
        pytest.skip("a user of its own (and a control group) is a root controller's")
    if not cgroup:
        monkeypatch.setattr(cgroups, "_parents", lambda: None)
    elif cgroups._parents() is None:
        pytest.fail("this machine's controller cannot make control groups")
    venue = Venue(tmp_path)
    spec = venue.spec({"HOSTILE": "snoop"}, Sandbox())
    uid = auto_uid(spec.stage_dir)
    key = "sys-" + hashlib.sha256(str(spec.stage_dir.absolute()).encode()).hexdigest()[:24]
    group = SystemCgroup.make(key, None, 1024) if cgroup else None
    tag = "onsite-leftover-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:12]
    leftover = _plant(venue, uid, tag, group)
    with LocalServeRunner(spec) as runner:
        runner.start()
        _, alive = psutil.wait_procs([leftover], timeout=10)
        assert not alive, "the start did not end what an earlier controller left"
        attempt = runner.run_item(venue.request("u1", "a1"))
        assert attempt.outcome == "result", attempt.message
