"""Summarization and keyword extraction scored by expert judgement (HTRDP 2004).

Experts rate each system's summary of a document from 0 to 5 and its keyword
list from 0 to 3 (survey Tables 58 and 59); a system's result per task is
the sum of its ratings over all documents (and experts), as in Table 60.
Sums are only comparable when every system was rated on the same documents
by the same experts, so a missing rating is an error unless allowed.

The criteria tables define integer ratings, but the published totals
(e.g. 294.4) are not integers, so fractional ratings within range are accepted.

File format (UTF-8, tab-separated, ``#`` comments and blank lines skipped)::

    task<TAB>system<TAB>document<TAB>expert<TAB>score

with task ``summary`` (0..5) or ``keywords`` (0..3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .encoded_text import read_named_lines
from .errors import FormatError

__all__ = [
    "SCALES",
    "ExpertRating",
    "SummarizationReport",
    "SystemTaskScore",
    "read_expert_ratings",
    "score_summarization",
    "score_summarization_files",
]

SCALES: Mapping[str, tuple[float, float]] = {"summary": (0.0, 5.0), "keywords": (0.0, 3.0)}
"""Lowest and highest rating of each task."""


@dataclass(frozen=True)
class ExpertRating:
    """One expert's rating of one system output for one document."""

    task: str
    system: str
    document: str
    expert: str
    score: float


@dataclass(frozen=True)
class SystemTaskScore:
    """A system's ratings on one task, summed and normalised."""

    system: str
    task: str
    total: float
    """Sum over documents and experts (the HTRDP figure)."""
    ratings: int
    documents: int
    experts: int
    mean: float
    """Mean rating on the task's scale."""
    rate: float
    """Mean rating as a fraction of the scale (low..high -> 0..1)."""
    missing: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready scores; `rate` is a fraction 0..1."""
        return {
            "system": self.system,
            "task": self.task,
            "total": self.total,
            "ratings": self.ratings,
            "documents": self.documents,
            "experts": self.experts,
            "mean": self.mean,
            "rate": self.rate,
            "missing": self.missing,
        }


@dataclass(frozen=True)
class SummarizationReport:
    """Per task, the systems' scores ranked by total (best first, ties by name)."""

    tasks: Mapping[str, tuple[SystemTaskScore, ...]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report: task -> list of system scores."""
        return {task: [s.to_dict() for s in rows] for task, rows in self.tasks.items()}


def score_summarization(
    ratings: Iterable[ExpertRating], allow_missing: bool = False
) -> SummarizationReport:
    """Sum each system's ratings per task over documents and experts.

    The design of a task is every (document, expert) pair rated for any
    system; a system lacking one of them is an error unless `allow_missing`
    (then its total covers fewer ratings; `mean` and `rate` stay comparable).
    """
    by_task: dict[str, dict[str, dict[tuple[str, str], float]]] = {}
    for r in ratings:
        if r.task not in SCALES:
            raise ValueError(f"unknown task {r.task!r}; use one of {sorted(SCALES)}")
        low, high = SCALES[r.task]
        if not (math.isfinite(r.score) and low <= r.score <= high):
            raise ValueError(f"{r.task} rating {r.score!r} outside {low:g}..{high:g}")
        cell = by_task.setdefault(r.task, {}).setdefault(r.system, {})
        key = (r.document, r.expert)
        if key in cell:
            raise ValueError(f"{r.task}/{r.system}: {key} rated twice")
        cell[key] = r.score
    if not by_task:
        raise ValueError("no ratings")
    out: dict[str, tuple[SystemTaskScore, ...]] = {}
    for task in sorted(by_task):
        systems = by_task[task]
        low, high = SCALES[task]
        design = set().union(*(set(cells) for cells in systems.values()))
        rows = []
        for system, cells in systems.items():
            missing = design - set(cells)
            if missing and not allow_missing:
                doc, expert = sorted(missing)[0]
                raise ValueError(
                    f"{task}: system {system!r} has no rating of document {doc!r} by "
                    f"expert {expert!r} ({len(missing)} missing in all)"
                )
            total = math.fsum(cells.values())
            mean = total / len(cells)
            rows.append(
                SystemTaskScore(
                    system=system,
                    task=task,
                    total=total,
                    ratings=len(cells),
                    documents=len({d for d, _ in cells}),
                    experts=len({e for _, e in cells}),
                    mean=mean,
                    rate=(mean - low) / (high - low),
                    missing=len(missing),
                )
            )
        rows.sort(key=lambda s: (-s.total, s.system))
        out[task] = tuple(rows)
    return SummarizationReport(out)


def read_expert_ratings(path: str | Path, encoding: str | None = None) -> list[ExpertRating]:
    """Read ``task<TAB>system<TAB>document<TAB>expert<TAB>score`` lines.

    ``encoding`` is the file's (scoring.charsets: gbk, big5, utf-16le ...; None:
    UTF-8, a BOM allowed); a line that does not decode is a FormatError naming it
    and the encoding the file reads as.
    """
    example = "summary<TAB>sysA<TAB>doc07<TAB>E2<TAB>4"
    try:
        lines = read_named_lines(path, encoding)
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror})", "check the path") from None
    out: list[ExpertRating] = []
    seen: dict[tuple[str, str, str, str], int] = {}
    for lineno, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) != 5 or not all(parts):
            raise FormatError(path, lineno, f"{len(parts)} tab-separated fields, need 5", example)
        task, system, document, expert, raw_score = parts
        if task not in SCALES:
            raise FormatError(
                path, lineno, f"unknown task {task!r}", "use 'summary' (0..5) or 'keywords' (0..3)"
            )
        try:
            score = float(raw_score)
        except ValueError:
            score = math.nan
        low, high = SCALES[task]
        if not (math.isfinite(score) and low <= score <= high):
            raise FormatError(
                path,
                lineno,
                f"{task} score {raw_score!r} is not a number in {low:g}..{high:g}",
                f"rate {task} from {low:g} to {high:g}",
            )
        key = (task, system, document, expert)
        if key in seen:
            raise FormatError(
                path,
                lineno,
                f"{expert} rated {system}'s {task} of {document} twice (first on line {seen[key]})",
                "keep one rating",
            )
        seen[key] = lineno
        out.append(ExpertRating(task, system, document, expert, score))
    if not out:
        raise FormatError(path, None, "no ratings", example)
    return out


def score_summarization_files(
    path: Path, allow_missing: bool = False, encoding: str | None = None
) -> dict[str, Any]:
    """Score an expert rating file (in ``encoding``; None: UTF-8); JSON-ready report
    (task -> ranked systems)."""
    ratings = read_expert_ratings(path, encoding)
    try:
        report = score_summarization(ratings, allow_missing)
    except ValueError as exc:
        raise FormatError(
            path, None, str(exc), "rate every system on the same documents by the same experts"
        ) from None
    return report.to_dict()
