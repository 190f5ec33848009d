"""Text categorization scoring as in the HTRDP 2003/2004 evaluations.

Per category precision P_j = l_j / m_j, recall R_j = l_j / n_j and F1; macro
averages over the expert's categories; micro averages over the pooled counts;
and the HTRDP 2004 "classifier general score" (Table 61 of the HTRDP survey),
which gives partial credit for up to two ranked categories per document.

The survey prints F1_j = P*R/(P+R) and MacroF1 = MacroP*MacroR/(MacroP+MacroR)
without the factor 2, but its MicroF1 has it and the published MacroF1 values
(73.96%) exceed the 50% ceiling the printed form allows, so the factor 2 is a
typesetting slip and is used here throughout.

As in the evaluation, precision, recall and F1 use only the system's first
(highest ranked) category; the general score uses both.

File format (UTF-8 by default, a BOM allowed; GBK, Big5, UTF-16 ... with
``encoding``, see `scoring.charsets`; one document per line, ``#`` comments and
blank lines skipped)::

    doc_id<TAB>category[,category2]

In the gold file the categories are the expert's (first = main category); in
the system file they are ranked, best first. A system line may leave the
category field empty (no answer).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from . import charsets
from .encoded_text import refuse_false_utf16
from .errors import FormatError

__all__ = [
    "MAX_CATEGORIES",
    "CategoryScore",
    "TextcatReport",
    "general_score",
    "read_category_file",
    "score_textcat",
    "score_textcat_files",
]

MAX_CATEGORIES = 2
"""Neither the expert nor a system may give more than two categories per document."""

GoldMode = Literal["first", "any"]

# Table 61: the system's ranked answer written as a pattern over A (expert's
# first category), B (expert's second) and X (anything else; X,X stands for X,Y).
_ONE_EXPERT_CATEGORY: dict[tuple[str, ...], float] = {
    ("A",): 1.0,
    ("A", "X"): 0.75,
    ("X", "A"): 0.5,
    ("X",): 0.0,
    ("X", "X"): 0.0,
    (): 0.0,
}
_TWO_EXPERT_CATEGORIES: dict[tuple[str, ...], float] = {
    ("A", "B"): 1.0,
    ("A", "X"): 0.75,
    ("A",): 0.75,
    ("B", "A"): 0.75,
    ("B", "X"): 0.5,
    ("B",): 0.5,
    ("X", "A"): 0.5,
    ("X", "B"): 0.3,
    ("X", "X"): 0.0,
    ("X",): 0.0,
    (): 0.0,
}


def general_score(expert: Sequence[str], system: Sequence[str]) -> float:
    """Table 61 score (0..1) of one document's ranked `system` answer against `expert`."""
    if not 1 <= len(expert) <= MAX_CATEGORIES or len(set(expert)) != len(expert):
        raise ValueError(f"expert categories {list(expert)!r}: give one or two distinct ones")
    if len(system) > MAX_CATEGORIES or len(set(system)) != len(system):
        raise ValueError(f"system categories {list(system)!r}: give at most two distinct ones")
    names = {expert[0]: "A"}
    if len(expert) == 2:
        names[expert[1]] = "B"
    pattern = tuple(names.get(c, "X") for c in system)
    table = _ONE_EXPERT_CATEGORY if len(expert) == 1 else _TWO_EXPERT_CATEGORIES
    return table[pattern]


@dataclass(frozen=True)
class CategoryScore:
    """Counts and rates of one category: n_j gold, m_j predicted, l_j correct."""

    category: str
    gold: int
    predicted: int
    correct: int
    precision: float
    recall: float
    f1: float
    in_macro: bool

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates (fractions)."""
        return {
            "category": self.category,
            "gold": self.gold,
            "predicted": self.predicted,
            "correct": self.correct,
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "in_macro": self.in_macro,
        }


@dataclass(frozen=True)
class TextcatReport:
    """Per category scores, macro and micro averages and the general score."""

    documents: int
    unanswered: int
    gold_mode: str
    categories: tuple[CategoryScore, ...]
    macro_precision: float
    macro_recall: float
    macro_f1: float
    """HTRDP MacroF1: harmonic mean of MacroP and MacroR (survey eq. 38)."""
    mean_category_f1: float
    """Mean of the per-category F1 values (what scikit-learn calls macro F1)."""
    micro_precision: float
    micro_recall: float
    micro_f1: float
    general_score: float
    """Sum of Table 61 scores over the documents (the figure HTRDP published)."""
    general_score_rate: float
    seconds: float | None

    @property
    def docs_per_second(self) -> float | None:
        """Documents classified per second, if the classifying time is known."""
        if self.seconds is None or self.seconds <= 0:
            return None
        return self.documents / self.seconds

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report (rates as fractions 0..1, general score as the HTRDP sum)."""
        return {
            "documents": self.documents,
            "unanswered": self.unanswered,
            "gold_mode": self.gold_mode,
            "macro_precision": self.macro_precision,
            "macro_recall": self.macro_recall,
            "macro_f1": self.macro_f1,
            "mean_category_f1": self.mean_category_f1,
            "micro_precision": self.micro_precision,
            "micro_recall": self.micro_recall,
            "micro_f1": self.micro_f1,
            "general_score": self.general_score,
            "general_score_rate": self.general_score_rate,
            "seconds": self.seconds,
            "docs_per_second": self.docs_per_second,
            "categories": [c.to_dict() for c in self.categories],
        }


