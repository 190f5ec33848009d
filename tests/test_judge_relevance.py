"""Pooled relevance judging (issue 29, item 5): the top K of every run per topic, judged by
simulated assessors through the panel's HTTP API, written as TREC qrels that trec_eval
(pytrec-eval-terrier) reads and that score the runs, in the leaderboard too."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from harness import leaderboard
from harness.judge.material import load_material
from harness.judge.panel import open_panel
from harness.judge.subset import Subset
from harness.store.directory_source import site_of_run
from scoring.ir import rank_documents
from tests.helpers import REPO, onsite, run_site, write_site
from tests.judge_helpers import call, copy_run, serving
from tests.judge_helpers import onsite as onsite_here

TOPICS = {
    "001": ("football", "News about football matches and clubs."),
    "002": ("stock market", "How the stock market moved."),
    "003": ("phone", "New phones."),
}
# The organizer's copy of the collection; the systems index their own copies.
DOCS = {
    "D01": "football football club wins the football cup",
    "D02": "the football season starts with a stock market lunch",
    "D03": "stock market falls as stock traders sell",
    "D04": "market day in the town square",
    "D05": "a new phone with a big screen and a phone case",
    "D06": "phone makers and the stock market",
    "D07": "football fans buy a phone",
    "D08": "weather report rain tomorrow",
    "D09": "stock market stock market stock rally",
    "D10": "club football results football",
}
DEPTH = 3
PROBE = "probe-acme"  # a name no page may show


def _topics_file() -> str:
    return "".join(
        f"<top>\n<num> Number: {n}\n<title> {title}\n<desc> Description: {desc}\n"
        f"<narr> Narrative: A relevant document is about {title}.\n</top>\n\n"
        for n, (title, desc) in TOPICS.items()
    )


def grade(title: str, document: str) -> int:
    """The simulated assessor: 2 when every word of the title occurs twice, 1 once, else 0."""
    words = re.findall(r"[a-z]+", document)
    counts = [words.count(w) for w in title.split()]
    return 2 if min(counts) >= 2 else 1 if min(counts) >= 1 else 0


@pytest.fixture(scope="module")
def ir_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ir")
    testset = root / "set"
    testset.mkdir()
    (testset / "topics").write_text(_topics_file(), "utf-8")  # no qrels: they are judged
    for name, docs in (
        ("collection", DOCS),  # the organizer's, named in the site file
        ("full", DOCS),
        ("half", {k: v for k, v in DOCS.items() if int(k[1:]) % 2 == 0}),
    ):
        (root / name).mkdir()
        for docno, text in docs.items():
            (root / name / f"{docno}.txt").write_text(text + "\n", "utf-8")
    baseline = [sys.executable, "-m", "examples.systems.text_baselines"]
    systems = {
        "acme-ir": {"env": {"TEXT_BASELINE_COLLECTION": str(root / "full")}},
        "zenith-ir": {"env": {"TEXT_BASELINE_COLLECTION": str(root / "half")}},
    }
    site = write_site(
        root / "site.toml",
        testset,
        {s: {"command": baseline, "workdir": str(REPO), **c} for s, c in systems.items()},
        task="ir",
        task_keys={"kind": "ir", "qrels": "judging", "collection": "collection"},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
        device={"transport": "local", "sandbox": False},
    )
    run_dir, results = run_site(site)
    assert all(r.failed is None for r in results), results
    return run_dir


def _outputs(run: Path, system: str) -> dict[str, dict[str, float]]:
    rows = [
        json.loads(x) for x in (run / "outputs/ir" / f"{system}.jsonl").read_text().split("\n") if x
    ]
    return {r["id"]: {d: float(s) for d, s in r["output"]["results"]} for r in rows}


def _expected_pool(run: Path) -> dict[str, dict[str, set[str]]]:
    """topic -> system -> its top K, ranked as trec_eval ranks (computed here, apart)."""
    out: dict[str, dict[str, set[str]]] = {}
    for system in ("acme-ir", "zenith-ir"):
        for topic, scores in _outputs(run, system).items():
            out.setdefault(topic, {})[system] = set(rank_documents(scores)[:DEPTH])
    return out


def test_before_judging_every_topic_runs_and_nothing_is_scored(ir_run: Path) -> None:
    rows = leaderboard(ir_run)
    assert [r.system for r in rows] == ["acme-ir", "zenith-ir"]
    assert all(r.completed == 3 and r.score is None for r in rows)


def test_pooled_relevance_judging_gives_qrels_trec_eval_accepts(
    ir_run: Path, tmp_path: Path
) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = copy_run(ir_run, tmp_path)
    args = ["judge", str(run), "--test", "relevance", "--task", "ir"]
    code, out = onsite_here(*args, "--judges", "2", "--pool-depth", str(DEPTH), "--plan-only")
    assert code == 0, out
    expected = _expected_pool(run)
    pools = {
        t: set().union(*by.values()) for t, by in expected.items() if set().union(*by.values())
    }
    material = load_material(run, "ir", "relevance", pool_depth=DEPTH)
    assert {tuple(i.split("\t")) for i in material.items} == {
        (t, d) for t, docs in pools.items() for d in docs
    }
    truth = {(t, d): grade(TOPICS[t][0], DOCS[d]) for t, docs in pools.items() for d in docs}
    with serving(run, "ir", "relevance") as (base, store):
        plan = store.plan()
        # One assessor per topic, who judges the topic's whole pool in one go.
        owners: dict[str, set[str]] = {}
        for trial in plan.trials:
            owners.setdefault(trial.item.split("\t")[0], set()).add(trial.judge)
        assert all(len(j) == 1 for j in owners.values()) and set(owners) == set(pools)
        for judge in plan.judges:
            topics = [t.item.split("\t")[0] for t in plan.of(judge)]
            assert topics == sorted(topics, key=topics.index)  # grouped, topic by topic
        served = []
        for token in store.tokens().values():
            while True:
                status, view = call(base, "GET", f"/api/judge/{token}/next")
                assert status == 200, view
                if view["done"]:
                    break
                served.append(view)
                text = view["text"]
                assert set(text) == {"title", "description", "narrative", "document"}
                [topic] = [n for n, (title, _) in TOPICS.items() if title == text["title"]]
                [docno] = [d for d, body in DOCS.items() if body + "\n" == text["document"]]
                assert view["answer_schema"]["properties"]["relevance"]["maximum"] == 2
                # An answer off the scale is refused.
                bad = {"trial": view["trial"], "answer": {"relevance": 3}}
                assert call(base, "POST", f"/api/judge/{token}/answer", bad)[0] == 400
                body = {"trial": view["trial"], "answer": {"relevance": truth[(topic, docno)]}}
                status, reply = call(base, "POST", f"/api/judge/{token}/answer", body)
                assert status == 200, reply
        shown = json.dumps(served)
        assert "acme" not in shown and "zenith" not in shown and "score" not in shown
    assert len(served) == len(truth)

    qrels_file = tmp_path / "judged.qrels"
    assert onsite_here(*args, "--export", str(qrels_file))[0] == 0
    lines = qrels_file.read_text("utf-8").splitlines()
    assert sorted(lines) == sorted(f"{t} 0 {d} {g}" for (t, d), g in truth.items())
    # trec_eval's reader accepts the file, and its measures score each run.
    with qrels_file.open() as f:
        qrels = pytrec_eval.parse_qrel(f)
    assert qrels == {t: {d: g for (tt, d), g in truth.items() if tt == t} for t in pools}
    rows = {r.system: r for r in leaderboard(run)}
    for system in ("acme-ir", "zenith-ir"):
        trec = tmp_path / f"{system}.run"
        made = onsite("export", str(run), "--task", "ir", "--system", system, "--format",
                      "trec", "-o", str(trec))  # fmt: skip
        assert made.returncode == 0, made.stderr
        with trec.open() as f:
            trec_run = pytrec_eval.parse_run(f)
        measures = pytrec_eval.RelevanceEvaluator(qrels, {"map", "P_10", "Rprec"}).evaluate(
            trec_run
        )
        # trec_eval -c: every judged topic counts, one the run missed counts 0.
        ap = sum(measures.get(t, {}).get("map", 0.0) for t in qrels) / len(qrels)
        assert rows[system].score == pytest.approx(ap, abs=1e-12)
        by_files = onsite("score", "ir", "--qrels", str(qrels_file), "--run", str(trec),
                          "--complete", "--json")  # fmt: skip
        assert by_files.returncode == 0, by_files.stderr
        assert json.loads(by_files.stdout)["map"] == pytest.approx(ap, abs=1e-12)
        by_run = onsite("score", "ir", "--run", str(run), "--task", "ir", "--system", system,
                        "--json")  # fmt: skip
        assert by_run.returncode == 0, by_run.stderr
        assert json.loads(by_run.stdout)["map"] == pytest.approx(ap, abs=1e-12)
    assert rows["acme-ir"].score != rows["zenith-ir"].score

    # Pool statistics: unique documents per topic, each run's contribution.
    code, text = onsite_here(*args, "--results", "--json")
    result = json.loads(text)
    pool = result["pool"]
    assert pool["depth"] == DEPTH and pool["documents"] == len(truth)
    for system in ("acme-ir", "zenith-ir"):
        other = "zenith-ir" if system == "acme-ir" else "acme-ir"
        mine = [(t, d) for t, by in expected.items() for d in by.get(system, set())]
        unique = [(t, d) for t, d in mine if d not in expected[t].get(other, set())]
        assert pool["runs"][system] == {"contributed": len(mine), "unique": len(unique)}
    table = {r["topic"]: r for r in result["tables"]["pool"]}
    for topic, docs in pools.items():
        assert table[topic]["pooled"] == table[topic]["judged"] == len(docs)
        assert table[topic]["relevant"] == sum(1 for d in docs if truth[(topic, d)] >= 1)
    runs = {r["system"]: r for r in result["tables"]["runs"]}
    assert runs["acme-ir"]["map"] == pytest.approx(rows["acme-ir"].score)
    page = tmp_path / "report.html"
    assert onsite_here("report", str(run), "--html", str(page))[0] == 0
    html = page.read_text("utf-8")
    assert "Judging: ir / relevance" in html and f"Pool of depth {DEPTH}:" in html


def test_relevance_panel_refusals(ir_run: Path, tmp_path: Path) -> None:
    run = copy_run(ir_run, tmp_path)
    store, _ = open_panel(run, "ir", "relevance", 1, 0, pool_depth=2)
    store.close()
    with pytest.raises(ValueError, match="pool depth 2, not 5"):
        open_panel(run, "ir", "relevance", None, None, pool_depth=5)
    # A subset is one of topics: --items lists topic numbers.
    (run / "judging" / "ir.relevance.sqlite").unlink()
    listed = tmp_path / "topics.txt"
    listed.write_text("002\n", "utf-8")
    store, _ = open_panel(run, "ir", "relevance", 2, 0, subset=Subset(file=listed), pool_depth=2)
    try:
        assert {t.item.split("\t")[0] for t in store.plan().trials} == {"002"}
        assert json.loads(store.meta()["subset"])["ids"] == ["002"]
    finally:
        store.close()
    # A pooled document missing from the organizer's collection is shown empty, with a
    # warning naming it.
    collection = site_of_run(run).root / "collection"
    (collection / "D10.txt").rename(tmp_path / "D10.txt")
    try:
        warnings = load_material(run, "ir", "relevance", pool_depth=3).warnings
    finally:
        (tmp_path / "D10.txt").rename(collection / "D10.txt")
    assert any("document 'D10' is not in the collection" in w for w in warnings), warnings


@pytest.mark.browser
def test_relevance_trial_in_chromium(ir_run: Path, tmp_path: Path) -> None:
    """The assessor's page in a real headless Chromium: topic, document, graded answer."""
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path("/usr/bin/chromium").exists():
        pytest.skip("Debian's chromium is not installed")
    from tests.test_judge_browser import CHROMIUM_ARGS

    run = copy_run(ir_run, tmp_path)
    store, _ = open_panel(run, "ir", "relevance", 1, 0, pool_depth=DEPTH)
    store.close()
    with serving(run, "ir", "relevance") as (base, store), playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = chromium.new_page()
            [token] = store.tokens().values()
            page.goto(f"{base}/judge/{token}")
            page.wait_for_selector('[data-testid="relevance-2"]')
            shown = page.inner_text("#trial")
            assert "Topic: " in shown and "Document:" in shown
            assert "2 highly relevant" in shown and "0 not relevant" in shown
            page.check('[data-testid="relevance-1"]')
            page.click('[data-testid="submit"]')
            page.wait_for_function(
                "document.getElementById('progress').textContent.startsWith('Trial 2')"
            )
            assert store.answers()[0].answer == {"relevance": 1}
        finally:
            chromium.close()
