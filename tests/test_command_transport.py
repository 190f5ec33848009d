"""The `command` transport: a device reached through any command that gives a shell on it,
made of the same remote parts as the SSH transport (docs/command.md).

The command here is the OpenSSH client (`ssh -T`) to the real sshd on 127.0.0.1, so each
system runs the same way as over the paramiko transport and the outputs are compared; and
plain shells on this machine (`dash`, busybox `sh`, which read their input ahead) where only
the shell matters.
"""

from __future__ import annotations

import json
import os
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
import soundfile

from harness import SiteError, load_site, read_journal
from runners import (
    DeviceUnreachable,
    ItemAttempt,
    ItemRequest,
    Sandbox,
    SshServeRunner,
    StartError,
    SystemSpec,
    open_runner,
    probe_device,
)
from runners.command import CommandHost, CommandServeRunner
from runners.command_device import CommandDevice
from tests.helpers import FAKE_SERVE, REPO, make_testset, onsite, read_outputs, run_site, toml_value
from tests.netns import remote_machine
from tests.sshd import Sshd, free_port, start_sshd
from tests.test_ssh_sealed import hostile_setup, hostile_spec, marked, wait_until
from tests.test_ssh_tts import WRITER
from tests.test_tts_task import ESPEAK, tts_testset

pytestmark = pytest.mark.sshd

DEMO_SET = REPO / "site_config" / "data" / "demo-asr"
SPHINX_FAST = [sys.executable, "-m", "examples.systems.sphinx_asr", "--fast"]
FAKER = [sys.executable, str(REPO / "tests" / "systems" / "venue_faker.py")]
BUSYBOX = "/usr/bin/busybox"


def openssh(sshd: Sshd, root: Path) -> list[str]:
    """The OpenSSH client's command line that gives a shell on the sshd's machine."""
    root.mkdir(parents=True, exist_ok=True)
    known = root / "known_hosts"
    known.write_text(f"[{sshd.host}]:{sshd.port} {sshd.host_key_line}\n")
    return [
        "ssh",
        "-T",
        "-F",
        "/dev/null",
        "-p",
        str(sshd.port),
        "-i",
        str(sshd.user_key),
        "-o",
        f"UserKnownHostsFile={known}",
        "-o",
        "StrictHostKeyChecking=yes",
        "-o",
        "BatchMode=yes",
        "-o",
        "LogLevel=ERROR",
        f"{sshd.user}@{sshd.host}",
    ]


def command_device(command: list[str], remote: Path, **extra: Any) -> dict[str, Any]:
    return {"transport": "command", "command": command, "workdir": str(remote), **extra}


def spec_for(root: Path, env: dict[str, str], name: str = "fake", **extra: Any) -> SystemSpec:
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
        setup_seconds=30.0,
        sandbox=Sandbox(enabled=False),
        **extra,
    )


def plan(behaviours: dict[int, dict[str, Any]], **extra: str) -> dict[str, str]:
    return {"FAKE_PLAN": json.dumps({str(k): v for k, v in behaviours.items()}), **extra}


def request(path: Path, anon_id: str, hang: float = 20.0) -> ItemRequest:
    return ItemRequest(anon_id, {"audio": path}, {"sample_rate": 16000}, hang)


def command_runner(command: list[str], spec: SystemSpec, remote: Path, **extra: Any) -> Any:
    runner = open_runner("command", command_device(command, remote, **extra), spec)
    runner.reconnect_seconds = 5.0
    return runner


def summary(attempts: list[ItemAttempt]) -> list[tuple[Any, ...]]:
    return [(a.outcome, a.output, a.message, a.system_lost) for a in attempts]


def write_site(
    path: Path,
    devices: dict[str, dict[str, Any]],
    tasks: dict[str, dict[str, Any]],
    systems: dict[str, dict[str, Any]],
) -> Path:
    lines = ["[site]", 'name = "cmd"', 'runs = "runs"', ""]
    for table, rows in (("devices", devices), ("tasks", tasks), ("systems", systems)):
        for name, cfg in rows.items():
            if table == "systems":
                cfg = {"tasks": list(tasks), **cfg}
            lines.append(f"[{table}.{name}]")
            lines.extend(f"{k} = {toml_value(v)}" for k, v in cfg.items())
            lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


