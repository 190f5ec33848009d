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
* trec_eval stops ("Can't calculate measure 'num_ret'", exit 4) when the
  first topic it scores (the smallest topic id, in byte order, that is in
  both files) has only negative judgements (-1, "in the pool, unjudged"):
  it asks for room for no relevance level, gets none, and takes that for
  an error. A later topic with only negative judgements scores 0 there.
  Here every such topic scores 0 (a topic with no relevant document), and
  ``warnings`` names the one trec_eval would stop at.
* Files are UTF-8 by default (a BOM allowed); ``encoding`` names another
  (GBK, Big5, UTF-16 ...: `scoring.charsets`). trec_eval reads bytes; here
  the text is decoded first and tied docnos are ordered by code point, which
  is UTF-8's byte order: a GBK or Big5 file gets the figures trec_eval gives
  its UTF-8 conversion.
"""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, compress, count, groupby
from operator import itemgetter
from pathlib import Path
from typing import Any, TypeVar

from . import charsets
from .encoded_text import refuse_false_utf16
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
V = TypeVar("V")


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
    warnings: tuple[str, ...] = ()
    """Where trec_eval would not give these figures (module docstring)."""

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
            "warnings": list(self.warnings),
            "per_topic": {t.topic: t.to_dict() for t in self.per_topic},
        }


def rank_documents(scores: Mapping[str, float]) -> list[str]:
    """Docnos by score descending, ties by docno descending (trec_eval's order).

    Python compares str by code point, which for valid UTF-8 is the same
    order as trec_eval's strcmp on the bytes.
    """
    # The order of one sort on (score, docno), both descending: docnos first,
    # then a stable sort by score (reverse=True keeps ties in their order).
    # Two sorts on plain keys are faster than one on (score, docno) tuples.
    return sorted(sorted(scores, reverse=True), key=scores.__getitem__, reverse=True)


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
    return _ranked_score(topic, relevant, ranked)


def _ranked_score(topic: str, relevant: AbstractSet[Any], ranked: list[Any]) -> TopicScore:
    """`score_topic` once the documents are ranked; docnos as str or as bytes."""
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
    per = {t: score_topic(t, qrels[t], run[t], relevance_level, max_docs) for t in scored}
    return _report(qrels, per, run, complete, relevance_level)


def _report(
    qrels: Mapping[str, Any],
    per_topic: Mapping[str, TopicScore],
    run_topics: Iterable[str],
    complete: bool,
    relevance_level: int,
) -> IrReport:
    """The averages and topic bookkeeping over topics scored one by one."""
    if not per_topic and not complete:
        raise ValueError("no topic is in both the run and the qrels")
    if not qrels:
        raise ValueError("the qrels hold no topic")
    per = tuple(per_topic[t] for t in sorted(per_topic))
    run_topics = set(run_topics)
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
        ignored_run_topics=tuple(sorted(t for t in run_topics if t not in qrels)),
        missing_topics=tuple(sorted(t for t in qrels if t not in run_topics)),
        topics_without_relevant=tuple(s.topic for s in per if s.num_rel == 0),
        warnings=_trec_eval_stops(qrels, per),
    )


def _trec_eval_stops(qrels: Mapping[str, Any], per: tuple[TopicScore, ...]) -> tuple[str, ...]:
    """The warning for input trec_eval aborts on: its first topic judged only negatively."""
    if not per:
        return ()
    # trec_eval scores the run's topics in strcmp order: code point order is UTF-8 byte order.
    first = min(per, key=lambda s: s.topic.encode()).topic
    judgements = qrels[first].values()
    if not judgements or any(j >= 0 for j in judgements):
        return ()
    return (
        f"topic {first}: every judgement is negative (-1, unjudged); trec_eval scores this "
        "topic first and stops with \"Can't calculate measure 'num_ret'\" (exit 4); onsite "
        "scores it 0, as a topic with no relevant document. To compare with trec_eval, "
        "judge one of its documents 0 or more, or drop the topic from the qrels",
    )


# --- readers -------------------------------------------------------------------


def _text_lines(path: str | Path, encoding: str | None) -> list[str]:
    """The file's lines in ``encoding`` (None: UTF-8, a BOM allowed); a line that does
    not decode is a FormatError naming it and the encoding the file reads as."""
    try:
        refuse_false_utf16(path, encoding)
        return charsets.read_lines(path, encoding)
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror})", "check the path") from None


def _fields(path: str | Path, encoding: str | None = None) -> list[tuple[int, list[str]]]:
    """Whitespace-split non-empty, non-comment lines with their line numbers."""
    out = []
    for lineno, line in enumerate(_text_lines(path, encoding), start=1):
        parts = line.split()
        if parts and not parts[0].startswith("#"):
            out.append((lineno, parts))
    return out


class _NotQuick(Exception):
    """The streaming reader met a line only the line-by-line reader can report on."""


# Lines read at a time by the streaming readers: big enough that the per-line
# work runs in C over whole lists, small enough that memory stays flat.
_CHUNK_BYTES = 1 << 18


def _quick_chunks(
    path: str | Path, n_columns: int, encoding: str | None = None
) -> Iterator[list[list[str]]]:
    """The whitespace-split data lines of a well-formed file, a chunk of lines at a time.

    The readers' quick path: the file is streamed, so only what the caller
    keeps stays in memory, with no line numbers or per-line records. Anything
    odd (a line with another number of columns, bytes that are not in
    ``encoding``, a NUL: UTF-16 read as UTF-8) raises `_NotQuick`, which sends
    the caller to the line-by-line reader: it finds and reports the problem.
    """
    codec = charsets.codec_of(encoding)
    if codec.startswith("utf-16"):
        # Rare, and a file wrongly named UTF-16 decodes without error: the line
        # reader checks it (`scoring.encoded_text.refuse_false_utf16`).
        raise _NotQuick
    try:
        # Lines end at "\n" alone, as in the line-by-line reader; "\r" is
        # whitespace to str.split.
        f = open(path, encoding=codec, newline="\n")  # noqa: SIM115
    except OSError:
        raise _NotQuick from None
    first = True
    with f:
        while True:
            try:
                lines = f.readlines(_CHUNK_BYTES)
            except (ValueError, OSError):  # UnicodeDecodeError is a ValueError
                raise _NotQuick from None
            if not lines:
                return
            if first:
                lines[0] = lines[0].removeprefix("\ufeff")
                first = False
            rows = list(map(str.split, lines))
            joined = "".join(lines)
            if "\x00" in joined:
                raise _NotQuick
            if set(map(len, rows)) != {n_columns} or "#" in joined:
                # str.split and str.lstrip share one whitespace set: a comment
                # line is one whose first field starts with "#".
                rows = [r for r in rows if r and not r[0].startswith("#")]
                if any(len(r) != n_columns for r in rows):
                    raise _NotQuick
            yield rows


_TOPIC = itemgetter(0)
_DOCNO = itemgetter(2)


def _topic_runs(
    chunks: Iterator[list[list[str]]], value_column: int, convert: Callable[[str], Any]
) -> Iterator[tuple[str, int, Iterator[tuple[str, Any]]]]:
    """(topic, n, (docno, value) pairs) for each run of n consecutive lines of one topic.

    A topic whose lines straddle two chunks comes out twice in a row.
    """
    value = itemgetter(value_column)
    for rows in chunks:
        start = 0
        # Grouping the topic column alone keeps the per-line work in C.
        for topic, group in groupby(list(map(_TOPIC, rows))):
            end = start + len(list(group))
            lines = rows[start:end]
            start = end
            try:
                values = list(map(convert, map(value, lines)))
            except ValueError:
                raise _NotQuick from None
            yield topic, len(lines), zip(map(_DOCNO, lines), values, strict=True)


def _collect(
    chunks: Iterator[list[list[str]]], value_column: int, convert: Callable[[str], Any]
) -> dict[str, dict[str, Any]]:
    """topic -> docno -> value; `_NotQuick` when empty or a (topic, docno) repeats."""
    out: dict[str, dict[str, Any]] = {}
    n_rows = 0
    for topic, n, pairs in _topic_runs(chunks, value_column, convert):
        n_rows += n
        out.setdefault(topic, {}).update(pairs)
    if not n_rows or sum(map(len, out.values())) != n_rows:
        raise _NotQuick
    return out


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off inside the block (as it was on before, after)."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()


def read_qrels(path: str | Path, encoding: str | None = None) -> dict[str, dict[str, int]]:
    """Read TREC qrels ``topic iter docno judgement`` into topic -> docno -> judgement.

    ``encoding``: the file's (None: UTF-8, a BOM allowed).
    """
    try:
        return _collect(_quick_chunks(path, 4, encoding), 3, int)
    except _NotQuick:
        return _read_qrels_lines(path, encoding)


@dataclass(frozen=True)
class _Layout:
    """A TREC file's lines (topic in the first column, docno in the third), as its errors
    name them."""

    name: str  # "qrels"
    columns: str  # "topic iter docno rel"
    example: str
    twice: str  # what a docno given twice for a topic was ("judged twice")
    once: str  # the fix for that
    empty: str  # what a file with no line has ("no judgements")
    empty_fix: str


_QRELS = _Layout(
    "qrels",
    "topic iter docno rel",
    "e.g. '001 0 CWT-0001-0042 1'",
    "judged twice",
    "keep one judgement per topic and document",
    "no judgements",
    "write one 'topic iter docno rel' line each",
)
_RUN = _Layout(
    "run",
    "topic Q0 docno rank score tag",
    "e.g. '001 Q0 CWT-0001-0042 1 12.5 myrun'",
    "retrieved twice",
    "list each document once per topic",
    "no retrieved documents",
    "write one line per document",
)


def _read_lines(
    path: str | Path,
    layout: _Layout,
    value: Callable[[list[str], int], V],
    encoding: str | None = None,
) -> dict[str, dict[str, V]]:
    """topic -> docno -> ``value(columns, line number)``, line by line, reporting the first
    bad line (``value`` raises FormatError for a bad value)."""
    n = len(layout.columns.split())
    out: dict[str, dict[str, V]] = {}
    where: dict[tuple[str, str], int] = {}
    for lineno, parts in _fields(path, encoding):
        if len(parts) != n:
            raise FormatError(
                path,
                lineno,
                f"{len(parts)} columns, {layout.name} lines have {n}",
                f"{layout.columns}, {layout.example}",
            )
        topic, docno = parts[0], parts[2]
        found = value(parts, lineno)
        key = (topic, docno)
        if key in where:
            raise FormatError(
                path,
                lineno,
                f"docno {docno!r} {layout.twice} for topic {topic!r} (first on line {where[key]})",
                layout.once,
            )
        where[key] = lineno
        out.setdefault(topic, {})[docno] = found
    if not out:
        raise FormatError(path, None, layout.empty, f"{layout.empty_fix}, {layout.example}")
    return out


def _read_qrels_lines(path: str | Path, encoding: str | None = None) -> dict[str, dict[str, int]]:
    """`read_qrels` line by line, reporting the first bad line."""

    def judgement(parts: list[str], lineno: int) -> int:
        rel = parts[3]
        try:
            return int(rel)
        except ValueError:
            raise FormatError(
                path,
                lineno,
                f"judgement {rel!r} is not an integer",
                f"use 0, 1, 2 ...; {_QRELS.example}",
            ) from None

    return _read_lines(path, _QRELS, judgement, encoding)


def read_run(path: str | Path, encoding: str | None = None) -> dict[str, dict[str, float]]:
    """Read a TREC run ``topic Q0 docno rank score tag`` into topic -> docno -> score.

    The rank column is kept only for validation of the column count: ranking
    is by score, as in trec_eval. ``encoding``: the file's (None: UTF-8).
    """
    try:
        out = _collect(_quick_chunks(path, 6, encoding), 4, float)
    except _NotQuick:
        return _read_run_lines(path, encoding)
    if all(map(math.isfinite, chain.from_iterable(map(dict.values, out.values())))):
        return out
    return _read_run_lines(path, encoding)


def _read_run_lines(path: str | Path, encoding: str | None = None) -> dict[str, dict[str, float]]:
    """`read_run` line by line, reporting the first bad line."""

    def score(parts: list[str], lineno: int) -> float:
        raw_score = parts[4]
        try:
            found = float(raw_score)
        except ValueError:
            found = math.nan
        if not math.isfinite(found):
            raise FormatError(
                path,
                lineno,
                f"score {raw_score!r} is not a finite number",
                f"column 5 is the score, {_RUN.example}",
            )
        return found

    return _read_lines(path, _RUN, score, encoding)


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
    if encoding is not None:
        # Named (--encoding, a task's `encoding`): read as charsets reads every other file.
        return charsets.decode_text(path, data, encoding), encoding
    try:
        return data.decode("utf-8-sig"), "utf-8"
    except UnicodeDecodeError:
        pass
    # Files labelled GB2312 are often GBK in practice; GB18030 reads both.
    try:
        return data.decode("gb2312"), "gb2312"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("gb18030"), "gb18030"
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise FormatError(
            path,
            line,
            f"neither UTF-8 nor GB18030 text (bad bytes {data[exc.start : exc.end]!r})",
            "save the topic file as UTF-8 or GB2312, or name its encoding with `--encoding` "
            "(in a site file, the task's `encoding`)",
        ) from None


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
    qrels: Path,
    run: Path,
    complete: bool = False,
    relevance_level: int = 1,
    encoding: str | None = None,
) -> dict[str, Any]:
    """Score a TREC run file against a qrels file; JSON-ready `IrReport`.

    Keys ``map``, ``rprec``, ``p10`` and ``per_topic`` (topic -> scores),
    plus the topic bookkeeping of `IrReport`. ``encoding``: both files' (None: UTF-8).
    """
    # ASCII reads alike in every encoding but UTF-16: the byte readers take those files.
    plain = not charsets.codec_of(encoding).startswith("utf-16")
    try:
        if not plain:
            raise _NotQuick
        judged = _plain_qrels(qrels)
    except _NotQuick:
        judged = {
            t: {d.encode(): r for d, r in j.items()} for t, j in read_qrels(qrels, encoding).items()
        }
    try:
        if not plain:
            raise _NotQuick
        per, run_topics = _score_plain_run(run, judged, relevance_level)
        return _report(judged, per, run_topics, complete, relevance_level).to_dict()
    except _NotQuick:
        pass
    judgements = read_qrels(qrels, encoding)
    try:
        per, run_topics = _score_run_stream(run, judgements, relevance_level, encoding)
    except _NotQuick:
        # Topics out of order or a bad line: the whole-file reader merges the
        # first and reports the second.
        return score_ir(judgements, read_run(run, encoding), complete, relevance_level).to_dict()
    return _report(judgements, per, run_topics, complete, relevance_level).to_dict()


# What the check of `_plain_columns` keeps of a chunk: the two separators
# (tab turned into space) and the line end, plus every other byte that
# bytes.split or str.split takes for a separator, so that any of those fails
# the check. All other bytes (the fields) are dropped.
_SEPARATORS_ONLY = (
    bytes.maketrans(b"\t", b" "),
    bytes(set(range(256)) - set(b" \t\n\r\x0b\x0c\x1c\x1d\x1e\x1f")),
)


def _plain_columns(path: str | Path, n_columns: int) -> Iterator[list[bytes]]:
    """The fields of a plain ASCII file of `n_columns`-field lines, a chunk of lines at a time.

    The fastest reader: each chunk is split by one ``bytes.split``, so the
    fields of line k are ``fields[k * n_columns : (k + 1) * n_columns]``.
    That holds only if every line has exactly `n_columns` fields: checked
    for the whole chunk at once, since with the fields taken out, such a
    chunk is ``n_columns - 1`` single separators and a line end per line,
    and then the field count is right line by line. Anything else (non-ASCII
    bytes, a comment or blank line, runs of blanks, "\r" or another
    separator) raises `_NotQuick` for a reader that looks line by line. The
    fields equal those of the str readers, which split at the same places.
    """
    try:
        f = open(path, "rb")  # noqa: SIM115
    except OSError:
        raise _NotQuick from None
    pattern = b" " * (n_columns - 1) + b"\n"
    with f:
        rest = b""
        while True:
            block = f.read(_CHUNK_BYTES)
            if not block:
                if rest:
                    block, rest = rest + b"\n", b""
                else:
                    return
            else:
                block = rest + block
                cut = block.rfind(b"\n") + 1
                block, rest = block[:cut], block[cut:]
                if not block:
                    continue  # a line longer than a chunk: read on
            fields = block.split()
            n_lines = block.count(b"\n")
            if (
                len(fields) != n_columns * n_lines
                or not block.isascii()
                or b"\x00" in block  # UTF-16 without a BOM: its NULs would vanish below
                or block.translate(*_SEPARATORS_ONLY) != pattern * n_lines
                # A comment line (its first field starts with "#").
                or block.startswith(b"#")
                or b"\n#" in block
            ):
                raise _NotQuick
            yield fields


def _plain_qrels(path: str | Path) -> dict[str, dict[bytes, int]]:
    """`read_qrels` of a plain qrels file (see `_plain_columns`), docnos as bytes.

    `_NotQuick` for any other file, no judgement, a judgement that is not an
    integer, or a (topic, docno) judged twice: `read_qrels` reports those.
    """
    out: dict[str, dict[bytes, int]] = {}
    n_rows = 0
    with _gc_paused():
        for fields in _plain_columns(path, 4):
            topics = fields[0::4]
            docnos = fields[2::4]
            try:
                judgements = list(map(int, fields[3::4]))
            except ValueError:
                raise _NotQuick from None
            start = 0
            for topic, group in groupby(topics):
                end = start + len(list(group))
                judged = out.setdefault(topic.decode("ascii"), {})
                judged.update(zip(docnos[start:end], judgements[start:end], strict=True))
                start = end
            n_rows += len(topics)
    if not n_rows or sum(map(len, out.values())) != n_rows:
        raise _NotQuick
    return out


def _trec_order(scores: dict[bytes, float]) -> list[bytes]:
    """`rank_documents` for finite scores, fastest whatever the share of ties.

    Without ties one sort by score is the order; with many, each run of
    equal scores is put in descending docno order by itself, which compares
    far fewer docnos than sorting them all first.
    """
    by_score = sorted(scores, key=scores.__getitem__, reverse=True)
    distinct = len(set(scores.values()))
    if distinct == len(by_score):
        return by_score
    if 2 * distinct > len(by_score):
        # Few ties: one pass per tie group would cost more than the docno sort.
        return sorted(sorted(scores, reverse=True), key=scores.__getitem__, reverse=True)
    ranked: list[bytes] = []
    for _, tied in groupby(by_score, key=scores.__getitem__):
        ranked += sorted(tied, reverse=True)
    return ranked


def _score_plain_run(
    run: Path, qrels: Mapping[str, Mapping[bytes, int]], relevance_level: int
) -> tuple[dict[str, TopicScore], set[str]]:
    """`_score_run_stream` over `_plain_columns`: the usual run file, scored as it is read.

    Docnos are bytes, in the run and in `qrels` (ASCII: their order is
    str's and trec_eval's). `_NotQuick` in the same cases as
    `_score_run_stream`, and for any file that is not plain.
    """
    per: dict[str, TopicScore] = {}
    seen: set[str] = set()
    topic: bytes | None = None
    docnos: list[bytes] = []
    values: list[bytes] = []

    def finish() -> None:
        if topic is None:
            return
        name = topic.decode("ascii")
        try:
            scores = list(map(float, values))
        except ValueError:  # the line-aware reader names the line
            raise _NotQuick from None
        ranked = dict(zip(docnos, scores, strict=True))
        if name in seen or len(ranked) != len(docnos) or not all(map(math.isfinite, scores)):
            raise _NotQuick
        seen.add(name)
        judged = qrels.get(name)
        if judged is not None:
            relevant = {d for d, r in judged.items() if r >= relevance_level}
            per[name] = _ranked_score(name, relevant, _trec_order(ranked))

    # The collector's passes over each chunk's fields cost more than scoring
    # them; nothing here makes a reference cycle.
    with _gc_paused():
        for fields in _plain_columns(run, 6):
            start = 0
            topics = fields[0::6]
            chunk_docnos = fields[2::6]
            chunk_values = fields[4::6]
            # Grouping the topic column keeps the per-line work in C.
            for run_topic, group in groupby(topics):
                end = start + len(list(group))
                if run_topic != topic:
                    finish()
                    topic, docnos, values = run_topic, [], []
                docnos += chunk_docnos[start:end]
                values += chunk_values[start:end]
                start = end
        finish()
    if topic is None:
        raise _NotQuick
    return per, seen


def _score_run_stream(
    run: Path,
    qrels: Mapping[str, Mapping[str, int]],
    relevance_level: int,
    encoding: str | None = None,
) -> tuple[dict[str, TopicScore], set[str]]:
    """Score a run file topic by topic as it is read: one topic's documents in memory.

    Runs list each topic's documents together; `_NotQuick` when a topic comes
    back after another one, repeats a document, has a non-finite score, or
    the file has no documents, so the caller reads the whole file instead.
    """
    per: dict[str, TopicScore] = {}
    seen: set[str] = set()
    topic: str | None = None
    scores: dict[str, float] = {}
    n_rows = 0

    def finish() -> None:
        if topic is None:
            return
        if topic in seen or len(scores) != n_rows:
            raise _NotQuick
        if not all(map(math.isfinite, scores.values())):
            raise _NotQuick
        seen.add(topic)
        if topic in qrels:
            per[topic] = score_topic(topic, qrels[topic], scores, relevance_level)

    # The collector's passes over each chunk's freshly split lines cost more
    # than scoring them; nothing here makes a reference cycle.
    with _gc_paused():
        for run_topic, n, pairs in _topic_runs(_quick_chunks(run, 6, encoding), 4, float):
            if run_topic != topic:
                finish()
                topic, scores, n_rows = run_topic, {}, 0
            scores.update(pairs)
            n_rows += n
        finish()
    if topic is None:
        raise _NotQuick
    return per, seen
