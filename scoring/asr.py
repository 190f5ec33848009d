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

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .asr_align import Alignment, Unit, _gc_paused, _tokens, align_all

__all__ = ["AsrReport", "AsrScore", "UtteranceScore", "score_asr"]


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
    """Overall score, per-utterance scores and per-condition scores."""

    overall: AsrScore
    utterances: tuple[UtteranceScore, ...]
    by_condition: Mapping[str, AsrScore]

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

    # The collector is paused while the per-utterance objects are made: see
    # _gc_paused for why.
    with _gc_paused():
        ids = list(refs)
        hyp_texts = [hyps.get(utt_id) for utt_id in ids]
        # _tokens: all-CJK text stays a str (a sequence of its character tokens).
        ref_toks = [_tokens(refs[utt_id], unit, case_sensitive, unicode) for utt_id in ids]
        hyp_toks = [
            () if h is None else _tokens(h, unit, case_sensitive, unicode) for h in hyp_texts
        ]
        # All utterances in one call: the aligner works on many utterances per
        # numpy operation, whose per-call cost would dominate one by one.
        alignments = align_all(ref_toks, hyp_toks)
        scores = [
            UtteranceScore(
                id=utt_id,
                ref_tokens=len(r),
                correct=al.correct,
                substitutions=al.substitutions,
                deletions=al.deletions,
                insertions=al.insertions,
                alignment=al,
                condition=None if conditions is None else conditions[utt_id],
                hyp_missing=h is None,
            )
            for utt_id, r, h, al in zip(ids, ref_toks, hyp_texts, alignments, strict=True)
        ]

    grouped: dict[str, list[UtteranceScore]] = {}
    for u in scores:
        if u.condition is not None:
            grouped.setdefault(u.condition, []).append(u)
    by_condition = {cond: AsrScore.from_utterances(grouped[cond]) for cond in sorted(grouped)}
    return AsrReport(AsrScore.from_utterances(scores), tuple(scores), by_condition)
