"""Files a system returns are read safely: whatever it leaves at its output path.

A system's answer file (exec mode's ``{output}``, a tts system's ``audio_out``, locally or
fetched over SSH) may be a directory, a FIFO, a socket, a link to a file the system
cannot read, a device or a sparse file of 10 GB. Each test runs `onsite run` on a small
site whose one hostile item leaves such a thing, and checks that the run ends (no
traceback, no hang), the hostile item is invalid_output at its first attempt with a
message naming what was found, and the other items are judged as usual.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paramiko
import pytest
import soundfile

from harness import read_journal
from runners.ssh_fetch import FetchRefused, fetch_file
from tests.helpers import REPO, make_testset, toml_value, write_site
from tests.sshd import Sshd, start_sshd
from tests.systems.hostile_files import HOSTILE_FRAMES

HOSTILE = str(REPO / "tests" / "systems" / "hostile_files.py")
# Generous: a run of three items takes seconds; the controller that hung took for ever.
RUN_TIMEOUT = 120.0
ROOT = os.geteuid() == 0

# (shape, what the message must name); "symlink" is run twice, at /etc/passwd and at a
# file of the controller's that the system cannot read.
SHAPES = [
    ("dir", "is not a regular file but a directory"),
    ("fifo", "is not a regular file but a FIFO"),
    ("socket", "is not a regular file but a socket"),
    ("symlink:passwd", "is a symbolic link"),
    ("symlink:secret", "is a symbolic link"),
    ("device", "is not a regular file but a character device"),
    ("sparse", "is larger than"),
]
SHAPE_IDS = [shape for shape, _ in SHAPES]


def onsite_run(site: Path) -> subprocess.CompletedProcess[str]:
    """`onsite run SITE` in a process of its own; a hang fails the test, it does not block."""
    try:
        done = subprocess.run(
            [sys.executable, "-m", "harness.cli", "run", str(site)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            env={**os.environ, "CI": "1"},
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"onsite run did not end within {RUN_TIMEOUT:g} s: {exc.stderr!r}")
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def assert_judged(run_dir: Path, system: str, hostile: str, reason: str) -> dict[str, Any]:
    """The hostile item is invalid_output at attempt 1 (sent once); the others ok."""
    records = list(read_journal(run_dir / "journal.jsonl"))
    sent = [r for r in records if r["event"] == "dispatched" and r["system"] == system]
    done = [r for r in records if r["event"] == "completed" and r["system"] == system]
    assert [r["attempt"] for r in sent if r["item"] == hostile] == [1], sent
    [bad] = [r for r in done if r["item"] == hostile]
    assert bad["verdict"] == "invalid_output" and bad["attempt"] == 1, bad
    assert reason in bad["message"], bad["message"]
    others = [r for r in done if r["item"] != hostile]
    assert len(others) == 2 and all(r["verdict"] == "ok" for r in others), others
    assert all(r["attempt"] == 1 for r in done)
    lost = [r for r in records if r["event"] in ("link_lost", "system_lost")]
    assert not lost, lost
    return bad


def hostile(shape: str, secret: Path) -> tuple[str, dict[str, str]]:
    """The hostile system's SHAPE argument and its environment (a link's target)."""
    if shape == "symlink:passwd":
        return "symlink", {"HOSTILE_TARGET": "/etc/passwd"}
    if shape == "symlink:secret":
        return "symlink", {"HOSTILE_TARGET": str(secret)}
    return shape, {}


def skip_unless_root(shape: str) -> None:
    if shape == "device" and not ROOT:
        pytest.skip("making a device node needs root")


def unreadable(path: Path, data: bytes) -> Path:
    """A file only the controller's user can read, not a sandboxed system's own user."""
    path.write_bytes(data)
    path.chmod(0o600)
    return path


def assert_secret_kept(run_dir: Path, marker: bytes) -> None:
    """Nothing of the file behind a link reached the run directory."""
    for path in run_dir.rglob("*"):
        if path.is_file() and not path.is_symlink():
            assert marker not in path.read_bytes(), path


# -- exec mode, local --------------------------------------------------------------------


def exec_site(tmp_path: Path, shape: str, env: dict[str, str], sealed: bool) -> Path:
    testset = make_testset(
        tmp_path / "set",
        [("u1", 1600, "fine"), ("h1", HOSTILE_FRAMES, "fine"), ("u3", 4800, "fine")],
    )
    workdir = tmp_path / "work"
    workdir.mkdir()
    command = [sys.executable, HOSTILE, "exec", shape, "{input}", "{output}"]
    system = {"command": command, "mode": "exec", "workdir": str(workdir), "env": env}
    return write_site(
        tmp_path / "site.toml",
        testset,
        {"hostile": system},
        budget={"seconds": 60.0, "hang_seconds": 60.0},
        device={"transport": "local"} if sealed else {"transport": "local", "sandbox": False},
    )


@pytest.mark.sandbox
@pytest.mark.parametrize(("shape", "reason"), SHAPES, ids=SHAPE_IDS)
def test_exec_output_of_any_shape_is_invalid_output(
    tmp_path: Path, shape: str, reason: str
) -> None:
    """Sealed, except the device: only an unsealed system running as root can make one."""
    skip_unless_root(shape)
    secret = unreadable(tmp_path / "secret.json", b'{"text": "SECRET-EXEC"}')
    site = exec_site(tmp_path, *hostile(shape, secret), sealed=shape != "device")
    onsite_run(site)
    run_dir = tmp_path / "runs" / "t"
    bad = assert_judged(run_dir, "hostile", "h1", reason)
    assert "the output file at {output}" in bad["message"]
    if shape == "sparse":
        assert "max_output_bytes=" in bad["message"]
    assert_secret_kept(run_dir, b"SECRET-EXEC")


@pytest.mark.sandbox
def test_exec_output_nested_too_deep_is_invalid_output(tmp_path: Path) -> None:
    """JSON nested deeper than a parser recurses is a bad answer, not a controller error."""
    onsite_run(exec_site(tmp_path, "deep", {}, sealed=True))
    assert_judged(tmp_path / "runs" / "t", "hostile", "h1", "is not JSON")


# -- tts, local and sealed ---------------------------------------------------------------

TTS_TEXT = "s1 Good morning to you\nh1 Hostile words for the reader\ns3 Good night and sleep well\n"


def tts_testset(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "text").write_text(TTS_TEXT, encoding="utf-8")
    return root


def tts_local_site(tmp_path: Path, shape: str, env: dict[str, str], sealed: bool) -> Path:
    command = [sys.executable, HOSTILE, "tts", shape]
    return write_site(
        tmp_path / "site.toml",
        tts_testset(tmp_path / "set"),
        {"hostile": {"command": command, "workdir": str(REPO), "env": env}},
        budget={"chars_per_second": 1.0, "hang_seconds": 60.0},
        task="tts",
        task_keys={"kind": "tts", "sample_rates": [16000]},
        device={"transport": "local"} if sealed else {"transport": "local", "sandbox": False},
    )


def secret_wav(tmp_path: Path) -> Path:
    """A valid WAV (what a link's target would pass as) that the system cannot read."""
    path = tmp_path / "secret.wav"
    soundfile.write(str(path), [0.25] * 1600, 16000, subtype="PCM_16")
    path.chmod(0o600)
    return path


def assert_tts_kept(run_dir: Path) -> None:
    """The two good items' audio is kept, nothing of the hostile one, nothing staged."""
    assert len(list((run_dir / "media" / "tts").glob("*.wav"))) == 2
    assert not list((run_dir / "media" / "tts").glob("*.part"))
    assert not [p for p in (run_dir / "stage").rglob("*") if p.is_file()]


@pytest.mark.sandbox
@pytest.mark.parametrize(
    ("shape", "reason"),
    [*SHAPES, ("lease", "is held under a lease")],
    ids=[*SHAPE_IDS, "lease"],
)
def test_tts_audio_of_any_shape_is_invalid_output(tmp_path: Path, shape: str, reason: str) -> None:
    """A sealed tts system (unsealed as root for the device) leaves SHAPE at audio_out."""
    skip_unless_root(shape)
    secret = secret_wav(tmp_path)
    site = tts_local_site(tmp_path, *hostile(shape, secret), sealed=shape != "device")
    onsite_run(site)
    run_dir = tmp_path / "runs" / "t"
    bad = assert_judged(run_dir, "hostile", "h1", reason)
    assert bad["message"].startswith("the audio at audio_out "), bad["message"]
    assert_tts_kept(run_dir)


# -- tts over SSH ------------------------------------------------------------------------


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


def tts_ssh_site(tmp_path: Path, sshd: Sshd, shape: str, env: dict[str, str]) -> Path:
    options = sshd.options(workdir=str(tmp_path / "remote"))
    system = {
        "device": "team",
        "tasks": ["tts"],
        "command": [sys.executable, HOSTILE, "tts", shape],
        "env": env,
    }
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
        f"testset = {toml_value(str(tts_testset(tmp_path / 'set')))}",
        f"budget = {toml_value({'chars_per_second': 1.0, 'hang_seconds': 60.0})}",
        "",
        "[systems.hostile]",
        *(f"{k} = {toml_value(v)}" for k, v in system.items()),
        "",
    ]
    path = tmp_path / "site.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@pytest.mark.sshd
