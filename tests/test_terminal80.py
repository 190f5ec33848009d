"""`onsite run`, `status` and `report` in an 80-column pseudo-terminal, as an operator sees them."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import FAKE_SERVE, REPO, make_testset, write_site

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")


def in_pty(*args: str, timeout: float = 120) -> tuple[int, str]:
    """Run `onsite ARGS` on a pseudo-terminal 80 columns wide; returns (exit code, screen text)."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env.update(COLUMNS="80", LINES="24", TERM="xterm-256color")
    process = subprocess.Popen(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
        close_fds=True,
    )
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        elif process.poll() is not None:
            break
    os.close(master)
    code = process.wait(timeout=10)
    return code, b"".join(chunks).decode("utf-8", "replace")


def visible_lines(text: str) -> list[str]:
    """What stays on screen line by line: escapes removed, carriage returns honoured."""
    lines = []
    for raw in ANSI.sub("", text).replace("\r\n", "\n").split("\n"):
        lines.append(raw.split("\r")[-1])
    return lines


def site_with_failures(tmp_path: Path, plan_env) -> Path:
    rows = [(f"utt{i}", 1600 + 160 * i, "the quick brown fox") for i in range(6)]
    testset = make_testset(tmp_path / "set", rows)
    plan = {frames: {"text": "the quick brown fox", "delay": 0.05} for _, frames, _ in rows}
    plan[rows[1][1]] = {"do": "crash"}
    plan[rows[2][1]] = {"do": "error"}
    env = plan_env(plan)
    return write_site(
        tmp_path / "site.toml",
        testset,
        {
            "a-long-system-name": {"command": FAKE_SERVE, "env": env},
            "second": {"command": FAKE_SERVE, "env": plan_env({})},
        },
        budget={"seconds": 5.0, "hang_seconds": 5.0, "scope": "set"},
        task="asr-set-budget",
    )


def test_run_status_and_report_are_legible_at_80_columns(tmp_path: Path, plan_env) -> None:
    site = site_with_failures(tmp_path, plan_env)
    code, screen = in_pty("run", str(site), "--system", "a-long-system-name")
    assert code == 0, screen
    lines = visible_lines(screen)
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert "…" not in screen, screen
    text = "\n".join(lines)
    assert "Leaderboard" in text and "a-long-system-name" in text
    assert "6/6" in text  # done/total in the progress display and the leaderboard
    assert re.search(r"WER \d+\.\d%", text)
    board = text.split("Leaderboard")[1]
    assert "1 crash" in board and "err" in board
    # The --system filter ran one job only.
    assert "second" not in text.split("Leaderboard")[0]

    run_dir = tmp_path / "runs" / "t"
    code, screen = in_pty("status", str(run_dir))
    assert code == 0
    lines = visible_lines(screen)
    assert max(len(line) for line in lines) <= 80, "\n".join(lines)
    assert "…" not in screen
    text = "\n".join(lines)
    assert "Status: asr-set-budget" in text
    rows = {line.split()[0]: line for line in lines if line.strip().startswith(("a-", "second"))}
    assert "done" in rows["a-long-system-name"] and "6/6" in rows["a-long-system-name"]
    assert "waiting" in rows["second"] and "0/6" in rows["second"]
    assert "no controller is running" in " ".join(text.split())

    # --watch refreshes in place; --until-stopped ends it once no controller works there.
    code, screen = in_pty("status", str(run_dir), "--watch", "--until-stopped")
    assert code == 0 and "Status: asr-set-budget" in screen
    assert max(len(line) for line in visible_lines(screen)) <= 80

    code, screen = in_pty("report", str(run_dir))
    assert code == 0
    assert max(len(line) for line in visible_lines(screen)) <= 80
    assert "…" not in screen


def test_report_json_has_the_running_score_and_a_set_budget_in_progress(
    tmp_path: Path, plan_env
) -> None:
    site = site_with_failures(tmp_path, plan_env)
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "run", str(site), "--limit", "3"],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    run_dir = tmp_path / "runs" / "t"
    report = subprocess.run(
        [sys.executable, "-m", "harness.cli", "report", str(run_dir), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    rows = {row["system"]: row for row in json.loads(report.stdout)}
    row = rows["a-long-system-name"]
    # 3 items (1 crash): 100 - speed points - 1 crash per 3 items (weight 1 per 100 items).
    assert 0 <= row["running_score"] <= 100 - 100 / 3
    assert row["in_progress"] is False, "a job that finished its --limit items is done"
    # A job interrupted mid-way: its set budget is shown as in progress, not as met.
    journal = run_dir / "journal.jsonl"
    lines = journal.read_text(encoding="utf-8").splitlines()
    kept = [
        line
        for line in lines
        if json.loads(line)["event"] != "job_finished" or json.loads(line)["system"] != "second"
    ]
    assert len(kept) == len(lines) - 1
    journal.write_text("\n".join(kept) + "\n", encoding="utf-8")
    wide = subprocess.run(
        [sys.executable, "-m", "harness.cli", "report", str(run_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )
    second = next(line for line in wide.stdout.splitlines() if "second" in line)
    assert "in progress" in second and "met" not in second, wide.stdout
