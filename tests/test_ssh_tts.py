"""The tts task over a real sshd: the audio is written on the remote machine and fetched back
(SFTP, or the exec channel on a server without SFTP); bad audio is invalid_output."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import soundfile

from harness import Controller, RunStore, load_site, read_journal
from runners import ItemRequest, SshServeRunner, SystemSpec
from tests.helpers import REPO, read_outputs, toml_value
from tests.netns import remote_machine
from tests.sshd import Sshd, start_sshd
from tests.test_tts_task import ESPEAK, tts_testset

pytestmark = pytest.mark.sshd

ENV = {"PYTHONPATH": str(REPO)}

# A system that leaves something odd at audio_out and answers with that path.
WRITER = """
import json, os, sys, wave
mode = sys.argv[1]
for line in sys.stdin:
    m = json.loads(line)
    if m["op"] == "hello":
        print(json.dumps({"op": "ready", "name": "writer"}), flush=True)
    elif m["op"] == "item":
        out = m["input"]["audio_out"]
        answer = out
        if mode == "symlink":
            os.symlink(sys.argv[2], out)
        elif mode == "fifo":
            os.mkfifo(out)
        elif mode == "dir":
            os.mkdir(out)
        elif mode == "big":
            with open(out, "wb") as fh:
                fh.write(b"x" * int(sys.argv[2]))
        else:
            with wave.open(out, "wb") as w:
                w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
                w.writeframes(b"\\0\\1" * 8000)
            if mode == "liar":
                answer = sys.argv[2]
        with open(sys.argv[-1], "a") as log:
            log.write(out + "\\n")
        print(json.dumps({"op": "result", "id": m["id"], "output": {"audio": answer}}), flush=True)
"""


@pytest.fixture(scope="module")
def sshd_without_sftp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd-nosftp"), sftp=False)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(params=["sftp", "exec"])
def server(request: pytest.FixtureRequest) -> Sshd:
    """The session's sshd with SFTP, and one without (files come back through `cat`)."""
    name = "sshd" if request.param == "sftp" else "sshd_without_sftp"
    return request.getfixturevalue(name)  # type: ignore[no-any-return]


def tts_ssh_site(tmp_path: Path, sshd: Sshd, systems: dict[str, list[str]], **extra: Any) -> Path:
    """A tts task (three sentences) with every system on one ssh device (this sshd)."""
    testset = tts_testset(tmp_path / "set")
    options = sshd.options(workdir=str(tmp_path / "remote"), **extra)
    lines = [
        "[site]",
        'name = "t"',
        'runs = "runs"',
        "",
        "[devices.team]",
        'transport = "ssh"',
        *(f"{k} = {toml_value(v)}" for k, v in options.items()),
        "",
        "[tasks.tts]",
        'kind = "tts"',
        "sample_rates = [16000]",
        f"testset = {toml_value(str(testset))}",
        f"budget = {toml_value({'chars_per_second': 2.0, 'hang_seconds': 30.0})}",
        "",
    ]
    for name, command in systems.items():
        cfg = {"device": "team", "tasks": ["tts"], "command": command, "env": ENV}
        lines.append(f"[systems.{name}]")
        lines.extend(f"{k} = {toml_value(v)}" for k, v in cfg.items())
        lines.append("")
    path = tmp_path / "site.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def run(site_path: Path, limit: int | None = None) -> Path:
    site = load_site(site_path)
    store = RunStore(site.run_dir, "t", 0)
    try:
        store.keep_site_copy(site.path, site.root)
        results = Controller(site, store, limit=limit).run()
    finally:
        store.close()
    assert all(r.failed is None for r in results), results
    return site.run_dir


def completed(run_dir: Path) -> list[dict[str, Any]]:
    return [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "completed"]


def assert_nothing_left(tmp_path: Path, run_dir: Path) -> None:
    """No audio on the remote machine, none staged on the controller's side."""
    assert not [p for p in (tmp_path / "remote").rglob("*") if p.is_file()]
    assert not list((run_dir / "stage").rglob("*.wav"))