@pytest.mark.parametrize(
    ("shape", "reason"),
    [*SHAPES, ("lease", "did not finish within")],
    ids=[*SHAPE_IDS, "lease"],
)
def test_remote_audio_of_any_shape_is_invalid_output(
    tmp_path: Path, server: Sshd, shape: str, reason: str
) -> None:
    """The system on the participant's machine (here: root, so it can make a device)
    leaves SHAPE at audio_out; the fetch refuses it, or gives up on an open that waits
    (a lease), and the next items are fetched as usual."""
    skip_unless_root(shape)
    secret = secret_wav(tmp_path)
    onsite_run(tts_ssh_site(tmp_path, server, *hostile(shape, secret)))
    run_dir = tmp_path / "runs" / "t"
    bad = assert_judged(run_dir, "hostile", "h1", reason)
    assert "audio_out" in bad["message"]
    assert bad["fetch_seconds"] is not None
    assert_tts_kept(run_dir)


# -- a remote name swapped between the check and the open --------------------------------


@pytest.fixture
def link(sshd: Sshd) -> Iterator[tuple[paramiko.SFTPClient, paramiko.Transport]]:
    """A connection to the sshd with an SFTP session, as the SSH runner makes them."""
    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect("127.0.0.1", sshd.port, sshd.user, key_filename=str(sshd.user_key))
    transport = client.get_transport()
    assert transport is not None
    sftp = client.open_sftp()
    channel = sftp.get_channel()
    assert channel is not None
    channel.settimeout(5.0)
    try:
        yield sftp, transport
    finally:
        client.close()