# -- the same systems, the same outputs ----------------------------------------------------


def test_same_answers_as_the_ssh_runner(tmp_path: Path, sshd: Sshd) -> None:
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
    for kind in ("ssh", "command"):
        root = tmp_path / kind
        log = root / "messages.jsonl"
        root.mkdir()
        spec = spec_for(root, plan(behaviours, FAKE_LOG=str(log)))
        remote = root / "remote"
        if kind == "ssh":
            runner: Any = SshServeRunner(spec, sshd.options(workdir=str(remote)))
        else:
            runner = command_runner(openssh(sshd, root), spec, remote)
        with runner:
            info = runner.start()
            assert (info.name, info.version) == ("fake", "1.0")
            assert info.pid is not None and info.setup_seconds > 0
            results[kind] = [runner.run_item(request(w, f"id{i}x")) for i, w in enumerate(wavs)]
        messages = [json.loads(line) for line in log.read_text().splitlines()]
        assert [m["op"] for m in messages if "op" in m] == ["hello", "item", "item", "item", "item"]
        for message in messages:
            if message.get("op") == "item":
                audio = Path(message["input"]["audio"])
                assert not audio.exists(), "staged inputs are removed"
                assert audio.parent.parent.parent == remote / ".onsite"
                assert audio.name == f"{message['id']}-audio.wav"
        assert list(remote.iterdir()) == [], "nothing is left in the remote workdir"
    assert summary(results["command"]) == summary(results["ssh"])
    assert [a.outcome for a in results["command"]] == [
        "result",
        "error",
        "result",
        "invalid_output",
    ]
    for attempt in results["command"]:
        assert attempt.round_trip_seconds is not None and attempt.round_trip_seconds > 0
        assert attempt.stage_seconds > 0


def test_demo_asr_over_both_transports_gives_the_same_outputs(tmp_path: Path, sshd: Sshd) -> None:
    env = {"PYTHONPATH": str(REPO)}
    site = write_site(
        tmp_path / "site.toml",
        {
            "local": {"transport": "local"},
            "paramiko": sshd.options(transport="ssh", workdir=str(tmp_path / "remote-ssh")),
            "board": command_device(openssh(sshd, tmp_path), tmp_path / "remote-cmd"),
        },
        {
            "asr": {
                "kind": "asr",
                "testset": str(DEMO_SET),
                "budget": {"realtime_factor": 20.0, "hang_seconds": 60},
            }
        },
        {
            "here": {"device": "local", "command": SPHINX_FAST, "workdir": str(REPO)},
            "there": {"device": "paramiko", "command": SPHINX_FAST, "env": env},
            "thither": {"device": "board", "command": SPHINX_FAST, "env": env},
        },
    )
    run_dir, results = run_site(site, limit=3)
    assert [r.failed for r in results] == [None, None, None]
    rows = {
        system: {r["id"]: r for r in read_outputs(run_dir, "asr", system)}
        for system in ("here", "there", "thither")
    }
    assert list(rows["thither"]) == ["s01_clean", "s01_snr15", "s01_snr5"]
    for item, row in rows["thither"].items():
        assert row["verdict"] == "ok"
        assert row["output"] == rows["there"][item]["output"] == rows["here"][item]["output"]
        assert row["round_trip_seconds"] is not None
    assert not list((tmp_path / "remote-cmd").rglob("*.flac")), "staged inputs left behind"


