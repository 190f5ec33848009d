"""Online handwritten character recognition scoring (OLCCR-2003 metrics).

Each test sample has one true character, a set of subset labels (e.g. the
character set ``"B1"`` and the stroke order ``"standard"`` or
``"disordered"``) and up to ten ranked candidates from the system.

Conventions:

* ``RS_i`` is the share of character i's samples whose first candidate is
  the truth; ``RS_i^10`` the share whose truth is among the (up to ten)
  candidates.
* Overall ``R`` and ``R^10`` are *macro* averages: the mean of ``RS_i`` over
  characters, not the share of correct samples. This is the survey's
  definition (R = sum RS_i / n) and it reproduces the published totals: for
  System I, per-character averaging of the per-subset rates gives 97.85% as
  in Table 69, while pooling samples would give 97.94%.
* A subset's rates are macro averages over the characters that have samples
  in that subset, using only those samples.
* A sample without output (absent id or None) has no candidates, so it is
  wrong for both rates; such samples are also counted in
  ``missing_outputs``.
* Speed V = number of samples / total recognition seconds.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .charsets import codec_of, guess_encoding, iter_lines

__all__ = [
    "MAX_CANDIDATES",
    "CharacterScore",
    "OcrReport",
    "OcrScore",
    "OcrTruth",
    "misread_hint",
    "read_jsonl",
    "read_ocr_outputs",
    "read_ocr_truth",
    "character_scores",
    "sample_hits",
    "score_ocr",
]

MAX_CANDIDATES = 10


def read_jsonl(path: str | Path, encoding: str | None = None) -> list[tuple[int, dict[str, Any]]]:
    """Read a JSONL file as ``(line number, object)`` pairs, skipping blank lines.

    ``encoding`` is the file's (scoring.charsets: gbk, big5, utf-16le ...; None:
    UTF-8, a BOM allowed). Raises ValueError naming ``file:line`` for invalid JSON
    or a non-object line, and scoring's FormatError naming the line and the encoding
    to name for bytes that do not decode.
    """
    out: list[tuple[int, dict[str, Any]]] = []
    for lineno, line in enumerate(iter_lines(path, encoding), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = misread_hint(path, encoding)
            raise ValueError(f"{path}:{lineno}: invalid JSON: {exc.msg}{hint}") from None
        if not isinstance(obj, dict):
            raise ValueError(
                f"{path}:{lineno}: expected a JSON object{misread_hint(path, encoding)}"
            )
        out.append((lineno, obj))
    return out


def misread_hint(path: str | Path, encoding: str | None) -> str:
    """For a JSON lines file that decoded in the ``encoding`` named but is not JSON: ``;
    it reads as big5 ...`` when the file is plainly in another encoding (Big5 bytes
    decode as UTF-16LE, into nonsense), else "". Only read when a line was refused."""
    if encoding is None:
        return ""
    try:
        guess = guess_encoding(Path(path).read_bytes())
    except OSError:
        return ""
    if guess is None or codec_of(guess) == codec_of(encoding):
        return ""
    return (
        f"; decoded as {encoding}, but the file reads as {guess}: read it with "
        f'`--encoding {guess}` (in a site file, the task\'s `encoding = "{guess}"`)'
    )


def _require(obj: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in obj:
        raise ValueError(f"{where}: missing key {key!r}")
    return obj[key]


def _str_list(value: Any, what: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}: {what!r} must be a list of strings")
    return tuple(value)


@dataclass(frozen=True)
class OcrTruth:
    """One test sample: its true character and the subsets it belongs to."""

    id: str
    char: str
    subsets: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the truth-file line format)."""
        return {"id": self.id, "char": self.char, "subsets": list(self.subsets)}


def read_ocr_truth(path: str | Path, encoding: str | None = None) -> list[OcrTruth]:
    """Read truth lines ``{"id", "char", "subsets": [...]}``; ``subsets`` may be omitted.

    ``encoding``: the file's (`read_jsonl`; None: UTF-8)."""
    out: list[OcrTruth] = []
    seen: dict[str, int] = {}
    for lineno, obj in read_jsonl(path, encoding):
        where = f"{path}:{lineno}"
        sid = _require(obj, "id", where)
        char = _require(obj, "char", where)
        if not isinstance(sid, str) or not isinstance(char, str) or not char:
            raise ValueError(f"{where}: 'id' and 'char' must be non-empty strings")
        subsets = _str_list(obj.get("subsets", []), "subsets", where)
        if sid in seen:
            raise ValueError(f"{where}: duplicate id {sid!r} (first on line {seen[sid]})")
        seen[sid] = lineno
        out.append(OcrTruth(sid, char, subsets))
    return out


def read_ocr_outputs(path: str | Path, encoding: str | None = None) -> dict[str, tuple[str, ...]]:
    """Read system output lines ``{"id", "candidates": [...]}`` (best first, at most ten).

    ``encoding``: the file's (`read_jsonl`; None: UTF-8)."""
    out: dict[str, tuple[str, ...]] = {}
    seen: dict[str, int] = {}
    for lineno, obj in read_jsonl(path, encoding):
        where = f"{path}:{lineno}"
        sid = _require(obj, "id", where)
        if not isinstance(sid, str):
            raise ValueError(f"{where}: 'id' must be a string")
        cands = _str_list(_require(obj, "candidates", where), "candidates", where)
        if len(cands) > MAX_CANDIDATES:
            raise ValueError(f"{where}: {len(cands)} candidates, at most {MAX_CANDIDATES}")
        if sid in seen:
            raise ValueError(f"{where}: duplicate id {sid!r} (first on line {seen[sid]})")
        seen[sid] = lineno
        out[sid] = cands
    return out


