"""The console's read model: follows a run's records and answers "where do we stand".

It only reads the records (never the controller's memory), where the run is kept (a run
directory's journal, or a run in PostgreSQL: harness/store/api.py), so the same code
serves the live console of `onsite run --console` (a station's too) and the read-only
`onsite console RUN`, and a finished run shows exactly as the report would.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from harness.collector import cycle_collector_held
from harness.engine.audits import audit_of
from harness.kinds.registry import task_kind
from harness.leaderboard import job_row, percentile, quality_so_far
from harness.significance import state_interval
from harness.site import Site
from harness.store.api import RunSource, open_source
from harness.store.directory import RunState
from harness.store.events import JournalEvent
from harness.store.journal import DISPATCHED_PREFIX, parse_record, quick_record
from harness.testsets import TestSet

JobKey = tuple[str, str]

# How many points the job page's "quality so far" and "running score" curves get at most:
# each point scores a prefix of the job, so the cost stays bounded on long jobs.
SERIES_POINTS = 40
# The least time between two scorings of a running job's quality so far (and its curves):
# a long job is rescored whole, and the console must not take CPUs the systems are timed on.
FIGURES_SECONDS = 1.0
COST_SHARE = 0.02
FIGURES_MAX_SECONDS = 10.0

_ENDS = {"job_finished": "done", "job_failed": "failed", "job_skipped": "skipped"}
_ACTIVE = ("dispatched", "completed", "system_started", "system_lost", "link_lost")
# Records only the session working on a job writes about it (not settings, not controls).
_WORKING = (*_ACTIVE, *_ENDS, "start_failed", "device_waiting", "device_down")


@dataclass
class _Controls:
    """One session's operator controls in force (they live in its controller's memory)."""

    jobs: set[JobKey] = field(default_factory=set)
    devices: set[str] = field(default_factory=set)
    skipped: set[str] = field(default_factory=set)


@dataclass
class _Job:
    """What the journal said so far about one (task, system) job."""

    task: str
    system: str
    device: str
    state: RunState = field(default_factory=RunState)
    phase: str = "waiting"
    in_flight: tuple[str, float] | None = None  # item, wall time it was sent
    link_lost: int = 0
    # The last device_waiting record while its device does not answer, else None.
    device_wait: Any = None
    # The session that last worked on the job (several may, on a shared run).
    session: str | None = None
    version: int = 0
    # Kept per record, so that counts are exact at every moment while the costlier
    # figures (quality, speed, running score) are rescored on a schedule (_pause_after).
    completed: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    restarts: int = 0
    seconds: float = 0.0


class RunView:
    """A live, incremental view of one run's records.

    ``run``: a run directory, ``postgresql://HOST/DB?run=NAME``, or a source already
    open. ``refresh()`` reads whatever was written since the last call; ``status()`` and
    ``job()`` answer from what was read. Thread-safe.
    ``controller`` tells whether a controller works on the run; by default the run's
    source is asked (a directory's lock; a live station of a run in PostgreSQL).
    """

    def __init__(
        self,
        run: Path | str | RunSource,
        site: Site | None = None,
        controller: Callable[[], bool] | None = None,
        testsets: dict[str, TestSet] | None = None,
        intervals: bool = True,
    ) -> None:
        self.source = open_source(run) if isinstance(run, Path | str) else run
        self.site = site or self.source.site()
        self._controller = controller or self.source.running
        self._tail = self.source.tail()
        self._lock = threading.RLock()
        self._testsets: dict[str, TestSet | None] = dict(testsets or {})
        # Each quality's 95% interval (numpy's resampling): the console's; `onsite status`
        # stays light without it.
        self._intervals = intervals
        self._cache: dict[JobKey, tuple[int, float, dict[str, Any]]] = {}
        self._series: dict[JobKey, tuple[int, float, dict[str, Any]]] = {}
        # Each row of a job's page data, encoded once: item -> (record, JSON).
        self._row_json: dict[JobKey, dict[str, tuple[Any, bytes]]] = {}
        # The points of a job's curves, scored once: items -> (running score, quality).
        self._points: dict[JobKey, dict[int, tuple[dict[str, Any], dict[str, Any]]]] = {}
        self._cost: dict[tuple[str, ...], float] = {}
        self._reset()

    # --- following the journal -------------------------------------------------------

    def _reset(self) -> None:
        self.version = 0
        self.records = 0
        self._limit: int | None = None
        self._loaded: dict[str, int] = {}
        # Each session's controls; those of the sessions working now are in force.
        self._controls: dict[str, _Controls] = {}
        self._last_session: str | None = None
        self._actions: list[JournalEvent] = []
        self._jobs = {
            (task, system): _Job(task, system, self.site.config.systems[system].device)
            for task, system in self.site.jobs()
        }
        self._cache.clear()
        self._series.clear()
        self._row_json.clear()
        self._points.clear()

    def refresh(self) -> bool:
        """Read the records written since the last call; True when there were any.

        A journal replaced under the same name (``onsite run --fresh``) is read anew.
        """
        with self._lock:
            restarted, lines = self._tail.read()
            if restarted:
                self._reset()
            if not lines:
                return False
            with cycle_collector_held():
                changed = self._read_lines(lines)
            if changed:
                self.version += 1
            return changed

    def _read_lines(self, lines: list[bytes]) -> bool:
        """Apply whole journal lines; True when one of them was a record."""
        changed = False
        for line in lines:
            # None for a torn line the next writer ended with a newline, a garbled
            # one, or a record missing its fields: shown as nothing. A dispatch is
            # read as plain JSON (no figure keeps it): a third of the cost of its
            # model, over a third of the journal.
            quick = quick_record(line) if line.startswith(DISPATCHED_PREFIX) else None
            record = quick if quick is not None else parse_record(line)
            if record is not None:
                try:
                    self._apply(record)
                except (KeyError, TypeError, ValueError):
                    continue
                changed = True
        return changed

    def _apply(self, record: JournalEvent | dict[str, Any]) -> None:
        self.records += 1
        event = record["event"]
        if event == "session_started":
            self._limit = record.get("limit")
            # Pauses and skips live in one controller's memory: a new session starts clear.
            self._last_session = record["session"]
            for each in self._jobs.values():
                if each.phase != "done":
                    each.phase = "waiting"
                each.in_flight = None
                each.device_wait = None
                each.version += 1
            return
        if event in ("session_finished", "session_interrupted"):
            for each in self._jobs.values():
                # On a shared run the other stations' items are still in flight.
                if each.session in (None, record["session"]):
                    each.in_flight = None
                each.version += 1
            return
        if event == "testset_loaded":
            self._loaded[record["task"]] = int(record.get("items") or 0)
            return
        if event == "operator_action":
            self._operator_action(cast(JournalEvent, record))
        job = self._jobs.get((record.get("task", ""), record.get("system", "")))
        if job is None:
            return
        job.version += 1
        if event in _WORKING:
            job.session = record["session"]
        if event == "completed" and _counts(cast(JournalEvent, record), job):
            job.completed += 1
            job.verdicts[record["verdict"]] += 1
            job.seconds += float(record.get("seconds") or 0.0)
        elif event == "system_started" and record.get("restart") and record.get("cause") != "venue":
            job.restarts += 1
        if event != "dispatched":
            # Dispatches are a third of a journal and no figure needs them kept.
            job.state.apply(cast(JournalEvent, record))
        if event == "device_waiting":
            # Nothing answers at the device: the controller tries again at next_try_wall.
            job.phase = "waiting_for_device"
            job.device_wait = record
            job.in_flight = None
            return
        if event != "device_down" and event != "operator_action":
            job.device_wait = None
        if event in _ENDS:
            job.phase = _ENDS[event]
            job.in_flight = None
        elif event == "operator_action" and record.get("action") == "retry":
            # Back in its device's queue: it starts when the device is free.
            job.phase = "waiting"
        elif event == "start_failed":
            # The system (or the device it runs on) did not come up; the controller retries.
            job.phase = "retrying_start"
            job.in_flight = None
        elif event in _ACTIVE:
            job.phase = "running"
        if event == "dispatched":
            job.in_flight = (record["item"], float(record.get("wall") or time.time()))
        elif event == "completed":
            job.in_flight = None
        elif event == "link_lost":
            job.link_lost += 1

    def _operator_action(self, record: JournalEvent) -> None:
        self._actions.append(record)
        action = record.get("action")
        device = record.get("device")
        key = (record.get("task", ""), record.get("system", ""))
        controls = self._controls.setdefault(record["session"], _Controls())
        if device is not None:
            if action == "pause":
                controls.devices.add(device)
            elif action == "resume":
                controls.devices.discard(device)
            elif action == "skip":
                controls.skipped.add(device)
        elif action == "pause":
            controls.jobs.add(key)
        elif action == "resume":
            controls.jobs.discard(key)
        for job in self._jobs.values():
            job.version += 1

    def _in_force(self) -> list[_Controls]:
        """The controls of the sessions working on the run now: on a shared run, the live
        stations'; else the last session's (a new session starts clear)."""
        live = self.source.live_sessions()
        if live is None:
            live = {self._last_session} if self._last_session is not None else set()
        return [c for s, c in self._controls.items() if s in live]

    def _controls_of(self, job: _Job, in_force: list[_Controls]) -> list[_Controls]:
        """The controls that hold a job: those of the session working on it, when it is
        live; else any live session's (the one to take it next may be any)."""
        own = self._controls.get(job.session) if job.session is not None else None
        return [own] if own is not None and any(own is c for c in in_force) else in_force

    # --- answers -----------------------------------------------------------------------

    def testset(self, task: str) -> TestSet | None:
        """The task's test set, or None when it cannot be read where the console runs."""
        if task not in self._testsets:
            cfg = self.site.config.tasks[task]
            try:
                self._testsets[task] = task_kind(cfg.kind).load_testset(
                    self.site.testset_path(task), cfg
                )
            except Exception:  # noqa: BLE001 - a console shows what it can, scores or not
                self._testsets[task] = None
        return self._testsets[task]

    def controller_state(self) -> str:
        """ "running" while a controller works on the run, else "stopped"."""
        return "running" if self._controller() else "stopped"

    def status(self) -> dict[str, Any]:
        """The document `GET /api/status` returns (docs/console.md)."""
        with self._lock:
            running = self._controller()
            jobs = [self._job_status(job, running) for job in self._jobs.values()]
            in_force = self._in_force()
            return {
                "site": self.site.name,
                "run_dir": self.source.location,
                "controller": "running" if running else "stopped",
                "version": self.version,
                "records": self.records,
                "paused_devices": sorted({d for c in in_force for d in c.devices}),
                "skipped_devices": sorted({d for c in in_force for d in c.skipped}),
                "actions": [
                    {k: a.get(k) for k in ("action", "task", "system", "device", "wall")}
                    for a in self._actions[-20:]
                ],
                "jobs": jobs,
            }

    def _phase(self, job: _Job, running: bool) -> str:
        if job.phase in ("done", "failed", "skipped"):
            return job.phase
        if not running:
            live = ("running", "retrying_start", "waiting_for_device")
            return "stopped" if job.phase in live else "waiting"
        controls = self._controls_of(job, self._in_force())
        if any(job.device in c.skipped for c in controls):
            return "skipped"
        key = (job.task, job.system)
        if any(key in c.jobs or job.device in c.devices for c in controls):
            return "paused"
        return job.phase

    def _job_status(self, job: _Job, running: bool) -> dict[str, Any]:
        key = (job.task, job.system)
        cached = self._cache.get(key)
        now = time.monotonic()
        if cached is None or (
            cached[0] != job.version
            and (
                now - cached[1] >= self._pause_after(key)
                or job.phase != "running"
                or not running
                or cached[2]["completed"] == 0  # the first figures are shown at once
            )
        ):
            cached = (job.version, now, self._figures(job))
            self._cost[key] = time.monotonic() - now
            self._cache[key] = cached
        out = dict(cached[2])
        out.update(
            completed=job.completed,
            verdicts=dict(job.verdicts),
            participant_failures=sum(n for v, n in job.verdicts.items() if v != "ok"),
            venue_failures=job.link_lost,
            restarts=job.restarts,
            mean_item_seconds=job.seconds / job.completed if job.completed else None,
        )
        phase = self._phase(job, running)
        out["state"] = phase
        out["device_wait"] = None
        if phase == "waiting_for_device" and job.device_wait is not None:
            w = job.device_wait
            next_wall = float(w.get("next_try_wall") or 0.0)
            out["device_wait"] = {
                "tries": w.get("tries"),
                "next_try_wall": next_wall,
                "next_try_in_seconds": max(0.0, next_wall - time.time()),
                "down_seconds": w.get("down_seconds"),
                "last_error": w.get("error") or "",
            }
        out["in_flight"] = None
        if running and phase in ("running", "paused") and job.in_flight is not None:
            item, sent = job.in_flight
            out["in_flight"] = {"item": item, "item_seconds": max(0.0, time.time() - sent)}
        total = out["total"]
        mean = out["mean_item_seconds"]
        remaining = max(0, total - out["completed"]) if total is not None else None
        out["eta_seconds"] = (
            remaining * mean
            if remaining is not None and mean is not None and phase in ("running", "paused")
            else (0.0 if remaining == 0 else None)
        )
        return out

    def _pause_after(self, key: JobKey, series: bool = False) -> float:
        """Seconds before a running job's figures are scored again: FIGURES_SECONDS, or
        more when scoring took long, so that scoring never takes over COST_SHARE of a CPU
        (the console process shares the machine with the controller and the systems)."""
        cost = self._cost.get((*key, "series") if series else key, 0.0)
        # Capped: a first scoring that also loaded the compiled scorers is no measure.
        return min(FIGURES_MAX_SECONDS, max(FIGURES_SECONDS, cost / COST_SHARE))

    def _total(self, task: str) -> int | None:
        if task not in self._loaded:
            testset = self._testsets.get(task)
            return len(testset.items) if testset is not None else None
        items = self._loaded[task]
        return min(items, self._limit) if self._limit is not None else items

    def _figures(self, job: _Job) -> dict[str, Any]:
        """The figures that change only with the job's own records (cached per version)."""
        from harness.engine.running_score import running_score

        task, system = job.task, job.system
        cfg = self.site.config.tasks[task]
        kind = task_kind(cfg.kind)
        completions = [
            r
            for r in job.state.completed.get((task, system), {}).values()
            if not r.get("audit_of") and audit_of(r["item"]) is None
        ]
        verdicts = Counter(r["verdict"] for r in completions)
        starts = [r for r in job.state.records if r["event"] == "system_started"]
        restarts = sum(1 for r in starts if r.get("restart") and r.get("cause") != "venue")
        testset = self.testset(task)
        quality: float | None = None
        speed_mean: float | None = None
        speed_p95: float | None = None
        ci: tuple[float | None, float | None] = (None, None)
        if testset is not None and completions:
            row = job_row(self.site, job.state, testset, task, system)
            quality, speed_mean, speed_p95 = row.score, row.speed_mean, row.speed_p95
            if quality is not None and self._intervals:
                # The report's interval (same seed and resamples) of the items so far; its
                # cost counts in the figures' schedule like the scoring's.
                found = state_interval(self.site, job.state, testset, task, system)
                ci = (found.ci_low, found.ci_high)
        else:
            speeds = [
                float(r["speed"])
                for r in completions
                if r["verdict"] in ("ok", "over_budget") and isinstance(r.get("speed"), int | float)
            ]
            speed_mean = sum(speeds) / len(speeds) if speeds else None
            speed_p95 = percentile(speeds, 0.95)
        weights = self.site.config.site.running_score.model_dump()
        running = running_score(completions, restarts, weights) if completions else None
        seconds = [float(r["seconds"]) for r in completions]
        return {
            "task": task,
            "system": system,
            "device": job.device,
            "completed": len(completions),
            "total": self._total(task),
            "verdicts": dict(verdicts),
            "participant_failures": sum(n for v, n in verdicts.items() if v != "ok"),
            "venue_failures": job.link_lost,
            "restarts": restarts,
            "quality": {
                "metric": kind.metric(cfg),
                "label": kind.metric_label(kind.metric(cfg)),
                "value": quality,
                "ci_low": ci[0],
                "ci_high": ci[1],
                "higher_is_better": kind.higher_is_better,
            },
            "speed": {
                "unit": kind.speed_unit,
                "label": kind.unit.short,
                "mean": speed_mean,
                "p95": speed_p95,
                "budget_usage": running.mean_budget_usage if running else None,
            },
            "budget": {k: v for k, v in cfg.budget.model_dump().items() if v is not None},
            "running_score": running.score if running else None,
            "mean_item_seconds": sum(seconds) / len(seconds) if seconds else None,
        }

    def job(self, task: str, system: str) -> dict[str, Any] | None:
        """The document `GET /api/jobs/{task}/{system}` returns, or None for no such job."""
        with self._lock:
            job = self._jobs.get((task, system))
            if job is None:
                return None
            # The rows are always whole; only the curves follow the figures' schedule.
            return {**self._job_head(job), "rows": self._rows(job)}

    def job_json(self, task: str, system: str) -> bytes | None:
        """`job()` as JSON. Each row is encoded once and kept: on a long job the rows are
        most of the document, and many viewers polling it cost one encoding per new row."""
        with self._lock:
            job = self._jobs.get((task, system))
            if job is None:
                return None
            head = json.dumps(self._job_head(job), separators=(",", ":")).encode()
            return head[:-1] + b',"rows":[' + b",".join(self._rows_json(job)) + b"]}"

    def _job_head(self, job: _Job) -> dict[str, Any]:
        key = (job.task, job.system)
        status = self._job_status(job, self._controller())
        cached = self._series.get(key)
        now = time.monotonic()
        if cached is None or (
            cached[0] != job.version
            and (
                now - cached[1] >= self._pause_after(key, series=True)
                or status["state"] != "running"
            )
        ):
            cached = (job.version, now, self._series_of(job))
            self._cost[(*key, "series")] = time.monotonic() - now
            self._series[key] = cached
        return {**status, **cached[2]}

    def _rows_json(self, job: _Job) -> list[bytes]:
        key = (job.task, job.system)
        encoded = self._row_json.setdefault(key, {})
        out = []
        for record in job.state.completed.get(key, {}).values():
            kept = encoded.get(record["item"])
            if kept is None or kept[0] is not record:
                row = json.dumps(_row(record), separators=(",", ":")).encode()
                kept = encoded[record["item"]] = (record, row)
            out.append(kept[1])
        return out

    def _rows(self, job: _Job) -> list[dict[str, Any]]:
        completions = job.state.completed.get((job.task, job.system), {}).values()
        return [_row(r) for r in completions]

    def _series_of(self, job: _Job) -> dict[str, Any]:
        from harness.engine.running_score import running_score

        task, system = job.task, job.system
        completions = list(job.state.completed.get((task, system), {}).values())
        scored = [r for r in completions if not r.get("audit_of") and audit_of(r["item"]) is None]
        weights = self.site.config.site.running_score.model_dump()
        starts_at: list[float] = []
        for r in job.state.records:
            if r["event"] == "system_started" and r.get("restart") and r.get("cause") != "venue":
                starts_at.append(float(r.get("wall") or 0.0))
        quality: list[dict[str, Any]] = []
        running: list[dict[str, Any]] = []
        cfg = self.site.config.tasks[task]
        kind = task_kind(cfg.kind)
        testset = self.testset(task)
        # A power of two, so that the points stay where they were as the job grows (each
        # doubling keeps every other one): a job's completions are only ever appended, so
        # a point once scored is kept, and a rescore scores only the points that are new.
        step = 1
        while -(-len(scored) // step) > SERIES_POINTS:
            step *= 2
        ends = list(range(step, len(scored) + 1, step))
        if scored and ends[-1] != len(scored):
            ends.append(len(scored))
        kept = self._points.setdefault((task, system), {})
        for end in ends:
            if end not in kept:
                prefix = scored[:end]
                wall = float(prefix[-1].get("wall") or 0.0)
                restarts = sum(1 for t in starts_at if t <= wall)
                score = running_score(prefix, restarts, weights).score
                value = quality_so_far(kind, cfg, testset, prefix) if testset is not None else None
                kept[end] = (
                    {"items": end, "wall": wall, "value": score},
                    {"items": end, "value": value},
                )
            running.append(kept[end][0])
            if testset is not None:
                quality.append(kept[end][1])
        return {"series": {"quality": quality, "running_score": running}}


def _row(r: Any) -> dict[str, Any]:
    """One completed item as the job page shows it."""
    return {
        "item": r["item"],
        "attempt": r.get("attempt"),
        "verdict": r["verdict"],
        "seconds": r.get("seconds"),
        "budget_seconds": r.get("budget_seconds"),
        "speed": r.get("speed"),
        "audit": bool(r.get("audit_of")) or audit_of(r["item"]) is not None,
        "message": r.get("message") or "",
        "wall": r.get("wall"),
    }


def _counts(record: JournalEvent, job: _Job) -> bool:
    """A first completion of a test-set item (not a repeat, not a hidden audit repeat)."""
    if record.get("audit_of") or audit_of(record["item"]) is not None:
        return False
    return record["item"] not in job.state.completed.get((job.task, job.system), {})