def test_a_hang_is_killed_with_its_children_and_restarted(tmp_path: Path, sshd: Sshd) -> None:
    items = make_testset(tmp_path / "set", [("a", 1600, ""), ("b", 3200, "")])
    pids = tmp_path / "pids"
    env = plan({1600: {"do": "hang"}, 3200: {"text": "after"}}, FAKE_CHILD_PID=str(pids))
    spec = spec_for(tmp_path, env)
    with command_runner(openssh(sshd, tmp_path), spec, tmp_path / "remote") as runner:
        runner.start()
        attempt = runner.run_item(request(items / "a.wav", "h1", hang=1.5))
        assert attempt.outcome == "timeout" and attempt.system_lost
        assert "hang_seconds=1.5" in attempt.message
        tree = [int(p) for p in pids.read_text().split()]
        assert wait_until(lambda: not [p for p in tree if alive(p)], 5.0), "a process survived"
        runner.restart()
        after = runner.run_item(request(items / "b.wav", "h2"))
        assert (after.outcome, after.output) == ("result", {"text": "after"})


def test_a_crash_is_reported_with_its_stderr_and_restarted(tmp_path: Path, sshd: Sshd) -> None:
    items = make_testset(tmp_path / "set", [("a", 1600, ""), ("b", 3200, "")])
    spec = spec_for(tmp_path, plan({1600: {"do": "crash"}, 3200: {"text": "fine"}}))
    with command_runner(openssh(sshd, tmp_path), spec, tmp_path / "remote") as runner:
        runner.start()
        crashed = runner.run_item(request(items / "a.wav", "c1"))
        assert crashed.outcome == "crashed" and crashed.system_lost and not crashed.link_lost
        assert "exited with code 7" in crashed.message
        assert "crashing on purpose" in crashed.message
        runner.restart()
        after = runner.run_item(request(items / "b.wav", "c2"))
        assert (after.outcome, after.output) == ("result", {"text": "fine"})
    assert "crashing on purpose" in spec.log_path.read_text()


def test_a_failed_start_says_why(tmp_path: Path, sshd: Sshd) -> None:
    spec = spec_for(tmp_path, {"FAKE_START": "crash"})
    runner = command_runner(openssh(sshd, tmp_path), spec, tmp_path / "remote")
    with pytest.raises(StartError, match="exited with code 3 before ready.*failing at start-up"):
        runner.start()
    runner.stop()


# -- files the system writes ---------------------------------------------------------------


def tts_site(tmp_path: Path, sshd: Sshd, systems: dict[str, tuple[str, list[str]]]) -> Path:
    """A tts task (three sentences); systems as name -> (device, command)."""
    env = {"PYTHONPATH": str(REPO)}
    return write_site(
        tmp_path / "site.toml",
        {
            "paramiko": sshd.options(transport="ssh", workdir=str(tmp_path / "remote-ssh")),
            "board": command_device(openssh(sshd, tmp_path), tmp_path / "remote-cmd"),
        },
        {
            "tts": {
                "kind": "tts",
                "sample_rates": [16000],
                "testset": str(tts_testset(tmp_path / "set")),
                "budget": {"chars_per_second": 2.0, "hang_seconds": 30.0},
            }
        },
        {
            name: {"device": device, "tasks": ["tts"], "command": command, "env": env}
            for name, (device, command) in systems.items()
        },
    )


