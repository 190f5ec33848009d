"""`onsite export`: a run's outputs (and, for organizers, references) in the fields' own formats.

One job of a run is read as the leaderboard reads it (`harness.leaderboard.scoring_inputs`):
the items the job completed, in test-set order; the outputs of the answered ones
(verdict ok or over_budget); every other completed item is written as an empty
hypothesis, as the live scoring counts it. Which formats fit a kind is the kind's
``formats`` (harness/kinds/); the writers are in harness/export/writers.py;
docs/formats.md shows each file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, Problem
from ..kinds.base import TaskKind
from ..testsets import TestSet

__all__ = [
    "Job",
    "export",
    "export_job",
    "formats_of",
    "read_run",
]


@dataclass(frozen=True)
class Job:
    """One job of a run as its scorer sees it.

    ``testset`` holds the items the job completed (all of them once the job is
    done); ``outputs`` the answers of the answered items; ``lines`` the run's
    output line (docs/run-directory.md) of every completed item; ``seconds``
    each completed item's processing seconds; ``total`` the test set's size.
    """

    run_dir: Path
    task: str
    system: str
    kind: TaskKind
    config: Any  # the site's task model (common keys and the kind's options)
    testset: TestSet
    outputs: Mapping[str, Mapping[str, Any] | None]
    lines: Mapping[str, Mapping[str, Any]]
    seconds: Mapping[str, float]
    total: int

    def answer(self, item: str) -> Mapping[str, Any] | None:
        """The item's output when it was answered, else None."""
        out = self.outputs.get(item)
        return out if isinstance(out, Mapping) else None

    def text(self, item: str) -> str:
        """The item's hypothesis text, empty when the item was not answered."""
        out = self.answer(item)
        text = out.get("text") if out else None
        return text if isinstance(text, str) else ""

    @property
    def complete(self) -> bool:
        """Every item of the test set was completed."""
        return len(self.testset.items) == self.total


def _choice(run_dir: Path, flag: str, what: str, given: str | None, names: list[str]) -> str:
    """``given`` if it is one of ``names``; the only name when none is given."""
    if given is None and len(names) == 1:
        return names[0]
    if given is None or given not in names:
        message = f"no {what} {given!r}" if given is not None else f"which {what}?"
        raise InputError([Problem(run_dir, flag, message, f"use one of: {', '.join(names)}")])
    return given


def read_run(
    run_dir: Path, task: str | None, system: str | None, kinds: tuple[str, ...] = ()
) -> Job:
    """Read one job from a run directory (the one place export and `score --run` read runs).

    ``task`` or ``system`` may be None when the run has one choice (of one of
    ``kinds``, if given). Raises InputError naming the flag and the choices.
    """
    from ..leaderboard import scoring_inputs
    from ..run_model import RunModel
    from ..store import output_line

    model = RunModel.open(run_dir)
    site = model.site
    tasks = list(site.config.tasks)
    fitting = [t for t in tasks if not kinds or site.config.tasks[t].kind in kinds]
    # Left out, the task is the run's only one (of the kinds asked for).
    task = _choice(run_dir, "--task", "task", task, fitting or tasks if task is None else tasks)
    systems = [s for s, c in site.config.systems.items() if task in c.tasks]
    system = _choice(run_dir, "--system", "system", system, systems)
    cfg = site.config.tasks[task]
    from ..kinds.registry import task_kind

    kind = task_kind(cfg.kind)
    full = model.testset(task)
    known = {item.id for item in full.items}
    records = [r for r in model.state.completed.get((task, system), {}).values() if r.item in known]
    attempted, outputs, seconds = scoring_inputs(full, records)
    lines = {r.item: output_line(r) for r in records}
    return Job(
        run_dir, task, system, kind, cfg, attempted, outputs, lines, seconds, len(full.items)
    )


def formats_of(kind: str) -> tuple[str, ...]:
    """The export formats a kind supports (its ``formats``)."""
    from ..kinds.registry import task_kind

    return task_kind(kind).formats


def export(
    run_dir: Path, task: str | None, system: str | None, fmt: str, references: bool = False
) -> str:
    """The job's outputs (or the task's references) as the text of a `fmt` file."""
    return export_job(read_run(run_dir, task, system), fmt, references)


def export_job(job: Job, fmt: str, references: bool = False) -> str:
    """A job read by `read_run` as the text of a `fmt` file; InputError if `fmt` does not fit."""
    from .writers import WRITERS

    run_dir = job.run_dir
    allowed = job.kind.formats
    if fmt not in allowed or fmt not in WRITERS:
        raise InputError(
            [
                Problem(
                    run_dir,
                    "--format",
                    f"format {fmt!r} does not fit task {job.task!r} (kind {job.kind.name})",
                    f"use one of: {', '.join(f for f in allowed if f in WRITERS)}",
                )
            ]
        )
    return WRITERS[fmt](job, references)
