"""The `summarization` kind: a document in, its summary out, within a length limit.

Test set (docs/text-task-kinds.md, "summarization"): ``docs/<doc_id>.txt`` (the
documents, UTF-8), one or more ``ref*.jsonl`` files of reference summaries
(``{"id": doc_id, "text": summary}`` per line, an id repeated for a second
reference: the files `onsite score rouge --ref` reads) and a ``lang`` file
(``zh`` or ``en``). Every document with a reference is an item.

The task states the limit (``length_limit``, counted in ``length_unit``:
``char`` = non-space characters, ``word`` = whitespace-separated words); the
item carries it to the system. A summary over the limit is ``invalid_output``
(``over_limit = "invalid"``, the default) or is cut at the limit before
scoring (``"truncate"``, as DUC and ROUGE-1.5.5's ``-l``/``-b`` do).

Scores: ROUGE-1/2/L (scoring.rouge, ROUGE-1.5.5's conventions, Chinese at
character level) and CESTA's significant-word o, u and o&u (scoring.cesta,
against the first reference of each document). The headline is ROUGE-2 F
unless the task's ``headline`` says otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, cast

from pydantic import Field

from scoring.errors import FormatError
from scoring.rouge import (
    Lang,
    LengthUnit,
    read_summaries,
    score_rouge,
    summary_length,
    truncate_summary,
)

from ..errors import Problem, TestSetError
from ..testsets import InvalidItem, TestItem, TestSet
from .base import KindOptions, Outputs, TaskConfig, TaskKind, pct
from .text import KCHARS_PER_SECOND, read_document, unlisted_documents

LANGS = ("zh", "en")
HEADLINES = {"rouge1": "ROUGE-1 F", "rouge2": "ROUGE-2 F", "rougeL": "ROUGE-L F"}
EXAMPLE = '{"text": "the summary, one sentence per line"}'


class SummarizationOptions(KindOptions):
    """summarization: the length limit, what counts toward it, and what over it means."""

    length_limit: Annotated[int, Field(gt=0)]
    length_unit: Literal["char", "word"] = "char"
    over_limit: Literal["invalid", "truncate"] = "invalid"
    # Which ROUGE F heads the leaderboard (docs/text-task-kinds.md says why rouge2).
    headline: Literal["rouge1", "rouge2", "rougeL"] = "rouge2"


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


def _read_lang(root: Path) -> Lang:
    path = root / "lang"
    fix = 'write one code: "zh" (scored at character level) or "en"'
    if not path.is_file():
        raise TestSetError([Problem(path, "", "the test set has no lang file", fix)])
    try:
        words = path.read_text(encoding="utf-8-sig").split()
    except UnicodeDecodeError:
        words = []
    if len(words) != 1 or words[0].lower() not in LANGS:
        raise TestSetError([Problem(path, "", f"expected zh or en, found {words[:3]}", fix)])
    return cast(Lang, words[0].lower())


def _read_refs(root: Path) -> dict[str, list[str]]:
    fix = 'give ref1.jsonl: one {"id": "<document id>", "text": "<reference summary>"} per line'
    paths = sorted(p for p in root.glob("ref*.jsonl") if p.is_file())
    if not paths:
        raise TestSetError([Problem(root / "ref1.jsonl", "", "no reference summaries", fix)])
    refs: dict[str, list[str]] = {}
    for path in paths:
        try:
            found = read_summaries(path, several=True)
        except FormatError as exc:
            raise TestSetError(
                [Problem(Path(exc.path), "", exc.problem, exc.fix, exc.line)]
            ) from exc
        except UnicodeDecodeError as exc:
            reason = f"not UTF-8 (byte {exc.start})"
            raise TestSetError([Problem(path, "", reason, "convert it to UTF-8")]) from exc
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
    lang = _read_lang(root)
    refs = _read_refs(root)
    limit = int(_option(task, "length_limit", 0)) or 1 << 30
    unit = cast(LengthUnit, _option(task, "length_unit", "char"))
    over = str(_option(task, "over_limit", "invalid"))
    docs = root / "docs"
    items: list[TestItem] = []
    invalid: list[InvalidItem] = []
    for doc_id, texts in refs.items():
        text, bad = read_document(docs, doc_id)
        if bad is not None:
            invalid.append(bad)
            continue
        items.append(
            TestItem(
                id=doc_id,
                files={},
                fields={"text": text, "lang": lang, "length_limit": limit, "length_unit": unit},
                reference=SummaryReference(tuple(texts), lang, limit, unit, over),
                units=float(summary_length(text, "char") or 1),
            )
        )
    warnings = unlisted_documents(docs, refs, "no reference summary; it is not sent")
    return TestSet(root, tuple(items), tuple(invalid), warnings)


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


def _score(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    items = testset.items
    lang: Lang = items[0].reference.lang if items else "en"
    summaries = {
        item.id: scored_summary(item, answer) for item in items if (answer := outputs.get(item.id))
    }
    references = {item.id: list(item.reference.refs) for item in items}
    if not references:
        return {"lang": lang, "documents": 0}
    figures = score_rouge(summaries, references, lang)
    over = [
        item.id
        for item in items
        if (answer := outputs.get(item.id))
        and summary_length(str(answer["text"]), item.reference.unit) > item.reference.limit
    ]
    lengths = [summary_length(s, items[0].reference.unit) for s in summaries.values()]
    figures["truncated"] = over if items[0].reference.over_limit == "truncate" else []
    figures["mean_length"] = math.fsum(lengths) / len(lengths) if lengths else None
    figures.update(_cesta(summaries, references, lang))
    return figures


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


KINDS = (
    TaskKind(
        name="summarization",
        summary="summarization: a document in, its summary within a length limit out",
        options=SummarizationOptions,
        max_output_bytes=256 << 10,
        load=_load,
        check_output=_check_output,
        check_item=_check_item,
        score=_score,
        metric=_headline,
        metric_labels={f"{k}_f": v for k, v in HEADLINES.items()},
        unit=KCHARS_PER_SECOND,
        speed=lambda item, seconds: (item.units or 1.0) / seconds / 1000.0 if seconds > 0 else None,
        detail=_detail,
        # score-jsonl: the summaries as scored, the files `onsite score rouge`/`cesta` read.
        formats=("score-jsonl", "jsonl"),
    ),
)