def test_tts_audio_comes_back_as_over_paramiko(tmp_path: Path, sshd: Sshd) -> None:
    site = tts_site(tmp_path, sshd, {"there": ("paramiko", ESPEAK), "thither": ("board", ESPEAK)})
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None, None]
    there = {r["id"]: r for r in read_outputs(run_dir, "tts", "there")}
    thither = {r["id"]: r for r in read_outputs(run_dir, "tts", "thither")}
    assert list(thither) == list(there) == ["s1", "s2", "s3"]
    for item, row in thither.items():
        assert row["verdict"] == "ok", row
        ours, theirs = run_dir / row["output"]["audio"], run_dir / there[item]["output"]["audio"]
        info = soundfile.info(str(ours))
        assert (info.samplerate, info.channels) == (16000, 1)
        # The same sentence spoken the same way: as long over both transports.
        assert info.frames == soundfile.info(str(theirs)).frames
        assert row["output"]["audio_seconds"] == there[item]["output"]["audio_seconds"]
    done = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed"]
    assert all(r["fetch_seconds"] is not None for r in done)
    assert not [p for p in (tmp_path / "remote-cmd").rglob("*") if p.is_file()]
    assert not list((run_dir / "stage").rglob("*.wav"))


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("symlink", "is a symbolic link"),
        ("fifo", "is not a regular file but a FIFO"),
        ("dir", "is not a regular file but a directory"),
        ("big", "is larger than max_output_file_bytes"),
    ],
)
def test_a_hostile_output_file_is_invalid_output(
    tmp_path: Path, sshd: Sshd, mode: str, reason: str
) -> None:
    """A link to a file of the machine's, a FIFO (which would block a reader), a directory,
    a file past the ceiling: invalid_output, nothing copied, and the system lives on."""
    secret = tmp_path / "secret.wav"
    soundfile.write(str(secret), [0.0] * 1600, 16000)
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    told = tmp_path / "told.txt"
    argument = "5000" if mode == "big" else str(secret)
    spec = SystemSpec(
        name="writer",
        task="tts",
        kind="tts",
        mode="serve",
        command=(sys.executable, str(script), mode, argument, str(told)),
        workdir=tmp_path,
        log_path=tmp_path / "logs" / "writer.log",
        stage_dir=tmp_path / "stage",
        setup_seconds=30.0,
        max_output_file_bytes=4096,
    )
    fields = {"text": "x", "sample_rate": 16000}
    with command_runner(openssh(sshd, tmp_path), spec, tmp_path / "remote") as runner:
        runner.start()
        for n in range(2):
            attempt = runner.run_item(
                ItemRequest(f"o{n}", {}, fields, 20.0, outputs={"audio_out": ".wav"})
            )
            assert attempt.outcome == "invalid_output", attempt.message
            assert reason in attempt.message
            assert attempt.output_files == {} and not attempt.system_lost
            assert not list((spec.stage_dir / "fetched").glob("*"))
    assert secret.exists()
    assert not [p for p in (tmp_path / "remote").rglob("*") if p.is_file() or p.is_symlink()]


# -- the controller dies -------------------------------------------------------------------

# Drives a command runner in its own process, as `onsite run` would, so that the test can
# kill -9 it.
DRIVER = textwrap.dedent(
    """
    import json, sys
    from pathlib import Path
    from runners import ItemRequest, SystemSpec, open_runner
    conf = json.loads(sys.argv[1])
    root = Path(conf["root"])
    spec = SystemSpec(
        name="hostile", task="asr", kind="asr", mode="serve", command=tuple(conf["command"]),
        workdir=root, log_path=root / "logs" / "hostile.log", stage_dir=root / "stage",
        setup_seconds=30.0,
    )
    runner = open_runner("command", conf["device"], spec)
    info = runner.start()
    print(json.dumps({"pid": info.pid}), flush=True)
    runner.run_item(ItemRequest("d1", {"audio": Path(conf["wav"])}, {"do": "daemons"}, 1000.0))
    """
)


