"""The HTRDP error tolerance for POS tagging: disputed tags reviewed, accepted ones correct.

As for segmentation (`scoring.cws`, the review of disputed pieces), the survey's POS
evaluation let judges accept a system's tag that differs from the reference as also
correct. Here:

* a *disputed tag* is a word the system segmented as the reference did (matched as
  `scoring.pos.score_pos` matches words) but tagged differently: the triple
  (word, reference tag, system tag);
* disputed tags are pooled over systems and lines and listed once per distinct
  triple (`disputed_tags`), so a judge never knows whose tag it is;
* the review file, tab-separated, one triple a row::

      #verdict	word	reference	system	...
      y	学习	v	vn

  ``y`` accepts the system tag as also correct, ``n`` (or ``?``) does not; further
  columns are ignored and ``#`` lines are comments (`read_accepted_tags`);
* scoring with the accepted triples (`accept_tags`) counts a matched word whose
  (word, reference tag, system tag) is accepted as correctly tagged: acceptance is by
  content, so it applies to every occurrence and every system, as the accepted pieces
  of segmentation do. Every figure of `score_pos` is then computed as usual.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cws import match_words, read_lines
from .errors import FormatError
from .pos import PosTraining, Token, read_pos_files, score_pos

__all__ = [
    "REVIEW_HEADER",
    "DisputedTag",
    "accept_tags",
    "disputed_tags",
    "read_accepted_tags",
    "score_pos_review_files",
    "score_pos_reviewed",
]

REVIEW_HEADER = "#verdict\tword\treference\tsystem"
AcceptedTags = Collection[tuple[str, str, str]]
_VERDICTS = {"y": True, "n": False, "?": False}


@dataclass(frozen=True)
class DisputedTag:
    """One occurrence of a disputed tag: the triple and where it stands in the line."""

    word: str
    gold_tag: str
    test_tag: str
    position: int  # index of the word in the reference line

    @property
    def key(self) -> tuple[str, str, str]:
        """(word, reference tag, system tag): what a verdict is given on."""
        return (self.word, self.gold_tag, self.test_tag)


def disputed_tags(gold: Sequence[Token], test: Sequence[Token]) -> Iterator[DisputedTag]:
    """The words of one line segmented alike and tagged differently, in line order."""
    for i, j in match_words([w for w, _ in gold], [w for w, _ in test]):
        if gold[i][1] != test[j][1]:
            yield DisputedTag(gold[i][0], gold[i][1], test[j][1], i)


def accept_tags(
    gold: Sequence[Token], test: Sequence[Token], accepted: AcceptedTags
) -> tuple[list[Token], int]:
    """The system line with each accepted tag replaced by the reference's, and how many."""
    out = list(test)
    used = 0
    if not accepted:
        return out, 0
    for i, j in match_words([w for w, _ in gold], [w for w, _ in test]):
        key = (gold[i][0], gold[i][1], test[j][1])
        if gold[i][1] != test[j][1] and key in accepted:
            out[j] = (test[j][0], gold[i][1])
            used += 1
    return out, used


def read_accepted_tags(path: Path | str | os.PathLike[str]) -> frozenset[tuple[str, str, str]]:
    """The (word, reference tag, system tag) triples judged ``y`` in a review file."""
    accepted: set[tuple[str, str, str]] = set()
    for lineno, line in enumerate(read_lines(path), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) < 4:
            raise FormatError(
                path,
                lineno,
                f"expected verdict<TAB>word<TAB>reference tag<TAB>system tag, got {len(cols)} "
                "column(s)",
                "keep the tab-separated columns of the review file",
            )
        verdict = cols[0].strip().lower()
        if verdict not in _VERDICTS:
            raise FormatError(
                path, lineno, f"verdict {cols[0]!r} is not y, n or ?", "write y (accept) or n"
            )
        word, ref, alt = cols[1].strip(), cols[2].strip(), cols[3].strip()
        if not word or not ref or not alt or ref == alt:
            raise FormatError(
                path,
                lineno,
                f"row {line[:60]!r} is not a disputed tag",
                "give a word, the reference tag and a different system tag",
            )
        if _VERDICTS[verdict]:
            accepted.add((word, ref, alt))
    return frozenset(accepted)


# The headline figures shown before and after the review.
_REVIEWED = ("precision", "recall", "f", "relative_precision", "accuracy")


def score_pos_reviewed(
    gold: Sequence[Sequence[Token]],
    test: Sequence[Sequence[Token]],
    accepted: AcceptedTags,
    training: PosTraining | None = None,
) -> dict[str, Any]:
    """`score_pos` figures with the accepted tags counted as correct, plus the figures
    before the review (``<key>_before_review``) and ``accepted_tags`` (occurrences)."""
    before = score_pos(gold, test, training).to_dict()
    reviewed = []
    used = 0
    for g, t in zip(gold, test, strict=True):
        line, n = accept_tags(g, t, accepted)
        reviewed.append(line)
        used += n
    out = score_pos(gold, reviewed, training).to_dict()
    out["accepted_tags"] = used
    for key in _REVIEWED:
        out[f"{key}_before_review"] = before[key]
    return out


def score_pos_review_files(
    gold: Path | str,
    test: Path | str,
    accepted: Path | str,
    train: Path | str | None = None,
    *,
    encoding: str = "utf-8",
) -> dict[str, Any]:
    """`score_pos_reviewed` of a word/TAG test file, the gold file and a judged review file."""
    gold_s, test_s, training = read_pos_files(gold, test, train, encoding=encoding)
    return score_pos_reviewed(gold_s, test_s, read_accepted_tags(accepted), training)
