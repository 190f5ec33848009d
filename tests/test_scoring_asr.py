"""Hand-checked cases for scoring.asr / scoring.asr_align."""

from __future__ import annotations

import dataclasses
import json
import pickle
import random
from functools import cache

import pytest

from scoring import (
    AlignedPair,
    AsrScore,
    align,
    score_asr,
    tokenize,
)


def ops(ref: str, hyp: str) -> str:
    return "".join(p.op for p in align(ref.split(), hyp.split()).pairs)


def counts(ref: str, hyp: str) -> tuple[int, int, int, int]:
    a = align(ref.split(), hyp.split())
    return a.correct, a.substitutions, a.deletions, a.insertions


# --- alignment --------------------------------------------------------------


def test_identical() -> None:
    a = align(["a", "b", "c"], ["a", "b", "c"])
    assert [p.op for p in a.pairs] == ["C", "C", "C"]
    assert (a.correct, a.substitutions, a.deletions, a.insertions) == (3, 0, 0, 0)
    assert a.cost == 0 and a.errors == 0


def test_one_substitution() -> None:
    a = align("the cat sat".split(), "the hat sat".split())
    assert a.pairs[1] == AlignedPair("S", "cat", "hat")
    assert counts("the cat sat", "the hat sat") == (2, 1, 0, 0)
    assert a.cost == 4


def test_insertion_at_start_and_end() -> None:
    assert ops("b c", "a b c") == "ICC"
    assert ops("a b", "a b c") == "CCI"
    a = align(["b"], ["a", "b"])
    assert a.pairs[0] == AlignedPair("I", None, "a")
    assert a.cost == 3


def test_deletion() -> None:
    assert ops("a b c", "a c") == "CDC"
    assert align("a b c".split(), "a c".split()).pairs[1] == AlignedPair("D", "b", None)


def test_empty_ref_is_all_insertions() -> None:
    a = align([], ["x", "y"])
    assert [p.op for p in a.pairs] == ["I", "I"]
    assert (a.correct, a.substitutions, a.deletions, a.insertions) == (0, 0, 0, 2)


def test_empty_hyp_is_all_deletions() -> None:
    a = align(["x", "y", "z"], [])
    assert [p.op for p in a.pairs] == ["D", "D", "D"]
    assert a.deletions == 3 and a.cost == 9


def test_both_empty() -> None:
    a = align([], [])
    assert a.pairs == () and a.cost == 0


def test_sclite_weights_beat_plain_levenshtein() -> None:
    # Unit costs tie S,S (2) with D,C,I (2). With S=4, D=I=3:
    # S(a,b) S(b,c) = 8, but D(a) C(b) I(c) = 3 + 0 + 3 = 6, so the latter wins.
    a = align(["a", "b"], ["b", "c"])
    assert a.pairs == (
        AlignedPair("D", "a", None),
        AlignedPair("C", "b", "b"),
        AlignedPair("I", None, "c"),
    )
    assert (a.substitutions, a.deletions, a.insertions) == (0, 1, 1)
    assert a.cost == 6


def test_substitution_preferred_to_deletion_plus_insertion() -> None:
    # S = 4 < D + I = 6.
    assert ops("a", "b") == "S"


def test_documented_tie_break() -> None:
    # ref "a b", hyp "c": S(a,c) D(b) and D(a) S(b,c) both cost 7. Tracing back
    # from the end prefers the diagonal, so the last column is S(b,c).
    a = align(["a", "b"], ["c"])
    assert a.cost == 7
    assert a.pairs == (AlignedPair("D", "a", None), AlignedPair("S", "b", "c"))


@cache
def _reference_cost(ref: tuple[str, ...], hyp: tuple[str, ...]) -> int:
    # Independent front-to-back recursion, deliberately unlike align()'s table.
    if not ref:
        return 3 * len(hyp)
    if not hyp:
        return 3 * len(ref)
    return min(
        _reference_cost(ref[1:], hyp[1:]) + (0 if ref[0] == hyp[0] else 4),
        _reference_cost(ref[1:], hyp) + 3,
        _reference_cost(ref, hyp[1:]) + 3,
    )


