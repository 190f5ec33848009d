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

from harness.site import Audit
from harness.testsets import TestItem

if TYPE_CHECKING:
    from harness.store.events import CompletionLike

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


# A first answer in less than this share of its whole-input repeat's time looks like work
# done while the input crossed the line (docs/security.md, "Serial devices"). An honest
# device's time does not depend on the order its input came in; a cheat must hide at least
# 1 - this share of its work to be flagged.
WHOLE_INPUT_SPEEDUP_LIMIT = 0.6
# ... and by at least this much: below it the difference is the host's and the device's
# scheduling, not a gain worth the name.
WHOLE_INPUT_MIN_GAIN_SECONDS = 0.1


def whole_input_lines(records: Iterable[CompletionLike]) -> list[AuditLine]:
    """Judge a job's hidden repeats that were sent whole input first (serial devices):
    no first answer may come far faster than its repeat, whose input the device could
    not begin on before it held all of it (docs/device-protocol.md section 6).

    Each repeat is compared with its item's first answer, both on their own time (what
    a lost link charged left out), when both were answered. A repeat that failed where
    its first answer did not fails the line too: repeats are not scored or counted, so
    failing the ones that come out of order would otherwise escape the comparison for
    free. A repeat that could not go whole input first (the device takes DATA only in
    order) is not compared, and the line says so. No line when no repeat was asked to
    go so (the transport hands a system its input whole anyway, or the task has no
    repeats).
    """
    by_id: dict[str, CompletionLike] = {}
    for record in records:
        by_id.setdefault(record["item"], record)
    checked: list[tuple[str, float, float]] = []
    in_order = 0
    failed = 0  # first answers that failed: nothing to compare with
    refused: list[str] = []  # whole-input repeats that failed where the first did not
    for item, again in by_id.items():
        original = audit_of(item)
        whole = again.get("whole_input_first")
        if original is None or whole is None:
            continue
        if not whole:
            in_order += 1
            continue
        first = by_id.get(original)
        answered = ("ok", "over_budget")
        if first is None or first["verdict"] not in answered:
            failed += 1
        elif again["verdict"] not in answered:
            refused.append(f"{original} ({again['verdict']})")
        else:
            checked.append((original, _own_seconds(first), _own_seconds(again)))
    if not checked and not in_order and not failed and not refused:
        return []
    rule = "first answers not suspiciously faster than whole-input repeats"
    why = (
        "the device takes DATA only in order (READY flag bit 1 clear), or dropped the "
        "DATA it was sent out of order"
    )
    if not checked and not failed and not refused:
        figure = f"not checked: {why}, so its {in_order} repeat{_s(in_order)} went in order"
        return [AuditLine(rule, True, figure)]
    faster = [
        f"{item} ({first:.3f} s against {again:.3f} s)"
        for item, first, again in checked
        if first < WHOLE_INPUT_SPEEDUP_LIMIT * again
        and again - first >= WHOLE_INPUT_MIN_GAIN_SECONDS
    ]
    parts = []
    if checked:
        parts.append(
            f"{len(faster)}/{len(checked)} first answers took less than "
            f"{WHOLE_INPUT_SPEEDUP_LIMIT:g}x their whole-input repeat"
            + (f": {', '.join(faster)}" if faster else "")
        )
    if refused:
        parts.append(
            f"{len(refused)} answered the first time but not whole input first: "
            + ", ".join(refused)
        )
    if failed:
        parts.append(f"{failed} not compared (the first answer failed)")
    if in_order:
        parts.append(f"{in_order} repeat{_s(in_order)} went in order: {why}")
    figure = "; ".join(parts)
    return [AuditLine(rule, not faster and not refused, figure)]


def _own_seconds(record: CompletionLike) -> float:
    """An item's time without what its lost attempts were charged."""
    return float(record["seconds"]) - float(record.get("lost_seconds") or 0.0)


def _s(count: int) -> str:
    return "" if count == 1 else "s"
