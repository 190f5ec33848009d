"""The console in headless Chromium during a real run: live updates, pause from the page."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.console_run import TOKEN, journal, slow_site, start_run
from tests.helpers import REPO, read_outputs

ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

pytestmark = pytest.mark.browser


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


def _done(page: Any) -> int:
    text = page.locator('tr[data-job="asr/alpha"] td[data-col="done"]').inner_text()
    return int(text.split("/")[0])


def _sign_in(page: Any) -> None:
    """Sign in as the operator from the overview's sign-in link."""
    page.locator("#sign-in").click()
    page.fill("#token", TOKEN)
    page.locator("#sign-in-form button").click()
    page.locator("#stop").wait_for(state="visible", timeout=30_000)


def test_overview_updates_live_and_pause_from_the_page(tmp_path: Path, plan_env, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    items = 24
    run = start_run(slow_site(tmp_path, plan_env, items=items, delay=0.3))
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(run.url + "/")
        row = page.locator('tr[data-job="asr/alpha"]')
        row.locator('td[data-col="state"]').filter(has_text="running").wait_for(timeout=60_000)
        # A marker a reload would wipe: the numbers below must change without one.
        page.evaluate("window.notReloaded = true")
        first = _done(page)
        page.wait_for_function(
            f"""() => parseInt(document.querySelector(
                'tr[data-job="asr/alpha"] td[data-col="done"]').textContent) > {first}""",
            timeout=60_000,
        )
        assert page.evaluate("window.notReloaded") is True
        assert "wer" in row.locator('td[data-col="quality"]').inner_text().lower()
        # With its 95% interval of the items so far: "WER 4.2% [0.0, 12.5]".
        assert "[" in row.locator('td[data-col="quality"]').inner_text()
        assert "rtf" in row.locator('td[data-col="speed"]').inner_text().lower()
        page.screenshot(path=str(ARTIFACTS / "console-overview.png"), full_page=True)
        # The overview fits a 1280-pixel window: nothing to scroll sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        assert page.evaluate(
            "(() => { const b = document.querySelector('#jobs').parentElement;"
            " return b.scrollWidth <= b.clientWidth; })()"
        )

        # Without the token the page shows no controls; the operator signs in.
        assert row.locator("button.toggle").is_hidden()
        _sign_in(page)
        row.locator("button.toggle").click()
        row.locator('td[data-col="state"]').filter(has_text="paused").wait_for(timeout=60_000)
        row.locator('td[data-col="inflight"]').filter(has_text="-").wait_for(timeout=60_000)
        held = _done(page)
        time.sleep(1.5)
        assert _done(page) == held, "a paused job gets no new items"

        job_page = browser.new_page(viewport={"width": 1280, "height": 900})
        job_page.goto(run.url + "/jobs/asr/alpha")
        job_page.locator("#items tbody tr").nth(held - 1).wait_for(timeout=60_000)
        assert job_page.locator("#time-chart circle").count() >= held
        job_page.locator("#quality-chart polyline").wait_for(state="attached", timeout=30_000)
        job_page.screenshot(path=str(ARTIFACTS / "console-job.png"), full_page=True)

        board = browser.new_page(viewport={"width": 1280, "height": 720})
        board.goto(run.url + "/board")
        board.locator('table[data-task="asr"] tr[data-system="alpha"]').wait_for(timeout=60_000)
        board.screenshot(path=str(ARTIFACTS / "console-board.png"), full_page=True)

        row.locator("button.toggle").filter(has_text="resume").click()
        # The job page follows along without a reload.
        job_page.locator("#items tbody tr").nth(held).wait_for(timeout=60_000)
        # The run's end is the stream's last event.
        row.locator('td[data-col="state"]').filter(has_text="done").wait_for(timeout=120_000)
        assert _done(page) == items
        assert run.wait() == 0, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    records = journal(run.run_dir)
    assert [r["action"] for r in records if r["event"] == "operator_action"] == ["pause", "resume"]
    outputs = read_outputs(run.run_dir, "asr", "alpha")
    assert sorted(o["id"] for o in outputs) == [f"u{i:02d}" for i in range(items)]
    assert set(Counter(r["item"] for r in records if r["event"] == "dispatched").values()) == {1}


def test_waiting_device_shown_live_and_a_failed_job_retried_from_the_page(
    tmp_path: Path, plan_env, browser
) -> None:
    from tests.console_run import fake, two_device_site
    from tests.sshd import start_sshd

    ARTIFACTS.mkdir(exist_ok=True)
    machine = start_sshd(tmp_path / "box")
    machine.stop()  # a participant machine that is off
    items = 8
    site = two_device_site(
        tmp_path,
        {
            "alpha": fake(plan_env, delay=0.02, device="box"),
            "beta": fake(plan_env, delay=0.02, crash_at=1, max_restarts=0, device="local"),
            "gamma": fake(plan_env, delay=0.3, device="local"),
        },
        box=machine.options(workdir=str(tmp_path / "remote"), first_connect_timeout=1.0),
        items=items,
    )
    run = start_run(site)
    try:
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(run.url + "/")
        alpha = page.locator('tr[data-job="asr/alpha"] td[data-col="state"]')
        alpha.filter(has_text="waiting_for_device").wait_for(timeout=60_000)
        alpha.locator(".wait").filter(has_text="next try in").wait_for(timeout=30_000)
        assert "tries so far" in alpha.inner_text()
        assert "cannot reach" in alpha.locator(".wait-error").inner_text()

        beta = page.locator('tr[data-job="asr/beta"]')
        beta.locator('td[data-col="state"]').filter(has_text="failed").wait_for(timeout=60_000)
        retry = beta.locator("button.retry")
        # Without the token the page shows no controls; the operator signs in.
        assert retry.is_hidden()
        _sign_in(page)
        retry.wait_for(state="visible", timeout=30_000)
        assert page.locator('tr[data-job="asr/gamma"] button.retry').is_hidden()
        page.screenshot(path=str(ARTIFACTS / "console-waiting-retry.png"), full_page=True)
        assert page.evaluate("document.documentElement.scrollWidth") <= 1280
        # The last error wraps inside its cell: the table still fits its box.
        overflow = page.evaluate(
            "(() => { const b = document.querySelector('#jobs').parentElement;"
            " return b.scrollWidth - b.clientWidth; })()"
        )
        assert overflow <= 0, overflow
        retry.click()
        beta.locator('td[data-col="state"]').filter(has_text="done").wait_for(timeout=120_000)
        assert retry.is_hidden()
        page.locator('tr[data-device="box"] button[data-action="skip"]').click()
        alpha.filter(has_text="skipped").wait_for(timeout=60_000)
        assert run.wait() == 1, "\n".join(run.lines)
    finally:
        if run.process.poll() is None:
            run.process.kill()
    records = journal(run.run_dir)
    actions = [
        (r["action"], r.get("system"), r.get("device"))
        for r in records
        if r["event"] == "operator_action"
    ]
    assert actions == [("retry", "beta", None), ("skip", None, "box")]
    outputs = read_outputs(run.run_dir, "asr", "beta")
    assert sorted(o["id"] for o in outputs) == [f"u{i:02d}" for i in range(items)]
    sent = Counter(
        r["item"] for r in records if r["event"] == "dispatched" and r["system"] == "beta"
    )
    assert set(sent.values()) == {1}
