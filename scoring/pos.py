"""POS tagging scoring: HTRDP precision/recall/F/relative precision and SIGHAN figures.

File format (gold, test and training): UTF-8 text, one sentence per line,
tokens ``word/TAG`` separated by whitespace (ASCII or U+3000), split at the
*last* slash so words may contain ``/`` (``1/2/m`` is word ``1/2``, tag
``m``). Gold and test must have the same number of lines.

Conventions:

* Words are matched per line exactly as in word segmentation (`scoring.cws`:
  longest common subsequence of word strings). A word is *correctly
  segmented* if matched and *correctly tagged* if matched with an equal tag.
* HTRDP (survey eqs. 7-11): precision = correctly tagged / test words,
  recall = correctly tagged / gold words, F = 2PR/(P+R), relative precision
  = correctly tagged / correctly segmented (= POS precision / CWS
  precision), which discounts the system's segmentation errors.
* SIGHAN POS (segmentation given): accuracy = correctly tagged / gold words
  (equal to the recall above; equal to precision when the segmentation is
  identical). With a training file: a gold (word, tag) pair seen in
  training is an *IV POS tag*, otherwise (tag unseen for the word, or the
  word unseen) an *OOV POS tag*; accuracy is reported on each; the OOV POS
  tag rate = OOV POS tags / gold words. *Multi-POS words* occur in training
  and have more than one tag over training + gold test data; accuracy is
  reported on their gold tokens.
* The SIGHAN baseline tags each gold word from training: a word with one
  training tag gets it; otherwise its unique most frequent training tag;
  failing that (a tie, or an OOV word) the unique most frequent tag of the
  whole training corpus; with no unique one the word counts as wrong.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .cws import check_line_counts, match_words, read_lines, split_words
from .errors import FormatError

__all__ = [
    "PosScore",
    "PosTraining",
    "baseline_tagger",
    "read_pos_files",
    "read_tagged",
    "score_pos",
    "score_pos_files",
]

Token = tuple[str, str]


def _frac(num: int, den: int) -> float:
    return num / den if den else 0.0


def _opt(num: int | None, den: int | None) -> float | None:
    return None if num is None or not den else num / den


def read_tagged(path: str | os.PathLike[str], encoding: str = "utf-8") -> list[list[Token]]:
    """Sentences of ``(word, tag)`` from a ``word/TAG`` file, one per line."""
    out: list[list[Token]] = []
    for lineno, line in enumerate(read_lines(path, encoding), start=1):
        sentence: list[Token] = []
        for item in split_words(line):
            word, sep, tag = item.rpartition("/")
            if not sep or not word or not tag:
                raise FormatError(
                    path,
                    lineno,
                    f"token {item[:40]!r} is not word/TAG",
                    "write every token as word/TAG, tokens separated by spaces",
                )
            sentence.append((word, tag))
        out.append(sentence)
    return out


@dataclass(frozen=True)
class PosTraining:
    """Tag counts per word and overall, from the training corpus."""

    word_tags: dict[str, Counter[str]]
    tag_totals: Counter[str]

    @classmethod
    def from_sentences(cls, sentences: Sequence[Sequence[Token]]) -> PosTraining:
        word_tags: dict[str, Counter[str]] = defaultdict(Counter)
        totals: Counter[str] = Counter()
        for sentence in sentences:
            for word, tag in sentence:
                word_tags[word][tag] += 1
                totals[tag] += 1
        return cls(dict(word_tags), totals)


def _unique_top(counts: Counter[str]) -> str | None:
    top = counts.most_common(2)
    if not top or (len(top) == 2 and top[0][1] == top[1][1]):
        return None
    return top[0][0]


def baseline_tagger(training: PosTraining) -> dict[str, str | None]:
    """The guideline's baseline tag per training word, plus ``""`` for OOV words.

    None means no unique tag exists (the word counts as wrongly tagged).
    """
    overall = _unique_top(training.tag_totals)
    table: dict[str, str | None] = {"": overall}
    for word, tags in training.word_tags.items():
        # One tag, or a unique most frequent one; ties fall back to the overall tag.
        table[word] = _unique_top(tags) or overall
    return table


@dataclass(frozen=True)
class PosScore:
    """POS counts and rates (fractions 0..1; None when not defined)."""

    lines: int
    gold_words: int
    test_words: int
    segmented: int
    tagged: int
    iv_tags: int | None
    iv_tagged: int | None
    oov_tags: int | None
    oov_tagged: int | None
    multi_pos_words: int | None
    multi_pos_tagged: int | None
    baseline_tagged: int | None

    @property
    def precision(self) -> float:
        return _frac(self.tagged, self.test_words)

    @property
    def recall(self) -> float:
        return _frac(self.tagged, self.gold_words)

    @property
    def f(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    @property
    def relative_precision(self) -> float:
        return _frac(self.tagged, self.segmented)

    @property
    def segmentation_identical(self) -> bool:
        return self.segmented == self.gold_words == self.test_words

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates."""
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f": self.f,
            "relative_precision": self.relative_precision,
            "cws_precision": _frac(self.segmented, self.test_words),
            "accuracy": self.recall,
            "iv_accuracy": _opt(self.iv_tagged, self.iv_tags),
            "oov_accuracy": _opt(self.oov_tagged, self.oov_tags),
            "multi_pos_accuracy": _opt(self.multi_pos_tagged, self.multi_pos_words),
            "baseline_accuracy": _opt(self.baseline_tagged, self.gold_words),
            "oov_pos_tag_rate": _opt(self.oov_tags, self.gold_words),
            "segmentation_identical": self.segmentation_identical,
            "lines": self.lines,
            "gold_words": self.gold_words,
            "test_words": self.test_words,
            "correctly_segmented": self.segmented,
            "correctly_tagged": self.tagged,
            "iv_pos_tags": self.iv_tags,
            "iv_correct": self.iv_tagged,
            "oov_pos_tags": self.oov_tags,
            "oov_correct": self.oov_tagged,
            "multi_pos_tokens": self.multi_pos_words,
            "multi_pos_correct": self.multi_pos_tagged,
            "baseline_correct": self.baseline_tagged,
        }


