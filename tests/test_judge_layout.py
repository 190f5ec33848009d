"""The judging pages in headless Chromium at a laptop's 1366x768 and a phone's 390x844.

Both pages carry a viewport tag; a pair trial says "once only" before it is played;
a grey Submit says why it is grey; the MT page does not scroll sideways on a phone,
and each translation's two score boxes keep their labels. Screenshots go to
test-artifacts/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO
from tests.judge_helpers import TTS_TASK, copy_run, make_text_run, make_tts_run, serving
from tests.test_judge_browser import CHROMIUM_ARGS
from tests.test_judge_pos_review import make_pos_run

pytestmark = pytest.mark.browser

ARTIFACTS = REPO / "test-artifacts"
SIZES = {"laptop": {"width": 1366, "height": 768}, "phone": {"width": 390, "height": 844}}
VIEWPORT_TAG = "document.querySelector('meta[name=viewport]')?.content || ''"
SIDEWAYS = "document.documentElement.scrollWidth - document.documentElement.clientWidth"
# Each score label: its box and the label's text on one line (top of the text == the box's).
LABELS = """[...document.querySelectorAll('.scores label')].map(l => {
  const box = l.querySelector('input').getBoundingClientRect();
  const r = l.getBoundingClientRect();
  return {h: r.height, boxh: box.height, right: r.right, width: innerWidth};
})"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (no browser is downloaded)."""
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not installed")
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_text_run(tmp_path_factory.mktemp("mt"), "mt")


@pytest.mark.parametrize("size", sorted(SIZES))
def test_pair_page_says_once_only_and_why_submit_is_grey(
    tts_run: Path, tmp_path: Path, browser: Any, size: str
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "pair", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        page = browser.new_page(viewport=SIZES[size])
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="play"]')
        assert "width=device-width" in page.evaluate(VIEWPORT_TAG)
        # Before anything is played: the notice is there and visible, nothing was fetched.
        notice = page.locator('[data-testid="play-once"]')
        assert notice.is_visible()
        assert "once only" in notice.inner_text()
        assert not [r for r in store.journal_rows() if r["event"] == "played"]
        # Submit is grey, and the reason stands next to it.
        assert page.locator('[data-testid="submit"]').is_disabled()
        reason = page.locator('[data-testid="submit-reason"]')
        assert reason.is_visible() and "audio has played" in reason.inner_text()
        assert page.evaluate(SIDEWAYS) <= 0
        page.screenshot(path=str(ARTIFACTS / f"judge-pair-before-{size}.png"), full_page=True)
        page.click('[data-testid="play"]')
        page.wait_for_function("!document.querySelector('[data-testid=\"submit\"]').disabled")
        # Played: the reason is gone, the notice still says once only.
        assert reason.inner_text() == ""
        assert "once only" in page.locator('[data-testid="playing"]').inner_text()
        page.screenshot(path=str(ARTIFACTS / f"judge-pair-played-{size}.png"), full_page=True)
        page.close()
        operator = browser.new_page(viewport=SIZES[size])
        operator.goto(f"{base}/operator/{store.meta()['operator']}")
        operator.wait_for_selector("#rows tr")
        assert "width=device-width" in operator.evaluate(VIEWPORT_TAG)
        assert operator.evaluate(SIDEWAYS) <= 0
        operator.screenshot(path=str(ARTIFACTS / f"judge-operator-{size}.png"), full_page=True)
        operator.close()


@pytest.mark.parametrize("size", sorted(SIZES))
def test_mt_score_boxes_fit_a_phone(mt_run: Path, tmp_path: Path, browser: Any, size: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    run = copy_run(mt_run, tmp_path)
    with serving(run, "mt", "mt-adequacy-fluency", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        page = browser.new_page(viewport=SIZES[size])
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="adequacy_2"]')
        assert "width=device-width" in page.evaluate(VIEWPORT_TAG)
        assert page.evaluate(SIDEWAYS) <= 0, "the page scrolls sideways"
        labels = page.evaluate(LABELS)
        assert len(labels) == 4
        for label in labels:
            # One line each: the label text never wraps away from its box, nothing sticks out.
            assert label["h"] < 2 * label["boxh"], label
            assert label["right"] <= label["width"], label
        # Text submission works: nothing to play, so Submit is open with no reason shown.
        assert not page.locator('[data-testid="submit"]').is_disabled()
        assert page.locator('[data-testid="submit-reason"]').inner_text() == ""
        page.screenshot(path=str(ARTIFACTS / f"judge-mt-{size}.png"), full_page=True)
        page.close()


def test_pos_review_trial_on_a_phone(tmp_path: Path, browser: Any) -> None:
    run = make_pos_run(tmp_path)
    with serving(run, "pos", "pos-review", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        page = browser.new_page(viewport=SIZES["phone"])
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="accept-yes"]')
        assert page.evaluate(SIDEWAYS) <= 0
        view = store.next_trial("J1")
        assert view is not None
        word, ref, alt = (
            view[1]["text"]["word"],
            view[1]["text"]["reference"],
            view[1]["text"]["system"],
        )
        assert word in page.inner_text('[data-testid="word"]')
        assert page.inner_text('[data-testid="reference"]') == ref
        assert page.inner_text('[data-testid="system"]') == alt
        page.screenshot(path=str(ARTIFACTS / "judge-pos-review-phone.png"), full_page=True)
        page.check('[data-testid="accept-yes"]')
        page.click('[data-testid="submit"]')
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 2')"
        )
        [answer] = store.answers()
        assert answer.answer == {"accept": True} and answer.item == f"{word}\t{ref}\t{alt}"
        page.close()
