"""Exec mode through the resident spawner: exit codes, outputs, hangs and leftovers,
sealed and unsealed, and the recorded cost of starting each item."""

from __future__ import annotations

import contextlib
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from runners import ItemRequest, LocalExecRunner, Sandbox, SystemSpec
from runners.sandbox import AUTO_UID_BASE
from tests.helpers import REPO, make_testset

EXEC_HOSTILE = str(REPO / "tests" / "systems" / "exec_hostile.py")


def make_spec(tmp_path: Path, mode: str, sealed: bool, **extra) -> SystemSpec:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    return SystemSpec(
        name="ex",
        task="asr",
        kind="asr",
        mode="exec",
        command=(sys.executable, EXEC_HOSTILE, mode, "{input}", "{output}", tag(tmp_path)),
        workdir=workdir,
        log_path=tmp_path / "run" / "logs" / "ex.log",
        stage_dir=tmp_path / "run" / "stage" / "ex",
        sandbox=Sandbox(enabled=sealed, hidden=(tmp_path / "run",)),
        **extra,
    )


def request(tmp_path: Path, anon: str, hang: float = 30.0) -> ItemRequest:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "x")])
    return ItemRequest(anon, {"audio": testset / "u1.wav"}, {}, hang)


def run_one(tmp_path: Path, mode: str, sealed: bool, hang: float = 30.0, **extra):
    spec = make_spec(tmp_path, mode, sealed, **extra)
    runner = LocalExecRunner(spec)
    runner.start()
    try:
        return runner.run_item(request(tmp_path, "a1", hang)), spec
    finally:
        runner.stop()


def tag(tmp_path: Path) -> str:
    """A word on the command line of every process of one test's system."""
    return "onsite-test-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:16]


