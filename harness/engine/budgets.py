"""Real-time budgets: how long an item may take, when a system is declared hung, verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from harness.site import Budget
from harness.testsets import TestItem

Verdict = Literal["ok", "over_budget", "timeout", "crashed", "error", "invalid_output"]
VERDICTS: tuple[Verdict, ...] = (
    "ok",
    "over_budget",
    "timeout",
    "crashed",
    "error",
    "invalid_output",
)


@dataclass(frozen=True)
class CountedVerdict:
    """One failing verdict and the one name each part of onsite gives its count.

    The verdict is the concept; the rule that limits it (``[tasks.X.rules]``), the
    running-score weight that charges it (``[site.running_score]``) and the leaderboard
    column (and JSON key) that counts it are named here and nowhere else: the site
    models, the verdict rules, the running score and the report read this table, and a
    test checks that they agree with it.
    """

    verdict: Verdict
    rule: str  # Rules field: the most items with this verdict for a VALID job
    weight: str | None  # RunningScoreWeights field, None when the score does not charge it
    column: str  # LeaderboardRow attribute and JSON key: the count
    label: str  # how a rule line of the report says it


COUNTED_VERDICTS: tuple[CountedVerdict, ...] = (
    CountedVerdict("timeout", "max_timeouts", "timeout", "timeouts", "timeouts"),
    CountedVerdict("crashed", "max_crashes", "crash", "crashes", "crashes"),
    CountedVerdict(
        "invalid_output",
        "max_invalid_outputs",
        "invalid_output",
        "invalid_outputs",
        "invalid outputs",
    ),
    CountedVerdict("error", "max_errors", "error", "errors", "error replies"),
    CountedVerdict("over_budget", "max_over_budget", None, "over_budget", "items over budget"),
)

# With no hang_seconds in the site file a system may take this many times its
# budget (and at least the floor) before it is killed as hung.
HANG_FACTOR = 10.0
HANG_FLOOR_SECONDS = 30.0
NO_BUDGET_HANG_SECONDS = 600.0


def item_budget_seconds(budget: Budget, item: TestItem, units: float | None = None) -> float | None:
    """The item's budget in seconds, or None when the task sets no per-item limit.

    ``units`` is the item's size for rate budgets that are not about audio:
    characters for chars_per_second, frames for ms_per_frame.
    """
    if budget.seconds is not None:
        return budget.seconds
    if budget.realtime_factor is not None and item.duration is not None:
        return budget.realtime_factor * item.duration
    if budget.chars_per_second is not None and units:
        return units / budget.chars_per_second
    if budget.ms_per_frame is not None and units:
        return units * budget.ms_per_frame / 1000.0
    return None


def hang_seconds(budget: Budget, item_budget: float | None) -> float:
    """The hard limit after which the system is killed and the item recorded as timeout."""
    if budget.hang_seconds is not None:
        return budget.hang_seconds
    if item_budget is None:
        return NO_BUDGET_HANG_SECONDS
    return max(HANG_FACTOR * item_budget, HANG_FLOOR_SECONDS)


def judge(outcome: str, seconds: float, budget_seconds: float | None) -> Verdict:
    """The verdict for one attempt: the runner's outcome, then the clock."""
    if outcome == "result":
        if budget_seconds is not None and seconds > budget_seconds:
            return "over_budget"
        return "ok"
    if outcome in ("timeout", "crashed", "error", "invalid_output"):
        return outcome  # type: ignore[return-value]
    raise ValueError(f"unknown outcome {outcome!r}")
