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

Not reproduced (special words that ordinary transcripts do not contain):
sclite's ``@`` null word (cost 0.001 to insert or delete, dropped from the
path), optionally deletable ``(word)`` under ``-D``, fragments under ``-F``,
``{a / b}`` alternations, and ``new_WORD`` stripping one trailing ``*`` from
words longer than one character.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

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
    "is_cjk_char",
    "tokenize",
]

Unit = Literal["word", "char"]
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


def tokenize(text: str, unit: Unit = "word", case_sensitive: bool = False) -> list[str]:
    """Split `text` into scoring tokens.

    ``word``: split on whitespace. ``char``: additionally split every CJK
    character (ideographs, CJK/fullwidth punctuation, kana, Hangul) into its
    own token while keeping runs of other characters (e.g. ASCII words) whole,
    like sclite ``-c NOASCII``. Unless `case_sensitive`, text is lowercased
    first (``str.lower``, as sclite does, rather than ``casefold``).
    """
    if unit not in ("word", "char"):
        raise ValueError(f"unknown unit {unit!r}; expected 'word' or 'char'")
    if not case_sensitive:
        text = text.lower()
    words = text.split()
    if unit == "word":
        return words
    tokens: list[str] = []
    for word in words:
        run_start = 0
        for pos, ch in enumerate(word):
            if is_cjk_char(ch):
                if pos > run_start:
                    tokens.append(word[run_start:pos])
                tokens.append(ch)
                run_start = pos + 1
        if run_start < len(word):
            tokens.append(word[run_start:])
    return tokens


@dataclass(frozen=True)
class AlignedPair:
    """One alignment column: `op` with its reference and hypothesis tokens.

    ``ref`` is None for insertions, ``hyp`` is None for deletions.
    """

    op: Op
    ref: str | None
    hyp: str | None


@dataclass(frozen=True)
class Alignment:
    """A minimum-cost alignment of a reference and a hypothesis."""

    pairs: tuple[AlignedPair, ...]
    correct: int
    substitutions: int
    deletions: int
    insertions: int

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
    n, m = len(ref), len(hyp)
    # costs[i][j] = min cost of aligning ref[:i] with hyp[:j]; the full table
    # is kept because utterances are short and the back-trace needs it.
    # Row 0 is insertions only and column 0 deletions only, as in sclite's
    # calculate_margin_cells.
    costs: list[list[int]] = [[j * INSERTION_COST for j in range(m + 1)]]
    for i in range(1, n + 1):
        prev = costs[i - 1]
        r = ref[i - 1]
        row = [i * DELETION_COST]
        left = row[0]
        for j in range(1, m + 1):
            diag = prev[j - 1] + (CORRECT_COST if r == hyp[j - 1] else SUBSTITUTION_COST)
            up = prev[j] + DELETION_COST
            ins = left + INSERTION_COST
            left = min(diag, up, ins)
            row.append(left)
        costs.append(row)

    pairs: list[AlignedPair] = []
    c = s = d = ins_n = 0
    i, j = n, m
    while i > 0 or j > 0:
        here = costs[i][j]
        # Same order as sclite's back pointer: diagonal, insertion, deletion.
        if i > 0 and j > 0:
            same = ref[i - 1] == hyp[j - 1]
            step = CORRECT_COST if same else SUBSTITUTION_COST
            if here == costs[i - 1][j - 1] + step:
                pairs.append(AlignedPair("C" if same else "S", ref[i - 1], hyp[j - 1]))
                if same:
                    c += 1
                else:
                    s += 1
                i -= 1
                j -= 1
                continue
        if j > 0 and here == costs[i][j - 1] + INSERTION_COST:
            pairs.append(AlignedPair("I", None, hyp[j - 1]))
            ins_n += 1
            j -= 1
        else:
            pairs.append(AlignedPair("D", ref[i - 1], None))
            d += 1
            i -= 1
    pairs.reverse()
    return Alignment(tuple(pairs), c, s, d, ins_n)
