"""The participants' dry run (`onsite check`): start each system, handshake, run a few items.

It uses the real controller against a scratch directory, so what a
participant sees is exactly what the venue will do, and the site's run
directory is never touched.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from harness.engine.controller import Controller, JobResult
from harness.site import Site
from harness.store.directory import RunState, RunStore
from harness.store.events import Completed, JournalEvent, Listener
from harness.testsets import TestSet
from runners import CheckStep, probe_device


@dataclass(frozen=True)
class CheckResult:
    """One job of a dry run: how it ended and its journal records.

    ``counted`` are the completions as the leaderboard counts them (each item's first),
    ``testset`` the task's test set as the controller loaded it: with them the CLI
    scores the dry run as the venue will score the run (harness.leaderboard).
    """

    job: JobResult
    starts: tuple[JournalEvent, ...]
    items: tuple[JournalEvent, ...]
    counted: tuple[Completed, ...] = ()
    testset: TestSet | None = field(default=None, compare=False, repr=False)

    @property
    def ok(self) -> bool:
        """The system started and every item it was given came back ok."""
        return self.job.failed is None and all(r["verdict"] == "ok" for r in self.items)


def probe_devices(site: Site) -> dict[str, list[CheckStep]]:
    """Probe every device the site's systems use whose transport has checks to run (SSH:
    reachability, host key, authentication, a remote command, SFTP, a writable workdir,
    free disk; a private key file other users can read is a warning), device name ->
    checks in order."""
    used = {cfg.device for cfg in site.config.systems.values()}
    probed: dict[str, list[CheckStep]] = {}
    for name in site.config.devices:
        if name in used:
            results = probe_device(site.device(name))
            if results is not None:
                probed[name] = results
    return probed


def dry_run(
    site: Site,
    items: int = 3,
    listener: Listener | None = None,
    jobs: Sequence[tuple[str, str]] | None = None,
) -> list[CheckResult]:
    """Run the first ``items`` items of each job (default: all) in a scratch directory
    that is then removed."""
    scratch = Path(tempfile.mkdtemp(prefix="onsite-check-"))
    try:
        store = RunStore(scratch, session="check", fsync_seconds=3600)
        try:
            controller = Controller(site, store, listener, limit=items)
            ran = controller.run(jobs)
            store.journal.sync()
            state = RunState.from_journal(store.journal_path)
            results = []
            for job in ran:
                records = state.job_records(job.task, job.system)
                counted = state.completed.get((job.task, job.system), {})
                results.append(
                    CheckResult(
                        job,
                        tuple(r for r in records if r["event"] == "system_started"),
                        tuple(r for r in records if r["event"] == "completed"),
                        tuple(counted.values()),
                        controller.testset(job.task),
                    )
                )
            return results
        finally:
            store.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
