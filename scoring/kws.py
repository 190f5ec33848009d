"""Keyword spotting in telephone speech: slot/sentence rates and DET curves.

Each sentence is described by a frame of slots (for the transportation
setting e.g. ``from``, ``to``, ``date``), each slot a sequence of keywords.
Conventions (HTRDP 2004 telephone task):

* A slot is right iff the system's keyword sequence for it equals the
  reference sequence exactly (any insertion, deletion or substitution of a
  keyword makes it wrong). A slot the system leaves out is the empty
  sequence, so it is right only if the reference slot is empty too.
* Correct slot rate = right slots / reference slots. Slots the system adds
  that are not in the reference frame (with a non-empty value) do not change
  this denominator, but count as ``extra_slots``.
* A sentence is right iff all its reference slots are right and it has no
  extra slots. A sentence with no system frame at all is wrong (unless its
  reference frame is empty) and counted in ``missing``.
* The reference's setting is used; the system's ``setting`` is ignored.
* DET: see `det_curve` for the miss and false-alarm definitions.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .det import equal_error_rate
from .errors import FormatError
from .ocr import read_jsonl

__all__ = [
    "DetCurve",
    "DetPoint",
    "Detection",
    "KwsReport",
    "SentenceResult",
    "SlotFrame",
    "SlotScore",
    "det_curve",
    "det_figures",
    "read_detections",
    "read_slot_file",
    "score_slots",
]


# --- JSONL records with file:line errors (also used by the tts readers) -------


@dataclass(frozen=True)
class _Record:
    """One JSONL line; its errors read ``file:line: problem; fix``."""

    path: str
    line: int
    obj: dict[str, Any]

    def error(self, problem: str, fix: str) -> FormatError:
        return FormatError(self.path, self.line, problem, fix)

    def get(self, key: str, example: str) -> Any:
        if key not in self.obj:
            raise self.error(f"missing key {key!r}", f"add it, e.g. {example}")
        return self.obj[key]

    def text(self, key: str, example: str) -> str:
        value = self.get(key, example)
        if not isinstance(value, str) or not value:
            raise self.error(f"{key!r} must be a non-empty string, got {value!r}", example)
        return value

    def number(self, key: str, example: str) -> float:
        value = self.get(key, example)
        # bool is an int subclass and JSON allows NaN/Infinity: neither is a score.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.error(f"{key!r} must be a number, got {value!r}", example)
        if not math.isfinite(value):
            raise self.error(f"{key!r} is not finite ({value!r})", example)
        return value

    def flag(self, key: str, example: str) -> bool:
        value = self.get(key, example)
        if not isinstance(value, bool):
            raise self.error(f"{key!r} must be true or false, got {value!r}", example)
        return value

    def once(self, seen: dict[Any, int], key: Any, what: str) -> None:
        """Reject a second line for the same `key` (a copy error, not a repeat trial)."""
        if key in seen:
            raise self.error(
                f"duplicate {what} {key!r} (first on line {seen[key]})", f"keep one line per {what}"
            )
        seen[key] = self.line


def _records(path: str | Path, what: str, encoding: str | None = None) -> list[_Record]:
    """Non-blank lines of a JSONL file holding at least one `what`.

    ``encoding`` is the file's (scoring.charsets; None: UTF-8, a BOM allowed); a file
    not in it is a FormatError naming the line and the encoding to name instead.
    """
    try:
        rows = read_jsonl(path, encoding)
    except FormatError:
        raise  # it names the file, the line and the fix already
    except ValueError as exc:
        # read_jsonl already names file:line and the problem; add the fix.
        raise ValueError(f"{exc}; write one JSON object per line") from None
    if not rows:
        # Statistics over nothing are meaningless: most likely the wrong file.
        raise FormatError(path, None, f"no {what}", f"write one JSON object per {what[:-1]}")
    return [_Record(os.fspath(path), lineno, obj) for lineno, obj in rows]


@dataclass(frozen=True)
class SlotFrame:
    """One sentence's frame: its setting and slot name -> keyword sequence."""

    id: str
    setting: str
    slots: Mapping[str, tuple[str, ...]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the slot-file line format)."""
        return {
            "id": self.id,
            "setting": self.setting,
            "slots": {k: list(v) for k, v in self.slots.items()},
        }


def read_slot_file(
    path: str | Path, require_setting: bool = True, encoding: str | None = None
) -> dict[str, SlotFrame]:
    """Read JSONL lines ``{"id", "setting", "slots": {name: [keyword, ...]}}``.

    Used for both references and system output; system files may omit
    ``setting`` when `require_setting` is False (it is stored as "").
    ``encoding`` is the file's (scoring.charsets; None: UTF-8). Errors name
    ``file:line``.
    """
    out: dict[str, SlotFrame] = {}
    lines: dict[str, int] = {}
    for lineno, obj in read_jsonl(path, encoding):
        where = f"{path}:{lineno}"
        required = ("id", "setting", "slots") if require_setting else ("id", "slots")
        for key in required:
            if key not in obj:
                raise ValueError(f"{where}: missing key {key!r}")
        sid, setting, slots = obj["id"], obj.get("setting", ""), obj["slots"]
        if not isinstance(sid, str) or not isinstance(setting, str):
            raise ValueError(f"{where}: 'id' and 'setting' must be strings")
        if not isinstance(slots, dict):
            raise ValueError(f"{where}: 'slots' must be an object")
        parsed: dict[str, tuple[str, ...]] = {}
        for name, kws in slots.items():
            if not isinstance(kws, list) or not all(isinstance(k, str) for k in kws):
                raise ValueError(f"{where}: slot {name!r} must be a list of strings")
            parsed[name] = tuple(kws)
        if sid in lines:
            raise ValueError(f"{where}: duplicate id {sid!r} (first on line {lines[sid]})")
        lines[sid] = lineno
        out[sid] = SlotFrame(sid, setting, parsed)
    return out


@dataclass(frozen=True)
class SentenceResult:
    """Per-sentence outcome: right/total slots and extra system slots."""

    id: str
    setting: str
    slots: int
    right_slots: int
    extra_slots: int
    missing: bool

    @property
    def right(self) -> bool:
        """All reference slots right and no extra slots."""
        return self.right_slots == self.slots and self.extra_slots == 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready outcome."""
        return {
            "id": self.id,
            "setting": self.setting,
            "slots": self.slots,
            "right_slots": self.right_slots,
            "extra_slots": self.extra_slots,
            "missing": self.missing,
            "right": self.right,
        }


