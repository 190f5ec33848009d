"""Tokenisation and weighted edit alignment for ASR scoring.

The alignment reproduces NIST SCTK sclite's default word alignment (weights
correct 0, substitution 4, insertion 3, deletion 3, and the same choice among
equal-cost paths), so per-utterance S/D/I counts come out as sclite reports
them, not as a plain unit-cost Levenshtein distance would.

What sclite does (SCTK ``src/sclite``): ``align.c:network_dp_align_texts``
builds a reference and a hypothesis network and calls
``net_dp.c:Network_dpalign(refnet, hypnet, wwd_WORD, ...)``, so the reference
is network A (rows) and the hypothesis network B (columns).
``word.c:wwd_WORD`` gives the weights: 0 for equal words, 4 for a
substitution, 3 for an insertion or deletion. ``calculate_margin_cells`` fills
row 0 with insertions only and column 0 with deletions only.
``calculate_internal_cells`` fills the table front to back (reference outer
loop, hypothesis inner loop) and stores ONE back pointer per cell, chosen as::

    if sub <= del and sub <= ins:  diagonal (correct or substitution)
    elif del < ins:                deletion
    else:                          insertion

so on equal cost the diagonal wins, then the insertion, and the deletion only
when it is strictly cheaper than the insertion. ``extract_NET_ALIGN_result``
then walks those pointers back from the last cell (end of both texts) to
(0, 0). The tie-break is therefore applied cell by cell from the END of the
utterance: trailing mismatches are resolved first, and an ambiguous
deletion/insertion pair puts the insertion last.

What this module does: the same table, and a back-trace from (n, m) that at
each cell takes the diagonal if it reaches the cell's cost, else the
insertion, else the deletion. This picks exactly the move sclite's stored
pointer would, so the path (and every count) is identical. Costs are small
integers here and floats in sclite; with weights 0/3/4 both are exact.

Speed: the table is filled by numpy over integer-coded tokens, many
utterances per operation, all utterances of a corpus in one call
(`align_all`, ``scoring._fast_align``); the per-token `AlignedPair` objects
are built only when ``Alignment.pairs`` is first read. A corpus small enough
that loading numpy would cost more than the alignment itself (a few dozen
utterances: a live status, one item) is aligned by the same steps in plain
Python (``_align_counts_small``), with the same result. The cell-by-cell
version is kept in tests/test_scoring_fast_align.py as the reference both
are checked against.

Tokenisation (`tokenize`) follows sclite ``-e utf-8`` (``-c NOASCII`` for
characters) by default; ``unicode=True`` is the documented Unicode-aware
alternative.

Not reproduced (special words that ordinary transcripts do not contain):
sclite's ``@`` null word (cost 0.001 to insert or delete, dropped from the
path), optionally deletable ``(word)`` under ``-D``, fragments under ``-F``
and ``{a / b}`` alternations.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "CORRECT_COST",
    "DELETION_COST",
    "INSERTION_COST",
    "SUBSTITUTION_COST",
    "AlignedPair",
    "Alignment",
    "Op",
    "Unit",
    "align",
    "align_all",
    "is_cjk_char",
    "tokenize",
]

Unit = Literal["word", "char", "syllable"]
Op = Literal["C", "S", "D", "I"]

CORRECT_COST = 0
SUBSTITUTION_COST = 4
INSERTION_COST = 3
DELETION_COST = 3

# Inclusive code point ranges that `char` scoring splits into single tokens.
_CJK_RANGES: tuple[tuple[int, int], ...] = (
    (0x1100, 0x11FF),  # Hangul Jamo
    (0x3000, 0x303F),  # CJK Symbols and Punctuation
    (0x3040, 0x309F),  # Hiragana
    (0x30A0, 0x30FF),  # Katakana
    (0x3130, 0x318F),  # Hangul Compatibility Jamo
    (0x31F0, 0x31FF),  # Katakana Phonetic Extensions
    (0x3400, 0x4DBF),  # CJK Unified Ideographs Extension A
    (0x4E00, 0x9FFF),  # CJK Unified Ideographs
    (0xAC00, 0xD7AF),  # Hangul Syllables
    (0xF900, 0xFAFF),  # CJK Compatibility Ideographs
    (0xFF00, 0xFFEF),  # Halfwidth and Fullwidth Forms
    (0x20000, 0x3FFFF),  # Planes 2-3: ideograph extensions B onwards
)


def is_cjk_char(ch: str) -> bool:
    """Return True if the single character `ch` is scored as its own token."""
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in _CJK_RANGES)


# One regex does `char` tokenisation in C: a CJK character on its own, or a
# run of anything that is neither CJK nor whitespace. Python's ``\s`` and
# ``str.split()`` agree on what whitespace is (both use str.isspace); the
# look-ahead keeps U+3000 IDEOGRAPHIC SPACE, which is in a CJK range, a
# separator as str.split() makes it.
_CJK_CLASS = "".join(f"{re.escape(chr(lo))}-{re.escape(chr(hi))}" for lo, hi in _CJK_RANGES)
_CHAR_TOKEN = re.compile(f"(?!\\s)[{_CJK_CLASS}]|[^\\s{_CJK_CLASS}]+")


# Anything that is not a one-character token: a non-CJK character, or
# whitespace (which includes U+3000).
_NOT_CJK_TOKEN = re.compile(f"[^{_CJK_CLASS}]|\\s")


# sclite's word splitting and `-c NOASCII` character splitting: C's isspace
# separates words (space, tab, vertical tab, form feed, carriage return, and
# LF, which a sclite line cannot hold); every non-ASCII character is a token of its
# own (U+3000 and NBSP included), and runs of other ASCII stay whole (\x1c
# to \x1f too: isspace is false there, though str.split splits at them).
_SCLITE_SPACE = re.compile("[ \t\n\v\f\r]+")
_SCLITE_CHAR_TOKEN = re.compile("[^\x00-\x7f]|[\x00-\x08\x0e-\x1f\x21-\x7f]+")
_ASCII = re.compile("[\x00-\x7f]")
# `syllable` (Chinese pinyin): a word splits after each tone digit and at apostrophes,
# so "ni3hao3" and "xi'an1" are two syllables each, as "ni3 hao3" and "xi an1" are.
_SYLLABLE = re.compile("[^'0-9]+[0-9]?|[0-9]+")
_ASCII_UPPER = re.compile("[A-Z]")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def tokenize(
    text: str, unit: Unit = "word", case_sensitive: bool = False, unicode: bool = False
) -> list[str]:
    """Split `text` into scoring tokens.

    Default (sclite ``-e utf-8``, with ``-c NOASCII`` for ``char``): words
    are split where C's isspace is true (space, tab, vertical tab, form feed,
    CR, LF) and nowhere else; ``char`` also makes every non-ASCII
    character its own token while runs of other ASCII characters stay
    whole (``café`` is ``caf`` + ``é``); unless `case_sensitive`, ASCII
    letters only are lowercased; a token longer than one character loses
    one trailing ``*`` (sclite's ``new_WORD``), so ``foo*`` equals ``foo``.

    ``syllable`` (Chinese pinyin syllable recognition): the words as above, each then
    split after every digit (the tone, ``ni3hao3`` -> ``ni3`` ``hao3``) and at
    apostrophes (``xi'an1`` -> ``xi`` ``an1``); each syllable is then scored as sclite
    scores a word, so the figures are sclite's on a file with one syllable per word.

    `unicode`: the Unicode-aware alternative (not sclite's numbers): split
    at any Unicode whitespace (``str.split``), lowercase with
    ``str.lower``, keep ``*``, and in ``char`` mode split only CJK
    characters (ideographs, CJK/full-width punctuation, kana, Hangul) while
    keeping runs of other characters (``café``) whole.
    """
    tokens = _tokens(text, unit, case_sensitive, unicode)
    return tokens if isinstance(tokens, list) else list(tokens)


def _tokens_all(
    texts: Sequence[str], unit: Unit, case_sensitive: bool, unicode: bool = False
) -> list[Sequence[str]]:
    """`_tokens` of each text; one check over all of them in the usual CJK case.

    sclite's character tokens of text without any ASCII character are its
    characters, with nothing to fold: then each text is its own token
    sequence, and no text needs a look of its own.
    """
    if unit == "char" and not unicode and _ASCII.search("".join(texts)) is None:
        return list(texts)
    return [_tokens(text, unit, case_sensitive, unicode) for text in texts]


def _unstar(tokens: list[str]) -> list[str]:
    # sclite new_WORD: "foo*" is read as "foo" (one star, words of 2+ chars).
    return [t[:-1] if len(t) > 1 and t[-1] == "*" else t for t in tokens]


def _tokens(text: str, unit: Unit, case_sensitive: bool, unicode: bool = False) -> Sequence[str]:
    """`tokenize`, but text that is all one-character tokens comes back as the string itself.

    A string is a sequence of its one-character tokens, so for the common
    Chinese/Japanese case this skips making a list and a string object per
    character, which is most of the cost of scoring a large corpus.
    """
    if unit not in ("word", "char", "syllable"):
        raise ValueError(f"unknown unit {unit!r}; expected 'word', 'char' or 'syllable'")
    if unit == "syllable":
        words = _tokens(text, "word", case_sensitive, unicode)
        return [syllable for word in words for syllable in _SYLLABLE.findall(word)]
    if unicode:
        if not case_sensitive:
            text = text.lower()
        if unit == "word":
            return text.split()
        if _NOT_CJK_TOKEN.search(text) is None:
            return text
        return _CHAR_TOKEN.findall(text)
    if not case_sensitive:
        if text.isascii():
            text = text.lower()
        elif _ASCII_UPPER.search(text) is not None:
            # translate looks up every character: only when there is a letter to fold.
            text = text.translate(_ASCII_LOWER)
    if unit == "word":
        words = [w for w in _SCLITE_SPACE.split(text) if w]
    elif _ASCII.search(text) is None:
        return text  # no ASCII at all: every character is a token, none ends a word with *
    else:
        words = _SCLITE_CHAR_TOKEN.findall(text)
    return _unstar(words) if "*" in text else words


@dataclass(frozen=True)
class AlignedPair:
    """One alignment column: `op` with its reference and hypothesis tokens.

    ``ref`` is None for insertions, ``hyp`` is None for deletions.
    """

    op: Op
    ref: str | None
    hyp: str | None


class _Deferred:
    """A value a `_LazyField` builds on first read."""

    __slots__ = ()

    def build(self) -> Any:
        """The value itself."""
        raise NotImplementedError


class _PairSource(_Deferred):
    """What `Alignment.pairs` is built from when the fast path made it.

    Building a million `AlignedPair` objects costs about as much as scoring
    the corpus, and most callers only read the counts, so the pairs wait
    until someone asks for them.
    """

    __slots__ = ("hyp", "ops", "ref")

    def __init__(self, ref: Sequence[str], hyp: Sequence[str], ops: bytes) -> None:
        self.ref = ref
        self.hyp = hyp
        self.ops = ops  # one ASCII letter C/S/D/I per alignment column

    def build(self) -> tuple[AlignedPair, ...]:
        """The alignment columns the operation string describes."""
        ref, hyp = self.ref, self.hyp
        pairs: list[AlignedPair] = []
        i = j = 0
        for code in self.ops:
            op = chr(code)
            if op == "C" or op == "S":
                pairs.append(AlignedPair("C" if op == "C" else "S", ref[i], hyp[j]))
                i += 1
                j += 1
            elif op == "D":
                pairs.append(AlignedPair("D", ref[i], None))
                i += 1
            else:
                pairs.append(AlignedPair("I", None, hyp[j]))
                j += 1
        return tuple(pairs)


class _LazyField:
    """Data descriptor behind a dataclass field whose value may be built late.

    Holds either the value passed to the constructor or a `_Deferred` (e.g.
    a `_PairSource` for ``Alignment.pairs``), and turns the latter into the
    value on first read, so equality, hashing, repr and
    ``dataclasses.asdict`` all see the same value as if it had been passed.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._key = f"_{name}_value"

    def __get__(self, obj: object, objtype: type | None = None) -> Any:
        if obj is None:
            # AttributeError on class access tells dataclasses there is no
            # default, so the constructor signature stays as it was.
            raise AttributeError(self._key)
        value = obj.__dict__[self._key]
        if isinstance(value, _Deferred):
            value = value.build()
            obj.__dict__[self._key] = value
        return value

    def __set__(self, obj: object, value: Any) -> None:
        # Reached only from the dataclass __init__: a frozen dataclass rejects
        # any later assignment before it gets here.
        obj.__dict__[self._key] = value


@dataclass(frozen=True)
class Alignment:
    """A minimum-cost alignment of a reference and a hypothesis."""

    # mypy takes the descriptor for a default; the constructor still requires every field.
    pairs: tuple[AlignedPair, ...] = _LazyField()  # type: ignore[assignment]
    correct: int  # type: ignore[misc]
    substitutions: int  # type: ignore[misc]
    deletions: int  # type: ignore[misc]
    insertions: int  # type: ignore[misc]

    @property
    def errors(self) -> int:
        """Substitutions + deletions + insertions."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def cost(self) -> int:
        """Total weighted cost under the sclite weights."""
        return (
            CORRECT_COST * self.correct
            + SUBSTITUTION_COST * self.substitutions
            + DELETION_COST * self.deletions
            + INSERTION_COST * self.insertions
        )


def align(ref: Sequence[str], hyp: Sequence[str]) -> Alignment:
    """Align `ref` to `hyp` at minimum cost (C=0, S=4, I=3, D=3), as sclite does.

    Among equal-cost paths the one sclite reports is chosen: walking back
    from the end of both sequences, each cell takes the diagonal (correct or
    substitution) if it is optimal, else the insertion, else the deletion.
    See the module docstring for the SCTK functions this mirrors.
    """
    al = align_all([ref], [hyp])[0]
    al.pairs  # noqa: B018 -- build now: the caller may change its lists afterwards
    return al


def align_all(refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]]) -> list[Alignment]:
    """`align` each ``refs[k]`` with ``hyps[k]``, in one compiled pass.

    Same results as calling `align` on each pair; much faster for many
    utterances because the tables of many utterances are filled by each numpy
    operation (see ``scoring._fast_align``) and each alignment's pairs are
    built only when first read. A `str` counts as the sequence of its
    characters.
    """
    if len(refs) != len(hyps):
        raise ValueError(f"{len(refs)} references but {len(hyps)} hypotheses")
    return _alignments(refs, hyps, _align_counts(refs, hyps))


_Counts = tuple[list[list[int]], bytes, list[int], list[int]]


# Up to this many table cells in all, a corpus is aligned in plain Python: about as long
# as importing numpy takes, which a small corpus would otherwise pay for every process.
_SMALL_CELLS = 1 << 14


def _align_counts(refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]]) -> _Counts:
    """Per-utterance ``[C, S, D, I]``, the operations, and each one's start and length in them.

    What `align_all` is made from, for callers that need the counts only
    (see ``scoring._fast_align.align_coded``).
    """
    cells = 0
    for ref, hyp in zip(refs, hyps, strict=True):
        cells += (len(ref) + 1) * (len(hyp) + 1)
        if cells > _SMALL_CELLS:
            break
    else:
        return _align_counts_small(refs, hyps)
    # Imported here so that importing `scoring` does not load numpy; only
    # aligning does.
    from ._fast_align import align_coded, encode

    return align_coded(*encode(refs, hyps), SUBSTITUTION_COST, INSERTION_COST, DELETION_COST)


_OPS = {"C": ord("C"), "S": ord("S"), "D": ord("D"), "I": ord("I")}


def _align_counts_small(refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]]) -> _Counts:
    """`_align_counts` in plain Python, one utterance at a time: the table front to back,
    then the back-trace from the end taking the diagonal, else the insertion, else the
    deletion (the module docstring says why), giving the same operations and counts."""
    sub, ins, dele = SUBSTITUTION_COST, INSERTION_COST, DELETION_COST
    op_c, op_s, op_d, op_i = _OPS["C"], _OPS["S"], _OPS["D"], _OPS["I"]
    counts: list[list[int]] = []
    ops = bytearray()
    starts: list[int] = []
    lengths: list[int] = []
    for ref, hyp in zip(refs, hyps, strict=True):
        n, m = len(ref), len(hyp)
        table = [[j * ins for j in range(m + 1)]]
        for i in range(1, n + 1):
            above = table[-1]
            token = ref[i - 1]
            row = [i * dele]
            left = row[0]
            for j in range(1, m + 1):
                best = above[j - 1] + (0 if token == hyp[j - 1] else sub)
                best = min(best, above[j] + dele, left + ins)
                row.append(best)
                left = best
            table.append(row)
        path = bytearray()
        c = s = d = k = 0
        i, j = n, m
        while i > 0 or j > 0:
            here = table[i][j]
            if i > 0 and j > 0:
                same = ref[i - 1] == hyp[j - 1]
                if here == table[i - 1][j - 1] + (0 if same else sub):
                    path.append(op_c if same else op_s)
                    c += same
                    s += not same
                    i, j = i - 1, j - 1
                    continue
            if j > 0 and here == table[i][j - 1] + ins:
                path.append(op_i)
                k += 1
                j -= 1
            else:
                path.append(op_d)
                d += 1
                i -= 1
        path.reverse()
        starts.append(len(ops))
        lengths.append(len(path))
        ops += path
        counts.append([c, s, d, k])
    return counts, bytes(ops), starts, lengths


def _alignments(
    refs: Sequence[Sequence[str]], hyps: Sequence[Sequence[str]], raw: _Counts
) -> list[Alignment]:
    """The `Alignment` of each utterance from `_align_counts`'s result; pairs built when read."""
    counts, ops, starts, lengths = raw
    with _gc_paused():
        return [
            Alignment(
                _PairSource(_frozen(ref), _frozen(hyp), ops[st : st + ln]),  # type: ignore[arg-type]
                c,
                s,
                d,
                i,
            )
            for ref, hyp, (c, s, d, i), st, ln in zip(
                refs, hyps, counts, starts, lengths, strict=True
            )
        ]


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Keep the cyclic garbage collector off inside the block.

    Building one result object per utterance allocates hundreds of
    thousands of containers that all live on; with the collector on, its
    passes over them cost more than the scoring itself (2-3x on a million
    characters). Nothing in the block makes reference cycles, and reference
    counting still frees everything as usual.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _frozen(tokens: Sequence[str]) -> Sequence[str]:
    # Pairs are built later from these, so they must not change meanwhile.
    return tokens if isinstance(tokens, str | tuple) else tuple(tokens)
