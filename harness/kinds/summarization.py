"""The `summarization` kind: a document in, its summary out, within a length limit.

Test set (docs/text-task-kinds.md, "summarization"): ``docs/<doc_id>.txt`` (the
documents, UTF-8), one or more ``ref*.jsonl`` files of reference summaries
(``{"id": doc_id, "text": summary}`` per line, an id repeated for a second
reference: the files `onsite score rouge --ref` reads) and a ``lang`` file
(``zh`` or ``en``). Every document with a reference is an item.

The task states the limit (``length_limit``, counted in ``length_unit``:
``char`` = non-space characters, ``word`` = whitespace-separated words; by
default words for an ``en`` set, as ROUGE-1.5.5's ``-l``, characters for a
``zh`` one); the item carries it to the system. A summary over the limit is
cut at the limit before scoring (``over_limit = "truncate"``, the default, as
DUC and ROUGE-1.5.5's ``-l`` do: the references are cut to the same limit,
scoring.rouge.cut_to_limit) or is ``invalid_output`` (``"invalid"``, a site's
choice when the limit is a rule of the evaluation).

Scores: ROUGE-1/2/L (scoring.rouge, ROUGE-1.5.5's conventions, Chinese at
character level) and CESTA's significant-word o, u and o&u (scoring.cesta,
against the first reference of each document). The headline is ROUGE-2 F
unless the task's ``headline`` says otherwise.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

from harness.errors import Problem, TestSetError
from harness.kinds._panel_files import hyp_encoding
from harness.kinds.base import (
    ENCODING_ARG,
    AdditiveStatistics,
    FromRun,
    ItemStatistics,
    JobData,
    Outputs,
    ScoreFamily,
    TaskConfig,
    TaskKind,
    arg,
    jsonl,
    pct,
    write_file,
)
from harness.kinds.text import KCHARS_PER_SECOND, document_testset
from harness.testsets import TestItem, TestSet, read_text_lines
from scoring.errors import FormatError
from scoring.rouge import (
    Lang,
    LengthUnit,
    default_unit,
    read_summaries,
    rouge_length,
    rouge_warnings,
    score_rouge,
    summary_length,
    truncate_summary,
)

if TYPE_CHECKING:
    from harness.kinds.options import KindOptions

LANGS = ("zh", "en")
HEADLINES = {"rouge1": "ROUGE-1 F", "rouge2": "ROUGE-2 F", "rougeL": "ROUGE-L F"}
EXAMPLE = '{"text": "the summary, one sentence per line"}'


@cache
def _options() -> type[KindOptions]:
    from pydantic import Field

    from harness.kinds.options import KindOptions

    class SummarizationOptions(KindOptions):
        """summarization: the length limit, what counts toward it, and what over it means."""

        length_limit: Annotated[int, Field(gt=0)]
        # None: the test set's lang decides (scoring.rouge.default_unit): word for en, as -l.
        length_unit: Literal["char", "word"] | None = None
        # ROUGE-1.5.5's -l truncates; "invalid" is a site's stricter rule.
        over_limit: Literal["invalid", "truncate"] = "truncate"
        # Which ROUGE F heads the leaderboard (docs/text-task-kinds.md says why rouge2).
        headline: Literal["rouge1", "rouge2", "rougeL"] = "rouge2"

    return SummarizationOptions


def __getattr__(name: str) -> Any:
    # The options model by its name, built on first use (pydantic loads only then).
    if name == "SummarizationOptions":
        return _options()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class SummaryReference:
    """One document's reference summaries, the language and the task's length rule."""

    refs: tuple[str, ...]
    lang: Lang
    limit: int
    unit: LengthUnit
    over_limit: str


def _option(task: TaskConfig, name: str, default: Any) -> Any:
    # Tests may load a test set with no task; the options' defaults then apply.
    return getattr(task, name, default) if task is not None else default


def _read_lang(root: Path, encoding: str | None) -> Lang:
    path = root / "lang"
    fix = 'write one code: "zh" (scored at character level) or "en"'
    if not path.is_file():
        raise TestSetError([Problem(path, "", "the test set has no lang file", fix)])
    # In the task's encoding as the set's other files (a UTF-16 one holds NUL bytes).
    words = " ".join(read_text_lines(path, encoding)).split()
    if len(words) != 1 or words[0].lower() not in LANGS:
        raise TestSetError([Problem(path, "", f"expected zh or en, found {words[:3]}", fix)])
    return cast(Lang, words[0].lower())


def _read_refs(root: Path, encoding: str | None) -> dict[str, list[str]]:
    fix = 'give ref1.jsonl: one {"id": "<document id>", "text": "<reference summary>"} per line'
    paths = sorted(p for p in root.glob("ref*.jsonl") if p.is_file())
    if not paths:
        raise TestSetError([Problem(root / "ref1.jsonl", "", "no reference summaries", fix)])
    refs: dict[str, list[str]] = {}
    for path in paths:
        try:
            found = read_summaries(path, several=True, encoding=encoding)
        except FormatError as exc:
            # The reader's fix names the encoding to read the file with when it is not UTF-8.
            raise TestSetError(
                [Problem(Path(exc.path), "", exc.problem, exc.fix, exc.line)]
            ) from exc
        for doc, texts in found.items():
            if "/" in doc or "\\" in doc or doc.startswith("."):
                # The id names docs/<id>.txt: it must not reach outside docs/.
                problem = f"document id {doc!r} is not a plain file name"
                raise TestSetError([Problem(path, "", problem, "use ids like doc07")])
            if not all(t.strip() for t in texts):
                raise TestSetError(
                    [Problem(path, "", f"document {doc!r} has an empty reference summary", fix)]
                )
            refs.setdefault(doc, []).extend(texts)
    return refs


def _load(root: Path, task: TaskConfig) -> TestSet:
    encoding = _option(task, "encoding", None)
    lang = _read_lang(root, encoding)
    refs = _read_refs(root, encoding)
    limit = int(_option(task, "length_limit", 0)) or 1 << 30
    unit = cast(LengthUnit, _option(task, "length_unit", None) or default_unit(lang))
    over = str(_option(task, "over_limit", "truncate"))

    def item(doc_id: str, text: str, texts: list[str]) -> TestItem:
        return TestItem(
            id=doc_id,
            files={},
            fields={"text": text, "lang": lang, "length_limit": limit, "length_unit": unit},
            reference=SummaryReference(tuple(texts), lang, limit, unit, over),
            units=float(summary_length(text, "char") or 1),
        )

    return document_testset(root, refs, item, "no reference summary; it is not sent", encoding)


def _check_output(output: Mapping[str, Any]) -> str | None:
    if not isinstance(output.get("text"), str):
        return f'output needs a "text" string, e.g. {EXAMPLE}'
    return None


def _check_item(item: TestItem, output: Mapping[str, Any]) -> str | None:
    ref: SummaryReference = item.reference
    length = summary_length(str(output.get("text", "")), ref.unit)
    if ref.over_limit == "invalid" and length > ref.limit:
        unit = "characters" if ref.unit == "char" else "words"
        return (
            f"summary of {length} {unit} is over the limit of {ref.limit} {unit} "
            f"({'non-space characters' if ref.unit == 'char' else 'whitespace-separated words'} "
            "count): shorten it"
        )
    return None


def scored_summary(item: TestItem, output: Mapping[str, Any]) -> str:
    """The summary as scored: the system's text, cut at the limit when the task truncates."""
    ref: SummaryReference = item.reference
    text = str(output["text"])
    if ref.over_limit == "truncate":
        return truncate_summary(text, ref.limit, ref.unit)
    return text


