"""The relevance judgements a run's pooled relevance panel holds, as TREC qrels.

An ``ir`` task with ``qrels = "judging"`` is scored against these (the run's read model
applies them: harness/store/run_model.py). This module reads the panel's SQLite file
only (no web stack, nothing of the rest of the panel), so the leaderboard can ask it.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from harness.testsets import TestSet

RELEVANCE_TEST = "relevance"


def relevance_panel_path(run_dir: Path, task: str) -> Path:
    """Where the relevance panel of ``task`` keeps its database (as store.panel_path)."""
    return run_dir / "judging" / f"{task}.{RELEVANCE_TEST}.sqlite"


def pool_key(topic: str, docno: str) -> str:
    """A pooled document's item id in the plan: topic and docno, tab-separated."""
    return f"{topic}\t{docno}"


def judged_qrels(run_dir: Path, task: str) -> dict[str, dict[str, int]]:
    """topic -> docno -> relevance (0, 1, 2) of every judged pooled document.

    A document judged by several assessors gets the lower median of their grades.
    No panel, or no judgement yet: an empty mapping.
    """
    path = relevance_panel_path(run_dir, task)
    if not path.is_file():
        return {}
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = db.execute(
            "SELECT t.item, a.answer FROM answers a JOIN trials t ON t.trial = a.trial"
        ).fetchall()
    except sqlite3.OperationalError:  # a file without the panel's tables
        return {}
    finally:
        db.close()
    return qrels_of((str(item), int(json.loads(answer)["relevance"])) for item, answer in rows)


def qrels_of(grades: Iterable[tuple[str, int]]) -> dict[str, dict[str, int]]:
    """topic -> docno -> relevance from (pooled item id, grade) pairs; a document graded
    by several assessors gets the lower median of their grades."""
    by_doc: dict[tuple[str, str], list[int]] = {}
    for item, grade in grades:
        topic, _, docno = item.partition("\t")
        by_doc.setdefault((topic, docno), []).append(grade)
    out: dict[str, dict[str, int]] = {}
    for (topic, docno), values in sorted(by_doc.items()):
        values.sort()
        out.setdefault(topic, {})[docno] = values[(len(values) - 1) // 2]
    return out


def qrels_text(qrels: Mapping[str, Mapping[str, int]]) -> str:
    """TREC qrels lines ``topic 0 docno relevance``, by topic and docno."""
    return "".join(
        f"{topic} 0 {docno} {rel}\n"
        for topic in sorted(qrels)
        for docno, rel in sorted(qrels[topic].items())
    )


def with_judged_qrels(testset: TestSet, run_dir: Path, task: str) -> TestSet:
    """The ``ir`` test set with each topic's judgements from the run's relevance panel."""
    qrels = judged_qrels(run_dir, task)
    items = tuple(
        replace(item, reference=replace(item.reference, judgements=qrels.get(item.id, {})))
        for item in testset.items
    )
    return replace(testset, items=items)
