"""The SSH runner against a real OpenSSH server on 127.0.0.1 running the scripted fake system."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psutil
import pytest

from runners import (
    DeviceUnreachable,
    ItemAttempt,
    ItemRequest,
    LocalServeRunner,
    Sandbox,
    SshServeRunner,
    StartError,
    SystemSpec,
    open_runner,
    probe,
)
from tests.helpers import FAKE_SERVE, make_testset
from tests.netns import remote_machine
from tests.sshd import Sshd, free_port, keygen

pytestmark = pytest.mark.sshd


def spec_for(root: Path, env: dict[str, str], name: str = "fake") -> SystemSpec:
    return SystemSpec(
        name=name,
        task="asr",
        kind="asr",
        mode="serve",
        command=tuple(FAKE_SERVE),
        workdir=root,
        log_path=root / "logs" / f"{name}.log",
        stage_dir=root / "stage" / name,
        env=env,
        setup_seconds=20.0,
        # The local twin is unsealed: the fake logs what it received into the workdir.
        sandbox=Sandbox(enabled=False),
    )


def plan(behaviours: dict[int, dict[str, Any]], **extra: str) -> dict[str, str]:
    return {"FAKE_PLAN": json.dumps({str(k): v for k, v in behaviours.items()}), **extra}


def request(path: Path, anon_id: str, hang: float = 10.0) -> ItemRequest:
    return ItemRequest(anon_id, {"audio": path}, {"sample_rate": 16000}, hang)


def ssh_runner(sshd: Sshd, spec: SystemSpec, remote: Path, **options: Any) -> SshServeRunner:
    runner = SshServeRunner(spec, sshd.options(workdir=str(remote), **options))
    runner.reconnect_seconds = 5.0
    return runner


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def wait_gone(pids: list[int], seconds: float = 5.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while True:
        left = [pid for pid in pids if alive(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def summary(attempts: list[ItemAttempt]) -> list[tuple[Any, ...]]:
    return [(a.outcome, a.output, a.message, a.system_lost) for a in attempts]


def test_same_answers_as_the_local_runner(tmp_path: Path, sshd: Sshd) -> None:
    items = make_testset(
        tmp_path / "set", [("a", 1600, ""), ("b", 3200, ""), ("c", 4800, ""), ("d", 6400, "")]
    )
    behaviours = {
        1600: {"text": "hello world"},
        3200: {"do": "error"},
        4800: {"do": "bad_output"},
        6400: {"do": "garbage"},
    }
    wavs = [items / f"{u}.wav" for u in "abcd"]
    results: dict[str, list[ItemAttempt]] = {}
    for kind in ("local", "ssh"):
        root = tmp_path / kind
        log = root / "messages.jsonl"
        root.mkdir()
        spec = spec_for(root, plan(behaviours, FAKE_LOG=str(log)))
        if kind == "local":
            # Unsealed: the fake writes what it received to a file the sandbox would hide.
            spec = dataclasses.replace(spec, sandbox=Sandbox(enabled=False))
        remote = root / "remote"
        runner = (
            LocalServeRunner(spec)
            if kind == "local"
            else open_runner("ssh", sshd.options(workdir=str(remote), transport="ssh"), spec)
        )
        with runner:
            info = runner.start()
            assert (info.name, info.version) == ("fake", "1.0")
            assert info.pid is not None and info.setup_seconds > 0
            results[kind] = [
                runner.run_item(request(w, f"id{i}x{kind}")) for i, w in enumerate(wavs)
            ]
        messages = [json.loads(line) for line in log.read_text().splitlines()]
        ops = [m["op"] for m in messages if "op" in m]
        assert ops == ["hello", "item", "item", "item", "item"]
        assert messages[0] == {"op": "hello", "protocol": 1, "task": "asr", "kind": "asr"}
        for message in messages:
            if message.get("op") == "item":
                audio = Path(message["input"]["audio"])
                assert audio.is_absolute() and not audio.exists(), "staged inputs are removed"
                assert message["input"]["sample_rate"] == 16000
                if kind == "ssh":
                    assert audio.parent.parent.parent == remote / ".onsite"
                    assert audio.parent.parent.name.startswith("asr.fake.")
                    assert audio.name == f"{message['id']}-audio.wav"
        if kind == "ssh":
            assert list(remote.iterdir()) == [], "nothing staged is left in the remote workdir"

    local, remote_attempts = results["local"], results["ssh"]
    assert summary(remote_attempts) == summary(local)
    # bad_output is a well-formed result; the controller, not the runner, checks its fields.
    assert [a.outcome for a in remote_attempts] == ["result", "error", "result", "invalid_output"]
    assert remote_attempts[0].output == {"text": "hello world"}
    for attempt in remote_attempts:
        assert attempt.round_trip_seconds is not None and attempt.round_trip_seconds > 0
        assert attempt.stage_seconds > 0
        assert attempt.seconds >= 0


def test_crash_is_reported_with_the_remote_stderr(tmp_path: Path, sshd: Sshd) -> None:
    items = make_testset(tmp_path / "set", [("a", 1600, ""), ("b", 3200, "")])
    spec = spec_for(tmp_path, plan({1600: {"do": "crash"}, 3200: {"text": "fine"}}))
    with ssh_runner(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        crashed = runner.run_item(request(items / "a.wav", "c1"))
        assert crashed.outcome == "crashed" and crashed.system_lost
        assert "exited with code 7" in crashed.message
        assert "crashing on purpose" in crashed.message
        runner.restart()
        after = runner.run_item(request(items / "b.wav", "c2"))
        assert (after.outcome, after.output) == ("result", {"text": "fine"})
    assert "crashing on purpose" in spec.log_path.read_text()


def test_remote_resources_are_measured(tmp_path: Path, sshd: Sshd) -> None:
    items = make_testset(tmp_path / "set", [("a", 1600, "")])
    spec = spec_for(tmp_path, plan({}))
    with ssh_runner(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        time.sleep(0.3)
        attempt = runner.run_item(request(items / "a.wav", "r1"))
    assert attempt.outcome == "result"
    assert attempt.cpu_seconds is not None and attempt.cpu_seconds >= 0
    assert attempt.peak_rss_bytes is not None and attempt.peak_rss_bytes > 1_000_000


def test_failed_start_says_why(tmp_path: Path, sshd: Sshd) -> None:
    spec = spec_for(tmp_path, {"FAKE_START": "crash"})
    runner = ssh_runner(sshd, spec, tmp_path / "remote")
    with pytest.raises(StartError, match="exited with code 3 before ready.*failing at start-up"):
        runner.start()
    runner.stop()


def fingerprint_of(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True)
    return out.stdout.split()[1]


def test_wrong_pinned_host_key_is_refused(tmp_path: Path, sshd: Sshd) -> None:
    other = keygen(tmp_path / "other", "other")
    kind, blob = Path(f"{other}.pub").read_text().split()[:2]
    spec = spec_for(tmp_path, {})
    runner = ssh_runner(sshd, spec, tmp_path / "remote", host_key=f"{kind} {blob}")
    with pytest.raises(StartError) as err:
        runner.start()
    text = str(err.value)
    assert f"127.0.0.1:{sshd.port}" in text
    assert fingerprint_of(sshd.root / "host_ed25519.pub") in text, "names the key offered"
    assert fingerprint_of(Path(f"{other}.pub")) in text, "names the key expected"
    assert f'host_key = "{sshd.host_key_line}"' in text, "says how to pin the new key"


def test_unknown_host_key_is_refused_without_trust_on_first_use(tmp_path: Path, sshd: Sshd) -> None:
    spec = spec_for(tmp_path, {})
    runner = ssh_runner(sshd, spec, tmp_path / "remote", host_key=None)
    with pytest.raises(StartError) as err:
        runner.start()
    text = str(err.value)
    assert f"host key of device 127.0.0.1:{sshd.port} is not known" in text
    assert fingerprint_of(sshd.root / "host_ed25519.pub") in text
    assert "host_key = " in text


def test_trust_on_first_use_writes_known_hosts(tmp_path: Path, sshd: Sshd) -> None:
    known = tmp_path / "known_hosts"
    spec = spec_for(tmp_path, {})
    first = ssh_runner(
        sshd,
        spec,
        tmp_path / "remote",
        host_key=None,
        trust_on_first_use=True,
        known_hosts=str(known),
    )
    with first:
        first.start()
    assert known.read_text() == f"[127.0.0.1]:{sshd.port} {sshd.host_key_line}\n"
    assert "trusted the host key" in spec.log_path.read_text()
    # Known now: a later connection needs neither a pin nor trust on first use.
    second = ssh_runner(sshd, spec, tmp_path / "remote", host_key=None, known_hosts=str(known))
    with second:
        second.start()
    assert known.read_text().count("\n") == 1


def test_wrong_user_key_fails_authentication(tmp_path: Path, sshd: Sshd) -> None:
    stranger = keygen(tmp_path / "stranger", "stranger")
    spec = spec_for(tmp_path, {})
    runner = ssh_runner(sshd, spec, tmp_path / "remote", key=str(stranger))
    with pytest.raises(StartError) as err:
        runner.start()
    text = str(err.value)
    assert f"authentication failed for {sshd.user}@127.0.0.1:{sshd.port}" in text
    assert str(stranger) in text


def test_hung_remote_system_is_killed_with_its_children(tmp_path: Path, sshd: Sshd) -> None:
    items = make_testset(tmp_path / "set", [("a", 1600, ""), ("b", 3200, "")])
    pids = tmp_path / "pids"
    env = plan({1600: {"do": "hang"}, 3200: {"text": "after"}}, FAKE_CHILD_PID=str(pids))
    spec = spec_for(tmp_path, env)
    with ssh_runner(sshd, spec, tmp_path / "remote") as runner:
        runner.start()
        attempt = runner.run_item(request(items / "a.wav", "h1", hang=1.5))
        assert attempt.outcome == "timeout" and attempt.system_lost
        assert 1.5 <= attempt.seconds < 5.0
        assert "hang_seconds=1.5" in attempt.message
        tree = [int(p) for p in pids.read_text().split()]
        assert wait_gone(tree) == [], "a process of the hung remote system survived"
        runner.restart()
        after = runner.run_item(request(items / "b.wav", "h2"))
        assert after.output == {"text": "after"}


def test_connection_lost_mid_item_then_reconnect(tmp_path: Path) -> None:
    items = make_testset(tmp_path / "set", [("a", 1600, ""), ("b", 3200, "")])
    spec = spec_for(tmp_path, plan({1600: {"delay": 4}, 3200: {"text": "after"}}))
    with remote_machine(tmp_path / "machine") as machine:
        assert machine.sshd is not None
        with ssh_runner(machine.sshd, spec, tmp_path / "remote", link_timeout=1.0) as runner:
            runner.start()
            port, old_pid = runner.link_port, runner.pid
            assert port is not None and old_pid is not None

            def cut() -> None:
                time.sleep(0.7)
                machine.pull_cable()
                time.sleep(4.5)
                machine.plug_cable()

            cutter = threading.Thread(target=cut)
            cutter.start()
            attempt = runner.run_item(request(items / "a.wav", "l1"))
            assert attempt.outcome == "crashed" and attempt.system_lost and attempt.link_lost, (
                attempt.message
            )
            assert attempt.message.startswith("link lost: ")
            assert attempt.seconds < 3.5, "the loss is noticed within the link timeout"
            cutter.join()
            info = runner.restart()
            assert info.name == "fake"
            assert runner.link_port != port
            assert wait_gone([old_pid]) == [], "the system left behind by the lost link is killed"
            after = runner.run_item(request(items / "b.wav", "l2"))
            assert (after.outcome, after.output) == ("result", {"text": "after"})


def test_unreachable_machine_is_tried_once_then_reported(tmp_path: Path, sshd: Sshd) -> None:
    # A machine that never answered is tried once per start (the controller waits for it
    # with its own backoff), however long reconnects of a known machine may retry.
    spec = spec_for(tmp_path, {})
    runner = ssh_runner(sshd, spec, tmp_path / "remote", port=free_port())
    runner.reconnect_seconds = 30.0
    t0 = time.monotonic()
    with pytest.raises(DeviceUnreachable, match=r"cannot reach 127\.0\.0\.1:\d+: .*ssh -p"):
        runner.start()
    assert time.monotonic() - t0 < 5.0
    # A key or login problem is not "unreachable": the machine answered.
    bad = SshServeRunner(spec, sshd.options(workdir=str(tmp_path / "remote"), user="nobody-here"))
    with pytest.raises(StartError) as refused:
        bad.start()
    assert not isinstance(refused.value, DeviceUnreachable)


def test_eight_runners_at_once(tmp_path: Path, sshd: Sshd) -> None:
    frames = [1600 * (i + 1) for i in range(5)]
    items = make_testset(tmp_path / "set", [(f"u{i}", f, "") for i, f in enumerate(frames)])
    env = plan({f: {"text": f"t{f}", "delay": 0.05} for f in frames})
    outcomes: dict[int, list[tuple[str, Any]]] = {}
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            spec = spec_for(tmp_path / f"r{n}", env, name=f"sys{n}")
            with ssh_runner(sshd, spec, tmp_path / "remote") as runner:
                runner.start()
                outcomes[n] = [
                    (a.outcome, a.output)
                    for a in (
                        runner.run_item(request(items / f"u{i}.wav", f"n{n}i{i}")) for i in range(5)
                    )
                ]
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors
    expected = [("result", {"text": f"t{f}"}) for f in frames]
    assert outcomes == {n: expected for n in range(8)}
    assert list((tmp_path / "remote").iterdir()) == []


def test_probe_reports_each_step(tmp_path: Path, sshd: Sshd) -> None:
    results = probe(sshd.options(workdir=str(tmp_path / "remote")))
    assert [r.name for r in results] == [
        "reachable",
        "host key",
        "authentication",
        "remote command",
        "sftp",
        "workdir",
        "free disk",
    ]
    assert all(r.ok for r in results[:6]), results
    assert results[4].detail == "available"
    assert "GB free" in results[6].detail

    stranger = keygen(tmp_path / "stranger", "stranger")
    failed = probe(sshd.options(key=str(stranger)))
    assert [(r.name, r.ok) for r in failed][-1] == ("authentication", False)

    closed = probe({"host": "127.0.0.1", "port": 1, "user": "x", "connect_timeout": 2})
    assert [(r.name, r.ok) for r in closed] == [("reachable", False)]


def test_setup_files_are_staged_remotely_for_hello(tmp_path: Path, sshd: Sshd) -> None:
    gallery = tmp_path / "gallery"
    gallery.mkdir()
    (gallery / "id1.png").write_bytes(b"\x89PNG one")
    (gallery / "id2.png").write_bytes(b"\x89PNG two")
    log = tmp_path / "log.jsonl"
    spec = replace(
        spec_for(tmp_path, {"FAKE_LOG": str(log)}),
        setup_files={"id1": gallery / "id1.png", "id2": gallery / "id2.png"},
    )
    remote = tmp_path / "remote"
    with ssh_runner(sshd, spec, remote) as runner:
        runner.start()
    logged = [json.loads(line) for line in log.read_text().splitlines()]
    assert {"files_exist": {"id1": True, "id2": True}} in logged
    hello = next(m for m in logged if m.get("op") == "hello")
    assert all(path.startswith(str(remote)) for path in hello["files"].values())
    assert not list(remote.glob("setup-*")), "setup files are removed when the system stops"