@pytest.mark.sshd
@pytest.mark.parametrize(
    ("swapped", "reason"),
    [
        ("fifo", "is not a regular file but a FIFO"),
        ("dir", "is not a regular file but a directory"),
        ("socket", "is not a regular file but a socket"),
        # The server follows a link swapped in after the check (SFTP cannot refuse one):
        # the account reads only what the system could, and the copy stops at the ceiling.
        ("symlink", "is larger than max_output_file_bytes=1048576"),
    ],
)
def test_remote_file_swapped_after_the_check_is_judged_as_opened(
    tmp_path: Path,
    link: tuple[paramiko.SFTPClient, paramiko.Transport],
    monkeypatch: pytest.MonkeyPatch,
    swapped: str,
    reason: str,
) -> None:
    """The system swaps something else in right after the name was checked: the open
    never waits on a FIFO, what was opened is refused, and the SFTP session that stages
    inputs still answers at once."""
    sftp, transport = link
    remote = tmp_path / "audio_out.wav"
    soundfile.write(str(remote), [0.0] * 1600, 16000)
    large = tmp_path / "large"
    large.write_bytes(b"\0" * (2 << 20))
    real_lstat = paramiko.SFTPClient.lstat
    held: list[socket.socket] = []

    def lstat_then_swap(self: paramiko.SFTPClient, path: str) -> paramiko.SFTPAttributes:
        # The real lstat on the real server, then what a racing system does, once.
        info = real_lstat(self, path)
        monkeypatch.setattr(paramiko.SFTPClient, "lstat", real_lstat)
        os.unlink(path)
        if swapped == "fifo":
            os.mkfifo(path)
        elif swapped == "dir":
            os.mkdir(path)
        elif swapped == "socket":
            held.append(socket.socket(socket.AF_UNIX))
            held[0].bind(path)
        else:
            os.symlink(large, path)
        return info

    monkeypatch.setattr(paramiko.SFTPClient, "lstat", lstat_then_swap)
    host = tmp_path / "fetched" / "audio_out.wav"
    started = time.monotonic()
    with pytest.raises(FetchRefused) as refused:
        fetch_file(sftp, transport, str(remote), host, 1 << 20, 5.0)
    assert time.monotonic() - started < 5.0, "the fetch waited for its timeout"
    assert reason in str(refused.value)
    assert not host.exists()
    for sock in held:
        sock.close()
    # The staging session is not stuck behind the fetch, and the next fetch works.
    assert sftp.stat(str(tmp_path)).st_mode
    if remote.is_dir() and not remote.is_symlink():
        remote.rmdir()
    else:
        remote.unlink()
    soundfile.write(str(remote), [0.0] * 1600, 16000)
    assert fetch_file(sftp, transport, str(remote), host, 1 << 20, 5.0)
    assert host.read_bytes() == remote.read_bytes()


