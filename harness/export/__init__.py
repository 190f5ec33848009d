"""`onsite export` and `onsite score FAMILY --run`: a run's jobs through their kinds' files.

One job of a run is read as the leaderboard reads it (`harness.leaderboard.scoring_inputs`):
the items the job completed, in test-set order; the outputs of the answered ones
(verdict ok or over_budget); every other completed item is written as an empty
hypothesis, as the live scoring counts it. The rest is the kind's
(harness/kinds/): which formats it writes and how (``formats``), and how each
`onsite score` family reads one of its jobs (``from_run``); this package knows
no kind by name. docs/formats.md shows each file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem
from harness.kinds.base import JobData

if TYPE_CHECKING:
    from harness.store.run_model import RunModel

__all__ = [
    "JobData",
    "export",
    "export_job",
    "formats_of",
    "read_run",
    "run_arguments",
]


def _choice(run_dir: Path, flag: str, what: str, given: str | None, names: list[str]) -> str:
    """``given`` if it is one of ``names``; the only name when none is given."""
    if given is None and len(names) == 1:
        return names[0]
    if given is None or given not in names:
        message = f"no {what} {given!r}" if given is not None else f"which {what}?"
        raise InputError([Problem(run_dir, flag, message, f"use one of: {', '.join(names)}")])
    return given


def read_run(
    run: Path | str | RunModel,
    task: str | None,
    system: str | None,
    kinds: tuple[str, ...] = (),
) -> JobData:
    """Read one job of a run (the one place export and `score --run` read runs): a run
    directory or ``postgresql://HOST/DB?run=NAME``, as `RunModel.open` takes it.

    ``run`` may also be a run already read (`onsite compare`'s).
    ``task`` or ``system`` may be None when the run has one choice (of one of
    ``kinds``, if given). Raises InputError naming the flag and the choices.
    """
    from harness.kinds.registry import task_kind
    from harness.leaderboard import scoring_inputs
    from harness.store.directory import output_line
    from harness.store.run_model import RunModel

    model = run if isinstance(run, RunModel) else RunModel.open(run)
    # The path errors about the run name (never a database password).
    run_dir = model.where
    site = model.site
    tasks = list(site.config.tasks)
    fitting = [t for t in tasks if not kinds or site.config.tasks[t].kind in kinds]
    # Left out, the task is the run's only one (of the kinds asked for).
    task = _choice(run_dir, "--task", "task", task, fitting or tasks if task is None else tasks)
    systems = [s for s, c in site.config.systems.items() if task in c.tasks]
    system = _choice(run_dir, "--system", "system", system, systems)
    cfg = site.config.tasks[task]
    kind = task_kind(cfg.kind)
    full = model.testset(task)
    known = {item.id for item in full.items}
    records = [r for r in model.state.completed.get((task, system), {}).values() if r.item in known]
    attempted, outputs, seconds = scoring_inputs(full, records)
    lines = {r.item: output_line(r) for r in records}
    return JobData(
        run_dir, task, system, kind, cfg, attempted, outputs, lines, seconds, len(full.items)
    )


def formats_of(kind: str) -> tuple[str, ...]:
    """The export formats a kind supports (its ``formats``)."""
    from harness.kinds.registry import task_kind

    return tuple(task_kind(kind).formats)


def export(
    run: Path | str, task: str | None, system: str | None, fmt: str, references: bool = False
) -> str:
    """The job's outputs (or the task's references) as the text of a `fmt` file."""
    return export_job(read_run(run, task, system), fmt, references)


def export_job(job: JobData, fmt: str, references: bool = False) -> str:
    """A job read by `read_run` as the text of a `fmt` file; InputError if `fmt` does not fit."""
    writer = job.kind.formats.get(fmt)
    if writer is None:
        raise InputError(
            [
                Problem(
                    job.run_dir,
                    "--format",
                    f"format {fmt!r} does not fit task {job.task!r} (kind {job.kind.name})",
                    f"use one of: {', '.join(job.kind.formats)}",
                )
            ]
        )
    return writer(job, references)


def run_arguments(
    family: str, run: Path | str, task: str | None, system: str | None, directory: Path
) -> tuple[JobData, dict[str, Any]]:
    """`onsite score FAMILY --run`: the job, and the family's argument values from the
    job's kind (its ``from_run``), with their files written under ``directory``."""
    from harness.kinds.registry import run_kinds

    kinds = tuple(k.name for k in run_kinds(family))
    job = read_run(run, task, system, kinds)
    how = job.kind.from_run.get(family)
    if how is None:
        raise InputError(
            [
                Problem(
                    job.run_dir,
                    "--task",
                    f"task {job.task!r} is of kind {job.kind.name}, which "
                    f"`onsite score {family}` does not score",
                    f"give a task of kind {' or '.join(kinds)}",
                )
            ]
        )
    return job, how.args(job, directory)
