"""Helpers for the console tests: a slow fake run with its live console, and HTTP calls."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.helpers import FAKE_SERVE, REPO, make_testset, toml_value, write_site

TOKEN = "operator-secret-for-tests"


def slow_site(
    tmp_path: Path, plan_env: Any, items: int = 12, delay: float = 0.15, systems: int = 1
) -> Path:
    """A site whose fake systems take ``delay`` seconds per item, so a run can be watched."""
    rows = [(f"u{i:02d}", 1600 + 160 * i, "hello world") for i in range(items)]
    testset = make_testset(tmp_path / "set", rows)
    plan = {frames: {"text": "hello world", "delay": delay} for _, frames, _ in rows}
    plan[rows[-1][1]] = {"text": "hello", "delay": delay}  # one error, so quality < 100%
    names = ["alpha", "beta", "gamma"][:systems]
    return write_site(
        tmp_path / "site.toml",
        testset,
        {name: {"command": FAKE_SERVE, "env": plan_env(plan)} for name in names},
    )


ITEM_FRAMES = [1600 + 160 * i for i in range(40)]


def fake(plan_env: Any, delay: float = 0.15, crash_at: int | None = None, **cfg: Any) -> dict:
    """A fake system's site entry: ``delay`` seconds per item, crashing on item ``crash_at``."""
    plan: dict[int, dict[str, Any]] = {
        f: {"text": "hello world", "delay": delay} for f in ITEM_FRAMES
    }
    if crash_at is not None:
        plan[ITEM_FRAMES[crash_at]] = {"do": "crash"}
    return {"command": FAKE_SERVE, "env": plan_env(plan), **cfg}


def two_device_site(
    tmp_path: Path,
    systems: dict[str, dict[str, Any]],
    box: dict[str, Any],
    items: int = 12,
    site_keys: dict[str, Any] | None = None,
) -> Path:
    """A site named "t" with a local device and an ssh device "box" (``box`` its settings).

    ``systems`` maps names to entries such as fake() gives, with their ``device``.
    """
    rows = [(f"u{i:02d}", ITEM_FRAMES[i], "hello world") for i in range(items)]
    testset = make_testset(tmp_path / "set", rows)
    lines = ["[site]", 'name = "t"', 'runs = "runs"']
    lines += [f"{k} = {toml_value(v)}" for k, v in (site_keys or {}).items()]
    lines += ["", "[devices.local]", 'kind = "local"', "", "[devices.box]", 'kind = "ssh"']
    lines += [f"{k} = {toml_value(v)}" for k, v in box.items()]
    lines += [
        "",
        "[tasks.asr]",
        'kind = "asr"',
        f"testset = {toml_value(str(testset))}",
        "budget = { seconds = 5.0, hang_seconds = 5.0 }",
        "",
    ]
    for name, cfg in systems.items():
        lines.append(f"[systems.{name}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in ({"tasks": ["asr"]} | cfg).items()]
        lines.append("")
    path = tmp_path / "site.toml"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@dataclass
class LiveRun:
    """`onsite run SITE --console 127.0.0.1:0` started as the operator would."""

    process: subprocess.Popen[str]
    url: str
    run_dir: Path
    lines: list[str]

    def wait(self, timeout: float = 120) -> int:
        """Wait for the run to end; returns its exit code."""
        out, _ = self.process.communicate(timeout=timeout)
        self.lines.extend(out.splitlines())
        return self.process.returncode


def start_run(site: Path, *extra: str, env: dict[str, str] | None = None) -> LiveRun:
    """Start a run with its console on a free loopback port; returns once the URL is printed."""
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "run", str(site), "--console", "127.0.0.1:0", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={
            **os.environ,
            "CI": "1",
            "PYTHONUNBUFFERED": "1",
            "ONSITE_CONSOLE_TOKEN": TOKEN,
            **(env or {}),
        },
    )
    lines: list[str] = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        found = re.search(r"console: (http://\S+?)/?$", line.strip())
        if found:
            return LiveRun(process, found.group(1), site.parent / "runs" / "t", lines)
    process.wait()
    raise AssertionError("the console URL was never printed:\n" + "\n".join(lines))


def serve_run_dir(run_dir: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """`onsite console RUN_DIR --listen 127.0.0.1:0`; returns the process and its URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", "console", str(run_dir), "--listen", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "CI": "1", "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:
        seen.append(line)
        found = re.search(r"console: (http://\S+?)/?(\?token=\S+)?$", line.strip())
        if found:
            return process, found.group(1)
    raise AssertionError("the console URL was never printed:\n" + "".join(seen))


def call(
    url: str, method: str = "GET", token: str | None = None, timeout: float = 60
) -> tuple[int, Any]:
    """One HTTP call; returns the status and the decoded JSON body (or text)."""
    request = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            status, body = response.status, response.read()
    except urllib.error.HTTPError as exc:
        status, body = exc.code, exc.read()
    try:
        return status, json.loads(body)
    except json.JSONDecodeError:
        return status, body.decode()


def wait_for(predicate: Any, timeout: float = 60, step: float = 0.05) -> Any:
    """Poll until ``predicate()`` is truthy; returns its value."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    raise AssertionError("timed out waiting")


def journal(run_dir: Path) -> list[dict[str, Any]]:
    """Every record of the run's journal."""
    path = run_dir / "journal.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def job_status(base: str, system: str = "alpha") -> dict[str, Any]:
    """The /api/status entry of one job."""
    status, body = call(base + "/api/status")
    assert status == 200, body
    return next(j for j in body["jobs"] if j["system"] == system)
