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
    lines += ["", "[devices.local]", 'transport = "local"']
    lines += ["", "[devices.box]", 'transport = "ssh"']
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


def raw_request(
    base: str,
    method: str,
    path: str,
    headers: dict[str, bytes] | None = None,
    timeout: float = 30,
) -> tuple[int, dict[str, str], bytes]:
    """One request sent byte for byte as given (no client library: the attacks are requests
    a library would not send); ``Host`` defaults to the URL's. Returns the status, the
    headers (lower-case names) and the body, read until the server closes."""
    import socket

    host, port = base.split("://", 1)[1].rsplit(":", 1)
    fields = {"Host": f"{host}:{port}".encode(), "Connection": b"close", **(headers or {})}
    head = f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + b"".join(
        name.encode() + b": " + value + b"\r\n" for name, value in fields.items()
    )
    with socket.create_connection(("127.0.0.1", int(port)), timeout=timeout) as conn:
        conn.sendall(head + b"\r\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    top, _, body = data.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    found = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        found[name.strip().lower()] = value.strip()
    return int(lines[0].split()[1]), found, body


def listening_pids(port: int) -> set[int]:
    """The processes holding the TCP socket that listens on ``port`` (read from /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table, encoding="ascii") as fh:
            for row in list(fh)[1:]:
                fields = row.split()
                if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "0A":
                    inodes.add(f"socket:[{fields[9]}]")
    return {pid for pid in _pids() if inodes & _fd_links(pid)}


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def _fd_links(pid: int) -> set[str]:
    try:
        names = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return set()
    links = set()
    for name in names:
        try:
            links.add(os.readlink(f"/proc/{pid}/fd/{name}"))
        except OSError:
            continue
    return links


def sockets_of(pid: int) -> int:
    """How many sockets the process has open."""
    return sum(1 for link in _fd_links(pid) if link.startswith("socket:"))


def proc_stat(pid: int | str) -> dict[str, int]:
    """From /proc/PID/stat (or PID/task/TID/stat for ``pid`` "PID/task/TID"): ppid, nice,
    CPU ticks (utime + stime), threads and the scheduling policy (5: SCHED_IDLE)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3 of stat(5)).
    return {
        "ppid": int(fields[1]),
        "cpu_ticks": int(fields[11]) + int(fields[12]),
        "nice": int(fields[16]),
        "threads": int(fields[17]),
        "policy": int(fields[38]),
    }
