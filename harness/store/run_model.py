"""One read model of a run: its site, its replayed records and its test sets.

The leaderboard and the report (``onsite report``, ``build_report``) read a run
through one ``RunModel``: the site file is loaded once, the records replayed once and
each test set loaded once, however many readers ask. The replay keeps each item's
first completion and a small summary per job and per session (``JobSummary``,
``SessionSummary``), not every record: dispatches and other records are read and let go.
A run is opened where it is kept (harness/store/api.py): a run directory, or
``postgresql://HOST/DB?run=NAME``, read straight from the database.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from harness.kinds.registry import task_kind
from harness.site import Site
from harness.store.api import RunSource, open_source
from harness.store.directory import RunState
from harness.testsets import TestSet


@dataclass
class RunModel:
    """A run read once: ``site``, ``state`` (the records replayed), test sets.

    ``location`` names the run to people (the run directory, or the PostgreSQL URL
    without its password); ``run_dir`` is the directory holding the run's files
    (outputs, media, logs, judging, manifest), None for a run in PostgreSQL, whose files
    stay on its stations' disks; ``where`` is the path errors about the run name.
    """

    site: Site
    state: RunState
    location: str
    run_dir: Path | None
    where: Path
    _testsets: dict[str, TestSet] = field(default_factory=dict, repr=False)

    @classmethod
    def open(
        cls,
        run: Path | str | RunSource,
        site: Site | None = None,
        testsets: dict[str, TestSet] | None = None,
    ) -> RunModel:
        """Read a run: a run directory, ``postgresql://HOST/DB?run=NAME``, or a source
        already open (left open); ``site`` and ``testsets`` save loading what a caller has."""
        source = open_source(run) if isinstance(run, Path | str) else run
        try:
            return cls(
                site=site or source.site(),
                # The answers (to score), a summary per job and session; not every record.
                state=RunState.from_lines(source.lines(), keep_records=False, keep_answers=True),
                location=source.location,
                run_dir=source.run_dir,
                where=source.where,
                _testsets=dict(testsets or {}),
            )
        finally:
            if source is not run:
                source.close()

    @classmethod
    def after_run(
        cls, run_dir: Path, site: Site, state: RunState, testsets: dict[str, TestSet]
    ) -> RunModel:
        """The run a controller has just closed in ``run_dir``, from its own state
        (``RunState.with_answers``) instead of a second replay of the whole journal."""
        answers = state.with_answers(run_dir / "journal.jsonl")
        return cls(
            site=site,
            state=answers,
            location=str(run_dir.resolve()),
            run_dir=run_dir,
            where=run_dir,
            _testsets=dict(testsets),
        )

    def testset(self, task: str) -> TestSet:
        """The task's test set, loaded on first use and kept.

        An ``ir`` task with ``qrels = "judging"`` gets the judgements of the run's pooled
        relevance panel (harness/judge/qrels.py), so every reader scores against them.
        """
        if task not in self._testsets:
            cfg = self.site.config.tasks[task]
            testset = task_kind(cfg.kind).load_testset(self.site.testset_path(task), cfg)
            if getattr(cfg, "qrels", None) == "judging" and self.run_dir is not None:
                from harness.judge.qrels import with_judged_qrels

                testset = with_judged_qrels(testset, self.run_dir, task)
            self._testsets[task] = testset
        return self._testsets[task]

    @property
    def testsets(self) -> dict[str, TestSet]:
        """Every task's test set, by task (loads the ones not loaded yet)."""
        return {task: self.testset(task) for task in self.site.config.tasks}
