"""Text categorization, retrieval and summarization scoring: hand-worked cases and cross-checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from scoring.errors import FormatError
from scoring.ir import (
    rank_documents,
    read_qrels,
    read_run,
    read_topics,
    score_ir,
    score_ir_files,
    score_topic,
)
from scoring.summarization import (
    ExpertRating,
    read_expert_ratings,
    score_summarization,
    score_summarization_files,
)
from scoring.textcat import general_score, read_category_file, score_textcat, score_textcat_files


def _write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


# --- text categorization -------------------------------------------------------

GOLD = {"d1": ("A",), "d2": ("A",), "d3": ("B",), "d4": ("B", "C"), "d5": ("C",)}
PRED = {"d1": ("A",), "d2": ("B", "A"), "d3": ("B",), "d4": ("C", "B")}  # d5 unanswered


@pytest.mark.parametrize(
    ("expert", "system", "score"),
    [
        # Table 61, expert gave one category A.
        (("A",), ("A",), 1.0),
        (("A",), ("A", "X"), 0.75),
        (("A",), ("X", "A"), 0.5),
        (("A",), ("X",), 0.0),
        (("A",), ("X", "Y"), 0.0),
        (("A",), (), 0.0),
        # Table 61, expert gave A then B.
        (("A", "B"), ("A", "B"), 1.0),
        (("A", "B"), ("A", "X"), 0.75),
        (("A", "B"), ("A",), 0.75),
        (("A", "B"), ("B", "A"), 0.75),
        (("A", "B"), ("B", "X"), 0.5),
        (("A", "B"), ("B",), 0.5),
        (("A", "B"), ("X", "A"), 0.5),
        (("A", "B"), ("X", "B"), 0.3),
        (("A", "B"), ("X", "Y"), 0.0),
        (("A", "B"), ("X",), 0.0),
    ],
)
def test_general_score_table_61(
    expert: tuple[str, ...], system: tuple[str, ...], score: float
) -> None:
    assert general_score(expert, system) == score


def test_general_score_rejects_three_categories() -> None:
    with pytest.raises(ValueError, match="at most two"):
        general_score(("A",), ("A", "B", "C"))


def test_textcat_hand_worked_first_category() -> None:
    rep = score_textcat(GOLD, PRED, seconds=2.0)
    cats = {c.category: c for c in rep.categories}
    # Gold first categories: A A B B C; system first: A B B C -.
    assert (cats["A"].gold, cats["A"].predicted, cats["A"].correct) == (2, 1, 1)
    assert (cats["B"].gold, cats["B"].predicted, cats["B"].correct) == (2, 2, 1)
    assert (cats["C"].gold, cats["C"].predicted, cats["C"].correct) == (1, 1, 0)
    assert cats["A"].f1 == pytest.approx(2 / 3)
    assert rep.macro_precision == pytest.approx(0.5)  # (1 + 1/2 + 0) / 3
    assert rep.macro_recall == pytest.approx(1 / 3)  # (1/2 + 1/2 + 0) / 3
    assert rep.macro_f1 == pytest.approx(0.4)  # 2 * 1/2 * 1/3 / (1/2 + 1/3)
    assert rep.mean_category_f1 == pytest.approx(7 / 18)  # (2/3 + 1/2 + 0) / 3
    assert rep.micro_precision == pytest.approx(0.5)  # 2 of 4 answers
    assert rep.micro_recall == pytest.approx(0.4)  # 2 of 5 documents
    assert rep.micro_f1 == pytest.approx(4 / 9)
    # 1 + 0.5 (X,A) + 1 + 0.75 (B,A against A,B) + 0 (no answer)
    assert rep.general_score == pytest.approx(3.25)
    assert rep.general_score_rate == pytest.approx(0.65)
    assert rep.unanswered == 1 and rep.docs_per_second == pytest.approx(2.5)


def test_textcat_any_expert_category() -> None:
    rep = score_textcat(GOLD, PRED, gold_mode="any")
    cats = {c.category: c for c in rep.categories}
    # d4 now belongs to B and C, and its first answer C is correct.
    assert (cats["C"].gold, cats["C"].correct) == (2, 1)
    assert rep.micro_recall == pytest.approx(3 / 6)


def test_textcat_matches_sklearn_on_random_single_labels() -> None:
    import sklearn.metrics as sklearn_metrics

    rng = np.random.default_rng(7)
    labels = ["A", "B", "C", "D", "E"]
    gold = {f"d{i}": (str(rng.choice(labels)),) for i in range(200)}
    pred = {d: (str(rng.choice(labels)),) for d in gold if rng.random() < 0.9}
    rep = score_textcat(gold, pred, categories=labels)
    y_true = [gold[d][0] for d in gold]
    y_pred = [pred[d][0] if d in pred else "<none>" for d in gold]
    p, r, f, _ = sklearn_metrics.precision_recall_fscore_support(
        y_true, y_pred, labels=labels, average="macro", zero_division=0
    )
    assert rep.macro_precision == pytest.approx(p)
    assert rep.macro_recall == pytest.approx(r)
    assert rep.mean_category_f1 == pytest.approx(f)  # sklearn's macro F1 is the mean of F1s
    p, r, f, _ = sklearn_metrics.precision_recall_fscore_support(
        y_true, y_pred, labels=labels, average="micro", zero_division=0
    )
    assert (rep.micro_precision, rep.micro_recall, rep.micro_f1) == pytest.approx((p, r, f))


def test_textcat_prediction_outside_gold_categories_counts_in_micro_only() -> None:
    rep = score_textcat({"d1": ("A",), "d2": ("A",)}, {"d1": ("A",), "d2": ("Z",)})
    cats = {c.category: c for c in rep.categories}
    assert not cats["Z"].in_macro and cats["A"].in_macro
    assert rep.macro_precision == pytest.approx(1.0)  # only A is averaged
    assert rep.micro_precision == pytest.approx(0.5)  # the Z answer is still wrong


def test_textcat_files_round_trip(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.tsv", "# expert\nd1\tA\nd2\tA\nd3\tB\nd4\tB,C\nd5\tC\n")
    pred = _write(tmp_path / "pred.tsv", "d1\tA\nd2\tB,A\nd3\tB\nd4\tC,B\nd5\t\n")
    out = score_textcat_files(gold, pred, seconds=10.0)
    json.dumps(out)
    assert out["general_score"] == pytest.approx(3.25)
    assert out["macro_f1"] == pytest.approx(0.4) and out["unanswered"] == 1
    assert read_category_file(pred, system=True)["d5"] == ()


@pytest.mark.parametrize(
    ("gold_text", "pred_text", "bad", "line", "needle"),
    [
        ("d1\tA\n", "d1\tA\nd9\tB\n", "pred", 2, "not in the gold file"),
        ("d1\tA\nd1\tB\n", "d1\tA\n", "gold", 2, "duplicate document"),
        ("d1\tA,B,C\n", "d1\tA\n", "gold", 1, "3 categories"),
        ("d1\tA\n", "d1\tA,A\n", "pred", 1, "repeated"),
        ("d1\t\n", "d1\tA\n", "gold", 1, "no category"),
        ("d1 A\n", "d1\tA\n", "gold", 1, "tab-separated"),
    ],
)
def test_textcat_file_errors_name_the_line(
    tmp_path: Path, gold_text: str, pred_text: str, bad: str, line: int, needle: str
) -> None:
    gold = _write(tmp_path / "gold.tsv", gold_text)
    pred = _write(tmp_path / "pred.tsv", pred_text)
    with pytest.raises(FormatError, match=needle) as exc:
        score_textcat_files(gold, pred)
    assert exc.value.line == line
    assert exc.value.path == str(gold if bad == "gold" else pred)


def test_textcat_unknown_predefined_category_names_line(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.tsv", "d1\tA\n")
    pred = _write(tmp_path / "pred.tsv", "\nd1\tQ\n")
    with pytest.raises(FormatError, match="not predefined") as exc:
        score_textcat_files(gold, pred, categories=["A", "B"])
    assert (exc.value.path, exc.value.line) == (str(pred), 2)


# --- retrieval --------------------------------------------------------------------


def _qrels(rel: dict[str, dict[str, int]]) -> str:
    return "".join(f"{t} 0 {d} {r}\n" for t, docs in rel.items() for d, r in docs.items())


def _run(run: dict[str, dict[str, float]]) -> str:
    return "".join(
        f"{t} Q0 {d} {i} {s} tag\n"
        for t, docs in run.items()
        for i, (d, s) in enumerate(docs.items(), start=1)
    )


def test_survey_map_example() -> None:
    # HTRDP survey 9.2: relevant at ranks 1, 2, 4, 7 of 4; and 1, 3, 5 of 5.
    rel1 = {f"r{i}": 1 for i in (1, 2, 4, 7)}
    rel2 = {f"s{i}": 1 for i in (1, 3, 5, 8, 9)}
    run1 = {f"r{i}": 100.0 - i for i in range(1, 11)}
    run2 = {f"s{i}": 100.0 - i for i in range(1, 6)}
    rep = score_ir({"1": rel1, "2": rel2}, {"1": run1, "2": run2})
    ap1 = (1 + 1 + 3 / 4 + 4 / 7) / 4
    ap2 = (1 + 2 / 3 + 3 / 5 + 0 + 0) / 5  # two relevant documents never retrieved
    assert [t.ap for t in rep.per_topic] == pytest.approx([ap1, ap2])
    assert rep.map == pytest.approx((ap1 + ap2) / 2)
    assert round(rep.map, 2) == 0.64
    # R-precision: topic 1 has 3 of 4 in the top 4; topic 2 has 3 in the top 5.
    assert [t.rprec for t in rep.per_topic] == pytest.approx([3 / 4, 3 / 5])
    # P@10 divides by 10 even though topic 2 retrieved only 5.
    assert [t.p10 for t in rep.per_topic] == pytest.approx([4 / 10, 3 / 10])


def test_ties_broken_by_docno_descending() -> None:
    assert rank_documents({"a": 1.0, "c": 1.0, "b": 2.0, "d": 0.5}) == ["b", "c", "a", "d"]
    # The relevant doc "doc1" loses the tie to "doc2": AP 1/2, not 1.
    t = score_topic("1", {"doc1": 1}, {"doc1": 3.0, "doc2": 3.0})
    assert t.ap == pytest.approx(0.5)
    # The rank column is ignored: only the score orders documents.
    assert score_topic("1", {"x": 1}, {"x": 2.0, "y": 1.0}).ap == 1.0


def test_rprec_with_fewer_retrieved_than_relevant() -> None:
    t = score_topic("1", {"a": 1, "b": 1, "c": 1, "d": 1, "e": 0}, {"a": 2.0, "b": 1.0})
    assert t.rprec == pytest.approx(2 / 4) and t.num_rel == 4 and t.num_rel_ret == 2


def test_relevance_level_and_negative_judgements() -> None:
    judged = {"a": 2, "b": 1, "c": -1}
    assert score_topic("1", judged, {"b": 2.0, "a": 1.0}).ap == pytest.approx(1.0)
    t = score_topic("1", judged, {"b": 2.0, "a": 1.0}, relevance_level=2)
    assert t.num_rel == 1 and t.ap == pytest.approx(1 / 2)
    assert score_topic("1", judged, {"c": 1.0}).num_rel == 2  # -1 is not relevant


def test_topic_averaging_and_complete_flag() -> None:
    qrels = {"1": {"a": 1}, "2": {"b": 1}, "3": {"c": 0}}
    run = {"1": {"a": 1.0}, "3": {"c": 1.0}, "9": {"z": 1.0}}
    rep = score_ir(qrels, run)
    # Topics 1 and 3 are in both; 3 has no relevant document and scores 0.
    assert rep.averaged_over == 2 and rep.map == pytest.approx(0.5)
    assert rep.topics_without_relevant == ("3",)
    assert rep.ignored_run_topics == ("9",) and rep.missing_topics == ("2",)
    complete = score_ir(qrels, run, complete=True)
    assert complete.averaged_over == 3 and complete.map == pytest.approx(1 / 3)


def test_score_ir_files(tmp_path: Path) -> None:
    q = _write(tmp_path / "qrels", "# judged\n" + _qrels({"1": {"a": 1, "b": 0}}))
    r = _write(tmp_path / "run", _run({"1": {"b": 2.0, "a": 1.0}}))
    out = score_ir_files(q, r)
    json.dumps(out)
    assert set(out) >= {"map", "rprec", "p10", "per_topic"}
    assert out["map"] == pytest.approx(0.5) and out["per_topic"]["1"]["rprec"] == 0.0


def test_matches_pytrec_eval_on_random_runs_with_ties() -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(0)
    docs = [f"D{i:03d}" for i in range(40)]
    for _ in range(25):
        qrels: dict[str, dict[str, int]] = {}
        run: dict[str, dict[str, float]] = {}
        for t in range(8):
            topic = f"{t:03d}"
            if t != 7:  # topic 007 only in the run
                judged = rng.choice(docs, 25, replace=False)
                qrels[topic] = {str(d): int(rng.integers(0, 3)) for d in judged}
            if t == 5:  # judged, nothing relevant
                qrels[topic] = dict.fromkeys(qrels[topic], 0)
            if t != 6:  # topic 006 only in the qrels
                chosen = rng.choice(docs, int(rng.integers(1, 30)), replace=False)
                # Few distinct scores: many ties to break.
                run[topic] = {str(d): float(rng.integers(0, 4)) for d in chosen}
        expected = pytrec_eval.RelevanceEvaluator(qrels, {"map", "Rprec", "P_10"}).evaluate(run)
        rep = score_ir(qrels, run)
        got = {s.topic: s for s in rep.per_topic}
        assert set(got) == set(expected)
        for topic, v in expected.items():
            assert got[topic].ap == pytest.approx(v["map"], abs=1e-12)
            assert got[topic].rprec == pytest.approx(v["Rprec"], abs=1e-12)
            assert got[topic].p10 == pytest.approx(v["P_10"], abs=1e-12)
        assert rep.map == pytest.approx(np.mean([v["map"] for v in expected.values()]))


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("1 Q0 a 1 2.0 tag\n1 Q0 b 2 1.0\n", 2, "5 columns"),
        ("1 Q0 a 1 2.0 tag\n\n1 Q0 a 2 1.0 tag\n", 3, "retrieved twice"),
        ("1 Q0 a 1 high tag\n", 1, "not a finite number"),
        ("1 Q0 a 1 nan tag\n", 1, "not a finite number"),
    ],
)
def test_run_errors_name_the_line(tmp_path: Path, text: str, line: int, needle: str) -> None:
    path = _write(tmp_path / "run", text)
    with pytest.raises(FormatError, match=needle) as exc:
        read_run(path)
    assert exc.value.line == line
    assert f"{path}:{line}:" in str(exc.value)


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("1 0 a\n", 1, "3 columns"),
        ("1 0 a 1\n1 0 a 0\n", 2, "judged twice"),
        ("1 0 a yes\n", 1, "not an integer"),
    ],
)
def test_qrels_errors_name_the_line(tmp_path: Path, text: str, line: int, needle: str) -> None:
    path = _write(tmp_path / "qrels", text)
    with pytest.raises(FormatError, match=needle) as exc:
        read_qrels(path)
    assert exc.value.line == line


def test_run_not_utf8_names_line(tmp_path: Path) -> None:
    path = tmp_path / "run"
    path.write_bytes(b"1 Q0 a 1 1.0 t\n1 Q0 \xff 2 0.5 t\n")
    with pytest.raises(FormatError, match="not valid UTF-8") as exc:
        read_run(path)
    assert exc.value.line == 2


TOPIC = """<top>

