"""Whose failure a lost SSH link is, and what a participant gains by faking one: nothing
(docs/security.md, "Failures have an owner").

- A system that kills its own SSH session after overrunning its budget (so that the
  controller sees the link drop and sends the item again, to be answered from a cache)
  is charged a crash: the machine answered a new connection at once, so its network was
  up. The item is not sent again.
- A network that really fails (the machine's cable pulled, tests/netns.py) is the
  venue's: the item is sent again, keeping its clock. A system that cuts its own
  network after overrunning gets the same treatment, and so gains nothing: the lost
  attempt's time is charged, and its cached answer is flagged as suspiciously fast.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from harness import read_journal
from harness.leaderboard import leaderboard
from harness.report import build_report
from tests.helpers import REPO, make_testset, read_outputs, run_site, toml_value
from tests.netns import remote_machine
from tests.sshd import Sshd

pytestmark = pytest.mark.sshd

FAKER = [sys.executable, str(REPO / "tests" / "systems" / "venue_faker.py")]


def _site(path: Path, options: dict[str, Any], env: dict[str, str], budget: float) -> Path:
    testset = make_testset(path.parent / "set", [(f"u{n}", 1600 + n, "x") for n in range(4)])
    lines = [
        "[site]",
        'name = "att"',
        'runs = "runs"',
        "[devices.team]",
        'transport = "ssh"',
        *(f"{k} = {toml_value(v)}" for k, v in options.items()),
        "[tasks.asr]",
        'kind = "asr"',
        f"testset = {toml_value(str(testset))}",
        f"budget = {toml_value({'seconds': budget, 'hang_seconds': 60.0})}",
        "[systems.faker]",
        'device = "team"',
        'tasks = ["asr"]',
        f"command = {toml_value(FAKER)}",
        f"env = {toml_value(env)}",
        "max_restarts = 20",
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_killing_its_own_session_is_the_participants_crash(tmp_path: Path, sshd: Sshd) -> None:
    env = {
        "FAKER_MODE": "kill-session",
        "FAKER_WORK": "2.0",
        "FAKER_CACHE": str(tmp_path / "cache"),
    }
    options = sshd.options(workdir=str(tmp_path / "remote"), link_timeout=2.0)
    run_dir, results = run_site(_site(tmp_path / "site.toml", options, env, budget=1.0))
    rows = read_outputs(run_dir, "asr", "faker")
    assert len(rows) == 4
    # Every item: a crash on its only sending, never a re-sent answer from the cache.
    for row in rows:
        assert row["verdict"] == "crashed", row
        assert row["attempt"] == 1, "the item was sent again: the cheater got a redo"
        assert "the participant's failure" in row["message"], row["message"]
        assert row["output"] is None
    events = [r["event"] for r in read_journal(run_dir / "journal.jsonl")]
    assert "link_lost" not in events


def _pull_when_asked(machine: Any, signal: Path, dark: float, stop: threading.Event) -> None:
    """Pull the machine's cable each time the system asks (or once an item is in flight),
    keep it out ``dark`` seconds, plug it back."""
    while not stop.is_set():
        if signal.exists():
            signal.unlink()
            machine.pull_cable()
            time.sleep(dark)
            machine.plug_cable()
        time.sleep(0.02)


@pytest.mark.parametrize("who", ["honest", "cheater"])
def test_a_pulled_cable_is_the_venues_and_the_item_keeps_its_clock(
    tmp_path: Path, who: str
) -> None:
    signal = tmp_path / "pull-the-cable"
    env = {"FAKER_CACHE": str(tmp_path / "cache"), "FAKER_SIGNAL": str(signal)}
    if who == "cheater":
        # Overruns its budget, then cuts its own network to get the item sent again.
        env |= {"FAKER_MODE": "go-dark", "FAKER_WORK": "2.0"}
        budget = 1.0
    else:
        env |= {"FAKER_MODE": "honest", "FAKER_WORK": "0.3"}
        budget = 30.0
    stop = threading.Event()
    with remote_machine(tmp_path / "machine") as machine:
        assert machine.sshd is not None
        options = machine.sshd.options(
            workdir=str(tmp_path / "remote"), link_timeout=2.0, connect_timeout=3.0
        )
        site_path = _site(tmp_path / "site.toml", options, env, budget=budget)
        puller = threading.Thread(target=_pull_when_asked, args=(machine, signal, 5.0, stop))
        puller.start()
        try:
            if who == "honest":
                # The venue's network fails under the second item.
                journal = tmp_path / "runs" / "att" / "journal.jsonl"
                threading.Thread(target=_cut_second_item, args=(journal, signal)).start()
            run_dir, results = run_site(site_path)
        finally:
            stop.set()
            puller.join()
    assert [r.failed for r in results] == [None]
    rows = {r["id"]: r for r in read_outputs(run_dir, "asr", "faker")}
    records = list(read_journal(run_dir / "journal.jsonl"))
    lost = [r for r in records if r["event"] == "link_lost"]
    assert lost, "the pulled cable was seen as a lost link"
    for record in lost:
        assert record["failure_class"] == "venue"
        assert "a new connection to" in record["reason"], record["reason"]
        assert record["seconds"] > 0
        row = rows[record["item"]]
        # Sent again, once, and its time includes what the lost attempt ran.
        assert row["attempt"] == record["attempt"] + 1
        assert row["resent"] == 1
        assert row["lost_seconds"] == pytest.approx(record["seconds"])
        assert row["seconds"] >= record["seconds"]
    board = {(r.task, r.system): r for r in leaderboard(run_dir)}
    report = build_report(run_dir)
    (job,) = report.jobs()
    audit = [line for line in job.verdict.lines if line.rule.startswith("audit: re-sent")]
    if who == "cheater":
        for record in lost:
            row = rows[record["item"]]
            # The answer came from the cache at once, but the item's time holds the 2 s of
            # work before the cable was cut: over its budget, as without the trick.
            assert record["seconds"] >= 2.0
            assert row["verdict"] == "over_budget", row
        assert audit and not audit[0].passed, "the cached answers are flagged"
        assert not job.verdict.valid
    else:
        assert all(row["verdict"] == "ok" for row in rows.values())
        assert audit and audit[0].passed, audit
        assert board[("asr", "faker")].crashes == 0


def _cut_second_item(journal: Path, signal: Path) -> None:
    """Ask for the cable to be pulled while the second item is in flight."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            records = list(read_journal(journal))
        except OSError:
            records = []
        if sum(1 for r in records if r["event"] == "dispatched") >= 2:
            time.sleep(0.1)
            signal.write_text("cut")
            return
        time.sleep(0.02)


