"""Named entity scoring with the conlleval conventions (= seqeval's default mode).

Conventions:

* Input is conlleval's layout: one token per line, whitespace-separated
  columns, the last two being the gold tag and the predicted tag; a blank
  line (or a line whose first column is ``-X-``) ends a sentence. Every
  non-blank line must have the same number of columns, as conlleval demands.
  ``-DOCSTART-`` lines get no special treatment, exactly as in conlleval:
  they are tokens (normally tagged ``O O``), counted in the accuracy.
* A tag is ``O`` or ``P-TYPE`` with P one of B, I, E, S; it is split at the
  first hyphen, so types may contain hyphens (conlleval, 2004-01-26).
* Chunks are found with conlleval's start/end-of-chunk rules, extended for
  IOBES the way seqeval's default mode extends them (B and S always start a
  chunk, E and S always end one). For IOB1, IOB2, IOE1 and IOE2 tags this is
  exactly conlleval; docs/scoring-cws-ner-pos.md lists the mixed cases where
  conlleval.pl itself differs. A chunk is correct iff gold and prediction
  have a chunk with the same type, first and last token.
* Accuracy = tokens whose gold and predicted tags are equal / tokens
  (sentence boundaries are not tokens). Precision, recall and F1 are pooled
  over chunks; per type, a rate with a zero denominator is 0.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .cws import read_lines
from .errors import FormatError
from .pooled import pooled

__all__ = [
    "Chunk",
    "NerScore",
    "NerTypeScore",
    "chunks",
    "parse_tag",
    "read_conll",
    "score_ner",
    "score_ner_file",
]

_BOUNDARY = "-X-"
_PREFIXES = frozenset("BIES")

Chunk = tuple[str, int, int]
"""(type, first token, last token), token indices counted over the file."""


def _frac(num: int, den: int) -> float:
    return num / den if den else 0.0


def _f(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def parse_tag(tag: str) -> tuple[str, str] | None:
    """``(prefix, type)`` of a tag (``("O", "")`` for O); None if malformed."""
    if tag == "O":
        return "O", ""
    prefix, sep, kind = tag.partition("-")
    if not sep or prefix not in _PREFIXES or not kind:
        return None
    return prefix, kind


def _ends(prev: str, prev_type: str, tag: str, kind: str) -> bool:
    """conlleval's endOfChunk between the previous and the current token."""
    if prev in ("E", "S"):
        return True
    if prev in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev != "O" and prev_type != kind


def _starts(prev: str, prev_type: str, tag: str, kind: str) -> bool:
    """conlleval's startOfChunk between the previous and the current token."""
    if tag in ("B", "S"):
        return True
    if prev in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag != "O" and prev_type != kind


def chunks(tags: Sequence[str | None]) -> set[Chunk]:
    """Chunks of a tag sequence; ``None`` marks a sentence boundary (acts as O)."""
    found: set[Chunk] = set()
    prev, prev_type, begin = "O", "", 0
    for i, tag in enumerate([*tags, None]):
        parsed = ("O", "") if tag is None else parse_tag(tag)
        if parsed is None:
            raise ValueError(f"malformed tag {tag!r}")
        cur, kind = parsed
        if _ends(prev, prev_type, cur, kind):
            found.add((prev_type, begin, i - 1))
        if _starts(prev, prev_type, cur, kind):
            begin = i
        prev, prev_type = cur, kind
    return found


@dataclass(frozen=True)
class NerTypeScore:
    """Chunk counts and rates for one entity type."""

    type: str
    gold: int
    predicted: int
    correct: int

    @property
    def precision(self) -> float:
        return _frac(self.correct, self.predicted)

    @property
    def recall(self) -> float:
        return _frac(self.correct, self.gold)

    @property
    def f1(self) -> float:
        return _f(self.precision, self.recall)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "gold": self.gold,
            "predicted": self.predicted,
            "correct": self.correct,
        }


