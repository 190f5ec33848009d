"""kill -9 of the controller at any moment, then resume: nothing lost, nothing repeated."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import psutil

from harness import RunState, read_journal
from tests.helpers import FAKE_SERVE, REPO, make_testset, read_outputs, write_site

ITEMS = 12


def start_controller(site: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "CI": "1"},
    )


def completed_count(journal: Path) -> int:
    return sum(1 for r in read_journal(journal) if r["event"] == "completed")


def test_kill_9_mid_run_then_resume_each_item_exactly_once(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [(f"k{i:02d}", 1600 + i, "x") for i in range(ITEMS)])
    plan = {1600 + i: {"delay": 0.15, "text": f"out{i}"} for i in range(ITEMS)}
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}},
        budget={"seconds": 5, "hang_seconds": 5},
    )
    run_dir = tmp_path / "runs" / "t"
    journal = run_dir / "journal.jsonl"
    rng = random.Random(7)
    in_flight_at_kill: set[str] = set()
    kills = 0
    # Kill the controller three times at random moments, each after some progress.
    for target in (2, 5, 8):
        proc = start_controller(site)
        deadline = time.monotonic() + 60
        while completed_count(journal) < target and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.15))
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        # The system dies with its controller instead of running on unsupervised.
        gone, alive = psutil.wait_procs(children, timeout=5)
        assert not alive, f"systems outlived the killed controller: {alive}"
        state = RunState.from_journal(journal)
        dispatched = {r["item"] for r in state.records if r["event"] == "dispatched"}
        in_flight_at_kill |= dispatched - set(state.completed.get(("asr", "fake"), {}))

    proc = start_controller(site)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err.decode()

    rows = read_outputs(run_dir, "asr", "fake")
    counts = Counter(row["id"] for row in rows)
    assert sorted(counts) == [f"k{i:02d}" for i in range(ITEMS)]
    assert set(counts.values()) == {1}, f"items repeated in outputs: {counts}"
    for row in rows:
        assert row["verdict"] == "ok"
        assert row["output"] == {"text": f"out{int(row['id'][1:])}"}
    assert in_flight_at_kill, "the kills should have caught at least one item in flight"
    attempts = {row["id"]: row["attempt"] for row in rows}
    for item in in_flight_at_kill:
        assert attempts[item] >= 2, f"{item} was in flight at a kill but kept attempt 1"
    # The journal kept every completion of every session: exactly one per item.
    completions = Counter(r["item"] for r in read_journal(journal) if r["event"] == "completed")
    assert set(completions.values()) == {1}
    sessions = {r["session"] for r in read_journal(journal)}
    assert len(sessions) == kills + 1


def test_torn_last_journal_line_is_tolerated(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("t1", 1600, "x"), ("t2", 3200, "x")])
    site = write_site(tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE}})
    proc = start_controller(site)
    proc.communicate(timeout=60)
    journal = tmp_path / "runs" / "t" / "journal.jsonl"
    with open(journal, "ab") as fh:
        fh.write(b'{"v":1,"event":"completed","task":"asr","sys')  # a power cut mid-record
    proc = start_controller(site)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    records = list(read_journal(journal))
    assert records[-1]["event"] == "session_finished"
    assert len(read_outputs(tmp_path / "runs" / "t", "asr", "fake")) == 2
    assert json.loads(journal.read_text().splitlines()[-1])["event"] == "session_finished"


def test_second_controller_on_the_same_run_is_refused(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("l1", 1600, "x")])
    # Slow enough that the first is still at work when the second starts, whatever the load.
    plan = plan_env({1600: {"delay": 20}})
    site = write_site(
        tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE, "env": plan}}
    )
    first = start_controller(site)
    journal = tmp_path / "runs" / "t" / "journal.jsonl"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
        r["event"] == "dispatched" for r in read_journal(journal)
    ):
        time.sleep(0.05)
    second = start_controller(site)
    _, err = second.communicate(timeout=30)
    assert second.returncode == 1
    assert b"in use by another onsite controller" in err
    first.kill()
    first.wait()