def test_an_item_lost_three_times_is_recorded_failed_and_flagged(tmp_path: Path) -> None:
    """The venue-failure rule is bounded: the same item is sent again at most twice; the
    third loss records it as crashed, with its lost time, for the organizer to review."""
    env = {"FAKER_MODE": "honest", "FAKER_WORK": "0.3", "FAKER_CACHE": str(tmp_path / "c")}
    journal = tmp_path / "runs" / "att" / "journal.jsonl"
    with remote_machine(tmp_path / "machine") as machine:
        assert machine.sshd is not None
        options = machine.sshd.options(
            workdir=str(tmp_path / "remote"), link_timeout=2.0, connect_timeout=3.0
        )
        site_path = _site(tmp_path / "site.toml", options, env, budget=30.0)
        done = threading.Event()

        def pull_at_every_sending_of_u0() -> None:
            seen = 0
            while not done.is_set():
                try:
                    records = list(read_journal(journal))
                except OSError:
                    records = []
                sendings = [r for r in records if r["event"] == "dispatched" and r["item"] == "u0"]
                if len(sendings) > seen:
                    seen = len(sendings)
                    time.sleep(0.1)
                    machine.pull_cable()
                    time.sleep(5.0)
                    machine.plug_cable()
                time.sleep(0.02)

        puller = threading.Thread(target=pull_at_every_sending_of_u0)
        puller.start()
        try:
            run_dir, results = run_site(site_path)
        finally:
            done.set()
            puller.join()
    assert [r.failed for r in results] == [None]
    rows = {r["id"]: r for r in read_outputs(run_dir, "asr", "faker")}
    lost = [r for r in read_journal(run_dir / "journal.jsonl") if r["event"] == "link_lost"]
    assert [r["item"] for r in lost] == ["u0"] * 3
    assert [r["attempt"] for r in lost] == [1, 2, 3]
    flagged = rows["u0"]
    assert flagged["verdict"] == "crashed" and flagged["attempt"] == 3
    assert "lost on all 3 sendings" in flagged["message"]
    assert "flagged for the organizer" in flagged["message"]
    assert flagged["resent"] == 3
    assert flagged["seconds"] == pytest.approx(sum(r["seconds"] for r in lost))
    assert all(rows[f"u{n}"]["verdict"] == "ok" for n in (1, 2, 3))
    # The report lists every lost attempt and the item's charged time.
    (job,) = build_report(run_dir).jobs()
    listed = [f for f in job.failures if f.item == "u0"]
    assert [f.verdict for f in listed] == ["link_lost"] * 3 + ["re-sent, crashed"]
    assert all("charged" in f.message for f in listed[:3])
    assert "recorded" in listed[-1].message
