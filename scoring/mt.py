"""Machine-translation scoring: BLEU, NIST, GTM, mWER, mPER (CWMT/HTRDP; not ICT or
Woodpecker, whose definitions and data are not public).

BLEU and NIST follow NIST ``mteval-v13a.pl`` run with ``-c`` (case
preserved), reading its source rather than a paper:

* ``score_segment``: n-grams of every order are counted per segment; a
  hypothesis n-gram matches up to the largest count of that n-gram in any one
  reference (clipping); the reference length for the brevity penalty is the
  reference length closest to the hypothesis length, the shorter one on a tie
  (``brevity_penalty_closest``);
* documents and the system add the segment counts (matches, n-gram totals,
  reference lengths, NIST information) and score the sums, so corpus BLEU is
  not an average of segment BLEU;
* ``bleu_score`` (the default, smoothed): an order whose hypothesis has no
  n-grams at all (segment shorter than n) contributes precision 1 (log 0);
  an order with n-grams but no match contributes ``1 / (2**k * total)``,
  k counting such orders from 1; the brevity penalty is
  ``exp(min(0, 1 - ref_len / hyp_len))`` and 0 for an empty hypothesis;
* ``bleu_score_nosmoothing`` (v11b, used by CWMT's scorer, here with the
  shortest reference length): 0 whenever there is no 4-gram match;
* ``nist_score``: the sum over n = 1..5 of (information of the matched
  n-grams) / (hypothesis n-gram count), times
  ``exp(-beta * log(ratio)**2)`` for ratio = hypothesis length / average
  reference length below 1, beta = -log(0.5) / log(1.5)**2;
* n-gram information comes from all reference segments:
  ``info(w1..wn) = -log2(count(w1..wn) / count(w1..wn-1))`` and
  ``count(w1) / total words`` for unigrams. mteval tests the prefix with
  Perl truth, so a bigram whose first token is the string ``0`` is divided by
  the total word count instead; that quirk is reproduced.

GTM, mWER and mPER follow the HTRDP definitions (see docs/scoring-mt.md for
the multi-reference choice and aggregation conventions).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from .mt_tokenize import (
    _DIGIT_DASH,
    _PERIOD_COMMA_AFTER,
    _PERIOD_COMMA_BEFORE,
    _PUNCT,
    CJK_LANGS,
    tokenize,
)

__all__ = [
    "BLEU_ORDER",
    "NIST_ORDER",
    "GtmStats",
    "MtDocument",
    "MtReport",
    "MtScores",
    "MtSegment",
    "NgramStats",
    "as_sgml_text",
    "bleu_from_stats",
    "corpus_bleu",
    "edit_distance",
    "gtm_match_size",
    "ngram_info",
    "nist_from_stats",
    "per_errors",
    "score_mt",
    "segment_ngram_stats",
]

BLEU_ORDER = 4
NIST_ORDER = 5
_NIST_BETA = -math.log(0.5) / math.log(1.5) / math.log(1.5)

Brevity = Literal["closest", "shortest"]
Ngram = tuple[str, ...]


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class MtSegment:
    """One hypothesis segment with its references (raw, untokenised text)."""

    doc_id: str
    seg_id: str
    hyp: str
    refs: tuple[str, ...]
    line: int | None = None  # line of the hypothesis in its file, for messages

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "seg_id": self.seg_id,
            "hyp": self.hyp,
            "refs": list(self.refs),
            "line": self.line,
        }


# --------------------------------------------------------------------------- n-gram stats


def _ngrams(tokens: Sequence[str], max_n: int) -> Counter[Ngram]:
    counts: Counter[Ngram] = Counter()
    for i in range(len(tokens)):
        for n in range(1, max_n + 1):
            if i + n > len(tokens):
                break
            counts[tuple(tokens[i : i + n])] += 1
    return counts


def ngram_info(references: Iterable[Sequence[str]]) -> dict[Ngram, float]:
    """NIST information weight of every n-gram (n <= 5) seen in the references."""
    counts: Counter[Ngram] = Counter()
    total_words = 0
    for ref in references:
        total_words += len(ref)
        counts.update(_ngrams(ref, NIST_ORDER))
    info: dict[Ngram, float] = {}
    for gram, count in counts.items():
        prefix = gram[:-1]
        # mteval: `$mgram ? count/count(mgram) : count/tot_wrds` -- Perl treats
        # the prefix string "0" as false, so "0 x" bigrams use the word total.
        if prefix and not (len(prefix) == 1 and prefix[0] == "0"):
            info[gram] = -math.log(count / counts[prefix]) / math.log(2)
        else:
            info[gram] = -math.log(count / total_words) / math.log(2)
    return info


def _closest(lengths: Sequence[int], hyp_len: int) -> int:
    return min(lengths, key=lambda r: (abs(hyp_len - r), r))


@dataclass(frozen=True)
class NgramStats:
    """Additive BLEU/NIST counts for a segment, a document or the system.

    Index 0 of each tuple is order 1. ``ref_words`` is the summed length of
    all references (NIST's average reference length is ref_words / n_refs).
    """

    matches: tuple[int, ...]
    totals: tuple[int, ...]
    info: tuple[float, ...]
    ref_len_closest: int
    ref_len_shortest: int
    ref_words: int
    n_refs: int

    @classmethod
    def zero(cls, n_refs: int) -> NgramStats:
        z = (0,) * NIST_ORDER
        return cls(z, z, (0.0,) * NIST_ORDER, 0, 0, 0, n_refs)

    def __add__(self, other: NgramStats) -> NgramStats:
        return NgramStats(
            tuple(a + b for a, b in zip(self.matches, other.matches, strict=True)),
            tuple(a + b for a, b in zip(self.totals, other.totals, strict=True)),
            tuple(a + b for a, b in zip(self.info, other.info, strict=True)),
            self.ref_len_closest + other.ref_len_closest,
            self.ref_len_shortest + other.ref_len_shortest,
            self.ref_words + other.ref_words,
            self.n_refs,
        )

    @property
    def hyp_len(self) -> int:
        return self.totals[0]

    def to_dict(self) -> dict[str, Any]:
        return {
            "matches": list(self.matches),
            "totals": list(self.totals),
            "info": list(self.info),
            "hyp_len": self.hyp_len,
            "ref_len_closest": self.ref_len_closest,
            "ref_len_shortest": self.ref_len_shortest,
            "ref_words": self.ref_words,
            "n_refs": self.n_refs,
        }


def segment_ngram_stats(
    hyp: Sequence[str], refs: Sequence[Sequence[str]], info: dict[Ngram, float]
) -> NgramStats:
    """mteval's ``score_segment`` for one tokenised hypothesis and its references."""
    if not refs:
        raise ValueError("a segment needs at least one reference")
    hyp_counts = _ngrams(hyp, NIST_ORDER)
    ref_max: Counter[Ngram] = Counter()
    for ref in refs:
        for gram, count in _ngrams(ref, NIST_ORDER).items():
            if count > ref_max[gram]:
                ref_max[gram] = count
    matches = [0] * NIST_ORDER
    gained = [0.0] * NIST_ORDER
    for gram, count in hyp_counts.items():
        clipped = min(count, ref_max.get(gram, 0))
        if clipped:
            matches[len(gram) - 1] += clipped
            gained[len(gram) - 1] += info.get(gram, 0.0) * clipped
    totals = tuple(max(len(hyp) - n + 1, 0) for n in range(1, NIST_ORDER + 1))
    lengths = [len(r) for r in refs]
    return NgramStats(
        matches=tuple(matches),
        totals=totals,
        info=tuple(gained),
        ref_len_closest=_closest(lengths, len(hyp)),
        ref_len_shortest=min(lengths),
        ref_words=sum(lengths),
        n_refs=len(refs),
    )


def bleu_from_stats(stats: NgramStats, brevity: Brevity = "closest", smooth: bool = True) -> float:
    """BLEU (0..1) from summed counts: mteval-v13a ``bleu_score`` or, unsmoothed, v11b."""
    ref_len = stats.ref_len_closest if brevity == "closest" else stats.ref_len_shortest
    return _bleu(stats.matches, stats.totals, ref_len, smooth)


def _bleu(matches: Sequence[int], totals: Sequence[int], ref_len: int, smooth: bool) -> float:
    """BLEU from per-order matches and totals (index 0 is order 1) and the reference length."""
    hyp_len = totals[0]
    if hyp_len == 0:
        return 0.0  # mteval: exp_len_score stays 0 for an empty hypothesis
    log_bp = min(0.0, 1.0 - ref_len / hyp_len)
    log_sum = 0.0
    if smooth:
        halvings = 1
        for n in range(BLEU_ORDER):
            total, match = totals[n], matches[n]
            if total == 0:
                continue  # shorter than n: mteval adds log(1)
            if match == 0:
                halvings *= 2
                log_sum += math.log(1.0 / (halvings * total))
            else:
                log_sum += math.log(match / total)
    else:
        # v11b/--no-smoothing: the 4-gram cumulative score is 0 without a
        # 4-gram match; a 4-gram match implies matches at every lower order.
        if matches[BLEU_ORDER - 1] == 0:
            return 0.0
        for n in range(BLEU_ORDER):
            log_sum += math.log(matches[n] / totals[n])
    return math.exp(log_sum / BLEU_ORDER + log_bp)


def _nist_penalty(ratio: float) -> float:
    if ratio >= 1:
        return 1.0
    if ratio <= 0:
        return 0.0
    return math.exp(-_NIST_BETA * math.log(ratio) ** 2)


def nist_from_stats(stats: NgramStats) -> float:
    """NIST score (raw, unbounded) from summed counts, as mteval-v13a ``nist_score``."""
    score = sum(stats.info[n] / max(stats.totals[n], 1) for n in range(NIST_ORDER))
    if stats.ref_words == 0:
        # mteval dies dividing by zero here; with empty references nothing can
        # match, so the score is 0 whatever the penalty.
        return 0.0
    ratio = stats.hyp_len / (stats.ref_words / stats.n_refs)
    return score * _nist_penalty(ratio)


# --------------------------------------------------------------------------- GTM


def _longest_run(
    hyp: Sequence[str], ref: Sequence[str], used_h: list[bool], used_r: list[bool]
) -> tuple[int, int, int]:
    """Longest run of hits on free rows and columns: (length, hyp start, ref start)."""
    best = (0, 0, 0)
    prev = [0] * (len(ref) + 1)
    for i in range(len(hyp)):
        cur = [0] * (len(ref) + 1)
        if not used_h[i]:
            for j in range(len(ref)):
                if not used_r[j] and hyp[i] == ref[j]:
                    cur[j + 1] = prev[j] + 1
                    if cur[j + 1] > best[0]:
                        best = (cur[j + 1], i - cur[j + 1] + 1, j - cur[j + 1] + 1)
        prev = cur
    return best


def gtm_match_size(hyp: Sequence[str], ref: Sequence[str], exponent: float = 1.0) -> float:
    """Sum of run length ** exponent over a maximum matching (Melamed et al. 2003).

    With exponent 1 every maximal one-to-one matching of equal tokens is
    maximum, so this is the clipped unigram overlap. Above 1, GTM's greedy
    rule is used: take the longest run of hits whose rows and columns are
    still free (first in hypothesis order, then reference order), repeat.
    The caller takes the ``1/exponent`` root of the (summed) value.
    """
    if exponent == 1.0:
        h, r = Counter(hyp), Counter(ref)
        return float(sum(min(c, r[w]) for w, c in h.items()))
    used_h, used_r = [False] * len(hyp), [False] * len(ref)
    total = 0.0
    while True:
        length, i, j = _longest_run(hyp, ref, used_h, used_r)
        if length == 0:
            return total
        total += length**exponent
        for k in range(length):
            used_h[i + k] = used_r[j + k] = True


@dataclass(frozen=True)
class GtmStats:
    """Additive GTM counts: ``weight`` is the sum of run lengths ** exponent."""

    weight: float
    hyp_len: int
    ref_len: int
    exponent: float = 1.0

    def __add__(self, other: GtmStats) -> GtmStats:
        return GtmStats(
            self.weight + other.weight,
            self.hyp_len + other.hyp_len,
            self.ref_len + other.ref_len,
            self.exponent,
        )

    @property
    def match_size(self) -> float:
        return self.weight ** (1.0 / self.exponent) if self.weight > 0 else 0.0

    @property
    def precision(self) -> float:
        return self.match_size / self.hyp_len if self.hyp_len else 0.0

    @property
    def recall(self) -> float:
        return self.match_size / self.ref_len if self.ref_len else 0.0

    @property
    def f(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "f": self.f,
            "precision": self.precision,
            "recall": self.recall,
            "match_size": self.match_size,
            "hyp_len": self.hyp_len,
            "ref_len": self.ref_len,
            "exponent": self.exponent,
        }


def _gtm_segment(hyp: Sequence[str], refs: Sequence[Sequence[str]], exponent: float) -> GtmStats:
    # Multiple references: the reference giving the best F (first on a tie).
    best: GtmStats | None = None
    for ref in refs:
        cand = GtmStats(gtm_match_size(hyp, ref, exponent), len(hyp), len(ref), exponent)
        if best is None or cand.f > best.f:
            best = cand
    assert best is not None
    return best


# --------------------------------------------------------------------------- mWER / mPER


def edit_distance(hyp: Sequence[str], ref: Sequence[str]) -> int:
    """Levenshtein distance over tokens (unit costs)."""
    prev = list(range(len(ref) + 1))
    for i, h in enumerate(hyp, 1):
        cur = [i] + [0] * len(ref)
        for j, r in enumerate(ref, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (h != r))
        prev = cur
    return prev[-1]


def per_errors(hyp: Sequence[str], ref: Sequence[str]) -> int:
    """Position-independent errors: max(|hyp|, |ref|) minus the bag-of-words overlap."""
    h, r = Counter(hyp), Counter(ref)
    overlap = sum(min(c, r[w]) for w, c in h.items())
    return max(len(hyp), len(ref)) - overlap


@dataclass(frozen=True)
class ErrorStats:
    """Additive error-rate counts: errors against the chosen reference and its length."""

    errors: int
    ref_len: int

    def __add__(self, other: ErrorStats) -> ErrorStats:
        return ErrorStats(self.errors + other.errors, self.ref_len + other.ref_len)

    @property
    def rate(self) -> float:
        # An empty reference counts as length 1 so the rate stays finite.
        return self.errors / max(self.ref_len, 1)

    def to_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "errors": self.errors, "ref_len": self.ref_len}


