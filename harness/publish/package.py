"""`onsite package`: one participant's own results, and nothing of anyone else's.

    result = package(model, "team-a", Path("team-a"), IntervalSettings())

The directory holds, for each of the participant's systems and tasks, the per-item
outputs with their verdicts and times (``outputs.jsonl``), the job in each of its
kind's export formats, and ``scores.json`` (the leaderboard row with its interval and
rank, and every item's score); ``numbers.json``, the participant's systems with their
published numbers; ``tables/``, the published tables (harness/publish/write.py); and,
once the run's embargo has passed (``[site] release_after``) or when the operator
gives ``--with-references`` (journaled as ``references_released``), each task's
references and test inputs under ``references/`` and ``inputs/``.
"""

from __future__ import annotations

import datetime
import json
import shutil
from dataclasses import asdict, dataclass, is_dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem
from harness.publish.anonymize import Order
from harness.publish.write import (
    anonymized,
    fresh_directory,
    place,
    refuse_leaks,
    write_published,
)

if TYPE_CHECKING:
    from harness.leaderboard import LeaderboardRow
    from harness.significance import IntervalSettings
    from harness.store.run_model import RunModel


@dataclass(frozen=True)
class PackageResult:
    """What a package holds: whose, which systems (name -> label), whether references."""

    participant: str
    systems: dict[str, str]
    references: bool
    why: str  # why the references are in, or why not
    out: Path
    key_file: Path


def participants(model: RunModel) -> dict[str, list[str]]:
    """Each participant's systems (a system with no `participant` is its own)."""
    out: dict[str, list[str]] = {}
    for name in model.site.config.systems:
        out.setdefault(model.site.participant(name), []).append(name)
    return out


def released(model: RunModel, with_references: bool, today: datetime.date) -> tuple[bool, str]:
    """Whether references and test inputs go into a package, and why."""
    after = model.site.config.site.release_after
    if with_references:
        return True, "given by the operator (--with-references)"
    if after is None:
        return False, "the site file sets no release_after date: they stay embargoed"
    if today > after:
        return True, f"the embargo ended (release_after = {after.isoformat()})"
    return False, f"embargoed until after {after.isoformat()}"


def _plain(value: Any) -> Any:
    """A per-item statistic as JSON (tuples of counts, dataclasses, numpy numbers)."""
    if is_dataclass(value) and not isinstance(value, type):
        return _plain(asdict(value))
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    item = getattr(value, "item", None)  # a numpy scalar
    return item() if callable(item) else str(value)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _item_score(kind: Any, cfg: Any, stat: Any) -> float | None:
    """The headline over one item (an item's WER, its BLEU ...), None where it has none."""
    if stat is None:
        return None
    try:
        value = kind.aggregate(cfg, [stat])
    except (ValueError, ZeroDivisionError, TypeError):
        return None  # a set-level metric (an equal error rate) has no one-item value
    return float(value) if value is not None else None


def _job_files(
    model: RunModel, task: str, system: str, row: LeaderboardRow | None, label: str, out: Path
) -> list[str]:
    """One job's outputs, its export formats and its scores under ``out``; the formats
    that could not be written, each with why."""
    from harness.export import export_job, read_run
    from harness.significance import item_statistics

    job = read_run(model, task, system)
    skipped = []
    _write(out / "outputs.jsonl", export_job(job, "jsonl"))
    for fmt in job.kind.formats:
        if fmt == "jsonl":
            continue
        try:
            _write(out / f"{system}.{fmt}", export_job(job, fmt))
        except (InputError, ValueError) as exc:
            skipped.append(f"{task}/{system} {fmt}: {exc}")
    cfg = model.site.config.tasks[task]
    stats = item_statistics(model, task, [system]).get(system, {})
    items = []
    for item in job.testset.items:
        line = job.lines[item.id]
        stat = stats.get(item.id)
        items.append(
            {
                "id": item.id,
                "verdict": line.get("verdict"),
                "seconds": line.get("seconds"),
                "score": _item_score(job.kind, cfg, stat),
                "statistic": _plain(stat),
            }
        )
    scores = {
        "task": task,
        "system": system,
        "published_as": label,
        "row": _plain(row.to_dict()) if row is not None else None,
        "items": items,
    }
    _write(out / "scores.json", json.dumps(scores, indent=2, ensure_ascii=False) + "\n")
    return skipped


def _test_data(model: RunModel, task: str, out: Path) -> None:
    """The task's references in every export format, and its test inputs."""
    from harness.export import export_job, read_run

    testset = model.testset(task)
    # Any system of the task reads the whole set's references.
    system = next(s for s, c in model.site.config.systems.items() if task in c.tasks)
    job = replace(read_run(model, task, system), testset=testset)
    for fmt in job.kind.formats:
        try:
            _write(out / "references" / task / f"references.{fmt}", export_job(job, fmt, True))
        except (InputError, ValueError):
            continue  # a format without a reference file of its own
    inputs = out / "inputs" / task
    lines = []
    for item in testset.items:
        files = {}
        for name, path in item.files.items():
            try:
                relative = path.resolve().relative_to(testset.root.resolve())
            except ValueError:
                relative = Path(item.id) / path.name
            target = inputs / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            files[name] = str(relative)
        lines.append(
            json.dumps({"id": item.id, "files": files, "fields": _plain(dict(item.fields))},
                       ensure_ascii=False)
        )  # fmt: skip
    _write(inputs / "items.jsonl", "\n".join(lines) + "\n")


