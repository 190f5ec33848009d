"""The leaderboard: quality, speed and stability per task and system, read from a run directory."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from harness.collector import cycle_collector_held
from harness.disputes import effective_completions
from harness.engine.audits import audit_lines, resend_lines, whole_input_lines
from harness.kinds.base import TaskKind
from harness.kinds.registry import task_kind
from harness.site import Site, Task
from harness.store.directory import JobSummary, RunState
from harness.store.events import (
    Completed,
    CompletionLike,
)
from harness.store.run_model import RunModel
from harness.testsets import TestSet

_ANSWERED = ("ok", "over_budget")


@dataclass(frozen=True)
class LeaderboardRow:
    """One (task, system) line of the leaderboard. Rates are fractions, times seconds."""

    task: str
    system: str
    items: int
    completed: int
    scored: int
    metric: str
    score: float | None
    higher_is_better: bool
    speed_unit: str
    speed_mean: float | None
    speed_p95: float | None
    speed_max: float | None
    over_budget: int
    timeouts: int
    crashes: int
    errors: int
    invalid_outputs: int
    restarts: int  # the participant's: after its crashes, hangs or garbage
    setup_seconds: float | None
    # None when no completion was timed (a file brought in by `onsite ingest`).
    total_seconds: float | None
    total_budget_seconds: float | None
    budget_scope: str
    set_budget_met: bool | None
    scores: dict[str, Any]
    # Integrity audits (harness/engine/audits.py): rule, passed, figure.
    audits: tuple[dict[str, Any], ...] = ()
    # Video stream mode: answer latency from when each frame was due, and late frames.
    latency_p50: float | None = None
    latency_p95: float | None = None
    late_rate: float | None = None
    # Secondary figures, e.g. false detections or the top-10 rate.
    detail: str = ""
    # The venue's failures (lost links, resets by the harness): shown, not the participant's
    # restarts (a re-sent item keeps the time its lost attempts ran).
    venue_failures: int = 0
    # Run without the sandbox (the device said sandbox = false): shown and a verdict rule.
    unsealed: bool = False
    # The running score (harness/engine/running_score.py) with the site's weights.
    running_score: float | None = None
    # No job_finished after the job's last dispatch: still running, stopped or failed.
    in_progress: bool = False
    # The headline's 95% paired-bootstrap interval and the rank range no test splits
    # (harness/significance.py `with_intervals`): `onsite report` and the report fill
    # them; the live views leave them None.
    ci_low: float | None = None
    ci_high: float | None = None
    rank_low: int | None = None
    rank_high: int | None = None
    # Who entered it and how (the site file's systems.X keys): the team, the track
    # ("closed", "open"), the run type ("primary", "contrast") and what it used beyond
    # the allowed list.
    participant: str = ""
    track: str | None = None
    run_type: str | None = None
    declarations: str = ""
    # Every completion came from a submitted file (`onsite ingest`): no timing, so the
    # speed figures and total_seconds are None.
    offline: bool = False

    def entry_text(self) -> str:
        """How the system entered, for a table: "closed, primary", "+ data" when it declared
        something beyond the allowed list; "" when the site says nothing."""
        parts = [p for p in (self.track, self.run_type) if p]
        if self.declarations:
            parts.append("+ declared")
        return ", ".join(parts)

    @property
    def notes(self) -> list[str]:
        """The warnings the job's scorer gave: where the reference tool would print
        another figure for these outputs, and how to get its (docs/reference-differences.md)."""
        return [str(note) for note in (self.scores or {}).get("warnings") or ()]

    def rank_text(self) -> str:
        """The rank range as tables show it: "2", or "1-2" where no test separates the
        systems; "-" without one."""
        if self.rank_low is None or self.rank_high is None:
            return "-"
        if self.rank_low == self.rank_high:
            return str(self.rank_low)
        return f"{self.rank_low}-{self.rank_high}"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready. The headline metric is also given under its own name (e.g. "wer"),
        the speed figures as rtf_* for audio tasks, and ASR rows carry their S/D/I counts."""
        data = asdict(self)
        data[self.metric] = self.score
        if self.speed_unit == "rtf":
            data.update(rtf_mean=self.speed_mean, rtf_p95=self.speed_p95, rtf_max=self.speed_max)
        overall = self.scores.get("overall", {})
        for key in ("ref_tokens", "substitutions", "deletions", "insertions"):
            if key in overall:
                data[key] = overall[key]
        return data