def _min_rate(hyp: Sequence[str], refs: Sequence[Sequence[str]], errors_of: Any) -> ErrorStats:
    # HTRDP: min over references of errors / reference length (fewer errors,
    # then the first reference, on a tie).
    choices = [ErrorStats(errors_of(hyp, ref), len(ref)) for ref in refs]
    return min(choices, key=lambda s: (s.rate, s.errors))


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class MtScores:
    """All metrics for one scope (segment, document or system)."""

    ngrams: NgramStats
    gtm_stats: GtmStats
    wer_stats: ErrorStats
    per_stats: ErrorStats

    def __add__(self, other: MtScores) -> MtScores:
        return MtScores(
            self.ngrams + other.ngrams,
            self.gtm_stats + other.gtm_stats,
            self.wer_stats + other.wer_stats,
            self.per_stats + other.per_stats,
        )

    @property
    def bleu(self) -> float:
        return bleu_from_stats(self.ngrams, "closest", smooth=True)

    @property
    def bleu_shortest(self) -> float:
        return bleu_from_stats(self.ngrams, "shortest", smooth=False)

    @property
    def nist(self) -> float:
        return nist_from_stats(self.ngrams)

    @property
    def gtm(self) -> float:
        return self.gtm_stats.f

    @property
    def mwer(self) -> float:
        return self.wer_stats.rate

    @property
    def mper(self) -> float:
        return self.per_stats.rate

    def to_dict(self) -> dict[str, Any]:
        s = self.ngrams
        return {
            "bleu": self.bleu,
            "nist": self.nist,
            "gtm": self.gtm,
            "mwer": self.mwer,
            "mper": self.mper,
            "bleu_shortest": self.bleu_shortest,
            "bleu_precisions": [
                s.matches[n] / s.totals[n] if s.totals[n] else None for n in range(BLEU_ORDER)
            ],
            "hyp_len": s.hyp_len,
            "ref_len": s.ref_len_closest,
            "ref_len_shortest": s.ref_len_shortest,
            "gtm_precision": self.gtm_stats.precision,
            "gtm_recall": self.gtm_stats.recall,
            "wer_errors": self.wer_stats.errors,
            "wer_ref_len": self.wer_stats.ref_len,
            "per_errors": self.per_stats.errors,
            "per_ref_len": self.per_stats.ref_len,
        }


