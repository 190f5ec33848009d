"""The panel's judgements as the scoring files, and the scores, agreement and warnings.

`export_text` writes the judgements in exactly the format `onsite score` reads
(docs/scoring-ocr-kws-tts.md, docs/scoring-mt.md, scoring/summarization.py,
the CWS review file), so scores from the panel and from those files agree by
construction: `panel_scores` scores that very text with scoring/'s functions.
"""

from __future__ import annotations

import json
import math
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from harness.judge.material import load_material
from harness.judge.plan import balance
from harness.judge.qrels import qrels_of, qrels_text
from harness.judge.store import Answer, JudgeStore
from scoring.tts import normalize_sus

# Which `onsite score` family reads each test's export.
SCORE_FAMILY = {
    "sus": "tts-sus",
    "pair": "tts-pair",
    "mos": "tts-mos",
    "mt-adequacy-fluency": "mt-human",
    "summary": "summarization",
    "cws-review": "cws",
    "pos-review": "pos",  # `onsite score pos --accepted FILE`
    "relevance": "ir",  # the qrels: `onsite score ir --qrels FILE`
}
FAMILY_TESTS = {family: test for test, family in SCORE_FAMILY.items()}
EXPORT_SUFFIX = {
    "sus": ".jsonl",
    "pair": ".jsonl",
    "mos": ".jsonl",
    "mt-adequacy-fluency": ".jsonl",
    "summary": ".tsv",
    "cws-review": ".tsv",
    "pos-review": ".tsv",
    "relevance": ".qrels",
}


def _line(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False) + "\n"


def _sus_lines(answers: Sequence[Answer], run_dir: Path, task: str) -> list[str]:
    sus = load_material(run_dir, task, "sus").sus
    out = []
    for a in answers:
        item = sus[a.item]
        written = [b if b.strip() else None for b in a.answer["blanks"]]
        expected = []
        for accepted, got in zip(item.answers, written, strict=True):
            # Several accepted answers: the one the judge wrote counts, else the first.
            hit = [
                x for x in accepted if got is not None and normalize_sus(x) == normalize_sus(got)
            ]
            expected.append(hit[0] if hit else accepted[0])
        [system] = a.systems
        out.append(
            _line(
                {
                    "system": system,
                    "listener": a.judge,
                    "sentence": a.item,
                    "expected": expected,
                    "answer": written,
                }
            )
        )
    return out


def export_text(store: JudgeStore, run_dir: Path) -> str:
    """The panel's judgements as the file its `onsite score` family reads."""
    meta = store.meta()
    test, task = meta["test"], meta["task"]
    answers = store.answers()
    if test == "sus":
        return "".join(_sus_lines(answers, run_dir, task))
    if test == "pair":
        return "".join(
            _line(
                {
                    "listener": a.judge,
                    "sentence": a.item,
                    "first": a.systems[0],
                    "second": a.systems[1],
                    "score": a.answer["score"],
                }
            )
            for a in answers
        )
    if test == "mos":
        return "".join(
            _line(
                {
                    "system": a.systems[0],
                    "listener": a.judge,
                    "sentence": a.item,
                    "score": a.answer["score"],
                }
            )
            for a in answers
        )
    if test == "mt-adequacy-fluency":
        places = load_material(run_dir, task, test).places
        rows = []
        for a in answers:
            doc, seg = places[a.item]
            for n, system in enumerate(a.systems, 1):
                rows.append(
                    _line(
                        {
                            "judge": a.judge,
                            "system": system,
                            "doc_id": doc,
                            "seg_id": seg,
                            # One decimal, as the sheet format requires.
                            "adequacy": round(float(a.answer[f"adequacy_{n}"]), 1),
                            "fluency": round(float(a.answer[f"fluency_{n}"]), 1),
                        }
                    )
                )
        return "".join(rows)
    if test == "summary":
        return "".join(
            f"summary\t{a.systems[0]}\t{a.item}\t{a.judge}\t{_tenths(a.answer['summary'])}\n"
            for a in answers
        )
    if test == "relevance":
        return qrels_text(qrels_of((a.item, int(a.answer["relevance"])) for a in answers))
    if test == "pos-review":
        return tag_review_text(answers)
    return review_text(answers)


def _tenths(value: float) -> float:
    return round(float(value), 1)


def review_text(answers: Iterable[Answer]) -> str:
    """The CWS review file with each piece's verdict: accepted by a majority of its judges."""
    votes: dict[str, list[bool]] = {}
    for a in answers:
        votes.setdefault(a.item, []).append(bool(a.answer["accept"]))
    rows = ["#verdict\treference\tsystem\taccepted\tjudges"]
    for item, v in votes.items():
        gold, test = item.split("\t")
        verdict = "y" if sum(v) * 2 > len(v) else "n"
        rows.append(f"{verdict}\t{gold}\t{test}\t{sum(v)}\t{len(v)}")
    return "\n".join(rows) + "\n"


