"""Word/character error rate scoring over a set of utterances.

Counts are summed over all utterances before any rate is taken (micro
averaging), which is how sclite reports corpus-level WER.

Conventions:

* A reference whose hypothesis is missing (absent from `hyps` or None, e.g.
  the system crashed on it) is scored against an empty hypothesis, so every
  reference token counts as a deletion. Missing hypotheses are also counted
  separately in ``missing_hypotheses``.
* Every rate is ``count / max(N, 1)`` where N is the number of reference
  tokens. With N == 0 the rate is therefore 0.0 when there is nothing to
  count, and the raw count (e.g. WER 2.0 for two insertions) otherwise. This
  keeps every value finite and JSON-serialisable, and never reports a
  perfect score for a system that inserted words into silence.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .asr_align import (
    Alignment,
    Unit,
    _align_counts,
    _alignments,
    _Counts,
    _Deferred,
    _gc_paused,
    _LazyField,
    _tokens_all,
)

__all__ = ["AsrReport", "AsrScore", "UtteranceScore", "score_asr", "utterance_counts"]


@dataclass(frozen=True)
class UtteranceScore:
    """Error counts and alignment for one utterance."""

    id: str
    ref_tokens: int
    correct: int
    substitutions: int
    deletions: int
    insertions: int
    alignment: Alignment
    condition: str | None = None
    hyp_missing: bool = False

    @property
    def errors(self) -> int:
        """Substitutions + deletions + insertions."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def hyp_tokens(self) -> int:
        """Number of hypothesis tokens."""
        return self.correct + self.substitutions + self.insertions

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts plus the alignment as ``[op, ref, hyp]`` triples."""
        return {
            "id": self.id,
            "condition": self.condition,
            "hyp_missing": self.hyp_missing,
            "ref_tokens": self.ref_tokens,
            "hyp_tokens": self.hyp_tokens,
            "correct": self.correct,
            "substitutions": self.substitutions,
            "deletions": self.deletions,
            "insertions": self.insertions,
            "errors": self.errors,
            "alignment": [[p.op, p.ref, p.hyp] for p in self.alignment.pairs],
        }


def _rate(count: int, total: int) -> float:
    # max(total, 1): see the module docstring for the N == 0 convention.
    return count / max(total, 1)


@dataclass(frozen=True)
class AsrScore:
    """Summed error counts over a set of utterances; rates are fractions."""

    utterances: int
    ref_tokens: int
    correct: int
    substitutions: int
    deletions: int
    insertions: int
    sentences_correct: int
    missing_hypotheses: int = 0

    @classmethod
    def from_utterances(cls, scores: Iterable[UtteranceScore]) -> AsrScore:
        """Sum per-utterance counts."""
        n = ref = c = s = d = i = ok = missing = 0
        for u in scores:
            n += 1
            ref += u.ref_tokens
            c += u.correct
            s += u.substitutions
            d += u.deletions
            i += u.insertions
            ok += u.errors == 0
            missing += u.hyp_missing
        return cls(n, ref, c, s, d, i, ok, missing)

    @classmethod
    def from_counts(cls, counts: Iterable[Sequence[int]], missing: int = 0) -> AsrScore:
        """Sum per-utterance ``[C, S, D, I]`` rows (`utterance_counts`'s); `missing`
        hypotheses among them. Any selection of rows, repeats included, gives the
        score of those utterances: the totals are sums."""
        n = c = s = d = i = ok = 0
        for cc, ss, dd, ii in counts:
            n += 1
            c += cc
            s += ss
            d += dd
            i += ii
            ok += not (ss or dd or ii)
        # Every reference token is correct, substituted or deleted.
        return cls(n, c + s + d, c, s, d, i, ok, missing)

    @property
    def errors(self) -> int:
        """Substitutions + deletions + insertions."""
        return self.substitutions + self.deletions + self.insertions

    @property
    def hyp_tokens(self) -> int:
        """Number of hypothesis tokens."""
        return self.correct + self.substitutions + self.insertions

    @property
    def wer(self) -> float:
        """(S + D + I) / N; can exceed 1.0 with many insertions."""
        return _rate(self.errors, self.ref_tokens)

    @property
    def correct_rate(self) -> float:
        """C / N."""
        return _rate(self.correct, self.ref_tokens)

    @property
    def sub_rate(self) -> float:
        """S / N."""
        return _rate(self.substitutions, self.ref_tokens)

    @property
    def del_rate(self) -> float:
        """D / N."""
        return _rate(self.deletions, self.ref_tokens)

    @property
    def ins_rate(self) -> float:
        """I / N."""
        return _rate(self.insertions, self.ref_tokens)

    @property
    def sentence_correct_rate(self) -> float:
        """Fraction of utterances with zero errors (0.0 if there are none)."""
        return _rate(self.sentences_correct, self.utterances)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates (rates as fractions, not percent)."""
        return {
            "utterances": self.utterances,
            "ref_tokens": self.ref_tokens,
            "hyp_tokens": self.hyp_tokens,
            "correct": self.correct,
            "substitutions": self.substitutions,
            "deletions": self.deletions,
            "insertions": self.insertions,
            "errors": self.errors,
            "sentences_correct": self.sentences_correct,
            "missing_hypotheses": self.missing_hypotheses,
            "wer": self.wer,
            "correct_rate": self.correct_rate,
            "sub_rate": self.sub_rate,
            "del_rate": self.del_rate,
            "ins_rate": self.ins_rate,
            "sentence_correct_rate": self.sentence_correct_rate,
        }


@dataclass(frozen=True)
class AsrReport:
    """Overall score, per-utterance scores and per-condition scores.

    `score_asr` computes the totals straight from the aligner's counts and
    makes the per-utterance objects only when `utterances` is first read: a
    caller that wants the totals (the command line's table) skips them.
    """

    overall: AsrScore
    utterances: tuple[UtteranceScore, ...] = _LazyField()  # type: ignore[assignment]
    by_condition: Mapping[str, AsrScore] = field(default_factory=dict)

    def to_dict(self, include_utterances: bool = False) -> dict[str, Any]:
        """JSON-ready report; per-utterance detail only if asked for."""
        out: dict[str, Any] = {
            "overall": self.overall.to_dict(),
            "by_condition": {k: v.to_dict() for k, v in self.by_condition.items()},
        }
        if include_utterances:
            out["utterances"] = [u.to_dict() for u in self.utterances]
        return out


def _unknown_ids(kind: str, ids: Iterable[str], refs: Mapping[str, str]) -> None:
    unknown = sorted(k for k in ids if k not in refs)
    if unknown:
        shown = ", ".join(repr(k) for k in unknown[:10])
        more = f" (+{len(unknown) - 10} more)" if len(unknown) > 10 else ""
        raise ValueError(f"{kind} for ids not in references: {shown}{more}")


def _aligned(
    refs: Mapping[str, str],
    ids: list[str],
    hyp_texts: list[str | None],
    unit: Unit,
    case_sensitive: bool,
    unicode: bool,
) -> tuple[list[Sequence[str]], list[Sequence[str]], _Counts]:
    """The utterances' tokens and the aligner's counts, all utterances at once."""
    # The collector is paused while the token lists are made: see _gc_paused.
    with _gc_paused():
        # _tokens_all: all-CJK text stays a str (a sequence of its character tokens).
        ref_toks = _tokens_all([refs[k] for k in ids], unit, case_sensitive, unicode)
        hyp_toks = _tokens_all(
            ["" if h is None else h for h in hyp_texts], unit, case_sensitive, unicode
        )
        # All utterances in one call: the aligner works on many utterances per
        # numpy operation, whose per-call cost would dominate one by one.
        raw = _align_counts(ref_toks, hyp_toks)
    return ref_toks, hyp_toks, raw


def utterance_counts(
    refs: Mapping[str, str],
    hyps: Mapping[str, str | None],
    unit: Unit = "word",
    case_sensitive: bool = False,
    unicode: bool = False,
) -> dict[str, tuple[int, int, int, int]]:
    """Each utterance's ``(C, S, D, I)`` as `score_asr` counts it (a missing hypothesis
    is empty): the per-utterance statistics whose sums `AsrScore.from_counts` turns
    into the totals."""
    _unknown_ids("hypotheses", hyps, refs)
    ids = list(refs)
    _, _, raw = _aligned(refs, ids, [hyps.get(k) for k in ids], unit, case_sensitive, unicode)
    return {
        k: (int(c), int(s), int(d), int(i)) for k, (c, s, d, i) in zip(ids, raw[0], strict=True)
    }


def score_asr(
    refs: Mapping[str, str],
    hyps: Mapping[str, str | None],
    unit: Unit = "word",
    case_sensitive: bool = False,
    conditions: Mapping[str, str] | None = None,
    unicode: bool = False,
) -> AsrReport:
    """Score hypotheses against references, keyed by utterance id.

    Missing or None hypotheses are scored as empty (all deletions). Raises
    ValueError if `hyps` or `conditions` name ids absent from `refs`, or if
    `conditions` is given but does not cover every reference id (so no
    utterance silently drops out of the breakdown). Utterances keep the
    order of `refs`; `by_condition` is sorted by condition name.
    Tokens are sclite's unless `unicode` (see `tokenize`).
    """
    _unknown_ids("hypotheses", hyps, refs)
    if conditions is not None:
        _unknown_ids("conditions", conditions, refs)
        uncovered = sorted(k for k in refs if k not in conditions)
        if uncovered:
            shown = ", ".join(repr(k) for k in uncovered[:10])
            more = f" (+{len(uncovered) - 10} more)" if len(uncovered) > 10 else ""
            raise ValueError(f"no condition given for ids: {shown}{more}")

    ids = list(refs)
    hyp_texts = [hyps.get(utt_id) for utt_id in ids]
    ref_toks, hyp_toks, raw = _aligned(refs, ids, hyp_texts, unit, case_sensitive, unicode)
    counts = raw[0]
    missing = [h is None for h in hyp_texts]
    labels = None if conditions is None else [conditions[utt_id] for utt_id in ids]

    grouped: dict[str, list[int]] = {}
    for k, label in enumerate(labels or ()):
        grouped.setdefault(label, []).append(k)
    by_condition = {
        label: AsrScore.from_counts(
            [counts[k] for k in grouped[label]], sum(missing[k] for k in grouped[label])
        )
        for label in sorted(grouped)
    }
    utterances = _UtteranceSource(ids, ref_toks, hyp_toks, raw, labels, missing)
    return AsrReport(AsrScore.from_counts(counts, sum(missing)), utterances, by_condition)  # type: ignore[arg-type]


class _UtteranceSource(_Deferred):
    """What `AsrReport.utterances` is built from: `score_asr`'s tokens and counts."""

    __slots__ = ("hyp_toks", "ids", "labels", "missing", "raw", "ref_toks")

    def __init__(
        self,
        ids: list[str],
        ref_toks: list[Sequence[str]],
        hyp_toks: list[Sequence[str]],
        raw: _Counts,
        labels: list[str] | None,
        missing: list[bool],
    ) -> None:
        self.ids = ids
        self.ref_toks = ref_toks
        self.hyp_toks = hyp_toks
        self.raw = raw
        self.labels = labels
        self.missing = missing

    def build(self) -> tuple[UtteranceScore, ...]:
        """One `UtteranceScore` per utterance, in the order of the references."""
        alignments = _alignments(self.ref_toks, self.hyp_toks, self.raw)
        labels = self.labels if self.labels is not None else [None] * len(self.ids)
        # The collector is paused while the objects are made: see _gc_paused.
        with _gc_paused():
            return tuple(
                UtteranceScore(
                    id=utt_id,
                    ref_tokens=len(r),
                    correct=al.correct,
                    substitutions=al.substitutions,
                    deletions=al.deletions,
                    insertions=al.insertions,
                    alignment=al,
                    condition=label,
                    hyp_missing=missing,
                )
                for utt_id, r, al, label, missing in zip(
                    self.ids, self.ref_toks, alignments, labels, self.missing, strict=True
                )
            )
