"""Human assessment on a subset of the items (issue 29, item 6): `onsite judge --subset
FRACTION --seed S` or `--items FILE`, for every test, and `--category` for MT through the
test set's categories.tsv. Panels are driven through the HTTP API as judges use it."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.judge.material import load_material
from harness.judge.panel import open_panel
from harness.judge.plan import TESTS
from harness.judge.subset import Subset, SubsetError, draw, subset_size
from harness.kinds.registry import task_kind
from harness.store.directory_source import site_of_run
from scoring.cws import diff_pieces, split_words
from tests.helpers import REPO, run_site, write_site
from tests.judge_helpers import (
    TTS_TASK,
    call,
    copy_run,
    judge_all,
    make_text_run,
    make_tts_run,
    onsite,
    serving,
)

# Two documents of six segments; categories by document, one segment moved by its id.
DOCS = {
    "d1": ["你好世界", "我们喜欢北京", "他在上海", "北京欢迎你", "世界很大", "我们在北京"],
    "d2": ["你好上海", "上海很大", "他喜欢世界", "我们喜欢上海", "你在北京", "世界你好"],
}
CATEGORIES = "# by document, and one segment by its id\nd1\tnews\nd2\tscience\nd2:6\tnews\n"
NEWS = [f"d1:{n}" for n in range(1, 7)] + ["d2:6"]
ALL = [f"{d}:{n}" for d in DOCS for n in range(1, 7)]


def _xml(tag: str, docs: dict[str, list[str]], extra: str = "") -> str:
    body = "".join(
        f'<doc docid="{d}"{extra}>'
        + "".join(f'<s id="{n}">{t}</s>' for n, t in enumerate(segs, 1))
        + "</doc>\n"
        for d, segs in docs.items()
    )
    return f'<{tag} setid="zh_en_news_trans" srclang="zh" tgtlang="en">\n{body}</{tag}>\n'


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mtsub")
    testset = root / "set"
    testset.mkdir()
    (testset / "source.xml").write_text(_xml("srcset", DOCS), "utf-8")
    refs = {d: [f"reference {d} {n}" for n in range(1, 7)] for d in DOCS}
    (testset / "ref1.xml").write_text(_xml("refset", refs, ' sysid="ref1"'), "utf-8")
    (testset / "categories.tsv").write_text(CATEGORIES, "utf-8")
    baseline = [sys.executable, "-m", "examples.systems.text_baselines"]
    site = write_site(
        root / "site.toml",
        testset,
        {name: {"command": baseline, "workdir": str(REPO)} for name in ("acme-mt", "zenith-mt")},
        task="mt",
        task_keys={"kind": "mt"},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, results = run_site(site)
    assert all(r.failed is None for r in results), results
    return run_dir


@pytest.fixture(scope="module")
def tts_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tts_run(tmp_path_factory.mktemp("tts"))


@pytest.fixture(scope="module")
def cws_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_text_run(tmp_path_factory.mktemp("cws"), "cws")


def _expected_draw(ids: list[str], fraction: float, seed: int) -> list[str]:
    """The documented draw: round(f x n) items, numpy PCG64 permutation, test-set order."""
    k = subset_size(fraction, len(ids))
    picked = sorted(np.random.default_rng(seed).permutation(len(ids))[:k])
    return [ids[i] for i in picked]


def test_subset_size_and_draw() -> None:
    assert [subset_size(f, 12) for f in (0.2, 0.25, 0.3, 0.4, 1.0)] == [2, 3, 4, 5, 12]
    assert subset_size(0.01, 12) == 1 and subset_size(0.5, 0) == 0
    ids = [f"s{n}" for n in range(40)]
    a = draw(Subset(0.3, seed=3), ids)
    assert a.items == draw(Subset(0.3, seed=3), ids).items and len(a.items) == 12
    assert a.items != draw(Subset(0.3, seed=4), ids).items
    assert list(a.items) == sorted(a.items, key=ids.index)  # kept in test-set order
    with pytest.raises(SubsetError, match=r"in \(0, 1\]"):
        Subset(1.5)
    with pytest.raises(SubsetError, match="either --subset FRACTION or --items FILE"):
        Subset()


def test_mt_categories_tsv_gives_the_category(mt_run: Path, tmp_path: Path) -> None:
    site = site_of_run(mt_run)
    cfg = site.config.tasks["mt"]
    testset = task_kind("mt").load_testset(site.testset_path("mt"), cfg)
    assert {i.id for i in testset.items if i.condition == "news"} == set(NEWS)
    assert testset.items[6].condition == "science"
    # The id of neither a segment nor a document is refused, naming the file.
    bad = tmp_path / "set"
    bad.mkdir()
    for name in ("source.xml", "ref1.xml"):
        (bad / name).write_bytes((site.testset_path("mt") / name).read_bytes())
    (bad / "categories.tsv").write_text("d3\tnews\n", "utf-8")
    with pytest.raises(Exception, match="categories.tsv.*'d3' is neither a segment nor a doc"):
        task_kind("mt").load_testset(bad, cfg)


def test_mt_adequacy_on_a_seeded_subset_through_the_api(mt_run: Path, tmp_path: Path) -> None:
    run = copy_run(mt_run, tmp_path)
    args = ["judge", str(run), "--test", "mt-adequacy-fluency", "--task", "mt"]
    code, out = onsite(*args, "--judges", "2", "--subset", "0.25", "--seed", "7", "--plan-only")
    assert code == 0
    assert "judged a subset: 3 of 12 items (fraction 0.25, seed 7)" in out
    drawn = _expected_draw(ALL, 0.25, 7)
    # Reopened with the same subset it goes on; another fraction or seed is refused.
    assert onsite(*args, "--subset", "0.25", "--seed", "7", "--plan-only")[0] == 0
    assert onsite(*args, "--subset", "0.5", "--seed", "7", "--plan-only")[0] == 2
    assert onsite(*args, "--plan-only")[0] == 0
    with serving(run, "mt", "mt-adequacy-fluency") as (base, store):
        plan = store.plan()
        # Every judge sees every drawn segment once, with every system: paired judgements.
        for judge in plan.judges:
            mine = plan.of(judge)
            assert sorted(t.item for t in mine) == sorted(drawn)
            assert all(sorted(t.systems) == ["acme-mt", "zenith-mt"] for t in mine)
        for judge, token in store.tokens().items():
            judge_all(base, token, judge)
        _, view = call(base, "GET", f"/api/judge/{token}/next")
        assert view == {"done": True}
    code, text = onsite(*args, "--results", "--json")
    result = json.loads(text)
    assert code == 0 and result["subset"] == {
        "fraction": 0.25,
        "seed": 7,
        "file": None,
        "sha256": None,
        "items": 3,
        "of": 12,
        "ids": drawn,
    }
    assert [r["judgements"] for r in result["tables"]["systems"]] == [6, 6]
    code, table = onsite(*args, "--results")
    assert "mt / mt-adequacy-fluency: judged a subset: 3 of 12 items" in table
    # The exported sheet holds the drawn segments only, and scores as the panel does.
    sheet = tmp_path / "sheet.jsonl"
    assert onsite(*args, "--export", str(sheet))[0] == 0
    rows = [json.loads(line) for line in sheet.read_text("utf-8").splitlines()]
    assert {f"{r['doc_id']}:{r['seg_id']}" for r in rows} == set(drawn)
    code, by_file = onsite("score", "mt-human", "--hyp", str(sheet), "--json")
    code2, by_run = onsite("score", "mt-human", "--run", str(run), "--task", "mt", "--json")
    assert code == code2 == 0 and json.loads(by_file) == json.loads(by_run)
    # The report's judging section says which subset was judged.
    page = tmp_path / "report.html"
    assert onsite("report", str(run), "--html", str(page))[0] == 0
    assert "Judged a subset: 3 of 12 items (fraction 0.25, seed 7)." in page.read_text("utf-8")
    # The draw is the journal's too.
    plan_row = next(r for r in store_journal(run) if r["event"] == "plan")
    assert json.loads(plan_row["data"]["subset"])["ids"] == drawn


def store_journal(run: Path) -> list[dict]:
    from harness.judge.store import JudgeStore, panel_path

    store = JudgeStore(panel_path(run, "mt", "mt-adequacy-fluency"))
    try:
        return store.journal_rows()
    finally:
        store.close()


def test_the_same_subset_for_another_test_of_the_task(mt_run: Path, tmp_path: Path) -> None:
    run = copy_run(mt_run, tmp_path)
    plans = {}
    for test in ("mt-adequacy-fluency", "summary"):
        store, _ = open_panel(run, "mt", test, 1, 11, subset=Subset(0.4, seed=11))
        try:
            plans[test] = {t.item for t in store.plan().trials}
        finally:
            store.close()
    assert plans["mt-adequacy-fluency"] == plans["summary"] == set(_expected_draw(ALL, 0.4, 11))


def test_items_file_and_mt_category(mt_run: Path, tmp_path: Path) -> None:
    run = copy_run(mt_run, tmp_path)
    listed = tmp_path / "items.txt"
    listed.write_text("# the segments the organizer picked\nd1:2\n\nd2:5\nd1:4\n", "utf-8")
    args = ["judge", str(run), "--test", "summary", "--task", "mt"]
    code, out = onsite(*args, "--judges", "2", "--items", str(listed), "--plan-only")
    sha = hashlib.sha256(listed.read_bytes()).hexdigest()
    assert (
        code == 0 and f"judged a subset: 3 of 12 items (listed in {listed}, SHA-256 {sha})" in out
    )
    with serving(run, "mt", "summary") as (base, store):
        assert {t.item for t in store.plan().trials} == {"d1:2", "d1:4", "d2:5"}
        for judge, token in store.tokens().items():
            judge_all(base, token, judge)
    code, text = onsite(*args, "--results", "--json")
    held = json.loads(text)["subset"]
    assert held["sha256"] == sha and held["ids"] == ["d1:2", "d1:4", "d2:5"]
    assert held["fraction"] is None and held["items"] == 3
    # The same file reopens the panel; an edited one is refused.
    assert onsite(*args, "--items", str(listed), "--plan-only")[0] == 0
    listed.write_text("d1:2\n", "utf-8")
    assert onsite(*args, "--items", str(listed), "--plan-only")[0] == 2

    # --category through categories.tsv: a subset of the category's segments.
    other = ["judge", str(run), "--test", "mt-adequacy-fluency", "--task", "mt"]
    code, out = onsite(
        *other, "--judges", "1", "--category", "news", "--subset", "0.5", "--seed", "2",
        "--plan-only",
    )  # fmt: skip
    assert code == 0 and "judged a subset: 4 of 7 items (fraction 0.5, seed 2)" in out
    store, _ = open_panel(run, "mt", "mt-adequacy-fluency", None, None)
    try:
        assert sorted(t.item for t in store.plan().trials) == _expected_draw(NEWS, 0.5, 2)
    finally:
        store.close()
    code, text = onsite(*other, "--results", "--json")
    assert json.loads(text)["category"] == "news"


def test_bad_subsets_are_refused_with_the_fix(mt_run: Path, tmp_path: Path) -> None:
    run = copy_run(mt_run, tmp_path)
    listed = tmp_path / "items.txt"
    listed.write_text("d1:1\nd9:9\n", "utf-8")
    with pytest.raises(SubsetError, match=r"items.txt: 1 id\(s\) not among the items.*'d9:9'"):
        open_panel(run, "mt", "summary", 1, None, subset=Subset(file=listed))
    listed.write_text("d1:1\nd1:2\nd1:1\n", "utf-8")
    with pytest.raises(SubsetError, match="line 3: item 'd1:1' again"):
        open_panel(run, "mt", "summary", 1, None, subset=Subset(file=listed))
    # An id outside the --category is not among the items to judge.
    listed.write_text("d2:1\n", "utf-8")
    with pytest.raises(SubsetError, match="not among the items"):
        open_panel(run, "mt", "summary", 1, None, "news", Subset(file=listed))
    with pytest.raises(ValueError, match="no item of category 'nope'; categories: news, science"):
        open_panel(run, "mt", "summary", 1, None, "nope")
    # Nothing is left behind by a refused plan.
    assert not list((run / "judging").glob("*.sqlite"))
    with pytest.raises(SystemExit) as stopped:
        onsite("judge", str(run), "--test", "summary", "--task", "mt", "--subset", "0")
    assert stopped.value.code == 2


@pytest.mark.parametrize("test", ["pair", "sus", "mos"])
def test_every_listening_test_takes_a_subset(tts_run: Path, tmp_path: Path, test: str) -> None:
    run = copy_run(tts_run, tmp_path)
    store, _ = open_panel(run, TTS_TASK, test, 3, 5, subset=Subset(0.5, seed=5))
    try:
        held = json.loads(store.meta()["subset"])
        # SUS draws among the sentences with blanks (3 of them), the others among all 6.
        candidates = ["s1", "s2", "s3"] if test == "sus" else [f"s{n}" for n in range(1, 7)]
        assert held["of"] == len(candidates)
        assert held["ids"] == _expected_draw(candidates, 0.5, 5)
        assert {t.item for t in store.plan().trials} == set(held["ids"])
    finally:
        store.close()


def test_cws_review_pools_the_pieces_of_the_drawn_lines(cws_run: Path, tmp_path: Path) -> None:
    run = copy_run(cws_run, tmp_path)
    whole = load_material(run, "cws", "cws-review")
    site = site_of_run(run)
    cfg = site.config.tasks["cws"]
    testset = task_kind("cws").load_testset(site.testset_path("cws"), cfg)
    # Each line's disputed pieces over the systems, pooled as the review pools them.
    per_line: dict[str, set[str]] = {}
    for line in testset.items:
        per_line[line.id] = set()
        for system in whole.systems:
            out = whole.outputs[(system, line.id)]
            for p in diff_pieces(list(line.reference.words), split_words(str(out.text))) or []:
                per_line[line.id].add(f"{' '.join(p.gold)}\t{' '.join(p.test)}")
    assert set().union(*per_line.values()) == set(whole.items)
    disputed = [i for i, pieces in per_line.items() if pieces]
    calm = [i for i, pieces in per_line.items() if not pieces]
    assert disputed and calm, per_line  # the demo set has one line of each
    listed = tmp_path / "lines.txt"
    listed.write_text(f"{disputed[0]}\n", "utf-8")
    store, _ = open_panel(run, "cws", "cws-review", 2, 0, subset=Subset(file=listed))
    try:
        assert {t.item for t in store.plan().trials} == per_line[disputed[0]]
    finally:
        store.close()
    (run / "judging" / "cws.cws-review.sqlite").unlink()
    listed.write_text(f"{calm[0]}\n", "utf-8")
    with pytest.raises(ValueError, match="nothing to judge"):
        open_panel(run, "cws", "cws-review", 2, 0, subset=Subset(file=listed))


def test_every_test_has_the_options() -> None:
    from harness.cli.main import build_parser

    parser = build_parser()
    for test in TESTS:
        ns = parser.parse_args(["judge", "r", "--test", test, "--task", "t", "--subset", "0.3"])
        assert ns.subset == 0.3 and ns.items is None
    with pytest.raises(SystemExit):
        parser.parse_args(["judge", "r", "--test", "mos", "--task", "t", "--subset", "0.3",
                           "--items", "f"])  # fmt: skip
