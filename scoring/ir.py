"""Ad hoc retrieval scoring (MAP, R-precision, P@10) with trec_eval's conventions.

The HTRDP 2003-2005 Chinese web retrieval evaluations reported MAP,
R-precision and P@10 as TREC does, so every rule here follows trec_eval
(usnistgov/trec_eval, the ``map``, ``Rprec`` and ``P_10`` measures):

* A topic's run is ranked by score, highest first; equal scores are broken
  by docno in *descending* byte order (trec_eval's ``comp_sim_docno``), and
  the rank column of the run file is ignored.
* A document is relevant if its qrels judgement is >= `relevance_level`
  (1). Unjudged documents count as not relevant.
* Relevant documents never retrieved add 0 to average precision, which is
  divided by all relevant documents of the topic; R-precision divides by R
  even when fewer than R documents were retrieved; P@10 always divides by 10.
* A topic with judgements but no relevant document scores 0 on all three.
* Averages run over the topics that are both in the qrels and in the run
  (run topics without qrels are ignored). With ``complete=True`` (trec_eval
  ``-c``) they run over every qrels topic, a topic missing from the run
  counting 0.
* Duplicate docnos within a topic are an error, as in trec_eval.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import chain, compress, count
from operator import itemgetter
from pathlib import Path
from typing import Any

from .errors import FormatError

__all__ = [
    "IrReport",
    "Topic",
    "TopicScore",
    "rank_documents",
    "read_qrels",
    "read_run",
    "read_topics",
    "score_ir",
    "score_ir_files",
    "score_topic",
]

P_CUTOFF = 10
"""The cutoff of P@10."""


@dataclass(frozen=True)
class TopicScore:
    """One topic's counts and scores."""

    topic: str
    num_rel: int
    num_ret: int
    num_rel_ret: int
    ap: float
    rprec: float
    p10: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and scores (fractions)."""
        return {
            "num_rel": self.num_rel,
            "num_ret": self.num_ret,
            "num_rel_ret": self.num_rel_ret,
            "ap": self.ap,
            "rprec": self.rprec,
            "p10": self.p10,
        }


@dataclass(frozen=True)
class IrReport:
    """Topic-averaged scores and the per topic detail."""

    map: float
    rprec: float
    p10: float
    per_topic: tuple[TopicScore, ...]
    averaged_over: int
    complete: bool
    relevance_level: int
    ignored_run_topics: tuple[str, ...]
    """Run topics absent from the qrels (not scored, as in trec_eval)."""
    missing_topics: tuple[str, ...]
    """Qrels topics absent from the run (count 0 only with ``complete``)."""
    topics_without_relevant: tuple[str, ...]
    """Scored topics whose qrels hold no relevant document (they score 0)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready report; ``per_topic`` maps topic id to its scores."""
        return {
            "map": self.map,
            "rprec": self.rprec,
            "p10": self.p10,
            "averaged_over": self.averaged_over,
            "complete": self.complete,
            "relevance_level": self.relevance_level,
            "ignored_run_topics": list(self.ignored_run_topics),
            "missing_topics": list(self.missing_topics),
            "topics_without_relevant": list(self.topics_without_relevant),
            "per_topic": {t.topic: t.to_dict() for t in self.per_topic},
        }


def rank_documents(scores: Mapping[str, float]) -> list[str]:
    """Docnos by score descending, ties by docno descending (trec_eval's order).

    Python compares str by code point, which for valid UTF-8 is the same
    order as trec_eval's strcmp on the bytes.
    """
    # One sort on (score, docno), both descending; docnos are unique keys.
    return [d for d, _ in sorted(scores.items(), key=_SCORE_THEN_DOCNO, reverse=True)]


_SCORE_THEN_DOCNO = itemgetter(1, 0)


def score_topic(
    topic: str,
    judgements: Mapping[str, int],
    scores: Mapping[str, float],
    relevance_level: int = 1,
    max_docs: int | None = None,
) -> TopicScore:
    """AP, R-precision and P@10 of one topic's run against its judgements."""
    ranked = rank_documents(scores)
    if max_docs is not None:
        ranked = ranked[:max_docs]
    relevant = {d for d, r in judgements.items() if r >= relevance_level}
    num_rel = len(relevant)
    hits = list(map(relevant.__contains__, ranked))
    sum_prec = 0.0
    so_far = 0
    # Only the relevant ranks add to AP; visiting just those (in rank order,
    # so the float sum is the same) skips the per-document loop.
    for so_far, i in enumerate(compress(count(1), hits), start=1):
        sum_prec += so_far / i
    ap = sum_prec / num_rel if num_rel else 0.0
    rprec = sum(hits[:num_rel]) / num_rel if num_rel else 0.0
    p10 = sum(hits[:P_CUTOFF]) / P_CUTOFF
    return TopicScore(topic, num_rel, len(ranked), so_far, ap, rprec, p10)


def score_ir(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    complete: bool = False,
    relevance_level: int = 1,
    max_docs: int | None = None,
) -> IrReport:
    """Score a run (topic -> docno -> score) against qrels (topic -> docno -> judgement).

    `complete` averages over all qrels topics (trec_eval ``-c``); `max_docs`
    keeps only the top documents of each topic (trec_eval ``-M``).
    """
    scored = sorted(t for t in run if t in qrels)
    if not scored and not complete:
        raise ValueError("no topic is in both the run and the qrels")
    if not qrels:
        raise ValueError("the qrels hold no topic")
    per = tuple(score_topic(t, qrels[t], run[t], relevance_level, max_docs) for t in scored)
    n = len(qrels) if complete else len(per)

    def mean(attr: str) -> float:
        return math.fsum(getattr(s, attr) for s in per) / n

    return IrReport(
        map=mean("ap"),
        rprec=mean("rprec"),
        p10=mean("p10"),
        per_topic=per,
        averaged_over=n,
        complete=complete,
        relevance_level=relevance_level,
        ignored_run_topics=tuple(sorted(t for t in run if t not in qrels)),
        missing_topics=tuple(sorted(t for t in qrels if t not in run)),
        topics_without_relevant=tuple(s.topic for s in per if s.num_rel == 0),
    )


# --- readers -------------------------------------------------------------------


def _utf8_lines(path: str | Path) -> list[str]:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror})", "check the path") from None
    out: list[str] = []
    # split on b"\n" so line numbers match an editor's; \r is stripped later.
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            out.append(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
        except UnicodeDecodeError as exc:
            raise FormatError(
                path, lineno, f"not UTF-8 ({exc.reason})", "save the file as UTF-8 (or ASCII)"
            ) from None
    return out


def _fields(path: str | Path) -> list[tuple[int, list[str]]]:
    """Whitespace-split non-empty, non-comment lines with their line numbers."""
    out = []
    for lineno, line in enumerate(_utf8_lines(path), start=1):
        parts = line.split()
        if parts and not parts[0].startswith("#"):
            out.append((lineno, parts))
    return out


def _quick_read(
    path: str | Path, n_columns: int, value_column: int, convert: Callable[[str], Any]
) -> dict[str, dict[str, Any]] | None:
    """topic -> docno -> convert(value) for a well-formed file, else None.

    Columns count from 0: the topic is column 0, the docno column 2.

    The readers' quick path: one decode and a plain loop, with no line
    numbers or per-line records kept (hundreds of thousands of live tuples
    also make the garbage collector run over and over). None sends the
    caller to the line-by-line reader, which finds and reports the problem.
    """
    try:
        text = Path(path).read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.split("\n")
    if "#" in text:
        # str.lstrip() and str.split() share one whitespace set, so this is
        # "the first field starts with #".
        lines = [line for line in lines if not line.lstrip().startswith("#")]
    out: dict[str, dict[str, Any]] = {}
    n_rows = 0
    try:
        for parts in map(str.split, lines):
            if not parts:
                continue
            if len(parts) != n_columns:
                return None
            topic, docno, value = parts[0], parts[2], convert(parts[value_column])
            n_rows += 1
            try:
                out[topic][docno] = value
            except KeyError:
                out[topic] = {docno: value}
    except ValueError:
        return None
    if not n_rows or sum(map(len, out.values())) != n_rows:
        return None  # empty, or a (topic, docno) repeated
    return out


def read_qrels(path: str | Path) -> dict[str, dict[str, int]]:
    """Read TREC qrels ``topic iter docno judgement`` into topic -> docno -> judgement."""
    out = _quick_read(path, 4, 3, int)
    return out if out is not None else _read_qrels_lines(path)


def _read_qrels_lines(path: str | Path) -> dict[str, dict[str, int]]:
    """`read_qrels` line by line, reporting the first bad line."""
    example = "e.g. '001 0 CWT-0001-0042 1'"
    out: dict[str, dict[str, int]] = {}
    where: dict[tuple[str, str], int] = {}
    for lineno, parts in _fields(path):
        if len(parts) != 4:
            raise FormatError(
                path,
                lineno,
                f"{len(parts)} columns, qrels lines have 4",
                f"topic iter docno rel, {example}",
            )
        topic, _, docno, rel = parts
        try:
            judgement = int(rel)
        except ValueError:
            raise FormatError(
                path, lineno, f"judgement {rel!r} is not an integer", f"use 0, 1, 2 ...; {example}"
            ) from None
        key = (topic, docno)
        if key in where:
            raise FormatError(
                path,
                lineno,
                f"docno {docno!r} judged twice for topic {topic!r} (first on line {where[key]})",
                "keep one judgement per topic and document",
            )
        where[key] = lineno
        out.setdefault(topic, {})[docno] = judgement
    if not out:
        raise FormatError(
            path, None, "no judgements", f"write one 'topic iter docno rel' line each, {example}"
        )
    return out


def read_run(path: str | Path) -> dict[str, dict[str, float]]:
    """Read a TREC run ``topic Q0 docno rank score tag`` into topic -> docno -> score.

    The rank column is kept only for validation of the column count: ranking
    is by score, as in trec_eval.
    """
    out = _quick_read(path, 6, 4, float)
    if out is not None and all(
        map(math.isfinite, chain.from_iterable(map(dict.values, out.values())))
    ):
        return out
    return _read_run_lines(path)


def _read_run_lines(path: str | Path) -> dict[str, dict[str, float]]:
    """`read_run` line by line, reporting the first bad line."""
    example = "e.g. '001 Q0 CWT-0001-0042 1 12.5 myrun'"
    out: dict[str, dict[str, float]] = {}
    where: dict[tuple[str, str], int] = {}
    for lineno, parts in _fields(path):
        if len(parts) != 6:
            raise FormatError(
                path,
                lineno,
                f"{len(parts)} columns, run lines have 6",
                f"topic Q0 docno rank score tag, {example}",
            )
        topic, _, docno, _, raw_score, _ = parts
        try:
            score = float(raw_score)
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            raise FormatError(
                path,
                lineno,
                f"score {raw_score!r} is not a finite number",
                f"column 5 is the score, {example}",
            )
        key = (topic, docno)
        if key in where:
            raise FormatError(
                path,
                lineno,
                f"docno {docno!r} retrieved twice for topic {topic!r} (first on line {where[key]})",
                "list each document once per topic",
            )
        where[key] = lineno
        out.setdefault(topic, {})[docno] = score
    if not out:
        raise FormatError(
            path, None, "no retrieved documents", f"write one line per document, {example}"
        )
    return out


# --- topics --------------------------------------------------------------------


@dataclass(frozen=True)
class Topic:
    """One TREC-style topic statement."""

    num: str
    title: str
    desc: str
    narr: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready topic."""
        return {"num": self.num, "title": self.title, "desc": self.desc, "narr": self.narr}


_TAG = re.compile(r"<\s*(/?)\s*(top|num|title|desc|narr)\s*>", re.IGNORECASE)
# Field labels that precede the content, in English TREC topics and in the
# HTRDP Chinese ones ("编号: 001", "描述:", "叙述:"), with ASCII or full-width colon.
_LABEL = re.compile(
    r"^\s*(number|description|narrative|编号|标题|描述|叙述)\s*[:：]\s*", re.IGNORECASE
)


def _clean(value: str) -> str:
    """Collapse whitespace and drop a leading field label such as '编号:'."""
    return _LABEL.sub("", " ".join(value.split()))


def _decode_topics(path: str | Path, data: bytes, encoding: str | None) -> tuple[str, str]:
    tried = ""
    if encoding is None:
        try:
            return data.decode("utf-8-sig"), "utf-8"
        except UnicodeDecodeError:
            tried = "utf-8"
        # Files labelled GB2312 are often GBK in practice; GB18030 reads both.
        encoding = "gb2312"
        try:
            return data.decode("gb2312"), "gb2312"
        except UnicodeDecodeError:
            encoding = "gb18030"
    try:
        return data.decode(encoding), encoding
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            path,
            line,
            f"{'neither UTF-8 nor' if tried else 'not'} {encoding.upper()} text "
            f"(bad bytes {data[exc.start : exc.end]!r})",
            "save the topic file as UTF-8 or GB2312",
        ) from None
    except LookupError:
        raise ValueError(f"unknown encoding {encoding!r}") from None


def read_topics(path: str | Path, encoding: str | None = None) -> tuple[list[Topic], str]:
    """Read ``<top> <num> <title> <desc> <narr> </top>`` topics; return them and the encoding.

    The encoding is UTF-8 if the file decodes as UTF-8, else GB2312 (or its
    superset GB18030); pass `encoding` to force one.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror})", "check the path") from None
    text, used = _decode_topics(path, data, encoding)
    topics: list[Topic] = []
    seen: dict[str, int] = {}
    open_line: int | None = None
    fields: dict[str, str] = {}
    field: str | None = None
    pos = 0

    def line_at(i: int) -> int:
        return text.count("\n", 0, i) + 1

    def flush(upto: int) -> None:
        segment = text[pos:upto]
        if field is not None:
            fields[field] = fields.get(field, "") + segment
        elif open_line is None and segment.strip():
            first = pos + len(segment) - len(segment.lstrip())
            raise FormatError(
                path,
                line_at(first),
                "text outside <top> ... </top>",
                "put every topic inside <top> and </top>",
            )

    for m in _TAG.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2).lower()
        lineno = line_at(m.start())
        flush(m.start())
        pos = m.end()
        if tag == "top" and not closing:
            if open_line is not None:
                raise FormatError(
                    path,
                    lineno,
                    f"<top> inside the topic opened on line {open_line}",
                    "close it with </top> first",
                )
            open_line, fields, field = lineno, {}, None
        elif tag == "top":
            if open_line is None:
                raise FormatError(path, lineno, "</top> without <top>", "open the topic with <top>")
            num = _clean(fields.get("num", ""))
            if not num:
                raise FormatError(
                    path, open_line, "topic without <num>", "give it '<num> Number: 001'"
                )
            if num in seen:
                raise FormatError(
                    path,
                    open_line,
                    f"topic {num!r} repeated (first on line {seen[num]})",
                    "number each topic once",
                )
            seen[num] = open_line

            topics.append(
                Topic(
                    num,
                    _clean(fields.get("title", "")),
                    _clean(fields.get("desc", "")),
                    _clean(fields.get("narr", "")),
                    open_line,
                )
            )
            open_line, field = None, None
        elif closing:
            field = None  # an explicit </title> etc. just ends the field
        else:
            if open_line is None:
                raise FormatError(
                    path, lineno, f"<{tag}> outside <top>", "put it inside <top> ... </top>"
                )
            field = tag
    flush(len(text))
    if open_line is not None:
        raise FormatError(path, open_line, "<top> never closed", "end the topic with </top>")
    if not topics:
        raise FormatError(path, None, "no <top> topics", "write topics as <top> <num> ... </top>")
    return topics, used


def score_ir_files(
    qrels: Path, run: Path, complete: bool = False, relevance_level: int = 1
) -> dict[str, Any]:
    """Score a TREC run file against a qrels file; JSON-ready `IrReport`.

    Keys ``map``, ``rprec``, ``p10`` and ``per_topic`` (topic -> scores),
    plus the topic bookkeeping of `IrReport`.
    """
    report = score_ir(read_qrels(qrels), read_run(run), complete, relevance_level)
    return report.to_dict()
