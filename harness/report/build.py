"""ReportData: everything the report shows, read from one run directory.

Pure data (no figures, no markup): `write_html`, `write_csv` and `write_json`
render it. Everything comes from the run directory, so the same directory
always gives the same report.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from harness.engine.audits import audit_of
from harness.engine.manifest import read_manifest
from harness.engine.running_score import RunningScore, resolve_weights, running_score
from harness.leaderboard import LeaderboardRow, leaderboard
from harness.report.verdicts import AuditInput, JobVerdict, judge_job, resolve_limits
from harness.significance import IntervalSettings, with_intervals
from harness.store.directory import JobSummary, RunState
from harness.store.events import (
    Completed,
    JobFailed,
    LinkLost,
    StartFailed,
)
from harness.store.run_model import RunModel
from harness.testsets import TestSet

# Every report shows intervals and ranks unless told not to (sacrebleu's defaults).
DEFAULT_INTERVALS = IntervalSettings()

# Verdicts that count as a failure of the item in every budget scope.
_FAILED = ("timeout", "crashed", "error", "invalid_output")


@dataclass(frozen=True)
class ItemTiming:
    """One processed item, in the order the journal completed them."""

    item: str
    attempt: int
    seconds: float
    budget_seconds: float | None
    verdict: str
    audit: bool  # a hidden repeat (harness/engine/audits.py), not scored
    # The link's round trip measured around the item (SSH, serial); None for local systems.
    round_trip_seconds: float | None = None


@dataclass(frozen=True)
class ItemDetail:
    """One completed item as the report's per-item table shows it (texts shortened)."""

    item: str
    output: str
    reference: str
    verdict: str
    seconds: float
    audit: bool


# An item's output and reference are cut to this many characters in the per-item table.
DETAIL_CHARS = 300


def _short(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, Mapping) and set(value) == {"text"}:
        value = value["text"]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= DETAIL_CHARS else text[: DETAIL_CHARS - 1] + "…"


@dataclass(frozen=True)
class Failure:
    """One failed attempt, a lost link or a failed start."""

    item: str
    attempt: int | None
    verdict: str
    message: str


@dataclass(frozen=True)
class JobReport:
    """One (task, system): leaderboard row, verdict, running score, timings and failures."""

    row: LeaderboardRow
    verdict: JobVerdict
    running: RunningScore
    timings: tuple[ItemTiming, ...]
    failures: tuple[Failure, ...]
    speeds: tuple[float, ...]  # per answered item, in the row's speed unit
    setup_seconds_total: float  # every start, restarts included
    execution_seconds: float  # item seconds + setup seconds (CWMT "execution time")
    # Per completed item: output, reference, verdict, time (the HTML report's detail).
    items: tuple[ItemDetail, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "row": self.row.to_dict(),
            "verdict": self.verdict.to_dict(),
            "running_score": self.running.to_dict(),
            "timings": [asdict(t) for t in self.timings],
            "failures": [asdict(f) for f in self.failures],
            "setup_seconds_total": self.setup_seconds_total,
            "execution_seconds": self.execution_seconds,
        }


@dataclass(frozen=True)
class TaskReport:
    """One task and its jobs in the site file's order."""

    name: str
    kind: str
    description: str
    budget: Mapping[str, Any]
    limits: Mapping[str, int | None]
    jobs: tuple[JobReport, ...]

    def scoring_notes(self) -> list[tuple[str, str]]:
        """(system, note) for each warning a job's scorer gave: where the reference tool
        would print another figure for these outputs, and the flag that gives its."""
        return [(job.row.system, note) for job in self.jobs for note in job.row.notes]


@dataclass(frozen=True)
class SystemReport:
    """One system: where it ran and the CWMT-style description."""

    name: str
    description: str
    device: str
    tasks: tuple[str, ...]
    execution_seconds: float
    environment: Mapping[str, Any] | None  # from the manifest; None without one
    participant: str = ""
    track: str | None = None
    run_type: str | None = None
    declarations: str = ""


@dataclass(frozen=True)
class Session:
    """One controller start, with Unix times from the journal."""

    session: str
    started: float | None
    ended: float | None
    end_event: str | None


