"""SSH systems cannot outlive their controller, see only a clean environment, and the link's
odd servers and settings are handled: tests against a real sshd on 127.0.0.1."""

from __future__ import annotations

import json
import os
import shlex
import signal
import stat
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from runners import ItemRequest, SshServeRunner, StartError, SystemSpec, probe
from runners.remote_wrapper import (
    cleanup_command,
    kill_command,
    prepare_command,
    system_dir,
    wrapper_command,
)
from tests.helpers import REPO, make_testset
from tests.netns import remote_machine
from tests.sshd import Sshd, keygen, start_sshd

pytestmark = pytest.mark.sshd

# A participant system that misbehaves on purpose. Per item (by the "do" field):
# "daemons" starts a setsid'd process and a double-forked daemon (both with the marker in
# their command line), writes their pids and its environment to OUT, then stops answering;
# "big" answers with N bytes of text; "noise" writes N bytes to stderr and answers.
HOSTILE = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    marker, out = sys.argv[1], sys.argv[2]
    sleeper = [sys.executable, "-c", "import time; time.sleep(1000)", marker]

    def double_fork():
        pid = os.fork()
        if pid == 0:
            os.setsid()
            if os.fork() == 0:
                with open(os.path.join(out, f"daemon-{os.getpid()}"), "w"):
                    pass
                os.execv(sys.executable, sleeper)
            os._exit(0)
        os.waitpid(pid, 0)

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "hello":
            send({"op": "ready", "name": "hostile", "version": "1"})
        elif message["op"] == "item":
            do, n = message["input"]["do"], message["input"].get("n", 0)
            if do == "daemons":
                with open(os.path.join(out, "env.json"), "w") as fh:
                    json.dump(dict(os.environ), fh)
                setsid = subprocess.Popen(
                    ["setsid"] + sleeper, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                with open(os.path.join(out, f"setsid-{setsid.pid}"), "w"):
                    pass
                double_fork()
                with open(os.path.join(out, "staged"), "w") as fh:
                    fh.write(message["input"].get("audio", ""))
                with open(os.path.join(out, "system"), "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(1000)
            if do == "orphan":
                # Daemons, then the wrapper above killed: nothing on the machine is left
                # to clean up after this start but the controller's stop.
                subprocess.Popen(
                    ["setsid"] + sleeper, stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )
                double_fork()
                for entry in os.listdir("/proc"):
                    try:
                        with open(f"/proc/{entry}/cmdline", "rb") as fh:
                            line = fh.read()
                        if b"onsite-wrapper" in line and marker.encode() in line:
                            os.kill(int(entry), 9)
                    except (OSError, ValueError):
                        continue
            if do == "noise":
                sys.stderr.write("e" * n)
                sys.stderr.flush()
                n = 2
            send({"op": "result", "id": message["id"], "output": {"text": "x" * n}})
        else:
            break
    """
)

# Drives a runner in its own process, as `onsite run` would, so that the test can kill -9 it.
DRIVER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from runners import ItemRequest, SshServeRunner, SystemSpec
    conf = json.loads(sys.argv[1])
    spec = SystemSpec(
        name="hostile", task="asr", kind="asr", mode="serve", command=tuple(conf["command"]),
        workdir=Path(conf["root"]), log_path=Path(conf["root"]) / "logs" / "hostile.log",
        stage_dir=Path(conf["root"]) / "stage", setup_seconds=20.0,
    )
    runner = SshServeRunner(spec, conf["options"])
    info = runner.start()
    print(json.dumps({"pid": info.pid, "port": runner.link_port}), flush=True)
    runner.run_item(ItemRequest("d1", {"audio": Path(conf["wav"])}, {"do": "daemons"}, 1000.0))
    """
)


def marked(marker: str) -> list[psutil.Process]:
    """Live processes whose command line holds the marker (what `ps` would show)."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if marker in (proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def wait_until(check: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def hostile_setup(tmp_path: Path) -> tuple[str, Path, list[str]]:
    marker = f"onsite-test-marker-{os.getpid()}-{time.monotonic_ns()}"
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "hostile.py"
    script.write_text(HOSTILE)
    return marker, out, [sys.executable, str(script), marker, str(out)]


def hostile_spec(tmp_path: Path, command: list[str], **extra: Any) -> SystemSpec:
    return SystemSpec(
        name="hostile",
        task="asr",
        kind="asr",
        mode="serve",
        command=tuple(command),
        workdir=tmp_path,
        log_path=tmp_path / "logs" / "hostile.log",
        stage_dir=tmp_path / "stage",
        setup_seconds=20.0,
        **extra,
    )


def runner_for(sshd: Sshd, spec: SystemSpec, remote: Path, **options: Any) -> SshServeRunner:
    runner = SshServeRunner(spec, sshd.options(workdir=str(remote), **options))
    runner.reconnect_seconds = 5.0
    return runner


def start_driver(tmp_path: Path, sshd: Sshd, command: list[str], wav: Path) -> Any:
    conf = {
        "command": command,
        "root": str(tmp_path),
        "options": sshd.options(workdir=str(tmp_path / "remote")),
        "wav": str(wav),
    }
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(conf)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
    )


def pids_in(out: Path, prefix: str) -> list[int]:
    return [int(p.name.split("-")[1]) for p in out.glob(f"{prefix}-*")]


def test_kill9_of_the_controller_then_the_channel_closes(tmp_path: Path, sshd: Sshd) -> None:
    """The controller dies; sshd closes the channel: the wrapper kills everything itself."""
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    driver = start_driver(tmp_path, sshd, command, wav)
    try:
        assert driver.stdout is not None
        json.loads(driver.stdout.readline())
        assert wait_until(lambda: (out / "system").exists() and len(marked(marker)) == 3)
        staged = Path((out / "staged").read_text())
        assert staged.exists()
    finally:
        driver.kill()
        driver.wait()
    # Within the wrapper's grace (2 s) and a scan of /proc.
    assert wait_until(lambda: not marked(marker), 15.0), marked(marker)
    system = int((out / "system").read_text())
    assert not psutil.pid_exists(system) or psutil.Process(system).status() == "zombie"
    assert wait_until(lambda: not staged.exists(), 5.0)


def test_kill9_of_the_controller_on_a_dead_link_then_resume(tmp_path: Path, sshd: Sshd) -> None:
    """The controller dies while the link is frozen (sshd never sees it close): the resumed
    controller's runner kills everything of the old session before sending anything."""
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    driver = start_driver(tmp_path, sshd, command, wav)
    frozen: list[psutil.Process] = []
    try:
        assert driver.stdout is not None
        started = json.loads(driver.stdout.readline())
        assert wait_until(lambda: (out / "system").exists() and len(marked(marker)) == 3)
        staged = Path((out / "staged").read_text())
        # Freeze the sshd processes serving the old controller: its channel stays open on the
        # machine, as when the network drops without a word.
        frozen = sshd.session_processes(started["port"])
        assert frozen
        for proc in frozen:
            proc.suspend()
        driver.kill()
        driver.wait()
        time.sleep(3.0)  # longer than the wrapper's grace: nothing may have been cleaned yet
        old = marked(marker)
        assert len(old) == 3, "the scenario: the old system and its daemons still run"
        assert psutil.pid_exists(started["pid"])
        assert staged.exists()
        sysdir = staged.parent.parent
        sid_file = next(sysdir.glob("*.sid"))
        assert sid_file.read_text().split() == [str(started["pid"])]

        spec = hostile_spec(tmp_path, command)
        with runner_for(sshd, spec, tmp_path / "remote") as runner:
            info = runner.start()
            # After start, before any item: nothing of the old session runs, nothing is staged.
            # (The new start runs the same command, with the marker in its command line.)
            assert [p.pid for p in marked(marker)] == [info.pid]
            assert not [p for p in old if p.is_running() and p.status() != "zombie"]
            assert not psutil.pid_exists(started["pid"]) or (
                psutil.Process(started["pid"]).status() == "zombie"
            )
            assert not staged.exists()
            assert not list(sysdir.rglob("*.wav"))
            assert len(list(sysdir.glob("*.sid"))) == 1, "only the new start's state"
            assert not staged.parent.exists()
            assert info.pid is not None and info.pid != started["pid"]
            answer = runner.run_item(
                ItemRequest("r1", {"audio": wav}, {"do": "echo", "n": 3}, 10.0)
            )
            assert answer.output == {"text": "xxx"}
    finally:
        for proc in frozen:
            with_suppress_kill(proc)
    assert not (tmp_path / "remote" / ".onsite").exists()


def with_suppress_kill(proc: psutil.Process) -> None:
    try:
        proc.kill()
    except psutil.Error:
        pass


def test_daemons_die_with_the_killed_system(tmp_path: Path, sshd: Sshd) -> None:
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    spec = hostile_spec(tmp_path, command)
    with runner_for(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        attempt = runner.run_item(ItemRequest("k1", {"audio": wav}, {"do": "daemons"}, 2.0))
        assert attempt.outcome == "timeout" and attempt.system_lost
        # Killed at the timeout, before run_item returned: the daemons too.
        assert not marked(marker), marked(marker)
        assert pids_in(out, "daemon") and pids_in(out, "setsid")
        assert not Path((out / "staged").read_text()).exists()


def test_daemons_die_when_the_channel_closes(tmp_path: Path, sshd: Sshd) -> None:
    marker, out, command = hostile_setup(tmp_path)
    spec = hostile_spec(tmp_path, command)
    runner = runner_for(sshd, spec, tmp_path / "remote")
    runner.start()
    stream = runner._stream
    assert stream is not None
    stream.write(json.dumps({"op": "item", "id": "c1", "input": {"do": "daemons"}}).encode())
    stream.write(b"\n")
    assert wait_until(lambda: (out / "system").exists() and len(marked(marker)) == 3)
    # Only the channel closes (the connection stays): the wrapper alone must clean up.
    stream.close()
    assert wait_until(lambda: not marked(marker), 15.0), marked(marker)
    runner._stream = None
    runner._token = None
    runner.stop()


def test_stop_kills_what_a_start_left_when_its_wrapper_could_not(
    tmp_path: Path, sshd: Sshd
) -> None:
    marker, out, command = hostile_setup(tmp_path)
    spec = hostile_spec(tmp_path, command)
    remote = tmp_path / "remote"
    runner = runner_for(sshd, spec, remote)
    runner.start()
    answer = runner.run_item(ItemRequest("o1", {}, {"do": "orphan"}, 10.0))
    assert answer.outcome == "result"
    # A setsid'd sleeper and a double-forked daemon (the system itself ends, its stdin
    # relay gone), and no wrapper left to kill them.
    assert wait_until(lambda: len(marked(marker)) >= 2), marked(marker)
    assert not [
        p
        for p in psutil.process_iter(["cmdline"])
        if "onsite-wrapper" in " ".join(p.info["cmdline"] or [])
        and marker in str(p.info["cmdline"])
    ]
    runner.stop()
    assert wait_until(lambda: not marked(marker), 5.0), marked(marker)
    assert not (remote / ".onsite").exists()


def test_remote_environment_is_clean(tmp_path: Path, sshd: Sshd) -> None:
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    spec = hostile_spec(tmp_path, command, env={"TEAM_SETTING": "a b'c"})
    os.environ["ONSITE_TEST_CONTROLLER_SECRET"] = "s3cret"
    try:
        with runner_for(sshd, spec, tmp_path / "remote") as runner:
            runner.start()
            runner.run_item(ItemRequest("e1", {"audio": wav}, {"do": "daemons"}, 1.5))
    finally:
        del os.environ["ONSITE_TEST_CONTROLLER_SECRET"]
    env = json.loads((out / "env.json").read_text())
    assert not [k for k in env if k.startswith("SSH_")], env
    assert "ONSITE_TEST_CONTROLLER_SECRET" not in env
    assert not {"MAIL", "USER", "LOGNAME", "SHELL", "SSH_AUTH_SOCK"} & set(env)
    assert env["TEAM_SETTING"] == "a b'c"
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert env["HOME"] == os.path.expanduser(f"~{sshd.user}")
    assert set(env) == {
        "PATH",
        "HOME",
        "LANG",
        "TEAM_SETTING",
        "PYTHONUNBUFFERED",
        "ONSITE_SESSION",
    }, env


@pytest.fixture(scope="module")
def sshd_without_sftp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd-nosftp"), sftp=False)
    try:
        yield server
    finally:
        server.stop()


def test_without_sftp_inputs_go_through_the_exec_channel(
    tmp_path: Path, sshd_without_sftp: Sshd
) -> None:
    sshd = sshd_without_sftp
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    original = wav.read_bytes()
    spec = hostile_spec(tmp_path, command)
    with runner_for(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        answer = runner.run_item(ItemRequest("s1", {"audio": wav}, {"do": "echo", "n": 4}, 10.0))
        assert answer.output == {"text": "xxxx"}
        assert answer.round_trip_seconds is not None
        attempt = runner.run_item(ItemRequest("s2", {"audio": wav}, {"do": "daemons"}, 2.0))
        assert attempt.outcome == "timeout"
        staged = Path((out / "staged").read_text())
        assert staged.name == "s2-audio.wav"
        assert not staged.exists(), "removed after the item"
    assert wav.read_bytes() == original
    log = spec.log_path.read_text()
    assert f"the SSH server at {sshd.user}@127.0.0.1:{sshd.port} has no SFTP subsystem" in log
    results = probe(sshd.options(workdir=str(tmp_path / "remote")))
    sftp = next(r for r in results if r.name == "sftp")
    assert sftp.ok and "has no SFTP subsystem" in sftp.detail
    assert all(r.ok for r in results), results


def test_pinned_host_key_wins_over_known_hosts(tmp_path: Path, sshd: Sshd) -> None:
    other = keygen(tmp_path / "other", "other")
    wrong = " ".join(Path(f"{other}.pub").read_text().split()[:2])
    marker, out, command = hostile_setup(tmp_path)
    spec = hostile_spec(tmp_path, command)
    entry = f"[127.0.0.1]:{sshd.port}"

    bad_known = tmp_path / "known_bad"
    bad_known.write_text(f"{entry} {wrong}\n")
    with runner_for(sshd, spec, tmp_path / "remote", known_hosts=str(bad_known)) as runner:
        assert runner.start().name == "hostile", "a right pin beats a wrong known_hosts line"

    good_known = tmp_path / "known_good"
    good_known.write_text(f"{entry} {sshd.host_key_line}\n")
    runner = runner_for(
        sshd, spec, tmp_path / "remote", known_hosts=str(good_known), host_key=wrong
    )
    with pytest.raises(StartError, match="does not match the pinned one"):
        runner.start()
    runner.stop()
    results = probe(sshd.options(known_hosts=str(good_known), host_key=wrong))
    assert [(r.name, r.ok) for r in results][-1] == ("host key", False)


def test_unwritable_workdir_fails_the_probe_and_the_start(tmp_path: Path, sshd: Sshd) -> None:
    # As root the permission bits do not stop us: a path under a regular file cannot be made.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    workdir = blocker / "onsite"
    results = probe(sshd.options(workdir=str(workdir)))
    assert [(r.name, r.ok) for r in results][-1] == ("workdir", False)
    assert f"the remote workdir {workdir} is not writable" in results[-1].detail
    marker, out, command = hostile_setup(tmp_path)
    runner = runner_for(sshd, hostile_spec(tmp_path, command), workdir)
    with pytest.raises(StartError, match="cannot prepare the workdir"):
        runner.start()
    runner.stop()


def test_read_only_workdir_fails_the_probe(tmp_path: Path, sshd: Sshd) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    subprocess.run(["mount", "--bind", "-o", "ro", str(ro), str(ro)], check=False)
    try:
        probe_file = ro / "x"
        try:
            probe_file.write_text("x")
        except OSError:
            pass
        else:
            probe_file.unlink()
            pytest.skip("cannot make a read-only directory here (no bind mount, root)")
        results = probe(sshd.options(workdir=str(ro)))
        assert [(r.name, r.ok) for r in results][-1] == ("workdir", False)
        assert "not writable" in results[-1].detail
    finally:
        subprocess.run(["umount", str(ro)], check=False)


def test_world_readable_key_is_a_warning(tmp_path: Path, sshd: Sshd) -> None:
    key = tmp_path / "loose_key"
    key.write_bytes(sshd.user_key.read_bytes())
    os.chmod(key, 0o644)
    results = probe(sshd.options(key=str(key), workdir=str(tmp_path / "remote")))
    warning = results[0]
    assert warning.name == "key file" and warning.ok
    assert warning.detail.startswith("warning:") and f"chmod 600 {key}" in warning.detail
    assert all(r.ok for r in results), "a warning, not a failure"
    marker, out, command = hostile_setup(tmp_path)
    spec = hostile_spec(tmp_path, command)
    with runner_for(sshd, spec, tmp_path / "remote", key=str(key)) as runner:
        runner.start()
    assert "can be read by other users" in spec.log_path.read_text()
    assert stat.S_IMODE(key.stat().st_mode) == 0o644, "the operator's file is left alone"


def test_answers_and_stderr_are_capped(tmp_path: Path, sshd: Sshd) -> None:
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    spec = hostile_spec(tmp_path, command, max_output_bytes=4096, max_log_bytes=64 * 1024)
    with runner_for(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        fine = runner.run_item(ItemRequest("b1", {"audio": wav}, {"do": "echo", "n": 1000}, 10))
        assert fine.outcome == "result"
        big = runner.run_item(ItemRequest("b2", {"audio": wav}, {"do": "echo", "n": 5000}, 10))
        assert big.outcome == "invalid_output"
        assert "max_output_bytes=4096" in big.message
        runner.restart()
        for n in range(4):
            noisy = runner.run_item(
                ItemRequest(f"n{n}", {"audio": wav}, {"do": "noise", "n": 100_000}, 10)
            )
            assert noisy.outcome == "result"
    log = spec.log_path.read_bytes()
    assert len(log) <= 64 * 1024
    assert b"--- onsite log cut:" in log and b"bytes left out ---" in log
    assert log.startswith(b"--- onsite: starting")
    assert b"e" * 1000 in log[-20_000:], "the tail is kept"


def test_link_lost_is_not_called_a_crash(tmp_path: Path) -> None:
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    spec = hostile_spec(tmp_path, command)
    with remote_machine(tmp_path / "machine") as machine:
        assert machine.sshd is not None
        with runner_for(machine.sshd, spec, tmp_path / "remote", link_timeout=2.0) as runner:
            runner.start()

            def cut() -> None:
                assert wait_until(lambda: (out / "system").exists())
                machine.pull_cable()
                time.sleep(5.0)
                machine.plug_cable()

            cutter = threading.Thread(target=cut)
            cutter.start()
            attempt = runner.run_item(ItemRequest("l1", {"audio": wav}, {"do": "daemons"}, 30.0))
            cutter.join()
            assert attempt.link_lost and attempt.message.startswith("link lost: ")
            assert "a new connection to" in attempt.message, "what the venue checked"
            assert "crash" not in attempt.message
            # Seen within the link timeout, not at the item's 30 s hang limit.
            assert attempt.seconds < 15
            info = runner.restart()
            survivors = [p.pid for p in marked(marker)]
            assert survivors == [info.pid], "what the lost link left is killed at the restart"


def test_a_session_killed_on_a_machine_that_answers_is_the_participants(
    tmp_path: Path, sshd: Sshd
) -> None:
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    spec = hostile_spec(tmp_path, command)
    with runner_for(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        port = runner.link_port
        assert port is not None
        sessions = sshd.session_processes(port)

        def cut() -> None:
            assert wait_until(lambda: (out / "system").exists())
            for proc in sessions:
                proc.send_signal(signal.SIGKILL)

        cutter = threading.Thread(target=cut)
        cutter.start()
        attempt = runner.run_item(ItemRequest("l1", {"audio": wav}, {"do": "daemons"}, 30.0))
        cutter.join()
        assert attempt.outcome == "crashed" and not attempt.link_lost
        assert "the participant's failure" in attempt.message
        info = runner.restart()
        survivors = [p.pid for p in marked(marker)]
        assert survivors == [info.pid], "what the killed session left is killed at the restart"


def test_a_system_that_needs_its_profile_sources_it(tmp_path: Path, sshd: Sshd) -> None:
    """As docs/ssh.md shows: the command sources the profile itself, then execs the system."""
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "team.profile").write_text("TEAM_FROM_PROFILE=yes; export TEAM_FROM_PROFILE\n")
    line = ". ./team.profile && exec " + " ".join(command)
    spec = hostile_spec(tmp_path, ["sh", "-c", line])
    with runner_for(sshd, spec, remote) as runner:
        runner.start()
        runner.run_item(ItemRequest("p1", {"audio": wav}, {"do": "daemons"}, 1.5))
    env = json.loads((out / "env.json").read_text())
    assert env["TEAM_FROM_PROFILE"] == "yes"
    assert not [k for k in env if k.startswith("SSH_")]


def carrying(name: str, value: str) -> list[psutil.Process]:
    """Live processes whose environment has name=value."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get(name) == value:
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_a_process_storm_is_killed_whole(tmp_path: Path, sshd: Sshd) -> None:
    """A system that keeps forking (orphans, setsid'd ones) until it is killed: none survive."""
    mark = f"storm-{os.getpid()}-{time.monotonic_ns()}"
    storm = (
        "i=0; while [ $i -lt 3000 ]; do (sleep 1000 &); setsid sleep 1000 & "
        "i=$((i+1)); sleep 0.005; done"
    )
    _, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    line = f"sh -c {shlex.quote(storm)} & exec " + " ".join(command)
    spec = hostile_spec(tmp_path, ["sh", "-c", line], env={"STORM_MARK": mark})
    with runner_for(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        assert wait_until(lambda: len(carrying("STORM_MARK", mark)) > 100, 20.0)
        attempt = runner.run_item(ItemRequest("f1", {"audio": wav}, {"do": "daemons"}, 1.0))
        assert attempt.outcome == "timeout"
        assert carrying("STORM_MARK", mark) == []


def test_sighup_to_the_wrapper_kills_the_system(tmp_path: Path, sshd: Sshd) -> None:
    marker, out, command = hostile_setup(tmp_path)
    spec = hostile_spec(tmp_path, command)
    with runner_for(sshd, spec, tmp_path / "remote") as runner:
        info = runner.start()
        assert info.pid is not None
        wrapper = psutil.Process(info.pid).parent()
        while wrapper.parent().cmdline()[-1:] == ["onsite-wrapper"]:
            wrapper = wrapper.parent()
        assert wrapper.cmdline()[-1] == "onsite-wrapper"
        wrapper.send_signal(signal.SIGHUP)
        assert wait_until(lambda: not marked(marker), 15.0)


def test_a_check_run_leaves_the_systems_of_a_live_run_alone(tmp_path: Path, sshd: Sshd) -> None:
    """Same task and system on the same machine, another run (onsite check's scratch run):
    its start must not kill the live run's system."""
    marker, out, command = hostile_setup(tmp_path)
    live = hostile_spec(tmp_path / "run", command)
    check = hostile_spec(tmp_path / "scratch", command)
    remote = tmp_path / "remote"
    with runner_for(sshd, live, remote) as first:
        live_info = first.start()
        with runner_for(sshd, check, remote) as second:
            second.start()
            assert psutil.pid_exists(live_info.pid or 0)
            assert psutil.Process(live_info.pid or 0).status() != "zombie"
        assert len(marked(marker)) == 1, "the check's system is gone, the live one runs"
    assert not marked(marker)


BUSYBOX = "/usr/bin/busybox"
APPLETS = ("sh", "grep", "cat", "mkfifo", "setsid", "env", "sleep", "rm", "mkdir", "kill", "pwd")


@pytest.mark.skipif(
    not os.path.exists(BUSYBOX), reason="busybox is not installed (apt-get install busybox)"
)
def test_the_wrapper_runs_on_busybox(tmp_path: Path) -> None:
    """Small boards often have only busybox: the wrapper and the cleanup work with its sh and
    applets (run here directly, as the board's sshd would run them)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for applet in APPLETS:
        (bindir / applet).symlink_to(BUSYBOX)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    workdir, slug, token = str(tmp_path / "w"), "asr.bb.0", "b" * 32
    sysdir = system_dir(workdir, slug)

    def sleepers() -> list[psutil.Process]:
        return [p for p in carrying("ONSITE_SESSION", token) if p.name() == "sleep"]

    def busybox_sh(command: str) -> list[str]:
        argv = shlex.split(command)
        assert argv[:2] == ["sh", "-c"]
        return [str(bindir / "sh"), *argv[1:]]

    prep = subprocess.run(
        busybox_sh(prepare_command(workdir, slug, token)), env=env, capture_output=True
    )
    assert prep.stdout.decode().strip() == f"onsite-workdir {workdir}", prep
    mark = f"bb-{time.monotonic_ns()}"
    system = f"setsid sleep 1000 & cat; echo done; exit 5 # {mark}"
    wrapped = wrapper_command(workdir, sysdir, token, {}, ["sh", "-c", system, mark], 1.0)
    proc = subprocess.Popen(
        busybox_sh(wrapped), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    sid = int(proc.stdout.readline().split()[1])
    assert wait_until(lambda: len(sleepers()) == 1)
    proc.stdin.write(b"hi\n")
    proc.stdin.close()
    assert proc.stdout.read() == b"hi\ndone\n"
    assert proc.wait(15) == 5
    assert carrying("ONSITE_SESSION", token) == [], "the setsid'd sleep is gone"
    assert os.listdir(sysdir) == [], "state files and the stage directory are removed"

    wrapped = wrapper_command(
        workdir, sysdir, token, {}, ["sh", "-c", "setsid sleep 1000 & sleep 1000"], 60
    )
    proc = subprocess.Popen(
        busybox_sh(wrapped), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    sid = int(proc.stdout.readline().split()[1])
    assert wait_until(lambda: len(sleepers()) == 2)
    subprocess.run(busybox_sh(kill_command(sysdir, token, sid)), env=env, check=True)
    assert proc.wait(15) == -signal.SIGKILL
    assert carrying("ONSITE_SESSION", token) == []
    assert not [n for n in os.listdir(sysdir) if n.startswith(token)]

    # The stop's clean-up: this start (by its token and session) and the directory.
    proc = subprocess.Popen(
        busybox_sh(wrapped), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    sid = int(proc.stdout.readline().split()[1])
    assert wait_until(lambda: len(sleepers()) == 2)
    done = subprocess.run(busybox_sh(cleanup_command(sysdir, token, sid)), env=env)
    assert done.returncode == 0
    assert proc.wait(15) == -signal.SIGKILL
    assert carrying("ONSITE_SESSION", token) == []
    assert not os.path.exists(sysdir)
