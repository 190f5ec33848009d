"""The published tables: per task and track, each system as its "System k", with its
rank range, headline and 95% interval, speed and failure counts.

Rows come from the leaderboard (harness/leaderboard.py) and their intervals and rank
ranges from harness/significance.py's ``with_intervals``, computed among the systems of
one table (a track's ranks are among that track's systems). Nothing here holds a name
of the site file's systems, teams, devices or commands: a row carries the key's label,
and a declaration is redacted (harness/publish/anonymize.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from harness.publish.anonymize import Key, Secret, redact

if TYPE_CHECKING:
    from harness.leaderboard import LeaderboardRow
    from harness.significance import IntervalSettings
    from harness.store.run_model import RunModel


@dataclass(frozen=True)
class PublishedRow:
    """One system's line of a published table. Rates are fractions, times seconds."""

    rank: str  # "2", or "1-2" where no test separates the systems
    label: str  # "System 3"
    number: int
    track: str | None
    run_type: str | None
    declarations: str  # what it used beyond the allowed list, redacted; "" for nothing
    score: float | None
    ci_low: float | None
    ci_high: float | None
    speed_mean: float | None
    speed_p95: float | None
    items: int
    completed: int
    over_budget: int
    timeouts: int
    crashes: int
    errors: int
    invalid_outputs: int
    restarts: int
    # A task budgeted over the whole set (HTRDP's "2X real time over the set"): whether
    # the system's total time stayed within it; None for a per-item budget.
    set_budget_met: bool | None = None
    # The kind's secondary figures ("P 89.7% R 92.7%"), and the headline per condition
    # or subset of the test set (clean, snr15 ...) where the kind breaks it down.
    detail: str = ""
    breakdown: tuple[tuple[str, float | None], ...] = ()

    @property
    def failures(self) -> int:
        """Items the system did not answer in time or at all."""
        return self.timeouts + self.crashes + self.errors + self.invalid_outputs


@dataclass(frozen=True)
class PublishedTable:
    """One task's systems of one track (``track`` None: the systems that name none)."""

    task: str
    kind: str
    track: str | None
    metric: str
    metric_label: str
    higher_is_better: bool
    speed_unit: str
    rows: tuple[PublishedRow, ...]

    @property
    def title(self) -> str:
        """The heading: "asr-2x", or "asr-2x, closed track"."""
        return self.task + (f", {self.track} track" if self.track else "")

    @property
    def stem(self) -> str:
        """A file name for the table's figure: the task and the track."""
        import re

        text = self.task + (f"-{self.track}" if self.track else "")
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        data = asdict(self)
        data["rows"] = [asdict(r) for r in self.rows]
        return data


@dataclass(frozen=True)
class Published:
    """Every published table and how its numbers were made (never the key's seed: with
    it and the list of entrants, anyone could draw the key again)."""

    evaluation: str
    order: str
    track: str | None
    intervals: dict[str, Any]
    tables: tuple[PublishedTable, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "evaluation": self.evaluation,
            "numbering": "by rank" if self.order == "rank" else "random",
            "track": self.track,
            "intervals": self.intervals,
            "tables": [t.to_dict() for t in self.tables],
        }


# Where the kinds keep their headline per part of the test set.
_BREAKDOWNS = ("by_condition", "by_subset")


def _breakdown(row: LeaderboardRow, kind: Any, cfg: Any) -> tuple[tuple[str, float | None], ...]:
    for name in _BREAKDOWNS:
        parts = row.scores.get(name)
        if isinstance(parts, dict) and parts:
            return tuple(
                (str(part), kind.headline(cfg, figures).value)
                for part, figures in parts.items()
                if isinstance(figures, dict)
            )
    return ()


def _published_row(
    row: LeaderboardRow, key: Key, secrets: Sequence[Secret], kind: Any, cfg: Any
) -> PublishedRow:
    return PublishedRow(
        rank=row.rank_text(),
        label=key.label(row.system),
        number=key.number(row.system),
        track=row.track,
        run_type=row.run_type,
        declarations=redact(row.declarations, key, secrets),
        score=row.score,
        ci_low=row.ci_low,
        ci_high=row.ci_high,
        speed_mean=row.speed_mean,
        speed_p95=row.speed_p95,
        items=row.items,
        completed=row.completed,
        over_budget=row.over_budget,
        timeouts=row.timeouts,
        crashes=row.crashes,
        errors=row.errors,
        invalid_outputs=row.invalid_outputs,
        restarts=row.restarts,
        set_budget_met=row.set_budget_met if row.budget_scope == "set" else None,
        detail=redact(row.detail, key, secrets),
        breakdown=_breakdown(row, kind, cfg),
    )


def ranked_rows(
    model: RunModel, rows: Sequence[LeaderboardRow], settings: IntervalSettings
) -> list[LeaderboardRow]:
    """The rows with intervals and rank ranges, each track's among its own systems."""
    from harness.significance import with_intervals

    groups: dict[tuple[str, str | None], list[LeaderboardRow]] = {}
    for row in rows:
        groups.setdefault((row.task, row.track), []).append(row)
    return [r for group in groups.values() for r in with_intervals(model, group, settings)]


def _track_order(model: RunModel, task: str, track: str | None) -> tuple[int, int, str]:
    declared = list(getattr(model.site.config.tasks[task], "tracks", []))
    if track is None:
        return (0, 0, "")
    if track in declared:
        return (1, declared.index(track), track)
    return (2, 0, track)


def _best_first(row: LeaderboardRow, key: Key) -> tuple[bool, float, int]:
    if row.score is None:
        return (True, 0.0, key.number(row.system))
    return (False, -row.score if row.higher_is_better else row.score, key.number(row.system))


def published_tables(
    model: RunModel,
    rows: Sequence[LeaderboardRow],
    key: Key,
    secrets: Sequence[Secret],
    settings: IntervalSettings,
    track: str | None = None,
) -> Published:
    """The tables of ``rows`` (already ranked by :func:`ranked_rows`), one per task and
    track in the site's task order, each best first."""
    from harness.kinds.registry import task_kind

    groups: dict[tuple[str, str | None], list[LeaderboardRow]] = {}
    for row in rows:
        groups.setdefault((row.task, row.track), []).append(row)
    tasks = list(model.site.config.tasks)
    tables = []
    for task_name, track_name in sorted(
        groups, key=lambda g: (tasks.index(g[0]), _track_order(model, g[0], g[1]))
    ):
        group = sorted(groups[(task_name, track_name)], key=lambda r: _best_first(r, key))
        first = group[0]
        cfg = model.site.config.tasks[task_name]
        kind = task_kind(cfg.kind)
        tables.append(
            PublishedTable(
                task=task_name,
                kind=kind.name,
                track=track_name,
                metric=first.metric,
                metric_label=kind.metric_label(first.metric),
                higher_is_better=first.higher_is_better,
                speed_unit=first.speed_unit,
                rows=tuple(_published_row(r, key, secrets, kind, cfg) for r in group),
            )
        )
    return Published(
        evaluation=model.site.config.site.name,
        order=key.order,
        track=track,
        intervals=settings.to_dict(),
        tables=tuple(tables),
    )