def scored_references(item: TestItem) -> list[str]:
    """The references as scored: cut at the limit too when the task truncates (ROUGE's -l)."""
    ref: SummaryReference = item.reference
    if ref.over_limit == "truncate":
        return [truncate_summary(text, ref.limit, ref.unit) for text in ref.refs]
    return list(ref.refs)


def _summaries(testset: TestSet, outputs: Outputs) -> tuple[dict[str, str], dict[str, list[str]]]:
    """The summaries as scored (answered documents) and each document's references."""
    items = testset.items
    summaries = {
        item.id: scored_summary(item, answer) for item in items if (answer := outputs.get(item.id))
    }
    return summaries, {item.id: scored_references(item) for item in items}


def _score(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    items = testset.items
    lang: Lang = items[0].reference.lang if items else "en"
    summaries, references = _summaries(testset, outputs)
    if not references:
        return {"lang": lang, "documents": 0}
    figures = score_rouge(summaries, references, lang)
    over = [
        item.id
        for item in items
        if (answer := outputs.get(item.id))
        and rouge_length(str(answer["text"]), item.reference.unit) > item.reference.limit
    ]
    lengths = [summary_length(s, items[0].reference.unit) for s in summaries.values()]
    figures["truncated"] = over if items[0].reference.over_limit == "truncate" else []
    figures["mean_length"] = math.fsum(lengths) / len(lengths) if lengths else None
    figures.update(_cesta(summaries, references, lang))
    # As `onsite score rouge` says them: the exact mean against ROUGE-1.5.5's bootstrap
    # estimate (`onsite score rouge --run RUN --average rouge155` gives ROUGE's figure).
    figures["warnings"] = rouge_warnings(lang, "exact", items[0].reference.unit)
    return figures


def _items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each document's headline F (0 unanswered): the system's is their mean."""
    summaries, references = _summaries(testset, outputs)
    if not references:
        return {}
    lang: Lang = testset.items[0].reference.lang
    key = _headline(task)
    scored = score_rouge(summaries, references, lang)["per_document"]
    return {d["document"]: d[key] for d in scored}


def _aggregate(task: TaskConfig, scores: Sequence[float]) -> float | None:
    # As score_rouge averages over the documents: an exact sum, then the mean.
    return math.fsum(scores) / len(scores) if scores else None


def _mean_vector(task: TaskConfig, score: float) -> Mapping[Hashable, float]:
    return {"f": score, "documents": 1}


def _mean_headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float | None:
    # A float sum: the aggregate's fsum within rounding (1e-12 relative), not to the bit.
    documents = int(sums.get("documents", 0))
    return float(sums.get("f", 0.0)) / documents if documents else None


def _cesta(
    summaries: Mapping[str, str], references: Mapping[str, list[str]], lang: Lang
) -> dict[str, Any]:
    """CESTA o, u, o&u against the first reference; None when fewer than two documents."""
    mt = {doc: summaries.get(doc, "") for doc in references}
    first = {doc: refs[0] for doc, refs in references.items()}
    try:
        from scoring.cesta import score_significant_words  # numpy: only when scoring

        cesta = score_significant_words(mt, first, lang)
    except ValueError:
        return {"cesta_o": None, "cesta_u": None, "cesta_ou": None}
    return {"cesta_o": cesta["o"], "cesta_u": cesta["u"], "cesta_ou": cesta["ou"]}


def _headline(task: TaskConfig) -> str:
    return f"{_option(task, 'headline', 'rouge2')}_f"


def _detail(scores: Mapping[str, Any]) -> str:
    if not isinstance(scores.get("rouge1_f"), int | float):
        return ""
    parts = [
        f"R-1 {pct(scores['rouge1_f'])}",
        f"R-2 {pct(scores.get('rouge2_f'))}",
        f"R-L {pct(scores.get('rougeL_f'))}",
    ]
    if isinstance(scores.get("cesta_ou"), int | float):
        parts.append(f"CESTA o&u {scores['cesta_ou']:.2f}")
    if scores.get("truncated"):
        parts.append(f"{len(scores['truncated'])} cut at the limit")
    return ", ".join(parts)


# --------------------------------------------------------------------------- onsite score


def _score_rouge_files(args: argparse.Namespace) -> dict[str, Any]:
    """ROUGE-1/2/L of one system's summaries against reference summaries."""
    from scoring.rouge import score_rouge_files

    result = score_rouge_files(
        args.hyp,
        args.ref,
        lang=args.lang,
        formula=args.formula,
        alpha=args.alpha,
        length_limit=args.length_limit,
        length_unit=args.length_unit,
        average=args.average,
        encoding=args.encoding,
    )
    if not args.details:
        result.pop("per_document")
    return result


def _score_cesta_files(args: argparse.Namespace) -> dict[str, Any]:
    """CESTA o, u and o&u significant-word scores of one system's texts."""
    from scoring.cesta import read_texts, score_significant_words

    mt = read_texts(args.hyp, "target", args.encoding)
    refs = read_texts(args.ref, "reference", args.encoding)
    try:
        result = score_significant_words(mt, refs, lang=args.lang, threshold=args.threshold)
    except ValueError as exc:
        raise FormatError(args.hyp, None, str(exc), f"give one text per id of {args.ref}") from None
    if not args.details:
        result.pop("per_text")
    return result


def _score_cesta_rank(args: argparse.Namespace) -> dict[str, Any]:
    """Each human ranking (with ties) correlated with a metric over the ranked items."""
    from scoring.cesta import ranking_correlation, read_item_scores, read_rankings

    rankings = read_rankings(args.rankings, args.encoding)
    scores = read_item_scores(args.scores, args.encoding)
    rows = []
    for name, ranks in rankings.items():
        missing = [i for i in ranks if i not in scores]
        if missing:
            raise FormatError(
                args.scores,
                None,
                f"no score for item {missing[0]!r} of ranking {name!r}",
                "score every ranked item",
            )
        corr = ranking_correlation(
            ranks, {i: scores[i] for i in ranks}, higher_is_better=not args.lower_is_better
        )
        rows.append({"ranking": name, **corr})
    rhos = [r["spearman"] for r in rows if r["spearman"] is not None]
    return {
        "rankings": len(rows),
        "mean_spearman": sum(rhos) / len(rhos) if rhos else None,
        "per_ranking": rows,
    }


def _score_expert_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.summarization import score_summarization_files

    return score_summarization_files(args.hyp, encoding=hyp_encoding(args))


_FAMILIES = {
    "summarization": ScoreFamily(
        _score_expert_files,
        "summaries and keywords: expert scores summed per system",
        (
            arg("--hyp", required=True, help="task<TAB>system<TAB>document<TAB>expert<TAB>score"),
            ENCODING_ARG,
        ),
        tables=("summary", "keywords"),
        panel="summary",
    ),
    "rouge": ScoreFamily(
        _score_rouge_files,
        "summaries: ROUGE-1, ROUGE-2, ROUGE-L with ROUGE-1.5.5's conventions",
        (
            arg("--hyp", required=True, help='summaries, JSON lines {"id", "text"}'),
            arg("--ref", required=True, action="append", help="reference summaries; repeatable"),
            arg("--lang", choices=("en", "zh"), default="en", help="zh: character level"),
            arg("--formula", choices=("A", "B"), default="A", help="A pools references, B best"),
            arg("--alpha", type=float, default=0.5, help="F weight of precision (default 0.5)"),
            arg(
                "--length-limit",
                type=int,
                help="cut summaries and references to this many units, as ROUGE's -l (0: none)",
            ),
            arg(
                "--length-unit",
                choices=("char", "word"),
                help="of the limit: word (ROUGE's -l) by default for --lang en; char "
                "(non-space characters) for --lang zh, where ROUGE has no unit",
            ),
            arg(
                "--average",
                choices=("exact", "rouge155"),
                default="exact",
                help="system figures: the exact mean over documents, or ROUGE-1.5.5's "
                "bootstrap mean of 1,000 resamples of rounded values",
            ),
            arg("--details", action="store_true", help="per-document scores too"),
            ENCODING_ARG,
        ),
    ),
    "cesta": ScoreFamily(
        _score_cesta_files,
        "CESTA significant-word score: over-generation o, under-generation u, o&u",
        (
            arg("--hyp", required=True, help='one system\'s texts, JSON lines {"id", "text"}'),
            arg("--ref", required=True, help='reference texts, JSON lines {"id", "text"}'),
            arg("--lang", choices=("en", "zh"), default="en", help="zh: character level"),
            arg("--threshold", type=float, default=1.0, help="significant when S > this"),
            arg("--details", action="store_true", help="per-text scores too"),
            ENCODING_ARG,
        ),
    ),
    "cesta-rank": ScoreFamily(
        _score_cesta_rank,
        "CESTA human rankings with ties ('4 [1 2] 6 [3 5]') correlated with a metric",
        (
            arg("--rankings", required=True, help="name<TAB>ranking lines, best first"),
            arg("--scores", required=True, help="item<TAB>score lines of the metric"),
            arg("--lower-is-better", action="store_true", help="the metric is an error rate"),
            ENCODING_ARG,
        ),
    ),
}


# --------------------------------------------------------------------------- --run and export


def write_summary_jsonl(job: JobData, references: bool) -> str:
    """The summaries as scored, the files `onsite score rouge` and `cesta` read.

    Every completed document has a line: one never answered is an empty summary
    (live ROUGE and CESTA count it so, and `onsite score cesta` needs one text per
    document). With --references one line per reference summary, the id
    repeated, the first reference first; cut at the limit, as scored, when the
    task truncates.
    """
    items = job.testset.items
    if references:
        return jsonl([{"id": i.id, "text": t} for i in items for t in scored_references(i)])
    rows = []
    for item in items:
        answer = job.answer(item.id)
        rows.append({"id": item.id, "text": "" if answer is None else scored_summary(item, answer)})
    return jsonl(rows)


def _lang(job: JobData) -> str:
    return str(job.testset.items[0].reference.lang) if job.testset.items else "en"


def _rouge_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    # The summaries and references are written as scored (cut at the limit when the task
    # truncates): no --length-limit is needed, and none is given. --average is the user's.
    return {
        "hyp": write_file(job, directory, write_summary_jsonl, "hyp.jsonl", False),
        "ref": [write_file(job, directory, write_summary_jsonl, "ref.jsonl", True)],
        "lang": _lang(job),
        "formula": "A",
        "alpha": 0.5,
        "length_limit": None,
        "length_unit": None,
        "details": False,
        "encoding": None,
    }


def _cesta_run_args(job: JobData, directory: Path) -> dict[str, Any]:
    return {
        "hyp": write_file(job, directory, write_summary_jsonl, "hyp.jsonl", False),
        "ref": write_file(job, directory, write_summary_jsonl, "ref.jsonl", True),
        "lang": _lang(job),
        "threshold": 1.0,
        "details": False,
        "encoding": None,
    }


KINDS = (
    TaskKind(
        name="summarization",
        summary="summarization: a document in, its summary within a length limit out",
        options_model=_options,
        max_output_bytes=256 << 10,
        load=_load,
        check_output=_check_output,
        check_item=_check_item,
        score=_score,
        metric=_headline,
        metric_labels={f"{k}_f": v for k, v in HEADLINES.items()},
        statistics=ItemStatistics(
            _items, _aggregate, AdditiveStatistics(_mean_vector, _mean_headline)
        ),
        unit=KCHARS_PER_SECOND,
        speed=lambda item, seconds: (item.units or 1.0) / seconds / 1000.0 if seconds > 0 else None,
        detail=_detail,
        writers={"score-jsonl": write_summary_jsonl},
        score_families=_FAMILIES,
        from_run={
            "rouge": FromRun(_rouge_run_args),
            "cesta": FromRun(_cesta_run_args, same_as={k: f"cesta_{k}" for k in ("o", "u", "ou")}),
        },
        text_encodings=True,
    ),
)
