"""The organizer's side of onsite: site files, test sets, budgets, the controller, the CLI.

Imports point one way: harness may import runners and scoring, never the reverse.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from harness.engine.budgets import VERDICTS, Verdict, hang_seconds, item_budget_seconds, judge
    from harness.engine.controller import Controller, Dispatch, Job, JobResult
    from harness.engine.dryrun import CheckResult, dry_run
    from harness.engine.integrity import SiteChanged
    from harness.engine.station import Station, StationSettings
    from harness.errors import InputError, LeaseLost, Problem, SiteError, TestSetError
    from harness.kinds import Headline, Scored, SpeedUnit, TaskKind, task_kind, task_kinds
    from harness.leaderboard import LeaderboardRow, leaderboard
    from harness.site import Budget, Site, load_site
    from harness.store.directory import RunLocked, RunState, RunStore, RunStoreError, lock_run_dir
    from harness.store.directory_source import site_of_run
    from harness.store.events import (
        Completed,
        Event,
        JobFinished,
        JobStarted,
        JournalEvent,
        Listener,
        Notice,
        SystemLost,
        SystemStarted,
    )
    from harness.store.journal import Journal, read_events, read_journal
    from harness.store.postgres_run import PgRunWriter
    from harness.testsets import InvalidItem, TestItem, TestSet, load_asr_testset
    from harness.version import __version__

# Where each public name lives. The package loads a module only when one of
# its names is first used (PEP 562), so `onsite --help` or `onsite score`
# does not pay for the controller, the runners and the report; a submodule
# imported later (harness.leaderboard) never hides the name (the function).
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "__version__": ".version",
        "VERDICTS": ".engine.budgets",
        "Verdict": ".engine.budgets",
        "hang_seconds": ".engine.budgets",
        "item_budget_seconds": ".engine.budgets",
        "judge": ".engine.budgets",
        "Controller": ".engine.controller",
        "Dispatch": ".engine.controller",
        "Job": ".engine.controller",
        "JobResult": ".engine.controller",
        "CheckResult": ".engine.dryrun",
        "dry_run": ".engine.dryrun",
        "InputError": ".errors",
        "LeaseLost": ".errors",
        "Problem": ".errors",
        "SiteError": ".errors",
        "TestSetError": ".errors",
        "Event": ".store.events",
        "Completed": ".store.events",
        "JournalEvent": ".store.events",
        "JobFinished": ".store.events",
        "JobStarted": ".store.events",
        "Listener": ".store.events",
        "Notice": ".store.events",
        "SystemLost": ".store.events",
        "SystemStarted": ".store.events",
        "Journal": ".store.journal",
        "read_journal": ".store.journal",
        "read_events": ".store.journal",
        "LeaderboardRow": ".leaderboard",
        "leaderboard": ".leaderboard",
        "site_of_run": ".store.directory_source",
        "Budget": ".site",
        "Site": ".site",
        "load_site": ".site",
        "Station": ".engine.station",
        "StationSettings": ".engine.station",
        "PgRunWriter": ".store.postgres_run",
        "RunLocked": ".store.directory",
        "RunState": ".store.directory",
        "RunStore": ".store.directory",
        "RunStoreError": ".store.directory",
        "lock_run_dir": ".store.directory",
        "SiteChanged": ".engine.integrity",
        "Headline": ".kinds",
        "Scored": ".kinds",
        "SpeedUnit": ".kinds",
        "TaskKind": ".kinds",
        "task_kind": ".kinds",
        "task_kinds": ".kinds",
        "InvalidItem": ".testsets",
        "TestItem": ".testsets",
        "TestSet": ".testsets",
        "load_asr_testset": ".testsets",
    },
)

__all__ = [
    "VERDICTS",
    "Budget",
    "CheckResult",
    "Controller",
    "Event",
    "Headline",
    "InputError",
    "LeaseLost",
    "InvalidItem",
    "Completed",
    "Dispatch",
    "Job",
    "JobFinished",
    "JobResult",
    "JobStarted",
    "Journal",
    "JournalEvent",
    "LeaderboardRow",
    "Listener",
    "Notice",
    "Problem",
    "RunLocked",
    "RunStoreError",
    "SiteChanged",
    "RunState",
    "RunStore",
    "Scored",
    "Site",
    "SiteError",
    "Station",
    "StationSettings",
    "PgRunWriter",
    "SpeedUnit",
    "SystemLost",
    "SystemStarted",
    "TaskKind",
    "TestItem",
    "TestSet",
    "TestSetError",
    "Verdict",
    "__version__",
    "dry_run",
    "hang_seconds",
    "item_budget_seconds",
    "judge",
    "leaderboard",
    "load_asr_testset",
    "load_site",
    "lock_run_dir",
    "read_events",
    "read_journal",
    "site_of_run",
    "task_kind",
    "task_kinds",
]
