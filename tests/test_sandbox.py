"""Hostile local systems in the real bubblewrap sandbox: they find nothing of the run,
change nothing, leave nothing running, and stay within their process limit."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import socket
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from harness import Controller, RunStore, load_site
from runners import ItemRequest, LocalServeRunner, Sandbox, StartError, SystemSpec
from runners.sandbox import AUTO_UID_BASE, MEMORY_ROOT, account
from tests.helpers import REPO, make_testset, read_outputs, run_site, write_site

HOSTILE = [sys.executable, str(REPO / "tests" / "systems" / "hostile.py")]
ALLOWED_ENV = {"PWD", "PATH", "HOME", "TMPDIR", "LANG", "PYTHONUNBUFFERED"} | {
    "HOSTILE",
    "HOSTILE_PORT",
}


class Venue:
    """A venue laid out the awkward way the demo is: the workdir is the repository root,
    which holds the site file, the test set and the run directory."""

    def __init__(self, root: Path) -> None:
        self.workdir = root / "repo"
        self.site_dir = self.workdir / "site_config"
        self.testset = make_testset(
            self.site_dir / "data" / "set", [("u1", 1600, "hello"), ("u2", 3200, "world")]
        )
        (self.site_dir / "site.toml").write_text("[site]\nname = 'secret'\n")
        self.run_dir = self.workdir / "runs" / "t"
        self.run_dir.mkdir(parents=True)
        (self.run_dir / "journal.jsonl").write_text('{"anon_id": "x", "item": "u1"}\n')
        (self.run_dir / "run.json").write_text("{}")
        self.other = root / "other-system"
        self.other.mkdir()
        (self.other / "model.toml").write_text("other system's file\n")

    def spec(self, env: dict[str, str], sandbox: Sandbox | None = None, **extra) -> SystemSpec:
        hidden = (self.run_dir.parent, self.site_dir, self.other)
        sandbox = sandbox or Sandbox()
        return SystemSpec(
            name="hostile",
            task="asr",
            kind="asr",
            mode="serve",
            command=tuple(HOSTILE),
            workdir=self.workdir,
            log_path=self.run_dir / "logs" / "hostile.log",
            stage_dir=self.run_dir / "stage" / "hostile",
            env=env,
            setup_seconds=30,
            sandbox=dataclasses.replace(sandbox, hidden=hidden),
            **extra,
        )

    def request(self, utt: str, anon: str, hang: float = 60.0) -> ItemRequest:
        return ItemRequest(
            anon, {"audio": self.testset / f"{utt}.wav"}, {"sample_rate": 16000}, hang
        )


@pytest.fixture
def venue(tmp_path: Path) -> Venue:
    return Venue(tmp_path)


@pytest.fixture
def listener():
    """A socket listening on 127.0.0.1 that records whether anything connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            got.append(conn.recv(100))
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1], got
    stop.set()
    thread.join()
    server.close()


def test_snooping_system_finds_nothing_of_the_run(venue: Venue, listener, monkeypatch) -> None:
    port, connections = listener
    monkeypatch.setenv("ONSITE_TEST_SECRET", "hunter2")
    monkeypatch.setenv("SSH_AUTH_SOCK", "/tmp/agent.sock")
    spec = venue.spec({"HOSTILE": "snoop", "HOSTILE_PORT": str(port)})
    # Another system's staged input in RAM, where sealed inputs are staged on the host.
    planted = MEMORY_ROOT / f"onsite-test-{os.getpid()}" / "in" / "other-system-input.wav"
    planted.parent.mkdir(parents=True, exist_ok=True)
    planted.write_bytes(b"another system's item")
    runner = LocalServeRunner(spec)
    info = runner.start()
    try:
        # Sealed inputs are staged in RAM, and removed with the system.
        assert runner.scratch.inputs.is_relative_to(MEMORY_ROOT)
        first = runner.run_item(venue.request("u1", "a1"))
        second = runner.run_item(venue.request("u2", "a2"))
    finally:
        runner.stop()
        shutil.rmtree(planted.parent.parent)
    assert not runner.scratch.inputs.parent.exists()
    assert info.version == "snoop"
    for attempt in (first, second):
        assert attempt.outcome == "result", attempt.message
        seen = attempt.output
        assert seen is not None
        assert seen["found"] == [], "journal, site file, run.json or test set visible"
        assert seen["inputs"] == [], "other inputs (the test set's or other items') visible"
        assert set(seen["env"]) <= ALLOWED_ENV, seen["env"]
        assert "hunter2" not in str(seen["environs"]) + str(seen["env"])
        assert seen["network"].startswith("refused"), seen["network"]
        assert not any("pytest" in c or "harness" in c for c in seen["cmdlines"].values())
        assert max(seen["pids"]) < 20, "its own PID namespace shows only its own processes"
        if os.geteuid() == 0:
            # A root controller runs the system as a user number of its own.
            assert seen["uid"] == seen["euid"] >= AUTO_UID_BASE, "not a user of its own"
            assert seen["groups"] in ([], [seen["uid"]])
    assert connections == []
    # The input path says nothing of where the run lives.
    assert str(venue.run_dir) not in str(first.output)


