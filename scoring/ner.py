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
* conlleval.pl does not know IOBES's S- and does not end a chunk at E-
  followed by B- of the same type, so it reads ``S-X S-X`` and ``E-X B-X``
  as one chunk. `score_ner_file` warns where a file holds such chunks;
  ``conlleval=True`` (`onsite score ner --conlleval`) reproduces conlleval.pl
  instead, whatever the tags (`conlleval_score`: its startOfChunk/endOfChunk
  rules and its count of correct chunks, bare tags and type ``0`` included).
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
    "conlleval_chunks",
    "conlleval_score",
    "conlleval_sentence_warning",
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


# --- conlleval.pl's own chunking -------------------------------------------------

# (previous prefix, prefix) pairs at which conlleval.pl's endOfChunk / startOfChunk hold
# whatever the types (conlleval 2004-01-26; S is in neither: the script does not know it).
_CONLL_ENDS = frozenset(
    {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
)
_CONLL_STARTS = frozenset(
    {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}
)


def _conll_split(tag: str) -> tuple[str, str]:
    """conlleval.pl's reading of a tag: prefix before the first hyphen, the rest the type.

    A tag without a hyphen is all prefix, with type ``""``; the type ``0`` is also ``""``
    (Perl's ``$type ? $type : ""``: the string "0" is false).
    """
    prefix, sep, kind = tag.partition("-")
    if not sep:
        return tag, ""
    return prefix, "" if kind == "0" else kind


def _conll_ends(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    if (prev, tag) in _CONLL_ENDS or prev in ("[", "]"):
        return True
    return prev not in ("O", ".") and prev_type != kind


def _conll_starts(prev: str, tag: str, prev_type: str, kind: str) -> bool:
    if (prev, tag) in _CONLL_STARTS or tag in ("[", "]"):
        return True
    return tag not in ("O", ".") and prev_type != kind


def conlleval_chunks(tags: Sequence[str | None]) -> set[Chunk]:
    """The chunks conlleval.pl finds in a tag sequence (``None``: a sentence boundary).

    A chunk opens where startOfChunk holds and closes before the next token where
    endOfChunk holds, or where another chunk opens; any tag is read (`_conll_split`).
    """
    found: set[Chunk] = set()
    prev, prev_type = "O", ""
    begin: int | None = None
    for i, tag in enumerate([*tags, None]):
        cur, kind = ("O", "") if tag is None else _conll_split(tag)
        ends = _conll_ends(prev, cur, prev_type, kind)
        starts = _conll_starts(prev, cur, prev_type, kind)
        if begin is not None and (ends or starts):
            found.add((prev_type, begin, i - 1))
            begin = None
        if starts:
            begin = i
        prev, prev_type = cur, kind
    return found


def conlleval_score(rows: Iterable[tuple[str, str] | None]) -> NerScore:
    """Counts exactly as conlleval.pl makes them from (gold tag, predicted tag) rows.

    ``None`` is a sentence boundary (a blank or ``-X-`` line: O O, not a token). A
    correct chunk is counted by the script's own rule: both chunks start at the same
    token with the same type and both end at the same token, the types of the tokens
    between agreeing; per type, the script's keys (``""`` for bare tags and type ``0``).
    """
    found_gold: Counter[str] = Counter()
    found_pred: Counter[str] = Counter()
    correct: Counter[str] = Counter()
    tokens = correct_tags = 0
    last_g, last_gt, last_p, last_pt = "O", "", "O", ""
    in_correct = False
    for row in rows:
        if row is None:
            g, gt, p, pt = "O", "", "O", ""
        else:
            (g, gt), (p, pt) = _conll_split(row[0]), _conll_split(row[1])
        end_g = _conll_ends(last_g, g, last_gt, gt)
        end_p = _conll_ends(last_p, p, last_pt, pt)
        if in_correct:
            if end_g and end_p and last_pt == last_gt:
                in_correct = False
                correct[last_gt] += 1
            elif end_g != end_p or pt != gt:
                in_correct = False
        start_g = _conll_starts(last_g, g, last_gt, gt)
        start_p = _conll_starts(last_p, p, last_pt, pt)
        if start_g and start_p and pt == gt:
            in_correct = True
        found_gold[gt] += start_g
        found_pred[pt] += start_p
        if row is not None:
            tokens += 1
            correct_tags += g == p and gt == pt
        last_g, last_gt, last_p, last_pt = g, gt, p, pt
    if in_correct:
        correct[last_gt] += 1
    types = sorted(
        t for t in found_gold.keys() | found_pred.keys() if found_gold[t] or found_pred[t]
    )
    return NerScore(
        tokens=tokens,
        correct_tags=correct_tags,
        gold_chunks=sum(found_gold.values()),
        predicted_chunks=sum(found_pred.values()),
        correct_chunks=sum(correct.values()),
        per_type=tuple(NerTypeScore(t, found_gold[t], found_pred[t], correct[t]) for t in types),
    )


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


Row = tuple[int, str, str] | None
"""A token line's (line number, gold tag, predicted tag), or None for a sentence boundary."""


def _read_rows(path: str | os.PathLike[str], encoding: str, conlleval: bool) -> list[Row]:
    """The token lines and sentence boundaries of a conlleval input file.

    Without `conlleval`, every tag must be O or B-/I-/E-/S- plus a type; with it, any tag
    is read as conlleval.pl reads it, and a first column ``-X-`` is a boundary at any width.
    """
    rows: list[Row] = []
    width: int | None = None
    width_line = 0
    for lineno, line in enumerate(read_lines(path, encoding), start=1):
        cols = line.split()
        if not cols:
            rows.append(None)
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
        # conlleval only sees -X- when there is a token column before the tags; with
        # --conlleval, as the script reads it, a first column -X- is a boundary anyway.
        if cols[0] == _BOUNDARY and (len(cols) > 2 or conlleval):
            rows.append(None)
            continue
        if not conlleval:
            for tag, what in ((cols[-2], "gold"), (cols[-1], "predicted")):
                if parse_tag(tag) is None:
                    raise FormatError(path, lineno, *_bad_tag(tag, what))
        rows.append((lineno, cols[-2], cols[-1]))
    if width is None:
        # conlleval prints zeros for an empty file; nothing is scored as a silent zero here.
        raise FormatError(
            path,
            None,
            "the file holds no token lines",
            "give one token per line: token ... gold-tag predicted-tag",
        )
    return rows


# Prefixes I- to the bare types of the last two columns (blank lines kept).
_IO_TO_IOB1 = (
    "awk 'NF >= 2 { for (i = NF - 1; i <= NF; i++) "
    """if ($i != "O" && $i !~ /-/) $i = "I-" $i } 1' FILE"""
)


def _bad_tag(tag: str, what: str) -> tuple[str, str]:
    """The problem and the fix for a tag onsite does not read (a bare type: the IO scheme)."""
    if "-" not in tag and tag:
        return (
            f"malformed {what} tag {tag!r}: a bare type (the IO scheme), which conlleval.pl "
            "reads as a prefix with no type: it finds no chunk there, or one of type ''",
            f"write I-{tag} for {tag} (IOB1, which conlleval.pl and onsite read alike, with the "
            f"same figures), e.g. {_IO_TO_IOB1}; or pass --conlleval to score the file exactly "
            "as conlleval.pl does",
        )
    return (
        f"malformed {what} tag {tag!r}",
        "use O or B-/I-/E-/S- followed by the entity type, e.g. B-PER "
        "(--conlleval scores any tag as conlleval.pl does)",
    )


def _sentences(rows: Sequence[Row]) -> tuple[list[list[str]], list[list[str]]]:
    gold: list[list[str]] = [[]]
    pred: list[list[str]] = [[]]
    for row in rows:
        if row is None:
            gold.append([])
            pred.append([])
        else:
            gold[-1].append(row[1])
            pred[-1].append(row[2])
    keep = [i for i, sentence in enumerate(gold) if sentence]
    return [gold[i] for i in keep], [pred[i] for i in keep]


def read_conll(
    path: str | os.PathLike[str], encoding: str = "utf-8"
) -> tuple[list[list[str]], list[list[str]]]:
    """Gold and predicted tag sentences from a conlleval input file."""
    return _sentences(_read_rows(path, encoding, conlleval=False))


def _conlleval_difference(rows: Sequence[Row]) -> tuple[int, int, str, str, float, float] | None:
    """Where conlleval.pl would read chunks differently: (how many of onsite's chunks
    are not its chunks, the first one's row, gold or predicted, its tags, onsite's F1,
    conlleval.pl's F1), or None."""
    flat: dict[str, list[str | None]] = {"gold": [], "predicted": []}
    for row in rows:
        # A boundary between sentences closes any open chunk, as in score_ner.
        flat["gold"].append(None if row is None else row[1])
        flat["predicted"].append(None if row is None else row[2])
    differing: list[tuple[int, str, Chunk]] = []
    for what, tags in flat.items():
        for chunk in chunks(tags) - conlleval_chunks(tags):
            differing.append((chunk[1], what, chunk))
    if not differing:
        return None
    first, what, (_, begin, end) = min(differing)
    shown = " ".join(str(t) for t in flat[what][begin : end + 2] if t is not None)
    ours = _pooled_f1(chunks(flat["gold"]), chunks(flat["predicted"]))
    theirs = conlleval_score((r[1], r[2]) if r else None for r in rows).f1
    return len(differing), first, what, shown, ours, theirs


_CONLLEVAL_READS = (
    "are not chunks to conlleval.pl, which does not know S- and does not end a chunk at E- "
    "before B-"
)


def _conlleval_warning(path: str | os.PathLike[str], rows: Sequence[Row]) -> list[str]:
    """The warning for chunks conlleval.pl would merge or split differently, if any."""
    found = _conlleval_difference(rows)
    if found is None:
        return []
    count, first, what, shown, ours, theirs = found
    row = rows[first]
    line = None if row is None else row[0]
    return [
        f"{os.fspath(path)}:{line}: {count} of onsite's chunks (gold and predicted) "
        f"{_CONLLEVAL_READS} (first: {what} tags {shown!r} from this line); conlleval.pl gives "
        f"F1 {theirs:.4f}, onsite {ours:.4f} (--conlleval reproduces conlleval.pl)"
    ]


def conlleval_sentence_warning(
    gold: Sequence[Sequence[str]],
    predicted: Sequence[Sequence[str | None]],
    ids: Sequence[str],
) -> list[str]:
    """The same warning for a run's sentences (``ids`` name them; an unanswered tag,
    None, is O to both), naming how to get conlleval.pl's figure from the job."""
    rows: list[Row] = []
    sentence_of: list[str] = []
    for sid, g_tags, p_tags in zip(ids, gold, predicted, strict=True):
        if rows:
            rows.append(None)
            sentence_of.append("")
        for index, (g, p) in enumerate(zip(g_tags, p_tags, strict=True), start=1):
            rows.append((index, g, "O" if p is None else p))
            sentence_of.append(sid)
    found = _conlleval_difference(rows)
    if found is None:
        return []
    count, first, what, shown, ours, theirs = found
    return [
        f"{count} of onsite's chunks (gold and predicted) {_CONLLEVAL_READS} (first: {what} "
        f"tags {shown!r} in sentence {sentence_of[first]!r}); conlleval.pl gives F1 "
        f"{theirs:.4f}, onsite {ours:.4f} (`onsite score ner --run RUN --task T --system S "
        "--conlleval` reproduces conlleval.pl)"
    ]


def _pooled_f1(gold: set[Chunk], pred: set[Chunk]) -> float:
    hits = len(gold & pred)
    return _f(_frac(hits, len(pred)), _frac(hits, len(gold)))


def score_ner_file(
    conll: Path | str, encoding: str = "utf-8", *, conlleval: bool = False
) -> dict[str, Any]:
    """Score a conlleval input file (`NerScore.to_dict`, plus ``warnings``).

    By default chunks are IOBES (as seqeval), and ``warnings`` names the chunks
    conlleval.pl would read differently; ``conlleval=True`` gives conlleval.pl's counts
    for any tags (`conlleval_score`).
    """
    rows = _read_rows(conll, encoding, conlleval)
    if conlleval:
        out = conlleval_score((r[1], r[2]) if r else None for r in rows).to_dict()
        return {**out, "chunking": "conlleval", "warnings": []}
    gold, pred = _sentences(rows)
    out = score_ner(gold, pred).to_dict()
    return {**out, "chunking": "iobes", "warnings": _conlleval_warning(conll, rows)}