@dataclass(frozen=True)
class CharacterScore:
    """Per-character counts: NS_i, CS_i and CS_i^10."""

    char: str
    samples: int
    top1_correct: int
    top10_correct: int

    @property
    def rs(self) -> float:
        """RS_i, the first-candidate recognition rate."""
        return self.top1_correct / self.samples

    @property
    def rs10(self) -> float:
        """RS_i^10, the top-ten recognition rate."""
        return self.top10_correct / self.samples

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts and rates (fractions)."""
        return {
            "char": self.char,
            "samples": self.samples,
            "top1_correct": self.top1_correct,
            "top10_correct": self.top10_correct,
            "rs": self.rs,
            "rs10": self.rs10,
        }


@dataclass(frozen=True)
class OcrScore:
    """Macro-averaged rates R and R^10 over a set of characters."""

    characters: int
    samples: int
    recognition_rate: float
    top10_rate: float

    @classmethod
    def from_characters(cls, chars: Iterable[CharacterScore]) -> OcrScore:
        """Average RS_i and RS_i^10 over characters (0.0 for an empty set)."""
        cs = list(chars)
        n = len(cs)
        return cls(
            characters=n,
            samples=sum(c.samples for c in cs),
            # math.fsum: hundreds of thousands of characters, keep the mean exact.
            recognition_rate=math.fsum(c.rs for c in cs) / n if n else 0.0,
            top10_rate=math.fsum(c.rs10 for c in cs) / n if n else 0.0,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready rates (fractions)."""
        return {
            "characters": self.characters,
            "samples": self.samples,
            "recognition_rate": self.recognition_rate,
            "top10_rate": self.top10_rate,
        }


@dataclass(frozen=True)
class OcrReport:
    """Overall and per-subset scores, per-character detail and speed."""

    overall: OcrScore
    by_subset: Mapping[str, OcrScore]
    by_character: tuple[CharacterScore, ...]
    missing_outputs: int
    seconds: float | None = None

    @property
    def speed(self) -> float | None:
        """V = samples / seconds, or None when no time was given."""
        if self.seconds is None:
            return None
        return self.overall.samples / self.seconds

    def to_dict(self, include_characters: bool = False) -> dict[str, Any]:
        """JSON-ready report; per-character detail only if asked for."""
        out: dict[str, Any] = {
            "overall": self.overall.to_dict(),
            "by_subset": {k: v.to_dict() for k, v in self.by_subset.items()},
            "missing_outputs": self.missing_outputs,
            "seconds": self.seconds,
            "speed": self.speed,
        }
        if include_characters:
            out["by_character"] = [c.to_dict() for c in self.by_character]
        return out


def sample_hits(
    samples: Iterable[OcrTruth], outputs: Mapping[str, Sequence[str] | None]
) -> dict[str, tuple[str, bool, bool]]:
    """Per sample: (its character, first candidate right, right within ten): what R and
    R^10 are made of (`OcrScore.from_hits`)."""
    hits = {}
    for s in samples:
        cands = outputs.get(s.id) or ()
        hits[s.id] = (s.char, len(cands) > 0 and cands[0] == s.char, s.char in cands)
    return hits


def character_scores(hits: Iterable[tuple[str, bool, bool]]) -> list[CharacterScore]:
    """Per-sample hits summed per character, in character order."""
    counts: dict[str, list[int]] = {}
    for char, top1, top10 in hits:
        c = counts.setdefault(char, [0, 0, 0])
        c[0] += 1
        c[1] += int(top1)
        c[2] += int(top10)
    return [CharacterScore(ch, n, t1, t10) for ch, (n, t1, t10) in sorted(counts.items())]


def _char_scores(
    samples: Sequence[OcrTruth], outputs: Mapping[str, Sequence[str] | None]
) -> list[CharacterScore]:
    return character_scores(sample_hits(samples, outputs).values())


def score_ocr(
    truth: Iterable[OcrTruth],
    outputs: Mapping[str, Sequence[str] | None],
    seconds: float | None = None,
) -> OcrReport:
    """Score ranked candidates against the truth, keyed by sample id.

    Raises ValueError for duplicate truth ids, outputs naming unknown ids,
    more than ten candidates, or non-positive `seconds`. Characters and
    subsets are reported in sorted order.
    """
    samples = list(truth)
    ids: set[str] = set()
    for s in samples:
        if s.id in ids:
            raise ValueError(f"duplicate truth id {s.id!r}")
        ids.add(s.id)
    unknown = sorted(k for k in outputs if k not in ids)
    if unknown:
        raise ValueError(f"outputs for ids not in truth: {', '.join(map(repr, unknown[:10]))}")
    for k, cands in outputs.items():
        if cands is not None and len(cands) > MAX_CANDIDATES:
            raise ValueError(f"output {k!r} has {len(cands)} candidates, at most 10")
    if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds must be a positive number, got {seconds!r}")

    chars = _char_scores(samples, outputs)
    subsets = sorted({name for s in samples for name in s.subsets})
    by_subset = {
        name: OcrScore.from_characters(
            _char_scores([s for s in samples if name in s.subsets], outputs)
        )
        for name in subsets
    }
    missing = sum(1 for s in samples if outputs.get(s.id) is None)
    return OcrReport(OcrScore.from_characters(chars), by_subset, tuple(chars), missing, seconds)