def test_network_is_open_only_when_the_device_says_so(venue: Venue, listener) -> None:
    port, connections = listener
    spec = venue.spec({"HOSTILE": "snoop", "HOSTILE_PORT": str(port)}, Sandbox(network=True))
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1"))
    assert attempt.output is not None and attempt.output["network"] == "connected"
    deadline = time.monotonic() + 5
    while not connections and time.monotonic() < deadline:
        time.sleep(0.05)
    assert connections == [b"stolen\n"]


def test_sealed_system_keeps_to_its_cpus(venue: Venue) -> None:
    before = os.sched_getaffinity(0)
    cpu = max(before)
    with LocalServeRunner(venue.spec({"HOSTILE": "snoop"}), [cpu]) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1"))
    assert attempt.output is not None and attempt.output["affinity"] == [cpu]
    assert os.sched_getaffinity(0) == before, "the controller's own thread is unpinned again"


@pytest.mark.parametrize("sealed", [True, False])
def test_writing_into_the_input_changes_nothing(venue: Venue, sealed: bool) -> None:
    source = venue.testset / "u1.wav"
    original = hashlib.sha256(source.read_bytes()).hexdigest()
    inode = source.stat().st_ino
    spec = venue.spec({"HOSTILE": "scribble"}, Sandbox(enabled=sealed))
    with LocalServeRunner(spec) as runner:
        runner.start()
        first = runner.run_item(venue.request("u1", "a1"))
        second = runner.run_item(venue.request("u1", "a2"))
    assert first.output is not None and second.output is not None
    if sealed:
        assert "ok" not in first.output["attempts"].values(), first.output["attempts"]
    assert hashlib.sha256(source.read_bytes()).hexdigest() == original
    assert source.stat().st_ino == inode and source.stat().st_nlink == 1
    # The next item gets the original bytes, whatever the first did to its copy.
    assert second.output["sha256"] == original or not sealed and second.output["sha256"] is None


def test_setsid_daemon_is_gone_with_the_system(venue: Venue) -> None:
    spec = venue.spec({"HOSTILE": "daemon"})
    runner = LocalServeRunner(spec)
    runner.start()
    try:
        attempt = runner.run_item(venue.request("u1", "a1"))
        assert attempt.output is not None and attempt.output["started"] is True
        assert attempt.output["marker"] == "/onsite/home/marker"
        # HOME is a RAM file system inside the sandbox: nothing of it is in the run dir.
        assert not (spec.stage_dir / "home").exists()
        assert runner.sandbox_root is not None
        marker = runner.sandbox_root / "onsite" / "home" / "marker"
        size = marker.stat().st_size
        time.sleep(0.3)
        assert marker.stat().st_size > size, "the daemon runs while the system runs"
        assert runner.pid is not None
        tree = psutil.Process(runner.pid).children(recursive=True)
    finally:
        runner.kill()
    gone, alive = psutil.wait_procs(tree, timeout=5)
    assert not alive, f"the daemon outlived its system: {alive}"
    runner.stop()


