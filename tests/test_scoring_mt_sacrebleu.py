"""Cross-check BLEU against sacrebleu (tokenize="13a", lowercase=False, smooth "exp").

sacrebleu's "exp" smoothing is mteval-v13a's halving rule, so corpus BLEU
agrees except in two degenerate cases checked below: no unigram match in the
whole corpus (sacrebleu 0, mteval a small positive number) and a corpus with
no n-gram of some order (sacrebleu stops at that order and scores ~0, mteval
counts the order as precision 1).
"""

from __future__ import annotations

import random

import pytest
import sacrebleu  # noqa: E402

from scoring.mt import MtSegment, score_mt

WORDS = (
    'the a cat dog sat on mat . , is was Big small red 3.5 U.S. don\'t (x) "q" 1,000 '
    "well-known e.g. $5 50% A&amp;B naïve café -- ; : ? !"
).split()


def corpus(rng: random.Random, n_refs: int, n_segs: int) -> list[MtSegment]:
    def sent() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 25)))

    return [
        MtSegment("d", str(i), sent(), tuple(sent() for _ in range(n_refs))) for i in range(n_segs)
    ]


def sacre(segs: list[MtSegment]) -> float:
    refs = [[s.refs[k] for s in segs] for k in range(len(segs[0].refs))]
    return (
        sacrebleu.corpus_bleu(
            [s.hyp for s in segs], refs, tokenize="13a", lowercase=False, smooth_method="exp"
        ).score
        / 100
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_corpora_match_sacrebleu(seed: int) -> None:
    rng = random.Random(seed)
    segs = corpus(rng, rng.randint(1, 4), rng.randint(1, 40))
    assert score_mt(segs).system.bleu == pytest.approx(sacre(segs), rel=1e-9, abs=1e-12)


def test_realistic_sentences_match_sacrebleu() -> None:
    segs = [
        MtSegment("d", "1", "Bolivia held its presidential and parliament elections today.",
                  ("Bolivia held presidential and parliamentary elections today.",
                   "Bolivians voted today in presidential and congressional elections.")),
        MtSegment("d", "2", "The polling stations closed at 4 p.m. (4 a.m. July 1, Taipei time).",
                  ("Polling stations closed at 4 p.m. (4 a.m. July 1 Taipei time).",
                   "The polls closed at 4:00 p.m., 4:00 a.m. on July 1st Taipei time.")),
        MtSegment("d", "3", "Voters hope the new leaders can revive the economy.",
                  ("Voters hope the newly elected leadership can revitalize the economy.",
                   "Voters hope new leaders will be able to revive the economy.")),
    ]  # fmt: skip
    assert score_mt(segs).system.bleu == pytest.approx(sacre(segs), rel=1e-9)


def test_degenerate_cases_differ_from_sacrebleu() -> None:
    no_unigram = [MtSegment("d", "1", "x y z w", ("a b c d",))]
    assert sacre(no_unigram) == 0.0
    assert score_mt(no_unigram).system.bleu == pytest.approx(
        (1 / 8 * 1 / 12 * 1 / 16 * 1 / 16) ** 0.25
    )
    short = [MtSegment("d", "1", "a b", ("a b",))]
    assert sacre(short) < 1e-6
    assert score_mt(short).system.bleu == pytest.approx(1.0)