@pytest.mark.sshd
@pytest.mark.parametrize("path", ["sftp", "exec"])
def test_remote_fifo_racing_the_fetch_never_blocks_it(
    tmp_path: Path, link: tuple[paramiko.SFTPClient, paramiko.Transport], path: str
) -> None:
    """A system swaps a FIFO and a regular file at the name as fast as it can: every
    fetch ends at once with the file's own bytes or a refusal, never a wait."""
    sftp, transport = link
    remote = tmp_path / "out.wav"
    regular, fifo = tmp_path / "regular", tmp_path / "fifo"
    regular.write_bytes(b"RIFF" + b"\0" * 1000)
    os.mkfifo(fifo)
    stop = threading.Event()

    def race() -> None:
        n = 0
        while not stop.is_set():
            n += 1
            spare = tmp_path / f"spare{n % 2}"
            os.link(fifo if n % 2 else regular, spare)
            os.rename(spare, remote)

    racer = threading.Thread(target=race, daemon=True)
    racer.start()
    # Once there, the name never goes missing (each swap is an atomic rename).
    deadline = time.monotonic() + 10
    while not os.path.lexists(remote) and time.monotonic() < deadline:
        time.sleep(0.001)
    outcomes: dict[str, int] = {"copied": 0, "refused": 0}
    try:
        for n in range(40):
            host = tmp_path / "fetched" / f"{n}.wav"
            try:
                found = fetch_file(
                    sftp if path == "sftp" else None, transport, str(remote), host, 1 << 20, 3.0
                )
            except FetchRefused as exc:
                # What the name is by the time the message is written may differ.
                assert "is not a regular file" in str(exc), exc
                outcomes["refused"] += 1
                continue
            assert found
            assert host.read_bytes() == regular.read_bytes()
            outcomes["copied"] += 1
    finally:
        stop.set()
        racer.join()
    assert outcomes["copied"] + outcomes["refused"] == 40
    assert outcomes["refused"], "the racer never put the FIFO in the way"
