"""The console's guard: foreign host names, malformed tokens, large bodies, framing.

Raw requests (tests/console_run.py `raw_request`): the attacks are requests a client
library would not send. Every one must get a 4xx and change nothing, never a 500.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.console_run import (
    TOKEN,
    job_status,
    journal,
    raw_request,
    slow_site,
    start_run,
    wait_for,
)
from tests.helpers import REPO

FRAMING = {"x-frame-options": "DENY", "content-security-policy": "frame-ancestors 'none'"}


def _framing(headers: dict[str, str]) -> bool:
    return all(headers.get(name) == value for name, value in FRAMING.items())


def test_the_live_console_refuses_foreign_hosts_odd_tokens_and_large_bodies(
    tmp_path: Path, plan_env
) -> None:
    run = start_run(
        slow_site(tmp_path, plan_env, items=40, delay=0.1), "--link-host", "console.venue"
    )
    try:
        assert run.url.startswith("http://console.venue:"), run.url
        base = run.url.replace("console.venue", "127.0.0.1")
        wait_for(lambda: job_status(base)["completed"] >= 1)
        bearer = {"Authorization": b"Bearer " + TOKEN.encode()}

        # The printed name and this machine's own are answered; any other is a 421, even
        # with the operator's token, and nothing is done.
        port = base.rsplit(":", 1)[1]
        for host in (b"console.venue:" + port.encode(), b"localhost:" + port.encode()):
            assert raw_request(base, "GET", "/api/status", {"Host": host})[0] == 200
        for path in ("/", "/api/status", "/api/events"):
            status, headers, _ = raw_request(base, "GET", path, {"Host": b"evil.example"})
            assert status == 421 and _framing(headers), (path, status)
        refused = raw_request(base, "POST", "/api/stop", {"Host": b"evil.example", **bearer})
        assert refused[0] == 421

        # Tokens no client would send: non-ASCII (UTF-8 and raw bytes), empty, huge.
        odd = [b"Bearer \xc3\xa9", b"Bearer \xff\xfe", b"Bearer " + b"\xc3\xa9" * 4000, b"Bearer"]
        for value in odd:
            status, _, body = raw_request(
                base, "POST", "/api/jobs/asr/alpha/pause", {"Authorization": value}
            )
            assert status == 401 and b"Traceback" not in body, (value[:20], status)

        # A body announced at 400 MB is refused from its header alone: nothing is sent
        # after the headers, and the answer comes anyway; the token does not let it in.
        status, headers, _ = raw_request(
            base,
            "POST",
            "/api/jobs/asr/alpha/pause",
            {**bearer, "Content-Length": b"400000000"},
        )
        assert status == 413 and _framing(headers)
        assert not [r for r in journal(run.run_dir) if r["event"] == "operator_action"]

        # Odd paths are a 404 (or the controller's own refusal), never a 500.
        for path in ("/api/jobs/%C3%A9/%00/pause", "/api/devices/%FF/skip"):
            status, _, _ = raw_request(base, "POST", path, bearer)
            assert status == 404, (path, status)
        assert raw_request(base, "GET", "/api/jobs/%FF%FE/x")[0] == 404

        # Every page, the API and the static files say that no other site may frame them.
        for path in ("/", "/jobs/asr/alpha", "/board", "/api/status", "/static/style.css"):
            status, headers, _ = raw_request(base, "GET", path)
            assert status == 200 and _framing(headers), path
        assert job_status(base)["state"] == "running"
        assert raw_request(base, "POST", "/api/stop", bearer)[0] == 200
        assert run.wait() == 130
    finally:
        if run.process.poll() is None:
            run.process.kill()
    actions = [r["action"] for r in journal(run.run_dir) if r["event"] == "operator_action"]
    assert actions == ["stop"]


def test_a_viewer_token_that_is_not_ascii_is_a_401_not_a_500(tmp_path: Path, plan_env) -> None:
    site = slow_site(tmp_path, plan_env, items=3, delay=0.0)
    done = subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    token = "viewer-secret"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "harness.cli",
            "console",
            str(tmp_path / "runs" / "t"),
            "--listen",
            "0.0.0.0:0",
            "--link-host",
            "board.venue",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "CI": "1", "PYTHONUNBUFFERED": "1", "ONSITE_CONSOLE_VIEW_TOKEN": token},
    )
    try:
        assert process.stdout is not None
        line = next(line for line in process.stdout if line.startswith("console: "))
        assert line.startswith("console: http://board.venue:"), line
        port = line.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
        base = f"http://127.0.0.1:{port}"
        odd = [
            ("/api/status", {"Authorization": b"Bearer \xc3\xa9"}),
            ("/api/status", {"Cookie": b"onsite_view=\xc3\xa9"}),
            ("/api/status", {"Cookie": b"onsite_view=%C3%A9"}),
            ("/api/status?token=%C3%A9", {}),
            ("/api/status?token=%FF", {}),
            ("/?token=%C3%A9", {}),
            ("/api/events?token=%E2%82%AC", {}),
        ]
        for path, headers in odd:
            status, got, body = raw_request(base, "GET", path, headers)
            assert status == 401 and _framing(got) and b"Traceback" not in body, (path, status)
        good = {"Host": f"board.venue:{port}".encode()}
        assert raw_request(base, "GET", f"/api/status?token={token}", good)[0] == 200
        assert raw_request(base, "GET", f"/?token={token}", {"Host": b"evil.example"})[0] == 421
        # A read-only console has no controls: 403 with any body; a huge one is a 413.
        assert raw_request(base, "POST", "/api/stop")[0] == 403
        assert raw_request(base, "POST", "/api/stop", {"Content-Length": b"400000000"})[0] == 413
    finally:
        process.kill()
        process.wait()