<num> 编号: 001

<title> 自然语言处理

<desc> 描述:

文档应当涉及在中国得到研究和开发的自然语言处理 技术。

<narr> 叙述:

一篇相关的文档应当涉及以下内容: 自然语言处理技术.

</top>

<top>
<num> Number: 002
<title> 机器翻译
</top>
"""


@pytest.mark.parametrize("encoding", ["utf-8", "gb2312"])
def test_read_topics_detects_encoding(tmp_path: Path, encoding: str) -> None:
    topics, used = read_topics(_write(tmp_path / "topics.txt", TOPIC, encoding))
    assert used == encoding
    assert [t.num for t in topics] == ["001", "002"]
    assert topics[0].title == "自然语言处理"
    assert topics[0].desc == "文档应当涉及在中国得到研究和开发的自然语言处理 技术。"
    assert topics[0].narr.startswith("一篇相关的文档") and topics[1].desc == ""
    assert topics[1].line == 17


def test_read_topics_decode_error_names_line(tmp_path: Path) -> None:
    path = tmp_path / "topics.txt"
    path.write_bytes(TOPIC.encode("gb2312").replace("机器".encode("gb2312"), b"\x81\x20"))
    with pytest.raises(FormatError, match="neither UTF-8 nor") as exc:
        read_topics(path)
    assert exc.value.line == 19


@pytest.mark.parametrize(
    ("text", "line", "needle"),
    [
        ("<top>\n<num> 1\n", 1, "never closed"),
        ("<top>\n<num> 1\n<top>\n", 3, "inside the topic"),
        ("<top>\n<title> x\n</top>\n", 1, "without <num>"),
        ("<top><num> 1</top>\n<top>\n<num> 1\n</top>\n", 2, "repeated"),
        ("<top><num> 1</top>\nstray\n", 2, "outside"),
    ],
)
def test_read_topics_structure_errors(tmp_path: Path, text: str, line: int, needle: str) -> None:
    with pytest.raises(FormatError, match=needle) as exc:
        read_topics(_write(tmp_path / "t.txt", text))
    assert exc.value.line == line


# --- summarization and keywords ----------------------------------------------------


def _ratings() -> list[ExpertRating]:
    out = []
    table = {  # (system, task): ratings by (doc, expert)
        ("s1", "summary"): [5, 4, 3, 2],
        ("s2", "summary"): [1, 1, 2, 0],
        ("s1", "keywords"): [3, 3, 2, 2],
        ("s2", "keywords"): [3, 3, 3, 2.5],
    }
    for (system, task), scores in table.items():
        cells = [("d1", "E1"), ("d1", "E2"), ("d2", "E1"), ("d2", "E2")]
        for (doc, expert), score in zip(cells, scores, strict=True):
            out.append(ExpertRating(task, system, doc, expert, float(score)))
    return out


def test_summarization_sums_per_system() -> None:
    rep = score_summarization(_ratings())
    summary = {s.system: s for s in rep.tasks["summary"]}
    assert summary["s1"].total == 14 and summary["s2"].total == 4
    assert summary["s1"].mean == pytest.approx(3.5) and summary["s1"].rate == pytest.approx(0.7)
    assert (summary["s1"].documents, summary["s1"].experts) == (2, 2)
    kw = rep.tasks["keywords"]
    assert [s.system for s in kw] == ["s2", "s1"]  # ranked by total: 11.5 > 10
    assert kw[0].rate == pytest.approx(11.5 / 4 / 3)


def test_summarization_missing_rating() -> None:
    ratings = _ratings()[1:]  # s1 lost its summary rating of d1 by E1
    with pytest.raises(ValueError, match="no rating of document 'd1' by expert 'E1'"):
        score_summarization(ratings)
    rep = score_summarization(ratings, allow_missing=True)
    s1 = next(s for s in rep.tasks["summary"] if s.system == "s1")
    assert s1.missing == 1 and s1.ratings == 3 and s1.mean == pytest.approx(3.0)


def test_summarization_file(tmp_path: Path) -> None:
    lines = ["# task system doc expert score"]
    lines += [f"{r.task}\t{r.system}\t{r.document}\t{r.expert}\t{r.score:g}" for r in _ratings()]
    path = _write(tmp_path / "ratings.tsv", "\n".join(lines) + "\n")
    out = score_summarization_files(path)
    json.dumps(out)
    assert out["summary"][0] == {
        "system": "s1",
        "task": "summary",
        "total": 14.0,
        "ratings": 4,
        "documents": 2,
        "experts": 2,
        "mean": 3.5,
        "rate": 0.7,
        "missing": 0,
    }


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("summary\ts1\td1\tE1\t6\n", "not a number in 0..5"),
        ("keywords\ts1\td1\tE1\t4\n", "not a number in 0..3"),
        ("title\ts1\td1\tE1\t1\n", "unknown task"),
        ("summary\ts1\td1\tE1\n", "need 5"),
        ("summary\ts1\td1\tE1\t2\nsummary\ts1\td1\tE1\t3\n", "twice"),
    ],
)
def test_summarization_file_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = _write(tmp_path / "r.tsv", text)
    with pytest.raises(FormatError, match=needle) as exc:
        read_expert_ratings(path)
    assert exc.value.line == text.count("\n")


def test_summarization_file_incomplete_design(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.tsv", "summary\ts1\td1\tE1\t2\nsummary\ts2\td2\tE1\t3\n")
    with pytest.raises(FormatError, match="same documents") as exc:
        score_summarization_files(path)
    assert exc.value.line is None