@dataclass(frozen=True)
class ReportData:
    """Everything a report shows."""

    site: str
    run_dir: str
    sessions: tuple[Session, ...]
    tasks: tuple[TaskReport, ...]
    systems: tuple[SystemReport, ...]
    weights: Mapping[str, float]
    manifest: Mapping[str, Any] | None
    # Site or test-set changes the operator accepted on resume (--accept-site-change).
    site_changes: tuple[Mapping[str, Any], ...] = ()
    # How the rows' intervals and ranks were made (IntervalSettings.to_dict), or None.
    intervals: Mapping[str, Any] | None = None
    # The one track shown (`onsite report --track`), or None for every system.
    track: str | None = None
    # Each dispute with its decision and attempts (harness/disputes.py, Dispute.to_dict).
    disputes: tuple[Mapping[str, Any], ...] = ()

    def jobs(self) -> list[JobReport]:
        """Every job, task by task."""
        return [job for task in self.tasks for job in task.jobs]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {
            "site": self.site,
            "run_dir": self.run_dir,
            "sessions": [asdict(s) for s in self.sessions],
            "site_changes": [dict(c) for c in self.site_changes],
            "weights": dict(self.weights),
            "tasks": [
                {
                    "name": t.name,
                    "kind": t.kind,
                    "description": t.description,
                    "budget": dict(t.budget),
                    "limits": dict(t.limits),
                    "jobs": [j.to_dict() for j in t.jobs],
                }
                for t in self.tasks
            ],
            "systems": [
                {**asdict(s), "environment": s.environment, "tasks": list(s.tasks)}
                for s in self.systems
            ],
            "manifest": self.manifest,
            "intervals": dict(self.intervals) if self.intervals is not None else None,
            "track": self.track,
            "disputes": [dict(d) for d in self.disputes],
        }


def _failures(summary: JobSummary, scope: str) -> tuple[Failure, ...]:
    failed = _FAILED + (("over_budget",) if scope == "item" else ())
    out: list[Failure] = []
    for r, attempt in summary.incidents:
        if isinstance(r, Completed):
            # Only first completions are summarised, as the leaderboard counts them; an
            # item sent again after lost links has its own line (_resent).
            if r.verdict in failed and not r.resent:
                out.append(Failure(r.item, r.attempt, r.verdict, r.message or ""))
        elif isinstance(r, LinkLost):
            ran = "" if r.seconds is None else f"lost after {r.seconds:.3f} s, charged: "
            out.append(
                Failure(r.item or "-", r.attempt or attempt, "link_lost", ran + (r.reason or ""))
            )
        elif isinstance(r, StartFailed):
            out.append(Failure("-", r.try_number, "start_failed", r.reason or ""))
        elif isinstance(r, JobFailed):
            out.append(Failure("-", None, "job_failed", r.reason or ""))
    return tuple(out)


def _resent(completed: Iterable[Completed]) -> tuple[Failure, ...]:
    """Each item sent again after venue failures: its final verdict and its whole time."""
    return tuple(
        Failure(
            r.item,
            r.attempt,
            f"re-sent, {r.verdict}",
            f"{r.resent} attempt(s) lost to the link ({r.lost_seconds or 0.0:.3f} s) before "
            f"this one ({r.seconds - (r.lost_seconds or 0.0):.3f} s): recorded "
            f"{r.seconds:.3f} s. {r.message}".strip(),
        )
        for r in completed
        if r.resent
    )


def _job(
    row: LeaderboardRow,
    state: RunState,
    limits: Mapping[str, int | None],
    weights: Mapping[str, float],
    audits: Iterable[AuditInput] | None,
    scope: str,
    references: Mapping[str, Any] | None = None,
) -> JobReport:
    completed = list(state.completed.get((row.task, row.system), {}).values())
    summary = state.jobs.get((row.task, row.system)) or JobSummary()
    timings = tuple(
        ItemTiming(
            r.item,
            r.attempt,
            r.seconds,
            r.budget_seconds,
            r.verdict,
            audit_of(r.item) is not None,
            r.round_trip_seconds,
        )
        for r in completed
    )
    # Scored items only, as the leaderboard: repeats and items no longer in the set are out.
    scored = [r for r in completed if audit_of(r.item) is None]
    speeds = tuple(
        float(r.speed) for r in scored if r.verdict in ("ok", "over_budget") and r.speed is not None
    )
    setup = sum(r.setup_seconds or 0.0 for r in summary.starts)
    return JobReport(
        row=row,
        verdict=judge_job(row, limits, audits),
        running=running_score(scored, row.restarts, weights),
        timings=timings,
        failures=_failures(summary, scope) + _resent(completed),
        speeds=speeds,
        setup_seconds_total=setup,
        execution_seconds=sum(t.seconds for t in timings) + setup,
        items=tuple(
            ItemDetail(
                r.item,
                _short(r.output),
                _short((references or {}).get(audit_of(r.item) or r.item)),
                r.verdict,
                r.seconds,
                audit_of(r.item) is not None,
            )
            for r in completed
        ),
    )


