"""Run the example participant systems as real subprocesses speaking the protocol."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest
import soundfile as sf

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "site_config" / "data" / "demo-asr"


class Participant:
    """A system under test, started in its own session so its tree can be killed."""

    def __init__(self, module: str, *args: str, stderr_path: Path) -> None:
        self.stderr_file = stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module, *args],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr_file,
            start_new_session=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stdout, selectors.EVENT_READ)

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write((json.dumps(message) + "\n").encode())
        self.stdin.flush()

    def recv(self, timeout: float = 60.0) -> dict[str, Any] | None:
        """Next protocol line, or None on EOF; raises TimeoutError if none in time."""
        if not self.selector.select(timeout):
            raise TimeoutError(f"no reply within {timeout} s")
        line = self.stdout.readline()
        return json.loads(line) if line else None

    def hello(self) -> dict[str, Any]:
        self.send({"op": "hello", "protocol": 1, "task": "demo-asr", "kind": "asr"})
        ready = self.recv()
        assert ready is not None and ready["op"] == "ready", ready
        return ready

    def item(self, item_id: str, audio: Path, timeout: float = 60.0) -> dict[str, Any] | None:
        self.send(
            {"op": "item", "id": item_id, "input": {"audio": str(audio), "sample_rate": 16000}}
        )
        return self.recv(timeout)

    def kill_tree(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.kill_tree()
        self.selector.close()
        self.stdin.close()
        self.stdout.close()
        self.stderr_file.close()


@pytest.fixture
def start(tmp_path: Path):
    started: list[Participant] = []

    def _start(module: str, *args: str) -> Participant:
        participant = Participant(module, *args, stderr_path=tmp_path / f"stderr{len(started)}.log")
        started.append(participant)
        return participant

    yield _start
    for participant in started:
        participant.close()


def demo_items() -> list[Path]:
    return sorted(DEMO.glob("*.flac"))


def test_demo_set_layout() -> None:
    items = demo_items()
    ids = {p.stem for p in items}
    text_ids = {line.split(" ", 1)[0] for line in (DEMO / "text").read_text().splitlines()}
    cond = dict(line.split("\t") for line in (DEMO / "conditions.tsv").read_text().splitlines())
    assert ids == text_ids == set(cond)
    assert set(cond.values()) == {"clean", "snr15", "snr5"}
    total = sum(sf.info(p).duration for p in items)
    assert 45 < total < 85
    info = sf.info(items[0])
    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")


def test_sphinx_serves_clean_item(start) -> None:
    system = start("examples.systems.sphinx_asr")
    ready = system.hello()
    assert ready["name"] == "sphinx-default"
    assert ready["version"].startswith("pocketsphinx ")
    reply = system.item("opaque-1", DEMO / "s03_clean.flac")
    assert reply is not None and reply["op"] == "result" and reply["id"] == "opaque-1"
    assert reply["output"]["text"].strip()
    system.send({"op": "bye"})
    assert system.proc.wait(timeout=10) == 0


def test_sphinx_rejects_bad_audio_and_keeps_serving(start, tmp_path: Path) -> None:
    samples, _ = sf.read(DEMO / "s03_clean.flac", dtype="int16")
    low_rate = tmp_path / "8k.wav"
    sf.write(low_rate, samples[::2], 8000, subtype="PCM_16")
    stereo = tmp_path / "stereo.wav"
    sf.write(stereo, samples.repeat(2).reshape(-1, 2), 16000, subtype="PCM_16")

    system = start("examples.systems.sphinx_asr", "--fast")
    assert system.hello()["name"] == "sphinx-fast"
    reply = system.item("a", low_rate)
    assert reply is not None and reply["op"] == "error" and reply["id"] == "a"
    assert "8000" in reply["message"]
    reply = system.item("b", stereo)
    assert reply is not None and reply["op"] == "error" and reply["id"] == "b"
    reply = system.item("c", DEMO / "s03_clean.flac")
    assert reply is not None and reply["op"] == "result" and reply["output"]["text"].strip()
    system.send({"op": "frobnicate", "id": "d"})
    reply = system.recv()
    assert reply is not None and reply["op"] == "error" and reply["id"] == "d"
    system.stdin.close()  # EOF without bye must end the process cleanly too
    assert system.proc.wait(timeout=10) == 0


def faulty_plan() -> dict[str, list[Path]]:
    from examples.systems.faulty_asr import behaviour

    plan: dict[str, list[Path]] = {"answer": [], "crash": [], "hang": []}
    for path in demo_items():
        plan[behaviour(str(path))].append(path)
    return plan


def test_faulty_rule_on_demo_set() -> None:
    plan = faulty_plan()
    assert len(plan["hang"]) == 1
    assert 2 <= len(plan["crash"]) <= 4


def test_faulty_crashes(start, tmp_path: Path) -> None:
    plan = faulty_plan()
    system = start("examples.systems.faulty_asr")
    system.hello()
    reply = system.item("ok", plan["answer"][0], timeout=10)
    assert reply is not None and reply["op"] == "result" and reply["output"]["text"]
    assert system.item("boom", plan["crash"][0], timeout=10) is None  # EOF: it died
    assert system.proc.wait(timeout=10) == 3
    assert b"simulated crash" in (tmp_path / "stderr0.log").read_bytes()

    # Same audio under a new id and a fresh process: same crash.
    again = start("examples.systems.faulty_asr")
    again.hello()
    assert again.item("other-id", plan["crash"][0], timeout=10) is None
    assert again.proc.wait(timeout=10) == 3


def test_faulty_hangs_with_child(start) -> None:
    plan = faulty_plan()
    system = start("examples.systems.faulty_asr")
    system.hello()
    with pytest.raises(TimeoutError):
        system.item("stuck", plan["hang"][0], timeout=3)
    assert system.proc.poll() is None
    children = psutil.Process(system.proc.pid).children(recursive=True)
    assert any(child.name() == "sleep" for child in children)
    system.kill_tree()
    _, alive = psutil.wait_procs(children, timeout=5)
    # A killed child may linger as a zombie until its new parent reaps it.
    assert all(p.status() == psutil.STATUS_ZOMBIE for p in alive if p.is_running())


def test_exec_mode_writes_output(tmp_path: Path) -> None:
    output = tmp_path / "out.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "examples.systems.sphinx_asr",
            "--fast",
            "--exec",
            str(DEMO / "s03_clean.flac"),
            str(output),
        ],
        cwd=REPO,
        check=True,
        timeout=120,
    )
    result = json.loads(output.read_text())
    assert isinstance(result["text"], str) and result["text"].strip()


def test_exec_mode_failure_leaves_no_output(tmp_path: Path) -> None:
    samples, _ = sf.read(DEMO / "s03_clean.flac", dtype="int16")
    low_rate = tmp_path / "8k.wav"
    sf.write(low_rate, samples[::2], 8000, subtype="PCM_16")
    output = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "examples.systems.sphinx_asr", "--exec", str(low_rate), str(output)],
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert b"8000" in done.stderr
    assert not output.exists()


def test_null_system_round_trip(start) -> None:
    system = start("examples.systems.null_system")
    assert system.hello()["name"] == "null-system"
    started = time.perf_counter()
    for n in range(200):
        reply = system.item(f"id-{n}", Path("/nonexistent.flac"), timeout=5)
        assert reply == {"op": "result", "id": f"id-{n}", "output": {"text": ""}}
    assert time.perf_counter() - started < 5
    system.send({"op": "bye"})
    assert system.proc.wait(timeout=5) == 0