def test_kill9_of_the_controller_leaves_nothing_after_the_next_start(
    tmp_path: Path, sshd: Sshd
) -> None:
    """The controller dies with its links frozen (sshd never sees its runs end): its own
    runs of the command die with it, and the next start kills every process of the old
    start on the machine and removes its staged input before sending anything."""
    marker, out, command = hostile_setup(tmp_path)
    wav = make_testset(tmp_path / "set", [("a", 1600, "")]) / "a.wav"
    ssh = openssh(sshd, tmp_path)
    device = command_device(ssh, tmp_path / "remote")
    conf = {"command": command, "root": str(tmp_path), "device": device, "wav": str(wav)}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER, json.dumps(conf)],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=str(REPO),
    )
    frozen: list[psutil.Process] = []
    try:
        assert driver.stdout is not None
        started = json.loads(driver.stdout.readline())
        assert wait_until(lambda: (out / "system").exists() and len(marked(marker)) == 3)
        staged = Path((out / "staged").read_text())
        clients = [p for p in psutil.Process(driver.pid).children(recursive=True)]
        ports = [
            c.laddr.port
            for p in clients
            for c in p.net_connections(kind="tcp")
            if c.raddr and c.raddr.port == sshd.port
        ]
        frozen = [proc for port in ports for proc in sshd.session_processes(port)]
        assert frozen
        for proc in frozen:
            proc.suspend()
        driver.kill()
        driver.wait()
        # The controller's own runs of the command die with it.
        assert wait_until(lambda: not [p for p in clients if alive(p.pid)], 5.0)
        time.sleep(3.0)  # past the wrapper's grace: nothing may have been cleaned yet
        old = marked(marker)
        assert len(old) == 3, "the scenario: the old system and its daemons still run"
        assert staged.exists()

        spec = hostile_spec(tmp_path, command)
        with command_runner(ssh, spec, tmp_path / "remote") as runner:
            info = runner.start()
            assert [p.pid for p in marked(marker)] == [info.pid]
            assert not alive(started["pid"])
            assert not staged.exists()
            answer = runner.run_item(
                ItemRequest("r1", {"audio": wav}, {"do": "echo", "n": 3}, 20.0)
            )
            assert answer.output == {"text": "xxx"}
    finally:
        for proc in frozen:
            try:
                proc.kill()
            except psutil.Error:
                pass
    assert not (tmp_path / "remote" / ".onsite").exists()


# -- whose failure a lost link is ----------------------------------------------------------


def test_killing_its_own_session_is_the_participants_crash(tmp_path: Path, sshd: Sshd) -> None:
    """A system that overruns, caches its answer and kills the sshd session its command runs
    in (so that the controller sees the command end) gets a crash, never a second sending:
    a new run of the command got a shell at once."""
    testset = make_testset(tmp_path / "set", [(f"u{n}", 1600 + n, "x") for n in range(3)])
    env = {"FAKER_MODE": "kill-session", "FAKER_WORK": "2.0", "FAKER_CACHE": str(tmp_path / "c")}
    site = write_site(
        tmp_path / "site.toml",
        {"board": command_device(openssh(sshd, tmp_path), tmp_path / "remote")},
        {
            "asr": {
                "kind": "asr",
                "testset": str(testset),
                "budget": {"seconds": 1.0, "hang_seconds": 60.0},
            }
        },
        {"faker": {"device": "board", "tasks": ["asr"], "command": FAKER, "env": env}},
    )
    run_dir, results = run_site(site)
    rows = read_outputs(run_dir, "asr", "faker")
    assert len(rows) == 3
    for row in rows:
        assert row["verdict"] == "crashed", row
        assert row["attempt"] == 1, "the item was sent again: the cheater got a redo"
        assert "the participant's failure" in row["message"], row["message"]
        assert "the device ran a new command within" in row["message"]
    assert "link_lost" not in [r["event"] for r in read_journal(run_dir / "journal.jsonl")]


# Kills the resident shells that answer the keep-alive (every process of its machine
# running the sampler's script) while it works on an item: once ("once", then it answers
# after 3 s), or again and again for 30 s ("always"), to make its link look dead.
KEEPALIVE_KILLER = textwrap.dedent(
    """
    import json, os, signal, sys, time

    def kill_samplers():
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    if b"onsite-meter" in fh.read():
                        os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass

    for line in sys.stdin:
        m = json.loads(line)
        if m["op"] == "hello":
            print(json.dumps({"op": "ready", "name": "silencer"}), flush=True)
        elif m["op"] == "item":
            until = time.monotonic() + (30 if sys.argv[1] == "always" else 3)
            kill_samplers()
            while time.monotonic() < until:
                if sys.argv[1] == "always":
                    kill_samplers()
                time.sleep(0.05)
            answer = {"op": "result", "id": m["id"], "output": {"text": "late"}}
            print(json.dumps(answer), flush=True)
    """
)


