"""One read model of a run directory: its site, its replayed journal and its test sets.

The leaderboard and the report (``onsite report``, ``build_report``) read a run
through one ``RunModel``: the site file is loaded once, the journal replayed once and
each test set loaded once, however many readers ask. The replay keeps each item's
first completion and a small summary per job and per session (``JobSummary``,
``SessionSummary``), not every record: dispatches and other records are read and let go.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .kinds.registry import task_kind
from .run_site import site_of_run
from .site import Site
from .store import RunState
from .testsets import TestSet


@dataclass
class RunModel:
    """A run directory read once: ``site``, ``state`` (the journal replayed), test sets."""

    run_dir: Path
    site: Site
    state: RunState
    _testsets: dict[str, TestSet] = field(default_factory=dict, repr=False)

    @classmethod
    def open(
        cls,
        run_dir: Path | str,
        site: Site | None = None,
        testsets: dict[str, TestSet] | None = None,
    ) -> RunModel:
        """Read a run directory; ``site`` and ``testsets`` save loading what a caller has."""
        run_dir = Path(run_dir)
        return cls(
            run_dir=run_dir,
            site=site or site_of_run(run_dir),
            # The answers (to score), a summary per job and session; not every record.
            state=RunState.from_journal(
                run_dir / "journal.jsonl", keep_records=False, keep_answers=True
            ),
            _testsets=dict(testsets or {}),
        )

    @classmethod
    def after_run(
        cls, run_dir: Path, site: Site, state: RunState, testsets: dict[str, TestSet]
    ) -> RunModel:
        """The run a controller has just closed, from its own state (``RunState.with_answers``)
        instead of a second replay of the whole journal."""
        answers = state.with_answers(run_dir / "journal.jsonl")
        return cls(run_dir=run_dir, site=site, state=answers, _testsets=dict(testsets))

    def testset(self, task: str) -> TestSet:
        """The task's test set, loaded on first use and kept."""
        if task not in self._testsets:
            cfg = self.site.config.tasks[task]
            self._testsets[task] = task_kind(cfg.kind).load_testset(
                self.site.testset_path(task), cfg
            )
        return self._testsets[task]

    @property
    def testsets(self) -> dict[str, TestSet]:
        """Every task's test set, by task (loads the ones not loaded yet)."""
        return {task: self.testset(task) for task in self.site.config.tasks}
