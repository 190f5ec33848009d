"""The controller: feeds every item to every system under its budget and journals everything."""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runners import (
    DeviceUnreachable,
    ItemAttempt,
    ItemRequest,
    Runner,
    Sandbox,
    StartError,
    SystemSpec,
    open_runner,
)

from .audits import audit_of, plan
from .budgets import hang_seconds, item_budget_seconds, judge
from .errors import ControlConflict, Problem
from .events import (
    ItemFinished,
    JobFinished,
    JobStarted,
    Listener,
    Notice,
    SystemLost,
    SystemStarted,
)
from .integrity import (
    SiteChanged,
    combined_digest,
    contain_testset,
    job_settings,
    settings_changes,
    site_change_problem,
    testset_file_hashes,
    testset_problems,
)
from .report.manifest import write_manifest
from .site import Site
from .store import RunStore
from .tasks import task_kind
from .testsets import TestItem, TestSet

START_TRIES = 3
# Times one item is sent again after the link (not the system) failed, before it is judged.
LINK_RETRIES = 5
START_BACKOFF_SECONDS = (0.5, 2.0)
# Waits between tries of a device that does not answer (the last one repeats), until
# the site's device_wait_seconds have passed.
DEVICE_BACKOFF_SECONDS = (1.0, 2.0, 4.0, 8.0, 16.0, 30.0)


@dataclass(frozen=True)
class JobResult:
    """How one (task, system) job ended in this session."""

    task: str
    system: str
    completed: int
    total: int
    failed: str | None = None


def _ignore(_: object) -> None:
    return None