@pytest.mark.parametrize("how", ["once", "always"])
def test_silencing_the_keep_alive_gains_nothing(tmp_path: Path, sshd: Sshd, how: str) -> None:
    """The keep-alive's shell killed once (a participant's clean-up, say) is started again:
    the item is answered as usual. Killed again and again to make the link look dead (and
    get the item sent again), the stream is ended as a lost session; but the device gives a
    new run of the command a shell at once: the participant's crash, not a lost link."""
    script = tmp_path / "silencer.py"
    script.write_text(KEEPALIVE_KILLER)
    spec = SystemSpec(
        name="silencer",
        task="asr",
        kind="asr",
        mode="serve",
        command=(sys.executable, str(script), how),
        workdir=tmp_path,
        log_path=tmp_path / "logs" / "silencer.log",
        stage_dir=tmp_path / "stage",
        setup_seconds=30.0,
    )
    ssh = openssh(sshd, tmp_path)
    with command_runner(ssh, spec, tmp_path / "remote", link_timeout=2.0) as runner:
        runner.start()
        attempt = runner.run_item(ItemRequest("k1", {}, {"text": "x"}, 25.0))
    if how == "once":
        assert (attempt.outcome, attempt.output) == ("result", {"text": "late"}), attempt.message
        return
    assert attempt.outcome == "crashed" and not attempt.link_lost, attempt.message
    assert "keep-alive" in attempt.message and "the participant's failure" in attempt.message
    assert attempt.seconds < 20, "seen by the keep-alive, not at the item's hang limit"


def test_a_pulled_cable_is_a_lost_link_seen_by_the_keep_alive(tmp_path: Path) -> None:
    """The machine's cable is pulled mid-item: the OpenSSH client notices nothing (no
    keep-alives of its own here), the command transport's keep-alive does within its
    link_timeout, and a new run of the command gets no shell: the venue's failure. Once
    the cable is back, the restart kills what the old start left and the next item runs."""
    items = make_testset(tmp_path / "set", [("a", 1600, ""), ("b", 3200, "")])
    spec = spec_for(tmp_path, plan({1600: {"delay": 6}, 3200: {"text": "after"}}))
    with remote_machine(tmp_path / "machine") as machine:
        assert machine.sshd is not None
        ssh = openssh(machine.sshd, tmp_path)
        runner = command_runner(ssh, spec, tmp_path / "remote", link_timeout=2.0)
        with runner:
            info = runner.start()
            assert info.pid is not None

            def cut() -> None:
                time.sleep(0.7)
                machine.pull_cable()
                time.sleep(7.0)
                machine.plug_cable()

            cutter = threading.Thread(target=cut)
            cutter.start()
            attempt = runner.run_item(request(items / "a.wav", "l1", hang=30.0))
            assert attempt.outcome == "crashed" and attempt.link_lost, attempt.message
            assert attempt.message.startswith("link lost: nothing came back through the command")
            assert "a new run of the command failed" in attempt.message
            assert attempt.seconds < 6.0, "seen within the link timeout, not at the hang limit"
            cutter.join()
            runner.restart()
            assert wait_until(lambda: not alive(info.pid or 0), 5.0), "the old start survived"
            after = runner.run_item(request(items / "b.wav", "l2"))
            assert (after.outcome, after.output) == ("result", {"text": "after"})


# -- shells, settings, checks --------------------------------------------------------------


@pytest.mark.parametrize("shell", ["dash", "busybox", "bash"])
def test_files_cross_any_shell_byte_for_byte(tmp_path: Path, shell: str) -> None:
    """dash and busybox's sh read their input ahead of the line they run: the controller
    writes a file's bytes only once the shell has said it runs the line, so none are
    swallowed. The device is this machine, reached by a plain shell."""
    if shell == "busybox" and not os.path.exists(BUSYBOX):
        pytest.skip("busybox is not installed (apt-get install busybox)")
    command = [BUSYBOX, "sh"] if shell == "busybox" else [shell]
    payload = os.urandom(200_000) + b"\nexit 3\n" + bytes(range(256))
    source = tmp_path / "in.bin"
    source.write_bytes(payload)
    remote = tmp_path / "remote"
    remote.mkdir()
    host = CommandHost(CommandDevice(command=command, workdir=str(remote)).resolved(tmp_path))
    try:
        host.connect(0.0, first=True)
        for n in range(5):
            host.files.put(source, str(remote / f"copy{n}"))
            assert (remote / f"copy{n}").read_bytes() == payload
            back = tmp_path / f"back{n}"
            assert host.files.get(str(remote / f"copy{n}"), back, 1 << 20)
            assert back.read_bytes() == payload
        assert host.files.remove([str(remote / f"copy{n}") for n in range(5)])
        assert not list(remote.iterdir())
        assert host.connected()
    finally:
        host.close()