def test_tts_over_ssh_keeps_the_remote_audio(tmp_path: Path, server: Sshd) -> None:
    site = tts_ssh_site(tmp_path, server, {"slow": [*ESPEAK, "--speed", "120"], "fast": ESPEAK})
    run_dir = run(site)
    names = set()
    for system in ("slow", "fast"):
        rows = read_outputs(run_dir, "tts", system)
        assert [r["verdict"] for r in rows] == ["ok", "ok", "ok"], rows
        for row in rows:
            audio = row["output"]["audio"]
            assert audio.startswith("media/tts/") and system not in audio
            names.add(audio)
            info = soundfile.info(str(run_dir / audio))
            assert info.channels == 1 and info.samplerate == 16000
            assert row["output"]["audio_seconds"] == pytest.approx(info.frames / 16000)
    assert len(names) == 6
    records = completed(run_dir)
    for record in records:
        assert record["fetch_seconds"] is not None and record["fetch_seconds"] >= 0
        assert record["rtf"] == pytest.approx(record["seconds"] / record["output"]["audio_seconds"])
    slow = sum(r["output"]["audio_seconds"] for r in read_outputs(run_dir, "tts", "slow"))
    fast = sum(r["output"]["audio_seconds"] for r in read_outputs(run_dir, "tts", "fast"))
    assert slow > fast
    # The system was told a path in its remote stage directory, and answered with it.
    dispatched = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "dispatched"]
    assert len(dispatched) == 6
    assert_nothing_left(tmp_path, run_dir)


@pytest.mark.parametrize(
    ("fault", "reason"),
    [
        ("stereo", "mono"),
        ("rate", "8000 Hz"),
        ("garbage", "not a readable audio file"),
        ("empty", "empty"),
        ("none", "no audio file"),
    ],
)
def test_bad_remote_audio_is_invalid_output(
    tmp_path: Path, server: Sshd, fault: str, reason: str
) -> None:
    site = tts_ssh_site(tmp_path, server, {"bad": [*ESPEAK, "--fault", fault]})
    run_dir = run(site, limit=1)
    [row] = read_outputs(run_dir, "tts", "bad")
    assert row["verdict"] == "invalid_output"
    [done] = completed(run_dir)
    assert reason in done["message"], done["message"]
    assert not list(run_dir.glob("media/**/*.wav"))
    assert_nothing_left(tmp_path, run_dir)


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("symlink", "is a symbolic link"),
        ("fifo", "is not a regular file"),
        ("dir", "is not a regular file"),
        ("liar", "but audio_out was"),
    ],
)
def test_odd_remote_files_are_refused(tmp_path: Path, server: Sshd, mode: str, reason: str) -> None:
    """A link to another file, a FIFO (which would block a reader), a directory, or an
    answer naming some other path: invalid_output, and nothing copied into the run."""
    secret = tmp_path / "secret.wav"
    soundfile.write(str(secret), [0.0] * 1600, 16000)
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    told = tmp_path / "told.txt"
    command = [sys.executable, str(script), mode, str(secret), str(told)]
    site = tts_ssh_site(tmp_path, server, {"odd": command})
    run_dir = run(site, limit=1)
    [row] = read_outputs(run_dir, "tts", "odd")
    assert row["verdict"] == "invalid_output"
    [done] = completed(run_dir)
    assert reason in done["message"], done["message"]
    assert not list(run_dir.glob("media/**/*.wav"))
    # The system was told a path in its remote stage directory.
    [path] = told.read_text().split()
    assert path.startswith(str(tmp_path / "remote" / ".onsite")) and path.endswith(".wav")
    assert not Path(path).exists() and not Path(path).is_symlink()
    assert secret.exists()
    assert not list((run_dir / "stage").rglob("*.wav"))


def writer_spec(tmp_path: Path, command: list[str], max_bytes: int) -> SystemSpec:
    return SystemSpec(
        name="writer",
        task="tts",
        kind="tts",
        mode="serve",
        command=tuple(command),
        workdir=tmp_path,
        log_path=tmp_path / "logs" / "writer.log",
        stage_dir=tmp_path / "stage",
        setup_seconds=20.0,
        max_output_file_bytes=max_bytes,
    )


