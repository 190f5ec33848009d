"""MT metrics worked by hand: BLEU (mteval-v13a), NIST, GTM, mWER, mPER, tokenisation."""

from __future__ import annotations

import math

import pytest

from scoring.mt import (
    MtSegment,
    bleu_from_stats,
    edit_distance,
    gtm_match_size,
    ngram_info,
    nist_from_stats,
    per_errors,
    score_mt,
    segment_ngram_stats,
)
from scoring.mt_tokenize import to_halfwidth, tokenize, tokenize_cjk, tokenize_v13a


def seg_stats(hyp: str, *refs: str):
    h = hyp.split()
    rs = [r.split() for r in refs]
    return segment_ngram_stats(h, rs, ngram_info(rs))


def one(hyp: str, *refs: str, lang: str = "en"):
    return score_mt([MtSegment("d", "1", hyp, refs)], lang).system


# --------------------------------------------------------------------------- BLEU


def test_bleu_zero_match_orders_use_mteval_halving() -> None:
    # p1 = 4/4, p2 = 1/3, p3: no match of 2 -> 1/(2*2), p4: no match of 1 -> 1/(4*1)
    s = seg_stats("a b c d", "a b d c")
    assert s.matches[:4] == (4, 1, 0, 0)
    assert bleu_from_stats(s) == pytest.approx((1 * (1 / 3) * (1 / 4) * (1 / 4)) ** 0.25)
    # v11b (no smoothing) gives 0 without a 4-gram match
    assert bleu_from_stats(s, "shortest", smooth=False) == 0.0


def test_bleu_one_word_segment_counts_missing_orders_as_one() -> None:
    assert one("cat", "cat").bleu == pytest.approx(1.0)
    assert one("cat", "the cat").bleu == pytest.approx(math.exp(1 - 2 / 1))
    assert one("cat", "cat").bleu_shortest == 0.0  # no 4-gram in a one-word segment


def test_bleu_closest_reference_length_and_ties() -> None:
    s = seg_stats("a b c d e", "a b c", "a b c d e f", "x y z w v u t")
    assert (s.ref_len_closest, s.ref_len_shortest) == (6, 3)
    tie = seg_stats("a b c d e", "a b c d e f", "a b c d")
    assert tie.ref_len_closest == 4  # equal distance: the shorter reference
    # hyp shorter than the closest reference: brevity penalty applies
    short = seg_stats("a b c", "a b c d", "a b c d e f g h")
    assert short.ref_len_closest == 4
    assert bleu_from_stats(short) == pytest.approx(math.exp(1 - 4 / 3))


def test_bleu_two_references_clip_by_max_count() -> None:
    # "the" appears twice in ref2: hyp's three "the" clip to 2
    s = seg_stats("the the the", "the cat", "the the dog")
    assert s.matches[0] == 2


def test_bleu_corpus_sums_counts_not_scores() -> None:
    segs = [MtSegment("d", "1", "a b c d", ("a b c d",)), MtSegment("d", "2", "x", ("y",))]
    r = score_mt(segs)
    # summed: p1 4/5, p2 3/3, p3 2/2, p4 1/1 (segment 2 has no 2..4-grams), ref 5 = hyp 5
    assert r.system.bleu == pytest.approx((4 / 5) ** 0.25)
    assert r.segments[1].scores.bleu == pytest.approx((1 / 2) ** 0.25)  # p1 = 1/(2*1)


def test_bleu_empty_hypothesis_is_zero() -> None:
    assert one("", "a b").bleu == 0.0


# --------------------------------------------------------------------------- NIST


def test_nist_tiny_corpus_by_hand() -> None:
    # ref "a b a": info(a) = log2(3/2), info(b) = log2 3, info(a b) = -log2(1/2) = 1
    s = seg_stats("a b", "a b a")
    unigram = (math.log2(1.5) + math.log2(3)) / 2
    # length ratio 2/3 = 1/1.5: penalty exactly 0.5 by the definition of beta
    assert nist_from_stats(s) == pytest.approx((unigram + 1.0) * 0.5)


def test_nist_zero_prefix_quirk() -> None:
    info = ngram_info([["0", "x", "0", "y"]])
    assert info[("0", "x")] == pytest.approx(2.0)  # -log2(1/4 words), not -log2(1/2)
    assert ngram_info([["1", "x", "1", "y"]])[("1", "x")] == pytest.approx(1.0)


