"""The judging panel: balanced and blinded plans, the JSON API, restarts, scores.

Real parts only: espeak-ng synthesizes the run being judged, the panel is the
real Starlette app under uvicorn on 127.0.0.1, judges are threads speaking HTTP.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import threading
from collections import Counter
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from harness.judge.material import load_material
from harness.judge.panel import open_panel
from harness.judge.plan import balance, build_plan
from harness.judge.results import agreement, krippendorff_alpha, panel_warnings
from harness.judge.schema import validate
from harness.judge.store import PanelError, panel_path
from tests.judge_helpers import (
    SENTENCES,
    SUS,
    SYSTEMS,
    TESTSET_DIR,
    TTS_TASK,
    call,
    copy_run,
    judge_all,
    make_text_run,
    make_tts_run,
    onsite,
    serving,
)


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_text_run(tmp_path_factory.mktemp("mt"), "mt")


@pytest.fixture(scope="module")
def cws_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_text_run(tmp_path_factory.mktemp("cws"), "cws")


# --- plans ------------------------------------------------------------------------------


@pytest.mark.parametrize("judges", [1, 2, 4, 5])
def test_pair_plan_is_balanced(tts_run: Path, judges: int) -> None:
    material = load_material(tts_run, TTS_TASK, "pair")
    plan = build_plan("pair", material, judges, seed=7)
    systems = sorted(SYSTEMS)
    pairs = list(combinations(systems, 2))
    for judge in plan.judges:
        mine = plan.of(judge)
        # Every pair of systems on every sentence, once per judge.
        heard = Counter((t.item, frozenset(t.systems)) for t in mine)
        assert set(heard.values()) == {1}
        assert len(heard) == len(pairs) * len(SENTENCES)
        # Per pair and judge, the two orders differ by at most one (6 sentences: 3 and 3).
        for a, b in pairs:
            ab = sum(1 for t in mine if t.systems == (a, b))
            ba = sum(1 for t in mine if t.systems == (b, a))
            assert ab == ba == 3
        assert [t.position for t in mine] == list(range(len(mine)))
    counts = balance(plan)
    # Every system equally often on side A and on side B.
    assert len({counts.per_side[(s, side)] for s in systems for side in (0, 1)}) == 1
    assert counts.warnings == ()
    # Shuffled: the judges do not all hear the same order.
    if judges > 1:
        assert [t.item for t in plan.of(plan.judges[0])] != [
            t.item for t in plan.of(plan.judges[1])
        ]


def test_same_seed_same_plan_other_seed_other_order(tts_run: Path) -> None:
    material = load_material(tts_run, TTS_TASK, "pair")
    assert build_plan("pair", material, 3, 1) == build_plan("pair", material, 3, 1)
    assert build_plan("pair", material, 3, 1) != build_plan("pair", material, 3, 2)


@pytest.mark.parametrize("judges", [3, 6, 4])
def test_sus_plan_latin_square(tts_run: Path, judges: int) -> None:
    material = load_material(tts_run, TTS_TASK, "sus")
    assert set(material.items) == set(SUS)
    plan = build_plan("sus", material, judges, seed=3)
    for judge in plan.judges:
        mine = plan.of(judge)
        # A listener hears each SUS once only (else they would learn it).
        assert sorted(t.item for t in mine) == sorted(SUS)
        # 3 sentences over 3 systems: each system once.
        assert Counter(t.systems[0] for t in mine) == Counter(dict.fromkeys(SYSTEMS, 1))
    # Over every 3 consecutive judges each sentence is heard from every system.
    heard = Counter((t.item, t.systems[0]) for t in plan.trials if t.judge in plan.judges[:3])
    assert set(heard.values()) == {1} and len(heard) == 9


def test_mos_summary_mt_and_cws_plans(tts_run: Path, mt_run: Path, cws_run: Path) -> None:
    mos = build_plan("mos", load_material(tts_run, TTS_TASK, "mos"), 2, 0)
    for judge in mos.judges:
        assert Counter((t.item, t.systems) for t in mos.of(judge)) == Counter(
            {(s, (x,)): 1 for s in SENTENCES for x in SYSTEMS}
        )
    mt_material = load_material(mt_run, "mt", "mt-adequacy-fluency")
    mt = build_plan("mt-adequacy-fluency", mt_material, 3, 0)
    for judge in mt.judges:
        mine = mt.of(judge)
        assert sorted(t.item for t in mine) == sorted(mt_material.items)
        assert all(sorted(t.systems) == ["acme-mt", "zenith-mt"] for t in mine)
    # The translations are shown in varying orders.
    assert len({t.systems for t in mt.trials}) == 2
    cws_material = load_material(cws_run, "cws", "cws-review")
    assert cws_material.pieces, "the baseline segments some words differently from the gold"
    cws = build_plan("cws-review", cws_material, 2, 0)
    for judge in cws.judges:
        assert sorted(t.item for t in cws.of(judge)) == sorted(cws_material.pieces)
        assert all(t.systems == () for t in cws.of(judge))


def test_plans_refuse_what_cannot_be_judged(tts_run: Path, mt_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    with pytest.raises(PanelError, match="needs --judges"):
        open_panel(run, TTS_TASK, "pair", None, None)
    with pytest.raises(ValueError, match="judges mt tasks"):
        open_panel(run, TTS_TASK, "mt-adequacy-fluency", 2, 0)
    with pytest.raises(ValueError, match="no task 'nope'"):
        open_panel(run, "nope", "pair", 2, 0)
    assert not list((run / "judging").glob("*")), "a refused plan leaves no database"


# --- blinding and the API -----------------------------------------------------------------


def _served_text(seen: list) -> str:
    return json.dumps(seen, ensure_ascii=False)


@pytest.mark.parametrize("test", ["pair", "sus", "mos"])
def test_nothing_served_names_a_system_or_the_test_set(
    tts_run: Path, tmp_path: Path, test: str
) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, test, judges=2, seed=5) as (base, store):
        served = []
        for judge, token in store.tokens().items():
            status, page = call(base, "GET", f"/judge/{token}")
            assert status == 200 and b"<script>" in page
            served.append(page.decode())
            served += judge_all(base, token, judge)
        text = _served_text(served)
    # Not even the anonymous names the audio has in the run directory.
    kept = [p.stem for p in (run / "media").glob("*/*.wav")]
    assert kept
    for secret in [*SYSTEMS, TTS_TASK, TESTSET_DIR, str(run), *kept]:
        assert secret not in text, secret
    # Media URLs are anonymous: /judge/<token>/media/<random id>.wav only.
    urls = [s for s in served if isinstance(s, str) and s.startswith("/judge/")]
    assert urls and all(u.count("/") == 4 and u.endswith(".wav") for u in urls)
    if test == "pair":
        views = [s for s in served if isinstance(s, dict) and not s["done"]]
        assert all(v["play_once"] and len(v["media"]) == 2 for v in views)
        assert views[0]["answer_schema"]["properties"]["score"]["enum"] == [2, 1, 0, -1, -2]


def test_api_refuses_bad_tokens_and_answers_off_the_scale(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "mos", judges=2, seed=1) as (base, store):
        tokens = store.tokens()
        j1, j2 = tokens["J1"], tokens["J2"]
        for method, path in [
            ("GET", "/api/judge/nope/next"),
            ("POST", "/api/judge/nope/answer"),
            ("GET", "/judge/nope"),
            ("GET", "/api/operator/nope/progress"),
            ("GET", f"/judge/nope/media/{'0' * 24}.wav"),
        ]:
            status, _ = call(base, method, path, {} if method == "POST" else None)
            assert status == 401, path
        _, view = call(base, "GET", f"/api/judge/{j1}/next")
        trial = view["trial"]
        schema = view["answer_schema"]
        assert schema["properties"]["score"] | {"description": ""} == {
            "type": "integer",
            "minimum": 1,
            "maximum": 5,
            "description": "",
        }
        cases = [
            ({"trial": trial, "answer": {"score": 6}}, "above the scale's maximum 5"),
            ({"trial": trial, "answer": {"score": 0}}, "below the scale's minimum 1"),
            ({"trial": trial, "answer": {"score": 3.5}}, "must be an integer"),
            ({"trial": trial, "answer": {"score": True}}, "must be an integer"),
            ({"trial": trial, "answer": {}}, "lacks 'score'"),
            ({"trial": trial, "answer": {"score": 3, "x": 1}}, "unknown field 'x'"),
            ({"trial": trial, "answer": "5"}, "must be an object"),
            ({"answer": {"score": 3}}, '{"trial"'),
            ({"trial": trial, "answer": {"score": 3}, "plays": "2"}, '"plays"'),
            ({"trial": "deadbeef", "answer": {"score": 3}}, "not one of this judge's trials"),
        ]
        for body, reason in cases:
            status, reply = call(base, "POST", f"/api/judge/{j1}/answer", body)
            assert status == 400 and reason in reply["error"], (body, reply)
        status, reply = call(base, "POST", f"/api/judge/{j1}/answer", b"{not json")
        assert status == 400 and "not JSON" in reply["error"]
        # Another judge cannot answer J1's trial; media of J1 are not J2's.
        status, reply = call(base, "POST", f"/api/judge/{j2}/answer", {"trial": trial})
        assert status == 400
        media_id = view["media"][0].rsplit("/", 1)[1]
        assert call(base, "GET", f"/judge/{j2}/media/{media_id}")[0] == 404
        # Refusals are journaled; nothing was stored.
        assert store.answers() == []
        assert (
            call(base, "POST", f"/api/judge/{j1}/answer", {"trial": trial, "answer": {"score": 4}})[
                0
            ]
            == 200
        )  # noqa: E501
        status, reply = call(
            base, "POST", f"/api/judge/{j1}/answer", {"trial": trial, "answer": {"score": 4}}
        )  # noqa: E501
        assert status == 409 and "already answered" in reply["error"]
        # Trials are answered in the plan's order.
        rows = (
            sqlite3.connect(store.path)
            .execute("SELECT trial FROM trials WHERE judge = 'J1' ORDER BY position")
            .fetchall()
        )
        later = rows[-1][0]
        status, reply = call(
            base, "POST", f"/api/judge/{j1}/answer", {"trial": later, "answer": {"score": 4}}
        )  # noqa: E501
        assert status == 409 and "current trial" in reply["error"]
        events = Counter(r["event"] for r in store.journal_rows())
        assert events["refused"] == 7 and events["answered"] == 1


def test_api_hostile_requests(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "pair", judges=1, seed=1) as (base, store):
        [token] = store.tokens().values()
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        huge = {"trial": view["trial"], "answer": {"score": 1}, "pad": "x" * (70 << 10)}
        status, reply = call(base, "POST", f"/api/judge/{token}/answer", huge)
        # Refused by the guard in front of the app (harness/webguard.py), unparsed.
        assert status == 413 and b"larger than 65536 bytes" in reply
        for path in (
            f"/judge/{token}/media/..%2F..%2Fsite.toml.wav",
            f"/judge/{token}/media/{view['media'][0].rsplit('/', 1)[1][:-4]}x.wav",
            f"/judge/{token}%27%20OR%201=1/media/x.wav",
        ):
            assert call(base, "GET", path)[0] in (401, 404), path
        status, _ = call(base, "GET", f"/api/judge/{token}'%20OR%20'1'='1/next")
        assert status == 401
        status, reply = call(base, "POST", f"/api/judge/{token}/answer", [1, 2])
        assert status == 400 and '"trial"' in reply["error"]
        assert store.answers() == []


def test_schema_validation_of_decimals_and_arrays() -> None:
    decimal = {"type": "number", "minimum": 0, "maximum": 5, "multipleOf": 0.1}
    assert validate(decimal, 4.5) is None and validate(decimal, 0.3) is None
    assert "one decimal" in str(validate(decimal, 4.55))
    assert "must be a number" in str(validate(decimal, float("nan")))
    blanks = {
        "type": "array",
        "items": {"type": "string", "maxLength": 3},
        "minItems": 2,
        "maxItems": 2,
    }  # noqa: E501
    assert validate(blanks, ["a", "b"]) is None
    assert "needs 2 entries" in str(validate(blanks, ["a"]))
    assert "answer[1] is longer" in str(validate(blanks, ["a", "abcd"]))


# --- several judges, a restart, and the scores -----------------------------------------------


def test_concurrent_judges_resume_across_a_restart_and_scores_match_files(
    tts_run: Path, tmp_path: Path
) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "pair", judges=4, seed=11) as (base, store):
        tokens = store.tokens()
        total = len(store.plan().of("J1"))
        half = total // 2
        errors: list[BaseException] = []

        def work(judge: str) -> None:
            try:
                judge_all(base, tokens[judge], judge, stop_after=half if judge == "J3" else None)
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(j,)) for j in tokens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors
        status, progress = call(base, "GET", f"/api/operator/{store.meta()['operator']}/progress")
        assert status == 200
        done = {p["judge"]: p["answered"] for p in progress["judges"]}
        assert done == {"J1": total, "J2": total, "J3": half, "J4": total}
        assert any("J3 answered" in w and "unbalanced" in w for w in progress["warnings"])
        _, view = call(base, "GET", f"/api/judge/{tokens['J3']}/next")
        resume_at = view["trial"]
    # The panel stops; everything is in the database. Start it again on another port.
    code, out = onsite("report", str(run))
    assert code == 0 and "J3 answered" in out and "unbalanced" in out
    with serving(run, TTS_TASK, "pair") as (base, store):
        assert store.tokens() == tokens, "same judges, same links after a restart"
        _, view = call(base, "GET", f"/api/judge/{tokens['J3']}/next")
        assert view["trial"] == resume_at and view["progress"]["answered"] == half
        judge_all(base, tokens["J3"], "J3")
        assert call(base, "GET", f"/api/judge/{tokens['J3']}/next")[1] == {"done": True}
        assert panel_warnings(store) == ()
        answers = store.answers()
        journal = [r for r in store.journal_rows() if r["event"] == "answered"]
    assert len(answers) == 4 * total
    assert len(journal) == len(answers)
    assert all(r["at"] > 0 and r["judge"] in tokens for r in journal)
    # Scores read from the panel equal the scores of the same judgements written as a file.
    exported = tmp_path / "pairs.jsonl"
    assert (
        onsite("judge", str(run), "--test", "pair", "--task", TTS_TASK, "--export", str(exported))[
            0
        ]
        == 0
    )  # noqa: E501
    lines = [json.loads(x) for x in exported.read_text().splitlines()]
    assert len(lines) == 4 * total and {tuple(sorted(x)) for x in lines} == {
        ("first", "listener", "score", "second", "sentence")
    }
    code, from_panel = onsite("score", "tts-pair", "--run", str(run), "--task", TTS_TASK, "--json")
    assert code == 0
    code, from_file = onsite("score", "tts-pair", "--hyp", str(exported), "--json")
    assert code == 0 and json.loads(from_panel) == json.loads(from_file)
    result = json.loads(from_panel)
    assert result["judgements"] == 4 * total and result["listeners"] == 4
    # Each ordered pair was played equally often both ways (3 sentences each way per judge).
    assert {(p["played_ab"], p["played_ba"]) for p in result["pairs"]} == {(12, 12)}


def test_sus_and_mos_scores_match_files(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    for test, family in (("sus", "tts-sus"), ("mos", "tts-mos")):
        with serving(run, TTS_TASK, test, judges=3, seed=2) as (base, store):
            for judge, token in store.tokens().items():
                judge_all(base, token, judge)
        exported = tmp_path / f"{test}.jsonl"
        onsite("judge", str(run), "--test", test, "--task", TTS_TASK, "--export", str(exported))
        code, a = onsite("score", family, "--run", str(run), "--task", TTS_TASK, "--json")
        code2, b = onsite("score", family, "--hyp", str(exported), "--json")
        assert code == code2 == 0 and json.loads(a) == json.loads(b)
        if test == "sus":
            rows = [json.loads(x) for x in exported.read_text().splitlines()]
            # "7" is an accepted answer for "seven": it is exported as the expected word.
            for row in rows:
                if row["sentence"] == "s3" and row["answer"][0] == "7":
                    assert row["expected"][0] == "7"
            assert json.loads(a)["blanks"] == 3 * sum(len(v["blanks"]) for v in SUS.values())
        else:
            systems = json.loads(a)["systems"]
            assert all(1 <= s["ci_low"] <= s["mean"] <= s["ci_high"] <= 5 for s in systems)
    code, out = onsite("report", str(run))
    assert code == 0 and "Krippendorff" in out and "mos" in out and "sus" in out
    page = tmp_path / "report.html"
    assert onsite("report", str(run), "--html", str(page))[0] == 0
    text = page.read_text(encoding="utf-8")
    assert f"Judging: {TTS_TASK} / mos" in text and "Krippendorff" in text
    assert "ci_high" in text and "<script" not in text.split("Judging:")[1]


def test_mt_summary_and_cws_review_through_the_api(
    mt_run: Path, cws_run: Path, tmp_path: Path
) -> None:
    run = copy_run(mt_run, tmp_path / "a")
    for test, family, suffix in (
        ("mt-adequacy-fluency", "mt-human", ".jsonl"),
        ("summary", "summarization", ".tsv"),
    ):
        with serving(run, "mt", test, judges=2, seed=4) as (base, store):
            for judge, token in store.tokens().items():
                seen = judge_all(base, token, judge)
                assert "acme-mt" not in json.dumps(seen, ensure_ascii=False)
            if test == "mt-adequacy-fluency":
                _, view = call(base, "GET", f"/api/judge/{token}/next")
                assert view == {"done": True}
        exported = tmp_path / f"{test}{suffix}"
        onsite("judge", str(run), "--test", test, "--task", "mt", "--export", str(exported))
        code, a = onsite("score", family, "--run", str(run), "--task", "mt", "--json")
        code2, b = onsite("score", family, "--hyp", str(exported), "--json")
        assert code == code2 == 0 and json.loads(a) == json.loads(b)
        # Table mode prints real tables (it printed nothing before).
        code, table_text = onsite("score", family, "--run", str(run), "--task", "mt")
        assert code == 0 and "acme-mt" in table_text and "zenith-mt" in table_text
    cws = copy_run(cws_run, tmp_path / "b")
    with serving(cws, "cws", "cws-review", judges=3, seed=4) as (base, store):
        for judge, token in store.tokens().items():
            judge_all(base, token, judge)
    review = tmp_path / "review.tsv"
    onsite("judge", str(cws), "--test", "cws-review", "--task", "cws", "--export", str(review))
    gold = Path(__file__).resolve().parents[1] / "site_config/data/demo-text/cws/gold.txt"
    test_file = tmp_path / "test.txt"
    rows = [json.loads(x) for x in (cws / "outputs/cws/acme-mt.jsonl").read_text().splitlines()]
    test_file.write_text(
        "".join(r["output"]["text"] + "\n" for r in sorted(rows, key=lambda r: int(r["id"])))
    )  # noqa: E501
    code, by_file = onsite(
        "score",
        "cws",
        "--gold",
        str(gold),
        "--test",
        str(test_file),
        "--accepted",
        str(review),
        "--json",
    )  # noqa: E501
    assert code == 0
    code, results = onsite(
        "judge", str(cws), "--test", "cws-review", "--task", "cws", "--results", "--json"
    )  # noqa: E501
    [acme] = [r for r in json.loads(results)["tables"]["systems"] if r["system"] == "acme-mt"]
    assert acme["f_tolerant"] == pytest.approx(json.loads(by_file)["f"])
    assert acme["accepted_pieces"] == json.loads(by_file)["accepted_pieces"]


def test_panel_cli_prints_one_link_per_judge_and_keeps_its_plan(
    tts_run: Path, tmp_path: Path
) -> None:
    run = copy_run(tts_run, tmp_path)
    args = ["judge", str(run), "--test", "pair", "--task", TTS_TASK]
    code, out = onsite(
        *args, "--judges", "3", "--listen", "0.0.0.0:8123", "--link-host", "10.0.0.5", "--plan-only"
    )  # noqa: E501
    assert code == 0
    links = [line.split()[1] for line in out.splitlines() if line.startswith("J")]
    assert len(links) == 3 and all(x.startswith("http://10.0.0.5:8123/judge/") for x in links)
    assert "operator  http://10.0.0.5:8123/operator/" in out
    code, again = onsite(
        *args, "--plan-only", "--listen", "0.0.0.0:8123", "--link-host", "10.0.0.5"
    )  # noqa: E501
    assert (
        code == 0
        and [line.split()[1] for line in again.splitlines() if line.startswith("J")] == links
    )  # noqa: E501
    assert onsite(*args, "--judges", "4", "--plan-only")[0] == 2
    # Scoring a panel nobody has answered yet says so (not a temporary file's name).
    code, out = onsite("score", "tts-pair", "--run", str(run), "--task", TTS_TASK)
    assert code == 2 and out == ""
    code, out = onsite(*args, "--plan-only", "--listen", "0.0.0.0:8123")
    assert f"J1  http://{socket.gethostname()}:8123/judge/" in out
    code, out = onsite(*args, "--progress")
    assert code == 0 and "J3" in out
    assert panel_path(run, TTS_TASK, "pair").is_file()


# --- agreement -------------------------------------------------------------------------------


def test_krippendorff_alpha_worked_example() -> None:
    """Krippendorff (2011), "Computing Krippendorff's alpha-reliability", section C:
    four observers, twelve units, nominal alpha = 0.743."""
    table = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
        [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
    ]
    ratings = [
        (f"O{o}", u, float(v))
        for o, row in enumerate(table)
        for u, v in enumerate(row)
        if v is not None
    ]
    nominal = krippendorff_alpha(ratings, "nominal", "x")
    assert nominal.alpha == pytest.approx(0.743, abs=5e-4) and nominal.units == 11
    assert krippendorff_alpha(ratings, "interval", "x").alpha == pytest.approx(0.849, abs=5e-4)
    # One judge: nothing to agree on.
    assert krippendorff_alpha([("A", 1, 1.0), ("A", 2, 2.0)], "interval", "x").alpha is None
    assert np.isfinite(nominal.alpha)


def test_agreement_of_identical_judges_is_one(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    with serving(run, TTS_TASK, "mos", judges=2, seed=0) as (base, store):
        for token in store.tokens().values():
            # Both judges rate by the trial's content alone, identically: the item and system
            # behind a trial are hidden, so rate by the (anonymous) audio length instead.
            while True:
                _, view = call(base, "GET", f"/api/judge/{token}/next")
                if view["done"]:
                    break
                _, audio = call(base, "GET", view["media"][0])
                score = 1 + len(audio) // 20000 % 5
                call(
                    base,
                    "POST",
                    f"/api/judge/{token}/answer",
                    {"trial": view["trial"], "answer": {"score": score}},
                )  # noqa: E501
        [mos] = agreement(store, run)
    assert mos.alpha == pytest.approx(1.0) and mos.units == len(SENTENCES) * len(SYSTEMS)


def test_category_restricts_the_items(tts_run: Path, tmp_path: Path) -> None:
    run = copy_run(tts_run, tmp_path)
    testset = Path(json.loads((run / "run.json").read_text())["site_root"]) / TESTSET_DIR
    (testset / "categories.tsv").write_text("s4\tparagraph\ns5\tparagraph\n", encoding="utf-8")
    try:
        with pytest.raises(ValueError, match="no item of category 'nope'; categories: paragraph"):
            open_panel(run, TTS_TASK, "pair", 2, 0, "nope")
        store, _ = open_panel(run, TTS_TASK, "pair", 2, 0, "paragraph")
        try:
            assert {t.item for t in store.plan().trials} == {"s4", "s5"}
            assert store.meta()["category"] == "paragraph"
        finally:
            store.close()
        with pytest.raises(PanelError, match="category = paragraph, not other"):
            open_panel(run, TTS_TASK, "pair", None, None, "other")
    finally:
        (testset / "categories.tsv").unlink()
