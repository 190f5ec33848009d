"""The console's pages in headless Chromium at a laptop's 1366x768 and a phone's 390x844:
nothing cut off, a scroll hint where the table scrolls, the controls for the operator only,
and the read-only console without any."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console_run import TOKEN, serve_run_dir, slow_site, start_run
from tests.helpers import REPO
from tests.test_console_browser import CHROMIUM_ARGS

ARTIFACTS = REPO / "test-artifacts"
LAPTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}

pytestmark = pytest.mark.browser

# The overview's table box: what it needs against what it has.
JOBS_OVERFLOW = (
    "(() => { const b = document.querySelector('#jobs').parentElement;"
    " return b.scrollWidth - b.clientWidth; })()"
)
VIEWPORT_TAG = "document.querySelector('meta[name=viewport]')?.content || ''"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (no browser is downloaded)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def _visible_controls(page: Any) -> list[str]:
    """The buttons and inputs a viewer can see (and so click or type into)."""
    return page.evaluate(
        "[...document.querySelectorAll('button, input')]"
        ".filter(e => e.offsetParent !== null).map(e => e.id || e.textContent)"
    )


def _wait_live(page: Any) -> None:
    page.locator("#live.live-on").wait_for(timeout=60_000)


def test_live_console_at_laptop_and_phone_sizes(tmp_path: Path, plan_env, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    run = start_run(slow_site(tmp_path, plan_env, items=30, delay=0.3, systems=3))
    try:
        # The operator, from the operator link (the token in the fragment).
        page = browser.new_page(viewport=LAPTOP)
        page.goto(run.url + "/#operator=" + TOKEN)
        row = page.locator('tr[data-job="asr/alpha"]')
        row.locator('td[data-col="state"]').filter(has_text="running").wait_for(timeout=60_000)
        _wait_live(page)
        # The fragment left the address bar at once; the controls are there.
        assert "#" not in page.url
        page.locator("#stop").wait_for(state="visible", timeout=30_000)
        assert row.locator("button.toggle").is_visible()
        assert page.locator('tr[data-device="local"] button[data-action="skip"]').is_visible()
        # Green while the stream is connected.
        color = page.evaluate("getComputedStyle(document.getElementById('live')).color")
        assert color == "rgb(63, 185, 80)", color
        # A device running a system says so (not "-").
        device = page.locator('tr[data-device="local"] td.state')
        device.filter(has_text="running").wait_for(timeout=30_000)
        # The speed in three significant digits: "0.123 / 0.456 RTF", never "0.12345".
        speed = row.locator('td[data-col="speed"]').inner_text()
        assert "rtf" in speed.lower()
        for figure in speed.split()[0:3:2]:
            assert len(figure.replace(".", "").lstrip("0")) <= 3, speed
        assert page.evaluate("[sig(198563.83), sig(290367.98), sig(1234567), sig(0.012345)]") == [
            "199k",
            "290k",
            "1.23M",
            "0.0123",
        ]
        page.screenshot(path=str(ARTIFACTS / "console-1366-operator.png"), full_page=True)
        # Every column of the overview fits 1366 pixels, controls included.
        assert page.evaluate(JOBS_OVERFLOW) <= 0
        assert page.evaluate("document.documentElement.scrollWidth") <= LAPTOP["width"]
        assert page.locator("#scroll-hint").is_hidden()
        assert "width=device-width" in page.evaluate(VIEWPORT_TAG)

        # A viewer without the operator's token: no controls, no token field; only the
        # link to sign in, since this console has controls.
        viewer = browser.new_page(viewport=PHONE)
        viewer.goto(run.url + "/")
        viewer.locator('tr[data-job="asr/alpha"] td[data-col="state"]').filter(
            has_text="running"
        ).wait_for(timeout=60_000)
        _wait_live(viewer)
        viewer.locator("#sign-in").wait_for(state="visible", timeout=30_000)
        assert _visible_controls(viewer) == []
        # On a phone the table scrolls, and the page says so above it.
        assert viewer.evaluate(JOBS_OVERFLOW) > 0
        viewer.locator("#scroll-hint").wait_for(state="visible", timeout=30_000)
        assert "sideways" in viewer.locator("#scroll-hint").inner_text()
        assert "width=device-width" in viewer.evaluate(VIEWPORT_TAG)
        viewer.screenshot(path=str(ARTIFACTS / "console-390-viewer.png"), full_page=True)

        # Signing in with a wrong token shows nothing more; with the right one, the controls.
        viewer.locator("#sign-in").click()
        viewer.fill("#token", "not-the-token")
        viewer.locator("#sign-in-form button").click()
        viewer.locator("#msg").filter(has_text="not this run's operator token").wait_for(
            timeout=30_000
        )
        assert viewer.locator("#stop").is_hidden()
        viewer.fill("#token", TOKEN)
        viewer.locator("#sign-in-form button").click()
        viewer.locator("#stop").wait_for(state="visible", timeout=30_000)
        assert viewer.locator("#token").is_hidden()

        job = browser.new_page(viewport=PHONE)
        job.goto(run.url + "/jobs/asr/alpha")
        job.locator("#items tbody tr").first.wait_for(timeout=60_000)
        assert "width=device-width" in job.evaluate(VIEWPORT_TAG)
        job.screenshot(path=str(ARTIFACTS / "console-390-job.png"), full_page=True)
        assert run.wait(timeout=300) == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()

    # The finished run in the read-only console: no controls, no token field, no sign-in.
    process, url = serve_run_dir(run.run_dir, "127.0.0.1:0")
    try:
        for name, size in (("1366", LAPTOP), ("390", PHONE)):
            page = browser.new_page(viewport=size)
            page.goto(url + "/")
            page.locator('tr[data-job="asr/gamma"] td[data-col="state"]').filter(
                has_text="done"
            ).wait_for(timeout=60_000)
            _wait_live(page)
            # The page asked the console whether it has controls: it has none.
            page.locator("body[data-operator=checked]").wait_for(state="attached")
            assert _visible_controls(page) == []
            assert page.locator("#sign-in").is_hidden()
            assert page.locator("#token").is_hidden()
            assert page.locator('tr[data-device="local"] td.state').inner_text() == "done"
            page.screenshot(path=str(ARTIFACTS / f"console-{name}-readonly.png"), full_page=True)
            if size is LAPTOP:
                assert page.evaluate(JOBS_OVERFLOW) <= 0
            else:
                assert page.locator("#scroll-hint").is_visible()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_html_report_has_a_viewport_tag(tmp_path: Path, plan_env, browser) -> None:
    run = start_run(slow_site(tmp_path, plan_env, items=3, delay=0.01))
    assert run.wait() == 0, "\n".join(run.lines)
    html = tmp_path / "report.html"
    subprocess.run(
        [sys.executable, "-m", "harness.cli", "report", str(run.run_dir), "--html", str(html)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    page = browser.new_page(viewport=PHONE)
    page.goto(html.as_uri())
    assert "width=device-width" in page.evaluate(VIEWPORT_TAG)
    page.screenshot(path=str(ARTIFACTS / "report-390.png"), full_page=True)
