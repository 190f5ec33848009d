"""The text task kinds (harness/kinds/text.py): loaders, output checks, scores, end to end.

The demo sets under site_config/data/demo-text/ are tiny, so every number the
example system (examples/systems/text_baselines.py) scores is worked out by
hand in the comments.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import TestSetError, leaderboard, load_site
from harness.kinds import text
from tests.helpers import REPO, read_outputs, run_site, write_site

TEXT_TASK_KINDS = {kind.name: kind for kind in text.KINDS}

DEMO = REPO / "site_config" / "data" / "demo-text"
BASELINE = [sys.executable, "-m", "examples.systems.text_baselines"]


def load(kind: str, root: Path | None = None) -> Any:
    # No loader reads the Task: the text kinds take everything from the test-set directory.
    return TEXT_TASK_KINDS[kind].load(root or DEMO / kind, None)


def score(kind: str, testset: Any, outputs: dict[str, Any]) -> dict[str, Any]:
    seconds = {item.id: 0.5 for item in testset.items}
    return TEXT_TASK_KINDS[kind].score(testset, None, outputs, seconds)


def copy_demo(tmp_path: Path, kind: str) -> Path:
    return Path(shutil.copytree(DEMO / kind, tmp_path / kind))


def problem_of(excinfo: pytest.ExceptionInfo[TestSetError]) -> Any:
    [problem] = excinfo.value.problems
    return problem


# --------------------------------------------------------------------------- loaders


def test_mt_loader_sends_each_source_segment_with_the_target_language() -> None:
    testset = load("mt")
    assert [i.id for i in testset.items] == ["1", "2"]
    assert [dict(i.fields) for i in testset.items] == [
        {"text": "你好世界", "lang": "en"},
        {"text": "我们喜欢北京", "lang": "en"},
    ]
    assert testset.items[1].reference.refs == ("we love beijing",)
    assert testset.items[1].units == 6 and not testset.items[0].files


def test_mt_loader_pairs_cwmt_xml_by_document_and_segment(tmp_path: Path) -> None:
    (tmp_path / "source.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<srcset setid="t" srclang="zh" tgtlang="zh">\n'
        '<doc docid="d1"><s id="1">一</s><s id="2">二</s></doc>\n</srcset>\n',
        encoding="utf-8",
    )
    # Two references in one file, segments in another order than the source's.
    (tmp_path / "ref.xml").write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<refset setid="t" srclang="zh" tgtlang="zh">\n'
        '<doc docid="d1" site="r1"><s id="2">二号</s><s id="1">一号</s></doc>\n'
        '<doc docid="d1" site="r2"><s id="1">第一</s><s id="2">第二</s></doc>\n</refset>\n',
        encoding="utf-8",
    )
    testset = load("mt", tmp_path)
    assert [i.id for i in testset.items] == ["d1:1", "d1:2"]
    assert testset.items[0].fields["lang"] == "zh"  # tgtlang, there being no lang file
    assert testset.items[0].reference.refs == ("一号", "第一")
    # zh is scored at character level: a perfect answer scores BLEU 1.
    scores = score("mt", testset, {"d1:1": {"text": "一号"}, "d1:2": {"text": "二号"}})
    assert scores["bleu"] == pytest.approx(1.0) and scores["n_refs"] == 2


def test_cws_loader_sends_unsegmented_lines_and_the_word_list_at_setup() -> None:
    testset = load("cws")
    assert [dict(i.fields) for i in testset.items] == [
        {"text": "我们喜欢北京"},
        {"text": "他在北京大学学习"},
    ]
    assert testset.items[1].reference.words == ("他", "在", "北京", "大学", "学习")
    assert testset.setup_files == {"words": DEMO / "cws" / "words.txt"}


def test_ner_loader_sends_token_lists() -> None:
    testset = load("ner")
    assert [i.id for i in testset.items] == ["1", "6"]  # the line each sentence starts on
    assert testset.items[1].fields == {"tokens": ["李四", "去", "上海"]}
    assert testset.items[1].reference == ("B-PER", "O", "B-LOC")


def test_pos_loader_sends_unsegmented_lines_and_training_at_setup() -> None:
    testset = load("pos")
    assert testset.items[1].fields == {"text": "他在北京学习"}
    assert testset.items[1].reference.training is not None
    assert testset.setup_files == {"train": DEMO / "pos" / "train.pos"}


def test_textcat_loader_sends_document_text() -> None:
    testset = load("textcat")
    assert [i.id for i in testset.items] == ["d1", "d2", "d3", "d4"]
    assert testset.items[0].fields == {"text": "The team won the football match.\n"}
    assert testset.items[3].reference == ("sports", "economy")


def test_ir_loader_sends_judged_topics_and_warns_about_the_rest() -> None:
    testset = load("ir")
    assert [i.id for i in testset.items] == ["001", "002"]
    assert testset.items[1].fields == {
        "query": "stock market",
        "description": "How the stock market moved.",
        "narrative": "A relevant document reports stock prices; company news is not relevant.",
    }
    [warning] = testset.warnings
    assert "topic 003 has no judgements" in warning


# --------------------------------------------------------------------------- bad sets


def test_mt_reference_of_another_length_names_the_file(tmp_path: Path) -> None:
    root = copy_demo(tmp_path, "mt")
    (root / "ref1.txt").write_text("hello world\n", encoding="utf-8")
    with pytest.raises(TestSetError) as excinfo:
        load("mt", root)
    problem = problem_of(excinfo)
    assert problem.file == root / "ref1.txt" and "1 reference segments for 2" in problem.message


def test_mt_needs_a_source_and_one_to_four_references(tmp_path: Path) -> None:
    root = copy_demo(tmp_path, "mt")
    (root / "ref1.txt").unlink()
    with pytest.raises(TestSetError, match="0 reference sets"):
        load("mt", root)
    (root / "source.txt").unlink()
    with pytest.raises(TestSetError, match="no source.txt or source.xml"):
        load("mt", root)


def test_cws_gold_not_utf8_names_the_line(tmp_path: Path) -> None:
    root = copy_demo(tmp_path, "cws")
    (root / "gold.txt").write_bytes("我们 喜欢\n北京 大学\n".encode() + "他".encode("gb18030"))
    with pytest.raises(TestSetError) as excinfo:
        load("cws", root)
    problem = problem_of(excinfo)
    assert (problem.file, problem.line) == (root / "gold.txt", 3)
    # One GB18030 character after UTF-8 lines: the line reads as GBK, the file as nothing.
    assert "this line reads as gbk, but not the whole file" in problem.message
    assert "iconv -f gbk -t UTF-8" in problem.fix


def test_ner_bad_gold_tag_names_the_line(tmp_path: Path) -> None:
    root = copy_demo(tmp_path, "ner")
    (root / "gold.conll").write_text("张三 B-PER\n在 X-LOC\n", encoding="utf-8")
    with pytest.raises(TestSetError) as excinfo:
        load("ner", root)
    problem = problem_of(excinfo)
    assert problem.line == 2 and "'X-LOC'" in problem.message and "B-PER" in problem.fix


def test_pos_token_without_tag_names_the_line(tmp_path: Path) -> None:
    root = copy_demo(tmp_path, "pos")
    (root / "gold.pos").write_text("我们/r 喜欢/v\n他 在/p\n", encoding="utf-8")
    with pytest.raises(TestSetError) as excinfo:
        load("pos", root)
    problem = problem_of(excinfo)
    assert problem.line == 2 and "'他' is not word/TAG" in problem.message


def test_textcat_bad_gold_line_and_missing_document(tmp_path: Path) -> None:
    root = copy_demo(tmp_path, "textcat")
    (root / "docs" / "d3.txt").unlink()
    (root / "docs" / "extra.txt").write_text("spare", encoding="utf-8")
    testset = load("textcat", root)
    assert [(b.id, "no document" in b.reason) for b in testset.invalid] == [("d3", True)]
    assert any("extra.txt" in w for w in testset.warnings)
    (root / "gold.tsv").write_text("d1\tsports\nd2 economy\n", encoding="utf-8")
    with pytest.raises(TestSetError) as excinfo:
        load("textcat", root)
    assert problem_of(excinfo).line == 2


def test_ir_bad_qrels_line_and_missing_topics(tmp_path: Path) -> None:
    root = copy_demo(tmp_path, "ir")
    (root / "qrels").write_text("001 0 D1 1\n001 0 D3 yes\n", encoding="utf-8")
    with pytest.raises(TestSetError) as excinfo:
        load("ir", root)
    problem = problem_of(excinfo)
    assert (problem.file, problem.line) == (root / "qrels", 2) and "'yes'" in problem.message
    (root / "topics").unlink()
    with pytest.raises(TestSetError, match="no such file"):
        load("ir", root)


# --------------------------------------------------------------------------- output checks


@pytest.mark.parametrize(
    ("kind", "output"),
    [
        ("mt", {"text": "hello world"}),
        ("cws", {"text": "我们 喜欢 北京"}),
        ("ner", {"tags": ["B-PER", "I-PER", "O", "S-LOC", "E-ORG"]}),
        ("ner", {"tags": []}),
        ("pos", {"text": "我们/r 喜欢/v 1/2/m"}),
        ("pos", {"text": ""}),
        ("textcat", {"categories": ["sports", "economy"]}),
        ("textcat", {"categories": []}),
        ("ir", {"results": [["D1", 2.5], ["D2", 1]]}),
        ("ir", {"results": []}),
    ],
)
def test_valid_outputs(kind: str, output: dict[str, Any]) -> None:
    assert TEXT_TASK_KINDS[kind].check_output(output) is None


@pytest.mark.parametrize(
    ("kind", "output", "says"),
    [
        ("mt", {"translation": "hello"}, '"text" string'),
        ("cws", {"text": ["我们", "喜欢"]}, '"text" string'),
        ("ner", {"tags": "B-PER O"}, "list of strings"),
        ("ner", {"tags": ["B-PER", "PER"]}, "'PER' is not O or B-/I-/E-/S-"),
        ("pos", {"text": "我们/r 喜欢"}, "'喜欢' is not word/TAG"),
        ("pos", {"text": "我们/ 喜欢/v"}, "'我们/' is not word/TAG"),
        ("textcat", {"categories": "sports"}, "at most two distinct"),
        ("textcat", {"categories": ["a", "b", "c"]}, "at most two distinct"),
        ("textcat", {"categories": ["a", "a"]}, "at most two distinct"),
        ("ir", {"results": [["D1"]]}, '"results": [["docno", score]'),
        ("ir", {"results": [["D1", True]]}, '"results": [["docno", score]'),
        ("ir", {"results": [["D1", 1.0], ["D1", 0.5]]}, "'D1' is listed twice"),
        ("ir", {"results": [[f"D{n}", 1.0] for n in range(1001)]}, "at most 1000"),
    ],
)
def test_invalid_outputs_say_what_is_wrong(kind: str, output: dict[str, Any], says: str) -> None:
    problem = TEXT_TASK_KINDS[kind].check_output(output)
    assert problem is not None and says in problem


def test_ner_tags_of_the_wrong_length_get_no_credit() -> None:
    testset = load("ner")
    [first, second] = testset.items
    assert TEXT_TASK_KINDS["ner"].check_item(second, {"tags": ["O", "O"]}) == (
        "2 tags for 3 tokens: give one tag per input token"
    )
    assert TEXT_TASK_KINDS["ner"].check_item(second, {"tags": ["B-PER", "O", "B-LOC"]}) is None
    scores = score(
        "ner", testset, {first.id: {"tags": ["B-PER", "O", "B-LOC", "O"]}, second.id: {"tags": []}}
    )
    # Sentence 2 counts as unanswered: 2 of 4 gold chunks found, 4 of 7 tokens right.
    assert scores["wrong_length"] == 1 and scores["unanswered"] == 0
    assert scores["recall"] == 0.5 and scores["precision"] == 1.0
    assert scores["accuracy"] == pytest.approx(4 / 7)


# --------------------------------------------------------------------------- scores


def test_unanswered_items_count_against_the_system() -> None:
    # cws: only line 1 answered, exactly: 3 of 8 gold words, 3 of 3 test words.
    cws = score("cws", load("cws"), {"1": {"text": "我们 喜欢 北京"}})
    assert cws["recall"] == pytest.approx(3 / 8) and cws["precision"] == 1.0
    # ir: topic 002 unanswered scores 0 (trec_eval -c), so MAP = (1 + 0) / 2.
    ir = score("ir", load("ir"), {"001": {"results": [["D1", 2.0], ["D3", 1.0]]}})
    assert ir["map"] == 0.5 and ir["missing_topics"] == ["002"]
    # mt: an unanswered segment is an empty translation (BLEU's brevity penalty is 0).
    mt = score("mt", load("mt"), {})
    assert mt["bleu"] == 0.0 and mt["hyp_len"] == 0
    # textcat: the classifying time is the run's seconds for every document.
    textcat = score("textcat", load("textcat"), {"d1": {"categories": ["sports"]}})
    assert textcat["unanswered"] == 3 and textcat["seconds"] == 2.0


def test_speed_units() -> None:
    mt_item = load("mt").items[1]
    assert TEXT_TASK_KINDS["mt"].speed(mt_item, 2.0) == 3.0  # 6 CJK characters / 2 s
    cws_item = load("cws").items[0]
    assert TEXT_TASK_KINDS["cws"].speed(cws_item, 0.006) == pytest.approx(1.0)  # k chars/s
    ner_item = load("ner").items[0]
    assert TEXT_TASK_KINDS["ner"].speed(ner_item, 2.0) == 2.0
    ir_item = load("ir").items[0]
    assert TEXT_TASK_KINDS["ir"].speed(ir_item, 0.25) == 250.0
    assert {k.speed_unit for k in TEXT_TASK_KINDS.values()} == {
        "words_per_second",
        "kchars_per_second",
        "tokens_per_second",
        "docs_per_second",
        "ms_per_query",
    }


# --------------------------------------------------------------------------- end to end

# kind -> (headline metric, the baseline's score on the demo set, a secondary figure)
EXPECTED: dict[str, tuple[str, float, tuple[str, float]]] = {
    # "hello world" exact; "we like beijing" vs "we love beijing". Pooled n-gram
    # precisions 4/5, 1/3, then 3-grams 0/1 smoothed to 1/(2*1), no 4-grams (1);
    # lengths 5 = 5: BLEU = (0.8 * 1/3 * 0.5) ** (1/4).
    "mt": ("bleu", (0.8 / 3 * 0.5) ** 0.25, ("mwer", 1 / 5)),
    # Line 2 comes out 他 在 北京大学 学习 (gold 北京 大学): 6 of 7 test words and
    # 6 of 8 gold words match, F = 2 * 6 / (7 + 8).
    "cws": ("f", 12 / 15, ("oov_recall", 1.0)),
    # 李四 is not in the gazetteer: 3 of 4 chunks, none wrong: F1 = 2 * 0.75 / 1.75;
    # 6 of 7 tags right.
    "ner": ("f1", 6 / 7, ("accuracy", 6 / 7)),
    # Segmentation exact; 他 is not in train.pos so gets "n": 6 of 7 tags right.
    "pos": ("f", 6 / 7, ("relative_precision", 6 / 7)),
    # d4 (gold sports, economy) is answered economy, sports: P = (1, 1/2, 1),
    # R = (1/2, 1, 1) per category, MacroP = MacroR = 5/6; general score
    # 1 + 1 + 1 + 0.75 of 4.
    "textcat": ("macro_f1", 5 / 6, ("general_score_rate", 3.75 / 4)),
    # 001 "football": D1 and D3 tie, both relevant, AP 1. 002 "stock market":
    # D2 and D3 tie at 2, trec_eval puts D3 (not relevant) first, AP 1/2.
    "ir": ("map", 0.75, ("p10", 0.15)),
}


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_baseline_end_to_end(tmp_path: Path, kind: str) -> None:
    metric, value, (name, figure) = EXPECTED[kind]
    site_path = write_site(
        tmp_path / "site.toml",
        DEMO / kind,
        {
            "baseline": {
                "command": BASELINE,
                "workdir": str(REPO),
                "env": {
                    "TEXT_BASELINE_COLLECTION": str(REPO / "examples" / "data" / "ir-collection")
                },
            }
        },
        task=kind,
        task_keys={"kind": kind},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, results = run_site(site_path)
    assert [r.failed for r in results] == [None]
    outputs = read_outputs(run_dir, kind, "baseline")
    assert {r["verdict"] for r in outputs} == {"ok"}
    site = load_site(site_path)
    [row] = leaderboard(site.run_dir)
    assert row.metric == metric and row.score == pytest.approx(value)
    assert row.scores[name] == pytest.approx(figure)
    assert row.speed_unit == TEXT_TASK_KINDS[kind].speed_unit and row.speed_mean
    assert row.detail
