"""`onsite publish`: the anonymized results of a run written to a directory, checked byte
for byte for the site file's names before it takes the directory's name.

    published, key = publish(model, Path("results"))   # results/ and results.key.json

The directory holds ``index.html``, ``results.csv``, ``results.json`` and
``figures/<task>[-<track>].svg``; the key (system -> number, team) goes beside it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import InputError, Problem
from harness.publish.anonymize import (
    Key,
    Order,
    Secret,
    find_leaks,
    make_key,
    public_words,
    searched,
    secrets,
)
from harness.publish.figure import figure_svg
from harness.publish.html import html_text
from harness.publish.tables import Published, published_tables, ranked_rows

if TYPE_CHECKING:
    from harness.leaderboard import LeaderboardRow
    from harness.significance import IntervalSettings
    from harness.store.run_model import RunModel

CSV_COLUMNS = (
    "task", "track", "rank", "system", "run_type", "declarations", "metric", "score",
    "ci_low", "ci_high", "speed_unit", "speed_mean", "speed_p95", "items", "completed",
    "over_budget", "timeouts", "crashes", "errors", "invalid_outputs", "restarts",
    "set_budget_met", "detail", "by_condition",
)  # fmt: skip


def csv_text(published: Published) -> str:
    """One line per table row."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for table in published.tables:
        for row in table.rows:
            writer.writerow(
                {
                    "task": table.task, "track": table.track or "", "rank": row.rank,
                    "system": row.label, "run_type": row.run_type or "",
                    "declarations": row.declarations, "metric": table.metric,
                    "score": row.score, "ci_low": row.ci_low, "ci_high": row.ci_high,
                    "speed_unit": table.speed_unit, "speed_mean": row.speed_mean,
                    "speed_p95": row.speed_p95, "items": row.items,
                    "completed": row.completed, "over_budget": row.over_budget,
                    "timeouts": row.timeouts, "crashes": row.crashes, "errors": row.errors,
                    "invalid_outputs": row.invalid_outputs, "restarts": row.restarts,
                    "set_budget_met": "" if row.set_budget_met is None else row.set_budget_met,
                    "detail": row.detail,
                    "by_condition": ";".join(f"{p}={v}" for p, v in row.breakdown),
                }
            )  # fmt: skip
    return out.getvalue()


def write_published(published: Published, out: Path) -> list[Path]:
    """Write the tables into ``out`` (which exists): HTML, CSV, JSON and the figures."""
    (out / "figures").mkdir(exist_ok=True)
    files = {
        out / "index.html": html_text(published),
        out / "results.csv": csv_text(published),
        out / "results.json": json.dumps(published.to_dict(), indent=2, ensure_ascii=False) + "\n",
        **{out / "figures" / f"{t.stem}.svg": figure_svg(t) for t in published.tables},
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return list(files)


@dataclass(frozen=True)
class Anonymized:
    """What publishing a run needs once: the key, the ranked rows' tables, the secrets."""

    key: Key
    published: Published
    secrets: tuple[Secret, ...]  # the ones looked for in every written file
    rows: tuple[LeaderboardRow, ...]  # the tables' rows, with their names, ranked


def anonymized(
    model: RunModel,
    settings: IntervalSettings,
    order: Order = "seeded",
    seed: int | None = None,
    track: str | None = None,
) -> Anonymized:
    """The key over every system of the run, and the tables (of one track, if given)."""
    from harness.leaderboard import leaderboard

    every = leaderboard(model)
    if track is not None:
        tracks = sorted({r.track for r in every if r.track})
        if track not in tracks:
            raise InputError(
                [
                    Problem(
                        model.where,
                        "--track",
                        f"no system entered track {track!r}",
                        f"use one of: {', '.join(tracks)}"
                        if tracks
                        else "leave --track out: no system of this run names a track",
                    )
                ]
            )
    key = make_key(model.site, every, order, seed)
    rows = ranked_rows(model, [r for r in every if track is None or r.track == track], settings)
    found = secrets(model.site)
    published = published_tables(model, rows, key, found, settings, track)
    public = public_words(model.site, every)
    return Anonymized(key, published, tuple(searched(found, public)), tuple(rows))


def fresh_directory(out: Path) -> Path:
    """A new directory beside ``out`` to write into before it takes ``out``'s name;
    InputError when ``out`` exists and is not empty."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(
            [Problem(out, "-o", "exists and is not empty", "give a new or empty directory")]
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir()
    return partial


def refuse_leaks(scanned: Path, partial: Path, out: Path, found: tuple[Secret, ...]) -> None:
    """Scan every file under ``scanned`` (in ``partial``) for the site's names; when one
    is found, remove ``partial`` and raise InputError naming each file and name."""
    leaks = find_leaks(scanned, found)
    if leaks:
        shutil.rmtree(partial, ignore_errors=True)
        raise InputError(
            [
                Problem(
                    out / leak.path.relative_to(partial),
                    leak.secret.where,
                    f"would publish {leak.secret.text!r}",
                    "nothing was written; rename what the site file calls it or report this",
                )
                for leak in leaks
            ]
        )


def place(partial: Path, out: Path) -> None:
    """Give the finished directory its name (``out``, absent or empty)."""
    if out.exists():
        out.rmdir()
    os.replace(partial, out)


def publish(
    model: RunModel,
    out: Path,
    settings: IntervalSettings,
    order: Order = "seeded",
    seed: int | None = None,
    track: str | None = None,
) -> tuple[Anonymized, Path]:
    """Write the anonymized tables to ``out`` and the key beside it; the key's path."""
    from harness.publish.anonymize import write_key

    result = anonymized(model, settings, order, seed, track)
    partial = fresh_directory(out)
    write_published(result.published, partial)
    refuse_leaks(partial, partial, out, result.secrets)
    place(partial, out)
    return result, write_key(result.key, out, model.location)
