"""The HTML, CSV and JSON report of a real run with the scripted fake systems, and a browser."""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from harness import load_site
from harness.engine.manifest import write_manifest
from harness.report import build_report, html_text, write_csv, write_html, write_json
from tests.helpers import FAKE_SERVE, REPO, make_testset, run_site, write_site

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",  # needed when the tests run as root (CI containers)
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two systems on four items: one clean, one that crashes once and answers badly once."""
    tmp = tmp_path_factory.mktemp("report")
    tmp.chmod(0o755)  # the sandboxed systems run as nobody and read their workdir
    testset = make_testset(
        tmp / "set",
        [("u1", 1600, "a b"), ("u2", 3200, "a b"), ("u3", 4800, "a b"), ("u4", 6400, "a")],
        conditions=True,
    )
    good = {"FAKE_PLAN": json.dumps({str(n): {"text": "a b", "delay": 0.05} for n in (1600, 3200)})}
    bad = {"FAKE_PLAN": json.dumps({"3200": {"do": "crash"}, "4800": {"do": "bad_output"}})}
    site_path = write_site(
        tmp / "site.toml",
        testset,
        {
            "good": {"command": FAKE_SERVE, "env": good, "description": "answers every item"},
            "bad": {"command": FAKE_SERVE, "env": bad, "description": "crashes <once> & more"},
        },
        budget={"seconds": 2.0, "hang_seconds": 5.0, "scope": "set"},
    )
    site = load_site(site_path)
    run_site(site_path)
    # The controller wrote a manifest at session start; this one adds a seed to look for.
    write_manifest(site.run_dir, site, None, {"seeds": {"order": 11}})
    return site.run_dir


@pytest.fixture(scope="module")
def report_html(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_html(build_report(run_dir), tmp_path_factory.mktemp("out") / "report.html")


def test_html_is_self_contained(report_html: Path) -> None:
    text = report_html.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.IGNORECASE)
    # One inline script (the per-item search) and nothing loaded from a file or the net.
    assert "<link" not in text and not re.search(r"<script[^>]*\bsrc", text)
    assert text.count("<script") == 1
    assert "<?xml" not in text, "figures are inlined without their XML prolog"


def test_html_shows_rows_verdicts_failures_and_manifest(run_dir: Path, report_html: Path) -> None:
    text = report_html.read_text(encoding="utf-8")
    manifest = json.loads((run_dir / "manifest.json").read_text())
    for system in ("good", "bad"):
        assert f"<b>{system}</b>" in text, "a leaderboard row per system"
        assert f'id="system-{system}"' in text
    assert text.count('<span class="VALID">VALID</span>') >= 1
    assert text.count('<span class="INVALID">INVALID</span>') >= 1
    assert "crashes within limit" in text and "1 (limit 0)" in text
    assert "invalid outputs within limit" in text
    assert "every item attempted" in text and "4/4 items completed" in text
    assert "set budget met" in text
    assert "crashing on purpose" in text, "each failure with its message"
    assert "crashes &lt;once&gt; &amp; more" in text, "text from the site file is escaped"
    assert manifest["site"]["sha256"] in text
    assert manifest["testsets"]["asr"]["sha256"] in text
    assert "order = 11" in text
    assert "WER by condition" in text
    assert text.count("<svg") >= 4, "WER, speed and one timing plot per system"


def test_report_is_deterministic(run_dir: Path, report_html: Path, tmp_path: Path) -> None:
    again = write_html(build_report(run_dir), tmp_path / "again.html")
    assert again.read_bytes() == report_html.read_bytes()
    assert html_text(build_report(run_dir)) == report_html.read_text(encoding="utf-8")
    first = write_json(build_report(run_dir), tmp_path / "a.json").read_bytes()
    assert write_json(build_report(run_dir), tmp_path / "b.json").read_bytes() == first


def test_csv_and_json(run_dir: Path, tmp_path: Path) -> None:
    data = build_report(run_dir)
    rows = list(csv.DictReader(write_csv(data, tmp_path / "r.csv").open(encoding="utf-8")))
    by_system = {row["system"]: row for row in rows}
    assert set(by_system) == {"good", "bad"}
    assert by_system["good"]["verdict"] == "VALID" and by_system["good"]["failed_rules"] == ""
    bad = by_system["bad"]
    assert bad["verdict"] == "INVALID"
    assert bad["failed_rules"] == "crashes within limit; invalid outputs within limit"
    assert (bad["crashes"], bad["invalid_outputs"], bad["restarts"]) == ("1", "1", "1")
    assert float(bad["running_score"]) < float(by_system["good"]["running_score"])

    exported = json.loads(write_json(data, tmp_path / "r.json").read_text(encoding="utf-8"))
    jobs = {j["row"]["system"]: j for j in exported["tasks"][0]["jobs"]}
    assert jobs["bad"]["verdict"]["verdict"] == "INVALID"
    assert [f["verdict"] for f in jobs["bad"]["failures"]] == ["crashed", "invalid_output"]
    assert len(jobs["good"]["timings"]) == 4
    assert exported["manifest"]["seeds"] == {"order": 11}
    assert exported["systems"][0]["environment"]["collected"].startswith("automatically")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.fail(
        "the browser test needs Chromium: install it with "
        "`sudo apt-get install -y chromium` (Debian/Ubuntu), then run the tests again"
    )


def run_chromium(*args: str) -> subprocess.CompletedProcess[str]:
    # A fresh profile each time: no state from another run, nothing written to $HOME.
    with tempfile.TemporaryDirectory(prefix="onsite-chromium-") as profile:
        return subprocess.run(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def test_report_renders_in_a_browser(report_html: Path) -> None:
    url = report_html.resolve().as_uri()
    dumped = run_chromium("--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    source = report_html.read_text(encoding="utf-8")
    # The browser parsed every table and figure the file holds.
    assert dom.count("<table") == source.count("<table") >= 6
    assert dom.count("<svg") == source.count("<svg") >= 4
    assert "<b>good</b>" in dom and "<b>bad</b>" in dom

    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "report.png"
    shot.unlink(missing_ok=True)
    taken = run_chromium("--window-size=1280,3000", f"--screenshot={shot}", url)
    assert taken.returncode == 0, taken.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(data) > 20_000, "a screenshot of a rendered page, not a blank one"