@dataclass(frozen=True)
class MtDocument:
    """Scores of one document (counts of its segments added)."""

    doc_id: str
    n_segments: int
    scores: MtScores

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "segments": self.n_segments, **self.scores.to_dict()}


@dataclass(frozen=True)
class MtSegmentScore:
    """Scores of one segment."""

    doc_id: str
    seg_id: str
    scores: MtScores

    def to_dict(self) -> dict[str, Any]:
        return {"doc_id": self.doc_id, "seg_id": self.seg_id, **self.scores.to_dict()}


@dataclass(frozen=True)
class MtReport:
    """System, document and segment scores of one hypothesis set."""

    lang: str
    n_refs: int
    system: MtScores
    documents: tuple[MtDocument, ...]
    segments: tuple[MtSegmentScore, ...]
    info: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self.system.to_dict(),
            "lang": self.lang,
            "n_refs": self.n_refs,
            "n_segments": len(self.segments),
            **self.info,
            "documents": [d.to_dict() for d in self.documents],
            "segments": [s.to_dict() for s in self.segments],
        }


def check_segments(segments: Sequence[MtSegment]) -> int:
    """The number of references every segment has; ValueError when there are no
    segments or they do not all have the same number."""
    if not segments:
        raise ValueError("no segments to score")
    n_refs = len(segments[0].refs)
    for seg in segments:
        if len(seg.refs) != n_refs:
            raise ValueError(
                f"segment {seg.doc_id}/{seg.seg_id} has {len(seg.refs)} references, "
                f"expected {n_refs}"
            )
    return n_refs


