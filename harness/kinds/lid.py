"""The `lid` kind: spoken language identification. Audio in, a language code out.

Test set (docs/kind-lid.md): a directory of mono audio files named ``<utt-id>.wav``
(or .flac ...) and a ``lang`` file of ``<utt-id> <language code>`` lines; blank
lines and ``#`` comments are skipped. Optional ``conditions.tsv``
(``<utt-id><TAB><label>``) labels items, e.g. by duration class.

Item input: ``{"audio", "sample_rate"}``; the answer ``{"language": "<code>"}``.
Scores: accuracy (the headline), per-language recall and precision, and the
confusion matrix (reference -> answered -> count); an item with no answer
(a timeout, a crash) counts as wrong, answered as ``"-"``. Speed: real-time
factor, as for asr. `onsite score lid --ref lang --hyp answers.jsonl` scores
saved files the same way.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from ..errors import Problem, TestSetError
from ..testsets import TestSet, audio_testset
from .base import (
    RTF,
    KindOptions,
    Outputs,
    Plot,
    ScoreFamily,
    TaskConfig,
    TaskKind,
    pct,
    real_time_factor,
)

if TYPE_CHECKING:
    from scoring.plots import PlotFiles

# A BCP 47 language tag as test sets write them: "en", "zh", "yue", "zh-Hant", "en-GB".
CODE = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$")
NO_ANSWER = "-"
EXAMPLE = '{"language": "en"} (a BCP 47 code such as "en", "zh", "yue", "en-GB")'


class LidOptions(KindOptions):
    """lid: the sample rates accepted; items at other rates are refused, never resampled."""

    sample_rates: Annotated[list[Annotated[int, Field(gt=0)]], Field(min_length=1)] = [16000]


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


def score_lid(references: Mapping[str, str], answers: Mapping[str, str | None]) -> LidScores:
    """Score answers against reference languages; an item missing from answers is wrong.

    Codes compare case-insensitively ("en-GB" equals "en-gb"), as BCP 47 says.
    """
    confusion: dict[str, dict[str, int]] = {}
    answered_as: dict[str, int] = {}
    correct = unanswered = 0
    for item, reference in references.items():
        ref = reference.lower()
        hyp = answers.get(item)
        got = hyp.lower() if isinstance(hyp, str) else NO_ANSWER
        if got == NO_ANSWER:
            unanswered += 1
        else:
            answered_as[got] = answered_as.get(got, 0) + 1
        correct += got == ref
        row = confusion.setdefault(ref, {})
        row[got] = row.get(got, 0) + 1
    languages = []
    for ref in sorted(confusion):
        row = confusion[ref]
        items = sum(row.values())
        hits = row.get(ref, 0)
        said = answered_as.get(ref, 0)
        languages.append(
            LanguageFigures(ref, items, hits, hits / items, hits / said if said else None)
        )
    total = len(references)
    return LidScores(
        items=total,
        correct=correct,
        unanswered=unanswered,
        accuracy=correct / total if total else 0.0,
        languages=tuple(languages),
        confusion={ref: dict(sorted(row.items())) for ref, row in sorted(confusion.items())},
    )


def read_language_table(path: Path) -> dict[str, str]:
    """``<utt-id> <code>`` lines; errors name the file, the line and the fix."""
    table: dict[str, str] = {}
    problems: list[Problem] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise TestSetError([Problem(path, "", "not UTF-8", "save the file as UTF-8")]) from exc
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            problems.append(
                Problem(path, "", "expected '<utt-id> <language code>'", "e.g. 'utt01 en'", number)
            )
        elif not CODE.match(parts[1]):
            problems.append(
                Problem(
                    path,
                    "",
                    f"{parts[1]!r} is not a language code",
                    'write a BCP 47 code such as "en", "zh", "yue" or "en-GB"',
                    number,
                )
            )
        elif parts[0] in table:
            problems.append(
                Problem(path, "", f"utt-id {parts[0]!r} appears twice", "keep one line", number)
            )
        else:
            table[parts[0]] = parts[1]
    if problems:
        raise TestSetError(problems)
    return table


def _load(root: Path, task: TaskConfig) -> TestSet:
    lang = root / "lang"
    if not lang.is_file():
        raise TestSetError(
            [Problem(lang, "", "the test set has no 'lang' file", "write '<utt-id> <code>' lines")]
        )
    references = read_language_table(lang)
    conditions: dict[str, str] = {}
    labels = root / "conditions.tsv"
    if labels.is_file():
        for number, line in enumerate(labels.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            item, tab, label = line.partition("\t")
            if not tab or item not in references:
                raise TestSetError(
                    [
                        Problem(
                            labels,
                            "",
                            f"expected '<utt-id>\\t<label>' for an id of {lang.name}",
                            "label only the ids of the lang file, separated by a tab",
                            number,
                        )
                    ]
                )
            conditions[item] = label.strip()
    return audio_testset(root, references, task.sample_rates, conditions, lang)


def _check_output(output: Mapping[str, Any]) -> str | None:
    language = output.get("language")
    if not isinstance(language, str) or not CODE.match(language):
        return f"output needs a language code, e.g. {EXAMPLE}"
    return None


def _score(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    answers = {
        k: str(v["language"]) for k, v in outputs.items() if v is not None and "language" in v
    }
    return score_lid(testset.references(), answers).to_dict()


def _detail(scores: Mapping[str, Any]) -> str:
    """The language recognized worst, and the unanswered items."""
    languages = [f for f in scores.get("languages", []) if isinstance(f, Mapping)]
    if not languages:
        return ""
    worst = min(languages, key=lambda f: (f["recall"], f["language"]))
    unanswered = scores.get("unanswered", 0)
    return f"worst {worst['language']} {pct(worst['recall'])}, {unanswered} unanswered"


# --------------------------------------------------------------------------- report


def _plot_confusion(
    confusion: Mapping[str, Mapping[str, int]], stem: Path, title: str
) -> PlotFiles:
    """The confusion matrix as a heat map with counts, references down, answers across."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from scoring.plots import PlotFiles

    rows = sorted(confusion)
    columns = sorted({c for row in confusion.values() for c in row} | set(rows))
    if not rows:
        raise ValueError("no items to draw")
    counts = [[confusion[r].get(c, 0) for c in columns] for r in rows]
    # Fixed salt and text as <text>: the same SVG on every run, searchable in the report.
    with matplotlib.rc_context({"svg.hashsalt": "onsite-lid", "svg.fonttype": "none"}):
        fig = Figure(
            figsize=(1.6 + 0.6 * len(columns), 1.4 + 0.5 * len(rows)), layout="constrained"
        )
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        ax.imshow(counts, cmap="Blues", aspect="auto")
        ax.set_xticks(range(len(columns)), columns)
        ax.set_yticks(range(len(rows)), rows)
        ax.set_xlabel("answered")
        ax.set_ylabel("reference")
        ax.set_title(title)
        peak = max(max(r) for r in counts) or 1
        for y, row in enumerate(counts):
            for x, n in enumerate(row):
                colour = "white" if n > peak / 2 else "black"
                ax.text(x, y, str(n), ha="center", va="center", color=colour)
        stem.parent.mkdir(parents=True, exist_ok=True)
        png, svg = stem.parent / f"{stem.name}.png", stem.parent / f"{stem.name}.svg"
        fig.savefig(png, format="png", dpi=100, metadata={"Software": None})
        fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
    return PlotFiles(png, svg)