def test_nist_average_reference_length_over_references() -> None:
    s = seg_stats("a b", "a b", "a b c d e f")
    assert s.ref_words == 8 and s.n_refs == 2
    ratio = 2 / 4
    beta = -math.log(0.5) / math.log(1.5) ** 2
    info = ngram_info([["a", "b"], "a b c d e f".split()])
    raw = (info[("a",)] + info[("b",)]) / 2 + info[("a", "b")]
    assert nist_from_stats(s) == pytest.approx(raw * math.exp(-beta * math.log(ratio) ** 2))


# --------------------------------------------------------------------------- GTM, mWER, mPER


def test_gtm_exponent_one_and_two() -> None:
    hyp, ref = "a b c d".split(), "a b x d c".split()
    assert gtm_match_size(hyp, ref, 1.0) == 4
    s = one("a b c d", "a b x d c")
    assert s.gtm == pytest.approx(2 * 1.0 * 0.8 / 1.8)
    # greedy runs: "a b" (2), then "c", then "d": 4 + 1 + 1
    assert gtm_match_size(hyp, ref, 2.0) == 6
    r = score_mt([MtSegment("d", "1", "a b c d", ("a b x d c",))], gtm_exponent=2.0).system
    p, rc = math.sqrt(6) / 4, math.sqrt(6) / 5
    assert r.gtm == pytest.approx(2 * p * rc / (p + rc))


def test_gtm_picks_best_reference() -> None:
    s = one("a b c", "x y z", "a b c")
    assert s.gtm == pytest.approx(1.0)


def test_mwer_mper_pick_minimum_reference() -> None:
    s = one("a b c", "a b c d", "a x c")
    assert s.mwer == pytest.approx(1 / 4)  # 1 error / 4 beats 1 error / 3
    assert s.wer_stats.ref_len == 4
    s2 = one("c b a", "a b c")
    assert s2.mper == 0.0 and s2.mwer == pytest.approx(2 / 3)
    assert edit_distance("a b".split(), "b".split()) == 1
    assert per_errors("a a b".split(), "a b b c".split()) == 2


def test_mwer_corpus_is_sum_of_errors_over_sum_of_chosen_lengths() -> None:
    segs = [
        MtSegment("d1", "1", "a b c", ("a b c d",)),  # 1 / 4
        MtSegment("d2", "1", "x y", ("a b",)),  # 2 / 2
    ]
    r = score_mt(segs)
    assert r.system.mwer == pytest.approx(3 / 6)
    assert [d.doc_id for d in r.documents] == ["d1", "d2"]
    assert r.documents[1].scores.mwer == pytest.approx(1.0)


def test_report_keys() -> None:
    d = score_mt([MtSegment("d", "1", "a b", ("a b",))]).to_dict()
    for key in ("bleu", "nist", "gtm", "mwer", "mper", "bleu_shortest", "segments", "documents"):
        assert key in d
    assert d["segments"][0]["bleu"] == pytest.approx(1.0)


# --------------------------------------------------------------------------- tokenisation


def test_v13a_tokenization_rules() -> None:
    assert tokenize_v13a("It's 3.14, 1,000 and U.S. (x) 5-6 &amp; end.") == [
        "It's", "3.14", ",", "1,000", "and", "U", ".", "S", ".", "(", "x", ")",
        "5", "-", "6", "&", "end", ".",
    ]  # fmt: skip
    assert tokenize_v13a("Case Kept") == ["Case", "Kept"]
    assert tokenize_v13a("hyph-\nenated\nline") == ["hyphenated", "line"]
    assert tokenize_v13a("   ") == []


def test_cjk_character_level_with_halfwidth() -> None:
    assert to_halfwidth("ＡＢＣ１２３，！\u3000") == "ABC123,! "
    assert tokenize_cjk("我爱ＡＢＣ，１２３。") == ["我", "爱", "ABC", ",", "123", "。"]
    assert tokenize("北京iPhone 6s“好”", "zh") == ["北", "京", "iPhone", "6s", "“", "好", "”"]
    assert tokenize("ひらがなカタ漢字", "ja") == list("ひらがなカタ漢字")
    assert tokenize("北京", "en") == ["北京"]  # not split outside zh/ja


def test_chinese_scoring_counts_characters() -> None:
    s = one("我爱北京", "我爱北京天安门", lang="zh")
    assert s.ngrams.hyp_len == 4 and s.ngrams.ref_len_closest == 7
    assert one("ＡＢＣ", "ABC", lang="zh").bleu == pytest.approx(1.0)