def score_mt(
    segments: Sequence[MtSegment], lang: str = "en", gtm_exponent: float = 1.0
) -> MtReport:
    """Score hypothesis segments against their references (all metrics, all levels)."""
    n_refs = check_segments(segments)
    hyps = [tokenize(s.hyp, lang) for s in segments]
    refs = [[tokenize(r, lang) for r in s.refs] for s in segments]
    info = ngram_info(r for seg_refs in refs for r in seg_refs)
    seg_scores: list[MtSegmentScore] = []
    for seg, hyp, seg_refs in zip(segments, hyps, refs, strict=True):
        scores = MtScores(
            segment_ngram_stats(hyp, seg_refs, info),
            _gtm_segment(hyp, seg_refs, gtm_exponent),
            _min_rate(hyp, seg_refs, edit_distance),
            _min_rate(hyp, seg_refs, per_errors),
        )
        seg_scores.append(MtSegmentScore(seg.doc_id, seg.seg_id, scores))
    by_doc: dict[str, list[MtScores]] = {}
    for s in seg_scores:
        by_doc.setdefault(s.doc_id, []).append(s.scores)
    documents = tuple(
        MtDocument(doc_id, len(parts), _total(parts)) for doc_id, parts in by_doc.items()
    )
    system = _total([s.scores for s in seg_scores])
    return MtReport(lang, n_refs, system, documents, tuple(seg_scores))


