"""The panel's audio is found from any working directory and in a copy of the run.

A panel is planned with a relative run directory from one working directory, then
served by `onsite judge` (a real process, real HTTP) from another working directory,
and from a copy of the run directory made after planning, as on a judging machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from harness.judge.store import panel_path
from tests.helpers import REPO
from tests.judge_helpers import TTS_TASK, call, copy_run, make_tts_run, serving


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _onsite(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@contextmanager
def _panel_process(cwd: Path, run: str, test: str) -> Iterator[tuple[str, dict[str, str]]]:
    """`onsite judge RUN --listen 127.0.0.1:PORT` started in ``cwd``; base URL and links."""
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "judge", run, "--test", test, "--task", TTS_TASK]
        + ["--listen", f"127.0.0.1:{port}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        links: dict[str, str] = {}
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("J"):
                judge, link = line.split()
                links[judge] = link.rsplit("/", 1)[1]
            if line.startswith("serving"):
                break
        else:
            assert proc.stderr is not None
            pytest.fail(f"the panel did not start: {proc.stderr.read()}")
        base = f"http://127.0.0.1:{port}"
        for _ in range(100):  # uvicorn binds just after the line is printed
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield base, links
    finally:
        proc.terminate()
        proc.wait(20)


def _every_sample(base: str, token: str) -> list[int]:
    """The status of every audio sample of the judge's first trial (a pair: A and B)."""
    status, view = call(base, "GET", f"/api/judge/{token}/next")
    assert status == 200 and not view["done"], view
    statuses = []
    for url in view["media"]:
        status, audio = call(base, "GET", url)
        statuses.append(status)
        assert status != 200 or audio[:4] == b"RIFF"
    return statuses


def test_paths_are_kept_relative_to_the_run_directory(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    rel = os.path.relpath(run, tmp_path)
    done = _onsite(tmp_path, "judge", rel, "--test", "pair", "--task", TTS_TASK)
    # No --judges: refused, nothing left behind; with it, the plan is built.
    assert done.returncode == 2
    done = _onsite(
        tmp_path, "judge", rel, "--test", "pair", "--task", TTS_TASK, "--judges", "2", "--plan-only"
    )
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(panel_path(run, TTS_TASK, "pair")) as db:
        paths = [p for (p,) in db.execute("SELECT path FROM media")]
    assert paths and all(not Path(p).is_absolute() for p in paths)
    assert all((run / p).is_file() for p in paths), paths


def test_served_from_another_working_directory(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path / "planned")
    planning = tmp_path / "planned"
    done = _onsite(
        planning,
        *("judge", run.name, "--test", "pair", "--task", TTS_TASK, "--judges", "2"),
        "--plan-only",
    )
    assert done.returncode == 0, done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with _panel_process(elsewhere, str(run), "pair") as (base, links):
        assert _every_sample(base, links["J1"]) == [200, 200]
    # And with a relative path from a third directory (../planned/RUN).
    with _panel_process(elsewhere, os.path.relpath(run, elsewhere), "pair") as (base, links):
        assert _every_sample(base, links["J2"]) == [200, 200]


def test_served_from_a_copy_of_the_run_directory(tts_run: Path, tmp_path: Path) -> None:
    planning = tmp_path / "venue"
    run = copy_run(tts_run, planning)
    done = _onsite(
        planning,
        *("judge", run.name, "--test", "pair", "--task", TTS_TASK, "--judges", "1"),
        "--plan-only",
    )
    assert done.returncode == 0, done.stderr
    # The run directory goes to the judging machine; the venue's copy is gone.
    judging_machine = tmp_path / "judging-machine"
    judging_machine.mkdir()
    shutil.copytree(run, judging_machine / "the-run")
    shutil.rmtree(run)
    with _panel_process(judging_machine, "the-run", "pair") as (base, links):
        assert _every_sample(base, links["J1"]) == [200, 200]


def test_a_panel_planned_before_the_fix_is_still_served(tts_run: Path, tmp_path: Path) -> None:
    """Paths kept relative to the old working directory: found under the run directory."""
    run = copy_run(tts_run, tmp_path / "old")
    store_path = panel_path(run, TTS_TASK, "pair")
    with serving(run, TTS_TASK, "pair", judges=1, seed=0):
        pass
    with sqlite3.connect(store_path) as db:
        db.execute("UPDATE media SET path = 'somewhere/' || path")
        db.execute("DELETE FROM meta WHERE key = 'media_paths'")
    moved = Path(shutil.copytree(run, tmp_path / "moved"))
    with serving(moved, TTS_TASK, "pair") as (base, store):
        assert _every_sample(base, store.tokens()["J1"]) == [200, 200]
