"""ROUGE-1/2/L: hand-worked cases, Chinese characters, Google's rouge-score, bad input."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from harness.cli.main import main
from scoring.errors import FormatError
from scoring.rouge import read_summaries, rouge_document, score_rouge, score_rouge_files, tokenize


def test_tokens_as_rouge_155() -> None:
    # Lower case, every non-alphanumeric a space; '-' is split off and dropped (ROUGE-1.5.5
    # keeps only tokens starting with [a-z0-9$]): "e-mail" is "e mail".
    assert tokenize("Hello, World! e-mail 3.5") == ["hello", "world", "e", "mail", "3", "5"]
    assert tokenize("well-known -- x") == ["well", "known", "x"]
    # ROUGE-1.5.5 deletes non-ASCII characters: "café" keeps only "caf".
    assert tokenize("Café ÉTÉ") == ["caf", "t"]
    assert tokenize("  \t ") == []


def test_chinese_tokens_are_characters() -> None:
    assert tokenize("玻利维亚，举行GPS选举3次。", "zh") == [
        "玻", "利", "维", "亚", "举", "行", "gps", "选", "举", "3", "次",
    ]  # fmt: skip
    # Full-width letters are characters too; punctuation and symbols are dropped.
    assert tokenize("Ａ＋Ｂ", "zh") == ["Ａ", "Ｂ"]


def test_worked_english_example() -> None:
    # hyp unigrams: the x2, cat, sat, on, mat (6); ref: the x2, cat, was, on, mat (6).
    # Clipped hits: the 2 + cat + on + mat = 5 -> R = P = 5/6.
    # Bigrams: 5 each side, shared: "the cat", "on the", "the mat" -> 3/5.
    # LCS: "the cat on the mat" = 5 -> 5/6.
    s = rouge_document("The cat sat on the mat.", ["the cat was on the mat"])
    assert s["rouge1"].recall == pytest.approx(5 / 6) and s["rouge1"].precision == pytest.approx(
        5 / 6
    )
    assert s["rouge2"].f == pytest.approx(3 / 5)
    assert s["rougeL"].recall == pytest.approx(5 / 6)


def test_worked_chinese_example() -> None:
    # Summary 10 characters, reference 15 (the full stop is dropped). Every summary
    # character occurs in the reference: ROUGE-1 R = 10/15, P = 10/10.
    # Bigrams 9 and 14; shared: 玻利 利维 维亚 举行 行总 总统 选举 = 7.
    s = rouge_document("玻利维亚举行总统选举", ["玻利维亚今天举行总统与国会选举。"], lang="zh")
    assert (s["rouge1"].recall, s["rouge1"].precision) == (pytest.approx(2 / 3), 1.0)
    assert (s["rouge2"].recall, s["rouge2"].precision) == (0.5, pytest.approx(7 / 9))
    # Without the character tokenizer there is nothing left to score.
    assert rouge_document("玻利维亚", ["玻利维亚"])["rouge1"].f == 0.0


def test_summary_level_lcs_is_lins_union_example() -> None:
    # Lin (2004), section 3.2: r = w1..w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5.
    # Union LCS with r: w1 w2 w3 w5 -> 4 hits; R = 4/5, P = 4/10.
    s = rouge_document("w1 w2 w6 w7 w8\nw1 w3 w8 w9 w5", ["w1 w2 w3 w4 w5"], metrics=["rougeL"])
    assert s["rougeL"].recall == pytest.approx(4 / 5)
    assert s["rougeL"].precision == pytest.approx(4 / 10)


def test_lcs_hits_are_clipped_by_token_counts() -> None:
    # Both reference sentences match the summary's one "a", but it counts once.
    s = rouge_document("a", ["a\na"], metrics=["rougeL"])
    assert (s["rougeL"].recall, s["rougeL"].precision) == (0.5, 1.0)


def test_several_references_formula_a_pools_b_takes_best() -> None:
    refs = ["a b", "c d"]
    a = rouge_document("a b", refs, metrics=["rouge1"])["rouge1"]
    # A: hits 2 + 0, reference unigrams 2 + 2, summary unigrams 2 + 2.
    assert (a.recall, a.precision, a.f) == (0.5, 0.5, 0.5)
    b = rouge_document("a b", refs, metrics=["rouge1"], formula="B")["rouge1"]
    assert (b.recall, b.precision) == (1.0, 1.0)


def test_alpha_weights_precision() -> None:
    # R = 1/4, P = 1/1: alpha 1 is P, alpha 0 is R.
    doc = ("a", ["a b c d"])
    assert rouge_document(*doc, metrics=["rouge1"], alpha=1.0)["rouge1"].f == 1.0
    assert rouge_document(*doc, metrics=["rouge1"], alpha=0.0)["rouge1"].f == 0.25
    with pytest.raises(ValueError, match="alpha"):
        rouge_document(*doc, alpha=1.5)


def test_empty_summary_and_empty_reference_score_zero() -> None:
    assert rouge_document("", ["a b"])["rouge1"].f == 0.0
    assert rouge_document("a b", ["..."])["rouge2"].recall == 0.0
    with pytest.raises(ValueError, match="no reference"):
        rouge_document("a", [])


def test_matches_google_rouge_score_on_random_english() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"])
    rng = random.Random(15)
    words = "the a cat dog sat on mat ran far away big small Red, Blue. 42 x9 e-mail --".split()

    def text() -> str:
        lines = rng.randint(1, 3)
        return "\n".join(
            " ".join(rng.choice(words) for _ in range(rng.randint(0, 12))) for _ in range(lines)
        )

    for _ in range(400):
        hyp, ref = text(), text()
        ours = rouge_document(hyp, [ref])
        theirs = scorer.score(ref, hyp)
        # rouge-score's rougeLsum is the summary-level (union) LCS over lines; its
        # rougeL is the LCS of the whole text, the same on one-line texts.
        pairs = [("rouge1", "rouge1"), ("rouge2", "rouge2"), ("rougeL", "rougeLsum")]
        if "\n" not in hyp + ref:
            pairs.append(("rougeL", "rougeL"))
        for mine, google in pairs:
            assert ours[mine].recall == pytest.approx(theirs[google].recall, abs=1e-12)
            assert ours[mine].precision == pytest.approx(theirs[google].precision, abs=1e-12)
            assert ours[mine].f == pytest.approx(theirs[google].fmeasure, abs=1e-12)


def test_where_rouge_score_differs() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    scorer = rouge_scorer.RougeScorer(["rouge1"])
    # Both drop '-', as ROUGE-1.5.5 does (tests/test_rouge_155.py): "well-known" is two words.
    ours = rouge_document("well-known", ["well known"], metrics=["rouge1"])["rouge1"]
    assert ours.precision == 1.0
    assert scorer.score("well known", "well-known")["rouge1"].precision == 1.0
    # rouge-score's default tokenizer drops Chinese entirely.
    assert scorer.score("玻利维亚", "玻利维亚")["rouge1"].fmeasure == 0.0
    assert rouge_document("玻利维亚", ["玻利维亚"], lang="zh")["rouge1"].f == 1.0


def test_system_score_is_the_mean_over_documents_and_missing_counts_zero() -> None:
    result = score_rouge({"d1": "a b"}, {"d1": ["a b"], "d2": ["c d"]}, metrics=["rouge1"])
    assert result["documents"] == 2 and result["missing"] == ["d2"]
    assert result["rouge1_recall"] == 0.5
    with pytest.raises(ValueError, match="no reference"):
        score_rouge({"d9": "x"}, {"d1": ["x"]})


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    return path


def test_files_and_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hyp = _jsonl(tmp_path / "hyp.jsonl", [{"id": "d1", "text": "The cat sat on the mat."}])
    refs = _jsonl(
        tmp_path / "ref.jsonl",
        [{"id": "d1", "text": "the cat was on the mat"}, {"id": "d1", "text": "a cat sat"}],
    )
    result = score_rouge_files(hyp, [refs])
    # Formula A over both references: unigram hits 5 + 2, reference 6 + 3.
    assert result["rouge1_recall"] == pytest.approx(7 / 9)
    assert main(["score", "rouge", "--hyp", str(hyp), "--ref", str(refs), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rouge1_recall"] == pytest.approx(7 / 9)
    assert main(["score", "rouge", "--hyp", str(hyp), "--ref", str(refs), "--details"]) == 0
    out = capsys.readouterr().out
    assert "rouge1_recall" in out and "0.777778" in out and "per_document" in out


def test_bad_files_name_the_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "d1", "text": "a"}\n{"id": "d1", "text": "b"}\n')
    with pytest.raises(FormatError, match=r"bad.jsonl:2: document 'd1' repeated"):
        read_summaries(bad)
    bad.write_text('{"id": "d1", "text": "a"}\nnot json\n')
    with pytest.raises(FormatError, match=r"bad.jsonl:2: invalid JSON"):
        read_summaries(bad)
    bad.write_text('{"id": "d1", "words": "a"}\n')
    with pytest.raises(FormatError, match=r"bad.jsonl:1: no \"text\""):
        read_summaries(bad)
    ref = _jsonl(tmp_path / "ref.jsonl", [{"id": "d2", "text": "x"}])
    hyp = _jsonl(tmp_path / "hyp.jsonl", [{"id": "d1", "text": "x"}])
    assert main(["score", "rouge", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert "d1" in capsys.readouterr().err
