"""All MT metrics of a whole test set at once: `score_mt`'s numbers from array arithmetic.

`scoring.mt.score_mt` counts n-grams as tuples of strings, one segment at a
time, which takes minutes for 100,000 segments. This module gives the same
report (the same integers, and floats added in the same order, so equal to
the last bit) from integer-coded tokens:

* all texts are tokenised as one string (`_tokenize_all`) and tokens coded
  as integers; n-grams get integer codes order by order from their prefix's
  code and their last token;
* per segment n-gram counts, clipping against the largest count in any one
  reference, and NIST information come from sorting and counting the codes
  with numpy; each segment's NIST gain is added in the order `score_mt` adds
  it (n-grams by first position) and documents and the system add segments
  in order, as `score_mt`'s left fold does;
* GTM (exponent 1: the clipped unigram overlap) and mPER come from the same
  counts; mWER and GTM with another exponent from the compiled kernels in
  `scoring._fast_mt`.

Only the metrics asked for are computed (`METRICS`; BLEU alone needs no
NIST information, no 5-grams and no numba).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from .mt import (
    BLEU_ORDER,
    NIST_ORDER,
    ErrorStats,
    GtmStats,
    MtDocument,
    MtReport,
    MtScores,
    MtSegment,
    MtSegmentScore,
    NgramStats,
    _closest_lengths,
    _densify,
    _tokenize_all,
    check_segments,
)

__all__ = ["METRICS", "METRIC_KEYS", "score_mt_batch", "select_metrics"]

METRICS = ("bleu", "nist", "gtm", "mwer", "mper", "bleu_shortest")
"""Metric names of `score_mt_batch` and `onsite score mt --metrics`."""

METRIC_KEYS: dict[str, tuple[str, ...]] = {
    "bleu": ("bleu", "bleu_precisions", "hyp_len", "ref_len"),
    "nist": ("nist", "hyp_len"),
    "gtm": ("gtm", "gtm_precision", "gtm_recall"),
    "mwer": ("mwer", "wer_errors", "wer_ref_len"),
    "mper": ("mper", "per_errors", "per_ref_len"),
    "bleu_shortest": ("bleu_shortest", "hyp_len", "ref_len_shortest"),
}
"""The keys of `MtScores.to_dict` that belong to each metric."""

_ALL_SCORE_KEYS = {key for keys in METRIC_KEYS.values() for key in keys}


def select_metrics(scores: dict[str, Any], metrics: Collection[str]) -> dict[str, Any]:
    """`MtScores.to_dict()` output keeping only the keys of `metrics` (other keys stay)."""
    keep = {key for m in metrics for key in METRIC_KEYS[m]}
    return {k: v for k, v in scores.items() if k in keep or k not in _ALL_SCORE_KEYS}


def score_mt_batch(
    segments: Sequence[MtSegment],
    lang: str = "en",
    gtm_exponent: float = 1.0,
    metrics: Collection[str] = METRICS,
    with_segments: bool = True,
) -> MtReport:
    """`score_mt`'s report, computed for the whole set at once.

    Metrics not in `metrics` are left at zero counts in the report (drop
    their keys with `select_metrics`); `with_segments=False` leaves the
    per-segment scores out (the report's ``segments`` is empty).
    """
    unknown = set(metrics) - set(METRICS)
    if not metrics:
        raise ValueError(f"no MT metric chosen; choose from {list(METRICS)}")
    if unknown:
        raise ValueError(f"unknown MT metric(s) {sorted(unknown)}; choose from {list(METRICS)}")
    n_refs = check_segments(segments)
    if n_refs == 0:
        raise ValueError("a segment needs at least one reference")
    n_seg = len(segments)
    texts = [s.hyp for s in segments]
    for k in range(n_refs):
        texts.extend(s.refs[k] for s in segments)
    codes, off, zero_token = _code_texts(texts, lang)
    del texts
    lengths = np.diff(off)
    hyp_len = lengths[:n_seg]
    ref_len = lengths[n_seg:].reshape(n_refs, n_seg)

    wanted = set(metrics)
    ngrams = _NgramCounts(codes, off, n_seg, n_refs, zero_token, wanted)
    overlap = ngrams.overlap  # (n_refs, n_seg) clipped unigram overlap per reference

    gtm_weight = np.zeros(n_seg)
    gtm_ref = np.zeros(n_seg, dtype=np.int64)
    if "gtm" in wanted:
        if gtm_exponent == 1.0:
            weights = overlap.astype(np.float64)
        else:
            from ._fast_mt import gtm_weights

            weights = gtm_weights(codes.astype(np.int32), off, n_seg, n_refs, gtm_exponent)
        gtm_weight, gtm_ref = _best_gtm(weights, hyp_len, ref_len, gtm_exponent)
    wer_errors = wer_ref = np.zeros(n_seg, dtype=np.int64)
    if "mwer" in wanted:
        from ._fast_mt import edit_distances

        errors = edit_distances(codes.astype(np.int32), off, n_seg, n_refs)
        wer_errors, wer_ref = _min_rate(errors, ref_len)
    per_errors = per_ref = np.zeros(n_seg, dtype=np.int64)
    if "mper" in wanted:
        errors = np.maximum(hyp_len[None, :], ref_len) - overlap
        per_errors, per_ref = _min_rate(errors, ref_len)

    ref_closest = _closest_lengths(hyp_len, ref_len.T)
    ref_shortest = ref_len.min(axis=0)
    ref_words = ref_len.sum(axis=0)
    columns = _Columns(
        matches=ngrams.matches,
        totals=np.maximum(hyp_len[None, :] - np.arange(NIST_ORDER)[:, None], 0),
        info=ngrams.info,
        ints=np.stack([ref_closest, ref_shortest, ref_words, gtm_ref, hyp_len]),
        gtm_weight=gtm_weight,
        errors=np.stack([wer_errors, wer_ref, per_errors, per_ref]),
    )

    doc_index: dict[str, int] = {}
    doc_of = np.fromiter(
        (doc_index.setdefault(s.doc_id, len(doc_index)) for s in segments),
        dtype=np.int64,
        count=n_seg,
    )
    doc_totals = columns.sums(doc_of, len(doc_index))
    n_per_doc = np.bincount(doc_of, minlength=len(doc_index)).tolist()
    documents = tuple(
        MtDocument(doc_id, n_per_doc[d], doc_totals.scores(d, n_refs, gtm_exponent))
        for doc_id, d in doc_index.items()
    )
    system = columns.sums(np.zeros(n_seg, dtype=np.int64), 1).scores(0, n_refs, gtm_exponent)
    seg_scores: tuple[MtSegmentScore, ...] = ()
    if with_segments:
        rows = columns.as_lists()
        seg_scores = tuple(
            MtSegmentScore(s.doc_id, s.seg_id, rows.scores(i, n_refs, gtm_exponent))
            for i, s in enumerate(segments)
        )
    return MtReport(lang, n_refs, system, documents, seg_scores)


class _NgramCounts:
    """Per-segment BLEU/NIST counts and per-reference unigram overlaps.

    Memory is a few arrays of one integer per token: hypothesis tokens come
    first and each reference set's tokens are one slice, so no per-token
    "which side, which set" arrays are kept.
    """

    def __init__(
        self,
        codes: np.ndarray,
        off: np.ndarray,
        n_seg: int,
        n_refs: int,
        zero_token: int | None,
        wanted: set[str],
    ) -> None:
        n_texts = len(off) - 1
        lengths = np.diff(off)
        text_of = np.repeat(np.arange(n_texts, dtype=np.int32), lengths)
        # Tokens from each position to the end of its text: an n-gram starts there if >= n.
        left = (off[1:][text_of] - np.arange(len(codes))).astype(np.int32)
        seg_of = text_of % np.int32(n_seg)
        del text_of
        hyp_end = int(off[n_seg])
        # Where each reference set's tokens start and end.
        set_bounds = [int(off[(k + 1) * n_seg]) for k in range(n_refs + 1)]

        need_ngrams = bool(wanted & {"bleu", "nist", "bleu_shortest"})
        nist = "nist" in wanted
        max_order = NIST_ORDER if nist else (BLEU_ORDER if need_ngrams else 1)
        self.matches = np.zeros((NIST_ORDER, n_seg), dtype=np.int64)
        self.info = np.zeros((NIST_ORDER, n_seg), dtype=np.float64)
        self.overlap = np.zeros((n_refs, n_seg), dtype=np.int64)
        n_types = max(int(codes.max(initial=-1)) + 1, 1)
        ref_words = int(lengths[n_seg:].sum())

        gram = codes
        n_grams = n_types
        prev_ref_count = np.zeros(0, dtype=np.int64)
        prefix_of = np.zeros(0, dtype=np.int64)
        for n in range(1, max_order + 1):
            if n > 1:
                size = max(len(gram) - 1, 0)
                fits = left[:size] >= n
                keys = gram[:size][fits].astype(np.int64) * n_types + codes[n - 1 :][fits]
                prev = gram[:size][fits]
                gram = np.full(size, -1, dtype=np.int32)
                dense, n_grams = _densify(keys)
                del keys
                gram[fits] = dense
                if nist:
                    # Each n-gram's (n-1)-gram prefix, for its information weight.
                    prefix_of = np.zeros(n_grams, dtype=np.int64)
                    prefix_of[dense] = prev
                del dense, prev
            else:
                fits = left >= 1
            size = len(gram)
            # Hypothesis: each distinct (segment, n-gram) with its count and first position.
            h_pos = np.flatnonzero(fits[:hyp_end])
            h_keys = seg_of[h_pos].astype(np.int64) * n_grams + gram[h_pos]
            del h_pos
            h_uniq, h_first, h_count = np.unique(h_keys, return_index=True, return_counts=True)
            del h_keys
            h_seg = h_uniq // n_grams
            # References: each set's (segment, n-gram) keys, then the largest count per key.
            r_keys, sets = [], []
            for k in range(n_refs):
                lo, hi = set_bounds[k], min(set_bounds[k + 1], size)
                pos = lo + np.flatnonzero(fits[lo:hi])
                r_keys.append(seg_of[pos].astype(np.int64) * n_grams + gram[pos])
                sets.append(np.full(len(pos), k, dtype=np.int64))
            if n == 1:
                for k in range(n_refs):
                    r_k = _largest_count(h_uniq, r_keys[k], sets[k] * 0, 1)
                    self.overlap[k] = _sum_by(h_seg, np.minimum(h_count, r_k), n_seg)
            if not need_ngrams:
                break
            all_r = np.concatenate(r_keys)
            r_max = _largest_count(h_uniq, all_r, np.concatenate(sets), n_refs)
            del r_keys, sets
            clipped = np.minimum(h_count, r_max)
            self.matches[n - 1] = _sum_by(h_seg, clipped, n_seg)
            if nist:
                ref_count = np.bincount(all_r % n_grams, minlength=n_grams)
                matched = clipped > 0
                # `score_mt` adds a segment's gains in the order its n-grams first appear.
                order = np.argsort(h_first[matched], kind="stable")
                m_gram = (h_uniq[matched] % n_grams)[order]
                m_seg = h_seg[matched][order]
                m_clip = clipped[matched][order]
                count = ref_count[m_gram]
                if n == 1:
                    denom = np.full(len(m_gram), ref_words, dtype=np.int64)
                else:
                    prefix = prefix_of[m_gram]
                    denom = prev_ref_count[prefix]
                    if n == 2 and zero_token is not None:
                        # mteval's Perl truth test: a "0" prefix divides by the word total.
                        denom = np.where(prefix == zero_token, ref_words, denom)
                info = _information(count, denom)
                self.info[n - 1] = np.bincount(m_seg, weights=info * m_clip, minlength=n_seg)
                prev_ref_count = ref_count
            del all_r, h_uniq, h_first, h_count, h_seg


def _sum_by(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """Integer sums of `values` per group (float sums of integers are exact below 2**53)."""
    return np.bincount(group, weights=values, minlength=n_groups).astype(np.int64)


# Texts tokenised at a time: the Python token strings of a chunk are dropped
# once coded, so the whole set's tokens never live as strings at once.
_CHUNK_TEXTS = 8192


def _code_texts(texts: Sequence[str], lang: str) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Integer codes of all texts' tokens (equal tokens, equal codes), each text's start
    (plus the end), and the code of the token "0" if there is one."""
    ids: dict[str, int] = {}
    parts, lengths = [], []
    for start in range(0, len(texts), _CHUNK_TEXTS):
        tokens, off = _tokenize_all(texts[start : start + _CHUNK_TEXTS], lang)
        new = [tok for tok in dict.fromkeys(tokens) if tok not in ids]
        ids.update(zip(new, range(len(ids), len(ids) + len(new)), strict=True))
        parts.append(np.fromiter(map(ids.__getitem__, tokens), dtype=np.int32, count=len(tokens)))
        lengths.append(np.diff(off))
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(np.concatenate(lengths), out=offsets[1:])
    return np.concatenate(parts), offsets, ids.get("0")


def _largest_count(
    h_uniq: np.ndarray, r_keys: np.ndarray, sets: np.ndarray, n_refs: int
) -> np.ndarray:
    """For each sorted hypothesis key, its largest count in one reference set (0 if none)."""
    if not len(r_keys):
        return np.zeros(len(h_uniq), dtype=np.int64)
    if n_refs == 1:
        r_uniq, r_count = np.unique(r_keys, return_counts=True)
    else:
        tagged = r_keys * n_refs + sets
        t_uniq, t_count = np.unique(tagged, return_counts=True)
        keys = t_uniq // n_refs
        starts = np.flatnonzero(np.diff(keys, prepend=-1))
        r_uniq = keys[starts]
        r_count = np.maximum.reduceat(t_count, starts)
    at = np.minimum(np.searchsorted(r_uniq, h_uniq), len(r_uniq) - 1)
    return np.where(r_uniq[at] == h_uniq, r_count[at], 0)


def _information(count: np.ndarray, denom: np.ndarray) -> np.ndarray:
    """``-log(count / denom) / log(2)`` as `ngram_info` computes it, value for value.

    The division is IEEE in numpy as in Python; the logarithm is math.log's
    (numpy's own may differ in the last bit), over the matched n-grams only.
    """
    ratio = count / denom
    logs = np.fromiter(map(math.log, ratio.tolist()), dtype=np.float64, count=len(ratio))
    return -logs / math.log(2)


def _best_gtm(
    weights: np.ndarray, hyp_len: np.ndarray, ref_len: np.ndarray, exponent: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per segment the weight and reference length of the reference with the best F.

    The first reference wins a tie, as in `_gtm_segment`; F is computed with
    the same float operations as `GtmStats.f`.
    """
    n_refs, n_seg = weights.shape
    best_f = np.full(n_seg, -1.0)
    best_w = np.zeros(n_seg)
    best_r = np.zeros(n_seg, dtype=np.int64)
    h = hyp_len.astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        for k in range(n_refs):
            w = weights[k]
            size = w if exponent == 1.0 else np.array([x ** (1.0 / exponent) for x in w.tolist()])
            size = np.where(w > 0, size, 0.0)
            r = ref_len[k].astype(np.float64)
            p = np.where(hyp_len > 0, size / h, 0.0)
            rec = np.where(ref_len[k] > 0, size / r, 0.0)
            f = np.where(p + rec > 0, 2 * p * rec / (p + rec), 0.0)
            better = f > best_f
            best_f = np.where(better, f, best_f)
            best_w = np.where(better, w, best_w)
            best_r = np.where(better, ref_len[k], best_r)
    return best_w, best_r


def _min_rate(errors: np.ndarray, ref_len: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per segment the (errors, reference length) of the lowest (rate, errors), first on a tie."""
    rate = errors / np.maximum(ref_len, 1)
    best_e, best_r, best_rate = errors[0], ref_len[0], rate[0]
    for k in range(1, len(errors)):
        better = (rate[k] < best_rate) | ((rate[k] == best_rate) & (errors[k] < best_e))
        best_e = np.where(better, errors[k], best_e)
        best_r = np.where(better, ref_len[k], best_r)
        best_rate = np.where(better, rate[k], best_rate)
    return best_e, best_r


class _Columns:
    """Per-segment (or per-group) counts as arrays; groups are added in segment order."""

    def __init__(
        self,
        matches: Any,
        totals: Any,
        info: Any,
        ints: Any,
        gtm_weight: Any,
        errors: Any,
    ) -> None:
        self.matches, self.totals, self.info = matches, totals, info
        self.ints, self.gtm_weight, self.errors = ints, gtm_weight, errors

    def sums(self, group: np.ndarray, n_groups: int) -> _Columns:
        """Totals per group; bincount adds each group's members in order, as a left fold."""

        def add(rows: np.ndarray, integer: bool) -> np.ndarray:
            out = np.zeros((rows.shape[0], n_groups), dtype=np.int64 if integer else np.float64)
            for i, row in enumerate(rows):
                # Float sums of integers are exact below 2**53.
                out[i] = np.bincount(group, weights=row, minlength=n_groups)
            return out

        return _Columns(
            add(self.matches, True).tolist(),
            add(self.totals, True).tolist(),
            add(self.info, False).tolist(),
            add(self.ints, True).tolist(),
            add(self.gtm_weight[None, :], False)[0].tolist(),
            add(self.errors, True).tolist(),
        )

    def as_lists(self) -> _Columns:
        """The same columns as Python lists, for per-segment objects."""
        return _Columns(
            self.matches.tolist(),
            self.totals.tolist(),
            self.info.tolist(),
            self.ints.tolist(),
            self.gtm_weight.tolist(),
            self.errors.tolist(),
        )

    def scores(self, i: int, n_refs: int, exponent: float) -> MtScores:
        """Column `i` as `MtScores` (the columns must be lists: see `as_lists`, `sums`)."""
        closest, shortest, words, gtm_ref, hyp_len = (row[i] for row in self.ints)
        wer_e, wer_r, per_e, per_r = (row[i] for row in self.errors)
        ngrams = NgramStats(
            tuple(row[i] for row in self.matches),
            tuple(row[i] for row in self.totals),
            tuple(row[i] for row in self.info),
            closest,
            shortest,
            words,
            n_refs,
        )
        return MtScores(
            ngrams,
            GtmStats(self.gtm_weight[i], hyp_len, gtm_ref, exponent),
            ErrorStats(wer_e, wer_r),
            ErrorStats(per_e, per_r),
        )
