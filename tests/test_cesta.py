"""CESTA: the significant-word o/u/o&u score worked by hand, rankings with ties."""

from __future__ import annotations

import json
from fractions import Fraction as F
from pathlib import Path

import pytest

from harness.cli.main import main
from scoring.cesta import (
    parse_ranking,
    ranking_correlation,
    score_significant_words,
    significance_scores,
    significant_words,
)

# One system's output and the human references, three texts each.
MT = {"t1": "a a b b c", "t2": "c d e", "t3": "e f g h"}
REF = {"t1": "a a a w w c", "t2": "c d e", "t3": "e f g h"}


def test_significance_score_by_hand() -> None:
    # S = (P_text - P_rest) * N_not_found / P_all.
    # MT t1, word a: 2 of the text's 5 tokens, none in the other 7, 2 of all 12,
    # absent from 2 of 3 texts: (2/5 - 0) * (2/3) / (2/12) = 8/5. Same for b.
    # c occurs once in t1 (frequency < 2): not scored.
    s = significance_scores(MT)
    assert s["t1"] == pytest.approx({"a": 1.6, "b": 1.6})
    assert s["t2"] == {} and s["t3"] == {}
    # A word also found in the rest of the corpus: corpus "a a c c b" / "c d e" /
    # "e f g h", word c in text 1: (2/5 - 1/7) * (1/3) / (3/12) = 12/35.
    other = significance_scores({"1": "a a c c b", "2": "c d e", "3": "e f g h"})
    assert other["1"]["c"] == pytest.approx(float(F(12, 35)))
    # Significant means S > 1 by default: c (0.34) is not.
    assert set(significant_words({"1": "a a c c b", "2": "c d e", "3": "e f g h"})["1"]) == {"a"}


def test_over_and_under_generation_by_hand() -> None:
    # Reference t1 (6 tokens of 13): a 3 times -> (1/2)(2/3)/(3/13) = 13/9;
    # w 2 times -> (1/3)(2/3)/(2/13) = 13/9. MT t1: a 8/5, b 8/5.
    # Both lists: a, change |8/5 - 13/9| = 7/45.
    # S_o = 7/45 + 8/5 (b, over-generated) = 79/45; S_u = 7/45 + 13/9 (w) = 8/5.
    # over = S_o / 2 MT words = 79/90, under = S_u / 2 reference words = 4/5.
    # o = 90/79, u = 5/4, o&u = 2ou / (o + u) = 180/151.
    result = score_significant_words(MT, REF)
    t1 = result["per_text"][0]
    assert (t1["mt_words"], t1["ref_words"], t1["common"]) == (2, 2, 1)
    assert t1["s_over"] == pytest.approx(float(F(79, 45)))
    assert t1["s_under"] == pytest.approx(1.6)
    assert t1["o"] == pytest.approx(float(F(90, 79)))
    assert t1["u"] == pytest.approx(1.25)
    assert t1["ou"] == pytest.approx(float(F(180, 151)))
    # Texts 2 and 3 have no significant word on either side: no score, not averaged.
    assert result["texts"] == 3 and result["texts_without_score"] == 2
    assert result["ou"] == pytest.approx(float(F(180, 151)))


def test_perfect_text_has_infinite_ability_reported_as_null() -> None:
    result = score_significant_words(REF, REF)
    t1 = result["per_text"][0]
    assert t1["over"] == 0.0 and t1["o"] is None and t1["ou"] is None


def test_only_under_generation_gives_o_and_u_limit() -> None:
    # MT misses w but has a exactly as the reference does: S_o = 0 (o infinite),
    # o&u is then u (the F-measure's limit).
    mt = {"t1": "a a a x y z", "t2": "c d e", "t3": "e f g h"}
    t1 = score_significant_words(mt, REF)["per_text"][0]
    assert t1["o"] is None and t1["u"] is not None and t1["ou"] == t1["u"]


def test_chinese_texts_at_character_level() -> None:
    mt = {"1": "选举选举", "2": "经济", "3": "天气"}
    words = significant_words(mt, lang="zh")
    assert set(words["1"]) == {"选", "举"}


def test_misaligned_texts_are_an_error() -> None:
    with pytest.raises(ValueError, match="t9"):
        score_significant_words({**MT, "t9": "x"}, REF)
    with pytest.raises(ValueError, match="two texts"):
        score_significant_words({"t1": "a a"}, {"t1": "a a"})


