"""The running score: one number for how smoothly a system ran, kept beside quality.

    running score = 100 - speed points - sum over k of weight[k] * (count[k] per 100 items)

clipped to 0..100, where

- speed points = weight["speed"] * mean budget usage; an item's budget usage is
  its processing seconds over its budget seconds, capped at `USAGE_CAP` (a hung
  item is charged as a timeout, not a second time through its hang time); the
  mean is over the attempted items that have a budget, and speed points are 0
  when no item has one;
- count[k] is the job's timeouts, crashes, restarts, error replies and invalid
  outputs; "per 100 items" divides by the items attempted.

docs/report.md works an example through.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.engine.audits import audit_of
from harness.engine.budgets import COUNTED_VERDICTS
from harness.site import RunningScoreWeights

if TYPE_CHECKING:
    from harness.store.events import CompletionLike

DEFAULT_WEIGHTS: Mapping[str, float] = RunningScoreWeights().model_dump()
"""Points per unit (the defaults of the site file's ``RunningScoreWeights``): "speed" per
unit of mean budget usage, the rest per event per 100 items."""

USAGE_CAP = 2.0
"""An item's budget usage (seconds / budget seconds) counts at most this much."""

# weight key -> the verdict it charges, from the one table
_VERDICT_OF = {c.weight: c.verdict for c in COUNTED_VERDICTS if c.weight is not None}


@dataclass(frozen=True)
class RunningScore:
    """A job's running score and the terms it is made of."""

    score: float
    items: int
    mean_budget_usage: float | None
    speed_points: float
    counts: Mapping[str, int] = field(default_factory=dict)
    # Points taken off per kind of event (count per 100 items times its weight).
    penalties: Mapping[str, float] = field(default_factory=dict)

    def figure(self) -> str:
        """One line explaining the number, for the report."""
        usage = "-" if self.mean_budget_usage is None else f"{100 * self.mean_budget_usage:.1f}%"
        parts = [f"speed -{self.speed_points:.2f} (mean budget usage {usage})"]
        parts += [
            f"{kind} -{points:.2f} ({self.counts[kind]})"
            for kind, points in self.penalties.items()
            if self.counts.get(kind)
        ]
        return f"100 {' '.join(parts)} over {self.items} items = {self.score:.2f}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "score": self.score,
            "items": self.items,
            "mean_budget_usage": self.mean_budget_usage,
            "speed_points": self.speed_points,
            "counts": dict(self.counts),
            "penalties": dict(self.penalties),
        }


def resolve_weights(overrides: Mapping[str, float] | None = None) -> dict[str, float]:
    """`DEFAULT_WEIGHTS` with overrides applied; unknown keys and negative weights are refused."""
    weights = dict(DEFAULT_WEIGHTS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULT_WEIGHTS:
            raise ValueError(
                f"unknown running-score weight {key!r}; allowed: {', '.join(DEFAULT_WEIGHTS)}"
            )
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ValueError(f"running-score weight {key} must be a number >= 0, not {value!r}")
        weights[key] = float(value)
    return weights


def running_score(
    records: Iterable[CompletionLike],
    restarts: int,
    weights: Mapping[str, float] | None = None,
) -> RunningScore:
    """Score a job from its completion records (journal `completed` or outputs lines).

    Audit repeats (``audit_of`` set, or an id with the audit mark) are left out, as the
    leaderboard leaves them out.
    """
    w = resolve_weights(weights)
    items = [
        r
        for r in records
        if not r.get("audit_of") and audit_of(str(r.get("item", r.get("id", "")))) is None
    ]
    usages = [
        min(r["seconds"] / r["budget_seconds"], USAGE_CAP) for r in items if r.get("budget_seconds")
    ]
    mean_usage = sum(usages) / len(usages) if usages else None
    speed_points = w["speed"] * mean_usage if mean_usage is not None else 0.0
    verdicts = [r.get("verdict") for r in items]
    counts = {
        kind: restarts if kind == "restart" else verdicts.count(_VERDICT_OF[kind])
        for kind in w
        if kind != "speed"
    }
    per_hundred = 100.0 / max(len(items), 1)
    penalties = {kind: w[kind] * n * per_hundred for kind, n in counts.items()}
    score = 100.0 - speed_points - sum(penalties.values())
    return RunningScore(
        score=min(100.0, max(0.0, score)),
        items=len(items),
        mean_budget_usage=mean_usage,
        speed_points=speed_points,
        counts=counts,
        penalties=penalties,
    )
