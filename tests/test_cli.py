"""The `onsite` command as a user runs it: run, check, status, report."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import FAKE_SERVE, make_testset, onsite, write_site


def fake_site(tmp_path: Path, plan_env) -> Path:
    testset = make_testset(
        tmp_path / "set",
        [("u1", 1600, "hello world"), ("u2", 3200, "good morning"), ("u3", 4800, "bye")],
        conditions=True,
    )
    env = plan_env({1600: {"text": "hello world"}, 3200: {"text": "good evening"}, 4800: {}})
    return write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}, "broken": {"command": ["/nonexistent"]}},
    )


def test_run_status_report(tmp_path: Path, plan_env) -> None:
    site = fake_site(tmp_path, plan_env)
    run = onsite("run", str(site))
    assert run.returncode == 1, "a job that could not start makes the run exit non-zero"
    assert "job asr / broken failed" in run.stdout
    assert "cannot start '/nonexistent'" in run.stdout
    assert "Leaderboard" in run.stdout
    run_dir = tmp_path / "runs" / "t"

    report = onsite("report", str(run_dir), "--json")
    assert report.returncode == 0, report.stderr
    rows = {row["system"]: row for row in json.loads(report.stdout)}
    fake = rows["fake"]
    # 5 reference words: "hello world" right, "good morning" -> "good evening" (1 sub),
    # "bye" -> "" (1 deletion): WER = 2/5.
    assert fake["wer"] == fake["score"] == 2 / 5 and fake["metric"] == "wer"
    assert (fake["substitutions"], fake["deletions"], fake["insertions"]) == (1, 1, 0)
    assert fake["items"] == 3 and fake["completed"] == 3 and fake["scored"] == 3
    for key in (
        "rtf_mean",
        "rtf_p95",
        "rtf_max",
        "over_budget",
        "timeouts",
        "crashes",
        "errors",
        "setup_seconds",
    ):
        assert key in fake
    assert rows["broken"]["completed"] == 0 and rows["broken"]["wer"] is None

    full = json.loads(onsite("report", str(run_dir), "--json", "--full").stdout)
    by_condition = full[0]["scores"]["by_condition"]
    assert set(by_condition) == {"clean"}

    table = onsite("report", str(run_dir))
    assert "WER 40.0%" in table.stdout

    html, csv, js = tmp_path / "r.html", tmp_path / "r.csv", tmp_path / "r.json"
    files = onsite(
        "report", str(run_dir), "--html", str(html), "--csv", str(csv), "--json-file", str(js)
    )
    assert files.returncode == 0, files.stderr
    assert f"wrote {html}" in files.stdout
    assert "VALID" in html.read_text() and "manifest" in html.read_text().lower()
    assert csv.read_text().count("\n") == 3, "a header and a line per job"
    assert json.loads(js.read_text())

    status = onsite("status", str(run_dir))
    assert status.returncode == 0
    assert "no controller is running" in status.stdout
    assert "3/3" in status.stdout and "done" in status.stdout and "failed" in status.stdout


def test_check_is_a_dry_run_that_writes_nothing(tmp_path: Path, plan_env) -> None:
    site = fake_site(tmp_path, plan_env)
    check = onsite("check", str(site), "--items", "2")
    assert check.returncode == 1, "the broken system fails the check"
    assert "Dry run" in check.stdout
    assert "u1" in check.stdout and "u2" in check.stdout and "u3" not in check.stdout
    assert "ready (fake 1.0)" in check.stdout
    assert "not started" in check.stdout
    assert not (tmp_path / "runs").exists(), "check must not touch the run directory"


def test_report_on_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    report = onsite("report", str(tmp_path))
    assert report.returncode == 2
    assert "not a run directory" in report.stderr
