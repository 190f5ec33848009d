"""One name, one station: a station name is held by one live `onsite run --station` at a time.

Two stations of one name (cloned venue PCs share a host name, the default name) once ran
every job twice. A station now registers its name in the database when it starts; a
second live station of that name is refused, naming the host and pid that hold it. The
tests start real `onsite run` processes against a real PostgreSQL server, each "machine"
with a run directory of its own (as two PCs have), and check that no item is completed
twice.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
import pytest

from harness.errors import LeaseLost
from harness.store.postgres import PgRunStore, Registration
from tests.helpers import REPO
from tests.pg import Postgres
from tests.test_pg_stations import _exactly_once, _records, _site, _wait_for

pytestmark = pytest.mark.postgres

TIMEOUT = 300.0
HOST = socket.gethostname()


def _station(
    site: Path,
    machine: Path,
    name: str | None,
    lease: float = 30.0,
    max_jobs: int = 2,
    new_pid_namespace: bool = False,
) -> subprocess.Popen[str]:
    """`onsite run SITE [--station NAME]` as on a machine of its own (its own run directory).

    ``new_pid_namespace`` runs it in a PID namespace of its own, so that it cannot see
    the processes of the others, as a station on another PC cannot.
    """
    command = [sys.executable, "-m", "harness.cli", "run", str(site), "--runs", str(machine)]
    if name is not None:
        command += ["--station", name]
    command += ["--lease-seconds", str(lease), "--max-jobs", str(max_jobs)]
    if new_pid_namespace:
        # With a /proc of its own, as a PC has: bubblewrap finds its children there.
        command = ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *command]
    return subprocess.Popen(
        command,
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "CI": "1"},
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=TIMEOUT)
    return proc.returncode, out, err


def _registrations(dsn: str) -> list[tuple[str, str, int]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute("SELECT name, host, pid FROM onsite_stations ORDER BY name").fetchall()
    return [(str(n), str(h), int(p)) for n, h, p in rows]


def _sessions_started(dsn: str) -> int:
    return sum(1 for r in _records(dsn) if r["event"] == "session_started")


def test_a_second_live_station_of_the_same_name_is_refused_naming_the_holder(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 16
    site = _site(tmp_path, items, delay=0.2, store=dsn)
    first = _station(site, tmp_path / "pc1", "room-a")
    try:
        _wait_for(dsn, 2)
        second = _station(site, tmp_path / "pc2", "room-a")
        rc, out, err = _finish(second)
    finally:
        rc_first, out_first, err_first = _finish(first)
    assert rc == 1, out + err
    assert "room-a" in err and f"host {HOST}" in err and f"pid {first.pid}" in err, err
    assert "--station" in err and "stop the station" in err, err
    assert "30 s" in err, err  # how long a dead holder's name stays taken
    assert "Traceback" not in err
    # The refused station wrote nothing to the run and did not disturb the holder.
    assert _sessions_started(dsn) == 1
    assert rc_first == 0, out_first + err_first
    _exactly_once(dsn, items)
    assert _registrations(dsn) == []  # the holder gave the name back when it ended


def test_two_cloned_pcs_with_one_host_name_and_no_station_name_run_each_item_once(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 16
    site = _site(tmp_path, items, delay=0.2, store=dsn)
    first = _station(site, tmp_path / "pc1", None)
    try:
        _wait_for(dsn, 2)
        # The clone: the same host name, another machine (it cannot see the first's pid).
        clone = _station(site, tmp_path / "pc2", None, new_pid_namespace=True)
        rc, out, err = _finish(clone)
    finally:
        rc_first, out_first, err_first = _finish(first)
    assert rc == 1, out + err
    assert f"station name {HOST!r}" in err and f"host {HOST}" in err, err
    assert "host name" in err and "--station" in err, err  # the default name is explained
    assert rc_first == 0, out_first + err_first
    _exactly_once(dsn, items)


def test_a_name_given_back_at_a_normal_end_is_free_for_another_machine_at_once(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 4
    site = _site(tmp_path, items, delay=0.0, store=dsn)
    # A lease of an hour: only the name given back lets the next station in now.
    rc, out, err = _finish(_station(site, tmp_path / "pc1", "room-a", lease=3600))
    assert rc == 0, out + err
    assert _registrations(dsn) == []
    # On another machine (it cannot see the first's pid, so cannot tell it is gone).
    rc, out, err = _finish(
        _station(site, tmp_path / "pc2", "room-a", lease=3600, new_pid_namespace=True)
    )
    assert rc == 0, out + err
    assert _sessions_started(dsn) == 2
    _exactly_once(dsn, items)


def test_a_station_stopped_with_sigterm_gives_its_name_back(pg: Postgres, tmp_path: Path) -> None:
    dsn = pg.new_database()
    site = _site(tmp_path, 16, delay=0.3, store=dsn)
    first = _station(site, tmp_path / "pc1", "room-a", lease=3600)
    _wait_for(dsn, 2)
    first.send_signal(signal.SIGTERM)  # as an operator's Ctrl-C
    rc, out, err = _finish(first)
    assert rc == 130, out + err
    assert _registrations(dsn) == []
    rc, out, err = _finish(
        _station(site, tmp_path / "pc2", "room-a", lease=3600, new_pid_namespace=True)
    )
    assert rc == 0, out + err
    _exactly_once(dsn, 16)


def test_a_name_held_by_a_dead_machine_is_refused_until_it_expires_then_taken_over(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 4
    site = _site(tmp_path, items, delay=0.0, store=dsn)
    with PgRunStore(dsn, "venue") as store:
        # A station on another PC registered the name with a 4 s lease, then died.
        assert (
            store.register_station(
                "room-a", "dead-one", host="pc-7", pid=4242, process="elsewhere", lease_seconds=4
            )
            is None
        )
    rc, out, err = _finish(_station(site, tmp_path / "pc1", "room-a"))
    assert rc == 1, out + err
    assert "host pc-7" in err and "pid 4242" in err, err
    assert "4 s" in err, err
    assert _sessions_started(dsn) == 0
    deadline = time.monotonic() + 60
    while True:
        rc, out, err = _finish(_station(site, tmp_path / "pc1", "room-a"))
        if rc != 1 or "host pc-7" not in err or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert rc == 0, out + err
    _exactly_once(dsn, items)
    assert _registrations(dsn) == []


def test_a_killed_station_restarted_on_the_same_machine_takes_its_name_back_at_once(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 10
    site = _site(tmp_path, items, delay=0.2, store=dsn)
    first = _station(site, tmp_path / "pc1", "room-a", lease=3600)
    _wait_for(dsn, 3)
    os.killpg(first.pid, signal.SIGKILL)
    first.communicate(timeout=60)
    assert [n for n, _, _ in _registrations(dsn)] == ["room-a"]  # never given back
    # Its lease is an hour, yet this machine sees that the holder's process is gone.
    rc, out, err = _finish(_station(site, tmp_path / "pc1", "room-a", lease=3600))
    assert rc == 0, out + err
    _exactly_once(dsn, items)


def test_stations_of_one_name_started_at_the_same_instant_leave_exactly_one_running(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 10
    site = _site(tmp_path, items, delay=0.3, store=dsn)
    procs = [_station(site, tmp_path / f"pc{i}", "room-a") for i in range(3)]
    ends = [_finish(p) for p in procs]
    ran = [e for e in ends if e[0] == 0]
    refused = [e for e in ends if e[0] == 1 and "is held by a live station" in e[2]]
    assert len(ran) == 1 and len(refused) == 2, ends
    _exactly_once(dsn, items)
    assert _sessions_started(dsn) == 1


def test_registering_one_name_from_many_threads_at_once_lets_exactly_one_in(
    pg: Postgres,
) -> None:
    dsn = pg.new_database()
    threads = 6
    stores = [PgRunStore(dsn, "venue") for _ in range(threads)]
    try:
        for round_ in range(15):
            name = f"room-{round_}"
            barrier = threading.Barrier(threads)
            answers: list[Registration | None] = [None] * threads
            won: list[bool] = [False] * threads

            def register(
                i: int,
                name: str,
                barrier: threading.Barrier,
                answers: list[Registration | None],
                won: list[bool],
            ) -> None:
                barrier.wait()
                answer = stores[i].register_station(
                    name, f"i{i}", host=f"pc{i}", pid=100 + i, process=f"p{i}", lease_seconds=60
                )
                answers[i] = answer
                won[i] = answer is None

            workers = [
                threading.Thread(target=register, args=(i, name, barrier, answers, won))
                for i in range(threads)
            ]
            for w in workers:
                w.start()
            for w in workers:
                w.join(timeout=60)
            assert sum(won) == 1, (round_, answers)
            winner = won.index(True)
            # Every loser was told who holds the name: the winner.
            assert all(a is not None and a.instance == f"i{winner}" for a in answers if a), answers
            holder = stores[0].station_holder(name)
            assert (
                holder is not None and holder.host == f"pc{winner}" and holder.pid == 100 + winner
            )
    finally:
        for store in stores:
            store.close()


def test_a_station_that_lost_its_name_can_neither_claim_nor_write_nor_renew(
    pg: Postgres,
) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as a, PgRunStore(dsn, "r") as b:
        a.add_jobs([("asr", "s1"), ("asr", "s2")])
        for _ in range(2):  # the holder itself registering again is no conflict
            assert (
                a.register_station("X", "old", host="pc1", pid=1, process="p1", lease_seconds=0.3)
                is None
            )
        jobs = [("asr", "s1")]
        assert a.claim_in("X", 0.3, jobs, jobs, instance="old") is not None
        record = {"event": "dispatched", "task": "asr", "system": "s1", "item": "u1"}
        assert a.append(record, holder="X", instance="old") == 1
        time.sleep(0.6)
        # Expired but not taken: the holder (say, back from a long pause) goes on.
        assert a.heartbeat("X", instance="old") == [("asr", "s1")]
        time.sleep(0.6)
        assert (
            b.register_station("X", "new", host="pc2", pid=2, process="p2", lease_seconds=30)
            is None
        )
        # The old instance learns it lost the name, and can do nothing more under it.
        assert a.heartbeat("X", instance="old") is None
        assert a.claim_in("X", 30, [("asr", "s2")], [("asr", "s2")], instance="old") is None
        with pytest.raises(LeaseLost):
            a.append({**record, "item": "u2"}, holder="X", instance="old")
        assert not a.unregister_station("X", "old")
        holder = b.station_holder("X")
        assert holder is not None and holder.instance == "new" and holder.host == "pc2"
        # The new holder takes the name's job back at once and writes under it.
        taken = b.claim_in("X", 30, jobs, jobs, instance="new")
        assert taken is not None and taken.system == "s1"
        assert b.append({**record, "item": "u3"}, holder="X", instance="new") == 2
        assert not a.release("X", "asr", "s1", finished=True, instance="old")
        assert b.heartbeat("X", instance="new") == [("asr", "s1")]
        assert [r["item"] for r in a.records()] == ["u1", "u3"]


def test_a_live_holder_is_refused_and_a_name_given_back_is_free(pg: Postgres) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as a, PgRunStore(dsn, "r") as b, PgRunStore(dsn, "other") as c:
        assert (
            a.register_station("X", "one", host="pc1", pid=11, process="p", lease_seconds=30)
            is None
        )
        held = b.register_station("X", "two", host="pc2", pid=22, process="q", lease_seconds=30)
        assert held is not None and (held.host, held.pid, held.instance) == ("pc1", 11, "one")
        assert held.lease_seconds == 30 and 0 <= held.seen_seconds_ago < 30
        # Another run's station of the same name is another station.
        assert (
            c.register_station("X", "three", host="pc3", pid=3, process="r", lease_seconds=30)
            is None
        )
        # The refused one cannot give back a name it does not hold.
        assert not b.unregister_station("X", "two")
        assert a.unregister_station("X", "one")
        assert b.station_holder("X") is None
        assert (
            b.register_station("X", "two", host="pc2", pid=22, process="q", lease_seconds=30)
            is None
        )


def test_a_suspended_station_whose_name_was_taken_over_stops_and_says_so(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 12
    site = _site(tmp_path, items, delay=0.3, store=dsn, systems=("s1", "s2"))
    first = _station(site, tmp_path / "pc1", "room-a", lease=2.0)
    _wait_for(dsn, 3)
    os.killpg(first.pid, signal.SIGSTOP)  # suspended: no heartbeat, no progress
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            rc, out, err = _finish(_station(site, tmp_path / "pc2", "room-a", lease=2.0))
            if rc != 1 or "is held by a live station" not in err:
                break
            assert time.monotonic() < deadline, err
            time.sleep(0.3)
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    assert rc == 0, out + err
    rc_first, out_first, err_first = _finish(first)
    assert rc_first == 1, out_first + err_first
    said = out_first + err_first
    assert "lost its name" in said and "claims no more jobs" in said, said
    _exactly_once(dsn, items, systems=2)
    records = _records(dsn)
    first_session = next(r["session"] for r in records if r["event"] == "session_started")
    second_start = next(
        i
        for i, r in enumerate(records)
        if r["event"] == "session_started" and r["session"] != first_session
    )
    late = [
        r
        for r in records[second_start:]
        if r["session"] == first_session and r.get("system") is not None
    ]
    assert late == [], late


_SCHEMA_BEFORE_NAMES = """
CREATE TABLE onsite_runs (
    run text PRIMARY KEY, last_seq bigint NOT NULL DEFAULT 0, site_toml text, meta json,
    created timestamptz NOT NULL DEFAULT now());
