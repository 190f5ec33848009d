"""`onsite score` for the text families: files in, the reference tools' numbers out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import onsite


def score(*args: str) -> dict:
    proc = onsite("score", *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_mt_plain_text(tmp_path: Path) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat on the mat today\nit is raining in beijing now\n")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("the cat sat on the mat today\nit is raining in beijing now\n")
    result = score("mt", "--hyp", str(hyp), "--ref", str(ref))
    for key in ("bleu", "nist", "gtm", "mwer", "mper", "segments"):
        assert key in result
    assert result["bleu"] == pytest.approx(1.0) and result["mwer"] == 0.0
    assert len(result["segments"]) == 2
    hyp.write_text("the cat sat on a mat\nit rains in beijing\n")
    worse = score("mt", "--hyp", str(hyp), "--ref", str(ref), "--ref", str(ref))
    assert 0 < worse["bleu"] < 1 and worse["mwer"] > 0


def test_mt_segment_count_mismatch_is_an_error(tmp_path: Path) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("one\ntwo\n")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("one\n")
    proc = onsite("score", "mt", "--hyp", str(hyp), "--ref", str(ref), "--json")
    assert proc.returncode == 2 and str(hyp) in proc.stderr


def test_cws_ner_pos(tmp_path: Path) -> None:
    gold = tmp_path / "gold.txt"
    gold.write_text("我们 在 北京 工作\n", encoding="utf-8")
    test = tmp_path / "test.txt"
    test.write_text("我们 在 北 京 工作\n", encoding="utf-8")
    words = tmp_path / "words.txt"
    words.write_text("我们\n在\n工作\n", encoding="utf-8")
    cws = score("cws", "--gold", str(gold), "--test", str(test), "--words", str(words))
    # 3 of 4 gold words found, 3 of 5 test words right; 北京 is the one OOV word.
    assert cws["recall"] == 0.75 and cws["precision"] == 0.6
    assert cws["oov_rate"] == 0.25 and cws["oov_recall"] == 0.0 and cws["iv_recall"] == 1.0

    conll = tmp_path / "ner.txt"
    conll.write_text("张 B-PER B-PER\n三 I-PER I-PER\n去 O O\n北 B-LOC B-ORG\n京 I-LOC I-ORG\n")
    ner = score("ner", "--conll", str(conll))
    assert ner["precision"] == 0.5 and ner["recall"] == 0.5 and ner["accuracy"] == 0.6
    assert ner["per_type"]["PER"]["f1"] == 1.0

    gold_pos = tmp_path / "gold.pos"
    gold_pos.write_text("我们/r 在/p 北京/ns\n", encoding="utf-8")
    test_pos = tmp_path / "test.pos"
    test_pos.write_text("我们/r 在/v 北京/ns\n", encoding="utf-8")
    pos = score("pos", "--gold", str(gold_pos), "--test", str(test_pos))
    assert pos["accuracy"] == pytest.approx(2 / 3)


def test_ir_and_textcat(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\nq1 0 d2 0\nq1 0 d3 1\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 d1 1 0.9 x\nq1 Q0 d2 2 0.8 x\nq1 Q0 d3 3 0.7 x\n")
    ir = score("ir", "--qrels", str(qrels), "--run", str(run))
    # Relevant at ranks 1 and 3: AP = (1/1 + 2/3) / 2.
    assert ir["map"] == pytest.approx(5 / 6) and ir["rprec"] == 0.5 and ir["p10"] == 0.2
    assert set(ir["per_topic"]) == {"q1"}
    run.write_text("q1 Q0 d1 1 high x\n")
    proc = onsite("score", "ir", "--qrels", str(qrels), "--run", str(run), "--json")
    assert proc.returncode == 2 and f"{run}:1" in proc.stderr

    gold = tmp_path / "gold.tsv"
    gold.write_text("a\tsports\nb\tfinance\nc\tsports\n")
    pred = tmp_path / "pred.tsv"
    pred.write_text("a\tsports\nb\tsports\nc\tsports\n")
    cat = score("textcat", "--gold", str(gold), "--pred", str(pred))
    assert cat["micro_precision"] == pytest.approx(2 / 3)