# What _feed returns when the operator skipped the job's device.
SKIPPED = "skipped by the operator"
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
        store: RunStore,
        listener: Listener | None = None,
        limit: int | None = None,
        accept_site_change: bool = False,
    ) -> None:
        self.site = site
        self.store = store
        self.listener = listener or _ignore
        self.limit = limit
        self.accept_site_change = accept_site_change
        self._hashes: dict[str, dict[str, str]] = {}
        self._testsets: dict[str, TestSet] = {}
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

    def testset(self, task: str) -> TestSet:
        """The task's test set, loaded once (raises TestSetError for a set that is unusable)."""
        if task not in self._testsets:
            cfg = self.site.config.tasks[task]
            testset = task_kind(cfg.kind).load(self.site.testset_path(task), cfg)
            self._testsets[task] = contain_testset(testset)
        return self._testsets[task]

    def load_testsets(self) -> None:
        """Load every task's test set up front, so a bad set fails before any system starts."""
        for task in self.site.config.tasks:
            self.testset(task)

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
        self.store.record(
            "session_started",
            pid=os.getpid(),
            site=self.site.name,
            site_sha256=self.site.digest,
            limit=self.limit,
        )
        for task, testset in self._testsets.items():
            for bad in testset.invalid:
                self.listener(Notice(task, f"invalid test item {bad.id}: {bad.reason}"))
            for warning in testset.warnings:
                self.listener(Notice(task, warning))
            self.store.record(
                "testset_loaded",
                task=task,
                items=len(testset.items),
                invalid=[{"item": b.id, "reason": b.reason} for b in testset.invalid],
            )
        self._check_integrity()
        self._audit_seed = self._ensure_audit_seed()
        write_manifest(self.store.dir, self.site, self._testsets, testset_hashes=self._hashes)
        # Every job's outputs file, finished ones included, is a fresh copy of the journal.
        self.store.rebuild_outputs(self.site.jobs())
        groups = self._by_device(jobs or self.site.jobs())
        if len(groups) == 1:
            results = [self._take_turn(task, system) for task, system in groups[0]]
        else:
            # One thread per device: participant machines work at the same time, while
            # the systems sharing one device (and its CPUs) still take turns.
            with ThreadPoolExecutor(len(groups), thread_name_prefix="device") as pool:
                futures = [
                    pool.submit(lambda group: [self._take_turn(t, s) for t, s in group], group)
                    for group in groups
                ]
                try:
                    done = [f.result() for f in futures]
                except BaseException:
                    self.stop()
                    raise
            order = {job: i for i, job in enumerate(jobs or self.site.jobs())}
            results = sorted(
                (r for group in done for r in group), key=lambda r: order[(r.task, r.system)]
            )
        self._join_retries()
        # A job the operator retried ended as its last run ended.
        results = [self._retried.get((r.task, r.system), r) for r in results]
        if self._stopping.is_set():
            raise KeyboardInterrupt("stopped")
        self.store.record("session_finished")
        self.store.journal.sync()
        return results

    def _take_turn(self, task: str, system: str) -> JobResult:
        """Run one job while holding its device (a retried job may want it too)."""
        with self._device_locks[self._device_of(system)]:
            return self.run_job(task, system)

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
            self._retried[(task, system)] = self._take_turn(task, system)
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
        accepted: list[dict[str, Any]] = []
        for task, testset in self._testsets.items():
            current = testset_file_hashes(self.site.testset_path(task), testset)
            self._hashes[task] = current
            reference = state.testset_hashes.get(task)
            if reference is None:
                self.store.record("testset_hashes", task=task, files=current)
            elif reference != current:
                found = testset_problems(self.site, task, reference, current)
                if self.accept_site_change:
                    changes = [p.message for p in found]
                    accepted.append({"task": task, "system": None, "changes": changes})
                    self.store.record("testset_hashes", task=task, files=current)
                else:
                    problems.extend(found)
        for task, system in self.site.jobs():
            digest = combined_digest(self._hashes[task])
            settings = job_settings(self.site, task, system, digest)
            old = state.job_settings.get((task, system))
            if old == settings:
                continue
            changes = settings_changes(old, settings) if old is not None else []
            if changes and state.completed.get((task, system)):
                if not self.accept_site_change:
                    problems.append(site_change_problem(self.site, task, system, changes))
                    continue
                accepted.append({"task": task, "system": system, "changes": changes})
            self.store.record("job_settings", task=task, system=system, settings=settings)
        if problems:
            raise SiteChanged(problems)
        for change in accepted:
            self.store.record("site_change_accepted", **change)
            self.listener(
                Notice(change["task"], "site change accepted: " + "; ".join(change["changes"]))
            )

    def _verify_testset(self, task: str) -> None:
        """At the end of a job: the test set must still be what the run started from."""
        current = testset_file_hashes(self.site.testset_path(task), self._testsets[task])
        reference = self._hashes.get(task)
        if reference is not None and current != reference:
            problems = testset_problems(self.site, task, reference, current)
            self.store.record("testset_changed", task=task, changes=[p.message for p in problems])
            self.stop()
            raise SiteChanged(problems)

    def _ensure_audit_seed(self) -> int | None:
        """The run's secret audit seed: drawn once, kept in the journal, reused on resume."""
        if not any(t.audit.repeats or t.audit.shuffle for t in self.site.config.tasks.values()):
            return None
        if self.store.state.audit_seed is not None:
            return self.store.state.audit_seed
        return int(self.store.record("audit_seed", seed=secrets.randbits(63))["seed"])

    def _plan(self, task: str, system: str) -> list[TestItem]:
        """The items of one job in the order they are sent, audit repeats included."""
        items = self._items(task)
        audit = self.site.config.tasks[task].audit
        if self._audit_seed is None or not (audit.repeats or audit.shuffle):
            return list(items)
        digest = hashlib.sha256(f"{self._audit_seed}:{task}:{system}".encode()).digest()
        seed = int.from_bytes(digest[:8], "big")
        return plan(items, audit, seed, self.store.dir / "audit")

    def _by_device(self, jobs: Sequence[tuple[str, str]]) -> list[list[tuple[str, str]]]:
        groups: dict[str, list[tuple[str, str]]] = {}
        for task, system in jobs:
            groups.setdefault(self.site.config.systems[system].device, []).append((task, system))
        return list(groups.values())

    def _device_of(self, system: str) -> str:
        return self.site.config.systems[system].device

    def _hold(self, task: str, system: str) -> bool:
        """Wait while the job or its device is paused; False when it must not go on.

        Called between items only, so the item in flight always finishes and paused
        time is never inside an item's measured seconds.
        """
        device = self._device_of(system)
        with self._gate:
            while (
                not self._stopping.is_set()
                and device not in self._skipped_devices
                and ((task, system) in self._paused_jobs or device in self._paused_devices)
            ):
                self._gate.wait()
            return not self._stopping.is_set() and device not in self._skipped_devices

    def _scored_count(self, task: str, system: str) -> int:
        """Completed items of the test set itself, hidden audit repeats left out."""
        done = self.store.state.completed.get((task, system), {})
        return sum(1 for item in done if audit_of(item) is None)

    def _skipped(
        self, task: str, system: str, completed: int, total: int, why: str = SKIPPED
    ) -> JobResult:
        """End a job not done for this session: skipped by the operator, or its device down."""
        reason = "device_down" if why == DEVICE_DOWN else "operator"
        self.store.record(
            "job_skipped",
            task=task,
            system=system,
            completed=completed,
            reason=reason,
            failure_class="venue",
        )
        shown = (self._scored_count(task, system), len(self._items(task)))
        self.listener(JobFinished(task, system, *shown, why))
        return JobResult(task, system, completed, total, why)

    def control(
        self,
        action: str,
        task: str | None = None,
        system: str | None = None,
        device: str | None = None,
        actor: str = "operator",
    ) -> dict[str, Any]:
        """Apply an operator action and journal it (event ``operator_action``).

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
        record = self.store.record("operator_action", action=action, actor=actor, **target)
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
        return record

    def _start_retry(self, task: str, system: str, actor: str) -> dict[str, Any]:
        """Journal the operator's retry and run the failed job again on a thread of its own."""
        with self._retry_lock:
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
            record = self.store.record(
                "operator_action", action="retry", actor=actor, task=task, system=system
            )
            thread = threading.Thread(
                target=self._retry, args=(task, system), name=f"retry-{task}-{system}"
            )
            self._retry_threads.append(thread)
            thread.start()
        return record

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

    def _spec(self, task: str, system: str) -> SystemSpec:
        cfg = self.site.config
        sys_cfg = cfg.systems[system]
        task_cfg = cfg.tasks[task]
        device = cfg.devices[sys_cfg.device]
        sandbox = Sandbox(
            enabled=getattr(device, "sandbox", True),
            network=getattr(device, "network", False),
            user=getattr(device, "user", "nobody"),
            hidden=self._hidden_paths(system),
        )
        return SystemSpec(
            name=system,
            task=task,
            kind=task_cfg.kind,
            mode=sys_cfg.mode,
            command=tuple(sys_cfg.command),
            workdir=self.site.workdir(system),
            log_path=self.store.log_path(task, system),
            stage_dir=self.store.stage_dir / system,
            env=sys_cfg.env,
            setup_seconds=task_cfg.budget.setup_seconds,
            setup_files=self.testset(task).setup_files,
            sandbox=sandbox,
            max_output_bytes=task_cfg.max_output_bytes or task_kind(task_cfg.kind).max_output_bytes,
        )

    def _hidden_paths(self, system: str) -> tuple[Path, ...]:
        """What must not exist where a local system runs, even under its own workdir.

        The run directory (journal, outputs, other items), the site file and every test
        set; the other systems' workdirs unless they contain this one.
        """
        own = self.site.workdir(system)
        paths = [self.store.dir, self.site.path, self.site.path.parent]
        paths += [self.site.testset_path(task) for task in self.site.config.tasks]
        paths += [self.site.workdir(other) for other in self.site.config.systems]
        hidden: list[Path] = []
        for path in paths:
            path = path.resolve()
            # A directory holding the system's own workdir cannot be hidden whole; what
            # matters in it (run dir, test sets, site file) is listed on its own.
            if path == own or path in own.parents or path in hidden:
                continue
            hidden.append(path)
        return tuple(hidden)

    def run_job(self, task: str, system: str) -> JobResult:
        """Run every item of one task on one system that the journal does not show completed."""
        items = self._plan(task, system)
        done = self.store.state.completed.get((task, system), {})
        pending = [item for item in items if item.id not in done]
        # The display counts the test set's items: hidden audit repeats are not shown.
        scored = [i.id for i in items if audit_of(i.id) is None]
        self.listener(JobStarted(task, system, len(scored), sum(1 for i in scored if i in done)))
        if not pending:
            return self._finish(task, system, len(items))
        device_name = self.site.config.systems[system].device
        if not self._hold(task, system):
            return self._skipped(task, system, len(done), len(items))
        self.store.open_outputs(task, system)
        device = self.site.config.devices[device_name]
        runner = open_runner(
            device.kind, self.site.device_options(device_name), self._spec(task, system)
        )
        failed: str | None = None
        with self._active_lock:
            self._active.add(runner)
        try:
            failed = self._start(runner, task, system, restart=False)
            if failed is None:
                failed = self._feed(runner, task, system, pending)
        finally:
            with self._active_lock:
                self._active.discard(runner)
            runner.stop()
        if self._stopping.is_set():
            return JobResult(task, system, len(done), len(items), "stopped")
        if failed in (SKIPPED, DEVICE_DOWN):
            completed = len(self.store.state.completed.get((task, system), {}))
            return self._skipped(task, system, completed, len(items), failed)
        self._verify_testset(task)
        return self._finish(task, system, len(items), failed)

    def _finish(self, task: str, system: str, total: int, failed: str | None = None) -> JobResult:
        completed = len(self.store.state.completed.get((task, system), {}))
        if failed:
            self.store.record("job_failed", task=task, system=system, reason=failed)
            with self._retry_lock:
                self._failed_jobs.add((task, system))
        else:
            self.store.record("job_finished", task=task, system=system, completed=completed)
        self.listener(
            JobFinished(
                task, system, self._scored_count(task, system), len(self._items(task)), failed
            )
        )
        return JobResult(task, system, completed, total, failed)

    def _start(
        self, runner: Runner, task: str, system: str, restart: bool, cause: str | None = None
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
                gave_up = self._wait_for_device(task, system, str(exc), wait)
                if gave_up is not None:
                    return gave_up
                continue
            except StartError as exc:
                attempt += 1
                reason = str(exc)
                self.store.record(
                    "start_failed", task=task, system=system, try_number=attempt, reason=reason
                )
                self.listener(SystemLost(task, system, f"start failed: {reason}"))
                if attempt < START_TRIES:
                    time.sleep(START_BACKOFF_SECONDS[min(attempt - 1, 1)])
                    # The operator may skip a device that does not come up, between tries.
                    if not self._hold(task, system):
                        return reason if self._stopping.is_set() else SKIPPED
                continue
            self.store.record(
                "system_started",
                task=task,
                system=system,
                restart=restart,
                cause=cause if restart else None,
                pid=info.pid,
                name=info.name,
                version=info.version,
                setup_seconds=info.setup_seconds,
            )
            self.listener(
                SystemStarted(task, system, info.name, info.version, info.setup_seconds, restart)
            )
            return None
        return f"the system could not be started ({START_TRIES} tries): {reason}"

    def _wait_for_device(self, task: str, system: str, error: str, wait: _DeviceWait) -> str | None:
        """Wait before the next try of a device that did not answer; None to try again.

        Returns DEVICE_DOWN once the device has been down for the site's
        device_wait_seconds, SKIPPED when the operator skips it meanwhile, and a reason
        when the controller stops (the job is then left not done).
        """
        device = self._device_of(system)
        wait.tries += 1
        down = time.monotonic() - wait.since
        limit = 0.0 if device in self._down_devices else self.site.config.site.device_wait_seconds
        if down >= limit:
            self._down_devices.add(device)
            self.store.record(
                "device_down",
                task=task,
                system=system,
                device=device,
                tries=wait.tries,
                down_seconds=down,
                error=error,
                failure_class="venue",
            )
            self.listener(
                Notice(task, f"{system}: device {device} down for {down:.0f} s, its job gives up")
            )
            return DEVICE_DOWN
        delay = DEVICE_BACKOFF_SECONDS[min(wait.tries - 1, len(DEVICE_BACKOFF_SECONDS) - 1)]
        delay = min(delay, max(0.0, limit - down))
        self.store.record(
            "device_waiting",
            task=task,
            system=system,
            device=device,
            tries=wait.tries,
            down_seconds=down,
            next_try_seconds=delay,
            next_try_wall=time.time() + delay,
            error=error,
            failure_class="venue",
        )
        self.listener(
            Notice(
                task,
                f"{system}: device {device} does not answer ({error}); next try in {delay:g} s",
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

    def _feed(self, runner: Runner, task: str, system: str, pending: list[TestItem]) -> str | None:
        max_restarts = self.site.config.systems[system].max_restarts
        restarts = 0
        queue = list(reversed(pending))
        link_retries = 0
        stream = self.site.config.tasks[task].stream
        stream_start: float | None = None
        while queue:
            held = time.monotonic()
            if not self._hold(task, system):
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
            result = self._send(runner, task, system, item)
            if self._stopping.is_set():
                return None  # killed by stop(): not the system's fault, so not recorded
            if result.link_lost and link_retries < LINK_RETRIES:
                # The line to the device failed, not the system: the item is sent again
                # (attempt + 1) once the link is back, and judged only then.
                link_retries += 1
                queue.append(item)
                event = "link_lost"
            else:
                link_retries = 0
                self._complete(task, system, item, result, due)
                if not result.system_lost:
                    continue
                event = "system_lost"
            venue = event == "link_lost"
            if not venue:
                # The venue's failures (a lost link) never use up the participant's restarts.
                restarts += 1
            self.store.record(
                event,
                task=task,
                system=system,
                item=item.id,
                outcome=result.outcome,
                reason=result.message,
                failure_class="venue" if venue else "participant",
            )
            what = "link lost (the venue's failure)" if venue else result.outcome
            self.listener(SystemLost(task, system, f"{what}: {result.message}"))
            if restarts > max_restarts:
                return f"more than max_restarts={max_restarts} restarts"
            failed = self._start(
                runner, task, system, restart=True, cause="venue" if venue else "participant"
            )
            if failed:
                return failed
        return None

    @staticmethod
    def _stream_timing(item: TestItem, result: ItemAttempt, due: float | None) -> dict[str, Any]:
        """Latency from when a frame was due; late when its answer came after the next was due."""
        if due is None:
            return {}
        interval = 1.0 / float(item.fields.get("fps") or 25.0)
        latency = result.done - due
        return {"latency_seconds": latency, "late": latency > interval}

    def _send(self, runner: Runner, task: str, system: str, item: TestItem) -> ItemAttempt:
        """Journal the dispatch, then send the item and wait for its attempt."""
        budget_cfg = self.site.config.tasks[task].budget
        budget = item_budget_seconds(budget_cfg, item, item.units)
        hang = hang_seconds(budget_cfg, budget)
        anon_id = secrets.token_hex(8)
        self.store.record(
            "dispatched",
            task=task,
            system=system,
            item=item.id,
            attempt=self.store.state.next_attempt(task, system, item.id),
            anon_id=anon_id,
            budget_seconds=budget,
            hang_seconds=hang,
            audit_of=audit_of(item.id),
        )
        kind = task_kind(self.site.config.tasks[task].kind)
        # The runner picks where the system writes its output files (tts audio) and gives
        # the path in the input field; the file comes back in the attempt's output_files.
        return runner.run_item(
            ItemRequest(anon_id, item.files, item.fields, hang, outputs=kind.output_files)
        )

    def _complete(
        self, task: str, system: str, item: TestItem, result: ItemAttempt, due: float | None = None
    ) -> None:
        # The attempt number is the last dispatch's; the budget is recomputed the same way.
        attempt_no = self.store.state.attempts[(task, system, item.id)]
        budget = item_budget_seconds(self.site.config.tasks[task].budget, item, item.units)
        kind = task_kind(self.site.config.tasks[task].kind)
        verdict = judge(result.outcome, result.seconds, budget)
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
                    media = self.store.dir / "media" / task
                    output, problem = kind.keep_output(item, output, file, media, result.anon_id)
                    if problem:
                        break
            if problem:
                verdict, message = "invalid_output", problem
        for file in result.output_files.values():
            # What was worth keeping is in media/ now; nothing of an item stays staged.
            with contextlib.suppress(OSError):
                file.host.unlink()
        speed = kind.speed(item, result.seconds) if result.outcome == "result" else None
        rtf = speed if kind.speed_unit == "rtf" else None
        if output is not None and verdict != "invalid_output" and output.get("audio_seconds"):
            # Synthesis: real-time factor against the audio the system produced.
            rtf = result.seconds / float(output["audio_seconds"])
        self.store.record(
            "completed",
            task=task,
            system=system,
            item=item.id,
            attempt=attempt_no,
            anon_id=result.anon_id,
            verdict=verdict,
            output=output,
            message=message,
            sent=result.sent,
            done=result.done,
            seconds=result.seconds,
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
            **self._stream_timing(item, result, due),
        )
        self.listener(
            ItemFinished(
                task,
                system,
                item.id,
                attempt_no,
                verdict,
                result.seconds,
                budget,
                message,
                speed=speed,
                output=output,
                audit=audit_of(item.id) is not None,
            )
        )
