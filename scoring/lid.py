"""Spoken language identification: accuracy, per-language recall and precision, confusion.

Conventions (docs/kind-lid.md):

* A code is a BCP 47 tag as test sets write them ("en", "zh", "yue", "en-GB",
  "zh-Hant"); codes compare without regard to case, as BCP 47 says.
* Accuracy is correct answers over every reference item; an item with no answer
  counts as wrong and is answered as ``"-"`` in the confusion matrix.
* Precision of a language is its correct answers over the items answered with
  it (None when none was).

Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .charsets import read_lines
from .errors import FormatError

__all__ = [
    "CODE",
    "NO_ANSWER",
    "LanguageFigures",
    "LidScores",
    "accuracy",
    "item_hits",
    "read_language_answers",
    "read_language_table",
    "score_lid",
]

CODE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
"""A BCP 47 language tag as test sets write them."""
NO_ANSWER = "-"


@dataclass(frozen=True)
class LanguageFigures:
    """One reference language's items, hits, recall, and precision of answering it."""

    language: str
    items: int
    correct: int
    recall: float
    precision: float | None  # None when no item was answered with this language


@dataclass(frozen=True)
class LidScores:
    """Accuracy over every item, per-language figures and the confusion matrix."""

    items: int
    correct: int
    unanswered: int
    accuracy: float
    languages: tuple[LanguageFigures, ...]
    # reference language -> answered language (or "-") -> count
    confusion: Mapping[str, Mapping[str, int]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: fractions, and the confusion matrix as nested objects."""
        return {
            "items": self.items,
            "correct": self.correct,
            "unanswered": self.unanswered,
            "accuracy": self.accuracy,
            "languages": [vars(f) for f in self.languages],
            "confusion": {ref: dict(row) for ref, row in self.confusion.items()},
        }


def accuracy(hits: Iterable[bool]) -> float:
    """Correct items over all items (0.0 for none): the headline from per-item hits."""
    marks = list(hits)
    return sum(marks) / len(marks) if marks else 0.0


def _answered(hyp: str | None) -> str:
    return hyp.lower() if isinstance(hyp, str) else NO_ANSWER


def score_lid(references: Mapping[str, str], answers: Mapping[str, str | None]) -> LidScores:
    """Score answers against reference languages; an item missing from answers is wrong."""
    confusion: dict[str, dict[str, int]] = {}
    answered_as: dict[str, int] = {}
    hits: list[bool] = []
    unanswered = 0
    for item, reference in references.items():
        ref = reference.lower()
        got = _answered(answers.get(item))
        if got == NO_ANSWER:
            unanswered += 1
        else:
            answered_as[got] = answered_as.get(got, 0) + 1
        hits.append(got == ref)
        row = confusion.setdefault(ref, {})
        row[got] = row.get(got, 0) + 1
    languages = []
    for ref in sorted(confusion):
        row = confusion[ref]
        items = sum(row.values())
        right = row.get(ref, 0)
        said = answered_as.get(ref, 0)
        languages.append(
            LanguageFigures(ref, items, right, right / items, right / said if said else None)
        )
    return LidScores(
        items=len(hits),
        correct=sum(hits),
        unanswered=unanswered,
        accuracy=accuracy(hits),
        languages=tuple(languages),
        confusion={ref: dict(sorted(row.items())) for ref, row in sorted(confusion.items())},
    )


def item_hits(references: Mapping[str, str], answers: Mapping[str, str | None]) -> dict[str, bool]:
    """Per item: was it answered with its reference language (what `accuracy` averages)."""
    return {item: _answered(answers.get(item)) == ref.lower() for item, ref in references.items()}


def read_language_table(
    path: str | Path, problems: list[FormatError] | None = None, encoding: str | None = None
) -> dict[str, str]:
    """``<utt-id> <code>`` lines (blank lines and ``#`` comments skipped).

    A line without two fields, a code that is no BCP 47 tag or an id given twice
    is a FormatError naming the line and the fix: raised, or, given a `problems`
    list, added to it and the line skipped (a test set's author sees every one).
    ``encoding`` is the file's (scoring.charsets; None: UTF-8): bytes that do not
    decode are a FormatError naming the line and the encoding the file reads as.
    """
    path = Path(path)
    lines = read_lines(path, encoding)
    table: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        problem: FormatError | None = None
        if len(parts) != 2:
            problem = FormatError(
                path, number, "expected '<utt-id> <language code>'", "e.g. 'utt01 en'"
            )
        elif not CODE.match(parts[1]):
            problem = FormatError(
                path,
                number,
                f"{parts[1]!r} is not a language code",
                'write a BCP 47 code such as "en", "zh", "yue" or "en-GB"',
            )
        elif parts[0] in table:
            problem = FormatError(
                path, number, f"utt-id {parts[0]!r} appears twice", "keep one line"
            )
        if problem is None:
            table[parts[0]] = parts[1]
        elif problems is None:
            raise problem
        else:
            problems.append(problem)
    return table


def read_language_answers(path: str | Path, encoding: str | None = None) -> dict[str, str | None]:
    """JSON lines ``{"id", "language"}`` in ``encoding`` (scoring.charsets; None:
    UTF-8); errors name the line and the fix."""
    path = Path(path)
    answers: dict[str, str | None] = {}
    for number, line in enumerate(read_lines(path, encoding), 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            item, language = data["id"], data.get("language")
            if not isinstance(item, str) or (
                language is not None and not isinstance(language, str)
            ):
                raise TypeError("id and language must be strings")
        except (ValueError, KeyError, TypeError) as exc:
            raise FormatError(
                path, number, f"bad line ({exc})", 'write {"id": "utt01", "language": "en"}'
            ) from None
        if item in answers:
            raise FormatError(path, number, f"id {item!r} appears twice", "keep one line per id")
        answers[item] = language
    return answers
