"""Disputes: a participant's challenge to an item's result, and the organizer's decision.

Everything is a journal record of its own (harness/store/events.py): ``dispute_filed``,
``appeal_dispatched`` and ``appeal_completed`` (a rerun's appeal attempt) and
``dispute_decided``. Nothing recorded before is rewritten; the replay keeps these
records in order (``RunState.disputes``) and this module reads them.

The rule the leaderboard scores by (``effective_completions``): an item counts with its
first completion until the organizer decides otherwise. A dispute alone changes
nothing, so filing one never gives a participant a free redo. ``rejected`` leaves the
result as it was; ``amended`` makes the item count with the organizer's verdict (the
output, time and budget stay the attempt's own); ``rerun`` makes it count with the appeal
attempt's result, better or worse: by rerunning, the organizer rules the first attempt
void. An item may be disputed again once a decision is made; the challenge is then
against what the item counts as at that point.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, cast, get_args

from harness.errors import InputError, Problem
from harness.store.directory import RunState
from harness.store.events import (
    AppealCompleted,
    AppealDispatched,
    Completed,
    DisputeDecided,
    DisputeFiled,
    Verdict,
)

DisputeState = Literal["open", "rejected", "amended", "rerun"]
VERDICTS: tuple[str, ...] = get_args(Verdict)
# Verdicts under which an item's output is scored: amending to one needs an output.
_ANSWERED = ("ok", "over_budget")


@dataclass(frozen=True)
class Dispute:
    """One dispute as the journal tells it: the challenge, what it challenged, the appeal
    attempts of a rerun and the decision (None while open)."""

    filed: DisputeFiled
    original: Completed | None  # what the item counted as when the dispute was filed
    appeals: tuple[Completed, ...] = ()
    decision: DisputeDecided | None = None

    @property
    def number(self) -> int:
        """The dispute's number in the run."""
        return self.filed.dispute

    @property
    def state(self) -> DisputeState:
        """`open` until decided, then the decision."""
        return "open" if self.decision is None else self.decision.decision

    @property
    def counted(self) -> Completed | None:
        """What the item counts as after this dispute (the original while open or rejected)."""
        return _counted(self.original, self.decision, self.appeals)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the challenge, the decision, both attempts and what counts."""
        filed, decision = self.filed, self.decision
        counted = self.counted
        return {
            "dispute": self.number,
            "task": filed.task,
            "system": filed.system,
            "item": filed.item,
            "state": self.state,
            "reason": filed.reason,
            "by": filed.by,
            "filed_wall": filed.wall,
            "original": _attempt_dict(self.original),
            "appeals": [_attempt_dict(a) for a in self.appeals],
            "decision": None
            if decision is None
            else {
                "decision": decision.decision,
                "reason": decision.reason,
                "verdict": decision.verdict,
                "attempt": decision.attempt,
                "actor": decision.actor,
                "wall": decision.wall,
            },
            "counted": None
            if counted is None
            else {"attempt": counted.attempt, "verdict": counted.verdict},
        }


def _attempt_dict(record: Completed | None) -> dict[str, Any] | None:
    if record is None:
        return None
    return {
        "attempt": record.attempt,
        "verdict": record.verdict,
        "seconds": record.seconds,
        "budget_seconds": record.budget_seconds,
        "output": record.output,
        "message": record.message,
        "wall": record.wall,
    }


def _counted(
    original: Completed | None, decision: DisputeDecided | None, appeals: tuple[Completed, ...]
) -> Completed | None:
    if original is None or decision is None or decision.decision == "rejected":
        return original
    if decision.decision == "amended" and decision.verdict is not None:
        note = f"amended by dispute {decision.dispute}: {decision.reason}".strip()
        return original.model_copy(update={"verdict": decision.verdict, "message": note})
    if decision.decision == "rerun":
        for appeal in appeals:
            if appeal.attempt == decision.attempt:
                return appeal
    return original


@dataclass
class _Reader:
    """The disputes of a run read in journal order, over its first completions."""

    state: RunState
    counted: dict[tuple[str, str, str], Completed] = field(default_factory=dict)
    disputes: dict[int, Dispute] = field(default_factory=dict)

    def current(self, task: str, system: str, item: str) -> Completed | None:
        key = (task, system, item)
        if key in self.counted:
            return self.counted[key]
        return self.state.completed.get((task, system), {}).get(item)

    def read(self) -> _Reader:
        for record in self.state.disputes:
            if isinstance(record, DisputeFiled):
                original = self.current(record.task, record.system, record.item)
                self.disputes[record.dispute] = Dispute(record, original)
            elif isinstance(record, AppealCompleted) and record.dispute in self.disputes:
                dispute = self.disputes[record.dispute]
                appeal = Completed.model_validate(
                    {**record.result, "session": record.session, "wall": record.wall,
                     "mono": record.mono}
                )  # fmt: skip
                self.disputes[record.dispute] = Dispute(
                    dispute.filed, dispute.original, (*dispute.appeals, appeal), dispute.decision
                )
            elif isinstance(record, DisputeDecided) and record.dispute in self.disputes:
                dispute = self.disputes[record.dispute]
                if dispute.decision is not None:
                    continue  # the first decision stands (the CLI never writes a second)
                decided = Dispute(dispute.filed, dispute.original, dispute.appeals, record)
                self.disputes[record.dispute] = decided
                counted = decided.counted
                if counted is not None:
                    self.counted[(record.task, record.system, record.item)] = counted
        return self


def disputes_of(state: RunState) -> list[Dispute]:
    """Every dispute of a replayed run (one that kept its answers), by number."""
    reader = _Reader(state).read()
    return [reader.disputes[n] for n in sorted(reader.disputes)]


def effective_completions(state: RunState, task: str, system: str) -> dict[str, Completed]:
    """The job's completions as the leaderboard scores them: each item's first
    completion, or what an organizer's decision made it count as (the module's rule)."""
    completed = state.completed.get((task, system), {})
    if not state.disputes:
        return completed
    reader = _Reader(state).read()
    changed = {
        item: record for (t, s, item), record in reader.counted.items() if (t, s) == (task, system)
    }
    if not changed:
        return completed
    return {item: changed.get(item, record) for item, record in completed.items()}


# -- checking what an operator asks for -------------------------------------------------


def new_dispute(
    state: RunState,
    run_dir: Path,
    jobs: Collection[tuple[str, str]],
    item_ids: Mapping[str, Collection[str]],
    task: str,
    system: str,
    item: str,
    reason: str,
    by: str = "",
) -> DisputeFiled:
    """The ``dispute_filed`` record for a challenge, or InputError naming what is wrong.

    ``jobs`` are the site's (task, system) jobs, ``item_ids`` each task's test-set ids.
    """
    if (task, system) not in jobs:
        known = ", ".join(f"{t}/{s}" for t, s in jobs)
        raise InputError(
            [Problem(run_dir, "--task/--system", f"no job {task}/{system} in this run",
                     f"name one of its jobs: {known}")]
        )  # fmt: skip
    ids = item_ids.get(task, ())
    if item not in ids:
        some = ", ".join(sorted(ids)[:5])
        raise InputError(
            [Problem(run_dir, "--item", f"no item {item!r} in the test set of task {task!r}",
                     f"give an item id of the test set (e.g. {some})")]
        )  # fmt: skip
    if not reason.strip():
        raise InputError(
            [Problem(run_dir, "--reason", "a dispute needs a reason", "say what is challenged")]
        )
    reader = _Reader(state).read()
    original = reader.current(task, system, item)
    if original is None:
        raise InputError(
            [Problem(run_dir, "--item", f"item {item!r} of {task}/{system} has no result yet",
                     "a dispute challenges a recorded verdict: wait until the run completes "
                     "the item")]
        )  # fmt: skip
    for dispute in reader.disputes.values():
        filed = dispute.filed
        if (filed.task, filed.system, filed.item) == (
            task,
            system,
            item,
        ) and dispute.decision is None:
            raise InputError(
                [Problem(run_dir, "--item", f"dispute {dispute.number} on this item is still open",
                         f"add to it by resolving it first (`onsite dispute RUN --resolve "
                         f"{dispute.number} ...`)")]
            )  # fmt: skip
    return DisputeFiled(
        task=task,
        system=system,
        dispute=max(reader.disputes, default=0) + 1,
        item=item,
        reason=reason.strip(),
        by=by,
        attempt=original.attempt,
        verdict=original.verdict,
    )


def open_dispute(state: RunState, run_dir: Path, number: int) -> Dispute:
    """The open dispute ``number`` (InputError when there is none, or it was decided)."""
    reader = _Reader(state).read()
    dispute = reader.disputes.get(number)
    if dispute is None:
        known = ", ".join(str(n) for n in sorted(reader.disputes)) or "none yet"
        raise InputError(
            [Problem(run_dir, "--resolve", f"no dispute {number} in this run",
                     f"give a number `onsite dispute RUN --list` shows (disputes: {known})")]
        )  # fmt: skip
    if dispute.decision is not None:
        decided = dispute.decision
        raise InputError(
            [Problem(run_dir, "--resolve", f"dispute {number} was already decided "
                     f"({decided.decision}: {decided.reason or 'no reason given'})",
                     "a decision is final; a new challenge to the item is a new dispute")]
        )  # fmt: skip
    return dispute


def decision(
    state: RunState,
    run_dir: Path,
    number: int,
    decided: Literal["rejected", "amended"],
    reason: str,
    verdict: str | None = None,
    check_output: Callable[[Mapping[str, Any]], str | None] | None = None,
) -> DisputeDecided:
    """The ``dispute_decided`` record rejecting or amending an open dispute.

    ``check_output`` is the task kind's check of an output: an amendment that would
    have the leaderboard score an output its scorer cannot read is refused.
    """
    dispute = open_dispute(state, run_dir, number)
    flag = "--reject" if decided == "rejected" else "--amend"
    if not reason.strip():
        raise InputError(
            [Problem(run_dir, "--reason", f"{flag} needs a reason", "say why (it is published)")]
        )
    if decided == "amended":
        if verdict not in VERDICTS:
            raise InputError(
                [Problem(run_dir, "--amend", f"unknown verdict {verdict!r}",
                         f"use one of: {', '.join(VERDICTS)}")]
            )  # fmt: skip
        original = dispute.original
        if verdict in _ANSWERED and (original is None or original.output is None):
            raise InputError(
                [Problem(run_dir, "--amend", f"the challenged attempt has no output to count "
                         f"as {verdict}", f"rerun the item instead (--resolve {number} --rerun)")]
            )  # fmt: skip
        problem = (
            check_output(original.output)
            if verdict in _ANSWERED and original is not None and original.output is not None
            and check_output is not None
            else None
        )  # fmt: skip
        if problem:
            raise InputError(
                [Problem(run_dir, "--amend", f"the challenged output cannot be scored as "
                         f"{verdict}: {problem}", f"rerun the item instead (--resolve {number} "
                         "--rerun), or reject the dispute")]
            )  # fmt: skip
    filed = dispute.filed
    return DisputeDecided(
        task=filed.task,
        system=filed.system,
        dispute=number,
        item=filed.item,
        decision=decided,
        reason=reason.strip(),
        verdict=cast(Verdict, verdict) if decided == "amended" else None,
    )


def appeal_attempt(state: RunState, dispute: Dispute) -> int:
    """The attempt number of a new appeal attempt: after every attempt the item had."""
    filed = dispute.filed
    key = (filed.task, filed.system, filed.item)
    used = [filed.attempt]
    for record in state.disputes:
        if (
            isinstance(record, AppealDispatched | AppealCompleted | DisputeFiled)
            and (record.task, record.system, record.item) == key
        ):
            used.append(record.attempt)
    return max(used) + 1