def _total(parts: Sequence[MtScores]) -> MtScores:
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


# --------------------------------------------------------------------------- corpus BLEU

# Marks segment boundaries when many segments are tokenised as one string. It
# is no punctuation, digit or space to the v13a rules, so with a space on each
# side every segment sees the same neighbours as when padded on its own, and
# it comes out as a token of its own (see `_tokenize_all`).
_SEGMENT_MARK = "\x00"


# `normalize_v13a`'s punctuation class (ASCII only) without the space.
# Padding a space with more spaces changes no token: the later rules can use a
# space only as a "not a digit" neighbour, which one space is as well as three,
# and spaces are most of that rule's matches.
_PUNCT_NO_SPACE = re.compile(
    "(["
    + re.escape("".join(c for c in map(chr, range(128)) if _PUNCT.fullmatch(c) and c != " "))
    + "])"
)
# Python's str.split() whitespace is Perl's \s plus these four.
_NOT_PERL_SPACE = re.compile("[\x1c-\x1f]")


def _spaced(pattern: re.Pattern[str], text: str, first: str, second: str) -> str:
    """``pattern.sub`` for a two-group pattern, each group put into a format like "{} ".

    re.sub with group references runs Python code per match on Python 3.11;
    re.split does the same non-overlapping scan in C and the formatting maps
    over the groups in C.
    """
    parts = pattern.split(text)
    if first != "{}":
        parts[1::3] = map(first.format, parts[1::3])
    if second != "{}":
        parts[2::3] = map(second.format, parts[2::3])
    return "".join(parts)


