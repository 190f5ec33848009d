"""Several operator stations sharing one run in a real PostgreSQL server (`onsite run --station`).

Each station is a real `onsite run` process; the tests kill them with SIGKILL, restart
them and restart the database under them, and check that every item is completed
exactly once and that the results equal a single-station run of the same site.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from harness.errors import LeaseLost
from harness.store.postgres import PgRunStore
from tests.helpers import FAKE_SERVE, REPO, make_testset, onsite, read_outputs, toml_value
from tests.pg import Postgres

pytestmark = pytest.mark.postgres

SYSTEMS = ("s1", "s2", "s3", "s4")
TIMEOUT = 300.0


def _site(
    tmp: Path,
    items: int,
    delay: float,
    store: str | None,
    name: str = "venue",
    systems: tuple[str, ...] = SYSTEMS,
) -> Path:
    """One ASR task; each system on a device of its own; each item answers its own text."""
    testset = make_testset(
        tmp / "ts", [(f"u{i:03d}", 800 + 10 * i, f"word{i % 7}") for i in range(items)]
    )
    plan = {str(800 + 10 * i): {"delay": delay, "text": f"word{i % 5}"} for i in range(items)}
    lines = ["[site]", f'name = "{name}"', 'runs = "runs"']
    if store is not None:
        lines.append(f"store = {json.dumps(store)}")
    lines += [
        "",
        "[tasks.asr]",
        'kind = "asr"',
        f"testset = {json.dumps(str(testset))}",
        "budget = { seconds = 30.0, hang_seconds = 30.0 }",
        "",
    ]
    for system in systems:
        lines += [f"[devices.d{system}]", 'transport = "local"', ""]
        lines += [
            f"[systems.{system}]",
            f'device = "d{system}"',
            'tasks = ["asr"]',
            f"command = {toml_value(FAKE_SERVE)}",
            f"env = {toml_value({'FAKE_PLAN': json.dumps(plan)})}",
            "",
        ]
    path = tmp / f"{name}.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _station(site: Path, name: str, lease: float = 3.0, max_jobs: int = 2) -> subprocess.Popen[str]:
    """`onsite run SITE --station NAME` in a process group of its own (to kill it whole)."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "run",
            str(site),
            "--station",
            name,
            "--lease-seconds",
            str(lease),
            "--max-jobs",
            str(max_jobs),
        ],
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