def _plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    plots: list[Plot] = []
    for system, figures in scores.items():
        confusion = figures.get("confusion")
        if isinstance(confusion, Mapping) and confusion:
            title = f"{task}: {system} confusion"

            def draw(stem: Path, c: Mapping[str, Any] = confusion, t: str = title) -> PlotFiles:
                return _plot_confusion(c, stem, t)

            plots.append((f"{system}: confusion matrix", draw))
    return plots


# --------------------------------------------------------------------------- onsite score


def _read_answers(path: Path) -> dict[str, str | None]:
    """JSON lines {"id", "language"}; errors name the line and the fix."""
    answers: dict[str, str | None] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
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
            raise ValueError(
                f'{path}:{number}: bad line ({exc}); write {{"id": "utt01", "language": "en"}}'
            ) from exc
        if item in answers:
            raise ValueError(f"{path}:{number}: id {item!r} appears twice; keep one line per id")
        answers[item] = language
    return answers


def _score_files(args: argparse.Namespace) -> dict[str, Any]:
    try:
        references = read_language_table(Path(args.ref))
    except TestSetError as exc:
        raise ValueError(str(exc)) from exc
    answers = _read_answers(Path(args.hyp))
    unknown = sorted(set(answers) - set(references))
    if unknown:
        raise ValueError(
            f"{args.hyp}: ids not in {args.ref}: {', '.join(unknown[:5])}; answer only the "
            "reference's ids"
        )
    # The table shows the totals and one line per language; --json has the matrix too.
    return score_lid(references, answers).to_dict()


LID = TaskKind(
    name="lid",
    summary="spoken language identification: audio in, a language code out",
    options=LidOptions,
    max_output_bytes=4 << 10,
    load=_load,
    check_output=_check_output,
    score=_score,
    metric=lambda task: "accuracy",
    metric_labels={"accuracy": "accuracy"},
    unit=RTF,
    speed=real_time_factor,
    detail=_detail,
    plots=_plots,
    formats=("score-jsonl", "jsonl"),
    score_families={
        "lid": ScoreFamily(
            _score_files,
            "language identification: accuracy, per-language recall, confusion matrix",
            (
                (("--ref",), {"required": True, "help": "'<utt-id> <language code>' lines"}),
                (("--hyp",), {"required": True, "help": 'JSON lines {"id", "language"}'}),
            ),
            tables=("languages",),
        )
    },
)

KINDS = (LID,)