def _tokenize_v13a_batch(text: str) -> list[str]:
    """``tokenize_v13a(text)`` for text without \x1c-\x1f, with fewer per-match costs."""
    # The same steps as `normalize_v13a` (case-sensitive); tests compare the two.
    text = text.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    text = text.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
    text = text.replace("&gt;", ">")
    # " ".join of a one-group split is sub(r" \1 ").
    text = " ".join(_PUNCT_NO_SPACE.split(f" {text} "))
    text = _spaced(_PERIOD_COMMA_AFTER, text, "{} ", "{} ")
    text = _spaced(_PERIOD_COMMA_BEFORE, text, " {} ", "{}")
    text = _spaced(_DIGIT_DASH, text, "{} ", "{} ")
    # Whitespace runs as separators and no empty tokens: the collapse, strip
    # and split of `tokenize_v13a`, given no \x1c-\x1f in the text.
    return text.split()


def _tokenize_all(texts: Sequence[str], lang: str) -> tuple[list[str], np.ndarray]:
    """Tokens of all texts concatenated, and where each text's tokens start (plus the end).

    Equal to tokenising each text with `tokenize`, but the regular
    expressions run once over the joined text instead of once per segment,
    which is most of the cost for short segments.
    """
    mark = _SEGMENT_MARK
    joined = f" {mark} ".join(texts)
    if joined.count(mark) != len(texts) - 1:
        per_text = [tokenize(t, lang) for t in texts]
        tokens = [tok for toks in per_text for tok in toks]
        lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
    else:
        if lang.lower() in CJK_LANGS or _NOT_PERL_SPACE.search(joined):
            tokens = tokenize(joined, lang)
        else:
            tokens = _tokenize_v13a_batch(joined)
        # Each mark is a token of its own and the only token equal to it.
        is_mark = np.fromiter(map(mark.__eq__, tokens), dtype=bool, count=len(tokens))
        ends = np.flatnonzero(is_mark)
        lengths = np.diff(ends, prepend=-1, append=len(tokens)) - 1
        if len(ends):
            tokens = [tok for tok in tokens if tok != mark]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return tokens, offsets


def _densify(keys: np.ndarray) -> tuple[np.ndarray, int]:
    """Codes 0..k-1 for int64 keys, equal keys to equal codes, and k."""
    uniq, inverse = np.unique(keys, return_inverse=True)
    return inverse.astype(np.int64, copy=False).reshape(-1), len(uniq)


def _clipped_matches(hyp_keys: np.ndarray, ref_keys: Sequence[np.ndarray]) -> int:
    """Sum over distinct hypothesis keys of min(count, largest count in one reference set)."""
    h_uniq, h_count = np.unique(hyp_keys, return_counts=True)
    if len(ref_keys) == 1:
        r_uniq, r_count = np.unique(ref_keys[0], return_counts=True)
    else:
        # Count per (key, reference set), then the largest count of each key.
        n_sets = len(ref_keys)
        tagged = np.concatenate([k * n_sets + i for i, k in enumerate(ref_keys)])
        t_uniq, t_count = np.unique(tagged, return_counts=True)
        keys = t_uniq // n_sets
        starts = np.flatnonzero(np.diff(keys, prepend=-1))
        r_uniq = keys[starts]
        r_count = np.maximum.reduceat(t_count, starts) if len(starts) else t_count
    if not len(r_uniq):
        return 0
    at = np.minimum(np.searchsorted(r_uniq, h_uniq), len(r_uniq) - 1)
    clipped = np.where(r_uniq[at] == h_uniq, np.minimum(h_count, r_count[at]), 0)
    return int(clipped.sum())