@dataclass(frozen=True)
class NerScore:
    """Token accuracy and pooled chunk precision/recall/F1, plus per type."""

    tokens: int
    correct_tags: int
    gold_chunks: int
    predicted_chunks: int
    correct_chunks: int
    per_type: tuple[NerTypeScore, ...]

    @classmethod
    def pooled(cls, scores: Iterable[NerScore]) -> NerScore:
        """Several sentences' scores as one (`scoring.pooled`): counts summed, per type too,
        so F1 over any selection of sentences is that of their pooled scores."""
        total = pooled(scores)
        by_type: dict[str, list[NerTypeScore]] = {}
        for t in total.per_type:
            by_type.setdefault(t.type, []).append(t)
        return replace(total, per_type=tuple(pooled(by_type[t]) for t in sorted(by_type)))

    @property
    def accuracy(self) -> float:
        return _frac(self.correct_tags, self.tokens)

    @property
    def precision(self) -> float:
        return _frac(self.correct_chunks, self.predicted_chunks)

    @property
    def recall(self) -> float:
        return _frac(self.correct_chunks, self.gold_chunks)

    @property
    def f1(self) -> float:
        return _f(self.precision, self.recall)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates; ``per_type`` keyed by type, sorted."""
        return {
            "accuracy": self.accuracy,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "tokens": self.tokens,
            "correct_tags": self.correct_tags,
            "gold_chunks": self.gold_chunks,
            "predicted_chunks": self.predicted_chunks,
            "correct_chunks": self.correct_chunks,
            "per_type": {t.type: t.to_dict() for t in self.per_type},
        }


def score_ner(gold: Sequence[Sequence[str]], predicted: Sequence[Sequence[str]]) -> NerScore:
    """Score sentences of tags (gold and predicted, paired by index and token)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold sentences but {len(predicted)} predicted")
    flat_gold: list[str | None] = []
    flat_pred: list[str | None] = []
    tokens = correct_tags = 0
    for g, p in zip(gold, predicted, strict=True):
        if len(g) != len(p):
            raise ValueError(f"sentence lengths differ: {len(g)} gold tags, {len(p)} predicted")
        for a, b in zip(g, p, strict=True):
            tokens += 1
            correct_tags += a == b
        # A boundary between sentences closes any open chunk (conlleval's -X- O O).
        flat_gold.extend([*g, None])
        flat_pred.extend([*p, None])
    gold_chunks, pred_chunks = chunks(flat_gold), chunks(flat_pred)
    hits = gold_chunks & pred_chunks
    n_gold = Counter(c[0] for c in gold_chunks)
    n_pred = Counter(c[0] for c in pred_chunks)
    n_hit = Counter(c[0] for c in hits)
    per_type = tuple(
        NerTypeScore(t, n_gold[t], n_pred[t], n_hit[t]) for t in sorted(n_gold.keys() | n_pred)
    )
    return NerScore(
        tokens=tokens,
        correct_tags=correct_tags,
        gold_chunks=len(gold_chunks),
        predicted_chunks=len(pred_chunks),
        correct_chunks=len(hits),
        per_type=per_type,
    )


def read_conll(
    path: str | os.PathLike[str], encoding: str = "utf-8"
) -> tuple[list[list[str]], list[list[str]]]:
    """Gold and predicted tag sentences from a conlleval input file."""
    gold: list[list[str]] = [[]]
    pred: list[list[str]] = [[]]
    width: int | None = None
    width_line = 0
    for lineno, line in enumerate(read_lines(path, encoding), start=1):
        cols = line.split()
        if not cols:
            gold.append([])
            pred.append([])
            continue
        if width is None:
            width, width_line = len(cols), lineno
        elif len(cols) != width:
            raise FormatError(
                path,
                lineno,
                f"{len(cols)} columns, but line {width_line} has {width}",
                "give every token line the same columns, the last two being gold and predicted tag",
            )
        if len(cols) < 2:
            raise FormatError(
                path,
                lineno,
                "fewer than 2 columns",
                "end each token line with the gold tag and the predicted tag",
            )
        # conlleval only sees -X- when there is a token column before the tags.
        if len(cols) > 2 and cols[0] == _BOUNDARY:
            gold.append([])
            pred.append([])
            continue
        for tag, what in ((cols[-2], "gold"), (cols[-1], "predicted")):
            if parse_tag(tag) is None:
                raise FormatError(
                    path,
                    lineno,
                    f"malformed {what} tag {tag!r}",
                    "use O or B-/I-/E-/S- followed by the entity type, e.g. B-PER",
                )
        gold[-1].append(cols[-2])
        pred[-1].append(cols[-1])
    if width is None:
        # conlleval prints zeros for an empty file; nothing is scored as a silent zero here.
        raise FormatError(
            path,
            None,
            "the file holds no token lines",
            "give one token per line: token ... gold-tag predicted-tag",
        )
    keep = [i for i, s in enumerate(gold) if s]
    return [gold[i] for i in keep], [pred[i] for i in keep]


def score_ner_file(conll: Path | str, encoding: str = "utf-8") -> dict[str, Any]:
    """Score a conlleval input file (`NerScore.to_dict`)."""
    gold, pred = read_conll(conll, encoding)
    return score_ner(gold, pred).to_dict()