def _ratio(num: float, den: float) -> float:
    # 0/0 counts as 0 (a category never predicted has precision 0), the same
    # choice as scikit-learn's zero_division=0, so the averages stay defined.
    return num / den if den else 0.0


def _f1(p: float, r: float) -> float:
    return _ratio(2.0 * p * r, p + r)


def score_textcat(
    gold: Mapping[str, Sequence[str]],
    pred: Mapping[str, Sequence[str]],
    seconds: float | None = None,
    categories: Iterable[str] | None = None,
    gold_mode: GoldMode = "first",
) -> TextcatReport:
    """Score ranked system categories `pred` against expert categories `gold`.

    Documents missing from `pred` are unanswered (no category, score 0).
    `categories` is the predefined category list the macro averages run over
    (the survey's "all categories defined by the expert"); by default the
    categories named in `gold`. With `gold_mode` "first" a document belongs to
    its expert's first category only (single-label P/R/F1); with "any" it
    belongs to every expert category, and the system's first category is
    correct if it is any of them.
    """
    if gold_mode not in ("first", "any"):
        raise ValueError(f"gold_mode must be 'first' or 'any', not {gold_mode!r}")
    if not gold:
        raise ValueError("no gold documents")
    extra = sorted(set(pred) - set(gold))
    if extra:
        raise ValueError(f"{len(extra)} system documents not in the gold set, e.g. {extra[0]!r}")
    for doc, cats in gold.items():
        if not 1 <= len(cats) <= MAX_CATEGORIES or len(set(cats)) != len(cats):
            raise ValueError(f"gold {doc!r}: give one or two distinct categories")
    for doc, cats in pred.items():
        if len(cats) > MAX_CATEGORIES or len(set(cats)) != len(cats):
            raise ValueError(f"system {doc!r}: give at most two distinct categories")

    if categories is None:
        macro_set = sorted({c for cats in gold.values() for c in cats})
    else:
        macro_set = list(dict.fromkeys(categories))
        known = set(macro_set)
        unknown = sorted({c for cats in [*gold.values(), *pred.values()] for c in cats} - known)
        if unknown:
            raise ValueError(f"categories not in the predefined list: {unknown}")
    n: dict[str, int] = dict.fromkeys(macro_set, 0)
    m: dict[str, int] = dict.fromkeys(macro_set, 0)
    ell: dict[str, int] = dict.fromkeys(macro_set, 0)

    total_score = 0.0
    unanswered = 0
    for doc, expert in gold.items():
        system = tuple(pred.get(doc, ()))
        total_score += general_score(expert, system)
        members = expert[:1] if gold_mode == "first" else expert
        for c in members:
            n[c] = n.get(c, 0) + 1
        if not system:
            unanswered += 1
            continue
        first = system[0]
        m[first] = m.get(first, 0) + 1
        if first in members:
            ell[first] = ell.get(first, 0) + 1

    in_macro = set(macro_set)
    # Categories outside the macro set (predicted but never in gold) still
    # count in the micro sums: every answered document is a prediction.
    order = macro_set + sorted(set(m) - in_macro)
    per: list[CategoryScore] = []
    for c in order:
        p = _ratio(ell.get(c, 0), m.get(c, 0))
        r = _ratio(ell.get(c, 0), n.get(c, 0))
        per.append(
            CategoryScore(
                c, n.get(c, 0), m.get(c, 0), ell.get(c, 0), p, r, _f1(p, r), c in in_macro
            )
        )
    macro = [s for s in per if s.in_macro]
    k = len(macro)
    macro_p = sum(s.precision for s in macro) / k if k else 0.0
    macro_r = sum(s.recall for s in macro) / k if k else 0.0
    micro_p = _ratio(sum(s.correct for s in per), sum(s.predicted for s in per))
    micro_r = _ratio(sum(s.correct for s in per), sum(s.gold for s in per))
    if seconds is not None and not seconds >= 0:
        raise ValueError(f"seconds must be a non-negative number, not {seconds!r}")
    return TextcatReport(
        documents=len(gold),
        unanswered=unanswered,
        gold_mode=gold_mode,
        categories=tuple(per),
        macro_precision=macro_p,
        macro_recall=macro_r,
        macro_f1=_f1(macro_p, macro_r),
        mean_category_f1=sum(s.f1 for s in macro) / k if k else 0.0,
        micro_precision=micro_p,
        micro_recall=micro_r,
        micro_f1=_f1(micro_p, micro_r),
        general_score=total_score,
        general_score_rate=total_score / len(gold),
        seconds=seconds,
    )