def test_runner_fetches_output_files_up_to_the_ceiling(tmp_path: Path, server: Sshd) -> None:
    """The runner gives a remote path, fetches the file after the answer, and refuses one
    larger than max_output_file_bytes without copying more than that."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    told = tmp_path / "told.txt"
    outputs = {"audio_out": ".wav"}
    fields = {"text": "x", "sample_rate": 16000}
    for size, outcome in ((4000, "result"), (4097, "invalid_output")):
        command = [sys.executable, str(script), "big", str(size), str(told)]
        spec = writer_spec(tmp_path, command, max_bytes=4096)
        runner = SshServeRunner(spec, server.options(workdir=str(tmp_path / "remote")))
        runner.reconnect_seconds = 5.0
        with runner:
            runner.start()
            attempt = runner.run_item(ItemRequest("a1", {}, fields, 10.0, outputs=outputs))
            assert attempt.outcome == outcome, attempt.message
            assert attempt.fetch_seconds is not None
            remote = told.read_text().split()[-1]
            assert Path(remote).parent == Path(runner.remote_stage_dir)
            assert not Path(remote).exists(), "the remote copy is removed after the item"
            if outcome == "result":
                file = attempt.output_files["audio_out"]
                assert file.seen == remote and file.host.parent == spec.stage_dir / "fetched"
                assert file.host.read_bytes() == b"x" * size
                assert (file.host.stat().st_mode & 0o777) == 0o600
            else:
                assert "larger than max_output_file_bytes=4096" in attempt.message
                assert attempt.output_files == {}
                assert not list((spec.stage_dir / "fetched").glob("*"))
            # The system lives on after a refused file: the next item is answered.
            again = runner.run_item(ItemRequest("a2", {}, fields, 10.0, outputs=outputs))
            assert again.outcome == outcome
        assert not (spec.stage_dir / "fetched").exists(), "stop removes what was fetched"


def test_output_path_in_the_log_never_names_the_controller(tmp_path: Path, sshd: Sshd) -> None:
    """The item field holds the remote path, nothing of the controller's run directory."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    told = tmp_path / "told.txt"
    site = tts_ssh_site(tmp_path, sshd, {"w": [sys.executable, str(script), "good", str(told)]})
    run_dir = run(site)
    rows = read_outputs(run_dir, "tts", "w")
    assert [r["verdict"] for r in rows] == ["ok", "ok", "ok"], rows
    for path in told.read_text().split():
        assert str(run_dir) not in path
    assert json.dumps(rows).count("media/tts/") == 3


# First attempt: leave a large file, answer, and as soon as some process on the machine has
# the file open (the fetch), say "cut" in the marker; with "kill", also cut the SSH
# connection itself (every session of the test's sshd), as a hostile system would.
CUTTER = """
import json, os, sys, time, wave
listener, marker, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]

def opened(path):
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                    return True
        except OSError:
            continue
    return False

for line in sys.stdin:
    m = json.loads(line)
    if m["op"] == "hello":
        print(json.dumps({"op": "ready", "name": "cutter"}), flush=True)
    elif m["op"] == "item":
        out = m["input"]["audio_out"]
        first = not os.path.exists(marker)
        if first:
            open(marker, "w").close()
            with open(out, "wb") as fh:
                fh.write(os.urandom(24 << 20))
        else:
            with wave.open(out, "wb") as w:
                w.setnchannels(1); w.setsampwidth(2); w.setframerate(16000)
                w.writeframes(b"\\0\\1" * 8000)
        print(json.dumps({"op": "result", "id": m["id"], "output": {"audio": out}}), flush=True)
        if first:
            until = time.monotonic() + 20
            while not opened(out) and time.monotonic() < until:
                time.sleep(0.001)
            with open(marker, "w") as fh:
                fh.write("cut" if opened(out) else "missed")
            if mode == "kill":
                for line in open(f"/proc/{listener}/task/{listener}/children").read().split():
                    try:
                        os.kill(int(line), 9)
                    except OSError:
                        pass
"""


