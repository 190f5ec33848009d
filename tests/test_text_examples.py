"""The demo's text systems (examples/systems/): their rules, hand-checked on small cases,
and each on its demo set through `onsite run site_config/demo.toml`.

The systems import nothing of ours, so their functions are called here directly;
the end-to-end test runs them as the demo does (sealed, serve mode, hello's files).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from examples.systems import lead_summarizer, rule_ner, tfidf_text
from examples.systems.fmm_segmenter import Lexicon, read_words
from examples.systems.rule_tagger import Tagger, rule_tag
from examples.systems.word_mt import Translator
from harness.kinds import task_kind
from tests.helpers import REPO, onsite, read_outputs

DEMO = REPO / "site_config" / "demo.toml"
DATA = REPO / "site_config" / "data"
TINY = DATA / "demo-text"
TEXT_TASKS = ("mt", "cws", "pos", "ner", "textcat", "ir", "summarization")


# --------------------------------------------------------------------------- rules


def test_forward_maximum_matching_takes_the_longest_listed_word() -> None:
    lexicon = Lexicon(["研究", "研究生", "生命", "和尚", "尚未", "结婚"])
    # The classic failures of greedy matching: 研究生 and 和尚 win over the right split.
    assert lexicon.segment("研究生命起源") == ["研究生", "命", "起", "源"]
    assert lexicon.segment("结婚的和尚未结婚的") == ["结婚", "的", "和尚", "未", "结婚", "的"]
    # Latin words and numbers stay whole; spaces split.
    assert lexicon.segment("我用Python3 写") == ["我", "用", "Python3", "写"]
    assert Lexicon().segment("北京") == ["北", "京"]


def test_segmenter_on_the_tiny_set_by_hand() -> None:
    # words.txt lists 我们 喜欢 北京 大学 他 在, not 学习: line 2 comes out
    # 他 在 北京 大学 学 习: 4 of its 6 words are gold words; line 1 is exact (3 of 3).
    lexicon = Lexicon(read_words(TINY / "cws" / "words.txt"))
    assert lexicon.segment("他在北京大学学习") == ["他", "在", "北京", "大学", "学", "习"]
    # P = 7/9, R = 7/8, F = 14/17: what the cws scorer gives for these lines.
    from scoring.cws import score_cws

    gold = [["我们", "喜欢", "北京"], ["他", "在", "北京", "大学", "学习"]]
    test = [lexicon.segment("我们喜欢北京"), lexicon.segment("他在北京大学学习")]
    assert score_cws(gold, test).to_dict()["f"] == pytest.approx(14 / 17)


def test_tagger_uses_training_tags_then_rules() -> None:
    tagger = Tagger()
    tagger.setup({"files": {"train": str(TINY / "pos" / "train.pos")}})
    # 他 is not in train.pos: the rules give a lone unknown character "n"; the rest
    # are training words: 6 of 7 tags right, as the gold line says 他/r.
    assert tagger.answer({"text": "他在北京学习"}) == {"text": "他/n 在/p 北京/ns 学习/v"}
    assert [rule_tag(w) for w in ("。", "五百", "星期天", "广州", "汉语", "了", "和", "里")] == [
        "w",
        "m",
        "t",
        "ns",
        "nz",
        "u",
        "c",
        "f",
    ]


@pytest.mark.parametrize(
    ("sentence", "tags"),
    [
        ("John Smith lives in London .", "B-PER I-PER O O B-LOC O"),
        ("Mr. Brown met President Lee in Tokyo .", "O B-PER O O B-PER O B-LOC O"),
        ("The Bank of China opened .", "O B-ORG I-ORG I-ORG O O"),
        ("Sony sells phones in Japan .", "O O O O B-LOC O"),  # Sony: no rule knows it
        ("It rained in Hong Kong .", "O O O B-LOC I-LOC O"),
    ],
)
def test_ner_rules(sentence: str, tags: str) -> None:
    assert rule_ner.tag(sentence.split()) == tags.split()


def test_mt_test_set_hands_its_dictionary_to_the_system_in_hello() -> None:
    mt = task_kind("mt")
    assert mt.load(DATA / "demo-mt", None).setup_files == {
        "dictionary": DATA / "demo-mt" / "dictionary.txt"
    }
    assert mt.load(TINY / "mt", None).setup_files == {}  # optional: no file, nothing sent


def test_word_by_word_translation_from_the_dictionary(tmp_path: Path) -> None:
    dictionary = tmp_path / "dictionary.txt"
    dictionary.write_text("我们\twe\n喜欢\tlike\n北京\tBeijing\n本\t\n书\tbook\n。\t.\n")
    translator = Translator()
    translator.setup({"files": {"dictionary": str(dictionary)}})
    assert translator.translate("我们喜欢北京。") == "We like Beijing ."
    # An empty target drops the word (a measure word); an unknown one is copied.
    assert translator.translate("这本书") == "这 book"


def test_tfidf_categorizer_and_retriever(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    cat = tfidf_text.TfIdf()
    cat.setup({"kind": "textcat"})
    assert cat.answer({"text": "The striker scored a goal in the match."}) == {
        "categories": ["sports"]
    }
    assert cat.answer({"text": "Nothing here matches."}) == {"categories": []}
    ir = tfidf_text.TfIdf()
    ir.setup({"kind": "ir"})
    results = ir.answer({"query": "moon", "description": ""})["results"]
    # Only N30 has "moon": a cosine of one term against a short document.
    assert [d for d, _ in results] == ["N30"] and 0 < results[0][1] < 1
    with pytest.raises(ValueError, match="answers ir and textcat"):
        tfidf_text.TfIdf().setup({"kind": "mt"})


def test_lead_summarizer_keeps_whole_sentences_within_the_limit() -> None:
    text = "第一句话。第二句话很长很长。\n第三句。"
    assert lead_summarizer.sentences(text) == ["第一句话。", "第二句话很长很长。", "第三句。"]
    assert lead_summarizer.summarize(text, 14) == "第一句话。\n第二句话很长很长。"
    assert lead_summarizer.summarize(text, 13) == "第一句话。"
    assert lead_summarizer.summarize(text, 3) == "第一句"  # the first sentence, cut
    english = "The cat sat. It was warm! Then it left."
    assert lead_summarizer.summarize(english, 6, "word") == "The cat sat.\nIt was warm!"
    assert lead_summarizer.summarize(english, 5, "word") == "The cat sat."


# --------------------------------------------------------------------------- demo


# task -> (system, headline metric, value). Pinned from the demo run; the counts are
# the scorers' own (per-kind scorers are tested against the reference tools elsewhere).
DEMO_SCORES: dict[str, tuple[str, str, float]] = {
    # Word by word, in Chinese order: 24 segments, BLEU 0.289.
    "mt": ("word-mt", "bleu", 0.289083908261088),
    # FMM errs on OOV words split into characters (有意思, 公共汽车, 起源, 首都) and on the
    # greedy traps 研究生, 和尚, 马上, 的确 实在: 166 of its 185 words are gold words, of
    # 179: F = 2 * 166 / (185 + 179) = 83/91.
    "cws": ("fmm", "f", 83 / 91),
    # Unseen words (好吃, 星期天, 公共汽车 ...) split into characters: 124 words tagged
    # right of 157 sent and 140 gold: HTRDP F = 2 * 124 / (157 + 140) = 248/297.
    "pos": ("rule-tagger", "f", 248 / 297),
    # Sony and Reuters (no rule knows them) are missed, General Motors is taken for
    # a title and a person: 41 of 42 found chunks right, 41 of 44 found: F1 = 41/43.
    "ner": ("rule-ner", "f1", 41 / 43),
    "textcat": ("tfidf", "macro_f1", 0.93),
    "ir": ("tfidf", "map", 0.9583333333333334),
    "summarization": ("lead", "rouge2_f", 0.45962621027461087),
}


def test_demo_text_tasks_end_to_end(tmp_path: Path) -> None:
    tasks = [arg for task in TEXT_TASKS for arg in ("--task", task)]
    run = onsite("run", str(DEMO), "--runs", str(tmp_path), *tasks)
    assert run.returncode == 0, run.stdout + run.stderr
    run_dir = tmp_path / "demo"
    report = json.loads(onsite("report", str(run_dir), "--json").stdout)
    rows = {r["task"]: r for r in report if r["task"] in TEXT_TASKS}
    for task, (system, metric, value) in DEMO_SCORES.items():
        row = rows[task]
        assert (row["system"], row["metric"]) == (system, metric), task
        assert row["score"] == pytest.approx(value), task
        assert row["completed"] == row["items"] and row["invalid_outputs"] == 0, task
        outputs = read_outputs(run_dir, task, system)
        assert {r["verdict"] for r in outputs} == {"ok"}, task
    # The live cws and pos numbers are what `onsite score` gives on the same lines.
    assert offline(run_dir, "cws", "fmm", "gold.txt") == pytest.approx(DEMO_SCORES["cws"][2])
    assert offline(run_dir, "pos", "rule-tagger", "gold.pos") == pytest.approx(
        DEMO_SCORES["pos"][2]
    )


def offline(run_dir: Path, task: str, system: str, gold: str) -> Any:
    rows = {int(r["id"]): r["output"]["text"] for r in read_outputs(run_dir, task, system)}
    test = run_dir / f"{task}.test"
    test.write_text("\n".join(rows[n] for n in sorted(rows)) + "\n", encoding="utf-8")
    flags = ("--gold", str(DATA / f"demo-{task}" / gold), "--test", str(test), "--json")
    result = onsite("score", task, *flags)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["f"]