def score_pos(
    gold: Sequence[Sequence[Token]],
    test: Sequence[Sequence[Token]],
    training: PosTraining | None = None,
) -> PosScore:
    """Score tagged sentences (paired by index) against the gold sentences."""
    if len(gold) != len(test):
        raise ValueError(f"{len(gold)} gold lines but {len(test)} test lines")
    n_gold = n_test = segmented = tagged = 0
    iv = iv_ok = oov = oov_ok = multi = multi_ok = base_ok = 0
    multi_words: set[str] = set()
    baseline: dict[str, str | None] = {}
    if training is not None:
        # Multi-POS: seen in training, >1 tag over training and gold test data.
        gold_tags: dict[str, set[str]] = defaultdict(set)
        for sentence in gold:
            for word, tag in sentence:
                gold_tags[word].add(tag)
        multi_words = {
            w
            for w, tags in gold_tags.items()
            if w in training.word_tags and len(tags | training.word_tags[w].keys()) > 1
        }
        multi_words |= {w for w, c in training.word_tags.items() if len(c) > 1}
        baseline = baseline_tagger(training)
    for g, t in zip(gold, test, strict=True):
        n_gold += len(g)
        n_test += len(t)
        correct = [False] * len(g)
        for i, j in match_words([w for w, _ in g], [w for w, _ in t]):
            segmented += 1
            if g[i][1] == t[j][1]:
                tagged += 1
                correct[i] = True
        if training is None:
            continue
        for (word, tag), ok in zip(g, correct, strict=True):
            seen = training.word_tags.get(word)
            if seen is not None and tag in seen:
                iv += 1
                iv_ok += ok
            else:
                oov += 1
                oov_ok += ok
            if word in multi_words:
                multi += 1
                multi_ok += ok
            guess = baseline.get(word, baseline[""])
            base_ok += guess is not None and guess == tag
    has = training is not None
    return PosScore(
        lines=len(gold),
        gold_words=n_gold,
        test_words=n_test,
        segmented=segmented,
        tagged=tagged,
        iv_tags=iv if has else None,
        iv_tagged=iv_ok if has else None,
        oov_tags=oov if has else None,
        oov_tagged=oov_ok if has else None,
        multi_pos_words=multi if has else None,
        multi_pos_tagged=multi_ok if has else None,
        baseline_tagged=base_ok if has else None,
    )


def score_pos_files(
    gold: Path | str,
    test: Path | str,
    train: Path | str | None = None,
    *,
    encoding: str = "utf-8",
) -> dict[str, Any]:
    """Score a word/TAG test file against the gold file (`PosScore.to_dict`)."""
    return score_pos(*read_pos_files(gold, test, train, encoding=encoding)).to_dict()


def read_pos_files(
    gold: Path | str,
    test: Path | str,
    train: Path | str | None = None,
    *,
    encoding: str = "utf-8",
) -> tuple[list[list[Token]], list[list[Token]], PosTraining | None]:
    """The gold and test word/TAG files (the same number of lines) and the training
    file's lexicon, as `onsite score pos` reads them."""
    gold_s = read_tagged(gold, encoding)
    test_s = read_tagged(test, encoding)
    check_line_counts(gold, test, len(gold_s), len(test_s))
    training = None if train is None else PosTraining.from_sentences(read_tagged(train, encoding))
    return gold_s, test_s, training
