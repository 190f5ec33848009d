"""The resident resource sampler on an SSH participant's machine, and a login shell whose
start-up files misbehave: against a real sshd on 127.0.0.1 (the "remote" machine is this one)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from runners import ItemRequest, SshServeRunner, StartError, SystemSpec, proctree
from runners.proctree import TreeMeter
from runners.ssh_link import RemoteMeter, SshDevice, connect, meter_command
from tests.helpers import FAKE_SERVE, make_testset
from tests.sshd import Sshd, start_sshd

pytestmark = pytest.mark.sshd

# Burns `seconds` of CPU, writes its pid to `done`, then stays alive doing nothing.
BURN = textwrap.dedent(
    """
    import os, sys, time
    seconds, done = float(sys.argv[1]), sys.argv[2]
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass
    with open(done + ".tmp", "w") as fh:
        fh.write(str(os.getpid()))
    os.rename(done + ".tmp", done)
    time.sleep(1000)
    """
)


def wait_for(path: Path, seconds: float = 120.0) -> int:
    """The pid a burner wrote once it has burnt its CPU."""
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} was not written within {seconds} s")
        time.sleep(0.05)
    return int(path.read_text())


def wait_gone(pid: int, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while psutil.pid_exists(pid):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                time.sleep(0.05)
                continue
        except psutil.Error:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"process {pid} is still there")
        time.sleep(0.05)


class Burners:
    """A "system" whose grandchild burns 0.6 s of CPU, and an unrelated neighbour (same
    account, its own session) that burns as much."""

    SECONDS = 0.6

    def __init__(self, root: Path) -> None:
        script = root / "burn.py"
        script.write_text(BURN)
        self.grandchild_done = root / "grandchild.pid"
        self.neighbour_done = root / "neighbour.pid"
        # leader sh -> subshell sh (kept by the trailing ':') -> python, the grandchild.
        self.leader = subprocess.Popen(
            [
                "sh",
                "-c",
                '( "$0" "$1" "$2" "$3"; : ) & wait',
                sys.executable,
                str(script),
                str(self.SECONDS),
                str(self.grandchild_done),
            ],
            start_new_session=True,
        )
        self.neighbour = subprocess.Popen(
            [sys.executable, str(script), str(self.SECONDS), str(self.neighbour_done)],
            start_new_session=True,
        )

    def close(self) -> None:
        for proc in (self.leader, self.neighbour):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
            proc.wait(30)


@pytest.fixture
def burners(tmp_path: Path) -> Iterator[Burners]:
    procs = Burners(tmp_path)
    try:
        yield procs
    finally:
        procs.close()


@pytest.mark.parametrize("children", [True, False], ids=["children-lists", "proc-scan"])
def test_sampler_counts_the_systems_grandchild_not_a_neighbour(
    sshd: Sshd, burners: Burners, children: bool
) -> None:
    grandchild = wait_for(burners.grandchild_done)
    wait_for(burners.neighbour_done)
    client, _ = connect(SshDevice(**sshd.options()), 0.0)
    try:
        transport = client.get_transport()
        assert transport is not None
        meter = RemoteMeter(transport, children=children, scan_seconds=3600.0)
        cpu, peak = meter.sample(burners.leader.pid)
        assert meter.walks_children is (children and proctree._CHILDREN_FILES)
        assert cpu is not None and peak is not None
        # Python's start-up adds a little; the neighbour's 0.6 s would double it.
        assert Burners.SECONDS - 0.05 <= cpu < 2 * Burners.SECONDS - 0.1, cpu
        assert peak > psutil.Process(grandchild).memory_info().rss // 2
        assert meter.scans == 1

        # Samples in between read the known processes only.
        for _ in range(20):
            again, _ = meter.sample(burners.leader.pid)
            assert again is not None and again >= cpu
        assert (meter.samples, meter.scans) == (21, 1)

        # The grandchild ends: its parent reaps it, and the leader reaps the parent; its CPU
        # time is then in the leader's reaped-children time, still counted.
        os.kill(grandchild, signal.SIGKILL)
        wait_gone(grandchild)
        deadline = time.monotonic() + 60
        while (after := meter.sample(burners.leader.pid)[0]) is not None:
            if after >= cpu or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert after is not None and after >= Burners.SECONDS - 0.05

        # A new session id is looked for at once.
        meter.sample(burners.neighbour.pid)
        assert meter.scans == 2
        assert 0 <= meter.own_cpu_seconds < 1.0
        assert meter.summary() is not None
        meter.close()
    finally:
        client.close()


def test_scans_wait_for_their_interval_and_budget(sshd: Sshd, burners: Burners) -> None:
    wait_for(burners.grandchild_done)
    client, _ = connect(SshDevice(**sshd.options()), 0.0)
    try:
        transport = client.get_transport()
        assert transport is not None
        # A budget of a whole core: only the interval holds scans back.
        meter = RemoteMeter(transport, children=False, scan_seconds=0.2, budget=1.0)
        meter.sample(burners.leader.pid)
        meter.sample(burners.leader.pid)
        assert meter.scans == 1
        time.sleep(0.3)
        meter.sample(burners.leader.pid)
        assert meter.scans == 2, "a scan is due after scan_seconds"
        # No budget at all once the sampler has used any CPU: scans stop, samples go on.
        starved = RemoteMeter(transport, children=False, scan_seconds=0.0, budget=0.0)
        deadline = time.monotonic() + 60
        while starved.own_cpu_seconds == 0 and time.monotonic() < deadline:
            starved.sample(burners.leader.pid)
        scans = starved.scans
        for _ in range(10):
            assert starved.sample(burners.leader.pid)[0] is not None
        assert starved.scans == scans
        meter.close()
        starved.close()
    finally:
        client.close()


def test_sampler_answers_nothing_for_a_session_that_is_gone(sshd: Sshd) -> None:
    proc = subprocess.Popen(["sleep", "0"], start_new_session=True)
    proc.wait()
    client, _ = connect(SshDevice(**sshd.options()), 0.0)
    try:
        transport = client.get_transport()
        assert transport is not None
        meter = RemoteMeter(transport)
        assert meter.sample(proc.pid) == (None, None)
        assert meter.ping() is not None
        meter.close()
    finally:
        client.close()


@pytest.mark.parametrize("children", [True, False], ids=["children-lists", "proc-scan"])
def test_local_meter_counts_the_grandchild_not_the_neighbour(
    burners: Burners, children: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both ways of finding the tree run on this kernel; the scan is what kernels without
    # children lists get.
    monkeypatch.setattr(proctree, "_CHILDREN_FILES", children and proctree._CHILDREN_FILES)
    wait_for(burners.grandchild_done)
    wait_for(burners.neighbour_done)
    meter = TreeMeter(burners.leader.pid)
    try:
        cpu, peak = meter.sample(time.monotonic())
        assert cpu is not None and peak is not None
        assert Burners.SECONDS - 0.05 <= cpu < 2 * Burners.SECONDS - 0.1, cpu
        assert meter.refreshes == 1
        now = time.monotonic()
        for _ in range(50):
            meter.sample(now)
        assert meter.refreshes == 1, "samples within refresh_seconds read known files only"
    finally:
        meter.close()


# -- the account's shell and its start-up files ----------------------------------------------

HOME_FILES = {
    # Never read for onsite's commands (not a login shell), though it would end the session.
    ".profile": "echo PROFILE-GARBAGE\nexit 1\n",
    # bash reads this for every command sshd runs; it prints, and exits on request.
    ".bashrc": 'echo BASHRC-GARBAGE\n[ -e "$HOME/exit-now" ] && exit 4\n:\n',
    # A participant's own environment file, sourced by their command.
    "team.env": 'export FAKE_PLAN=\'{"1600": {"text": "from the profile"}}\'\necho TEAM-ENV\n',
}


@pytest.fixture(scope="module")
def noisy_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    """An sshd whose sessions get a home with start-up files that print and exit, and an
    ENV file (read by interactive POSIX shells only) that exits."""
    root = tmp_path_factory.mktemp("noisy")
    home = root / "home"
    home.mkdir()
    for name, text in HOME_FILES.items():
        (home / name).write_text(text)
    (root / "env.sh").write_text("echo ENV-GARBAGE\nexit 2\n")
    server = start_sshd(root / "sshd", extra=(f"SetEnv HOME={home} ENV={root / 'env.sh'}",))
    try:
        yield server, home
    finally:
        server.stop()


def spec_for(root: Path, command: tuple[str, ...], env: dict[str, str]) -> SystemSpec:
    return SystemSpec(
        name="noisy",
        task="asr",
        kind="asr",
        mode="serve",
        command=command,
        workdir=root,
        log_path=root / "logs" / "noisy.log",
        stage_dir=root / "stage",
        env=env,
        setup_seconds=30.0,
    )


def test_a_system_runs_whatever_the_accounts_start_up_files_print(
    tmp_path: Path, noisy_sshd: tuple[Sshd, Path]
) -> None:
    server, home = noisy_sshd
    items = make_testset(tmp_path / "set", [("a", 1600, "")])
    plan = '{"1600": {"text": "plain"}}'
    spec = spec_for(tmp_path, tuple(FAKE_SERVE), {"FAKE_PLAN": plan})
    with SshServeRunner(spec, server.options(workdir=str(tmp_path / "remote"))) as runner:
        runner.start()
        time.sleep(0.3)
        attempt = runner.run_item(ItemRequest("n1", {"audio": items / "a.wav"}, {}, 30.0))
    assert (attempt.outcome, attempt.output) == ("result", {"text": "plain"})
    assert attempt.cpu_seconds is not None, "the sampler started past the shell's noise"
    assert attempt.peak_rss_bytes is not None
    log = spec.log_path.read_text()
    assert "remote shell printed: BASHRC-GARBAGE" in log
    assert "PROFILE-GARBAGE" not in log and "ENV-GARBAGE" not in log
    assert "resource sampler on the machine:" in log


def test_a_system_that_needs_its_profile_sources_it(
    tmp_path: Path, noisy_sshd: tuple[Sshd, Path]
) -> None:
    server, home = noisy_sshd
    items = make_testset(tmp_path / "set", [("a", 1600, "")])
    # As docs/ssh.md says: the command sources the file itself, its output kept off stdout.
    command = ("sh", "-c", '. "$HOME/team.env" >&2 && exec "$0" "$@"', *FAKE_SERVE)
    spec = spec_for(tmp_path, command, {})
    with SshServeRunner(spec, server.options(workdir=str(tmp_path / "remote"))) as runner:
        runner.start()
        attempt = runner.run_item(ItemRequest("n2", {"audio": items / "a.wav"}, {}, 30.0))
    assert (attempt.outcome, attempt.output) == ("result", {"text": "from the profile"})
    assert "TEAM-ENV" in spec.log_path.read_text(), "what the file printed went to the log"


def test_start_up_files_that_exit_are_named(tmp_path: Path, noisy_sshd: tuple[Sshd, Path]) -> None:
    server, home = noisy_sshd
    spec = spec_for(tmp_path, tuple(FAKE_SERVE), {})
    (home / "exit-now").write_text("")
    try:
        runner = SshServeRunner(spec, server.options(workdir=str(tmp_path / "remote")))
        with pytest.raises(StartError, match=r"login shell of .* ended \(exit code 4\).*bashrc"):
            runner.start()
        runner.stop()
    finally:
        (home / "exit-now").unlink()


BUSYBOX = "/usr/bin/busybox"


@pytest.mark.skipif(
    not os.path.exists(BUSYBOX), reason="busybox is not installed (apt-get install busybox)"
)
@pytest.mark.parametrize("how", ["walk", "scan"])
def test_the_sampler_runs_on_busybox(tmp_path: Path, burners: Burners, how: str) -> None:
    """Small boards often have only busybox: its sh, cat and awk do (run here directly, as the
    board's sshd would run the sampler's command)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for applet in ("sh", "cat", "awk"):
        (bindir / applet).symlink_to(BUSYBOX)
    wait_for(burners.grandchild_done)
    argv = shlex.split(meter_command("/proc", children=how == "walk"))
    assert argv[:2] == ["sh", "-c"]
    out = subprocess.run(
        [str(bindir / "sh"), *argv[1:]],
        input=f"s {burners.leader.pid}\nping\n",
        env={"PATH": str(bindir)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = out.stdout.splitlines()
    banner = lines[0].split()
    assert banner[:2] == ["onsite-meter", "100"], out
    rows = [line.split() for line in lines[1:] if len(line.split()) == 6]
    ticks = sum(int(f) for row in rows for f in row[1:5])
    assert Burners.SECONDS - 0.05 <= ticks / 100 < 2 * Burners.SECONDS - 0.1, lines
    assert lines[-2:] == ["onsite-end", "onsite-end"]


# Sleeps 50 ms per item and answers the span it measured itself, from reading the item's
# line to writing the answer.
KNOWN_SPAN = textwrap.dedent(
    """
    import json, sys, time
    for line in sys.stdin:
        t0 = time.perf_counter_ns()
        message = json.loads(line)
        if message["op"] == "hello":
            print(json.dumps({"op": "ready", "name": "span", "version": "1"}), flush=True)
        elif message["op"] == "item":
            time.sleep(0.05)
            span = time.perf_counter_ns() - t0
            answer = {"op": "result", "id": message["id"], "output": {"text": str(span)}}
            print(json.dumps(answer), flush=True)
    """
)


def test_an_answer_is_timed_when_its_bytes_arrive_never_before(tmp_path: Path, sshd: Sshd) -> None:
    """Answers are stamped by the SSH transport's thread as their bytes come in: the recorded
    time is never shorter than the system's own span (a stale stamp would be)."""
    system = tmp_path / "span.py"
    system.write_text(KNOWN_SPAN)
    spec = spec_for(tmp_path, (sys.executable, str(system)), {})
    with SshServeRunner(spec, sshd.options(workdir=str(tmp_path / "remote"))) as runner:
        runner.start()
        for n in range(5):
            attempt = runner.run_item(ItemRequest(f"k{n}", {}, {"text": "x"}, 30.0))
            assert attempt.outcome == "result", attempt.message
            assert attempt.output is not None
            span = int(attempt.output["text"]) / 1e9
            assert span >= 0.05
            assert attempt.seconds >= span, (attempt.seconds, span)
