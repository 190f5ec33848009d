"""VALID or INVALID per (task, system), with one line per rule and the figure behind it.

The rules, in the order they are listed:

1. every item of the test set was attempted (a run stopped early or with
   ``--limit`` is INVALID);
2. for tasks whose budget scope is ``"set"``: the total processing time is
   within the sum of the item budgets; for ``"item"`` scope, over-budget items
   are judged only when a ``max_over_budget`` limit is given;
3. timeouts, crashes and invalid outputs (and, when a limit is given, error
   replies) within their limits (`DEFAULT_LIMITS`);
4. every integrity audit line passed (harness/engine/audits.py, or lines given by the
   caller).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from harness.engine.budgets import COUNTED_VERDICTS
from harness.leaderboard import LeaderboardRow
from harness.site import Rules

DEFAULT_LIMITS: Mapping[str, int | None] = Rules().model_dump()
"""Limits used when a task gives none (the defaults of the site file's ``Rules``); None
means the count is shown but not judged."""

# limit key -> (LeaderboardRow attribute, what the rule line calls it), from the one table
_COUNTED = {c.rule: (c.column, c.label) for c in COUNTED_VERDICTS}

AuditInput = tuple[str, bool, str] | Mapping[str, Any] | Any
"""An audit line: a (rule, passed, figure) tuple, a mapping with those keys, or an object
with those attributes (harness.engine.audits.AuditLine)."""


@dataclass(frozen=True)
class RuleLine:
    """One rule's outcome and the figure it was judged on."""

    rule: str
    passed: bool
    figure: str


@dataclass(frozen=True)
class JobVerdict:
    """The verdict of one (task, system) job."""

    task: str
    system: str
    lines: tuple[RuleLine, ...]

    @property
    def valid(self) -> bool:
        """True when every rule passed."""
        return all(line.passed for line in self.lines)

    @property
    def label(self) -> str:
        """ "VALID" or "INVALID"."""
        return "VALID" if self.valid else "INVALID"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "task": self.task,
            "system": self.system,
            "verdict": self.label,
            "lines": [{"rule": x.rule, "passed": x.passed, "figure": x.figure} for x in self.lines],
        }


def resolve_limits(overrides: Mapping[str, int | None] | None = None) -> dict[str, int | None]:
    """`DEFAULT_LIMITS` with overrides applied; unknown keys and negative limits are refused."""
    limits = dict(DEFAULT_LIMITS)
    for key, value in (overrides or {}).items():
        if key not in DEFAULT_LIMITS:
            raise ValueError(f"unknown verdict limit {key!r}; allowed: {', '.join(DEFAULT_LIMITS)}")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise ValueError(f"verdict limit {key} must be a whole number or none, not {value!r}")
        if value is not None and value < 0:
            raise ValueError(f"verdict limit {key} must be 0 or more, not {value}")
        limits[key] = value
    return limits


def audit_line(line: AuditInput) -> RuleLine:
    """Normalise one audit line (tuple, mapping or object) to a RuleLine."""
    if isinstance(line, tuple):
        rule, passed, figure = line
    elif isinstance(line, Mapping):
        rule, passed, figure = line["rule"], line["passed"], line["figure"]
    else:
        rule, passed, figure = line.rule, line.passed, line.figure
    return RuleLine(f"audit: {rule}", bool(passed), str(figure))


def _seconds(value: float) -> str:
    return f"{value:.2f} s"


def judge_job(
    row: LeaderboardRow,
    limits: Mapping[str, int | None] | None = None,
    audits: Iterable[AuditInput] | None = None,
) -> JobVerdict:
    """Judge one leaderboard row. ``audits`` replaces the row's own audit lines when given."""
    resolved = resolve_limits(limits)
    lines = [
        RuleLine(
            "every item attempted",
            row.completed >= row.items,
            f"{row.completed}/{row.items} items completed",
        )
    ]
    if row.budget_scope == "set":
        if row.total_budget_seconds is None or row.total_seconds is None:
            lines.append(
                RuleLine("set budget met", True, "no per-item budgets to sum (no rate budget)")
            )
        else:
            used = row.total_seconds / row.total_budget_seconds if row.total_budget_seconds else 0
            lines.append(
                RuleLine(
                    "set budget met",
                    bool(row.set_budget_met),
                    f"{_seconds(row.total_seconds)} of {_seconds(row.total_budget_seconds)} "
                    f"({100 * used:.1f}% of the summed item budgets)",
                )
            )
    for key, (attribute, name) in _COUNTED.items():
        limit = resolved[key]
        if limit is None:
            continue
        count = getattr(row, attribute)
        lines.append(RuleLine(f"{name} within limit", count <= limit, f"{count} (limit {limit})"))
    if row.unsealed:
        lines.append(
            RuleLine(
                "run sealed",
                False,
                "unsealed: its device has sandbox = false, so the system could see the run",
            )
        )
    if row.venue_failures:
        lines.append(
            RuleLine(
                "venue failures: items re-sent, their clock kept",
                True,
                f"{row.venue_failures} lost link(s) or resets by the harness; each item "
                "re-sent at most twice, charged what its lost attempts ran",
            )
        )
    given = row.audits if audits is None else audits
    lines.extend(audit_line(line) for line in given)
    return JobVerdict(row.task, row.system, tuple(lines))