def test_random_alignments_are_consistent_and_optimal() -> None:
    rng = random.Random(1234)
    for _ in range(500):
        ref = [rng.choice("abcd") for _ in range(rng.randint(0, 7))]
        hyp = [rng.choice("abcd") for _ in range(rng.randint(0, 7))]
        a = align(ref, hyp)
        assert a.correct + a.substitutions + a.deletions == len(ref)
        assert a.correct + a.substitutions + a.insertions == len(hyp)
        assert [p.ref for p in a.pairs if p.ref is not None] == ref
        assert [p.hyp for p in a.pairs if p.hyp is not None] == hyp
        for p in a.pairs:
            assert (p.op == "C") == (p.ref is not None and p.ref == p.hyp)
            assert (p.op == "S") == (p.ref is not None and p.hyp is not None and p.ref != p.hyp)
        assert 4 * a.substitutions + 3 * (a.deletions + a.insertions) == a.cost
        assert a.cost == _reference_cost(tuple(ref), tuple(hyp))


# --- tokenisation -----------------------------------------------------------


def test_word_tokens_and_case() -> None:
    assert tokenize("Hello  World\tfoo\n", "word") == ["hello", "world", "foo"]
    assert tokenize("Hello World", "word", case_sensitive=True) == ["Hello", "World"]


def test_char_tokens_mixed_cjk_ascii() -> None:
    assert tokenize("我们 use GPU 计算", "char") == ["我", "们", "use", "gpu", "计", "算"]
    # No spaces: ASCII runs stay whole, fullwidth punctuation is its own token.
    assert tokenize("我们use GPU，计算", "char") == [
        "我",
        "们",
        "use",
        "gpu",
        "，",
        "计",
        "算",
    ]
    assert tokenize("한국어 テスト ひら", "char") == [
        "한",
        "국",
        "어",
        "テ",
        "ス",
        "ト",
        "ひ",
        "ら",
    ]
    assert tokenize("\u3400x", "char") == ["\u3400", "x"]  # Ext A
    # Word unit leaves CJK runs alone.
    assert tokenize("我们 use", "word") == ["我们", "use"]


def test_unknown_unit_raises() -> None:
    with pytest.raises(ValueError, match="unit"):
        tokenize("a", "phone")  # type: ignore[arg-type]


# --- corpus scoring ---------------------------------------------------------


def test_case_insensitive_by_default() -> None:
    refs = {"u1": "Hello World"}
    hyps = {"u1": "hello WORLD"}
    assert score_asr(refs, hyps).overall.errors == 0
    strict = score_asr(refs, hyps, case_sensitive=True).overall
    assert strict.substitutions == 2 and strict.wer == 1.0


def test_corpus_counts_and_rates() -> None:
    refs = {"u1": "a b c d", "u2": "e f", "u3": "g h i j"}
    hyps = {"u1": "a x c d", "u2": "e f", "u3": "g h i j k"}
    rep = score_asr(refs, hyps)
    o = rep.overall
    assert (o.utterances, o.ref_tokens) == (3, 10)
    assert (o.correct, o.substitutions, o.deletions, o.insertions) == (9, 1, 0, 1)
    assert o.errors == 2
    assert o.wer == pytest.approx(0.2)
    assert o.sub_rate == pytest.approx(0.1)
    assert o.ins_rate == pytest.approx(0.1)
    assert o.del_rate == 0.0
    assert o.correct_rate == pytest.approx(0.9)
    assert o.sentence_correct_rate == pytest.approx(1 / 3)
    assert [u.id for u in rep.utterances] == ["u1", "u2", "u3"]
    d = o.to_dict()
    assert d["wer"] == pytest.approx(0.2) and d["errors"] == 2 and d["hyp_tokens"] == 11
    json.dumps(rep.to_dict(include_utterances=True))  # must be JSON-ready


def test_char_unit_scoring() -> None:
    rep = score_asr({"u": "我们 use GPU 计算"}, {"u": "我门 use gpu 计算"}, unit="char")
    o = rep.overall
    assert o.ref_tokens == 6 and o.substitutions == 1 and o.errors == 1