@dataclass(frozen=True)
class SlotScore:
    """Counts and correct slot/sentence rates (fractions)."""

    sentences: int
    right_sentences: int
    slots: int
    right_slots: int
    extra_slots: int
    missing: int

    @classmethod
    def from_results(cls, results: Iterable[SentenceResult]) -> SlotScore:
        """Sum per-sentence outcomes."""
        rs = list(results)
        return cls(
            sentences=len(rs),
            right_sentences=sum(r.right for r in rs),
            slots=sum(r.slots for r in rs),
            right_slots=sum(r.right_slots for r in rs),
            extra_slots=sum(r.extra_slots for r in rs),
            missing=sum(r.missing for r in rs),
        )

    @property
    def slot_rate(self) -> float:
        """Correct slot rate (0.0 with no slots)."""
        return self.right_slots / self.slots if self.slots else 0.0

    @property
    def sentence_rate(self) -> float:
        """Correct sentence rate (0.0 with no sentences)."""
        return self.right_sentences / self.sentences if self.sentences else 0.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates."""
        return {
            "sentences": self.sentences,
            "right_sentences": self.right_sentences,
            "slots": self.slots,
            "right_slots": self.right_slots,
            "extra_slots": self.extra_slots,
            "missing": self.missing,
            "slot_rate": self.slot_rate,
            "sentence_rate": self.sentence_rate,
        }


@dataclass(frozen=True)
class KwsReport:
    """Overall and per-setting slot scores plus per-sentence outcomes."""

    overall: SlotScore
    by_setting: Mapping[str, SlotScore]
    sentences: tuple[SentenceResult, ...]

    def to_dict(self, include_sentences: bool = False) -> dict[str, Any]:
        """JSON-ready report; per-sentence detail only if asked for."""
        out: dict[str, Any] = {
            "overall": self.overall.to_dict(),
            "by_setting": {k: v.to_dict() for k, v in self.by_setting.items()},
        }
        if include_sentences:
            out["sentences"] = [s.to_dict() for s in self.sentences]
        return out


def score_slots(refs: Mapping[str, SlotFrame], hyps: Mapping[str, SlotFrame]) -> KwsReport:
    """Score system frames against reference frames, keyed by sentence id.

    Raises ValueError for system frames whose id is not a reference id.
    """
    unknown = sorted(k for k in hyps if k not in refs)
    if unknown:
        raise ValueError(f"outputs for ids not in references: {', '.join(map(repr, unknown[:10]))}")
    results: list[SentenceResult] = []
    for sid, ref in refs.items():
        hyp = hyps.get(sid)
        hyp_slots: Mapping[str, tuple[str, ...]] = hyp.slots if hyp is not None else {}
        right = sum(1 for name, kws in ref.slots.items() if tuple(hyp_slots.get(name, ())) == kws)
        # An extra slot with an empty value says nothing, so it is not an error.
        extra = sum(1 for name, kws in hyp_slots.items() if name not in ref.slots and kws)
        results.append(SentenceResult(sid, ref.setting, len(ref.slots), right, extra, hyp is None))
    by_setting = {
        s: SlotScore.from_results(r for r in results if r.setting == s)
        for s in sorted({r.setting for r in results})
    }
    return KwsReport(SlotScore.from_results(results), by_setting, tuple(results))


@dataclass(frozen=True)
class Detection:
    """One scored keyword hypothesis; `is_true` if it matches a true occurrence."""

    keyword: str
    utterance: str
    score: float
    is_true: bool


def read_detections(path: str | Path, encoding: str | None = None) -> list[Detection]:
    """Read ``{"keyword", "utterance", "score", "is_true"}`` lines (higher score: surer).

    The same keyword may be proposed more than once per utterance (at
    different times), so repeated (keyword, utterance) lines are allowed.
    ``encoding`` is the file's (scoring.charsets; None: UTF-8).
    """
    return [
        Detection(
            rec.text("keyword", '"keyword": "北京"'),
            rec.text("utterance", '"utterance": "u0001"'),
            float(rec.number("score", '"score": 0.87')),
            rec.flag("is_true", '"is_true": true'),
        )
        for rec in _records(path, "detections", encoding)
    ]


@dataclass(frozen=True)
class DetPoint:
    """Operating point when accepting every detection with score >= threshold."""

    threshold: float
    misses: int
    false_alarms: int
    p_miss: float
    p_fa: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready point; the no-acceptance threshold +inf becomes None."""
        return {
            "threshold": self.threshold if math.isfinite(self.threshold) else None,
            "misses": self.misses,
            "false_alarms": self.false_alarms,
            "p_miss": self.p_miss,
            "p_fa": self.p_fa,
        }


