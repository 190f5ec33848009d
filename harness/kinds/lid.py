"""The `lid` kind: spoken language identification. Audio in, a language code out.

Test set (docs/kind-lid.md): a directory of mono audio files named ``<utt-id>.wav``
(or .flac ...) and a ``lang`` file of ``<utt-id> <language code>`` lines; blank
lines and ``#`` comments are skipped. Optional ``conditions.tsv``
(``<utt-id><TAB><label>``) labels items, e.g. by duration class.

Item input: ``{"audio", "sample_rate"}``; the answer ``{"language": "<code>"}``.
Scores (scoring.lid): accuracy (the headline), per-language recall and
precision, and the confusion matrix (reference -> answered -> count); an item
with no answer (a timeout, a crash) counts as wrong, answered as ``"-"``.
Speed: real-time factor, as for asr. `onsite score lid --ref lang --hyp
answers.jsonl` scores saved files the same way.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import Problem, TestSetError
from harness.kinds.base import (
    ENCODING_ARG,
    RATE_ADDITIVE,
    RTF,
    FromRun,
    ItemStatistics,
    JobData,
    Outputs,
    Plot,
    ScoreFamily,
    TaskConfig,
    TaskKind,
    arg,
    audio_options,
    jsonl,
    pct,
    real_time_factor,
    write_file,
)
from harness.kinds.formats import plain_id
from harness.testsets import TestSet, audio_testset
from scoring.errors import FormatError
from scoring.lid import CODE, score_lid

if TYPE_CHECKING:
    from scoring.plots import PlotFiles

__all__ = ["LID", "score_lid"]

EXAMPLE = '{"language": "en"} (a BCP 47 code such as "en", "zh", "yue", "en-GB")'


def _problem(exc: FormatError) -> Problem:
    return Problem(Path(exc.path), "", exc.problem, exc.fix, exc.line)


def _load(root: Path, task: TaskConfig) -> TestSet:
    from scoring.lid import read_language_table

    lang = root / "lang"
    if not lang.is_file():
        raise TestSetError(
            [Problem(lang, "", "the test set has no 'lang' file", "write '<utt-id> <code>' lines")]
        )
    encoding = getattr(task, "encoding", None)
    found: list[FormatError] = []
    try:
        references = read_language_table(lang, found, encoding)
    except FormatError as exc:
        raise TestSetError([_problem(exc)]) from exc
    if found:
        raise TestSetError([_problem(exc) for exc in found])
    conditions: dict[str, str] = {}
    labels = root / "conditions.tsv"
    if labels.is_file():
        from scoring.charsets import read_lines

        try:
            lines = read_lines(labels, encoding)
        except FormatError as exc:
            raise TestSetError([_problem(exc)]) from exc
        for number, line in enumerate(lines, 1):
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


def _answers(outputs: Outputs) -> dict[str, str | None]:
    return {k: str(v["language"]) for k, v in outputs.items() if v is not None and "language" in v}


def _score(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    return score_lid(testset.references(), _answers(outputs)).to_dict()


def _items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each item: answered with its language or not."""
    from scoring.lid import item_hits

    return item_hits(testset.references(), _answers(outputs))


def _aggregate(task: TaskConfig, hits: Sequence[bool]) -> float:
    from scoring.lid import accuracy

    return accuracy(hits)


def _detail(scores: Mapping[str, Any]) -> str:
    """The language recognized worst, and the unanswered items."""
    languages = [f for f in scores.get("languages", []) if isinstance(f, Mapping)]
    if not languages:
        return ""
    worst = min(languages, key=lambda f: (f["recall"], f["language"]))
    unanswered = scores.get("unanswered", 0)
    return f"worst {worst['language']} {pct(worst['recall'])}, {unanswered} unanswered"


def _plots(task: str, metric: str, scores: Mapping[str, Mapping[str, Any]]) -> list[Plot]:
    plots: list[Plot] = []
    for system, figures in scores.items():
        confusion = figures.get("confusion")
        if isinstance(confusion, Mapping) and confusion:
            title = f"{task}: {system} confusion"

            def draw(stem: Path, c: Mapping[str, Any] = confusion, t: str = title) -> PlotFiles:
                from scoring.plots import plot_confusion

                return plot_confusion(c, stem, t)

            plots.append((f"{system}: confusion matrix", draw))
    return plots


# --------------------------------------------------------------------------- onsite score


def _score_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.lid import read_language_answers, read_language_table

    encoding = getattr(args, "encoding", None)
    references = read_language_table(args.ref, encoding=encoding)
    answers = read_language_answers(args.hyp, encoding)
    unknown = sorted(set(answers) - set(references))
    if unknown:
        raise ValueError(
            f"{args.hyp}: ids not in {args.ref}: {', '.join(unknown[:5])}; answer only the "
            "reference's ids"
        )
    # The table shows the totals and one line per language; --json has the matrix too.
    return score_lid(references, answers).to_dict()


def write_lid_jsonl(job: JobData, references: bool) -> str:
    """The answers as `onsite score lid --hyp` reads them; the references are the test
    set's own ``<utt-id> <code>`` lines (`--ref`)."""
    if references:
        return "".join(f"{plain_id(job, i, 'lid')} {i.reference}\n" for i in job.testset.items)
    answered = ((i.id, job.answer(i.id)) for i in job.testset.items)
    return jsonl([{"id": k, "language": a["language"]} for k, a in answered if a is not None])


def _run_args(job: JobData, directory: Path) -> dict[str, Any]:
    return {
        "ref": write_file(job, directory, write_lid_jsonl, "lang", True),
        "hyp": write_file(job, directory, write_lid_jsonl, "hyp.jsonl", False),
    }


LID = TaskKind(
    name="lid",
    text_encodings=True,
    summary="spoken language identification: audio in, a language code out",
    options_model=audio_options,
    max_output_bytes=4 << 10,
    load=_load,
    check_output=_check_output,
    score=_score,
    metric=lambda task: "accuracy",
    metric_labels={"accuracy": "accuracy"},
    # `accuracy` is `rate`: hits over items, an int over an int.
    statistics=ItemStatistics(_items, _aggregate, RATE_ADDITIVE),
    unit=RTF,
    speed=real_time_factor,
    detail=_detail,
    plots=_plots,
    writers={"score-jsonl": write_lid_jsonl},
    score_families={
        "lid": ScoreFamily(
            _score_files,
            "language identification: accuracy, per-language recall, confusion matrix",
            (
                arg("--ref", required=True, help="'<utt-id> <language code>' lines"),
                arg("--hyp", required=True, help='JSON lines {"id", "language"}'),
                ENCODING_ARG,
            ),
            tables=("languages",),
        )
    },
    from_run={"lid": FromRun(_run_args)},
)

KINDS = (LID,)