def _journal_release(model: RunModel, participant: str, tasks: list[str], out: Path) -> None:
    """Record the operator's early release in the run's journal."""
    import secrets

    from harness.store.directory import RunStore
    from harness.store.events import ReferencesReleased

    assert model.run_dir is not None  # package() refused a run without one
    after = model.site.config.site.release_after
    store = RunStore(model.run_dir, "package-" + secrets.token_hex(4), fsync_seconds=0)
    try:
        store.emit(
            ReferencesReleased(
                participant=participant,
                tasks=tasks,
                release_after=after.isoformat() if after else None,
                output=str(out.resolve()),
            )
        )
    finally:
        store.close()


def package(
    model: RunModel,
    participant: str,
    out: Path,
    settings: IntervalSettings,
    order: Order = "seeded",
    seed: int | None = None,
    with_references: bool = False,
    today: datetime.date | None = None,
) -> PackageResult:
    """Write ``participant``'s package to ``out`` (a new directory) and the key beside it.

    ``participant`` is a site file's `participant`, or the name of a system that has
    none; InputError lists them for any other name.
    """
    from harness.publish.anonymize import write_key

    teams = participants(model)
    if participant not in teams:
        # A system's name where its participant was meant: say whose it is.
        owner = (
            f" ({participant!r} is a system of {model.site.participant(participant)!r})"
            if participant in model.site.config.systems
            else ""
        )
        raise InputError(
            [
                Problem(
                    model.where,
                    "--participant",
                    f"no participant {participant!r}{owner}",
                    f"use one of: {', '.join(sorted(teams))}",
                )
            ]
        )
    if with_references and model.run_dir is None:
        raise InputError(
            [
                Problem(
                    model.where,
                    "--with-references",
                    "a run in PostgreSQL cannot record the release here",
                    "copy the run to a directory first (onsite copy-run), or wait for "
                    "the embargo to end",
                )
            ]
        )
    systems = teams[participant]
    entered = {t for s in systems for t in model.site.config.systems[s].tasks}
    tasks = [t for t in model.site.config.tasks if t in entered]
    give, why = released(model, with_references, today or datetime.date.today())
    result = anonymized(model, settings, order, seed)
    rows = {(r.task, r.system): r for r in result.rows}
    partial = fresh_directory(out)
    try:
        (partial / "tables").mkdir()
        write_published(result.published, partial / "tables")
        labels = {s: result.key.label(s) for s in systems}
        skipped: list[str] = []
        for system in systems:
            for task in model.site.config.systems[system].tasks:
                if task in model.site.config.tasks:
                    skipped += _job_files(
                        model, task, system, rows.get((task, system)), labels[system],
                        partial / system / task,
                    )  # fmt: skip
        if give:
            for task in tasks:
                _test_data(model, task, partial)
        numbers = {
            "participant": participant,
            "systems": [
                {"system": s, "published_as": labels[s], "tasks": list(
                    model.site.config.systems[s].tasks)}
                for s in systems
            ],
            "numbering": "by rank" if order == "rank" else "random",
            "references": give,
            "references_why": why,
            "formats_left_out": skipped,
        }  # fmt: skip
        _write(partial / "numbers.json", json.dumps(numbers, indent=2, ensure_ascii=False) + "\n")
        _write(partial / "README.txt", _readme(participant, labels, give, why))
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    # The tables must hold no name; the rest is the participant's own.
    refuse_leaks(partial / "tables", partial, out, result.secrets)
    if give and with_references:
        try:
            _journal_release(model, participant, tasks, out)
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
    place(partial, out)
    return PackageResult(
        participant, labels, give, why, out, write_key(result.key, out, model.location)
    )


def _readme(participant: str, labels: dict[str, str], give: bool, why: str) -> str:
    lines = [
        f"Results package for {participant}.",
        "",
        "Your systems and their names in the published tables (tables/index.html):",
        *(f"  {system}: {label}" for system, label in labels.items()),
        "",
        "For each system and task, SYSTEM/TASK/ holds outputs.jsonl (every item's output,",
        "verdict and seconds, as the run recorded them), the outputs in the task's file",
        "formats, and scores.json (the table row with its 95% interval and rank range, and",
        "every item's score).",
        "",
        "References and test inputs: "
        + ("in references/ and inputs/ (" + why + ")." if give else f"not included ({why})."),
        "",
    ]
    return "\n".join(lines)