# paramiko's SFTP prefetch thread reports the dropped connection on its own as well.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "exec"])
def test_link_lost_while_fetching_sends_the_item_again(tmp_path: Path, sftp: bool) -> None:
    """The machine's cable is pulled during the fetch: the venue's failure, sent again."""
    script = tmp_path / "cutter.py"
    script.write_text(CUTTER, encoding="utf-8")
    marker = tmp_path / "cut.marker"
    with remote_machine(tmp_path / "machine", sftp=sftp) as machine:
        assert machine.sshd is not None
        command = [sys.executable, str(script), str(machine.sshd.process.pid), str(marker), "ask"]
        site = tts_ssh_site(tmp_path, machine.sshd, {"cut": command}, link_timeout=2.0)

        def pull_at_the_fetch() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if marker.exists() and marker.read_text() == "cut":
                    machine.pull_cable()
                    time.sleep(5.0)
                    machine.plug_cable()
                    return
                time.sleep(0.005)

        puller = threading.Thread(target=pull_at_the_fetch)
        puller.start()
        run_dir = run(site, limit=1)
        puller.join()
    assert marker.read_text() == "cut", "the cable was pulled during the fetch"
    [row] = read_outputs(run_dir, "tts", "cut")
    assert row["verdict"] == "ok" and row["attempt"] == 2, row
    records = list(read_journal(run_dir / "journal.jsonl"))
    [lost] = [r for r in records if r["event"] == "link_lost"]
    assert lost["failure_class"] == "venue"
    assert "while fetching audio_out" in lost["reason"], lost
    assert row["resent"] == 1 and row["lost_seconds"] == pytest.approx(lost["seconds"])
    assert len(list(run_dir.glob("media/tts/*.wav"))) == 1
    assert_nothing_left(tmp_path, run_dir)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_system_that_cuts_its_link_while_fetching_gets_no_second_sending(
    tmp_path: Path, server: Sshd
) -> None:
    """The system kills the SSH sessions itself while its file is fetched: the machine
    answers a new connection at once, so it is the participant's crash, not sent again."""
    script = tmp_path / "cutter.py"
    script.write_text(CUTTER, encoding="utf-8")
    marker = tmp_path / "cut.marker"
    command = [sys.executable, str(script), str(server.process.pid), str(marker), "kill"]
    site = tts_ssh_site(tmp_path, server, {"cut": command})
    run_dir = run(site, limit=1)
    assert marker.read_text() == "cut", "the connection was cut during the fetch"
    [row] = read_outputs(run_dir, "tts", "cut")
    assert row["verdict"] == "crashed" and row["attempt"] == 1, row
    assert "the participant's failure" in row["message"]
    records = list(read_journal(run_dir / "journal.jsonl"))
    assert not [r for r in records if r["event"] == "link_lost"]
    assert not list(run_dir.glob("media/tts/*.wav"))


def test_controller_side_failure_is_the_venues(tmp_path: Path, sshd: Sshd) -> None:
    """The copy cannot be made on the controller (here its directory is taken by a file):
    not the system's fault, so the item is a lost link, sent again, never invalid_output."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    command = [sys.executable, str(script), "good", str(tmp_path / "told.txt")]
    spec = writer_spec(tmp_path, command, max_bytes=1 << 20)
    runner = SshServeRunner(spec, sshd.options(workdir=str(tmp_path / "remote")))
    runner.reconnect_seconds = 5.0
    fields = {"text": "x", "sample_rate": 16000}
    with runner:
        runner.start()
        spec.stage_dir.mkdir(parents=True, exist_ok=True)
        (spec.stage_dir / "fetched").write_text("in the way")
        request = ItemRequest("b1", {}, fields, 10.0, outputs={"audio_out": ".wav"})
        attempt = runner.run_item(request)
        assert attempt.outcome == "crashed" and attempt.link_lost, attempt
        assert "cannot keep the file written at audio_out on the controller" in attempt.message
        runner.restart()
        assert not (spec.stage_dir / "fetched").exists(), "a start clears the way"
        assert runner.run_item(request).outcome == "result"


def test_audio_over_the_tts_ceiling_is_refused_after_the_copy(tmp_path: Path, sshd: Sshd) -> None:
    """Under the runner's 64 MiB, over the tts kind's 32 MiB: fetched, then invalid_output."""
    script = tmp_path / "writer.py"
    script.write_text(WRITER, encoding="utf-8")
    size = (32 << 20) + 1
    command = [sys.executable, str(script), "big", str(size), str(tmp_path / "told.txt")]
    site = tts_ssh_site(tmp_path, sshd, {"big": command})
    run_dir = run(site, limit=1)
    [row] = read_outputs(run_dir, "tts", "big")
    assert row["verdict"] == "invalid_output"
    [done] = completed(run_dir)
    assert f"larger than {32 << 20} bytes" in done["message"], done["message"]
    assert done["fetch_seconds"] is not None
    assert_nothing_left(tmp_path, run_dir)
