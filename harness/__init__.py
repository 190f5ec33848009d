"""The organizer's side of onsite: site files, test sets, budgets, the controller, the CLI.

Imports point one way: harness may import runners and scoring, never the reverse.
"""

import sys
import types
from importlib import import_module
from typing import TYPE_CHECKING, Any


def _version() -> str:
    # Read on first use: package metadata costs tens of milliseconds to load.
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("onsite-eval")
    except PackageNotFoundError:  # running from a source tree that was not installed
        return "0.0.0+source"


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

# Where each public name lives. The package loads a module only when one of
# its names is first used (PEP 562), so `onsite --help` or `onsite score`
# does not pay for the controller, the runners and the report.
_EXPORTS: dict[str, str] = {
    "VERDICTS": "engine.budgets",
    "Verdict": "engine.budgets",
    "hang_seconds": "engine.budgets",
    "item_budget_seconds": "engine.budgets",
    "judge": "engine.budgets",
    "Controller": "engine.controller",
    "Dispatch": "engine.controller",
    "Job": "engine.controller",
    "JobResult": "engine.controller",
    "CheckResult": "engine.dryrun",
    "dry_run": "engine.dryrun",
    "InputError": "errors",
    "LeaseLost": "errors",
    "Problem": "errors",
    "SiteError": "errors",
    "TestSetError": "errors",
    "Event": "store.events",
    "Completed": "store.events",
    "JournalEvent": "store.events",
    "JobFinished": "store.events",
    "JobStarted": "store.events",
    "Listener": "store.events",
    "Notice": "store.events",
    "SystemLost": "store.events",
    "SystemStarted": "store.events",
    "Journal": "store.journal",
    "read_journal": "store.journal",
    "read_events": "store.journal",
    "LeaderboardRow": "leaderboard",
    "leaderboard": "leaderboard",
    "site_of_run": "store.directory_source",
    "Budget": "site",
    "Site": "site",
    "load_site": "site",
    "Station": "engine.station",
    "StationSettings": "engine.station",
    "PgRunWriter": "store.postgres_run",
    "RunLocked": "store.directory",
    "RunState": "store.directory",
    "RunStore": "store.directory",
    "RunStoreError": "store.directory",
    "lock_run_dir": "store.directory",
    "SiteChanged": "engine.integrity",
    "Headline": "kinds",
    "Scored": "kinds",
    "SpeedUnit": "kinds",
    "TaskKind": "kinds",
    "task_kind": "kinds",
    "task_kinds": "kinds",
    "InvalidItem": "testsets",
    "TestItem": "testsets",
    "TestSet": "testsets",
    "load_asr_testset": "testsets",
}


def __getattr__(name: str) -> Any:
    if name == "__version__":
        globals()[name] = _version()
        return globals()[name]
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


class _Package(types.ModuleType):
    """This package's module object: a submodule never hides a public name.

    Importing ``harness.leaderboard`` binds the submodule to the package's
    ``leaderboard`` attribute, where callers expect the function of that name
    (as when every name was imported eagerly); the name stays with
    ``__getattr__`` instead.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            self.__dict__.pop(name, None)
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


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
