"""The batched alignment and fast tokeniser against plain-Python references.

The references below are the straightforward implementations the fast paths
replaced: the sclite table and back-trace cell by cell, and the character
tokeniser character by character. Random inputs over small alphabets make
equal-cost ties, where the tie-break matters, frequent.
"""

from __future__ import annotations

import dataclasses
import pickle
import random

import numpy as np
import pytest

from scoring import _fast_align, asr_align, score_asr
from scoring._fast_align import encode
from scoring.asr_align import (
    DELETION_COST,
    INSERTION_COST,
    SUBSTITUTION_COST,
    AlignedPair,
    Alignment,
    _tokens,
    align,
    align_all,
    is_cjk_char,
    tokenize,
)


@pytest.fixture(autouse=True, params=["numpy", "python"])
def aligner(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test twice: through the batched numpy aligner, and through the plain-Python
    one that small corpora take (scoring.asr_align._SMALL_CELLS)."""
    monkeypatch.setattr(asr_align, "_SMALL_CELLS", 0 if request.param == "numpy" else 1 << 40)
    return str(request.param)


def test_small_corpora_take_the_plain_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The default threshold: one short utterance is aligned without the numpy aligner,
    # a corpus past the threshold with it; both give the reference's answer.
    monkeypatch.undo()
    called: list[int] = []
    real = _fast_align.align_coded

    def spy(*args: object) -> object:
        called.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_fast_align, "align_coded", spy)
    assert align(["a", "b"], ["a", "c"]) == reference_align(["a", "b"], ["a", "c"])
    assert called == []
    rng = random.Random(3)
    cases = random_pairs(rng, 400, ["a", "b", "c"], 12)
    cells = sum((len(r) + 1) * (len(h) + 1) for r, h in cases)
    assert cells > asr_align._SMALL_CELLS
    got = align_all([r for r, _ in cases], [h for _, h in cases])
    assert called == [1]
    assert got == [reference_align(r, h) for r, h in cases]


def reference_align(ref: list[str], hyp: list[str]) -> Alignment:
    """sclite's alignment, cell by cell (see the asr_align module docstring)."""
    n, m = len(ref), len(hyp)
    costs = [[j * INSERTION_COST for j in range(m + 1)]]
    for i in range(1, n + 1):
        row = [i * DELETION_COST]
        for j in range(1, m + 1):
            step = 0 if ref[i - 1] == hyp[j - 1] else SUBSTITUTION_COST
            row.append(
                min(
                    costs[i - 1][j - 1] + step,
                    costs[i - 1][j] + DELETION_COST,
                    row[j - 1] + INSERTION_COST,
                )
            )
        costs.append(row)
    pairs: list[AlignedPair] = []
    i, j = n, m
    while i > 0 or j > 0:
        here = costs[i][j]
        if i > 0 and j > 0:
            same = ref[i - 1] == hyp[j - 1]
            if here == costs[i - 1][j - 1] + (0 if same else SUBSTITUTION_COST):
                pairs.append(AlignedPair("C" if same else "S", ref[i - 1], hyp[j - 1]))
                i, j = i - 1, j - 1
                continue
        if j > 0 and here == costs[i][j - 1] + INSERTION_COST:
            pairs.append(AlignedPair("I", None, hyp[j - 1]))
            j -= 1
        else:
            pairs.append(AlignedPair("D", ref[i - 1], None))
            i -= 1
    pairs.reverse()
    ops = [p.op for p in pairs]
    return Alignment(tuple(pairs), ops.count("C"), ops.count("S"), ops.count("D"), ops.count("I"))


def reference_tokenize(
    text: str, unit: str, case_sensitive: bool, unicode: bool = False
) -> list[str]:
    """Tokenisation one character at a time: sclite's, or the Unicode-aware option."""
    if not unicode:
        return sclite_tokenize(text, unit, case_sensitive)
    if not case_sensitive:
        text = text.lower()
    words = text.split()
    if unit == "word":
        return words
    tokens: list[str] = []
    for word in words:
        start = 0
        for pos, ch in enumerate(word):
            if is_cjk_char(ch):
                if pos > start:
                    tokens.append(word[start:pos])
                tokens.append(ch)
                start = pos + 1
        if start < len(word):
            tokens.append(word[start:])
    return tokens


def sclite_tokenize(text: str, unit: str, case_sensitive: bool) -> list[str]:
    """sclite -e utf-8 (-c NOASCII for char), one character at a time.

    Separators: space and tab (line breaks cannot occur in a sclite line);
    folding: A-Z only; char mode: each non-ASCII character alone, ASCII
    runs whole; new_WORD: one trailing * dropped from tokens of 2+ chars.
    """
    tokens: list[str] = []
    current = ""
    for ch in text:
        if not case_sensitive and "A" <= ch <= "Z":
            ch = chr(ord(ch) + 32)
        if ch in " \t\n\r":
            tokens.append(current)
            current = ""
        elif unit == "char" and ord(ch) > 127:
            tokens += [current, ch]
            current = ""
        else:
            current += ch
    tokens.append(current)
    return [t[:-1] if len(t) > 1 and t.endswith("*") else t for t in tokens if t]


def random_pairs(
    rng: random.Random, count: int, alphabet: list[str], max_len: int
) -> list[tuple[list[str], list[str]]]:
    out = []
    for _ in range(count):
        k = rng.randint(1, len(alphabet))  # sometimes a 1-2 symbol alphabet: many ties
        sym = alphabet[:k]
        ref = [rng.choice(sym) for _ in range(rng.randint(0, max_len))]
        hyp = [rng.choice(sym) for _ in range(rng.randint(0, max_len))]
        out.append((ref, hyp))
    return out


@pytest.mark.parametrize(
    "alphabet",
    [
        ["a", "b", "c", "d"],  # one character each: the code point encoding
        ["ab", "b", "cd", "x"],  # longer tokens: the dictionary encoding
        ["中", "国", "人", "\U00020000"],  # CJK incl. outside the BMP
    ],
)
def test_align_matches_reference_on_random_sequences(alphabet: list[str]) -> None:
    rng = random.Random(sum(map(ord, "".join(alphabet))))
    cases = random_pairs(rng, 3000, alphabet, 8)
    for ref, hyp in cases:
        assert align(ref, hyp) == reference_align(ref, hyp), (ref, hyp)


def test_align_all_matches_reference_per_utterance() -> None:
    rng = random.Random(7)
    cases = random_pairs(rng, 5000, ["a", "b", "c"], 12)
    # One long utterance among short ones: the reused table has to grow.
    cases.insert(2500, ([rng.choice("ab") for _ in range(300)], list("ab" * 120)))
    got = align_all([r for r, _ in cases], [h for _, h in cases])
    assert len(got) == len(cases)
    for al, (ref, hyp) in zip(got, cases, strict=True):
        want = reference_align(ref, hyp)
        assert (al.correct, al.substitutions, al.deletions, al.insertions) == (
            want.correct,
            want.substitutions,
            want.deletions,
            want.insertions,
        )
        assert al.pairs == want.pairs


def test_align_all_takes_strings_as_character_sequences() -> None:
    rng = random.Random(11)
    cases = random_pairs(rng, 500, list("甲乙丙"), 10)
    got = align_all(["".join(r) for r, _ in cases], ["".join(h) for _, h in cases])
    for al, (ref, hyp) in zip(got, cases, strict=True):
        assert al == reference_align(ref, hyp)


@pytest.mark.parametrize(
    "shape",
    ["empty references", "empty hypotheses", "both empty", "mixed"],
)
def test_stacks_with_empty_sides_align_as_the_reference(shape: str) -> None:
    rng = random.Random(len(shape))
    cases = random_pairs(rng, 300, ["a", "b"], 6)
    if shape in ("empty references", "both empty"):
        cases = [([], h) for _, h in cases]
    if shape in ("empty hypotheses", "both empty"):
        cases = [(r, []) for r, _ in cases]
    if shape == "mixed":
        cases += [([], []), ([], ["a"]), (["b"], [])]
    got = align_all([r for r, _ in cases], [h for _, h in cases])
    assert got == [reference_align(r, h) for r, h in cases]


def test_many_small_stacks_keep_each_utterance_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    # A tiny stack budget splits the corpus into hundreds of stacks, each
    # utterance's results are put back at its own index.
    monkeypatch.setattr(_fast_align, "_STACK_CELLS", 64)
    rng = random.Random(5)
    cases = random_pairs(rng, 800, ["a", "b", "c"], 15)
    got = align_all([r for r, _ in cases], [h for _, h in cases])
    assert got == [reference_align(r, h) for r, h in cases]


def test_the_int32_table_gives_the_same_alignments(monkeypatch: pytest.MonkeyPatch) -> None:
    # int16 holds the costs of all but very long utterances; the int32 table
    # that those get must agree too.
    assert _fast_align._cost_dtype(4000, 4000, 4) is np.int16
    assert _fast_align._cost_dtype(4200, 4000, 4) is np.int32
    monkeypatch.setattr(_fast_align, "_cost_dtype", lambda rows, cols, weight: np.int32)
    rng = random.Random(9)
    cases = random_pairs(rng, 500, ["a", "b"], 10)
    got = align_all([r for r, _ in cases], [h for _, h in cases])
    assert got == [reference_align(r, h) for r, h in cases]
    # One at a time: the narrow stack, traced utterance by utterance.
    assert [align(r, h) for r, h in cases[:100]] == got[:100]


def test_lone_surrogates_fall_back_to_the_dictionary_encoding() -> None:
    ref, hyp = ["\udc80", "a", "b"], ["a", "\udc80", "b"]
    assert align(ref, hyp) == reference_align(ref, hyp)


def test_encode_gives_equal_tokens_equal_codes_across_sides() -> None:
    ref, ref_off, hyp, hyp_off = encode([["x", "yy"], []], [["yy"], ["x", "z"]])
    assert ref_off.tolist() == [0, 2, 2] and hyp_off.tolist() == [0, 1, 3]
    assert ref[1] == hyp[0] and ref[0] == hyp[1] and hyp[2] not in ref.tolist()


def test_align_all_rejects_unequal_lengths() -> None:
    with pytest.raises(ValueError, match="2 references but 1 hypotheses"):
        align_all([["a"], ["b"]], [["a"]])


def test_lazy_pairs_behave_like_a_plain_field() -> None:
    ref, hyp = ["a", "b", "c"], ["a", "x", "c", "d"]
    lazy = align_all([ref], [hyp])[0]
    eager = reference_align(ref, hyp)
    assert lazy == eager and hash(lazy) == hash(eager) and repr(lazy) == repr(eager)
    assert dataclasses.asdict(lazy) == dataclasses.asdict(eager)
    assert dataclasses.replace(lazy, correct=0).pairs == eager.pairs
    assert pickle.loads(pickle.dumps(align_all([ref], [hyp])[0])) == eager
    with pytest.raises(dataclasses.FrozenInstanceError):
        lazy.pairs = ()  # type: ignore[misc]
    # The constructor is unchanged: positional and keyword, no default for pairs.
    assert Alignment((), 0, 0, 0, 0).pairs == ()
    assert Alignment(pairs=(), correct=0, substitutions=0, deletions=0, insertions=0).cost == 0
    with pytest.raises(TypeError):
        Alignment(correct=0, substitutions=0, deletions=0, insertions=0)  # type: ignore[call-arg]


def test_pairs_do_not_follow_later_changes_to_the_callers_lists() -> None:
    ref, hyp = ["a", "b"], ["a", "c"]
    lazy = align_all([ref], [hyp])[0]
    eager = align(ref, hyp)
    ref[1] = hyp[1] = "z"
    assert lazy.pairs == eager.pairs == (AlignedPair("C", "a", "a"), AlignedPair("S", "b", "c"))


_TEXT_PIECES = [
    "中",
    "文",
    "字",
    "。",
    "ｈ",  # fullwidth, a CJK range
    "カ",
    "한",
    "\U0002a700",
    "abc",
    "ABC",
    "Déjà",
    "İ",  # lowercases to two characters
    "x1",
    " ",
    "  ",
    "\t",
    "\n",
    "\u3000",  # ideographic space: whitespace inside a CJK range
    "\u2003",
    "\xa0",
    "\x1c",
]


@pytest.mark.parametrize("case_sensitive", [False, True])
@pytest.mark.parametrize("unit", ["char", "word"])
@pytest.mark.parametrize("unicode", [False, True])
def test_tokenize_matches_reference_on_random_text(
    unit: str, case_sensitive: bool, unicode: bool
) -> None:
    rng = random.Random(3)
    pieces = [*_TEXT_PIECES, "*", "x*", "É", "é", "\u00a0", "\u3000", "\x1c", "😀", "Ａ"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        want = reference_tokenize(text, unit, case_sensitive, unicode)
        got = tokenize(text, unit, case_sensitive, unicode)  # type: ignore[arg-type]
        assert got == want, text
        assert list(_tokens(text, unit, case_sensitive, unicode)) == want, text  # type: ignore[arg-type]


def test_all_cjk_text_stays_a_string() -> None:
    assert _tokens("中文字。", "char", False) == "中文字。"
    # sclite: U+3000 is a token like any other non-ASCII character.
    assert _tokens("中文\u3000字", "char", False) == "中文\u3000字"
    assert _tokens("中文\u3000字", "char", False, unicode=True) == ["中", "文", "字"]


def test_score_asr_matches_reference_on_mixed_corpus() -> None:
    rng = random.Random(5)
    pieces = ["中", "文", "字", "ab", "AB", " ", "\u3000"]
    refs, hyps = {}, {}
    for k in range(800):
        refs[f"u{k}"] = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
        if k % 10:  # every tenth hypothesis missing
            hyps[f"u{k}"] = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 10)))
    report = score_asr(refs, hyps, unit="char")
    for u in report.utterances:
        ref = reference_tokenize(refs[u.id], "char", False)
        hyp_text = hyps.get(u.id)
        hyp = [] if hyp_text is None else reference_tokenize(hyp_text, "char", False)
        want = reference_align(ref, hyp)
        assert u.alignment == want
        assert u.ref_tokens == len(ref) and u.hyp_missing == (hyp_text is None)
        assert u.to_dict()["alignment"] == [[p.op, p.ref, p.hyp] for p in want.pairs]
