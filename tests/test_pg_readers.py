"""Every reader of a run kept in PostgreSQL reads the database itself, as a user runs it.

`onsite report`, `status` (also --watch), `console` (read-only, and a station's own with
operator controls), `export` and `score --run` are given `postgresql://HOST/DB?run=NAME`
and must show what they show for a run directory of the same site, without copying the
run anywhere: each runs under an audit hook that logs every directory made and every
file opened for writing, and a reader may make none (`score --run` only its own scratch
files). A real PostgreSQL server, real `onsite run --station` processes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.console_run import TOKEN, call, wait_for
from tests.helpers import FAKE_SERVE, REPO, make_testset, toml_value
from tests.pg import Postgres

pytestmark = pytest.mark.postgres

TIMEOUT = 300.0
SYSTEMS = ("s1", "s2")
# A participant's answer that looks like journal records of its own: a newline, a forged
# completion, a NUL. It must stay one answer of one item, wherever the run is kept.
FORGED = 'ok\n{"v":2,"event":"completed","task":"asr","system":"s2","item":"x"}\u0000'

# Runs `onsite ARGS` with an audit hook logging every mkdir and every open for writing
# (nothing is patched: the hook only watches), to the file named first.
WATCHED = r"""
import json, os, sys
log = open(sys.argv[1], "a", buffering=1)
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
def hook(event, args):
    if event == "os.mkdir" or (event in ("os.rename", "os.replace")):
        log.write(json.dumps([event, str(args[0])]) + "\n")
    elif event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        mode, flags = args[1], args[2]
        if (isinstance(flags, int) and flags & WRITE) or (
            isinstance(mode, str) and any(c in mode for c in "wax+")
        ):
            log.write(json.dumps([event, os.fsdecode(args[0])]) + "\n")
sys.addaudithook(hook)
from harness.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def _env(**extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "CI": "1",
        "COLUMNS": "200",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        **extra,
    }


def _watched(log: Path, *args: str, **popen: Any) -> list[str]:
    return [sys.executable, "-c", WATCHED, str(log), *args]


def _run_watched(log: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _watched(log, *args),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=_env(),
    )