def _kill(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the station and its systems: nothing of it runs any more."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)


def _records(dsn: str, run: str = "venue") -> list[dict[str, Any]]:
    with PgRunStore(dsn, run) as store:
        return list(store.records())


def _completed(dsn: str) -> list[dict[str, Any]]:
    return [r for r in _records(dsn) if r["event"] == "completed"]


def _wait_for(dsn: str, count: int, what: str = "completed") -> None:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        with psycopg.connect(dsn) as conn:
            made = conn.execute("SELECT to_regclass('onsite_records') IS NOT NULL").fetchone()
            row = (
                conn.execute(
                    "SELECT count(*) FROM onsite_records WHERE event = %s", [what]
                ).fetchone()
                if made and made[0]
                else None
            )
        if row and row[0] >= count:
            return
        time.sleep(0.1)
    raise AssertionError(f"fewer than {count} {what} records after {TIMEOUT} s")


def _exactly_once(dsn: str, items: int, systems: int = len(SYSTEMS)) -> list[dict[str, Any]]:
    done = _completed(dsn)
    counts = Counter((r["task"], r["system"], r["item"]) for r in done)
    assert set(counts.values()) == {1}, [k for k, n in counts.items() if n > 1]
    assert len(counts) == items * systems
    return done


def _stations_of(records: list[dict[str, Any]]) -> set[str]:
    return {r["session"].rsplit("-", 1)[0] for r in records}


def _answers(outputs: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(o["id"], o["verdict"], json.dumps(o["output"], sort_keys=True)) for o in outputs]


def _quality(report: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What a leaderboard row says about quality and completion (not the timing)."""
    keep = ("task", "system", "completed", "total", "headline", "quality", "verdicts")
    return [tuple(json.dumps(row.get(k), sort_keys=True) for k in keep) for row in report]


def test_two_stations_share_a_run_each_item_once_with_the_results_of_one_directory_run(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 20
    site = _site(tmp_path, items, delay=0.1, store=dsn)
    a, b = _station(site, "A"), _station(site, "B")
    (rc_a, out_a, err_a), (rc_b, out_b, err_b) = _finish(a), _finish(b)
    assert rc_a == 0, out_a + err_a
    assert rc_b == 0, out_b + err_b
    done = _exactly_once(dsn, items)
    # Both stations worked: each claimed some of the four jobs.
    assert _stations_of(done) == {"A", "B"}
    with PgRunStore(dsn, "venue") as store:
        jobs = store.jobs()
    assert all(j["finished"] and j["station"] is None for j in jobs), jobs

    # The same site in one directory run, without a store.
    single_dir = tmp_path / "single"
    single_dir.mkdir()
    single = _site(single_dir, items, delay=0.1, store=None)
    ran = onsite("run", str(single))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    single_run = single_dir / "runs" / "venue"

    exported = tmp_path / "exported"
    out = onsite("copy-run", dsn, str(exported), "--run", "venue")
    assert out.returncode == 0, out.stderr
    for system in SYSTEMS:
        assert _answers(read_outputs(exported, "asr", system)) == _answers(
            read_outputs(single_run, "asr", system)
        )
    # The last station to end left every job's outputs in its own directory too.
    local = {name: tmp_path / "runs" / "venue" / "stations" / name for name in ("A", "B")}
    assert any(
        all(
            _answers(read_outputs(d, "asr", s)) == _answers(read_outputs(single_run, "asr", s))
            for s in SYSTEMS
        )
        for d in local.values()
    )
    assert not (local["A"] / "journal.jsonl").exists()  # the records are in the database
    assert (local["A"] / "logs" / "asr").is_dir() or (local["B"] / "logs" / "asr").is_dir()

    # `onsite report` reads the database run as it reads a directory.
    from_db = onsite("report", f"{dsn}?run=venue", "--json")
    assert from_db.returncode == 0, from_db.stderr
    from_dir = onsite("report", str(single_run), "--json")
    assert _quality(json.loads(from_db.stdout)) == _quality(json.loads(from_dir.stdout))
    exported_trn = onsite(
        "export", f"{dsn}?run=venue", "--task", "asr", "--system", "s2", "--format", "trn"
    )
    single_trn = onsite(
        "export", str(single_run), "--task", "asr", "--system", "s2", "--format", "trn"
    )
    assert exported_trn.returncode == 0, exported_trn.stderr
    assert exported_trn.stdout == single_trn.stdout and "word" in single_trn.stdout
    # `onsite score --run` reads the database run too, with the directory run's numbers.
    scored = [
        onsite("score", "asr", "--run", run, "--task", "asr", "--system", "s2", "--json")
        for run in (f"{dsn}?run=venue", str(single_run))
    ]
    assert all(s.returncode == 0 for s in scored), [s.stderr for s in scored]
    assert json.loads(scored[0].stdout) == json.loads(scored[1].stdout)
    status = onsite("status", f"{dsn}?run=venue")
    assert status.returncode == 0, status.stderr
    assert "s4" in status.stdout
    assert "no controller is running" in status.stdout  # no station holds a lease now
    watched = onsite("status", f"{dsn}?run=venue", "--watch", "--until-stopped")
    assert watched.returncode == 0, watched.stderr
    # While any station holds a live lease, a reader of the database sees a run going on.
    with PgRunStore(dsn, "venue") as store:
        store.add_jobs([("asr", "held")])
        assert store.claim("C", lease_seconds=3600) is not None
        running = onsite("status", f"{dsn}?run=venue")
        assert store.release("C", "asr", "held", finished=True)
    assert running.returncode == 0, running.stderr
    assert "a controller is running" in running.stdout


def test_a_station_killed_mid_item_has_its_jobs_finished_by_the_other_after_the_lease(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 10
    site = _site(tmp_path, items, delay=0.3, store=dsn)
    a = _station(site, "A", lease=3.0)
    _wait_for(dsn, 6)
    _wait_for(dsn, 1, "dispatched")
    _kill(a)
    with PgRunStore(dsn, "venue") as store:
        held = [(j["task"], j["system"]) for j in store.jobs() if j["station"] == "A"]
    assert held, "A held no job when it was killed"
    dispatched = Counter(
        (r["system"], r["item"]) for r in _records(dsn) if r["event"] == "dispatched"
    )
    b = _station(site, "B", lease=3.0)
    rc, out, err = _finish(b)
    assert rc == 0, out + err
    assert "takes over" in out
    done = _exactly_once(dsn, items)
    assert _stations_of(done) == {"A", "B"}
    # An item A had in flight was sent again by B as its next attempt, and kept once.
    redone = [
        r for r in done if (r["system"], r["item"]) in dispatched and r["session"].startswith("B-")
    ]
    assert redone, "no item A had in flight was sent again"
    assert all(r["attempt"] == 2 for r in redone), redone
    with PgRunStore(dsn, "venue") as store:
        claims = {(j["task"], j["system"]): j["claims"] for j in store.jobs()}
    assert all(claims[job] >= 2 for job in held)


def test_a_frozen_station_whose_job_was_taken_over_writes_nothing_more_when_it_wakes(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 12
    site = _site(tmp_path, items, delay=0.3, store=dsn, systems=("s1",))
    a = _station(site, "A", lease=2.0)
    _wait_for(dsn, 3)
    os.killpg(a.pid, signal.SIGSTOP)  # frozen mid-item: no heartbeat, no progress
    try:
        b = _station(site, "B", lease=2.0)
        rc_b, out_b, err_b = _finish(b)
    finally:
        os.killpg(a.pid, signal.SIGCONT)
    assert rc_b == 0, out_b + err_b
    assert "takes over asr/s1 from station A" in out_b
    rc_a, out_a, err_a = _finish(a)
    # A wakes with its item answered: the record is refused, A stops the job and says so.
    assert rc_a == 0, out_a + err_a
    assert "no longer holds job asr/s1" in out_a, out_a
    _exactly_once(dsn, items, systems=1)
    records = _records(dsn)
    first_b = next(i for i, r in enumerate(records) if r["session"].startswith("B-"))
    late = [
        r for r in records[first_b:] if r["session"].startswith("A-") and r.get("system") == "s1"
    ]
    assert late == []


def test_both_stations_killed_and_restarted_finish_each_item_once(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 10
    site = _site(tmp_path, items, delay=0.2, store=dsn)
    a, b = _station(site, "A"), _station(site, "B")
    _wait_for(dsn, 8)
    _kill(a)
    _kill(b)
    # Restarted under the same names, they take their own jobs back at once.
    a, b = _station(site, "A"), _station(site, "B")
    (rc_a, out_a, err_a), (rc_b, out_b, err_b) = _finish(a), _finish(b)
    assert rc_a == 0, out_a + err_a
    assert rc_b == 0, out_b + err_b
    _exactly_once(dsn, items)
    sessions = {r["session"] for r in _records(dsn) if r["event"] == "session_started"}
    assert len(sessions) == 4


def test_the_database_restarted_mid_run_is_waited_for_and_the_stations_go_on(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 12
    site = _site(tmp_path, items, delay=0.1, store=dsn)
    a, b = _station(site, "A", lease=10.0), _station(site, "B", lease=10.0)
    _wait_for(dsn, 8)
    pg.restart(down_seconds=2.0)
    (rc_a, out_a, err_a), (rc_b, out_b, err_b) = _finish(a), _finish(b)
    assert rc_a == 0, out_a + err_a
    assert rc_b == 0, out_b + err_b
    assert "waiting for PostgreSQL" in err_a + err_b
    _exactly_once(dsn, items)


def test_a_station_that_lost_its_lease_writes_nothing_more_about_the_job(pg: Postgres) -> None:
    dsn = pg.new_database()
    with PgRunStore(dsn, "r") as store:
        store.add_jobs([("asr", "s1")])
        assert store.claim("A", lease_seconds=0.2) is not None
        record = {"v": 2, "event": "dispatched", "task": "asr", "system": "s1", "item": "u1"}
        assert store.append(record, holder="A") == 1
        time.sleep(0.5)
        taken = store.claim_in("B", 30, [("asr", "s1")], [("asr", "s1")])
        assert taken is not None and taken.previous_station == "A"
        with pytest.raises(LeaseLost, match="station A no longer holds job asr/s1"):
            store.append({**record, "item": "u2"}, holder="A")
        assert store.append({**record, "item": "u3"}, holder="B") == 2
        assert [r["item"] for r in store.records()] == ["u1", "u3"]
        # A device runs one job at a time across stations: C cannot start s1's sibling.
        store.add_jobs([("asr", "s2")])
        group = [("asr", "s1"), ("asr", "s2")]
        assert store.claim_in("C", 30, [("asr", "s2")], group) is None
        assert store.release("B", "asr", "s1", finished=True)
        again = store.claim_in("C", 30, [("asr", "s2")], group)
        assert again is not None and again.system == "s2"


def test_a_bad_store_is_refused_naming_the_key_without_the_password(
    pg: Postgres, tmp_path: Path
) -> None:
    site = _site(tmp_path, 2, delay=0.0, store="mysql://u:s3cret@db/x")
    out = onsite("run", str(site), "--station", "A")
    assert out.returncode == 2
    assert "site.store" in out.stderr and "postgresql://" in out.stderr
    assert "s3cret" not in out.stdout + out.stderr
    plain = _site(tmp_path, 2, delay=0.0, store=None, name="plain")
    refused = onsite("run", str(plain), "--station", "A")
    assert refused.returncode == 2 and "need the run in a PostgreSQL store" in refused.stderr
    bad_run = onsite("report", "postgresql://127.0.0.1:1/x")
    assert bad_run.returncode == 2 and "?run=" in bad_run.stderr
    # A database that does not exist is reported at once, not waited for.
    missing_db = pg.dsn("nosuchdb").replace("postgres@", "postgres:s3cret@")
    nodb = _site(tmp_path, 2, delay=0.0, store=missing_db, name="nodb")
    out = onsite("run", str(nodb), "--station", "A")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "nosuchdb" in out.stderr and "does not exist" in out.stderr
    assert "s3cret" not in out.stdout + out.stderr
    no_run = onsite("report", f"{pg.dsn()}?run=nothing")
    assert no_run.returncode == 2 and "no run named 'nothing'" in no_run.stderr


def test_stations_starting_together_use_the_first_audit_seed_journaled(
    pg: Postgres, tmp_path: Path
) -> None:
    from harness.store.events import AuditSeed
    from harness.store.postgres_run import PgRunWriter

    dsn = pg.new_database()
    with PgRunStore(dsn, "venue") as pa, PgRunStore(dsn, "venue") as pb:
        # Both read the run before either drew a seed, as two stations starting at once.
        a = PgRunWriter(tmp_path / "a", "A-1", pa, "A")
        b = PgRunWriter(tmp_path / "b", "B-1", pb, "B")
        try:
            assert a.state.audit_seed is None and b.state.audit_seed is None
            first = a.emit(AuditSeed(seed=111)).seed
            second = b.emit(AuditSeed(seed=222)).seed
        finally:
            a.close()
            b.close()
    assert first == second == 111
    assert b.state.audit_seed == 111