def test_a_device_that_gives_no_shell_is_unreachable_a_missing_program_is_not(
    tmp_path: Path, sshd: Sshd
) -> None:
    closed = openssh(sshd, tmp_path)
    closed[closed.index("-p") + 1] = str(free_port())
    spec = spec_for(tmp_path, {})
    t0 = time.monotonic()
    with pytest.raises(DeviceUnreachable, match="gave no shell.*Connection refused"):
        command_runner(closed, spec, tmp_path / "remote").start()
    assert time.monotonic() - t0 < 10.0
    missing = CommandServeRunner(
        spec, CommandDevice(command=["no-such-shell-here"], workdir=str(tmp_path / "r"))
    )
    with pytest.raises(StartError, match="'no-such-shell-here' is not on the controller") as err:
        missing.start()
    assert not isinstance(err.value, DeviceUnreachable)


def test_check_probes_a_command_device(tmp_path: Path, sshd: Sshd) -> None:
    device = CommandDevice(command=openssh(sshd, tmp_path), workdir=str(tmp_path / "remote"))
    steps = probe_device(device.resolved(tmp_path))
    assert steps is not None
    assert [s.name for s in steps] == ["command", "shell", "remote command", "workdir", "free disk"]
    assert all(s.ok for s in steps[:4]), steps
    testset = make_testset(tmp_path / "set", [("u1", 1600, "x")])
    site = write_site(
        tmp_path / "site.toml",
        {"board": command_device(openssh(sshd, tmp_path), tmp_path / "remote")},
        {"asr": {"kind": "asr", "testset": str(testset), "budget": {"seconds": 20.0}}},
        {"fake": {"device": "board", "tasks": ["asr"], "command": FAKE_SERVE}},
    )
    check = onsite("check", str(site), "--items", "1")
    assert check.returncode == 0, check.stdout + check.stderr
    for step in ("shell", "remote command", "workdir", "free disk"):
        assert step in check.stdout


def test_site_file_errors_name_the_key(tmp_path: Path) -> None:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "x")])

    def site(device: dict[str, Any], system: dict[str, Any] | None = None) -> Path:
        return write_site(
            tmp_path / "site.toml",
            {"board": device},
            {"asr": {"kind": "asr", "testset": str(testset), "budget": {"seconds": 5.0}}},
            {"s": {"device": "board", "tasks": ["asr"], "command": ["x"], **(system or {})}},
        )

    with pytest.raises(SiteError) as typo:
        load_site(site({"transport": "command", "comand": ["ssh", "h"]}))
    assert "unknown key 'comand'" in str(typo.value) and "site.toml:" in str(typo.value)
    with pytest.raises(SiteError, match=r"devices\.board\.command.*'no-such-ssh' is not on"):
        load_site(site({"transport": "command", "command": ["no-such-ssh", "h"]}))
    with pytest.raises(SiteError, match="mode 'exec' is not supported on command devices"):
        exec_mode = {"mode": "exec", "command": ["x", "{input}", "{output}"]}
        load_site(site({"transport": "command", "command": ["sh"]}, exec_mode))
    ok = load_site(site({"transport": "command", "command": ["sh"], "cwd": "tools"}))
    assert ok.device("board").cwd == str(tmp_path / "tools")  # type: ignore[attr-defined]


