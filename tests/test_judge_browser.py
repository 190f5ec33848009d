"""A real headless Chromium completes trials of every kind on the panel's pages.

The audio really plays (the answer form opens only once playback has ended), and
the pair trial plays A then B once only. Screenshots go to test-artifacts/.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.judge_helpers import TTS_TASK, copy_run, make_text_run, make_tts_run, serving

pytestmark = pytest.mark.browser

ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--autoplay-policy=no-user-gesture-required",
]


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not installed")
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _ended_count(page) -> int:
    # A play-once sample is dropped by the page once it has ended (data-ended stays).
    return int(
        page.evaluate(
            "[...document.querySelectorAll('audio')].filter(a => a.ended || a.dataset.ended).length"
        )
    )


def _media_events(store, event: str) -> list[str]:
    return [
        r["data"]["media"]
        for r in store.journal_rows()
        if r["event"] == event and "media" in r["data"]
    ]


def test_sus_trial_in_chromium(tts_run: Path, tmp_path: Path, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "sus", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        page = browser.new_page()
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="play"]')
        submit = page.locator('[data-testid="submit"]')
        assert submit.is_disabled(), "the form opens only after listening"
        page.screenshot(path=str(ARTIFACTS / "judge-sus-before.png"))
        page.click('[data-testid="play"]')
        page.wait_for_function("!document.querySelector('[data-testid=\"submit\"]').disabled")
        assert _ended_count(page) == 1, "the sentence was played to its end"
        blanks = page.locator("input.blank")
        for n in range(blanks.count()):
            blanks.nth(n).fill(f"word{n}")
        page.screenshot(path=str(ARTIFACTS / "judge-sus-filled.png"))
        submit.click()
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 2')"
        )
        [answer] = store.answers()
        assert answer.answer == {"blanks": [f"word{n}" for n in range(blanks_count(answer))]}
        assert answer.plays == 1
        # SUS may be replayed: the play button is enabled again and a replay is counted.
        page.click('[data-testid="play"]')
        page.wait_for_function("!document.querySelector('[data-testid=\"submit\"]').disabled")
        for n in range(page.locator("input.blank").count()):
            page.locator("input.blank").nth(n).fill("x")
        page.click('[data-testid="play"]')
        page.wait_for_function("!document.querySelector('[data-testid=\"submit\"]').disabled")
        page.click('[data-testid="submit"]')
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 3')"
        )
        assert store.answers()[1].plays == 2
        page.close()


def blanks_count(answer) -> int:
    return len(answer.answer["blanks"])


def test_pair_trial_in_chromium(tts_run: Path, tmp_path: Path, browser) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "pair", judges=2, seed=0) as (base, store):
        token = store.tokens()["J1"]
        page = browser.new_page()
        requested: list[tuple[str, str | None]] = []
        page.on(
            "request",
            lambda r: (
                requested.append((r.url, r.headers.get("range"))) if "/media/" in r.url else None
            ),
        )
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="play"]')
        assert page.locator("audio").count() == 2
        assert requested == [], "nothing is fetched before the judge presses play"
        page.screenshot(path=str(ARTIFACTS / "judge-pair-before.png"))
        page.click('[data-testid="play"]')
        page.wait_for_selector('[data-testid="playing"]:has-text("now playing A")')
        page.wait_for_function("!document.querySelector('[data-testid=\"submit\"]').disabled")
        assert _ended_count(page) == 2, "A and B were both played to their end"
        # Played once only: the button stays disabled.
        assert page.locator('[data-testid="play"]').is_disabled()
        assert "once only" in page.locator('[data-testid="playing"]').inner_text()
        # Chromium's media element asked for each sample once (a Range of bytes=0- or none),
        # got it whole, and played it: one play, one request, journaled once each.
        urls = [u for u, _ in requested]
        assert len(urls) == 2 and len(set(urls)) == 2, requested
        assert {r for _, r in requested} <= {None, "bytes=0-"}, requested
        assert sorted(_media_events(store, "played")) == sorted(
            u.rsplit("/", 1)[1][:-4] for u in urls
        )
        assert _media_events(store, "refused") == []
        # The page dropped both samples (nothing left in them to play again) ...
        dropped = page.evaluate(
            "[...document.querySelectorAll('audio')].map(a => [a.getAttribute('src'),"
            " a.readyState])"
        )
        assert dropped == [[None, 0], [None, 0]]
        # ... and asking the panel again, as a page or a media element would, is a 410.
        replays = page.evaluate(
            """async urls => {
              const out = [];
              for (const u of urls) {
                out.push((await fetch(u, {headers: {Range: "bytes=1-"}})).status);
                const a = new Audio(u);
                out.push(await a.play().then(() => "played", e => e.name));
              }
              return out;
            }""",
            urls,
        )
        assert replays == [410, "NotSupportedError"] * 2, replays
        assert len(_media_events(store, "played")) == 2
        assert len(_media_events(store, "refused")) == 4
        page.check('[data-testid="score-1"]')
        page.screenshot(path=str(ARTIFACTS / "judge-pair-answered.png"))
        page.click('[data-testid="submit"]')
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 2')"
        )
        [answer] = store.answers()
        assert answer.answer == {"score": 1} and answer.plays == 1 and answer.judge == "J1"
        # Submitting without a choice is refused with the reason shown, nothing stored.
        page.click('[data-testid="play"]')
        page.wait_for_function("!document.querySelector('[data-testid=\"submit\"]').disabled")
        page.click('[data-testid="submit"]')
        page.wait_for_function("document.querySelector('[data-testid=\"error\"]').textContent")
        assert "integer" in page.locator('[data-testid="error"]').inner_text()
        assert len(store.answers()) == 1
        # Closing the browser and coming back resumes at the same trial, which was heard
        # already: played once only, it is not played again, the form is open.
        page.close()
        page = browser.new_page()
        page.goto(f"{base}/judge/{token}")
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 2')"
        )
        assert page.locator('[data-testid="play"]').is_disabled()
        assert "already played" in page.locator('[data-testid="playing"]').inner_text()
        page.check('[data-testid="score--2"]')
        page.click('[data-testid="submit"]')
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 3')"
        )
        assert store.answers()[1].answer == {"score": -2}
        page.close()
        # The operator sees the progress.
        operator = browser.new_page()
        operator.goto(f"{base}/operator/{store.meta()['operator']}")
        operator.wait_for_selector("#rows tr")
        assert "J1" in operator.inner_text("#rows")
        operator.screenshot(path=str(ARTIFACTS / "judge-operator.png"))
        operator.close()


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_text_run(tmp_path_factory.mktemp("mt"), "mt")


@pytest.fixture(scope="module")
def cws_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_text_run(tmp_path_factory.mktemp("cws"), "cws")


def test_mt_summary_and_review_trials_in_chromium(
    mt_run: Path, cws_run: Path, tmp_path: Path, browser
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    run = copy_run(mt_run, tmp_path / "mt")
    with serving(run, "mt", "mt-adequacy-fluency", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        page = browser.new_page()
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="adequacy_2"]')
        assert "Source:" in page.inner_text("#trial")
        # The criteria of the survey's Tables 18 and 19 are on the page.
        assert "5: All information" in page.inner_text("#trial")
        assert "0: Incomprehensible" in page.inner_text("#trial")
        # One decimal at most: 4.25 is refused with the reason, nothing stored.
        for field, value in (("adequacy_1", "4.25"), ("fluency_1", "3"), ("adequacy_2", "2.5")):
            page.fill(f'[data-testid="{field}"]', value)
        page.fill('[data-testid="fluency_2"]', "5")
        page.evaluate("document.querySelectorAll('input.score').forEach(i => i.step = 'any')")
        page.click('[data-testid="submit"]')
        page.wait_for_function("document.querySelector('[data-testid=\"error\"]').textContent")
        assert "one decimal" in page.inner_text('[data-testid="error"]')
        page.fill('[data-testid="adequacy_1"]', "4.5")
        page.screenshot(path=str(ARTIFACTS / "judge-mt.png"))
        page.click('[data-testid="submit"]')
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 2')"
        )
        [answer] = store.answers()
        assert answer.answer == {
            "adequacy_1": 4.5,
            "fluency_1": 3,
            "adequacy_2": 2.5,
            "fluency_2": 5,
        }
        page.close()
    with serving(run, "mt", "summary", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        page = browser.new_page()
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="summary"]')
        assert "Document:" in page.inner_text("#trial") and "key points" in page.inner_text(
            "#trial"
        )
        page.fill('[data-testid="summary"]', "3.5")
        page.click('[data-testid="submit"]')
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 2')"
        )
        assert store.answers()[0].answer == {"summary": 3.5}
        page.close()
    cws = copy_run(cws_run, tmp_path / "cws")
    with serving(cws, "cws", "cws-review", judges=1, seed=0) as (base, store):
        [token] = store.tokens().values()
        page = browser.new_page()
        page.goto(f"{base}/judge/{token}")
        page.wait_for_selector('[data-testid="accept-yes"]')
        assert "Reference:" in page.inner_text("#trial")
        page.check('[data-testid="accept-yes"]')
        page.screenshot(path=str(ARTIFACTS / "judge-cws-review.png"))
        page.click('[data-testid="submit"]')
        page.wait_for_function(
            "document.getElementById('progress').textContent.startsWith('Trial 2')"
            " || document.querySelector('[data-testid=\"done\"]')"
        )
        assert store.answers()[0].answer == {"accept": True}
        page.close()