def build_report(
    run: Path | str | RunModel,
    *,
    limits: Mapping[str, Mapping[str, int | None]] | None = None,
    weights: Mapping[str, float] | None = None,
    audits: Mapping[tuple[str, str], Iterable[AuditInput]] | None = None,
    testsets: Mapping[str, TestSet] | None = None,
    intervals: IntervalSettings | None = DEFAULT_INTERVALS,
    track: str | None = None,
) -> ReportData:
    """Read a run directory into ReportData.

    ``limits`` maps a task name to verdict limits over `DEFAULT_LIMITS` (the site file's
    ``[tasks.X.rules]``); ``weights`` overrides running-score weights; ``audits`` maps
    (task, system) to audit lines that replace the ones the leaderboard computed. ``run``
    is a run directory or its read model (``onsite report`` shares one with the
    leaderboard, so the journal is replayed and each test set loaded once).
    ``intervals`` says how each row's 95% interval and rank range are made
    (harness/significance.py); None leaves them out. ``track`` keeps the systems that
    entered it (their ranks are among themselves).
    """
    model = run if isinstance(run, RunModel) else RunModel.open(run, testsets=dict(testsets or {}))
    run_dir, site, state = model.run_dir, model.site, model.state
    for task in limits or {}:
        if task not in site.config.tasks:
            raise ValueError(
                f"verdict limits for unknown task {task!r}; tasks: {', '.join(site.config.tasks)}"
            )
    resolved = {task: resolve_limits((limits or {}).get(task)) for task in site.config.tasks}
    w = resolve_weights(weights)
    loaded = model.testsets
    rows = leaderboard(model, track=track)
    if intervals is not None:
        rows = with_intervals(model, rows, intervals)
    # A run in PostgreSQL has no run directory: its manifests stay with its stations.
    manifest = read_manifest(run_dir) if run_dir is not None else None
    tasks = []
    for task, cfg in site.config.tasks.items():
        scope = cfg.budget.scope
        refs = loaded[task].references()
        jobs = tuple(
            _job(row, state, resolved[task], w, (audits or {}).get((task, row.system)), scope, refs)
            for row in rows
            if row.task == task
        )
        budget = {k: v for k, v in cfg.budget.model_dump().items() if v is not None}
        tasks.append(TaskReport(task, cfg.kind, cfg.description, budget, resolved[task], jobs))
    systems = []
    described = (manifest or {}).get("systems", {})
    for name, system_cfg in site.config.systems.items():
        if track is not None and system_cfg.track != track:
            continue
        spent = sum(j.execution_seconds for t in tasks for j in t.jobs if j.row.system == name)
        systems.append(
            SystemReport(
                name=name,
                description=system_cfg.description,
                device=system_cfg.device,
                tasks=tuple(system_cfg.tasks),
                execution_seconds=spent,
                environment=described.get(name, {}).get("environment"),
                participant=site.participant(name),
                track=system_cfg.track,
                run_type=system_cfg.run_type,
                declarations=system_cfg.declarations,
            )
        )
    return ReportData(
        site=site.name,
        run_dir=model.location,
        sessions=tuple(
            Session(s.session, s.started, s.ended, s.end_event) for s in state.sessions.values()
        ),
        tasks=tuple(tasks),
        systems=tuple(systems),
        weights=w,
        manifest=manifest,
        site_changes=tuple(
            {"task": r.task, "system": r.system, "changes": list(r.changes), "wall": r.wall}
            for r in state.site_changes
        ),
        intervals=intervals.to_dict() if intervals is not None else None,
        track=track,
        disputes=_disputes(state, track, {n: s.track for n, s in site.config.systems.items()}),
    )


def _disputes(
    state: RunState, track: str | None, tracks: Mapping[str, str | None]
) -> tuple[Mapping[str, Any], ...]:
    """The run's disputes for the report (with ``track``, of the systems that entered it)."""
    from harness.disputes import disputes_of

    return tuple(
        d.to_dict()
        for d in disputes_of(state)
        if track is None or tracks.get(d.filed.system) == track
    )
