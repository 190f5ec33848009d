"""The PostgreSQL run store against a real server: journal order, idempotence, leases, restarts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from harness.store.journal import read_journal
from harness.store.postgres import PgRunStore, PgStoreError, Retry
from tests.helpers import FAKE_SERVE, make_testset, read_outputs, write_site
from tests.pg import Postgres

pytestmark = pytest.mark.postgres

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _record(i: int, **extra: Any) -> dict[str, Any]:
    return {"v": 1, "event": "completed", "task": "asr", "system": "s1", "item": f"u{i}", **extra}


def test_append_reads_back_in_order_and_a_repeated_record_id_is_written_once(
    pg: Postgres,
) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "demo") as store:
        rid = uuid.uuid4()
        assert store.append(_record(0), record_id=rid) == 1
        # The same record sent again (its commit acknowledgement was lost): not doubled.
        assert store.append(_record(0), record_id=rid) == 1
        for i in range(1, 5):
            store.append(_record(i))
        assert [r["item"] for r in store.records()] == ["u0", "u1", "u2", "u3", "u4"]
        assert store.last_seq() == 5
        assert [r["item"] for r in store.records(after=3)] == ["u3", "u4"]


def test_records_keep_every_byte_of_odd_outputs(pg: Postgres) -> None:
    dsn = pg.new_database()
    odd = {
        "v": 1,
        "event": "completed",
        "task": "mt",
        "system": "x",
        "item": "d1",
        "output": 'nul\u0000 tab\t 漢字 \U0001f600 \\ " end',
        "seconds": 0.1 + 0.2,
        "mono": 123456.78901234567,
        "nested": {"b": [1, None, True], "a": -0.0},
    }
    with PgRunStore(dsn, "odd") as store:
        store.append(odd)
        (back,) = list(store.records())
    assert back == odd
    assert list(back) == list(odd)  # key order kept too


def test_runs_are_kept_apart_and_paged_reads_return_everything(pg: Postgres) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "a") as a, PgRunStore(dsn, "b") as b:
        for i in range(4500):  # more than two pages
            a.append(_record(i))
        b.append(_record(0, system="other"))
        items = [r["item"] for r in a.records()]
        assert items == [f"u{i}" for i in range(4500)]
        assert [r["system"] for r in a.records("b")] == ["other"]
        assert len(list(a.records(job=("asr", "s1")))) == 4500
        assert list(a.records(job=("asr", "nobody"))) == []


def test_a_wrong_database_is_reported_at_once_not_waited_for(pg: Postgres) -> None:
    with pytest.raises(PgStoreError, match="does not exist") as err:
        PgRunStore(pg.dsn("no_such_db"), "x", retry=Retry(give_up_seconds=60))
    assert "[site] store" in str(err.value)


def test_a_missing_server_is_waited_for_then_given_up_on_with_a_clear_message() -> None:
    heard: list[str] = []
    dsn = "postgresql://postgres:secret@127.0.0.1:1/x"
    with pytest.raises(PgStoreError, match="gave up") as err:
        PgRunStore(dsn, "x", retry=Retry(give_up_seconds=0.3), on_wait=heard.append)
    assert heard and "waiting for PostgreSQL" in heard[0]
    assert "secret" not in str(err.value) and all("secret" not in h for h in heard)


def _jobs(n: int) -> list[tuple[str, str]]:
    return [("asr", f"s{i:02d}") for i in range(n)]


def test_two_stations_claiming_at_once_get_disjoint_jobs(pg: Postgres) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as setup:
        setup.add_jobs(_jobs(30))
        setup.add_jobs(_jobs(30))  # adding again changes nothing
    got: dict[str, list[tuple[str, str]]] = {"A": [], "B": []}
    start = threading.Barrier(2)

    def station(name: str) -> None:
        with PgRunStore(dsn, "r") as store:
            start.wait()
            while (claim := store.claim(name, lease_seconds=60)) is not None:
                got[name].append((claim.task, claim.system))

    threads = [threading.Thread(target=station, args=(n,)) for n in got]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not set(got["A"]) & set(got["B"])
    assert sorted(got["A"] + got["B"]) == _jobs(30)


def test_a_row_being_claimed_is_skipped_not_waited_for(pg: Postgres) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as store:
        store.add_jobs(_jobs(2))
        # Another station's claim transaction holds the first job's row right now.
        with psycopg.connect(dsn) as other:
            other.execute("SELECT 1 FROM onsite_jobs WHERE run = 'r' AND system = 's00' FOR UPDATE")
            claim = store.claim("B", lease_seconds=60)
            assert claim is not None and claim.system == "s01"
            assert store.claim("B", lease_seconds=60) is None
            other.rollback()
        again = store.claim("B", lease_seconds=60)
        assert again is not None and again.system == "s00"


def test_release_finished_jobs_are_never_claimed_again_unfinished_ones_are(pg: Postgres) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as store:
        store.add_jobs(_jobs(2))
        first = store.claim("A", 60)
        second = store.claim("A", 60)
        assert first and second
        assert store.heartbeat("A") == [("asr", "s00"), ("asr", "s01")]
        assert store.release("A", first.task, first.system, finished=True)
        assert store.release("A", second.task, second.system, finished=False)
        # Not A's any more: releasing again says so.
        assert not store.release("A", second.task, second.system, finished=True)
        again = store.claim("B", 60)
        assert again is not None and (again.system, again.claims) == ("s01", 2)
        assert store.claim("B", 60) is None
        with pytest.raises(ValueError):
            store.claim("B", 0)


def test_a_station_whose_lease_runs_out_loses_the_job_and_learns_it(pg: Postgres) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as a, PgRunStore(dsn, "r") as b:
        a.add_jobs(_jobs(1))
        assert a.claim("A", lease_seconds=0.3) is not None
        assert b.claim("B", lease_seconds=30) is None
        time.sleep(0.5)
        taken = b.claim("B", lease_seconds=30)
        assert taken is not None and taken.previous_station == "A" and taken.claims == 2
        assert a.heartbeat("A") == []
        assert not a.release("A", "asr", "s00", finished=True)
        assert b.heartbeat("B") == [("asr", "s00")]


_HOLDER = """
import sys, time
from harness.store.postgres import PgRunStore
store = PgRunStore(sys.argv[1], "r")
claim = store.claim("killed", lease_seconds=float(sys.argv[2]))
store.append({"event": "dispatched", "task": claim.task, "system": claim.system, "item": "u1"})
print(claim.system, flush=True)
while True:
    store.heartbeat("killed")
    time.sleep(0.1)