def test_fork_bomb_is_contained(venue: Venue) -> None:
    limited = Sandbox(max_processes=40)
    spec = venue.spec({"HOSTILE": "forkbomb", "HOSTILE_FORKS": "300"}, limited)
    runner = LocalServeRunner(spec)
    runner.start()
    try:
        attempt = runner.run_item(venue.request("u1", "a1"))
        assert runner.pid is not None
        tree = psutil.Process(runner.pid).children(recursive=True)
    finally:
        runner.kill()
    assert attempt.output is not None
    if os.geteuid() == 0:
        assert attempt.output["refused"] > 0, "the process limit stopped the bomb"
        assert attempt.output["made"] < 40
    assert len(tree) > 10
    gone, alive = psutil.wait_procs(tree, timeout=5)
    assert not alive, f"{len(alive)} processes of the bomb survived the kill"
    runner.stop()


def test_system_that_closes_its_stdin_is_reported_as_such(venue: Venue) -> None:
    spec = venue.spec({"HOSTILE": "closestdin"})
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1", hang=1.5))
    assert attempt.outcome == "crashed"
    assert "closed its stdin" in attempt.message
    assert "None" not in attempt.message


def test_slow_system_that_moved_its_stdout_is_a_timeout(venue: Venue) -> None:
    spec = venue.spec({"HOSTILE": "slow"})
    with LocalServeRunner(spec) as runner:
        runner.start()
        attempt = runner.run_item(venue.request("u1", "a1", hang=1.0))
    assert attempt.outcome == "timeout", attempt.message


def test_unsealed_system_that_closes_its_stdin(venue: Venue) -> None:
    spec = venue.spec({"HOSTILE": "closestdin"}, Sandbox(enabled=False))
    with LocalServeRunner(spec) as runner:
        runner.start()
        time.sleep(0.2)
        attempt = runner.run_item(venue.request("u1", "a1", hang=5))
    assert attempt.outcome == "crashed"
    assert "closed its stdin" in attempt.message


def test_stderr_log_keeps_head_and_tail_within_its_cap(venue: Venue) -> None:
    spec = venue.spec({"HOSTILE": "stderr", "HOSTILE_STDERR_BYTES": "300000"}, max_log_bytes=20_000)
    with LocalServeRunner(spec) as runner:
        runner.start()
        for n in range(3):
            attempt = runner.run_item(venue.request("u1", f"a{n}"))
            assert attempt.outcome == "result"
    log = spec.log_path.read_text()
    assert len(log) <= 20_000 + 100
    assert log.startswith("--- onsite: starting")
    assert "--- onsite log cut:" in log
    assert log.rstrip().endswith("the very last line")
    cut = int(log.split("--- onsite log cut:")[1].split("bytes")[0])
    assert cut > 800_000


def test_staged_inputs_are_read_only_copies_and_stage_is_emptied_at_start(
    venue: Venue,
) -> None:
    spec = venue.spec({"HOSTILE": "scribble"}, Sandbox(enabled=False))
    leftover = spec.stage_dir / "in" / "old-input.wav"
    leftover.parent.mkdir(parents=True)
    leftover.write_bytes(b"from a killed session")
    older = spec.stage_dir / "0123abcd-audio.wav"
    older.write_bytes(b"staged by an older version")
    with LocalServeRunner(spec) as runner:
        runner.start()
        assert not leftover.exists() and not older.exists()
        inputs, staged = runner._stage(venue.request("u1", "a1"))
        try:
            path = Path(staged[0])
            assert path.stat().st_ino != (venue.testset / "u1.wav").stat().st_ino
            assert path.stat().st_mode & 0o777 == 0o444
            assert path.read_bytes() == (venue.testset / "u1.wav").read_bytes()
        finally:
            runner._unstage(staged)


def test_root_is_refused_as_the_sandbox_user() -> None:
    if os.geteuid() != 0:
        pytest.skip("the sandbox user matters only when the controller is root")
    with pytest.raises(StartError, match="unprivileged"):
        account(Sandbox(user="root"))
    with pytest.raises(StartError, match="does not exist"):
        account(Sandbox(user="no-such-user-here"))


def test_unreadable_workdir_is_refused_with_the_fix(venue: Venue) -> None:
    if os.geteuid() != 0:
        pytest.skip("only a root controller runs systems as another user")
    venue.workdir.chmod(0o700)
    try:
        runner = LocalServeRunner(venue.spec({"HOSTILE": "snoop"}))
        with pytest.raises(StartError, match="chmod o\\+rX"):
            runner.start()
    finally:
        venue.workdir.chmod(0o755)