@dataclass(frozen=True)
class DetCurve:
    """DET points from strictest (nothing accepted) to loosest (all accepted)."""

    n_true: int
    n_nontarget: int
    points: tuple[DetPoint, ...]

    @property
    def eer(self) -> float | None:
        """Equal error rate (`scoring.det`): where P_miss = P_fa, linear between the
        two points where P_miss - P_fa changes sign; None when the curve never gets
        there (occurrences the system never proposed keep P_miss above P_fa).
        """
        return equal_error_rate((p.p_miss for p in self.points), (p.p_fa for p in self.points))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready curve, with its equal error rate (None when not reached)."""
        return {
            "n_true": self.n_true,
            "n_nontarget": self.n_nontarget,
            "eer": self.eer,
            "points": [p.to_dict() for p in self.points],
        }


def det_curve(
    detections: Iterable[Detection | tuple[str, str, float, bool]],
    n_true: int,
    n_nontarget: int,
) -> DetCurve:
    """Miss vs false-alarm probability over all score thresholds.

    At threshold t every detection with score >= t is accepted:
    P_miss(t) = 1 - (true detections accepted) / `n_true`, where `n_true` is
    the number of true keyword occurrences in the reference (occurrences the
    system never proposed are misses at every threshold);
    P_fa(t) = (false detections accepted) / `n_nontarget`, where
    `n_nontarget` is the number of non-target trials, e.g. keywords x
    utterances minus the true (keyword, utterance) pairs. Thresholds are the
    distinct scores, descending, preceded by +inf (nothing accepted); tied
    scores are accepted together. Raises ValueError if the detections hold
    more true (false) hits than `n_true` (`n_nontarget`), or for a
    non-finite score.
    """
    if n_true <= 0 or n_nontarget <= 0:
        raise ValueError("n_true and n_nontarget must be positive")
    dets = [d if isinstance(d, Detection) else Detection(*d) for d in detections]
    for d in dets:
        if not math.isfinite(d.score):
            raise ValueError(f"non-finite score for {d.keyword!r} in {d.utterance!r}")
    n_hit = sum(d.is_true for d in dets)
    if n_hit > n_true:
        raise ValueError(
            f"{n_hit} true detections but only {n_true} true occurrences; "
            "n_true must count every true keyword occurrence in the reference"
        )
    if len(dets) - n_hit > n_nontarget:
        raise ValueError(
            f"{len(dets) - n_hit} false detections but {n_nontarget} trials; "
            "n_nontarget must count every non-target (keyword, utterance) trial"
        )

    points = [DetPoint(math.inf, n_true, 0, 1.0, 0.0)]
    hits = fas = 0
    dets.sort(key=lambda d: d.score, reverse=True)
    i = 0
    while i < len(dets):
        t = dets[i].score
        while i < len(dets) and dets[i].score == t:
            hits += dets[i].is_true
            fas += not dets[i].is_true
            i += 1
        misses = n_true - hits
        points.append(DetPoint(t, misses, fas, misses / n_true, fas / n_nontarget))
    return DetCurve(n_true, n_nontarget, tuple(points))


def det_figures(detections: Sequence[Detection], n_true: int, n_nontarget: int) -> dict[str, Any]:
    """The DET curve's figures as a run's ``det`` block and `onsite score kws-det` give
    them: the counts, the EER, how many detections (and true ones), and the points."""
    curve = det_curve(detections, n_true, n_nontarget).to_dict()
    points = curve.pop("points")
    hits = sum(d.is_true for d in detections)
    return {**curve, "detections": len(detections), "true_detections": hits, "points": points}