"""


def test_a_station_killed_with_sigkill_loses_its_job_when_the_lease_expires(
    pg: Postgres,
) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as survivor:
        survivor.add_jobs(_jobs(1))
        holder = subprocess.Popen(
            [sys.executable, "-c", _HOLDER, dsn, "1.5"],
            stdout=subprocess.PIPE,
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": REPO},
        )
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline().strip() == b"s00"
            # While the holder heartbeats, its job stays its own however long it runs.
            time.sleep(2.0)
            assert survivor.claim("survivor", 30) is None
        finally:
            holder.send_signal(signal.SIGKILL)
            holder.wait()
        assert survivor.claim("survivor", 30) is None  # the lease is still running
        deadline = time.monotonic() + 20
        claim = None
        while claim is None and time.monotonic() < deadline:
            time.sleep(0.2)
            claim = survivor.claim("survivor", 30)
        assert claim is not None and claim.previous_station == "killed"
        # The taker reads the job's records first, as resuming does.
        job = list(survivor.records(job=(claim.task, claim.system)))
        assert [r["event"] for r in job] == ["dispatched"]


def test_a_database_restart_while_appending_waits_and_loses_or_doubles_nothing(
    pg: Postgres,
) -> None:
    dsn = pg.new_database()
    heard: list[str] = []
    total = 300
    restarted = threading.Event()
    failure: list[BaseException] = []

    def station() -> None:
        try:
            with PgRunStore(dsn, "r", on_wait=heard.append) as store:
                for i in range(total):
                    store.append(_record(i))
                    if i == 50:
                        restarted.wait(30)  # appends 51.. meet the restarting server
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            failure.append(exc)

    thread = threading.Thread(target=station)
    thread.start()
    # Wait for record 50, then restart under the station's feet.
    with PgRunStore(dsn, "r") as reader:
        deadline = time.monotonic() + 30
        while reader.last_seq() < 51 and time.monotonic() < deadline:
            time.sleep(0.02)
    pg.stop()
    restarted.set()
    time.sleep(1.0)
    pg.start()
    thread.join(timeout=120)
    assert not failure, failure
    assert heard and "to append a journal record" in heard[0]
    with PgRunStore(dsn, "r") as reader:
        items = [r["item"] for r in reader.records()]
        assert items == [f"u{i}" for i in range(total)]
        assert reader.last_seq() == total


def _onsite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "CI": "1", "PYTHONPATH": REPO},
        timeout=120,
    )


def test_copy_run_round_trip_keeps_the_records_and_the_report(
    pg: Postgres, tmp_path: Path, plan_env: Any
) -> None:
    testset = make_testset(tmp_path / "set", [(f"k{i}", 1600 + i, "a b") for i in range(4)])
    plan = {1600 + i: {"text": "a b" if i % 2 else "a c"} for i in range(4)}
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}},
        name="rt",
    )
    assert _onsite("run", str(site)).returncode == 0
    original = tmp_path / "runs" / "rt"
    dsn = pg.new_database()

    into = _onsite("copy-run", str(original), dsn)
    assert into.returncode == 0, into.stderr
    assert into.stderr == ""
    assert "into run rt" in into.stdout
    # A second copy into the same run is refused, not doubled.
    again = _onsite("copy-run", str(original), dsn)
    assert again.returncode == 2 and "already holds records" in again.stderr

    back = tmp_path / "archive"
    # The old name still works, saying (in one line) to use the new one.
    out = _onsite("export-store", dsn, str(back), "--run", "rt")
    assert out.returncode == 0, out.stderr
    assert out.stderr == (
        "note: `onsite export-store` is now `onsite copy-run` (the same arguments); "
        "the old name will go away\n"
    )
    assert list(read_journal(back / "journal.jsonl")) == list(
        read_journal(original / "journal.jsonl")
    )
    assert (back / "site.toml").read_bytes() == (original / "site.toml").read_bytes()
    assert read_outputs(back, "asr", "fake") == read_outputs(original, "asr", "fake")
    with PgRunStore(dsn, "rt") as store:
        assert [(j["task"], j["system"], j["finished"]) for j in store.jobs()] == [
            ("asr", "fake", True)
        ]
    report_original = _onsite("report", str(original), "--json")
    report_back = _onsite("report", str(back), "--json")
    assert report_back.returncode == 0, report_back.stderr
    assert json.loads(report_back.stdout) == json.loads(report_original.stdout)

    # A copy never overwrites a run, and a run the database lacks is named.
    refused = _onsite("copy-run", dsn, str(back), "--run", "rt")
    assert refused.returncode == 2 and "not empty" in refused.stderr
    missing = _onsite("copy-run", dsn, str(tmp_path / "x"), "--run", "nope")
    assert missing.returncode == 2 and "no run named 'nope'" in missing.stderr
    both_dirs = _onsite("copy-run", str(original), str(tmp_path / "y"))
    assert both_dirs.returncode == 2 and "exactly one" in both_dirs.stderr


def test_leases_outlive_a_database_restart_and_a_heartbeat_waits_for_the_server(
    pg: Postgres,
) -> None:
    dsn = pg.new_database()
    heard: list[str] = []
    with PgRunStore(dsn, "r", on_wait=heard.append) as store:
        store.add_jobs(_jobs(2))
        assert store.claim("A", lease_seconds=60) is not None
        pg.restart(down_seconds=0.5)
        # The old connection died with the server: the heartbeat reconnects.
        assert store.heartbeat("A") == [("asr", "s00")]
        assert heard and "renew the leases of station A" in heard[0]
        pg.stop()
        beat: list[list[tuple[str, str]]] = []
        thread = threading.Thread(target=lambda: beat.append(store.heartbeat("A")))
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive() and not beat  # waiting while the server is down
        pg.start()
        thread.join(timeout=60)
        assert beat == [[("asr", "s00")]]
        other = store.claim("B", lease_seconds=60)
        assert other is not None and other.system == "s01"