def test_through_the_controller_a_snooping_system_sees_nothing(
    tmp_path: Path, listener, monkeypatch
) -> None:
    port, connections = listener
    monkeypatch.setenv("ONSITE_TEST_SECRET", "hunter2")
    testset = make_testset(tmp_path / "set", [("u1", 1600, "secret words")])
    (tmp_path / "sys").mkdir()
    site_path = write_site(
        tmp_path / "site.toml",
        testset,
        {
            "snoop": {
                "command": HOSTILE,
                "workdir": "sys",
                "env": {"HOSTILE": "snoop", "HOSTILE_PORT": str(port)},
            }
        },
    )
    site = load_site(site_path)
    store = RunStore(site.run_dir, "test", fsync_seconds=0)
    try:
        results = Controller(site, store).run()
    finally:
        store.close()
    assert [r.failed for r in results] == [None]
    (row,) = read_outputs(site.run_dir, "asr", "snoop")
    seen = row["output"]
    assert seen["found"] == [] and seen["inputs"] == []
    assert set(seen["env"]) <= ALLOWED_ENV
    assert "hunter2" not in str(seen)
    assert seen["network"].startswith("refused") and connections == []
    if os.geteuid() == 0:
        assert seen["uid"] >= AUTO_UID_BASE


def test_missing_or_broken_bubblewrap_is_refused_with_the_ways_forward(
    venue: Venue, monkeypatch, tmp_path: Path
) -> None:
    import runners.sandbox as sandbox_module

    monkeypatch.setattr(sandbox_module, "bwrap_path", lambda: None)
    with pytest.raises(StartError, match="not installed") as missing:
        LocalServeRunner(venue.spec({"HOSTILE": "snoop"})).start()
    assert "sandbox = false" in str(missing.value) and "bubblewrap" in str(missing.value)

    # A bwrap that cannot create namespaces (as where user namespaces are disabled).
    fake = tmp_path / "bwrap"
    fake.write_text(
        "#!/bin/sh\necho 'bwrap: No permissions to creating new namespace' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sandbox_module, "bwrap_path", lambda: str(fake))
    with pytest.raises(StartError, match="cannot create its namespaces") as broken:
        LocalServeRunner(venue.spec({"HOSTILE": "snoop"})).start()
    assert "No permissions" in str(broken.value) and "user namespaces" in str(broken.value)


def test_archived_runs_site_files_and_keys_are_masked_under_the_default_workdir(
    tmp_path: Path,
) -> None:
    """The default workdir is the site file's directory, which holds the runs directory:
    an earlier run `--fresh` archived there (its manifest maps input hashes to items,
    its outputs hold another system's answers) and the SSH key a device names must be
    as invisible as the current run."""
    venue = tmp_path / "venue"
    testset = make_testset(venue / "data" / "set", [("u1", 1600, "secret words")])
    archived = venue / "runs" / "t-20261127-101010"
    (archived / "outputs" / "asr").mkdir(parents=True)
    (archived / "manifest.json").write_text('{"items": {"abc": "u1"}}')
    (archived / "outputs" / "asr" / "best.jsonl").write_text('{"id": "u1", "output": {}}\n')
    (venue / "team.key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    # Readable by others, as a careless operator leaves it (onsite warns of it).
    (venue / "team.key").chmod(0o644)
    site_path = write_site(
        venue / "site.toml",
        testset,
        {
            "snoop": {
                "command": HOSTILE,
                "env": {"HOSTILE": "snoop", "HOSTILE_WANTED": "team.key,best.jsonl"},
            }
        },
    )
    # A device (unused by the snoop) whose key file lies in the site's directory.
    site_path.write_text(
        site_path.read_text()
        + '\n[devices.team]\ntransport = "ssh"\nhost = "192.0.2.1"\nuser = "team"\n'
        + 'key = "team.key"\n'
    )
    run_dir, results = run_site(site_path)
    assert [r.failed for r in results] == [None]
    (row,) = read_outputs(run_dir, "asr", "snoop")
    assert row["verdict"] == "ok", row["message"]
    assert row["output"]["found"] == [], "an archived run, a site file or a key is visible"
