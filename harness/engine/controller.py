"""The controller: feeds every item to every system under its budget and journals everything."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import secrets
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from harness.engine.audits import audit_of, plan
from harness.engine.budgets import hang_seconds, item_budget_seconds, judge
from harness.engine.integrity import (
    HashCache,
    SiteChanged,
    combined_digest,
    contain_testset,
    job_settings,
    settings_changes,
    site_change_problem,
    testset_file_hashes,
    testset_problems,
)
from harness.engine.manifest import write_manifest
from harness.errors import ControlConflict, LeaseLost, Problem
from harness.kinds.base import TaskKind
from harness.kinds.registry import task_kind
from harness.site import Site, System, Task
from harness.store.api import RunWriter
from harness.store.events import (
    AppealCompleted,
    AppealDispatched,
    AuditSeed,
    Completed,
    DeviceDown,
    DeviceWaiting,
    Dispatched,
    FailureClass,
    JobFailed,
    JobFinished,
    JobSettings,
    JobSkipped,
    JobStarted,
    JournalEvent,
    LinkLost,
    Listener,
    Notice,
    OperatorAction,
    SessionFinished,
    SessionStarted,
    SiteChangeAccepted,
    StartFailed,
    SystemLost,
    SystemStarted,
    TestsetChanged,
    TestsetHashes,
    TestsetLoaded,
)
from harness.testsets import TestItem, TestSet
from runners import (
    DeviceSettings,
    DeviceUnreachable,
    ItemAttempt,
    ItemRequest,
    Runner,
    StartError,
    SystemSpec,
    open_runner,
)

START_TRIES = 3
# Times one item is sent again after a venue failure (a lost link nothing showed was the
# participant's), before it is recorded as failed and flagged for the organizer.
ITEM_RESENDS = 2
START_BACKOFF_SECONDS = (0.5, 2.0)
# Waits between tries of a device that does not answer (the last one repeats), until
# the site's device_wait_seconds have passed.
DEVICE_BACKOFF_SECONDS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)


class AppealFailed(RuntimeError):
    """An appeal attempt gave no result that could be the system's (docs/publishing.md)."""


@dataclass(frozen=True)
class JobResult:
    """How one (task, system) job ended in this session."""

    task: str
    system: str
    completed: int
    total: int
    failed: str | None = None


@dataclass(frozen=True)
class Job:
    """One (task, system) job with its configuration resolved once."""

    task: str
    system: str
    kind: TaskKind
    task_cfg: Task
    system_cfg: System
    device_name: str
    device: DeviceSettings
    testset: TestSet

    @property
    def key(self) -> tuple[str, str]:
        """(task, system), as the journal and the site name the job."""
        return (self.task, self.system)


@dataclass(frozen=True)
class Dispatch:
    """One item's dispatch, computed once: journaled, sent, and judged against."""

    item: TestItem
    attempt: int
    anon_id: str
    budget_seconds: float | None
    hang_seconds: float
    # Streams: when the frame was due on the controller's monotonic clock.
    due: float | None = None


_Action = Literal["pause", "resume", "skip", "retry", "stop"]


class JobSource(Protocol):
    """Hands out jobs one at a time (operator stations sharing a run: harness/engine/station.py).

    Without one, the controller runs every wanted job itself.
    """

    def next_job(
        self,
        candidates: Sequence[tuple[str, str]],
        device_jobs: Sequence[tuple[str, str]],
        stopping: threading.Event,
    ) -> tuple[str, str] | None:
        """The next job of ``candidates`` to run (its records already read into the
        store's state), waiting while another holds one; None once none is left."""
        ...

    def job_ended(self, key: tuple[str, str], result: JobResult | None) -> None:
        """Give the job back: ``result`` None when it was lost to another."""
        ...


def _ignore(_: object) -> None:
    return None


# What _feed returns when the operator skipped the job's device.
SKIPPED = "skipped by the operator"
# How a job ends on a station whose lease ran out and another station took the job over.
TAKEN_OVER = "taken over by another station (its lease ran out)"
# What _start returns when the device stayed down longer than device_wait_seconds.
DEVICE_DOWN = "skipped: its device did not answer (device_wait_seconds)"


@dataclass
class _DeviceWait:
    """One spell of waiting for a device that does not answer."""

    since: float  # monotonic
    tries: int = 0