def _lines(path: str | Path, encoding: str | None = None) -> list[str]:
    """The file's lines in ``encoding`` (None: UTF-8); a line that does not decode is a
    FormatError naming it and the encoding the file reads as."""
    try:
        refuse_false_utf16(path, encoding)
        return charsets.read_lines(path, encoding)
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror})", "check the path") from None


def read_category_file(
    path: str | Path, system: bool = False, encoding: str | None = None
) -> dict[str, tuple[str, ...]]:
    """Read ``doc_id<TAB>cat[,cat2]`` lines into doc id -> ranked categories.

    `system` allows an empty category field (no answer); gold lines need one.
    ``encoding``: the file's (None: UTF-8).
    """
    return {doc: cats for doc, (cats, _) in _read_categories(path, system, encoding).items()}


def _read_categories(
    path: str | Path, system: bool, encoding: str | None = None
) -> dict[str, tuple[tuple[str, ...], int]]:
    out: dict[str, tuple[tuple[str, ...], int]] = {}
    seen: dict[str, int] = {}
    example = "doc017<TAB>TP or doc017<TAB>TP,TN"
    for lineno, line in enumerate(_lines(path, encoding), start=1):
        line = line.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise FormatError(
                path, lineno, f"{len(parts)} tab-separated fields, expected 2", example
            )
        doc = parts[0].strip()
        if not doc:
            raise FormatError(path, lineno, "empty document id", example)
        field = parts[1].strip()
        cats = tuple(c.strip() for c in field.split(",")) if field else ()
        if any(not c for c in cats):
            raise FormatError(path, lineno, "empty category name", example)
        if not cats and not system:
            raise FormatError(path, lineno, "no category for the document", example)
        if len(cats) > MAX_CATEGORIES:
            raise FormatError(
                path, lineno, f"{len(cats)} categories", "give at most two, best first"
            )
        if len(set(cats)) != len(cats):
            raise FormatError(path, lineno, f"category {cats[0]!r} repeated", "name it once")
        if doc in seen:
            raise FormatError(
                path,
                lineno,
                f"duplicate document {doc!r} (first on line {seen[doc]})",
                "give each document one line",
            )
        seen[doc] = lineno
        out[doc] = (cats, lineno)
    if not out:
        raise FormatError(path, None, "no documents", example)
    return out


def score_textcat_files(
    gold: Path,
    pred: Path,
    seconds: float | None = None,
    categories: Iterable[str] | None = None,
    gold_mode: GoldMode = "first",
    encoding: str | None = None,
) -> dict[str, Any]:
    """Score a system category file against a gold file; JSON-ready report.

    A system document absent from the gold file is reported at its line. ``encoding``:
    both files' (None: UTF-8).
    """
    g = _read_categories(gold, system=False, encoding=encoding)
    p = _read_categories(pred, system=True, encoding=encoding)
    for doc, (_, lineno) in p.items():
        if doc not in g:
            raise FormatError(
                pred,
                lineno,
                f"document {doc!r} is not in the gold file {Path(gold).name}",
                "remove it or check the document ids",
            )
    if categories is not None:
        categories = list(categories)
        known = set(categories)
        for path, table in ((gold, g), (pred, p)):
            for doc, (cats, lineno) in table.items():
                bad = [c for c in cats if c not in known]
                if bad:
                    raise FormatError(
                        path,
                        lineno,
                        f"document {doc!r}: category {bad[0]!r} is not predefined",
                        "use one of the predefined category codes",
                    )
    return score_textcat(
        {d: c for d, (c, _) in g.items()},
        {d: c for d, (c, _) in p.items()},
        seconds,
        categories,
        gold_mode,
    ).to_dict()