@pytest.mark.sandbox
def test_keys_the_command_names_are_hidden_from_local_systems(tmp_path: Path) -> None:
    """An ssh key and known_hosts file the command names (`-i team.key`,
    `-oUserKnownHostsFile=...`) and a file listed in hidden_files are as invisible to a
    sealed local system as an ssh device's key, wherever they lie."""
    venue = tmp_path / "venue"
    testset = make_testset(venue / "data" / "set", [("u1", 1600, "secret words")])
    # Outside the site's directory (which is hidden whole), inside the system's workdir.
    elsewhere = tmp_path / "keys"
    elsewhere.mkdir()
    (elsewhere / "team.key").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    (elsewhere / "team_known_hosts").write_text("[box]:22 ssh-ed25519 AAAA\n")
    (elsewhere / "kube.conf").write_text("token: s3cret\n")
    for path in elsewhere.iterdir():
        path.chmod(0o644)
    hostile = [sys.executable, str(REPO / "tests" / "systems" / "hostile.py")]
    site_path = write_site(
        venue / "site.toml",
        {
            "local": {"transport": "local"},
            "board": {
                "transport": "command",
                "command": [
                    "ssh",
                    "-i",
                    "team.key",
                    f"-oUserKnownHostsFile={elsewhere / 'team_known_hosts'}",
                    "eval@box",
                ],
                "cwd": str(elsewhere),
                "hidden_files": [str(elsewhere / "kube.conf")],
            },
        },
        {"asr": {"kind": "asr", "testset": str(testset), "budget": {"seconds": 5.0}}},
        {
            "snoop": {
                "device": "local",
                "tasks": ["asr"],
                "command": hostile,
                "workdir": str(tmp_path),
                "env": {
                    "HOSTILE": "snoop",
                    "HOSTILE_WANTED": "team.key,team_known_hosts,kube.conf",
                },
            }
        },
    )
    run_dir, results = run_site(site_path)
    assert [r.failed for r in results] == [None]
    (row,) = read_outputs(run_dir, "asr", "snoop")
    assert row["verdict"] == "ok", row["message"]
    assert row["output"]["found"] == [], "a file the command names is visible"


@pytest.fixture(scope="module")
def chatty_sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """An sshd whose sessions get a home whose login profile prints (`ssh -T host` starts
    the account's shell as a login shell)."""
    root = tmp_path_factory.mktemp("chatty")
    home = root / "home"
    home.mkdir()
    (home / ".profile").write_text("echo PROFILE-NOISE\necho more noise >&2\n")
    server = start_sshd(root / "sshd", extra=(f"SetEnv HOME={home}",))
    try:
        yield server
    finally:
        server.stop()


def test_what_the_login_shell_prints_is_logged_not_read(tmp_path: Path, chatty_sshd: Sshd) -> None:
    items = make_testset(tmp_path / "set", [("a", 1600, "")])
    spec = spec_for(tmp_path, plan({1600: {"text": "plain"}}))
    with command_runner(openssh(chatty_sshd, tmp_path), spec, tmp_path / "remote") as runner:
        runner.start()
        time.sleep(0.3)
        attempt = runner.run_item(request(items / "a.wav", "n1"))
    assert (attempt.outcome, attempt.output) == ("result", {"text": "plain"})
    assert attempt.cpu_seconds is not None, "the sampler started past the shell's noise"
    log = spec.log_path.read_text()
    assert "remote shell printed: PROFILE-NOISE" in log
    assert "resource sampler on the machine:" in log


def test_stop_ends_every_run_of_the_command(tmp_path: Path, sshd: Sshd) -> None:
    """The controller's own processes: after stop, no run of the command it started is left."""
    items = make_testset(tmp_path / "set", [("a", 1600, "")])
    spec = spec_for(tmp_path, plan({1600: {"text": "x"}}))
    runner = command_runner(openssh(sshd, tmp_path), spec, tmp_path / "remote")
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    runner.start()
    assert runner.run_item(request(items / "a.wav", "s1")).outcome == "result"
    during = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert during, "the system, its meter and its keep-alive run in runs of the command"
    runner.stop()
    assert wait_until(lambda: not [p for p in during if alive(p)], 5.0)
    assert not (tmp_path / "remote" / ".onsite").exists()