class Controller:
    """Runs the jobs of one site into one run store, resuming whatever is left."""

    def __init__(
        self,
        site: Site,
        store: RunWriter,
        listener: Listener | None = None,
        limit: int | None = None,
        accept_site_change: bool = False,
        jobs_source: JobSource | None = None,
    ) -> None:
        self.site = site
        self.store = store
        self.jobs_source = jobs_source
        self.listener = listener or _ignore
        self.limit = limit
        self.accept_site_change = accept_site_change
        self._hashes: dict[str, dict[str, str]] = {}
        # Files hashed at the start are checked at each job's end by their stat signature.
        self._hash_cache = HashCache()
        self._testsets: dict[str, TestSet] = {}
        self._jobs: dict[tuple[str, str], Job] = {}
        self._audit_seed: int | None = None
        self._stopping = threading.Event()
        self._active: set[Runner] = set()
        self._active_lock = threading.Lock()
        # Operator controls (the console): paused jobs and devices hold between items;
        # a skipped device runs nothing more this session.
        self._gate = threading.Condition()
        self._paused_jobs: set[tuple[str, str]] = set()
        self._paused_devices: set[str] = set()
        self._skipped_devices: set[str] = set()
        # Devices that stayed down past device_wait_seconds: their later jobs this session
        # give up at the first try that does not answer.
        self._down_devices: set[str] = set()
        self._running = False
        # Retries (the console): a failed job runs again on a thread of its own, taking
        # its turn on its device; accepted until the run's last job has ended.
        self._device_locks = {name: threading.Lock() for name in site.config.devices}
        self._failed_jobs: set[tuple[str, str]] = set()
        self._retry_lock = threading.Lock()
        self._retry_threads: list[threading.Thread] = []
        self._retry_errors: list[BaseException] = []
        self._retried: dict[tuple[str, str], JobResult] = {}
        self._accepting_retries = False

    @property
    def testsets(self) -> dict[str, TestSet]:
        """The test sets loaded so far, by task."""
        return dict(self._testsets)

    @property
    def audit_seed(self) -> int | None:
        """The run's audit seed once the run has started (None when no task audits)."""
        return self._audit_seed

    def testset(self, task: str) -> TestSet:
        """The task's test set, loaded once (raises TestSetError for a set that is unusable)."""
        if task not in self._testsets:
            cfg = self.site.config.tasks[task]
            testset = task_kind(cfg.kind).load_testset(self.site.testset_path(task), cfg)
            self._testsets[task] = contain_testset(testset)
        return self._testsets[task]

    def load_testsets(self) -> None:
        """Load every task's test set up front, so a bad set fails before any system starts."""
        for task in self.site.config.tasks:
            self.testset(task)

    def job(self, task: str, system: str) -> Job:
        """The job's configuration, resolved once (raises KeyError for an unknown job)."""
        key = (task, system)
        if key not in self._jobs:
            cfg = self.site.config
            system_cfg = cfg.systems[system]
            task_cfg = cfg.tasks[task]
            self._jobs[key] = Job(
                task=task,
                system=system,
                kind=task_kind(task_cfg.kind),
                task_cfg=task_cfg,
                system_cfg=system_cfg,
                device_name=system_cfg.device,
                device=cfg.devices[system_cfg.device],
                testset=self.testset(task),
            )
        return self._jobs[key]

    def _emit(self, event: JournalEvent) -> JournalEvent:
        """Journal an event and hand the same object, as journaled, to the listener."""
        journaled = self.store.emit(event)
        self.listener(journaled)
        return journaled

    def run(self, jobs: Sequence[tuple[str, str]] | None = None) -> list[JobResult]:
        """Run the given jobs (default: all of the site's) and return how each ended."""
        self._running = True
        with self._retry_lock:
            self._accepting_retries = True
        try:
            return self._run(jobs)
        finally:
            with self._retry_lock:
                self._accepting_retries = False
            self._running = False

    def is_running(self) -> bool:
        """True from the start of run() until it returns, unless stop() was called."""
        return self._running and not self._stopping.is_set()

    def _run(self, jobs: Sequence[tuple[str, str]] | None) -> list[JobResult]:
        self.load_testsets()
        self._emit(
            SessionStarted(
                pid=os.getpid(), site=self.site.name, site_sha256=self.site.digest, limit=self.limit
            )
        )
        for task, testset in self._testsets.items():
            for bad in testset.invalid:
                self.listener(Notice(task, f"invalid test item {bad.id}: {bad.reason}"))
            for warning in testset.warnings:
                self.listener(Notice(task, warning))
            self._emit(
                TestsetLoaded(
                    task=task,
                    items=len(testset.items),
                    invalid=[{"item": b.id, "reason": b.reason} for b in testset.invalid],
                )
            )
        self._check_integrity()
        self._audit_seed = self._ensure_audit_seed()
        write_manifest(
            self.store.dir,
            self.site,
            self._testsets,
            testset_hashes=self._hashes,
            audit_seed=self._audit_seed,
        )
        # Every job's outputs file, finished ones included, is a fresh copy of the journal.
        self.store.rebuild_outputs(self.site.jobs())
        wanted = [self.job(task, system) for task, system in (jobs or self.site.jobs())]
        groups = self._by_device(wanted)
        if len(groups) == 1:
            results = self._run_group(groups[0])
        else:
            # One thread per device: participant machines work at the same time, while
            # the systems sharing one device (and its CPUs) still take turns.
            with ThreadPoolExecutor(len(groups), thread_name_prefix="device") as pool:
                futures = [pool.submit(self._run_group, group) for group in groups]
                try:
                    done = [f.result() for f in futures]
                except BaseException:
                    self.stop()
                    raise
            order = {job.key: i for i, job in enumerate(wanted)}
            results = sorted(
                (r for group in done for r in group), key=lambda r: order[(r.task, r.system)]
            )
        self._join_retries()
        # A job the operator retried ended as its last run ended.
        results = [self._retried.get((r.task, r.system), r) for r in results]
        if self._stopping.is_set():
            raise KeyboardInterrupt("stopped")
        self._emit(SessionFinished())
        self.store.sync()
        return results

    def _run_group(self, group: list[Job]) -> list[JobResult]:
        """One device's jobs in turn; with a job source, the ones it hands to this controller."""
        if self.jobs_source is None:
            return [self._take_turn(job) for job in group]
        device = group[0].device_name
        device_jobs = [
            k for k in self.site.jobs() if self.site.config.systems[k[1]].device == device
        ]
        tried: set[tuple[str, str]] = set()
        results: list[JobResult] = []
        while not self._stopping.is_set():
            left = [job.key for job in group if job.key not in tried]
            key = self.jobs_source.next_job(left, device_jobs, self._stopping) if left else None
            if key is None:
                break
            tried.add(key)
            try:
                result = self._take_turn(self.job(*key))
            except LeaseLost as lost:
                # Another station has the job now; this one writes nothing more about it.
                self.listener(Notice(key[0], str(lost)))
                self.jobs_source.job_ended(key, None)
                done = len(self.store.state.done.get(key, set()))
                results.append(JobResult(*key, done, len(self._plan(self.job(*key))), TAKEN_OVER))
                continue
            self.jobs_source.job_ended(key, result)
            results.append(result)
        return results

    def _take_turn(self, job: Job) -> JobResult:
        """Run one job while holding its device (a retried job may want it too)."""
        with self._device_locks[job.device_name]:
            return self.run_job(job)

    def _join_retries(self) -> None:
        """Wait for the retries the operator asked for; from then on none is accepted."""
        while True:
            with self._retry_lock:
                pending = [t for t in self._retry_threads if t.is_alive()]
                if not pending:
                    self._accepting_retries = False
                    break
            for thread in pending:
                thread.join()
        if self._retry_errors:
            raise self._retry_errors[0]

    def _retry(self, task: str, system: str) -> None:
        """The body of a retry's thread: the job's remaining items, on its turn of the device."""
        try:
            self._retried[(task, system)] = self._take_turn(self.job(task, system))
        except BaseException as exc:  # raised again by run() once every job has ended
            self._retry_errors.append(exc)
            self.stop()

    def _check_integrity(self) -> None:
        """Refuse to go on when a test set or a job's settings changed under completed items.

        The first session journals the test-set hashes and each job's settings; later
        sessions compare. With ``accept_site_change`` a change is journaled and taken.
        """
        state = self.store.state
        problems: list[Problem] = []
        accepted: list[SiteChangeAccepted] = []
        for task, testset in self._testsets.items():
            current = testset_file_hashes(self.site.testset_path(task), testset, self._hash_cache)
            self._hashes[task] = current
            reference = state.testset_hashes.get(task)
            if reference is None:
                self._emit(TestsetHashes(task=task, files=current))
            elif reference != current:
                found = testset_problems(self.site, task, reference, current)
                if self.accept_site_change:
                    changes = [p.message for p in found]
                    accepted.append(SiteChangeAccepted(task=task, system=None, changes=changes))
                    self._emit(TestsetHashes(task=task, files=current))
                else:
                    problems.extend(found)
        for task, system in self.site.jobs():
            digest = combined_digest(self._hashes[task])
            settings = job_settings(self.site, task, system, digest)
            old = state.job_settings.get((task, system))
            if old == settings:
                continue
            changes = settings_changes(old, settings) if old is not None else []
            if changes and state.done.get((task, system)):
                if not self.accept_site_change:
                    problems.append(site_change_problem(self.site, task, system, changes))
                    continue
                accepted.append(SiteChangeAccepted(task=task, system=system, changes=changes))
            self._emit(JobSettings(task=task, system=system, settings=settings))
        if problems:
            raise SiteChanged(problems)
        for change in accepted:
            self._emit(change)
            self.listener(Notice(change.task, "site change accepted: " + "; ".join(change.changes)))

    def _verify_testset(self, task: str) -> None:
        """At the end of a job: the test set must still be what the run started from."""
        current = testset_file_hashes(
            self.site.testset_path(task), self._testsets[task], self._hash_cache
        )
        reference = self._hashes.get(task)
        if reference is not None and current != reference:
            problems = testset_problems(self.site, task, reference, current)
            self._emit(TestsetChanged(task=task, changes=[p.message for p in problems]))
            self.stop()
            raise SiteChanged(problems)

    def _ensure_audit_seed(self) -> int | None:
        """The run's secret audit seed: drawn once, kept in the journal, reused on resume."""
        if not any(t.audit.repeats or t.audit.shuffle for t in self.site.config.tasks.values()):
            return None
        if self.store.state.audit_seed is not None:
            return self.store.state.audit_seed
        # Journaled but not shown: a listener has no business with the secret.
        return self.store.emit(AuditSeed(seed=secrets.randbits(63))).seed

    def _plan(self, job: Job) -> list[TestItem]:
        """The items of one job in the order they are sent, audit repeats included."""
        items = self._items(job.task)
        audit = job.task_cfg.audit
        if self._audit_seed is None or not (audit.repeats or audit.shuffle):
            return list(items)
        digest = hashlib.sha256(f"{self._audit_seed}:{job.task}:{job.system}".encode()).digest()
        seed = int.from_bytes(digest[:8], "big")
        return plan(items, audit, seed, self.store.dir / "audit")

    @staticmethod
    def _by_device(jobs: Sequence[Job]) -> list[list[Job]]:
        groups: dict[str, list[Job]] = {}
        for job in jobs:
            groups.setdefault(job.device_name, []).append(job)
        return list(groups.values())

    def _hold(self, job: Job) -> bool:
        """Wait while the job or its device is paused; False when it must not go on.

        Called between items only, so the item in flight always finishes and paused
        time is never inside an item's measured seconds.
        """
        device = job.device_name
        with self._gate:
            while (
                not self._stopping.is_set()
                and device not in self._skipped_devices
                and (job.key in self._paused_jobs or device in self._paused_devices)
            ):
                self._gate.wait()
            return not self._stopping.is_set() and device not in self._skipped_devices

    def _scored_count(self, job: Job) -> int:
        """Completed items of the test set itself, hidden audit repeats left out."""
        done = self.store.state.done.get(job.key, set())
        return sum(1 for item in done if audit_of(item) is None)

    def _skipped(self, job: Job, completed: int, total: int, why: str = SKIPPED) -> JobResult:
        """End a job not done for this session: skipped by the operator, or its device down."""
        self._emit(
            JobSkipped(
                task=job.task,
                system=job.system,
                completed=completed,
                reason="device_down" if why == DEVICE_DOWN else "operator",
                scored=self._scored_count(job),
                total=len(self._items(job.task)),
            )
        )
        return JobResult(job.task, job.system, completed, total, why)

    def control(
        self,
        action: str,
        task: str | None = None,
        system: str | None = None,
        device: str | None = None,
        actor: str = "operator",
    ) -> dict[str, Any]:
        """Apply an operator action, journal it (event ``operator_action``) and return the
        record as journaled, the fields it does not use left out.

        ``action`` is pause/resume (of a job given by task and system, or of a device),
        retry (a job that failed in this session), skip (a device, for this session) or
        stop. Raises KeyError for an unknown job or device, ValueError for an unknown
        action and ControlConflict for a retry of a job that has not failed or after
        the run's last job ended; nothing is journaled then.
        """
        if action == "stop":
            target: dict[str, Any] = {}
        elif device is not None:
            if device not in self.site.config.devices:
                raise KeyError(f"no device {device!r} in the site file")
            if action not in ("pause", "resume", "skip"):
                raise ValueError(f"a device can be paused, resumed or skipped, not {action!r}")
            target = {"device": device}
        else:
            if (task, system) not in self.site.jobs():
                raise KeyError(f"no job {task}/{system} in the site file")
            if action not in ("pause", "resume", "retry"):
                raise ValueError(f"a job can be paused, resumed or retried, not {action!r}")
            target = {"task": task, "system": system}
        if action == "retry":
            return self._start_retry(str(task), str(system), actor)
        record = self.store.emit(
            OperatorAction(action=cast(_Action, action), actor=actor, **target)
        )
        with self._gate:
            if action == "pause" and device is not None:
                self._paused_devices.add(device)
            elif action == "resume" and device is not None:
                self._paused_devices.discard(device)
            elif action == "skip" and device is not None:
                self._skipped_devices.add(device)
            elif action == "pause":
                self._paused_jobs.add((str(task), str(system)))
            elif action == "resume":
                self._paused_jobs.discard((str(task), str(system)))
            self._gate.notify_all()
        if action == "stop":
            self.stop()
        return record.model_dump(exclude_none=True)

    def _start_retry(self, task: str, system: str, actor: str) -> dict[str, Any]:
        """Journal the operator's retry and run the failed job again on a thread of its own."""
        with self._retry_lock:
            if self.jobs_source is not None:
                raise ControlConflict(
                    "a station of a shared run retries a job by running `onsite run` again "
                    f"(--task {task} --system {system} selects it)"
                )
            if not self._accepting_retries or self._stopping.is_set():
                raise ControlConflict(
                    "the run is ending: run the same `onsite run` again to retry "
                    f"{task}/{system} (--task {task} --system {system} selects it)"
                )
            if (task, system) not in self._failed_jobs:
                raise ControlConflict(
                    f"job {task}/{system} has not failed in this session: only a failed job "
                    "can be retried"
                )
            self._failed_jobs.discard((task, system))
            record = self.store.emit(
                OperatorAction(action="retry", actor=actor, task=task, system=system)
            )
            thread = threading.Thread(
                target=self._retry, args=(task, system), name=f"retry-{task}-{system}"
            )
            self._retry_threads.append(thread)
            thread.start()
        return record.model_dump(exclude_none=True)

    def stop(self) -> None:
        """Stop soon: no new items; systems are killed and their in-flight items not recorded,
        so a resumed run sends them again with the next attempt number."""
        self._stopping.set()
        with self._gate:
            self._gate.notify_all()
        with self._active_lock:
            active = list(self._active)
        for runner in active:
            runner.interrupt()

    def _items(self, task: str) -> tuple[TestItem, ...]:
        items = self.testset(task).items
        return items[: self.limit] if self.limit is not None else items

    def _spec(self, job: Job) -> SystemSpec:
        # A user number of its own for each system of the run (a root controller's
        # sealed systems never share one: signals, process counts).
        from runners.sandbox import auto_uid

        index = list(self.site.config.systems).index(job.system)
        sandbox = job.device.sandbox_settings(
            self._hidden_paths(job.system), auto_uid(self.store.dir, index)
        )
        return SystemSpec(
            name=job.system,
            task=job.task,
            kind=job.task_cfg.kind,
            mode=job.system_cfg.mode,
            command=tuple(job.system_cfg.command),
            workdir=self.site.workdir(job.system),
            log_path=self.store.log_path(job.task, job.system),
            stage_dir=self.store.stage_dir / job.system,
            env=job.system_cfg.env,
            setup_seconds=job.task_cfg.budget.setup_seconds,
            setup_files=job.testset.setup_files,
            sandbox=sandbox,
            max_output_bytes=job.task_cfg.max_output_bytes or job.kind.max_output_bytes,
        )

    def _hidden_paths(self, system: str) -> tuple[Path, ...]:
        """What must not exist where a local system runs, even under its own workdir.

        The runs directory (this run, every archived run and any other), the site file
        and its directory, every test set, every key file the devices name, and the
        other systems' workdirs unless they contain this one.
        """
        own = self.site.workdir(system)
        cfg = self.site.config
        paths = [self.store.dir, self.store.dir.parent, self.site.run_dir.parent]
        paths += [self.site.path, self.site.path.parent]
        paths += [self.site.testset_path(task) for task in cfg.tasks]
        for name in cfg.devices:
            paths += self.site.device(name).private_files()
        paths += [self.site.workdir(other) for other in cfg.systems]
        hidden: list[Path] = []
        for path in paths:
            path = path.resolve()
            # A directory holding the system's own workdir cannot be hidden whole; what
            # matters in it (run dir, test sets, site file) is listed on its own.
            if path == own or path in own.parents or path in hidden:
                continue
            hidden.append(path)
        return tuple(hidden)

    def appeal(self, task: str, system: str, item_id: str, dispute: int, attempt: int) -> Completed:
        """Run one item of a job again on the organizer's `onsite dispute --rerun`.

        The same path as any item: the test set and the job's settings checked against
        what the run journaled (``SiteChanged`` otherwise), the system started as in a run
        (sealed, the same spec), the item sent under its budget and hang limit, timed on
        the runner's clock and judged by the kind. Journaled as ``appeal_dispatched`` and
        ``appeal_completed`` (never a second ``completed``); returns the appeal attempt's
        result. Raises AppealFailed when no result came that could be the system's (it
        would not start, or the link was lost): no decision should follow.
        """
        job = self.job(task, system)
        item = next((i for i in job.testset.items if i.id == item_id), None)
        if item is None:
            raise KeyError(f"no item {item_id!r} in the test set of task {task!r}")
        self._check_unchanged(job)
        device = self.site.device(job.device_name)
        runner = open_runner(device.transport, device, self._spec(job))
        with self._active_lock:
            self._active.add(runner)
        try:
            failed = self._start(runner, job, restart=False)
            if failed is not None:
                raise AppealFailed(f"{task}/{system}: {failed}")
            budget_cfg = job.task_cfg.budget
            budget = item_budget_seconds(budget_cfg, item, item.units)
            dispatch = Dispatch(
                item=item,
                attempt=attempt,
                anon_id=secrets.token_hex(8),
                budget_seconds=budget,
                hang_seconds=hang_seconds(budget_cfg, budget),
            )
            self._emit(
                AppealDispatched(
                    task=task,
                    system=system,
                    dispute=dispute,
                    item=item.id,
                    attempt=attempt,
                    anon_id=dispatch.anon_id,
                    budget_seconds=budget,
                    hang_seconds=dispatch.hang_seconds,
                )
            )
            result = self._send(runner, job, dispatch)
            if result.link_lost:
                result = dataclasses.replace(result, outcome="crashed", output=None)
            completion = self._completion(job, dispatch, result)
            fields = completion.model_dump(exclude={"v", "event", "session", "mono", "wall"})
            self._emit(
                AppealCompleted(
                    task=task,
                    system=system,
                    dispute=dispute,
                    item=item.id,
                    attempt=attempt,
                    result=fields,
                )
            )
            if result.link_lost:
                raise AppealFailed(
                    f"the link to {job.device_name} was lost during the appeal attempt "
                    f"({result.message}): the venue's failure; run the rerun again"
                )
            return completion
        finally:
            with self._active_lock:
                self._active.discard(runner)
            runner.stop()

    def _check_unchanged(self, job: Job) -> None:
        """Refuse an appeal when the test set or the job's settings differ from what the
        run journaled: an appeal attempt runs under the original item's conditions."""
        state = self.store.state
        current = testset_file_hashes(
            self.site.testset_path(job.task), job.testset, self._hash_cache
        )
        reference = state.testset_hashes.get(job.task)
        problems: list[Problem] = []
        if reference is not None and reference != current:
            problems = testset_problems(self.site, job.task, reference, current)
        settings = job_settings(self.site, job.task, job.system, combined_digest(current))
        old = state.job_settings.get(job.key)
        changes = settings_changes(old, settings) if old is not None else []
        if changes:
            problems.append(site_change_problem(self.site, job.task, job.system, changes))
        if problems:
            # No accepting a change here: the appeal would not be the original item's.
            fix = (
                "restore what the run used (manifest.json has the test set's SHA-256s); "
                "the dispute stays open until then, or is decided without a rerun"
            )
            raise SiteChanged([dataclasses.replace(p, fix=fix) for p in problems])

    def run_job(self, job: Job | tuple[str, str]) -> JobResult:
        """Run every item of one job that the journal does not show completed."""
        if not isinstance(job, Job):
            job = self.job(*job)
        items = self._plan(job)
        done = self.store.state.done.get(job.key, set())
        pending = [item for item in items if item.id not in done]
        # The display counts the test set's items: hidden audit repeats are not shown.
        scored = [i.id for i in items if audit_of(i.id) is None]
        self.listener(
            JobStarted(job.task, job.system, len(scored), sum(1 for i in scored if i in done))
        )
        if not pending:
            return self._finish(job, len(items))
        if not self._hold(job):
            return self._skipped(job, len(done), len(items))
        self.store.open_outputs(job.task, job.system)
        device = self.site.device(job.device_name)
        runner = open_runner(device.transport, device, self._spec(job))
        failed: str | None = None
        with self._active_lock:
            self._active.add(runner)
        try:
            failed = self._start(runner, job, restart=False)
            if failed is None:
                failed = self._feed(runner, job, pending)
        finally:
            with self._active_lock:
                self._active.discard(runner)
            runner.stop()
        if self._stopping.is_set():
            return JobResult(job.task, job.system, len(done), len(items), "stopped")
        if failed in (SKIPPED, DEVICE_DOWN):
            completed = len(self.store.state.done.get(job.key, set()))
            return self._skipped(job, completed, len(items), failed)
        self._verify_testset(job.task)
        return self._finish(job, len(items), failed)

    def _finish(self, job: Job, total: int, failed: str | None = None) -> JobResult:
        completed = len(self.store.state.done.get(job.key, set()))
        scored, shown = self._scored_count(job), len(self._items(job.task))
        if failed:
            self._emit(
                JobFailed(
                    task=job.task, system=job.system, reason=failed, scored=scored, total=shown
                )
            )
            with self._retry_lock:
                self._failed_jobs.add(job.key)
        else:
            self._emit(
                JobFinished(
                    task=job.task,
                    system=job.system,
                    completed=completed,
                    scored=scored,
                    total=shown,
                )
            )
        return JobResult(job.task, job.system, completed, total, failed)

    def _start(
        self, runner: Runner, job: Job, restart: bool, cause: FailureClass | None = None
    ) -> str | None:
        """Start (or restart) the system; after START_TRIES failures return the reason.

        ``cause`` says whose failure made the restart needed: "participant" (a crash, a
        hang, garbage) or "venue" (the link, a reset by the harness); only the
        participant's count against the system.
        """
        reason = ""
        attempt = 0
        wait: _DeviceWait | None = None
        while attempt < START_TRIES:
            try:
                info = runner.restart() if restart or attempt > 0 else runner.start()
            except DeviceUnreachable as exc:
                # Nothing answered: the venue's failure, not a start try of the system.
                wait = wait or _DeviceWait(time.monotonic())
                gave_up = self._wait_for_device(job, str(exc), wait)
                if gave_up is not None:
                    return gave_up
                continue
            except StartError as exc:
                attempt += 1
                reason = str(exc)
                self._emit(
                    StartFailed(task=job.task, system=job.system, try_number=attempt, reason=reason)
                )
                if attempt < START_TRIES:
                    time.sleep(START_BACKOFF_SECONDS[min(attempt - 1, 1)])
                    # The operator may skip a device that does not come up, between tries.
                    if not self._hold(job):
                        return reason if self._stopping.is_set() else SKIPPED
                continue
            self._emit(
                SystemStarted(
                    task=job.task,
                    system=job.system,
                    restart=restart,
                    cause=cause if restart else None,
                    pid=info.pid,
                    name=info.name,
                    version=info.version,
                    setup_seconds=info.setup_seconds,
                )
            )
            return None
        return f"the system could not be started ({START_TRIES} tries): {reason}"

    def _wait_for_device(self, job: Job, error: str, wait: _DeviceWait) -> str | None:
        """Wait before the next try of a device that did not answer; None to try again.

        Returns DEVICE_DOWN once the device has been down for the site's
        device_wait_seconds, SKIPPED when the operator skips it meanwhile, and a reason
        when the controller stops (the job is then left not done).
        """
        device = job.device_name
        wait.tries += 1
        down = time.monotonic() - wait.since
        limit = 0.0 if device in self._down_devices else self.site.config.site.device_wait_seconds
        if down >= limit:
            self._down_devices.add(device)
            self._emit(
                DeviceDown(
                    task=job.task,
                    system=job.system,
                    device=device,
                    tries=wait.tries,
                    down_seconds=down,
                    error=error,
                )
            )
            self.listener(
                Notice(
                    job.task,
                    f"{job.system}: device {device} down for {down:.0f} s, its job gives up",
                )
            )
            return DEVICE_DOWN
        delay = DEVICE_BACKOFF_SECONDS[min(wait.tries - 1, len(DEVICE_BACKOFF_SECONDS) - 1)]
        delay = min(delay, max(0.0, limit - down))
        self._emit(
            DeviceWaiting(
                task=job.task,
                system=job.system,
                device=device,
                tries=wait.tries,
                down_seconds=down,
                next_try_seconds=delay,
                next_try_wall=time.time() + delay,
                error=error,
            )
        )
        self.listener(
            Notice(
                job.task,
                f"{job.system}: device {device} does not answer ({error}); next try in {delay:g} s",
            )
        )
        until = time.monotonic() + delay
        with self._gate:
            while (
                not self._stopping.is_set()
                and device not in self._skipped_devices
                and (left := until - time.monotonic()) > 0
            ):
                self._gate.wait(left)
            if self._stopping.is_set():
                return "stopped while waiting for the device"
            if device in self._skipped_devices:
                return SKIPPED
        return None

    def _feed(self, runner: Runner, job: Job, pending: list[TestItem]) -> str | None:
        max_restarts = job.system_cfg.max_restarts
        restarts = 0
        queue = list(reversed(pending))
        # Only kinds with a stream option (face-detect) have it.
        stream = bool(getattr(job.task_cfg, "stream", False))
        stream_start: float | None = None
        while queue:
            held = time.monotonic()
            if not self._hold(job):
                return None if self._stopping.is_set() else SKIPPED
            if stream_start is not None:
                # Paused time is nobody's: the stream's clock waits with the operator.
                stream_start += time.monotonic() - held
            item = queue.pop()
            due = None
            if stream and "pts" in item.fields:
                # Frame n is due pts seconds after the first frame this session sent,
                # whether or not the system has finished the one before.
                if stream_start is None:
                    stream_start = time.monotonic() - float(item.fields["pts"])
                due = stream_start + float(item.fields["pts"])
                pause = due - time.monotonic()
                if pause > 0:
                    time.sleep(pause)
            dispatch = self._dispatch(job, item, due)
            result = self._send(runner, job, dispatch)
            if self._stopping.is_set():
                return None  # killed by stop(): not the system's fault, so not recorded
            lost: LinkLost | SystemLost
            if result.link_lost:
                # Nothing showed the participant's side was up when the link died: the
                # item is sent again (attempt + 1) once the link is back, keeping its
                # clock: what this attempt ran is charged to the item (docs/security.md).
                lost = LinkLost(
                    task=job.task,
                    system=job.system,
                    item=item.id,
                    outcome=result.outcome,
                    reason=result.message,
                    attempt=dispatch.attempt,
                    seconds=max(0.0, result.seconds),
                )
                self._emit(lost)
                count, _ = self.store.state.lost_attempts(job.task, job.system, item.id)
                if count <= ITEM_RESENDS:
                    queue.append(item)
                else:
                    self._complete(job, dispatch, self._resends_spent(result, count))
            else:
                self._complete(job, dispatch, result)
                if not result.system_lost:
                    continue
                # The venue's failures (a lost link) never use up the participant's restarts.
                restarts += 1
                lost = SystemLost(
                    task=job.task,
                    system=job.system,
                    item=item.id,
                    outcome=result.outcome,
                    reason=result.message,
                )
                self._emit(lost)
            if restarts > max_restarts:
                return f"more than max_restarts={max_restarts} restarts"
            failed = self._start(runner, job, restart=True, cause=lost.failure_class)
            if failed:
                return failed
        return None

    @staticmethod
    def _resends_spent(result: ItemAttempt, lost: int) -> ItemAttempt:
        """The attempt that records an item whose every sending was lost: failed, its time
        the lost attempts' (already journaled with them), flagged for the organizer."""
        return dataclasses.replace(
            result,
            outcome="crashed",
            output=None,
            sent=result.done,
            link_lost=False,
            message=f"the link was lost on all {lost} sendings of this item and nothing "
            "showed whose failure it was: recorded as crashed and flagged for the "
            f"organizer to review (the last: {result.message})",
        )

    @staticmethod
    def _stream_timing(dispatch: Dispatch, result: ItemAttempt) -> dict[str, Any]:
        """Latency from when a frame was due; late when its answer came after the next was due."""
        if dispatch.due is None:
            return {}
        interval = 1.0 / float(dispatch.item.fields.get("fps") or 25.0)
        latency = result.done - dispatch.due
        return {"latency_seconds": latency, "late": latency > interval}

    def _dispatch(self, job: Job, item: TestItem, due: float | None) -> Dispatch:
        """Everything about sending one item, computed once and journaled before it goes."""
        budget_cfg = job.task_cfg.budget
        budget = item_budget_seconds(budget_cfg, item, item.units)
        dispatch = Dispatch(
            item=item,
            attempt=self.store.state.next_attempt(job.task, job.system, item.id),
            anon_id=secrets.token_hex(8),
            budget_seconds=budget,
            hang_seconds=hang_seconds(budget_cfg, budget),
            due=due,
        )
        self._emit(
            Dispatched(
                task=job.task,
                system=job.system,
                item=item.id,
                attempt=dispatch.attempt,
                anon_id=dispatch.anon_id,
                budget_seconds=dispatch.budget_seconds,
                hang_seconds=dispatch.hang_seconds,
                audit_of=audit_of(item.id),
                due_mono=due,
            )
        )
        return dispatch

    @staticmethod
    def _send(runner: Runner, job: Job, dispatch: Dispatch) -> ItemAttempt:
        """Send the dispatched item and wait for its attempt."""
        item = dispatch.item
        # The runner picks where the system writes its output files (tts audio) and gives
        # the path in the input field; the file comes back in the attempt's output_files.
        return runner.run_item(
            ItemRequest(
                dispatch.anon_id,
                item.files,
                item.fields,
                dispatch.hang_seconds,
                outputs=job.kind.output_files,
                # A hidden repeat is timed on an input the system could not start early:
                # compared with the first answer, it shows work done while the input
                # crossed (harness/engine/audits.py, whole_input_lines).
                whole_input_first=audit_of(item.id) is not None,
            )
        )

    def _complete(self, job: Job, dispatch: Dispatch, result: ItemAttempt) -> None:
        self._emit(self._completion(job, dispatch, result))

    def _completion(self, job: Job, dispatch: Dispatch, result: ItemAttempt) -> Completed:
        """The item's ``completed`` record: its output checked by the kind, its verdict
        judged against the dispatch's budget (journaled by ``_complete``, or inside an
        appeal attempt's record by ``appeal``)."""
        item = dispatch.item
        kind = job.kind
        budget = dispatch.budget_seconds
        # An item sent again after venue failures keeps its clock: its time is what every
        # attempt ran, so a cached answer is never faster than the work it hides.
        resent, lost_seconds = self.store.state.lost_attempts(job.task, job.system, item.id)
        seconds = result.seconds + lost_seconds
        verdict = judge(result.outcome, seconds, budget)
        message = result.message
        output = dict(result.output) if result.output is not None else None
        if output is not None and result.outcome == "result":
            problem = kind.check_output(output)
            if not problem and kind.check_item is not None:
                problem = kind.check_item(item, output)
            if not problem and kind.keep_output is not None:
                for key in kind.output_files:
                    file = result.output_files.get(key)
                    if file is None:
                        problem = f"the runner brought back no file for {key}"
                        break
                    media = self.store.dir / "media" / job.task
                    output, problem = kind.keep_output(item, output, file, media, result.anon_id)
                    if problem:
                        break
                    # The output names what it kept by its path in the run directory.
                    for kept in output.values():
                        if isinstance(kept, str) and kept.startswith(f"media/{job.task}/"):
                            self.store.keep_media(kept)
            if problem:
                verdict, message = "invalid_output", problem
        for file in result.output_files.values():
            # What was worth keeping is in media/ now; nothing of an item stays staged.
            with contextlib.suppress(OSError):
                file.host.unlink()
        speed = kind.speed(item, seconds) if result.outcome == "result" else None
        rtf = speed if kind.speed_unit == "rtf" else None
        if output is not None and verdict != "invalid_output" and output.get("audio_seconds"):
            # Synthesis: real-time factor against the audio the system produced.
            rtf = seconds / float(output["audio_seconds"])
        return Completed(
            task=job.task,
            system=job.system,
            item=item.id,
            attempt=dispatch.attempt,
            anon_id=result.anon_id,
            verdict=verdict,
            output=output,
            message=message,
            sent=result.sent,
            done=result.done,
            seconds=seconds,
            budget_seconds=budget,
            rtf=rtf,
            speed=speed,
            stage_seconds=result.stage_seconds,
            round_trip_seconds=result.round_trip_seconds,
            audit_of=audit_of(item.id),
            cpu_seconds=result.cpu_seconds,
            peak_rss_bytes=result.peak_rss_bytes,
            spawn_seconds=result.spawn_seconds,
            clock_start=result.clock_start,
            fetch_seconds=result.fetch_seconds,
            resent=resent or None,
            lost_seconds=lost_seconds if resent else None,
            whole_input_first=result.whole_input_first,
            **self._stream_timing(dispatch, result),
        )
