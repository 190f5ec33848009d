"""Human assessment of MT output: adequacy and fluency, 0 to 5, several judges.

File format (CSV with a header, or JSON Lines with the same keys)::

    judge,system,doc_id,seg_id,adequacy,fluency
    j1,sys1,news01,1,4,3.5

Scores run from 0 to 5 with at most one decimal (HTRDP 2005). A judge
rates a (system, doc_id, seg_id) at most once. Per system the report gives
the mean over all judgements (every judge, every segment: HTRDP's "average
over all the sentences by human judges") and each judge's own mean.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .encoded_text import read_named_text
from .errors import FormatError

__all__ = [
    "HUMAN_FIELDS",
    "HumanJudgement",
    "HumanReport",
    "HumanSystemScore",
    "read_human_sheet",
    "score_human",
]

HUMAN_FIELDS = ("judge", "system", "doc_id", "seg_id", "adequacy", "fluency")
_SCORE = re.compile(r"\d(\.\d)?")


@dataclass(frozen=True)
class HumanJudgement:
    """One judge's adequacy and fluency for one system's segment."""

    judge: str
    system: str
    doc_id: str
    seg_id: str
    adequacy: float
    fluency: float

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in HUMAN_FIELDS}


def _score(path: Path, line: int, name: str, value: Any) -> float:
    text = str(value).strip()
    if not _SCORE.fullmatch(text) or float(text) > 5:
        raise FormatError(
            path, line, f"{name} {value!r} is not a score 0..5", "give 0 to 5, at most one decimal"
        )
    return float(text)


def _record(path: Path, line: int, row: dict[str, Any]) -> HumanJudgement:
    missing = [k for k in HUMAN_FIELDS if row.get(k) in (None, "")]
    if missing:
        raise FormatError(
            path, line, f"missing {', '.join(missing)}", f"give {', '.join(HUMAN_FIELDS)}"
        )
    return HumanJudgement(
        str(row["judge"]).strip(),
        str(row["system"]).strip(),
        str(row["doc_id"]).strip(),
        str(row["seg_id"]).strip(),
        _score(path, line, "adequacy", row["adequacy"]),
        _score(path, line, "fluency", row["fluency"]),
    )


def read_human_sheet(path: str | Path, encoding: str | None = None) -> list[HumanJudgement]:
    """Read a CSV (header line) or JSONL (``.jsonl`` or a line starting with ``{``) sheet.

    ``encoding`` is the sheet's (scoring.charsets: gbk, big5, utf-16le ...; None:
    UTF-8, a BOM allowed): judges' sheets are written where the judging is done.
    """
    path = Path(path)
    try:
        text = read_named_text(path, encoding)
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror})", "check the path") from None
    out: list[HumanJudgement] = []
    if path.suffix == ".jsonl" or text.lstrip().startswith("{"):
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise FormatError(
                    path, n, f"bad JSON ({exc.msg})", "one JSON object per line"
                ) from exc
            if not isinstance(row, dict):
                raise FormatError(path, n, "not a JSON object", "one JSON object per line")
            out.append(_record(path, n, row))
    else:
        reader = csv.DictReader(io.StringIO(text))
        header = [h.strip() for h in reader.fieldnames or []]
        absent = [k for k in HUMAN_FIELDS if k not in header]
        if absent:
            raise FormatError(
                path, 1, f"header lacks {', '.join(absent)}", f"header: {','.join(HUMAN_FIELDS)}"
            )
        for row in reader:
            clean = {(k or "").strip(): v for k, v in row.items()}
            out.append(_record(path, reader.line_num, clean))
    if not out:
        raise FormatError(path, None, "no judgements", "add one line per judge and segment")
    return out


@dataclass(frozen=True)
class HumanSystemScore:
    """Mean adequacy and fluency of one system, overall and per judge."""

    system: str
    adequacy: float
    fluency: float
    judgements: int
    segments: int
    per_judge: tuple[tuple[str, float, float, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "adequacy": self.adequacy,
            "fluency": self.fluency,
            "judgements": self.judgements,
            "segments": self.segments,
            "judges": {
                j: {"adequacy": a, "fluency": f, "judgements": n} for j, a, f, n in self.per_judge
            },
        }


@dataclass(frozen=True)
class HumanReport:
    """Human assessment per system, systems in first-seen order."""

    systems: tuple[HumanSystemScore, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"systems": [s.to_dict() for s in self.systems]}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def score_human(sheets: Sequence[str | Path], encoding: str | None = None) -> HumanReport:
    """Average the judgements of one or more sheets (each in ``encoding``; None: UTF-8)
    per system (duplicates rejected)."""
    seen: dict[tuple[str, str, str, str], str] = {}
    rows: list[HumanJudgement] = []
    for sheet in sheets:
        for n, j in enumerate(read_human_sheet(sheet, encoding), 1):
            key = (j.judge, j.system, j.doc_id, j.seg_id)
            if key in seen:
                raise FormatError(
                    sheet,
                    None,
                    f"judgement {n}: judge {j.judge!r} rated {j.system}/{j.doc_id}/{j.seg_id} "
                    f"twice (first in {seen[key]})",
                    "keep one judgement per judge and segment",
                )
            seen[key] = str(sheet)
            rows.append(j)
    systems: dict[str, list[HumanJudgement]] = {}
    for j in rows:
        systems.setdefault(j.system, []).append(j)
    out = []
    for name, js in systems.items():
        judges: dict[str, list[HumanJudgement]] = {}
        for j in js:
            judges.setdefault(j.judge, []).append(j)
        out.append(
            HumanSystemScore(
                name,
                _mean([j.adequacy for j in js]),
                _mean([j.fluency for j in js]),
                len(js),
                len({(j.doc_id, j.seg_id) for j in js}),
                tuple(
                    (jn, _mean([x.adequacy for x in jl]), _mean([x.fluency for x in jl]), len(jl))
                    for jn, jl in judges.items()
                ),
            )
        )
    return HumanReport(tuple(out))