def _writes(log: Path) -> list[list[str]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def _site(tmp: Path, items: int, delay: float, store: str | None, name: str = "venue") -> Path:
    """One ASR task, two systems each on a device of its own; s2 answers item 3 with FORGED."""
    testset = make_testset(
        tmp / "ts", [(f"u{i:03d}", 800 + 10 * i, f"word{i % 7}") for i in range(items)]
    )
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
    for system in SYSTEMS:
        plan = {
            str(800 + 10 * i): {
                "delay": delay,
                "text": FORGED if system == "s2" and i == 3 else f"word{i % 5}",
            }
            for i in range(items)
        }
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


def _onsite(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env or _env(),
    )


def _station(site: Path, name: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    return subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(site), "--station", name, *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env or _env(),
        start_new_session=True,
    )


def _records(dsn: str) -> list[dict[str, Any]]:
    with psycopg.connect(dsn) as conn:
        rows = conn.execute(
            "SELECT body::text FROM onsite_records WHERE run = 'venue' ORDER BY seq"
        ).fetchall()
    return [json.loads(text) for (text,) in rows]


def _two_runs(pg: Postgres, tmp_path: Path, items: int = 8) -> tuple[str, Path, str]:
    """The same site run by a station into PostgreSQL and by one controller into a
    directory: (the DSN, the run directory, the run's URL with a password trust ignores)."""
    dsn = pg.new_database()
    site = _site(tmp_path / "pg", items, delay=0.0, store=dsn)
    station = _station(site, "A")
    out, _ = station.communicate(timeout=TIMEOUT)
    assert station.returncode == 0, out
    single = _site(tmp_path / "dir", items, delay=0.0, store=None)
    ran = _onsite("run", str(single))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    url = dsn.replace("postgres@", "postgres:s3cret@") + "?run=venue"
    return dsn, tmp_path / "dir" / "runs" / "venue", url


def _quality(report: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keep = ("task", "system", "completed", "total", "headline", "quality", "verdicts")
    return [tuple(json.dumps(row.get(k), sort_keys=True) for k in keep) for row in report]


def _of_a_run(path: str) -> bool:
    """A path only a copy of a run would write."""
    names = ("journal.jsonl", "run.lock", "run.json", "site.toml")
    return Path(path).name in names or "/outputs/" in path or "onsite-pgrun" in path


def _answers(text: str, fmt: str) -> Any:
    """An export's answers (a jsonl line also holds the item's timings: left out)."""
    if fmt != "jsonl":
        return text
    keep = ("id", "output", "verdict")
    return [{k: json.loads(line)[k] for k in keep} for line in text.splitlines()]


def _status_rows(text: str) -> list[list[str]]:
    """The task, system, state, done and quality cells of `onsite status`'s rows."""
    rows = []
    for line in text.splitlines():
        cells = line.split()
        if len(cells) > 5 and cells[0] == "asr" and cells[1] in SYSTEMS:
            rows.append(cells[:4] + [" ".join(cells[5:7])])
    return rows


def test_report_status_export_and_score_read_the_database_as_a_directory_without_a_copy(
    pg: Postgres, tmp_path: Path
) -> None:
    _, run_dir, url = _two_runs(pg, tmp_path)
    logs = tmp_path / "logs"
    logs.mkdir()

    report = _run_watched(logs / "report", "report", url, "--json")
    assert report.returncode == 0, report.stderr
    assert _writes(logs / "report") == []  # no copy of the run was made to read it
    direct = _onsite("report", str(run_dir), "--json")
    assert _quality(json.loads(report.stdout)) == _quality(json.loads(direct.stdout))
    rows = json.loads(report.stdout)
    assert [r["completed"] for r in rows] == [8, 8]  # the forged record is an answer, not a record

    status = _run_watched(logs / "status", "status", url)
    assert status.returncode == 0, status.stderr
    direct = _onsite("status", str(run_dir))
    assert _status_rows(status.stdout) == _status_rows(direct.stdout)
    assert len(_status_rows(status.stdout)) == 2
    assert "no controller is running" in status.stdout
    assert "?run=venue" in status.stdout and "s3cret" not in status.stdout + status.stderr

    watched = _run_watched(logs / "watch", "status", url, "--watch", "--until-stopped")
    assert watched.returncode == 0, watched.stderr

    for fmt in ("trn", "jsonl"):
        exported = _run_watched(
            logs / f"export-{fmt}", "export", url, "--system", "s2", "--format", fmt
        )
        direct = _onsite("export", str(run_dir), "--system", "s2", "--format", fmt)
        assert exported.returncode == 0, exported.stderr
        assert _answers(exported.stdout, fmt) == _answers(direct.stdout, fmt)
        assert "word" in direct.stdout

    scored = _run_watched(logs / "score", "score", "asr", "--run", url, "--system", "s2", "--json")
    direct = _onsite("score", "asr", "--run", str(run_dir), "--system", "s2", "--json")
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout) == json.loads(direct.stdout)

    html = tmp_path / "report.html"
    full = _run_watched(logs / "html", "report", url, "--html", str(html))
    assert full.returncode == 0, full.stderr
    assert "?run=venue" in html.read_text(encoding="utf-8")
    assert "s3cret" not in html.read_text(encoding="utf-8")

    # Nothing was copied anywhere: no directory made, no file written, but what was asked
    # for (the HTML report, with its figures and plotting library's cache) and `score
    # --run`'s own scratch files.
    for name in ("report", "status", "watch", "export-trn", "export-jsonl"):
        assert _writes(logs / name) == [], (name, _writes(logs / name))
    assert [w for w in _writes(logs / "html") if _of_a_run(w[1])] == []
    scratch = _writes(logs / "score")
    assert scratch, "score --run writes the job's files to score them"
    assert any(re.search(r"/onsite-score-[^/]+/", path) for _, path in scratch), scratch
    assert [path for _, path in scratch if _of_a_run(path)] == []


def test_the_read_only_console_of_a_database_run_shows_the_directory_runs_figures(
    pg: Postgres, tmp_path: Path
) -> None:
    _, run_dir, url = _two_runs(pg, tmp_path)
    log = tmp_path / "console.log"

    def serve(watched: bool, run: str) -> tuple[subprocess.Popen[str], str]:
        command = (
            _watched(log, "console", run, "--listen", "127.0.0.1:0")
            if watched
            else [sys.executable, "-m", "harness.cli", "console", run, "--listen", "127.0.0.1:0"]
        )
        process = subprocess.Popen(
            command,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=_env(),
        )
        assert process.stdout is not None
        for line in process.stdout:
            found = re.search(r"console: (http://\S+?)/?$", line.strip())
            if found:
                return process, found.group(1)
        raise AssertionError("the console URL was never printed")

    def figures(status: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (j["system"], j["state"], j["completed"], j["total"], j["verdicts"], j["quality"])
            for j in status["jobs"]
        ]

    db_console, db_url = serve(True, url)
    dir_console, dir_url = serve(False, str(run_dir))
    try:
        db_status = call(db_url + "/api/status")[1]
        dir_status = call(dir_url + "/api/status")[1]
        assert figures(db_status) == figures(dir_status)
        assert db_status["controller"] == "stopped"
        assert db_status["run_dir"].endswith("?run=venue") and "s3cret" not in db_status["run_dir"]
        db_job = call(db_url + "/api/jobs/asr/s2")[1]
        dir_job = call(dir_url + "/api/jobs/asr/s2")[1]
        assert [(r["item"], r["verdict"]) for r in db_job["rows"]] == [
            (r["item"], r["verdict"]) for r in dir_job["rows"]
        ]
        # A read-only console takes no control.
        assert call(db_url + "/api/jobs/asr/s1/pause", "POST", TOKEN)[0] == 403
    finally:
        for process in (db_console, dir_console):
            process.send_signal(signal.SIGINT)
            process.communicate(timeout=60)
    assert _writes(log) == []


def test_status_watch_follows_a_station_in_the_database_and_ends_with_it(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 12
    site = _site(tmp_path, items, delay=0.2, store=dsn)
    station = _station(site, "A")
    try:
        wait_for(lambda: any(r["event"] == "completed" for r in _safe_records(dsn)), TIMEOUT)
        log = tmp_path / "watch.log"
        watch = subprocess.Popen(
            _watched(log, "status", f"{dsn}?run=venue", "--watch", "--until-stopped"),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_env(),
        )
        assert station.stdout is not None
        out, _ = station.communicate(timeout=TIMEOUT)
        assert station.returncode == 0, out
        shown, err = watch.communicate(timeout=TIMEOUT)
    finally:
        if station.poll() is None:
            os.killpg(station.pid, signal.SIGKILL)
    assert watch.returncode == 0, err
    # Started with one item done, it followed the database while the station ran (it
    # ends only once no station works on the run) and ends with every item done.
    assert "no controller is running" in shown
    assert [r[2:4] for r in _status_rows(shown)[-2:]] == [["done", f"{items}/{items}"]] * 2
    assert _writes(log) == []


def _safe_records(dsn: str) -> list[dict[str, Any]]:
    try:
        return _records(dsn)
    except psycopg.Error:
        return []  # the station has not made the tables yet


def test_a_station_serves_the_console_with_operator_controls_journaled_in_the_database(
    pg: Postgres, tmp_path: Path
) -> None:
    dsn = pg.new_database()
    items = 14
    secret_dsn = dsn.replace("postgres@", "postgres:s3cret@")
    site = _site(tmp_path, items, delay=0.25, store=secret_dsn)
    station = _station(site, "A", "--console", "127.0.0.1:0", env=_env(ONSITE_CONSOLE_TOKEN=TOKEN))
    lines: list[str] = []
    try:
        assert station.stdout is not None
        for line in station.stdout:
            lines.append(line)
            found = re.search(r"console: (http://\S+?)/?$", line.strip())
            if found:
                url = found.group(1)
                break
        else:
            raise AssertionError("no console URL:\n" + "".join(lines))

        def job(system: str) -> dict[str, Any]:
            body = call(url + "/api/status")[1]
            return next(j for j in body["jobs"] if j["system"] == system)

        wait_for(lambda: job("s1")["completed"] >= 2, TIMEOUT)
        # The console process holds no password on its command line (others may read it).
        console_pids = _children_running(station.pid, "harness.console")
        assert console_pids
        for pid in console_pids:
            assert b"s3cret" not in Path(f"/proc/{pid}/cmdline").read_bytes()

        pause = url + "/api/jobs/asr/s1/pause"
        assert call(pause, "POST")[0] == 401  # no operator token: refused, nothing journaled
        assert not [r for r in _records(dsn) if r["event"] == "operator_action"]
        code, body = call(pause, "POST", TOKEN)
        assert code == 200 and body["action"]["action"] == "pause", body
        held = wait_for(
            lambda: (j := job("s1"))["state"] == "paused" and j["in_flight"] is None and j,
            TIMEOUT,
        )
        sent = sum(1 for r in _records(dsn) if r["event"] == "dispatched" and r["system"] == "s1")
        time.sleep(1.5)
        assert job("s1")["completed"] == held["completed"]
        assert (
            sum(1 for r in _records(dsn) if r["event"] == "dispatched" and r["system"] == "s1")
            == sent
        )
        assert job("s2")["state"] in ("running", "done")  # the other job goes on
        # A station retries a job by running again: refused, and nothing journaled.
        assert call(url + "/api/jobs/asr/s1/retry", "POST", TOKEN)[0] == 409
        assert call(url + "/api/jobs/asr/s1/resume", "POST", TOKEN)[0] == 200
        out, _ = station.communicate(timeout=TIMEOUT)
        lines.append(out)
    finally:
        if station.poll() is None:
            os.killpg(station.pid, signal.SIGKILL)
    assert station.returncode == 0, "".join(lines)
    records = _records(dsn)
    actions = [r for r in records if r["event"] == "operator_action"]
    assert [(a["action"], a["task"], a["system"]) for a in actions] == [
        ("pause", "asr", "s1"),
        ("resume", "asr", "s1"),
    ]
    assert all(a["session"].startswith("A-") for a in actions)
    done = Counter((r["system"], r["item"]) for r in records if r["event"] == "completed")
    assert len(done) == items * 2 and set(done.values()) == {1}
    assert "s3cret" not in "".join(lines)


def _children_running(parent: int, module: str) -> list[int]:
    """The children of ``parent`` whose command runs ``module``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == parent and module.encode() in cmdline:
            found.append(int(entry.name))
    return found


def test_each_live_stations_pauses_hold_on_a_shared_runs_console(
    pg: Postgres, tmp_path: Path
) -> None:
    """Two stations work on one run: A paused job s1; B starting its session does not
    clear A's pause (a session start cleared every pause when one controller ran at a
    time), and once A is gone its pauses no longer show."""
    from harness.store.postgres import PgRunStore
    from harness.store.postgres_run import PgRunWriter

    dsn = pg.new_database()
    site = _site(tmp_path, 4, delay=0.0, store=dsn)
    url = f"{dsn}?run=venue"

    def shown(system: str) -> str:
        out = _onsite("status", url)
        assert out.returncode == 0, out.stderr
        return next(r[2] for r in _status_rows(out.stdout) if r[1] == system)

    with PgRunStore(dsn, "venue") as pg_a, PgRunStore(dsn, "venue") as pg_b:
        pg_a.set_site(
            site.read_text(encoding="utf-8"),
            {"site_file": str(site), "site_root": str(site.parent)},
        )
        for store, name in ((pg_a, "A"), (pg_b, "B")):
            assert (
                store.register_station(
                    name, f"i{name}", host="pc", pid=1, process=None, lease_seconds=3600
                )
                is None
            )
        a = PgRunWriter(tmp_path / "a", "A-iA", pg_a, "A", "iA")
        b = PgRunWriter(tmp_path / "b", "B-iB", pg_b, "B", "iB")
        try:
            started = {"pid": 1, "site": "venue", "site_sha256": "x", "limit": None}
            a.record("session_started", **started)
            a.record("operator_action", action="pause", actor="operator", task="asr", system="s1")
            assert shown("s1") == "paused"
            b.record("session_started", **started)
            assert shown("s1") == "paused"  # A still holds it paused
            assert pg_a.unregister_station("A", "iA")
            assert shown("s1") == "waiting"  # A is gone: nobody holds s1 paused
        finally:
            a.close()
            b.close()
