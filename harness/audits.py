"""Integrity audits: hidden repeated items and a secretly shuffled order.

A repeated item is an item of the test set sent again later under a new
anonymous id (optionally with its audio lightly perturbed: a +-1 LSB dither,
inaudible but enough to defeat a cache keyed on the file's bytes). Its answer
must agree with the first answer, and must not come suspiciously faster, which
would suggest the system caches results. Repeats are journaled and written to
the outputs like other items, marked with ``audit_of``, and never scored.

The seed that picks the repeats, their positions and the shuffled order is
drawn once per run, kept only in the controller's journal, and reused when a
run resumes, so a resumed run sends the same sequence.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .site import Audit
from .testsets import TestItem

if TYPE_CHECKING:
    from .events import CompletionLike

AUDIT_MARK = "#audit"


@dataclass(frozen=True)
class AuditLine:
    """One audit rule's outcome for one job, with the figure behind it."""

    rule: str
    passed: bool
    figure: str


def plan(items: Sequence[TestItem], audit: Audit, seed: int, work_dir: Path) -> list[TestItem]:
    """The order a job sends its items in: shuffled if asked, with hidden repeats inserted."""
    rng = random.Random(seed)
    order = list(items)
    if audit.shuffle:
        rng.shuffle(order)
    if not audit.repeats or not items:
        return order
    originals = rng.sample(list(items), min(audit.repeats, len(items)))
    for n, original in enumerate(originals, 1):
        repeat = replace(
            original,
            id=f"{original.id}{AUDIT_MARK}{n}",
            files=_perturbed(original, seed, work_dir) if audit.perturb else original.files,
        )
        # Somewhere after the original, so the first answer exists to compare against.
        first = order.index(original)
        order.insert(rng.randint(first + 1, len(order)), repeat)
    return order


def audit_of(item_id: str) -> str | None:
    """The original item's id for a repeat, None for an ordinary item."""
    original, mark, _ = item_id.partition(AUDIT_MARK)
    return original if mark else None


def _perturbed(item: TestItem, seed: int, work_dir: Path) -> Mapping[str, Path]:
    files = dict(item.files)
    audio = files.get("audio")
    if audio is None:
        return files  # only audio is perturbed; other inputs are repeated as they are
    digest = hashlib.sha256(f"{seed}:{audio}".encode()).hexdigest()[:16]
    target = work_dir / f"{digest}{audio.suffix}"
    if not target.exists():
        work_dir.mkdir(parents=True, exist_ok=True)
        # Imported here: reading an audit mark (audit_of) must stay cheap for readers.
        import numpy as np
        import soundfile

        info = soundfile.info(str(audio))
        samples, rate = soundfile.read(str(audio), dtype="int16", always_2d=False)
        rng = np.random.default_rng(int(digest, 16))
        dither = rng.integers(-1, 2, size=samples.shape, dtype=np.int16)
        noisy = np.clip(samples.astype(np.int32) + dither, -32768, 32767).astype(np.int16)
        tmp = target.with_name(target.name + ".tmp")
        soundfile.write(str(tmp), noisy, rate, subtype=info.subtype, format=info.format)
        tmp.replace(target)
    files["audio"] = target
    return files


def _disagreement(first: Mapping[str, Any] | None, again: Mapping[str, Any] | None) -> float:
    """0 when two answers agree; for text, the word error rate of one against the other."""
    if first is None or again is None:
        return 0.0 if first == again else 1.0
    if isinstance(first.get("text"), str) and isinstance(again.get("text"), str):
        from scoring import align, tokenize

        ref = tokenize(first["text"], "word")
        hyp = tokenize(again["text"], "word")
        if not ref:
            return 0.0 if not hyp else 1.0
        result = align(ref, hyp)
        return result.errors / len(ref)
    return 0.0 if dict(first) == dict(again) else 1.0


def audit_lines(records: Iterable[CompletionLike], audit: Audit) -> list[AuditLine]:
    """Judge a job's repeats from its completion records (first completion per item)."""
    by_id: dict[str, CompletionLike] = {}
    for record in records:
        by_id.setdefault(record["item"], record)
    repeats = [(r, by_id.get(audit_of(k) or "")) for k, r in by_id.items() if audit_of(k)]
    if not repeats:
        return []
    tolerance = audit.agreement_tolerance if audit.perturb else 0.0
    disagree = []
    faster = []
    for again, first in repeats:
        if first is None:
            continue
        if _disagreement(first.get("output"), again.get("output")) > tolerance:
            disagree.append(again["item"])
        if (
            first["verdict"] in ("ok", "over_budget")
            and again["verdict"] in ("ok", "over_budget")
            and again["seconds"] < audit.speedup_limit * first["seconds"]
        ):
            faster.append(again["item"])
    n = len(repeats)
    return [
        AuditLine(
            "repeated items agree with the first answer",
            not disagree,
            f"{n - len(disagree)}/{n} agree"
            + (f" (tolerance {tolerance:g})" if tolerance else "")
            + (f"; differ: {', '.join(disagree)}" if disagree else ""),
        ),
        AuditLine(
            "repeated items not suspiciously faster",
            not faster,
            f"{len(faster)}/{n} took less than {audit.speedup_limit:g}x the first time"
            + (f": {', '.join(faster)}" if faster else ""),
        ),
    ]


# A re-sent item answered in less than this share of the job's typical time looks like an
# answer kept from the attempt that was lost (docs/security.md, "Failures have an owner").
RESEND_SPEEDUP_LIMIT = 0.1


def resend_lines(records: Iterable[CompletionLike]) -> list[AuditLine]:
    """Judge a job's items that were sent again after venue failures: none may come back
    far faster than the job's typical item (the median time of the items answered at
    their first sending; where every item was re-sent, the median time a lost attempt
    ran). No line when no item was re-sent."""
    resent: list[tuple[str, float]] = []
    typical: list[float] = []
    lost: list[float] = []
    for record in records:
        count = record.get("resent")
        if count:
            lost.append(float(record.get("lost_seconds") or 0.0) / count)
        if record["verdict"] not in ("ok", "over_budget"):
            continue
        own = float(record["seconds"]) - float(record.get("lost_seconds") or 0.0)
        if count:
            resent.append((record["item"], own))
        else:
            typical.append(own)
    if not lost:
        return []
    reference = sorted(typical or lost)
    median = reference[len(reference) // 2]
    what = "the median item" if typical else "the median lost attempt"
    faster = [
        f"{item} ({own:.3f} s)" for item, own in resent if own < RESEND_SPEEDUP_LIMIT * median
    ]
    return [
        AuditLine(
            "re-sent items not suspiciously faster",
            not faster,
            f"{len(faster)}/{len(lost)} re-sent item(s) answered in less than "
            f"{RESEND_SPEEDUP_LIMIT:g}x {what} ({median:.3f} s)"
            + (f": {', '.join(faster)}" if faster else ""),
        )
    ]