def tag_review_text(answers: Iterable[Answer]) -> str:
    """The POS tag review file (`scoring.pos_review`) with each tag's verdict: accepted
    by a majority of its judges."""
    votes: dict[str, list[bool]] = {}
    for a in answers:
        votes.setdefault(a.item, []).append(bool(a.answer["accept"]))
    rows = ["#verdict\tword\treference\tsystem\taccepted\tjudges"]
    for item, v in votes.items():
        verdict = "y" if sum(v) * 2 > len(v) else "n"
        rows.append(f"{verdict}\t{item}\t{sum(v)}\t{len(v)}")
    return "\n".join(rows) + "\n"


def write_export(store: JudgeStore, run_dir: Path, out: Path) -> Path:
    """Write the panel's judgements to ``out`` (the format of its score family)."""
    out.write_text(export_text(store, run_dir), encoding="utf-8")
    return out


class ExportFile:
    """A temporary file holding a panel's export, for a scorer that reads files."""

    def __init__(self, store: JudgeStore, run_dir: Path) -> None:
        self._dir = tempfile.TemporaryDirectory(prefix="onsite-judge-")
        suffix = EXPORT_SUFFIX[store.meta()["test"]]
        self.path = write_export(store, run_dir, Path(self._dir.name) / f"judgements{suffix}")

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *exc: object) -> None:
        self._dir.cleanup()


# --- agreement ------------------------------------------------------------------------


@dataclass(frozen=True)
class Agreement:
    """Krippendorff's alpha over the units that two or more judges rated."""

    measure: str
    level: str
    alpha: float | None
    units: int

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "measure": self.measure,
            "level": self.level,
            "alpha": self.alpha,
            "units": self.units,
        }


def krippendorff_alpha(
    ratings: Sequence[tuple[str, Any, float]],
    level: Literal["nominal", "ordinal", "interval", "ratio"],
    measure: str,
) -> Agreement:
    """Alpha from (judge, unit, value) triples with the `krippendorff` package.

    None when fewer than two judges rated any unit or every value is the same.
    """
    import krippendorff

    judges = sorted({j for j, _, _ in ratings})
    counts: dict[Any, int] = {}
    for _, unit, _ in ratings:
        counts[unit] = counts.get(unit, 0) + 1
    units = sorted((u for u, n in counts.items() if n >= 2), key=str)
    if len(judges) < 2 or not units:
        return Agreement(measure, level, None, len(units))
    index = {u: k for k, u in enumerate(units)}
    data = np.full((len(judges), len(units)), np.nan)
    for judge, unit, value in ratings:
        if unit in index:
            data[judges.index(judge), index[unit]] = value
    try:
        alpha = float(krippendorff.alpha(reliability_data=data, level_of_measurement=level))
    except ValueError:  # one value only in the whole domain
        return Agreement(measure, level, None, len(units))
    return Agreement(measure, level, None if math.isnan(alpha) else alpha, len(units))


def agreement(store: JudgeStore, run_dir: Path) -> list[Agreement]:
    """Judge agreement for the panel's test (per measure)."""
    test = store.meta()["test"]
    answers = store.answers()
    if test == "sus":
        rows: list[tuple[str, Any, float]] = []
        for line in _sus_lines(answers, run_dir, store.meta()["task"]):
            r = json.loads(line)
            for k, (e, a) in enumerate(zip(r["expected"], r["answer"], strict=True)):
                right = a is not None and normalize_sus(a) == normalize_sus(e)
                rows.append((r["listener"], (r["system"], r["sentence"], k), float(right)))
        return [krippendorff_alpha(rows, "nominal", "blank correct")]
    if test == "pair":
        rows = []
        for a in answers:
            x, y = a.systems
            sign = 1 if x < y else -1  # oriented as "the first system by name over the other"
            rows.append((a.judge, (a.item, min(x, y), max(x, y)), sign * a.answer["score"]))
        return [krippendorff_alpha(rows, "interval", "preference")]
    if test == "mos":
        rows = [(a.judge, (a.systems[0], a.item), a.answer["score"]) for a in answers]
        return [krippendorff_alpha(rows, "interval", "opinion score")]
    if test == "mt-adequacy-fluency":
        out = []
        for measure in ("adequacy", "fluency"):
            rows = [
                (a.judge, (s, a.item), float(a.answer[f"{measure}_{n}"]))
                for a in answers
                for n, s in enumerate(a.systems, 1)
            ]
            out.append(krippendorff_alpha(rows, "interval", measure))
        return out
    if test == "summary":
        rows = [(a.judge, (a.systems[0], a.item), float(a.answer["summary"])) for a in answers]
        return [krippendorff_alpha(rows, "interval", "summary score")]
    if test == "relevance":
        # One assessor per topic (TREC's way): no unit has two judges, alpha is None.
        rows = [(a.judge, a.item, float(a.answer["relevance"])) for a in answers]
        return [krippendorff_alpha(rows, "ordinal", "relevance")]
    rows = [(a.judge, a.item, float(a.answer["accept"])) for a in answers]
    return [krippendorff_alpha(rows, "nominal", "accept")]


def panel_warnings(store: JudgeStore) -> tuple[str, ...]:
    """Warnings for a plan left unbalanced (judges who did not finish)."""
    answered = {(a.judge, a.position) for a in store.answers()}
    return balance(store.plan(), answered).warnings


def panels(run_dir: Path) -> list[Path]:
    """Every panel database of a run."""
    folder = run_dir / "judging"
    return sorted(folder.glob("*.sqlite")) if folder.is_dir() else []
