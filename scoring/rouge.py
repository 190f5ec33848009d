"""ROUGE-1, ROUGE-2 and ROUGE-L for summaries, with ROUGE-1.5.5's conventions.

What ROUGE-1.5.5 (Lin 2004) does by default (``ROUGE-1.5.5.pl -n 2 -a``), and
so what is done here:

* **Tokens (English)**: the text is lower-cased (ASCII letters), every ``-``
  is set apart by spaces, every other character outside ``A-Za-z0-9-``
  becomes a space, the text is split on spaces, and only the tokens that
  start with ``[a-z0-9$]`` are kept: the ``-`` tokens are dropped, so
  ``well-known`` is ``well known`` (ROUGE-1.5.5's readText and createNGram;
  Google's ``rouge-score`` gives the same). No stemming and no stop words
  (ROUGE's ``-m`` and ``-s``; not offered here).
* **Tokens (Chinese, ``lang="zh"``)**: ROUGE-1.5.5 deletes every non-ASCII
  character, so Chinese has to be tokenized before it: here every character
  that is a letter or a digit outside ASCII (CJK ideographs, kana, full-width
  letters...) is one token, runs of ASCII letters and digits are words as in
  English (lower-cased), and punctuation, symbols and spaces are dropped. This
  is "character level", the unit the HTRDP and most Chinese summary
  evaluations use.
* **ROUGE-N** (N = 1, 2): clipped n-gram matches. For one reference,
  recall = hits / reference n-grams, precision = hits / summary n-grams.
* **ROUGE-L**: summary-level LCS. The summary and the reference are split
  into sentences at ``\\n`` only (ROUGE's one-sentence-per-line input, read
  by Perl line by line: ``\\r``, U+2028, U+0085 and the like do not end a
  sentence; ``\\r`` is a space, the others are deleted as non-ASCII); for
  each reference sentence the union of its tokens matched by an LCS with any
  summary sentence counts, each token at most as often as it occurs in both
  texts (ROUGE-1.5.5's clipping since 1.4.1). Recall divides by the
  reference's tokens, precision by the summary's. A one-line summary and
  reference give the plain LCS.
* **F**: ``F = 1 / (alpha / P + (1 - alpha) / R)`` with alpha = 0.5 (ROUGE's
  ``-p``), i.e. the harmonic mean; 0 when P or R is 0.
* **Several references**: ROUGE-1.5.5's default scoring formula "A" (model
  average) pools the counts: hits, reference n-grams and summary n-grams are
  summed over the references before dividing. Formula "B" (``-f B``) keeps
  the reference that gives the highest recall. ROUGE-1.5.5 has done no
  jackknifing since version 1.4, and neither is it done here.
* **Averages**: the system score is the exact mean over documents of each
  document's R, P and F (ROUGE's default ``-t 0``), not pooled counts.
  ROUGE-1.5.5 prints per-document figures rounded to 5 decimals (F from the
  rounded R and P) and, as the system figure, the mean of 1,000 bootstrap
  resamples of those rounded values (``-r 1000``): the two differ in the 3rd
  to 5th decimal. ROUGE seeds Perl's generator with the resample's number
  (``srand($i)``, i = 0..999) and draws ``int(rand(n))`` over its evaluation
  ids sorted as strings, so its figure is the same on every run, but depends
  on those ids (``<eval id>.<peer id>``): `rouge155_bootstrap` repeats it with
  Perl's own drand48 (Perl 5.20 and later, on every platform), which
  ``average="rouge155"`` uses; the exact mean is what that estimate
  approximates.
* **Length limit** (optional, ROUGE's ``-l N``, `cut_to_limit`): the summary
  *and every reference* are cut to their first N words before scoring, as
  ROUGE-1.5.5's readText does: sentences are taken whole while they fit and
  the one that reaches the limit is cut; words are what Perl's
  ``split(/\\s+/)`` gives on a line (ASCII whitespace; a line that starts with
  whitespace counts one empty word more, a ROUGE-1.5.5 quirk kept here). A
  limit of 0 means no limit, as ``-l 0`` does. The unit ``char`` (non-space
  characters, for Chinese, where ROUGE's ``-b`` bytes would cut characters in
  half and ROUGE deletes non-ASCII text anyway) is onsite's own and cuts the
  same way; it is the default unit for ``lang="zh"`` only (`default_unit`).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .encoded_text import iter_named_lines
from .errors import FormatError

__all__ = [
    "ROUGE_METRICS",
    "RougeCounts",
    "RougeScore",
    "cut_to_limit",
    "default_unit",
    "read_summaries",
    "rouge155_bootstrap",
    "rouge155_printed",
    "rouge_document",
    "rouge_length",
    "rouge_warnings",
    "score_rouge",
    "score_rouge_files",
    "summary_length",
    "tokenize",
    "truncate_summary",
]

Lang = Literal["en", "zh"]
Formula = Literal["A", "B"]
LengthUnit = Literal["char", "word"]
Average = Literal["exact", "rouge155"]
ROUGE_METRICS = ("rouge1", "rouge2", "rougeL")

_NOT_ROUGE = re.compile(r"[^a-z0-9\-]")


def _zh_tokens(text: str) -> list[str]:
    out: list[str] = []
    word: list[str] = []
    for ch in text:
        if ch.isascii() and ch.isalnum():
            word.append(ch.lower())
            continue
        if word:
            out.append("".join(word))
            word = []
        # Letters (L*) and digits (N*) are content; punctuation, symbols, spaces are not.
        if not ch.isascii() and unicodedata.category(ch)[0] in "LN":
            out.append(ch)
    if word:
        out.append("".join(word))
    return out


def tokenize(text: str, lang: Lang = "en") -> list[str]:
    """Tokens of one sentence as ROUGE-1.5.5 sees them (module docstring)."""
    if lang == "zh":
        return _zh_tokens(text)
    # ASCII lower case only, as Perl's tr/A-Z/a-z/: non-ASCII text is deleted below anyway.
    lowered = text.translate(_ASCII_LOWER).replace("-", " - ")
    # What is left is [a-z0-9-]: of ROUGE's "starts with [a-z0-9$]" only the "-" tokens fail.
    return [t for t in _NOT_ROUGE.sub(" ", lowered).split() if t != "-"]


def default_unit(lang: Lang) -> LengthUnit:
    """The length unit a limit counts when none is given: words (ROUGE's ``-l``) for
    English; non-space characters for Chinese, where ROUGE-1.5.5 has no unit."""
    return "char" if lang == "zh" else "word"


def summary_length(text: str, unit: LengthUnit = "char") -> int:
    """A summary's length: its non-space characters, or its whitespace-separated words."""
    if unit == "word":
        return len(text.split())
    return sum(1 for ch in text if not ch.isspace())


# Perl's \s on a byte string: the ASCII whitespace ROUGE-1.5.5 splits words at.
_PERL_SPACE = re.compile(r"[ \t\n\r\f\v]+")


def _perl_words(line: str) -> list[str]:
    """``split(/\\s+/, $line)`` as Perl does it: a leading empty field, no trailing ones."""
    words = _PERL_SPACE.split(line)
    while words and words[-1] == "":
        words.pop()
    return words


def _cut_line(line: str, room: int, unit: LengthUnit) -> tuple[str, int]:
    """`line` cut to `room` units, and the units it has (whole)."""
    if unit == "word":
        words = _perl_words(line)
        return " ".join(words[:room]), len(words)
    counted = 0
    for i, ch in enumerate(line):
        if ch.isspace():
            continue
        counted += 1
        if counted > room:
            return line[:i].rstrip(), sum(1 for c in line if not c.isspace())
    return line, counted


def cut_to_limit(text: str, limit: int, unit: LengthUnit = "word") -> str:
    """The text cut to its first `limit` units as ROUGE-1.5.5's ``-l`` cuts (docstring).

    Sentences (lines) are kept whole while the units so far stay under the
    limit; the sentence that reaches it is cut, and the rest dropped. Empty
    lines are skipped, as ROUGE skips them. A limit of 0 cuts nothing.
    """
    if limit <= 0:
        return text
    kept: list[str] = []
    used = 0
    for line in text.split("\n"):
        if line == "":
            continue
        cut, size = _cut_line(line, limit - used, unit)
        if used + size < limit:
            kept.append(line)
            used += size
            continue
        kept.append(cut)
        break
    return "\n".join(kept)


def rouge_length(text: str, unit: LengthUnit = "word") -> int:
    """A text's length as `cut_to_limit` counts it (words: Perl's split, line by line)."""
    lines = [line for line in text.split("\n") if line]
    return sum(_cut_line(line, 0, unit)[1] for line in lines)


def truncate_summary(text: str, limit: int, unit: LengthUnit = "char") -> str:
    """The summary as scored under a length limit: `cut_to_limit` (ROUGE-1.5.5's ``-l``)."""
    return cut_to_limit(text, limit, unit)


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _sentences(text: str, lang: Lang) -> list[list[str]]:
    # Lines end at "\n" only, as Perl reads them (str.splitlines would end one at U+2028).
    return [t for line in text.split("\n") if (t := tokenize(line, lang))]


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _lcs_mask(ref: Sequence[str], peer: Sequence[str], mask: list[bool]) -> None:
    """Mark in `mask` the tokens of `ref` on one LCS with `peer`.

    Ties are broken as ROUGE-1.5.5's markLCS does: on equal lengths the
    backtrack moves up (drops a reference token) before it moves left.
    """
    m, n = len(ref), len(peer)
    if m == 0 or n == 0:
        return
    c = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        ri, row, up = ref[i - 1], c[i], c[i - 1]
        for j in range(1, n + 1):
            if ri == peer[j - 1]:
                row[j] = up[j - 1] + 1
            elif up[j] >= row[j - 1]:
                row[j] = up[j]
            else:
                row[j] = row[j - 1]
    i, j = m, n
    while i > 0 and j > 0:
        if ref[i - 1] == peer[j - 1]:
            mask[i - 1] = True
            i, j = i - 1, j - 1
        elif c[i - 1][j] >= c[i][j - 1]:
            i -= 1
        else:
            j -= 1


@dataclass(frozen=True)
class RougeCounts:
    """Hits and sizes of one summary against one reference, for one metric."""

    hits: int
    ref_total: int
    peer_total: int


def _lcs_counts(ref: list[list[str]], peer: list[list[str]]) -> RougeCounts:
    ref_left = Counter(t for s in ref for t in s)
    peer_left = Counter(t for s in peer for t in s)
    hits = 0
    for sentence in ref:
        mask = [False] * len(sentence)
        for p in peer:
            _lcs_mask(sentence, p, mask)
        for token, hit in zip(sentence, mask, strict=True):
            # Clip: a token used up by an earlier LCS hit is not counted again.
            if hit and ref_left[token] > 0 and peer_left[token] > 0:
                hits += 1
                ref_left[token] -= 1
                peer_left[token] -= 1
    return RougeCounts(hits, sum(map(len, ref)), sum(map(len, peer)))


def _ngram_counts(ref: list[list[str]], peer: list[list[str]], n: int) -> RougeCounts:
    # ROUGE-N counts n-grams over the text as one token stream (sentences joined).
    r = _ngrams([t for s in ref for t in s], n)
    p = _ngrams([t for s in peer for t in s], n)
    hits = sum(min(k, p[g]) for g, k in r.items())
    return RougeCounts(hits, sum(r.values()), sum(p.values()))


def _counts(metric: str, ref: list[list[str]], peer: list[list[str]]) -> RougeCounts:
    if metric == "rougeL":
        return _lcs_counts(ref, peer)
    return _ngram_counts(ref, peer, int(metric[len("rouge") :]))


@dataclass(frozen=True)
class RougeScore:
    """Recall, precision and F of one metric (fractions 0..1)."""

    recall: float
    precision: float
    f: float

    def to_dict(self) -> dict[str, float]:
        """JSON-ready figures."""
        return {"recall": self.recall, "precision": self.precision, "f": self.f}


def _score(hits: float, ref_total: float, peer_total: float, alpha: float) -> RougeScore:
    r = hits / ref_total if ref_total else 0.0
    p = hits / peer_total if peer_total else 0.0
    f = 0.0 if r == 0.0 or p == 0.0 else 1.0 / (alpha / p + (1.0 - alpha) / r)
    return RougeScore(r, p, f)


def rouge_document(
    summary: str,
    references: Sequence[str],
    lang: Lang = "en",
    metrics: Sequence[str] = ROUGE_METRICS,
    formula: Formula = "A",
    alpha: float = 0.5,
) -> dict[str, RougeScore]:
    """Each metric for one summary against its references (module docstring)."""
    if not references:
        raise ValueError("no reference summary")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha {alpha} is outside 0..1")
    peer = _sentences(summary, lang)
    refs = [_sentences(r, lang) for r in references]
    out: dict[str, RougeScore] = {}
    for metric in metrics:
        if metric not in ROUGE_METRICS:
            raise ValueError(f"unknown metric {metric!r}; use {', '.join(ROUGE_METRICS)}")
        counts = [_counts(metric, ref, peer) for ref in refs]
        if formula == "A":
            out[metric] = _score(
                sum(c.hits for c in counts),
                sum(c.ref_total for c in counts),
                sum(c.peer_total for c in counts),
                alpha,
            )
        else:
            # Best model: the highest recall; the first reference wins a tie.
            scores = [_score(c.hits, c.ref_total, c.peer_total, alpha) for c in counts]
            out[metric] = max(scores, key=lambda s: s.recall)
    return out


# Perl's drand48 (util.c, Perl 5.20 on): the 48-bit congruential generator of POSIX drand48.
_DRAND48_MULT, _DRAND48_ADD, _DRAND48_MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1


def rouge155_printed(recall: float, precision: float, alpha: float = 0.5) -> tuple[float, ...]:
    """R, P and F of one document as ROUGE-1.5.5 keeps them: R and P rounded to 5
    decimals, F computed from the rounded values and rounded too."""
    r, p = float(f"{recall:7.5f}"), float(f"{precision:7.5f}")
    below = (1.0 - alpha) * p + alpha * r
    return r, p, float(f"{p * r / below:7.5f}") if below > 0 else 0.0


def rouge155_bootstrap(values: Mapping[str, float], resamples: int = 1000) -> float:
    """ROUGE-1.5.5's system figure (``-r resamples``, default ``-t 0``) from per-document values.

    `values` are keyed by ROUGE's evaluation ids (``<eval id>.<peer id>``) and should
    be rounded as `rouge155_printed` rounds them. ROUGE sorts the ids as strings; for
    resample i it calls ``srand(i)`` and draws ``int(rand(n))`` n times; the figure is
    the mean of the sorted resample means, rounded to 5 decimals. Perl 5.20 and later
    use their own drand48 (x = seed << 16 | 0x330E, then x = x * 0x5DEECE66D + 11
    mod 2**48, rand(n) = n * x / 2**48) on every platform, so this is exact.
    """
    ordered = [values[k] for k in sorted(values)]
    n = len(ordered)
    if n == 0:
        raise ValueError("no documents")
    means: list[float] = []
    for seed in range(resamples):
        x = ((seed & 0xFFFFFFFF) << 16) | 0x330E
        total = 0.0
        for _ in range(n):
            x = (x * _DRAND48_MULT + _DRAND48_ADD) & _DRAND48_MASK
            # Perl's += in draw order, and int() of n * drand48(): the float ops as ROUGE does.
            total += ordered[int(n * (x / 2.0**48))]
        means.append(total / n)
    means.sort()
    total = 0.0
    for m in means:
        total += m
    return float(f"{total / resamples:7.5f}")


def score_rouge(
    summaries: Mapping[str, str],
    references: Mapping[str, Sequence[str]],
    lang: Lang = "en",
    metrics: Sequence[str] = ROUGE_METRICS,
    formula: Formula = "A",
    alpha: float = 0.5,
    length_limit: int | None = None,
    length_unit: LengthUnit = "word",
    average: Average = "exact",
) -> dict[str, Any]:
    """Score every document; the system figures are means over the reference documents.

    A document with references but no summary scores 0 and is listed under
    `missing`; a summary of a document without references is a ValueError.
    With `length_limit` (not 0) the summaries and the references are cut to it
    first, as ROUGE-1.5.5's ``-l`` does (`cut_to_limit`). With ``average="rouge155"``
    the system figures are ROUGE-1.5.5's bootstrap estimate (`rouge155_bootstrap`,
    evaluation ids ``<document>.onsite``) instead of the exact means.
    """
    extra = [d for d in summaries if d not in references]
    if extra:
        raise ValueError(f"summary for document {extra[0]!r}, which has no reference")
    if length_limit is not None and length_limit < 0:
        raise ValueError(f"length limit {length_limit}: give 0 (no limit) or more")
    limit = length_limit or 0
    documents: list[dict[str, Any]] = []
    missing: list[str] = []
    for doc, refs in references.items():
        if doc not in summaries:
            missing.append(doc)
        summary = cut_to_limit(summaries.get(doc, ""), limit, length_unit)
        cut_refs = [cut_to_limit(r, limit, length_unit) for r in refs]
        scores = rouge_document(summary, cut_refs, lang, metrics, formula, alpha)
        documents.append(
            {"document": doc, "references": len(refs)}
            | {f"{m}_{k}": v for m, s in scores.items() for k, v in s.to_dict().items()}
        )
    n = len(documents)
    if n == 0:
        raise ValueError("no reference documents")
    figures: dict[str, Any] = {"lang": lang, "formula": formula, "alpha": alpha, "documents": n}
    figures["average"] = average
    for m in metrics:
        for k in ("recall", "precision", "f"):
            figures[f"{m}_{k}"] = math.fsum(d[f"{m}_{k}"] for d in documents) / n
        if average == "rouge155":
            printed = {
                f"{d['document']}.onsite": rouge155_printed(
                    d[f"{m}_recall"], d[f"{m}_precision"], alpha
                )
                for d in documents
            }
            for i, k in enumerate(("recall", "precision", "f")):
                figures[f"{m}_{k}"] = rouge155_bootstrap({e: v[i] for e, v in printed.items()})
    return {**figures, "missing": missing, "per_document": documents}


def _text_field(path: Path, line: int, row: Any) -> tuple[str, str]:
    if not isinstance(row, dict):
        raise FormatError(path, line, "not a JSON object", 'write {"id": ..., "text": ...}')
    doc = row.get("id", row.get("document"))
    text = row.get("text", row.get("summary"))
    if not isinstance(doc, str | int) or isinstance(doc, bool) or str(doc) == "":
        raise FormatError(path, line, "no document id", 'give "id" (a string)')
    if not isinstance(text, str):
        raise FormatError(path, line, 'no "text" string', 'give "text": the summary')
    return str(doc), text


def read_summaries(
    path: str | Path, several: bool = False, encoding: str | None = None
) -> dict[str, list[str]]:
    """Read JSON lines ``{"id": doc, "text": summary}`` (``summary``/``document`` also accepted).

    With `several` (reference files) an id may repeat: one line per
    reference summary. Otherwise a repeated id is a `FormatError`. ``encoding`` is
    the file's (scoring.charsets: gbk, big5, utf-16le ...; None: UTF-8, a BOM
    allowed): a corpus's summaries are JSON lines in the corpus's encoding.
    """
    from .ocr import misread_hint

    path = Path(path)
    out: dict[str, list[str]] = {}
    for n, raw in enumerate(iter_named_lines(path, encoding), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise FormatError(
                path,
                n,
                f"invalid JSON ({exc.msg}){misread_hint(path, encoding)}",
                "one object per line",
            ) from None
        doc, text = _text_field(path, n, row)
        if doc in out and not several:
            raise FormatError(path, n, f"document {doc!r} repeated", "one summary per document")
        out.setdefault(doc, []).append(text)
    if not out:
        raise FormatError(path, None, "no summaries", 'write one {"id", "text"} object per line')
    return out


def score_rouge_files(
    hyp: str | Path,
    ref: Iterable[str | Path],
    lang: Lang = "en",
    formula: Formula = "A",
    alpha: float = 0.5,
    length_limit: int | None = None,
    length_unit: LengthUnit | None = None,
    average: Average = "exact",
    encoding: str | None = None,
) -> dict[str, Any]:
    """`onsite score rouge`: a system's summaries against one or more reference files.

    Every file is read in ``encoding`` (`read_summaries`; None: UTF-8).

    With `length_limit` (0: none) the summaries and the references are cut to it
    first, as ROUGE-1.5.5's ``-l`` does (`cut_to_limit`), counting `length_unit`
    (default: `default_unit` of `lang`). The result's ``warnings`` say how its
    system figures relate to ROUGE-1.5.5's (`rouge_warnings`).
    """
    if length_limit is not None and length_limit < 0:
        raise ValueError(f"--length-limit {length_limit}: give 0 (no limit) or more")
    unit = length_unit or default_unit(lang)
    summaries = {d: texts[0] for d, texts in read_summaries(hyp, encoding=encoding).items()}
    references: dict[str, list[str]] = {}
    for path in ref:
        for doc, texts in read_summaries(path, several=True, encoding=encoding).items():
            references.setdefault(doc, []).extend(texts)
    try:
        result = score_rouge(
            summaries,
            references,
            lang,
            formula=formula,
            alpha=alpha,
            length_limit=length_limit,
            length_unit=unit,
            average=average,
        )
    except ValueError as exc:
        raise FormatError(
            hyp, None, str(exc), "give summaries only for reference documents"
        ) from None
    if length_limit:
        result["length_limit"], result["length_unit"] = length_limit, unit
    result["warnings"] = rouge_warnings(lang, average, unit if length_limit else None)
    return result


def rouge_warnings(lang: Lang, average: Average, limit_unit: LengthUnit | None) -> list[str]:
    """What a user comparing with ROUGE-1.5.5 must know about these figures, and the flag."""
    out: list[str] = []
    if average == "exact":
        out.append(
            "system figures are the exact means of the per-document R, P and F; ROUGE-1.5.5 "
            "prints the mean of 1,000 bootstrap resamples of the per-document values rounded "
            "to 5 decimals, which differs from it in the 3rd to 5th decimal "
            "(--average rouge155 prints ROUGE-1.5.5's figure)"
        )
    else:
        out.append(
            "system figures are ROUGE-1.5.5's bootstrap means (-r 1000, srand(0..999), evaluation "
            "ids '<document>.onsite'); ROUGE run with other ids gives another estimate; "
            "--average exact prints the exact means"
        )
    if lang == "zh":
        out.append(
            "--lang zh: scored one token per Chinese character; ROUGE-1.5.5 deletes non-ASCII "
            "text (--lang en tokenises as it does)"
        )
        if limit_unit == "char":
            out.append(
                "--lang zh: the length limit counts non-space characters (ROUGE-1.5.5 has no "
                "unit for Chinese; --length-unit word counts words, as its -l does)"
            )
    return out