def _closest_lengths(hyp_len: np.ndarray, ref_len: np.ndarray) -> np.ndarray:
    """Per segment the reference length closest to the hypothesis's, shorter on a tie."""
    # Smallest (distance, length) pair, as `_closest`, packed into one integer.
    span = int(ref_len.max(initial=0)) + 1
    packed = np.abs(ref_len - hyp_len[:, None]) * span + ref_len
    return packed.min(axis=1) % span


def corpus_bleu(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    lang: str = "en",
    brevity: Brevity = "closest",
    smooth: bool = True,
) -> float:
    """Corpus BLEU (0..1) of raw hypothesis strings, as ``score_mt(...).system.bleu``.

    `refs` holds reference sets, each with one string per hypothesis (the
    layout of ``sacrebleu.corpus_bleu``). ``brevity="shortest", smooth=False``
    gives ``bleu_shortest``. Only BLEU's counts are made (no NIST information,
    GTM or error rates), with tokens coded as integers and n-grams counted
    with numpy rather than as tuples of strings.
    """
    if not hyps:
        raise ValueError("no segments to score")
    if not refs:
        raise ValueError("a segment needs at least one reference")
    n_seg, n_sets = len(hyps), len(refs)
    for k, ref_set in enumerate(refs):
        if len(ref_set) != n_seg:
            raise ValueError(f"reference set {k} has {len(ref_set)} segments, expected {n_seg}")
    texts = [*hyps, *(r for ref_set in refs for r in ref_set)]
    tokens, offsets = _tokenize_all(texts, lang)
    # Tokens as integers; dict.fromkeys and map keep the per-token work in C.
    ids = {tok: k for k, tok in enumerate(dict.fromkeys(tokens))}
    gram = np.fromiter(map(ids.__getitem__, tokens), dtype=np.int64, count=len(tokens))
    n_types = max(len(ids), 1)

    lengths = np.diff(offsets)
    seg_of = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    left = offsets[1:][seg_of] - np.arange(len(tokens), dtype=np.int64)  # tokens from here on
    # Text t is hypothesis t % n_seg's (t < n_seg) or a reference of it.
    pair_of = seg_of % n_seg
    hyp_end = int(offsets[n_seg])

    matches, totals = [], []
    codes = gram
    n_grams = n_types
    for n in range(1, BLEU_ORDER + 1):
        if n > 1:
            # An n-gram's code from its (n-1)-gram prefix and its last token;
            # codes of positions where no n-gram fits are never read.
            keys = gram[: len(gram) - 1] * n_types + codes[n - 1 :]
            gram = np.full(len(keys), -1, dtype=np.int64)
            fits = left[: len(keys)] >= n
            gram[fits], n_grams = _densify(keys[fits])
        fits = left[: len(gram)] >= n
        keyed = np.where(fits, pair_of[: len(gram)] * n_grams + gram, -1)
        hyp_keys = keyed[:hyp_end][fits[:hyp_end]]
        ref_keys = [
            keyed[offsets[k * n_seg] : offsets[(k + 1) * n_seg]][
                fits[offsets[k * n_seg] : offsets[(k + 1) * n_seg]]
            ]
            for k in range(1, n_sets + 1)
        ]
        matches.append(_clipped_matches(hyp_keys, ref_keys))
        totals.append(len(hyp_keys))

    hyp_len = lengths[:n_seg]
    ref_len = lengths[n_seg:].reshape(n_sets, n_seg).T
    if brevity == "closest":
        ref_total = int(_closest_lengths(hyp_len, ref_len).sum())
    else:
        ref_total = int(ref_len.min(axis=1).sum())
    return _bleu(matches, totals, ref_total, smooth)


# --------------------------------------------------------------------------- SGML text


def as_sgml_text(text: str) -> str:
    """`text` as it stands inside mteval's SGML: ``&``, ``<``, ``>`` escaped.

    mteval reads only SGML and decodes ``&quot; &amp; &lt; &gt;`` (and drops
    ``<skipped>``) in that raw text, once. Escaping plain text first makes
    the tokeniser's decoding give the text back literally, as mteval sees
    a plain file wrapped by a standard SGML writer; escaping the XML
    parser's output gives back the raw markup text mteval reads (the
    parser already decoded it once). mteval's decoding runs one entity
    after the other, so a literal ``&lt;`` or ``&gt;`` still reads as
    ``<`` or ``>``, exactly as in mteval.
    """
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