def percentile(values: list[float], fraction: float) -> float | None:
    """Linear-interpolation percentile (numpy's default method), None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * fraction
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def quality_so_far(
    kind: TaskKind, cfg: Task, testset: TestSet, records: Iterable[CompletionLike]
) -> float | None:
    """The task's headline metric over the given completions (item, verdict, output,
    seconds), scored as the leaderboard scores them; None before any completion."""
    refs = testset.references()
    done = [r for r in records if r["item"] in refs]
    if not done:
        return None
    attempted, outputs, seconds = scoring_inputs(testset, done)
    return kind.evaluate(attempted, cfg, outputs, seconds).headline.value


def scoring_inputs(
    testset: TestSet, records: Iterable[CompletionLike]
) -> tuple[TestSet, dict[str, Any], dict[str, float]]:
    """What a job's scorer gets from its completions: (attempted items, outputs, seconds).

    Only the completed items are scored (a run stopped early is not charged for
    items never sent); a failed item counts, with no output. `onsite export` and
    `onsite score --run` read a run through this too, so they score what the
    leaderboard scores.
    """
    done = list(records)
    ids = {r["item"] for r in done}
    outputs = {r["item"]: r["output"] for r in done if r["verdict"] in _ANSWERED}
    seconds = {r["item"]: r["seconds"] for r in done}
    attempted = replace(testset, items=tuple(i for i in testset.items if i.id in ids))
    return attempted, outputs, seconds


def leaderboard(
    run: Path | RunModel,
    testsets: dict[str, TestSet] | None = None,
    track: str | None = None,
) -> list[LeaderboardRow]:
    """Score every job the run's journal shows, in the site file's order.

    ``run`` is a run directory or the run's read model (which a report shares);
    ``track`` keeps the systems that entered that track.
    """
    model = run if isinstance(run, RunModel) else RunModel.open(run, testsets=testsets)
    systems = model.site.config.systems
    with cycle_collector_held():  # every item scored: lists of words, alignments, rows
        return [
            job_row(model.site, model.state, model.testset(task), task, system)
            for task, system in model.site.jobs()
            if track is None or systems[system].track == track
        ]


def _unsealed(site: Site, system: str) -> bool:
    device = site.config.devices[site.config.systems[system].device]
    return getattr(device, "sandbox", True) is False


def job_row(
    site: Site, state: RunState, testset: TestSet, task: str, system: str
) -> LeaderboardRow:
    """One job's leaderboard row from a replayed state (the console's live view uses it too)."""
    cfg = site.config.tasks[task]
    kind = task_kind(cfg.kind)
    # Each item as it counts: its first completion, or what a dispute's decision made it.
    completed = effective_completions(state, task, system)
    known = {item.id for item in testset.items}
    records: list[Completed] = [r for r in completed.values() if r.item in known]
    verdicts = [r.verdict for r in records]
    answered = [r for r in records if r.verdict in _ANSWERED]
    attempted, outputs, seconds = scoring_inputs(testset, records)
    scored = kind.evaluate(attempted, cfg, outputs, seconds) if records else None
    scores = scored.figures if scored else {}
    items = {i.id: i for i in testset.items}
    # A submitted file's outputs (`onsite ingest`) carry no timing: no speed, not zero.
    timed = [r for r in answered if not r.offline]
    speeds = [s for r in timed if (s := kind.speed(items[r.item], r.seconds)) is not None]
    speed_mean = kind.unit.mean(speeds, [r.seconds for r in timed])
    # A frame with no answer (timeout, crash) counts as late; its latency is unknown.
    streamed = [r for r in records if r.late is not None]
    latencies = [
        r.latency_seconds
        for r in streamed
        if r.verdict in _ANSWERED and r.latency_seconds is not None
    ]
    lates = sum(1 for r in streamed if r.late or r.verdict not in _ANSWERED)
    summary = state.jobs.get((task, system)) or JobSummary()
    starts = summary.starts
    budgets = [r.budget_seconds for r in records]
    total_budget = (
        sum(b for b in budgets if b is not None) if records and None not in budgets else None
    )
    clocked = [r.seconds for r in records if not r.offline]
    total_seconds: float | None = sum(clocked) if clocked or not records else None
    # Imported here: harness.report imports this module.
    from harness.engine.running_score import running_score

    restarts = sum(1 for r in starts if r.restart and r.cause != "venue")
    weights = site.config.site.running_score.model_dump()
    entry = site.config.systems[system]
    running = running_score(records, restarts, weights).score if records else None
    return LeaderboardRow(
        task=task,
        system=system,
        items=len(testset.items),
        completed=len(records),
        scored=len(answered),
        metric=kind.metric(cfg),
        score=scored.headline.value if scored else None,
        higher_is_better=kind.higher_is_better,
        speed_unit=kind.speed_unit,
        speed_mean=speed_mean,
        speed_p95=percentile(speeds, 0.95),
        speed_max=max(speeds) if speeds else None,
        over_budget=verdicts.count("over_budget"),
        timeouts=verdicts.count("timeout"),
        crashes=verdicts.count("crashed"),
        errors=verdicts.count("error"),
        invalid_outputs=verdicts.count("invalid_output"),
        restarts=restarts,
        running_score=running,
        in_progress=summary.in_progress,
        offline=bool(records) and not clocked,
        venue_failures=summary.link_lost,
        unsealed=_unsealed(site, system),
        setup_seconds=starts[0].setup_seconds if starts else None,
        total_seconds=total_seconds,
        total_budget_seconds=total_budget,
        budget_scope=cfg.budget.scope,
        set_budget_met=(
            (total_seconds <= total_budget)
            if total_budget is not None and total_seconds is not None
            else None
        ),
        scores=scores,
        audits=tuple(
            asdict(line)
            for line in [
                *audit_lines(completed.values(), cfg.audit),
                *whole_input_lines(completed.values()),
                *resend_lines(completed.values()),
            ]
        ),
        latency_p50=percentile(latencies, 0.5),
        latency_p95=percentile(latencies, 0.95),
        late_rate=(lates / len(streamed)) if streamed else None,
        detail=scored.detail if scored else "",
        participant=site.participant(system),
        track=entry.track,
        run_type=entry.run_type,
        declarations=entry.declarations,
    )
