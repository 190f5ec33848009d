"""The organizer's side of onsite: site files, test sets, budgets, the controller, the CLI.

Imports point one way: harness may import runners and scoring, never the reverse.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("onsite-eval")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"

from .budgets import VERDICTS, Verdict, hang_seconds, item_budget_seconds, judge
from .controller import Controller, JobResult
from .dryrun import CheckResult, dry_run
from .errors import InputError, Problem, SiteError, TestSetError
from .events import (
    Event,
    ItemFinished,
    JobFinished,
    JobStarted,
    Listener,
    Notice,
    SystemLost,
    SystemStarted,
)
from .integrity import SiteChanged
from .journal import Journal, read_journal
from .leaderboard import LeaderboardRow, leaderboard, site_of_run
from .site import Budget, Site, load_site
from .store import RunLocked, RunState, RunStore, RunStoreError, lock_run_dir
from .tasks import TASK_KINDS, TaskKind, task_kind
from .testsets import InvalidItem, TestItem, TestSet, load_asr_testset

__all__ = [
    "TASK_KINDS",
    "VERDICTS",
    "Budget",
    "CheckResult",
    "Controller",
    "Event",
    "InputError",
    "InvalidItem",
    "ItemFinished",
    "JobFinished",
    "JobResult",
    "JobStarted",
    "Journal",
    "LeaderboardRow",
    "Listener",
    "Notice",
    "Problem",
    "RunLocked",
    "RunStoreError",
    "SiteChanged",
    "RunState",
    "RunStore",
    "Site",
    "SiteError",
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
    "read_journal",
    "site_of_run",
    "task_kind",
]