def hostile_procs(tmp_path: Path) -> list[psutil.Process]:
    """The live processes of one test's exec_hostile.py system, sealed or not (a forked
    child keeps its parent's command line; the grandchild is given the tag)."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        with contextlib.suppress(psutil.Error):
            if tag(tmp_path) in (proc.info["cmdline"] or []) and proc.status() != "zombie":
                found.append(proc)
    return found


@pytest.fixture(params=[True, False], ids=["sealed", "unsealed"])
def sealed(request) -> bool:
    return bool(request.param)


def test_output_exit_code_and_spawn_cost(tmp_path: Path, sealed: bool) -> None:
    attempt, _ = run_one(tmp_path, "ok", sealed)
    assert attempt.outcome == "result", attempt.message
    assert attempt.output is not None and attempt.output["text"] == "fine"
    assert attempt.spawn_seconds is not None
    assert 0 <= attempt.spawn_seconds < attempt.seconds
    assert attempt.cpu_seconds is not None and attempt.peak_rss_bytes
    if sealed and os.geteuid() == 0:
        # A root controller runs each sealed system as a user number of its own.
        assert attempt.output["uid"] >= AUTO_UID_BASE

    crashed, spec = run_one(tmp_path, "exit4", sealed)
    assert crashed.outcome == "crashed"
    assert "exited with code 4" in crashed.message
    assert "exiting with 4" in spec.log_path.read_text()


def test_hanging_grandchild_is_killed_on_time(tmp_path: Path, sealed: bool) -> None:
    spec = make_spec(tmp_path, "grandchild", sealed)
    runner = LocalExecRunner(spec)
    runner.start()
    try:
        started = time.monotonic()
        attempt = runner.run_item(request(tmp_path, "a1", hang=1.0))
        elapsed = time.monotonic() - started
        assert attempt.outcome == "timeout"
        assert elapsed < 4.0
        _, alive = psutil.wait_procs(hostile_procs(tmp_path), timeout=5)
        assert not alive, "the grandchild outlived the timeout"
        # The next item runs (a fresh spawner) and its exit code is still seen.
        spec2 = make_spec(tmp_path, "ok", sealed)
        runner.spec = spec2
        again = runner.run_item(request(tmp_path, "a2"))
        assert again.outcome == "result", again.message
    finally:
        runner.stop()


def test_daemon_left_by_an_item_is_killed_after_it(tmp_path: Path, sealed: bool) -> None:
    spec = make_spec(tmp_path, "daemon", sealed)
    runner = LocalExecRunner(spec)
    runner.start()
    try:
        attempt = runner.run_item(request(tmp_path, "a1"))
        assert attempt.outcome == "result", attempt.message
        root = runner.sandbox_root
        home = root / "onsite" / "home" if root is not None else spec.stage_dir / "home"
        assert (home / "marker").exists(), "the daemon ran"
        _, alive = psutil.wait_procs(hostile_procs(tmp_path), timeout=5)
        assert not alive, "the item's daemon outlived the item"
    finally:
        runner.stop()


def test_every_process_an_item_left_is_killed_after_it(tmp_path: Path, sealed: bool) -> None:
    name = f"onsite-swarm-{os.getpid()}-{tmp_path.name}"

    def swarm() -> list[psutil.Process]:
        return [p for p in psutil.process_iter(["cmdline"]) if name in (p.info["cmdline"] or [])]

    spec = make_spec(tmp_path, "swarm", sealed)
    spec = SystemSpec(**{**spec.__dict__, "command": (*spec.command, name)})
    runner = LocalExecRunner(spec)
    runner.start()
    try:
        attempt = runner.run_item(request(tmp_path, "a1"))
        assert attempt.outcome == "result", attempt.message
        assert len(swarm()) <= 6
        # The next item starts only once all of them are dead (and reaped).
        runner.spec = make_spec(tmp_path, "ok", sealed)
        again = runner.run_item(request(tmp_path, "a2"))
        assert again.outcome == "result", again.message
        assert not swarm(), "processes the item left outlived it"
    finally:
        runner.stop()
        for proc in swarm():
            proc.kill()


def test_output_link_and_oversized_output_are_invalid(tmp_path: Path, sealed: bool) -> None:
    link, _ = run_one(tmp_path, "symlink", sealed)
    assert link.outcome == "invalid_output"
    assert link.output is None
    big, _ = run_one(tmp_path, "big", sealed, max_output_bytes=1 << 20)
    assert big.outcome == "invalid_output"
    assert "max_output_bytes" in big.message


def test_missing_program_is_a_crash_not_a_controller_error(tmp_path: Path, sealed: bool) -> None:
    spec = make_spec(tmp_path, "ok", sealed)
    spec = SystemSpec(**{**spec.__dict__, "command": ("/nonexistent/program", "{input}")})
    runner = LocalExecRunner(spec)
    runner.start()
    try:
        attempt = runner.run_item(request(tmp_path, "a1"))
    finally:
        runner.stop()
    assert attempt.outcome == "crashed"
    assert "cannot start" in attempt.message


def test_stop_leaves_no_spawner(tmp_path: Path, sealed: bool) -> None:
    spec = make_spec(tmp_path, "ok", sealed)
    runner = LocalExecRunner(spec)
    runner.start()
    pid = runner.spawner_pid
    assert pid is not None
    tree = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    runner.stop()
    _, alive = psutil.wait_procs(tree, timeout=5)
    assert not alive


def test_items_die_with_a_killed_controller(tmp_path: Path, sealed: bool) -> None:
    script = f"""
import sys
from pathlib import Path
sys.path.insert(0, {str(REPO)!r})
from tests.test_exec_spawn import make_spec, request
from runners import LocalExecRunner
tmp = Path({str(tmp_path)!r})
runner = LocalExecRunner(make_spec(tmp, "grandchild", {sealed!r}))
runner.start()
runner.run_item(request(tmp, "a1", hang=120))
"""
    controller = subprocess.Popen([sys.executable, "-c", script])
    deadline = time.monotonic() + 60
    # The item and the child it waits for.
    while len(hostile_procs(tmp_path)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = hostile_procs(tmp_path)
    assert len(started) >= 2, "the item never started"
    controller.kill()
    controller.wait()
    _, alive = psutil.wait_procs(started, timeout=5)
    assert not alive, "the item outlived its controller"