def test_by_condition() -> None:
    refs = {"q1": "a b", "q2": "c d", "n1": "e f g h"}
    hyps = {"q1": "a b", "q2": "c", "n1": "e x g h y"}
    cond = {"q1": "quiet", "q2": "quiet", "n1": "noisy"}
    rep = score_asr(refs, hyps, conditions=cond)
    assert list(rep.by_condition) == ["noisy", "quiet"]
    quiet, noisy = rep.by_condition["quiet"], rep.by_condition["noisy"]
    assert (quiet.ref_tokens, quiet.deletions, quiet.errors) == (4, 1, 1)
    assert quiet.wer == pytest.approx(0.25)
    assert quiet.sentence_correct_rate == pytest.approx(0.5)
    assert (noisy.ref_tokens, noisy.substitutions, noisy.insertions) == (4, 1, 1)
    assert noisy.wer == pytest.approx(0.5)
    assert rep.overall.errors == quiet.errors + noisy.errors
    assert rep.overall.wer == pytest.approx(3 / 8)
    assert {u.id: u.condition for u in rep.utterances} == cond


def test_no_conditions_means_empty_breakdown() -> None:
    assert score_asr({"u": "a"}, {"u": "a"}).by_condition == {}


def test_condition_errors() -> None:
    with pytest.raises(ValueError, match="zz"):
        score_asr({"u": "a"}, {"u": "a"}, conditions={"u": "c", "zz": "c"})
    with pytest.raises(ValueError, match="no condition"):
        score_asr({"u": "a", "v": "b"}, {}, conditions={"u": "c"})


def test_missing_hypothesis_counts_as_deletions() -> None:
    refs = {"u1": "a b c", "u2": "d e", "u3": "f"}
    rep = score_asr(refs, {"u1": "a b c", "u2": None})  # u3 absent
    o = rep.overall
    assert (o.deletions, o.errors, o.ref_tokens) == (3, 3, 6)
    assert o.wer == pytest.approx(0.5)
    assert o.missing_hypotheses == 2
    assert [u.hyp_missing for u in rep.utterances] == [False, True, True]


def test_empty_string_hypothesis_is_not_missing() -> None:
    rep = score_asr({"u": "a b"}, {"u": ""})
    assert rep.overall.deletions == 2 and rep.overall.missing_hypotheses == 0


def test_unknown_hypothesis_id_raises() -> None:
    with pytest.raises(ValueError, match="'bogus'"):
        score_asr({"u1": "a"}, {"u1": "a", "bogus": "x"})


def test_empty_reference_rates() -> None:
    # N == 0: rates use max(N, 1), so silence-vs-silence is 0.0 and
    # two insertions into silence give WER 2.0 (finite, JSON-safe).
    assert score_asr({"u": ""}, {"u": ""}).overall.wer == 0.0
    o = score_asr({"u": ""}, {"u": "uh um"}).overall
    assert (o.ref_tokens, o.insertions, o.wer, o.ins_rate) == (0, 2, 2.0, 2.0)
    assert o.sentence_correct_rate == 0.0


def test_empty_corpus() -> None:
    o = score_asr({}, {}).overall
    assert o == AsrScore(0, 0, 0, 0, 0, 0, 0, 0)
    assert o.wer == 0.0 and o.sentence_correct_rate == 0.0


def test_totals_from_counts_equal_the_sums_of_the_utterances() -> None:
    # The totals come from the aligner's counts and the per-utterance objects
    # are made only when read: both must tell the same story.
    rng = random.Random(13)
    words = ["a", "b", "C", "中", "文", "x*"]
    refs = {f"u{k}": " ".join(rng.choices(words, k=rng.randint(0, 8))) for k in range(300)}
    hyps: dict[str, str | None] = {
        k: None if rng.random() < 0.1 else " ".join(rng.choices(words, k=rng.randint(0, 8)))
        for k in refs
        if rng.random() < 0.95
    }
    labels = {k: rng.choice(["quiet", "noisy", "car"]) for k in refs}
    for unit in ("word", "char"):
        rep = score_asr(refs, hyps, unit=unit, conditions=labels)  # type: ignore[arg-type]
        unread = pickle.loads(pickle.dumps(rep))
        assert rep.overall == AsrScore.from_utterances(rep.utterances)
        for label, score in rep.by_condition.items():
            group = [u for u in rep.utterances if u.condition == label]
            assert score == AsrScore.from_utterances(group)
        assert [u.id for u in rep.utterances] == list(refs)
        assert [u.hyp_missing for u in rep.utterances] == [hyps.get(k) is None for k in refs]
        assert unread == rep and dataclasses.asdict(unread) == dataclasses.asdict(rep)
        with pytest.raises(dataclasses.FrozenInstanceError):
            rep.utterances = ()  # type: ignore[misc]
