"""Rendering for the CLI: rich on a terminal, plain lines otherwise (pipes, CI)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from .events import (
    Event,
    ItemFinished,
    JobFinished,
    JobStarted,
    Notice,
    SystemLost,
    SystemStarted,
)
from .leaderboard import LeaderboardRow, quality_so_far
from .site import Site
from .tasks import task_kind
from .testsets import TestSet

_VERDICT_STYLE = {
    "ok": "green",
    "over_budget": "yellow",
    "timeout": "red",
    "crashed": "red",
    "error": "magenta",
    "invalid_output": "magenta",
}


def make_console() -> Console:
    """A console that is fancy only on a real terminal outside CI."""
    plain = bool(os.environ.get("CI")) or not Console().is_terminal
    if plain:
        return Console(no_color=True, highlight=False, emoji=False, width=240)
    return Console()


def is_plain(console: Console) -> bool:
    """True when output goes to a pipe, a file or CI."""
    return not console.is_terminal or console.no_color


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


class ProgressListener:
    """Shows a run as it goes: a bar per job on a terminal, one line per event otherwise.

    With the site and its test sets, each bar also shows the ETA, the mean speed in the
    task's unit and the quality so far (rescored at most every QUALITY_SECONDS per job).
    """

    QUALITY_SECONDS = 1.0

    def __init__(
        self,
        console: Console,
        verbose_items: bool | None = None,
        testsets: Mapping[str, TestSet] | None = None,
        site: Site | None = None,
    ) -> None:
        self.console = console
        self.plain = is_plain(console)
        self.verbose_items = self.plain if verbose_items is None else verbose_items
        self.testsets = testsets or {}
        self.site = site
        self._progress: Progress | None = None
        self._tasks: dict[tuple[str, str], Any] = {}
        self._done: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._scored_at: dict[tuple[str, str], float] = {}

    def __enter__(self) -> ProgressListener:
        if not self.plain:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(bar_width=12),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[speed]}"),
                TextColumn("{task.fields[quality]}"),
                TextColumn("{task.fields[last]}"),
                console=self.console,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def _figures(self, key: tuple[str, str], force: bool = False) -> dict[str, str]:
        """Speed (mean in the task's unit) and quality so far of one job, as short text."""
        task = key[0]
        records = self._done.get(key, [])
        if self.site is None or task not in self.site.config.tasks:
            return {}
        cfg = self.site.config.tasks[task]
        kind = task_kind(cfg.kind)
        speeds = [r["speed"] for r in records if r["speed"] is not None]
        unit = _UNITS.get(kind.speed_unit, kind.speed_unit)
        out = {"speed": f"{sum(speeds) / len(speeds):.2f} {unit}" if speeds else ""}
        now = time.monotonic()
        testset = self.testsets.get(task)
        if testset is not None and (
            force or now - self._scored_at.get(key, 0.0) >= self.QUALITY_SECONDS
        ):
            self._scored_at[key] = now
            value = quality_so_far(kind, cfg, testset, records)
            name = _METRIC_NAMES.get(kind.metric(cfg), kind.metric(cfg))
            out["quality"] = f"{name} {_pct(value)}" if value is not None else ""
        return out

    def _say(self, text: str) -> None:
        if self._progress is not None:
            self._progress.console.print(text)
        else:
            self.console.print(text, markup=False)

    def __call__(self, event: Event) -> None:
        key = (getattr(event, "task", ""), getattr(event, "system", ""))
        match event:
            case JobStarted(task, system, total, done):
                if self._progress is not None:
                    self._tasks[key] = self._progress.add_task(
                        f"{task} / {system}",
                        total=total,
                        completed=done,
                        last="",
                        speed="",
                        quality="",
                    )
                else:
                    self._say(f"{task} {system}: start, {done}/{total} items already done")
            case SystemStarted(task, system, name, version, setup, restart):
                what = "restarted" if restart else "ready"
                self._say(f"{task} {system}: {what} ({name} {version}) setup {setup:.2f} s")
            case ItemFinished(task, system, item, attempt, verdict, seconds, budget, message):
                if not event.audit:
                    self._done.setdefault(key, []).append(
                        {
                            "item": item,
                            "verdict": verdict,
                            "seconds": seconds,
                            "speed": event.speed,
                            "output": event.output,
                        }
                    )
                if self._progress is not None and key in self._tasks:
                    self._progress.update(
                        self._tasks[key],
                        advance=0 if event.audit else 1,
                        last=verdict,
                        **self._figures(key),
                    )
                if self.verbose_items or verdict != "ok":
                    budget_text = f" / budget {budget:.2f} s" if budget is not None else ""
                    extra = f" - {message}" if message and verdict != "ok" else ""
                    attempt_text = f" (attempt {attempt})" if attempt > 1 else ""
                    self._say(
                        f"{task} {system} {item}{attempt_text}: {verdict} "
                        f"{seconds:.3f} s{budget_text}{extra}"
                    )
            case SystemLost(task, system, reason):
                self._say(f"{task} {system}: system lost ({reason}); restarting")
            case JobFinished(task, system, completed, total, failed):
                if self._progress is not None and key in self._tasks:
                    self._progress.update(self._tasks[key], **self._figures(key, force=True))
                status = f"FAILED: {failed}" if failed else "done"
                self._say(f"{task} {system}: {status}, {completed}/{total} items completed")
            case Notice(task, message):
                self._say(f"{task}: {message}")


_METRIC_NAMES = {
    "wer": "WER",
    "cer": "CER",
    "correct_rate": "correct",
    "slot_rate": "slots",
    "recognition_rate": "R",
    "correct_detection_rate": "detected",
    "eer": "EER",
}

_UNITS = {
    "rtf": "rtf",
    "chars_per_second": "char/s",
    "ms_per_frame": "ms/frame",
    "ms_per_pair": "ms/pair",
}

LEADERBOARD_COLUMNS = (
    "task",
    "system",
    "items",
    "scored",
    "quality",
    "speed",
    "p95",
    "max",
    "unit",
    "over",
    "t/o",
    "crash",
    "err",
    "inval",
    "restart",
    "setup s",
    "set budget s",
)


def _set_budget(row: LeaderboardRow) -> str:
    if row.total_budget_seconds is None:
        return "-"
    if row.budget_scope != "set":
        return f"{row.total_seconds:.1f}/{row.total_budget_seconds:.1f}"
    verdict = "met" if row.set_budget_met else "MISSED"
    return f"{row.total_seconds:.1f}/{row.total_budget_seconds:.1f} {verdict}"


def leaderboard_table(rows: Sequence[LeaderboardRow]) -> Table:
    """The leaderboard as a rich table: quality, speed, stability per task and system."""
    out = Table(
        title="Leaderboard",
        caption="quality: the task's headline metric over completed items (a failed item "
        "counts as wrong; for WER its words count as deletions). speed: mean, p95, max per "
        "item in the unit shown (rtf = processing / audio seconds; chars/second over the "
        "set). over: answers past the item budget; t/o: timeouts; err: error answers; "
        "inval: invalid outputs; restart: the participant's (+Nv: the venue's lost links, "
        "never charged)",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    for column in LEADERBOARD_COLUMNS:
        out.add_column(
            column, justify="left" if column in ("task", "system") else "right", no_wrap=True
        )
    for row in rows:
        out.add_row(
            row.task,
            row.system + (" (unsealed)" if row.unsealed else ""),
            f"{row.completed}/{row.items}",
            str(row.scored),
            f"{_METRIC_NAMES.get(row.metric, row.metric)} {_pct(row.score)}",
            row.detail + (f"; late {_pct(row.late_rate)}" if row.late_rate is not None else ""),
            _num(row.speed_mean),
            _num(row.speed_p95),
            _num(row.speed_max),
            _UNITS.get(row.speed_unit, row.speed_unit),
            str(row.over_budget),
            str(row.timeouts),
            str(row.crashes),
            str(row.errors),
            str(row.invalid_outputs),
            str(row.restarts) + (f" +{row.venue_failures}v" if row.venue_failures else ""),
            _num(row.setup_seconds),
            _set_budget(row),
        )
    return out


def table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> Table:
    """A plain rich table of strings."""
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        out.add_column(column)
    for row in rows:
        out.add_row(*("-" if v is None else str(v) for v in row))
    return out


def verdict_style(verdict: str) -> str:
    """The colour a verdict is shown in."""
    return _VERDICT_STYLE.get(verdict, "")
