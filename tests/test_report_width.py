"""The HTML report in Chromium at 1280 px: no page-wide scrolling, per-item detail collapsed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.console_run import slow_site
from tests.helpers import REPO
from tests.test_console_browser import ARTIFACTS, browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.browser


def _onsite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "CI": "1"},
    )


def test_report_fits_1280_and_shows_items_on_demand(tmp_path: Path, plan_env, browser) -> None:  # noqa: F811
    site = slow_site(tmp_path, plan_env, items=6, delay=0.0, systems=3)
    assert _onsite("run", str(site)).returncode == 0
    html = tmp_path / "report.html"
    done = _onsite("report", str(tmp_path / "runs" / "t"), "--html", str(html))
    assert done.returncode == 0, done.stderr

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(html.as_uri())
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    # Wide tables scroll inside their own box, never the page.
    boxes = page.locator(".tablebox")
    assert boxes.count() > 0
    details = page.locator("details.items")
    assert details.count() == 3
    opened = "[...document.querySelectorAll('details.items')].some(d => d.open)"
    assert page.evaluate(opened) is False
    first = details.first
    assert not first.locator("tbody tr").first.is_visible()
    first.locator("summary").click()
    rows = first.locator("tbody tr")
    assert rows.count() == 6
    assert "hello world" in rows.first.inner_text()  # output and reference
    first.locator("input[type=search]").fill("u05")
    assert [rows.nth(i).is_visible() for i in range(6)] == [False] * 5 + [True]
    assert "hello" in rows.nth(5).inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-1280.png"), full_page=False)