def test_ranking_with_ties_gives_mean_ranks() -> None:
    assert parse_ranking("4 [1 2] 6 [3 5]") == {
        "4": 1.0,
        "1": 2.5,
        "2": 2.5,
        "6": 4.0,
        "3": 5.5,
        "5": 5.5,
    }
    assert parse_ranking("[a b c]") == {"a": 2.0, "b": 2.0, "c": 2.0}
    assert parse_ranking("x[y z]") == {"x": 1.0, "y": 2.5, "z": 2.5}


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("1 [2 [3]]", "nest"),
        ("1 ] 2", "without"),
        ("1 [ ] 2", "empty brackets"),
        ("1 2 1", "twice"),
        ("[1 2", "not closed"),
        ("   ", "empty ranking"),
    ],
)
def test_bad_rankings(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_ranking(text)


def test_ranking_correlation_against_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    ranks = parse_ranking("4 [1 2] 6 [3 5]")
    scores = {"1": 0.5, "2": 0.4, "3": 0.1, "4": 0.9, "5": 0.2, "6": 0.3}
    got = ranking_correlation(ranks, scores)
    items = list(ranks)
    want = stats.spearmanr([-ranks[i] for i in items], [scores[i] for i in items])[0]
    assert got["spearman"] == pytest.approx(want) and got["items"] == 6
    # An error rate: lower is better, so the sign flips back.
    flipped = ranking_correlation(ranks, {k: -v for k, v in scores.items()}, False)
    assert flipped["spearman"] == pytest.approx(want)
    with pytest.raises(ValueError, match="different items"):
        ranking_correlation(ranks, {"1": 0.5})


def test_cli_cesta_and_cesta_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    hyp, ref = tmp_path / "mt.jsonl", tmp_path / "ref.jsonl"
    hyp.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in MT.items()))
    ref.write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in REF.items()))
    assert main(["score", "cesta", "--hyp", str(hyp), "--ref", str(ref), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ou"] == pytest.approx(180 / 151)
    assert main(["score", "cesta", "--hyp", str(hyp), "--ref", str(ref), "--details"]) == 0
    out = capsys.readouterr().out
    assert "1.19205" in out and "per_text" in out

    rankings, scores = tmp_path / "rank.tsv", tmp_path / "scores.tsv"
    rankings.write_text("E1\t4 [1 2] 6 [3 5]\nE2\t1 2 3 4 5 6\n")
    scores.write_text("1\t0.5\n2\t0.4\n3\t0.1\n4\t0.9\n5\t0.2\n6\t0.3\n")
    args = ["score", "cesta-rank", "--rankings", str(rankings), "--scores", str(scores)]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert [r["ranking"] for r in result["per_ranking"]] == ["E1", "E2"]
    assert main(args) == 0
    assert "per_ranking" in capsys.readouterr().out
    rankings.write_text("E1\t4 [1 2 6 [3 5]\n")
    assert main(args) == 2
    assert "rank.tsv:1:" in capsys.readouterr().err
    rankings.write_text("E1\t4 [1 2] 7\n")
    assert main(args) == 2
    assert "no score for item '7'" in capsys.readouterr().err


def _xml(root: str, texts: dict[str, list[str]], extra: str = "") -> str:
    docs = "".join(
        f'<doc docid="{d}"{extra}>'
        + "".join(f'<s id="{i}">{t}</s>' for i, t in enumerate(segs, 1))
        + "</doc>\n"
        for d, segs in texts.items()
    )
    head = f'<?xml version="1.0" encoding="UTF-8"?>\n<{root} setid="s" srclang="zh" tgtlang="en">'
    return f"{head}\n{docs}</{root}>\n"


def test_cli_cesta_reads_cwmt_xml_one_text_per_document(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The MT documents split into segments give the same texts as MT above.
    hyp = tmp_path / "hyp.xml"
    hyp.write_text(_xml("tgtset", {"t1": ["a a b", "b c"], "t2": ["c d e"], "t3": ["e f", "g h"]}))
    ref = tmp_path / "ref.xml"
    ref.write_text(_xml("refset", {k: [v] for k, v in REF.items()}, ' site="r1"'))
    assert main(["score", "cesta", "--hyp", str(hyp), "--ref", str(ref), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ou"] == pytest.approx(180 / 151)