CREATE TABLE onsite_records (
    run text NOT NULL REFERENCES onsite_runs (run), seq bigint NOT NULL, rid uuid NOT NULL,
    event text NOT NULL, task text, system text, body json NOT NULL,
    PRIMARY KEY (run, seq), UNIQUE (run, rid));
CREATE TABLE onsite_jobs (
    run text NOT NULL REFERENCES onsite_runs (run), task text NOT NULL, system text NOT NULL,
    finished boolean NOT NULL DEFAULT false, station text, lease_seconds double precision,
    lease_until timestamptz, claims integer NOT NULL DEFAULT 0,
    PRIMARY KEY (run, task, system));
INSERT INTO onsite_runs (run) VALUES ('venue');
INSERT INTO onsite_jobs (run, task, system, station, lease_seconds, lease_until, claims)
VALUES ('venue', 'asr', 's1', 'room-a', 30, now() + interval '1 hour', 1);
"""


def test_a_database_made_before_station_names_gets_them_and_its_old_lease_is_taken_back(
    pg: Postgres,
) -> None:
    dsn = pg.new_database()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(_SCHEMA_BEFORE_NAMES)
    with PgRunStore(dsn, "venue") as store:
        assert (
            store.register_station(
                "room-a", "new", host="pc1", pid=1, process=None, lease_seconds=30
            )
            is None
        )
        # The job the name held before names were registered is the name's: taken back.
        jobs = [("asr", "s1")]
        claim = store.claim_in("room-a", 30, jobs, jobs, instance="new")
        assert claim is not None and claim.claims == 2
        assert store.heartbeat("room-a", instance="new") == jobs
