"""TREC-style pooling: the top K documents of every run per topic, for relevance assessors.

Each system's answer to a topic is ranked as trec_eval ranks it (score descending, ties
by docno descending: `scoring.ir.rank_documents`); the pool of a topic is the union of
every run's first K. What the assessors read comes from the organizer's copy of the
collection (the task's ``collection``: ``<docno>.txt`` files), never from a system.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scoring.ir import rank_documents

DEFAULT_DEPTH = 100  # TREC's usual pool depth
MAX_DOCUMENT_CHARS = 200_000  # what one page shows of a document


@dataclass(frozen=True)
class Pool:
    """Per topic: each run's top-K docnos (in rank order) and their union."""

    depth: int
    runs: Mapping[str, Mapping[str, tuple[str, ...]]]  # topic -> system -> top K

    def documents(self, topic: str) -> tuple[str, ...]:
        """The topic's pooled docnos, each once (sorted: the plan shuffles them)."""
        return tuple(sorted({d for top in self.runs.get(topic, {}).values() for d in top}))

    def statistics(self, systems: Sequence[str]) -> dict[str, Any]:
        """Unique documents per topic and each run's contribution (all, and only its own)."""
        topics: dict[str, Any] = {}
        runs = {s: {"contributed": 0, "unique": 0} for s in systems}
        for topic, tops in self.runs.items():
            pooled = self.documents(topic)
            per_run: dict[str, dict[str, int]] = {}
            for system in systems:
                mine = set(tops.get(system, ()))
                others = {d for s, top in tops.items() if s != system for d in top}
                unique = len(mine - others)
                per_run[system] = {"contributed": len(mine), "unique": unique}
                runs[system]["contributed"] += len(mine)
                runs[system]["unique"] += unique
            topics[topic] = {"pooled": len(pooled), "runs": per_run}
        total = sum(t["pooled"] for t in topics.values())
        return {
            "depth": self.depth,
            "topics": topics,
            "runs": runs,
            "documents": total,
            "mean_per_topic": total / len(topics) if topics else 0.0,
        }


def top_documents(output: Mapping[str, Any], depth: int) -> tuple[str, ...]:
    """A run's first ``depth`` docnos of one topic, ranked as trec_eval ranks them."""
    scores = {str(d): float(s) for d, s in output.get("results", ())}
    return tuple(rank_documents(scores)[:depth])


def read_document(collection: Path, docno: str) -> tuple[str, str | None]:
    """A pooled document's text from the collection, and a warning when it has none."""
    path = collection / f"{docno}.txt"
    if "/" in docno or "\\" in docno or docno in (".", "..") or not path.is_file():
        return "", f"document {docno!r} is not in the collection {collection}"
    data = path.read_bytes()
    text = data.decode("utf-8", errors="replace")
    warning = None
    if "\ufffd" in text and b"\xef\xbf\xbd" not in data:
        warning = f"{path}: not UTF-8; shown with replacement characters"
    return text[:MAX_DOCUMENT_CHARS], warning
