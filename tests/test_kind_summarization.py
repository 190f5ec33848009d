"""The summarization kind (harness/kinds/summarization.py): test set, limit, scores, end to end.

Scores are scoring.rouge's and scoring.cesta's; the end-to-end tests check that a
run's figures equal `onsite score rouge` and `onsite score cesta` on the same
summaries and reference files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import TestSetError, leaderboard, load_site
from harness.judge.material import load_material
from harness.kinds import task_kind
from harness.kinds.summarization import SummarizationOptions
from scoring.rouge import summary_length, truncate_summary
from tests.helpers import REPO, onsite, read_outputs, run_site, write_site

KIND = task_kind("summarization")
DEMO = REPO / "site_config" / "data" / "demo-summarization"
HOSTILE = [sys.executable, str(REPO / "tests" / "systems" / "hostile_summarizer.py")]
LEAD = [sys.executable, "-m", "examples.systems.lead_summarizer"]


def options(**keys: Any) -> SummarizationOptions:
    return SummarizationOptions(**({"length_limit": 50} | keys))


def make_set(root: Path, lang: str, docs: dict[str, str], refs: dict[str, list[str]]) -> Path:
    (root / "docs").mkdir(parents=True)
    for doc, text in docs.items():
        (root / "docs" / f"{doc}.txt").write_text(text, encoding="utf-8")
    most = max(len(r) for r in refs.values())
    for n in range(most):
        lines = [json.dumps({"id": d, "text": r[n]}) for d, r in refs.items() if len(r) > n]
        (root / f"ref{n + 1}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (root / "lang").write_text(lang + "\n", encoding="utf-8")
    return root


def score(testset: Any, outputs: dict[str, Any], **keys: Any) -> dict[str, Any]:
    return KIND.score(testset, options(**keys), outputs, {})


# --------------------------------------------------------------------------- test set


def test_demo_set_sends_documents_with_the_limit_and_pools_references() -> None:
    testset = KIND.load(DEMO, options(length_limit=50))
    assert [i.id for i in testset.items] == [f"s{n:02d}" for n in range(1, 11)]
    first = testset.items[0]
    assert first.fields["text"].startswith("北京市今天发布了新的公共交通计划。\n")
    assert {k: v for k, v in first.fields.items() if k != "text"} == {
        "lang": "zh",
        "length_limit": 50,
        "length_unit": "char",
    }
    # ref1.jsonl then ref2.jsonl: s01 has two references, s02 one.
    assert len(first.reference.refs) == 2 and len(testset.items[1].reference.refs) == 1
    assert first.units == summary_length(first.fields["text"], "char")
    assert not testset.invalid and not testset.warnings


def test_bad_documents_are_invalid_items_and_the_run_goes_on(tmp_path: Path) -> None:
    root = make_set(
        tmp_path / "set",
        "en",
        {"a": "A text.", "c": "   \n", "extra": "No reference."},
        {"a": ["A."], "b": ["B."], "c": ["C."], "d": ["D."]},
    )
    (root / "docs" / "d.txt").write_bytes("北京".encode("gb18030"))
    testset = KIND.load(root, options())
    assert [i.id for i in testset.items] == ["a"]
    reasons = {b.id: b.reason for b in testset.invalid}
    assert "no document" in reasons["b"] and "empty" in reasons["c"]
    assert "not valid UTF-8" in reasons["d"] and 'encoding = "gbk"' in reasons["d"]
    [warning] = testset.warnings
    assert "extra.txt" in warning and "no reference" in warning


@pytest.mark.parametrize(
    ("change", "file", "says"),
    [
        (lambda r: (r / "lang").unlink(), "lang", "no lang file"),
        (lambda r: (r / "lang").write_text("fr\n"), "lang", "expected zh or en"),
        (lambda r: (r / "ref1.jsonl").unlink(), "ref1.jsonl", "no reference summaries"),
        (
            lambda r: (r / "ref1.jsonl").write_text('{"id": "a", "text": "A."}\n{"id": "b"\n'),
            "ref1.jsonl",
            "invalid JSON",
        ),
        (
            lambda r: (r / "ref1.jsonl").write_text('{"id": "a", "text": " "}\n'),
            "ref1.jsonl",
            "empty reference",
        ),
        (
            lambda r: (r / "ref1.jsonl").write_text('{"id": "../../etc/passwd", "text": "x"}\n'),
            "ref1.jsonl",
            "not a plain file name",
        ),
    ],
)
def test_bad_test_set_names_the_file(tmp_path: Path, change: Any, file: str, says: str) -> None:
    root = make_set(tmp_path / "set", "en", {"a": "A text."}, {"a": ["A."]})
    change(root)
    with pytest.raises(TestSetError) as excinfo:
        KIND.load(root, options())
    [problem] = excinfo.value.problems
    assert problem.file == root / file and says in problem.message
    if says == "invalid JSON":
        assert problem.line == 2


def test_site_file_needs_a_limit_and_a_known_unit(tmp_path: Path) -> None:
    site = write_site(
        tmp_path / "site.toml",
        DEMO,
        {"lead": {"command": LEAD}},
        task="summ",
        task_keys={"kind": "summarization", "length_unit": "letters"},
    )
    result = onsite("check", str(site))
    assert result.returncode != 0
    assert "[tasks.summ.length_limit]: required key 'length_limit' is missing" in result.stderr
    assert "[tasks.summ.length_unit]: Input should be 'char' or 'word'" in result.stderr


# --------------------------------------------------------------------------- the limit


def test_length_counts_non_space_characters_or_words() -> None:
    assert summary_length("北京 发布\n计划。", "char") == 7  # the full stop counts, spaces not
    assert summary_length(" The cat  sat.\nOn it ", "word") == 5
    assert truncate_summary("北京发布\n新的计划。", 6, "char") == "北京发布\n新的"
    assert truncate_summary("one two\nthree four", 3, "word") == "one two\nthree"
    assert truncate_summary("short", 10, "char") == "short"


def test_over_the_limit_is_invalid_output_exactly_at_it_is_not(tmp_path: Path) -> None:
    root = make_set(tmp_path / "set", "zh", {"a": "一二三。"}, {"a": ["一二。"]})
    [item] = KIND.load(root, options(length_limit=4, over_limit="invalid")).items
    assert KIND.check_item is not None
    assert KIND.check_item(item, {"text": "一二 三。"}) is None
    problem = KIND.check_item(item, {"text": "一二三四五"})
    assert problem is not None and "5 characters is over the limit of 4" in problem
    [item] = KIND.load(
        root, options(length_limit=2, length_unit="word", over_limit="invalid")
    ).items
    problem = KIND.check_item(item, {"text": "one two three"})
    assert problem is not None and "3 words" in problem
    # With over_limit = "truncate" (the default) nothing is refused: the summary is cut.
    [item] = KIND.load(root, options(length_limit=4)).items
    assert KIND.check_item(item, {"text": "一二三四五"}) is None


def test_output_needs_a_text_string() -> None:
    assert KIND.check_output({"text": ""}) is None
    for bad in ({}, {"text": None}, {"summary": "x"}, {"text": ["a"]}):
        problem = KIND.check_output(bad)
        assert problem is not None and '"text" string' in problem


# --------------------------------------------------------------------------- scores


def test_rouge_worked_by_hand_english(tmp_path: Path) -> None:
    root = make_set(
        tmp_path / "set",
        "en",
        {"a": "The cat sat on the mat.", "b": "Dogs bark."},
        {"a": ["the cat sat on the mat"], "b": ["dogs bark"]},
    )
    testset = KIND.load(root, options())
    scores = score(testset, {"a": {"text": "The cat sat"}})
    # a: 3 of 6 reference unigrams, all 3 summary unigrams: R 1/2, P 1, F 2/3; bigrams
    # "the cat", "cat sat" of 5: R 2/5, P 1, F 4/7; LCS 3 as ROUGE-1. b unanswered: 0.
    assert scores["rouge1_f"] == pytest.approx((2 / 3) / 2)
    assert scores["rouge2_f"] == pytest.approx((4 / 7) / 2)
    assert scores["rougeL_f"] == pytest.approx((2 / 3) / 2)
    assert scores["missing"] == ["b"] and scores["documents"] == 2
    assert KIND.headline(options(), scores).value == pytest.approx(2 / 7)
    assert KIND.headline(options(headline="rougeL"), scores).label == "ROUGE-L F"


def test_rouge_worked_by_hand_chinese_characters(tmp_path: Path) -> None:
    root = make_set(tmp_path / "set", "zh", {"a": "北京发布了计划。"}, {"a": ["北京发布计划。"]})
    scores = score(KIND.load(root, options()), {"a": {"text": "北京，计划"}})
    # Characters 北 京 计 划 (the comma is no token) of 北 京 发 布 计 划: R 4/6, P 1,
    # F 0.8; bigrams 北京 计划 of 5 (京计 is no hit): R 2/5, P 2/3, F 1/2.
    assert scores["rouge1_f"] == pytest.approx(0.8)
    assert scores["rouge2_f"] == pytest.approx(0.5)
    assert scores["rougeL_f"] == pytest.approx(0.8)
    # One document: the significant-word score compares a text with the rest, so none.
    assert scores["cesta_ou"] is None


def test_truncate_scores_the_summary_cut_at_the_limit(tmp_path: Path) -> None:
    root = make_set(tmp_path / "set", "zh", {"a": "北京发布计划。"}, {"a": ["北京今天发布计划。"]})
    testset = KIND.load(root, options(length_limit=4, over_limit="truncate"))
    scores = score(testset, {"a": {"text": "北京发布计划"}}, length_limit=4, over_limit="truncate")
    # As ROUGE-1.5.5's -l, the reference is cut too: 北京发布 against 北京今天, R1 = P1 = 2/4.
    assert scores["rouge1_recall"] == 0.5 and scores["rouge1_precision"] == 0.5
    assert scores["truncated"] == ["a"] and "1 cut at the limit" in KIND.detail(scores)


# --------------------------------------------------------------------------- end to end


def hyp_file(rows: list[dict[str, Any]], path: Path) -> Path:
    """A run's accepted summaries as `onsite score rouge` reads them."""
    lines = [
        json.dumps({"id": r["id"], "text": r["output"]["text"]}, ensure_ascii=False)
        for r in rows
        if r["verdict"] == "ok"
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def score_json(*args: str) -> dict[str, Any]:
    result = onsite("score", *args, "--json")
    assert result.returncode == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_lead_summarizer_on_the_demo_set_equals_onsite_score(tmp_path: Path) -> None:
    site_path = write_site(
        tmp_path / "site.toml",
        DEMO,
        {"lead": {"command": LEAD, "workdir": str(REPO)}},
        task="summ",
        task_keys={"kind": "summarization", "length_limit": 50},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, results = run_site(site_path)
    assert [r.failed for r in results] == [None]
    rows = read_outputs(run_dir, "summ", "lead")
    assert {r["verdict"] for r in rows} == {"ok"}
    # Lead sentences: s04's first two sentences are 21 + 11 characters, the third
    # (21) would pass 50.
    s04 = next(r for r in rows if r["id"] == "s04")["output"]["text"]
    assert s04 == "国家足球队在昨晚的比赛中以二比一战胜对手。\n上半场双方都没有进球。"
    assert all(summary_length(r["output"]["text"], "char") <= 50 for r in rows)
    [row] = leaderboard(load_site(site_path).run_dir)
    hyp = hyp_file(rows, tmp_path / "hyp.jsonl")
    refs = ["--ref", str(DEMO / "ref1.jsonl"), "--ref", str(DEMO / "ref2.jsonl")]
    offline = score_json("rouge", "--hyp", str(hyp), *refs, "--lang", "zh")
    assert row.metric == "rouge2_f" and row.score == pytest.approx(offline["rouge2_f"])
    for key in ("rouge1_f", "rouge2_recall", "rougeL_f", "rougeL_precision"):
        assert row.scores[key] == pytest.approx(offline[key]), key
    cesta = score_json(
        "cesta", "--hyp", str(hyp), "--ref", str(DEMO / "ref1.jsonl"), "--lang", "zh"
    )
    assert row.scores["cesta_ou"] == pytest.approx(cesta["ou"])
    assert row.scores["cesta_o"] == pytest.approx(cesta["o"])
    assert row.speed_unit == "kchars_per_second" and row.speed_mean
    assert "R-L" in row.detail and "CESTA o&u" in row.detail
    # Expert scores: the judging panel's summary test shows the document and summary.
    material = load_material(run_dir, "summ", "summary")
    assert material.items == tuple(f"s{n:02d}" for n in range(1, 11)) and not material.warnings
    assert material.texts["s04"].startswith("国家足球队")
    assert material.outputs[("lead", "s04")].text == s04


def hostile_set(root: Path) -> Path:
    docs = {
        "ok": "The council approved the budget.\nIt takes effect in May.",
        "long": "LONG document about the budget.",
        "empty": "EMPTY document about the budget.",
        "notext": "NOTEXT document about the budget.",
        "bytes": "BYTES document about the budget.",
    }
    refs = {d: ["the council approved the budget"] for d in docs}
    return make_set(root, "en", docs, refs)


@pytest.mark.parametrize("over_limit", ["invalid", "truncate"])
def test_hostile_summarizer(tmp_path: Path, over_limit: str) -> None:
    root = hostile_set(tmp_path / "set")
    site_path = write_site(
        tmp_path / "site.toml",
        root,
        {"hostile": {"command": HOSTILE}},
        task="summ",
        task_keys={
            "kind": "summarization",
            "length_limit": 10,
            "length_unit": "word",
            "over_limit": over_limit,
        },
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, _ = run_site(site_path)
    rows = {r["id"]: r for r in read_outputs(run_dir, "summ", "hostile")}
    verdicts = {d: r["verdict"] for d, r in rows.items()}
    # An empty summary is an answer (it scores 0); no text is not one.
    assert verdicts["ok"] == verdicts["empty"] == "ok"
    assert verdicts["notext"] == "invalid_output"
    assert '"text" string' in rows["notext"]["message"]
    # A line that is not UTF-8 is not JSON: invalid_output, and the system goes on.
    assert verdicts["bytes"] == "invalid_output" and "not valid UTF-8" in rows["bytes"]["message"]
    if over_limit == "invalid":
        assert verdicts["long"] == "invalid_output"
        assert "30 words is over the limit of 10 words" in rows["long"]["message"]
    else:
        assert verdicts["long"] == "ok"
    [row] = leaderboard(load_site(site_path).run_dir)
    assert row.invalid_outputs == (3 if over_limit == "invalid" else 2)
    # The live figures equal `onsite score rouge` on the summaries as scored.
    # (`--length-limit` cuts as the truncate rule does; under "invalid" nothing is over it.)
    hyp = hyp_file(list(rows.values()), tmp_path / "hyp.jsonl")
    limit = ("--length-limit", "10", "--length-unit", "word")
    offline = score_json("rouge", "--hyp", str(hyp), "--ref", str(root / "ref1.jsonl"), *limit)
    assert row.score == pytest.approx(offline["rouge2_f"])
    assert row.scores["rouge1_f"] == pytest.approx(offline["rouge1_f"])
    # "ok" answers its first line, the reference word for word (F 1); the other four
    # score 0 (empty, cut to ten "w", or no answer): ROUGE-1 F = 1 / 5 documents.
    assert row.scores["rouge1_f"] == pytest.approx(1 / 5)
    assert sorted(row.scores["missing"]) == sorted(d for d, v in verdicts.items() if v != "ok")


def test_demo_set_is_what_the_docs_say() -> None:
    # The layout docs/text-task-kinds.md gives: docs/, ref*.jsonl, lang.
    assert sorted(p.name for p in DEMO.iterdir()) == ["docs", "lang", "ref1.jsonl", "ref2.jsonl"]
