"""The console's JSON API and operator controls, against real runs of the fake system."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from harness.console.view import RunView
from harness.significance import job_interval
from harness.store.run_model import RunModel
from tests.console_run import (
    ITEM_FRAMES,
    TOKEN,
    call,
    fake,
    job_status,
    journal,
    serve_run_dir,
    slow_site,
    start_run,
    wait_for,
)
from tests.helpers import FAKE_SERVE, REPO, make_testset, read_outputs, write_site

JOB_KEYS = {
    "task",
    "system",
    "device",
    "state",
    "completed",
    "total",
    "verdicts",
    "quality",
    "speed",
    "running_score",
    "in_flight",
}


def _finished_run(tmp_path: Path, plan_env, items: int = 4) -> Path:
    site = slow_site(tmp_path, plan_env, items=items, delay=0.0)
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return tmp_path / "runs" / "t"


def test_status_pause_resume_during_a_run_and_after(tmp_path: Path, plan_env) -> None:
    items = 16
    run = start_run(slow_site(tmp_path, plan_env, items=items, delay=0.25))
    try:
        job = wait_for(lambda: (j := job_status(run.url)) and j["completed"] >= 2 and j)
        status = call(run.url + "/api/status")[1]
        assert status["site"] == "t" and status["controller"] == "running"
        assert JOB_KEYS <= set(job)
        assert job["state"] == "running" and job["total"] == items
        assert job["quality"]["metric"] == "wer" and 0 <= job["quality"]["value"] <= 1
        assert job["speed"]["unit"] == "rtf" and job["speed"]["mean"] > 0
        assert job["speed"]["p95"] >= job["speed"]["mean"] * 0.5
        assert 0 <= job["speed"]["budget_usage"] <= 1
        assert 0 <= job["running_score"] <= 100
        assert job["verdicts"].get("ok", 0) == job["completed"]

        # No token, a wrong token, a token in the query: 401, and nothing journaled.
        pause = run.url + "/api/jobs/asr/alpha/pause"
        assert call(pause, "POST")[0] == 401
        assert call(pause, "POST", token="wrong")[0] == 401
        assert call(pause + f"?token={TOKEN}", "POST")[0] == 401
        assert call(run.url + "/api/stop", "POST")[0] == 401
        assert not [r for r in journal(run.run_dir) if r["event"] == "operator_action"]
        assert job_status(run.url)["state"] == "running"

        assert call(run.url + "/api/jobs/asr/nobody/pause", "POST", TOKEN)[0] == 404
        assert call(run.url + "/api/jobs/asr/alpha/skip", "POST", TOKEN)[0] == 404
        status_code, body = call(pause, "POST", TOKEN)
        assert status_code == 200 and body["action"]["action"] == "pause"
        # The item in flight finishes; then nothing more is sent until resumed.
        held = wait_for(
            lambda: (j := job_status(run.url))["state"] == "paused" and j["in_flight"] is None and j
        )
        dispatched = sum(1 for r in journal(run.run_dir) if r["event"] == "dispatched")
        time.sleep(1.2)
        assert job_status(run.url)["completed"] == held["completed"]
        assert sum(1 for r in journal(run.run_dir) if r["event"] == "dispatched") == dispatched
        assert call(run.url + "/api/jobs/asr/alpha/resume", "POST", TOKEN)[0] == 200
        assert run.wait() == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()

    records = journal(run.run_dir)
    actions = [r for r in records if r["event"] == "operator_action"]
    assert [(a["action"], a["task"], a["system"]) for a in actions] == [
        ("pause", "asr", "alpha"),
        ("resume", "asr", "alpha"),
    ]
    assert all(isinstance(a["wall"], float) for a in actions)
    # Every item exactly once, each sent once; the pause is in nobody's seconds.
    outputs = read_outputs(run.run_dir, "asr", "alpha")
    assert sorted(o["id"] for o in outputs) == [f"u{i:02d}" for i in range(items)]
    sent = Counter(r["item"] for r in records if r["event"] == "dispatched")
    assert set(sent.values()) == {1}
    assert max(o["seconds"] for o in outputs) < 1.0

    # The same run directory, read-only, after the run.
    server, url = serve_run_dir(run.run_dir, "127.0.0.1:0")
    try:
        status = call(url + "/api/status")[1]
        assert status["controller"] == "stopped"
        (job,) = status["jobs"]
        assert job["state"] == "done" and job["completed"] == job["total"] == items
        assert job["in_flight"] is None and job["eta_seconds"] == 0
        assert job["quality"]["value"] == 1 / (2 * items)  # one word of 2 * items dropped
        # Beside it, the report's 95% interval of the same items (harness/significance.py).
        found = job_interval(RunModel.open(run.run_dir), "asr", "alpha")
        assert (job["quality"]["ci_low"], job["quality"]["ci_high"]) == (
            found.ci_low,
            found.ci_high,
        )
        assert found.ci_low is not None and found.ci_low <= job["quality"]["value"]
        code, detail = call(url + "/api/jobs/asr/alpha")
        assert code == 200 and len(detail["rows"]) == items
        assert {"item", "verdict", "seconds", "budget_seconds"} <= set(detail["rows"][0])
        assert detail["series"]["quality"][-1]["value"] == job["quality"]["value"]
        assert call(url + "/api/jobs/asr/nobody")[0] == 404
        # A read-only console has no controls, token or not.
        assert call(url + "/api/jobs/asr/alpha/pause", "POST", TOKEN)[0] == 403
        assert call(url + "/api/jobs/asr/alpha/retry", "POST", TOKEN)[0] == 403
        assert call(url + "/api/stop", "POST")[0] == 403
        events = [r for r in journal(run.run_dir) if r["event"] == "operator_action"]
        assert len(events) == 2
    finally:
        server.kill()
        server.wait()


def test_skip_a_device_then_stop(tmp_path: Path, plan_env) -> None:
    # Items enough that the second session is still running when the stop comes, however
    # slowly a loaded machine polls (30 could all finish first: the stop then met no run).
    run = start_run(slow_site(tmp_path, plan_env, items=80, delay=0.25, systems=2))
    try:
        wait_for(lambda: job_status(run.url)["completed"] >= 1)
        assert call(run.url + "/api/devices/nowhere/skip", "POST", TOKEN)[0] == 404
        assert call(run.url + "/api/devices/local/skip", "POST", TOKEN)[0] == 200
        assert run.wait() == 1
    finally:
        if run.process.poll() is None:
            run.process.kill()
    output = "\n".join(run.lines)
    assert "job asr / alpha skipped by the operator" in output
    assert "job asr / beta skipped by the operator" in output
    records = journal(run.run_dir)
    assert [r["system"] for r in records if r["event"] == "job_skipped"] == ["alpha", "beta"]
    assert not [r for r in records if r["event"] == "dispatched" and r["system"] == "beta"]
    (action,) = [r for r in records if r["event"] == "operator_action"]
    assert action["action"] == "skip" and action["device"] == "local"
    # Nothing lost: what completed is in the outputs once each.
    outputs = read_outputs(run.run_dir, "asr", "alpha")
    done = [r["item"] for r in records if r["event"] == "completed"]
    assert sorted(o["id"] for o in outputs) == sorted(done) and len(set(done)) == len(done)

    # A skip lasts one session: the same command resumes both jobs, then stop from the API.
    again = start_run(tmp_path / "site.toml")
    try:
        wait_for(lambda: job_status(again.url)["completed"] > len(done))
        assert call(again.url + "/api/stop", "POST", TOKEN)[0] == 200
        assert again.wait() == 130
    finally:
        if again.process.poll() is None:
            again.process.kill()
    records = journal(run.run_dir)
    assert records[-1]["event"] == "session_interrupted"
    assert [r["action"] for r in records if r["event"] == "operator_action"] == ["skip", "stop"]
    completed = [r["item"] for r in records if r["event"] == "completed" and r["system"] == "alpha"]
    assert len(set(completed)) == len(completed), "no item completed twice"


def test_viewer_token_beyond_loopback(tmp_path: Path, plan_env) -> None:
    run_dir = _finished_run(tmp_path, plan_env)
    env_token = "viewer-secret"
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "console", str(run_dir), "--listen", "0.0.0.0:0"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={
            **os.environ,
            "CI": "1",
            "PYTHONUNBUFFERED": "1",
            "ONSITE_CONSOLE_VIEW_TOKEN": env_token,
        },
    )
    try:
        assert process.stdout is not None
        line = next(line for line in process.stdout if line.startswith("console: "))
        assert line.strip().endswith(f"/?token={env_token}")
        assert "viewer token:" not in line, "a token from the environment is not echoed"
        port = line.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
        base = f"http://127.0.0.1:{port}"
        assert call(base + "/api/status")[0] == 401
        assert call(base + "/")[0] == 401
        assert call(base + "/api/status", token="wrong")[0] == 401
        assert call(base + "/api/status", token=env_token)[0] == 200
        assert call(base + f"/api/status?token={env_token}")[0] == 200
        assert call(base + f"/?token={env_token}")[0] == 200
    finally:
        process.kill()
        process.wait()


def test_view_follows_a_journal_torn_lines_and_a_fresh_run(tmp_path: Path, plan_env) -> None:
    run_dir = _finished_run(tmp_path, plan_env, items=4)
    view = RunView(run_dir)
    assert view.refresh() and not view.refresh()
    (job,) = view.status()["jobs"]
    assert job["completed"] == 4 and job["state"] == "done"
    path = run_dir / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    # A line being written is not read until it ends; garbage is skipped.
    with open(path, "ab") as fh:
        fh.write(b"not json\n")
        fh.write(b'{"event":"completed","task":"asr","system":"alpha"}\n')  # no item
        fh.write(b'{"event":"testset_loaded","task":"asr","items":"many"}\n')
        fh.write(b'{"v":1,"event":"operator_action","action":"pause","task":"asr",')
    view.refresh()
    assert view.status()["jobs"][0]["completed"] == 4
    assert view.refresh() is False
    with open(path, "ab") as fh:
        fh.write(b'"system":"alpha","wall":1.0}\n')
    assert view.refresh() is True
    assert view.status()["actions"][-1]["action"] == "pause"
    # --fresh moves the run aside and starts a new journal under the same name.
    path.rename(run_dir / "old.jsonl")
    path.write_bytes(b"".join(lines[:3]))
    view.refresh()
    (job,) = view.status()["jobs"]
    assert job["completed"] == 0 and job["state"] == "waiting"
    assert json.loads(lines[0])["event"] == "session_started"


def test_status_counts_no_audit_repeats_and_no_item_in_flight_after_a_stop(
    tmp_path: Path, plan_env
) -> None:
    site = slow_site(tmp_path, plan_env, items=4, delay=0.0)
    text = site.read_text(encoding="utf-8").replace(
        'kind = "asr"', 'kind = "asr"\naudit = { repeats = 2, shuffle = true }', 1
    )
    site.write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run_dir = tmp_path / "runs" / "t"
    completed = [r for r in journal(run_dir) if r["event"] == "completed"]
    assert len(completed) == 6, "4 items and 2 hidden repeats were sent"
    view = RunView(run_dir)
    view.refresh()
    (job,) = view.status()["jobs"]
    assert (job["completed"], job["total"]) == (4, 4)
    assert sum(job["verdicts"].values()) == 4
    # A controller that died with an item dispatched: not running, so nothing in flight.
    last = completed[-1]
    with open(run_dir / "journal.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({**last, "event": "session_started", "limit": None}) + "\n")
        fh.write(json.dumps({**last, "event": "dispatched", "item": "u00"}) + "\n")
    view.refresh()
    (job,) = view.status()["jobs"]
    assert job["in_flight"] is None and job["state"] == "stopped"
    status = subprocess.run(
        [sys.executable, "-m", "harness.cli", "status", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    row = next(line for line in status.stdout.splitlines() if "alpha" in line)
    assert "4/4" in row and "stopped" in row and "u00" not in row
    # The web stack is loaded only by the commands that serve: not by `onsite status`.
    probe = (
        "import sys; from harness.cli.main import main; main(['status', sys.argv[1]]); "
        "print('LOADED', 'starlette' in sys.modules or 'uvicorn' in sys.modules)"
    )
    lazy = subprocess.run(
        [sys.executable, "-c", probe, str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    assert "LOADED False" in lazy.stdout, lazy.stdout + lazy.stderr


def test_a_system_that_does_not_come_up_is_shown_retrying_and_can_be_skipped(
    tmp_path: Path, plan_env
) -> None:
    testset = make_testset(tmp_path / "set", [("u1", 1600, "hello")])
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"stuck": {"command": FAKE_SERVE, "env": plan_env({}, FAKE_START="hang")}},
        budget={"seconds": 5.0, "hang_seconds": 5.0, "setup_seconds": 3.0},
    )
    run = start_run(site)
    try:
        wait_for(lambda: job_status(run.url, "stuck")["state"] == "retrying_start", timeout=90)
        assert call(run.url + "/api/devices/local/skip", "POST", TOKEN)[0] == 200
        assert run.wait() == 1
    finally:
        if run.process.poll() is None:
            run.process.kill()
    assert "job asr / stuck skipped by the operator" in "\n".join(run.lines)
    records = journal(run.run_dir)
    assert len([r for r in records if r["event"] == "start_failed"]) < 3
    ends = ("job_finished", "job_failed", "job_skipped")
    assert [r["event"] for r in records if r["event"] in ends] == ["job_skipped"]


def test_bad_console_and_filter_input_is_refused_before_anything_starts(
    tmp_path: Path, plan_env
) -> None:
    import socket

    site = slow_site(tmp_path, plan_env, items=2, delay=0.0)

    def onsite(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "harness.cli", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "CI": "1"},
        )

    unknown = onsite("run", str(site), "--task", "nope", "--system", "ghost")
    assert unknown.returncode == 2
    assert "no task 'nope'" in unknown.stderr and "use one of: asr" in unknown.stderr
    assert "no system 'ghost'" in unknown.stderr and "use one of: alpha" in unknown.stderr
    bad = onsite("run", str(site), "--console", "127.0.0.1:http")
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        busy = onsite("run", str(site), "--console", f"127.0.0.1:{port}")
    assert busy.returncode == 2 and "cannot listen on" in busy.stderr
    assert not (tmp_path / "runs").exists(), "nothing was started"
    not_a_run = onsite("console", str(tmp_path), "--listen", "127.0.0.1:0")
    assert not_a_run.returncode == 2 and "not a run directory" in not_a_run.stderr


def test_retry_a_failed_job_runs_its_remaining_items_once(tmp_path: Path, plan_env) -> None:
    items = 10
    rows = [(f"u{i:02d}", ITEM_FRAMES[i], "hello world") for i in range(items)]
    site = write_site(
        tmp_path / "site.toml",
        make_testset(tmp_path / "set", rows),
        {
            # Crashes on its 4th item with no restart allowed: the job fails.
            "alpha": fake(plan_env, delay=0.02, crash_at=3, max_restarts=0),
            # Held paused, so that the run goes on while the operator decides.
            "beta": fake(plan_env, delay=0.05),
        },
    )
    run = start_run(site)
    try:
        assert call(run.url + "/api/jobs/asr/beta/pause", "POST", TOKEN)[0] == 200
        failed = wait_for(lambda: (j := job_status(run.url))["state"] == "failed" and j)
        assert failed["completed"] == 4 and failed["verdicts"] == {"ok": 3, "crashed": 1}
        retry = run.url + "/api/jobs/asr/alpha/retry"
        assert call(retry, "POST")[0] == 401
        assert call(retry, "POST", token="wrong")[0] == 401
        assert call(retry + f"?token={TOKEN}", "POST")[0] == 401
        actions = [r for r in journal(run.run_dir) if r["event"] == "operator_action"]
        assert [a["action"] for a in actions] == ["pause"], "nothing journaled without the token"
        assert job_status(run.url)["state"] == "failed"
        status, body = call(run.url + "/api/jobs/asr/beta/retry", "POST", TOKEN)
        assert status == 409 and "has not failed" in body["error"]
        assert call(run.url + "/api/jobs/asr/nobody/retry", "POST", TOKEN)[0] == 404

        status, body = call(retry, "POST", TOKEN)
        assert status == 200 and body["action"]["action"] == "retry"
        assert isinstance(body["action"]["wall"], float)
        # Queued behind beta on the same device; a second retry is refused.
        assert job_status(run.url)["state"] == "waiting"
        assert call(retry, "POST", TOKEN)[0] == 409
        assert call(run.url + "/api/jobs/asr/beta/resume", "POST", TOKEN)[0] == 200
        assert run.wait() == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    records = journal(run.run_dir)
    alpha = [
        r["event"]
        for r in records
        if r.get("system") == "alpha"
        and r["event"] in ("job_failed", "operator_action", "job_finished", "system_started")
    ]
    # The failure before the retry stays in the record; then the operator's decision.
    assert alpha == [
        "system_started",
        "job_failed",
        "operator_action",
        "system_started",
        "job_finished",
    ]
    outputs = read_outputs(run.run_dir, "asr", "alpha")
    assert sorted(o["id"] for o in outputs) == [f"u{i:02d}" for i in range(items)]
    sent = Counter(
        r["item"] for r in records if r["event"] == "dispatched" and r["system"] == "alpha"
    )
    assert set(sent.values()) == {1}, "what the journal says is done stays done"
    crashed = next(o for o in outputs if o["id"] == "u03")
    assert crashed["verdict"] == "crashed"


def test_job_curves_keep_their_points_as_the_job_grows(tmp_path: Path, plan_env) -> None:
    run_dir = _finished_run(tmp_path, plan_env, items=100)
    path = run_dir / "journal.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    half = next(n for n, line in enumerate(lines) if json.loads(line).get("item") == "u60")
    path.write_bytes(b"".join(lines[:half]))
    view = RunView(run_dir)
    view.refresh()
    early = view.job("asr", "alpha")
    assert early is not None and early["completed"] == 60
    path.write_bytes(b"".join(lines))
    view.refresh()
    late = view.job("asr", "alpha")
    assert late is not None and late["state"] == "done"
    for curve in ("quality", "running_score"):
        points = late["series"][curve]
        items = [p["items"] for p in points]
        # Every 4th item (the least power of two that keeps to 40 points) and the last.
        assert len(items) <= 40 and items == [*range(4, 101, 4)]
        # A point scored while the job was at 60 items is the same point now.
        before = {p["items"]: p["value"] for p in early["series"][curve]}
        assert all(before[p["items"]] == p["value"] for p in points if p["items"] in before)
        assert set(before) & set(items)
    assert late["series"]["quality"][-1]["value"] == late["quality"]["value"]
    # The same document as the API sends it.
    assert json.loads(view.job_json("asr", "alpha") or b"") == view.job("asr", "alpha")
