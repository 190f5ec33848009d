"""Rendering for the CLI: rich on a terminal, plain lines otherwise (pipes, CI)."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console, Group
from rich.table import Column, Table
from rich.text import Text

from harness.cli.terminal import is_plain, printable
from harness.store.events import (
    Completed,
    Dispatched,
    Event,
    JobFailed,
    JobFinished,
    JobSkipped,
    JobStarted,
    LinkLost,
    Notice,
    StartFailed,
    SystemLost,
    SystemStarted,
)

if TYPE_CHECKING:
    # Only for annotations: the leaderboard, site files (pydantic) and task kinds load
    # the scorers, which `onsite score` and `onsite --help` never need.
    from rich.progress import Progress

    from harness.leaderboard import LeaderboardRow
    from harness.site import Site
    from harness.testsets import TestSet

_VERDICT_STYLE = {
    "ok": "green",
    "over_budget": "yellow",
    "timeout": "red",
    "crashed": "red",
    "error": "magenta",
    "invalid_output": "magenta",
}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _num(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


class ProgressListener:
    """Shows a run as it goes: a bar per job on a terminal, one line per event otherwise.

    With the site and its test sets, each bar also shows the ETA, the mean speed in the
    task's unit and the quality so far (rescored at most every QUALITY_SECONDS per job).
    The answers rescored are read back from the job's outputs file (``outputs`` gives its
    path) at each rescoring, so the display keeps no answer in memory between two.
    """

    QUALITY_SECONDS = 1.0
    # Rescoring never takes more than 1/QUALITY_SHARE of the time: a rescore that took
    # t seconds waits at least QUALITY_SHARE * t before the next (large sets, long runs).
    QUALITY_SHARE = 20.0
    # Printing must never cost more than the items it reports: past ITEM_LINES_PER_SECOND
    # item lines in one second, lines are counted instead of printed, and a progress line
    # per job (at most every PROGRESS_SECONDS) says where the job is and how many it left out.
    ITEM_LINES_PER_SECOND = 20
    PROGRESS_SECONDS = 2.0

    def __init__(
        self,
        console: Console,
        verbose_items: bool | None = None,
        testsets: Mapping[str, TestSet] | None = None,
        site: Site | None = None,
        outputs: Callable[[str, str], Path] | None = None,
    ) -> None:
        self.console = console
        self.plain = is_plain(console)
        self.verbose_items = self.plain if verbose_items is None else verbose_items
        self.testsets = testsets or {}
        self.site = site
        self.outputs = outputs
        self._progress: Progress | None = None
        self._tasks: dict[tuple[str, str], Any] = {}
        self._scored_at: dict[tuple[str, str], float] = {}
        self._speeds: dict[tuple[str, str], tuple[float, int]] = {}
        # Item lines: the current one-second window, lines printed in it, and per job
        # (done, total, lines left out) for the throttled progress line.
        self._window = 0.0
        self._lines = 0
        self._counts: dict[tuple[str, str], list[int]] = {}
        self._unshown: dict[tuple[str, str], int] = {}
        self._progress_at = 0.0

    def __enter__(self) -> ProgressListener:
        if not self.plain:
            # Long job names wrap; the figures never shrink to "…" (80-column terminals).
            # Imported here: only run and check show progress bars.
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            def fixed() -> Column:
                return Column(no_wrap=True)

            self._progress = Progress(
                TextColumn("{task.description}", table_column=Column(overflow="fold", ratio=1)),
                BarColumn(bar_width=8, table_column=fixed()),
                MofNCompleteColumn(table_column=fixed()),
                TimeRemainingColumn(compact=True, table_column=fixed()),
                TextColumn("{task.fields[speed]}", table_column=fixed()),
                TextColumn("{task.fields[quality]}", table_column=fixed()),
                TextColumn("{task.fields[last]}", table_column=Column(overflow="fold")),
                console=self.console,
                expand=True,
            )
            self._progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def _figures(self, key: tuple[str, str], force: bool = False) -> dict[str, Any]:
        """Speed (mean in the task's unit) and quality so far of one job, as short text."""
        task = key[0]
        if self.site is None or task not in self.site.config.tasks:
            return {}
        cfg = self.site.config.tasks[task]
        from harness.kinds.registry import task_kind

        kind = task_kind(cfg.kind)
        # A running sum: the mean speed costs the same at the last item as at the first.
        total, count = self._speeds.get(key, (0.0, 0))
        unit = kind.unit.short
        out = {"speed": f"{total / count:.2f} {unit}" if count else ""}
        now = time.monotonic()
        testset = self.testsets.get(task)
        if (
            testset is not None
            and self.outputs is not None
            and (force or now >= self._scored_at.get(key, 0.0))
        ):
            from harness.leaderboard import quality_so_far
            from harness.store.directory import read_outputs_file

            records = read_outputs_file(self.outputs(*key))
            value = quality_so_far(kind, cfg, testset, records)
            spent = time.monotonic() - now
            self._scored_at[key] = now + max(self.QUALITY_SECONDS, self.QUALITY_SHARE * spent)
            name = kind.metric_label(kind.metric(cfg))
            out["quality"] = f"{name} {_pct(value)}" if value is not None else ""
        return out

    def _say(self, text: str) -> None:
        # A line may carry what a participant wrote (its ready name, stderr, messages):
        # never markup, and no control character reaches the terminal.
        text = printable(text)
        if self._progress is not None:
            self._progress.console.print(text, markup=False, highlight=False)
        else:
            self.console.print(text, markup=False)

    def _line_allowed(self, key: tuple[str, str]) -> bool:
        """Whether one item's line may be printed now: not once this second's share of item
        lines is used up (the line is then counted, and never even formatted)."""
        now = time.monotonic()
        if now - self._window >= 1.0:
            self._window, self._lines = now, 0
        allowed = self._lines < self.ITEM_LINES_PER_SECOND
        if allowed:
            self._lines += 1
        else:
            self._unshown[key] = self._unshown.get(key, 0) + 1
        if self._unshown and now - self._progress_at >= self.PROGRESS_SECONDS:
            self._progress_at = now
            self._say_unshown()
        return allowed

    def _say_unshown(self, only: tuple[str, str] | None = None) -> None:
        """One progress line per job whose item lines were left out since the last one."""
        for key in [only] if only is not None else list(self._unshown):
            left_out = self._unshown.pop(key, 0)
            if not left_out:
                continue
            done, total = self._counts.get(key, [0, 0])
            self._say(
                f"{key[0]} {key[1]}: {done}/{total} items done ({left_out} item lines not shown)"
            )

    def __call__(self, event: Event) -> None:
        if type(event) is Dispatched:
            return  # half of all events, and nothing to show: passed before any matching
        key = (getattr(event, "task", ""), getattr(event, "system", ""))
        match event:
            case JobStarted(task, system, total, done):
                self._counts[key] = [done, total]
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
            case SystemStarted(task=task, system=system, name=name, version=version):
                what = "restarted" if event.restart else "ready"
                setup = event.setup_seconds
                self._say(f"{task} {system}: {what} ({name} {version}) setup {setup:.2f} s")
            case Completed(task=task, system=system, item=item, verdict=verdict):
                attempt, seconds, message = event.attempt, event.seconds, event.message
                budget = event.budget_seconds
                audit = event.audit_of is not None
                if not audit:
                    if key in self._counts:
                        self._counts[key][0] += 1
                    if event.speed is not None:
                        speed_sum, count = self._speeds.get(key, (0.0, 0))
                        self._speeds[key] = (speed_sum + event.speed, count + 1)
                if self._progress is not None and key in self._tasks:
                    self._progress.update(
                        self._tasks[key],
                        advance=0 if audit else 1,
                        last=verdict,
                        **self._figures(key),
                    )
                if (self.verbose_items or verdict != "ok") and self._line_allowed(key):
                    budget_text = f" / budget {budget:.2f} s" if budget is not None else ""
                    extra = f" - {message}" if message and verdict != "ok" else ""
                    attempt_text = f" (attempt {attempt})" if attempt > 1 else ""
                    self._say(
                        f"{task} {system} {item}{attempt_text}: {verdict} "
                        f"{seconds:.3f} s{budget_text}{extra}"
                    )
            case SystemLost(task=task, system=system) | LinkLost(task=task, system=system):
                what = (
                    "link lost (the venue's failure)"
                    if isinstance(event, LinkLost)
                    else event.outcome
                )
                self._say(f"{task} {system}: system lost ({what}: {event.reason}); restarting")
            case StartFailed(task=task, system=system, reason=reason):
                self._say(f"{task} {system}: system lost (start failed: {reason}); restarting")
            case (
                JobFinished(task=task, system=system)
                | JobFailed(task=task, system=system)
                | JobSkipped(task=task, system=system)
            ):
                if self._progress is not None and key in self._tasks:
                    self._progress.update(self._tasks[key], **self._figures(key, force=True))
                self._say_unshown(key)
                if isinstance(event, JobFailed):
                    status = f"FAILED: {event.reason}"
                elif isinstance(event, JobSkipped):
                    # Not done this session, and nobody's failure.
                    status = (
                        "skipped: the device did not answer"
                        if event.reason == "device_down"
                        else "skipped by the operator"
                    )
                else:
                    status = "done"
                self._say(
                    f"{task} {system}: {status}, {event.scored}/{event.total} items completed"
                )
            case Notice(task, message):
                self._say(f"{task}: {message}")


def _metric_name(metric: str) -> str:
    """The name people read for a headline metric, from the kind registry."""
    # Imported on use: `onsite score` renders tables without loading every kind.
    from harness.kinds.registry import metric_label

    return metric_label(metric)


def _unit_name(unit: str) -> str:
    """The terminal label of a speed unit, from the kind registry."""
    from harness.kinds.registry import speed_unit

    return speed_unit(unit).short


LEADERBOARD_COLUMNS = (
    "task",
    "rank",
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
    "run score",
)

# Below this many columns the leaderboard folds its failure counts into one column and
# drops the secondary ones, so that no cell is cut to "…".
WIDE_COLUMNS = 170

_CAPTION = (
    "rank: 1-2 where the paired test does not separate the systems (docs/significance.md). "
    "quality: the task's headline metric over completed items (a failed item counts as "
    "wrong; for WER its words count as deletions) [its 95% interval]. speed: mean, p95, max per "
    "item in the unit shown (rtf = processing / audio seconds; chars/second over the "
    "set). over: answers past the item budget; t/o: timeouts; err: error answers; "
    "inval: invalid outputs; restart: the participant's (+Nv: the venue's lost links, "
    "items re-sent with their time kept); run score: the running score, 0..100"
)


def _set_budget(row: LeaderboardRow) -> str:
    if row.total_budget_seconds is None or row.total_seconds is None:
        return "-"
    used = f"{row.total_seconds:.1f}/{row.total_budget_seconds:.1f}"
    if row.budget_scope != "set":
        return used
    if row.in_progress:
        # Part of the set is done: the budget can be neither met nor missed yet.
        return f"{used} in progress"
    return f"{used} {'met' if row.set_budget_met else 'MISSED'}"


def _failures(row: LeaderboardRow) -> str:
    counts = (
        ("over", row.over_budget),
        ("t/o", row.timeouts),
        ("crash", row.crashes),
        ("err", row.errors),
        ("inval", row.invalid_outputs),
    )
    return " ".join(f"{n} {name}" for name, n in counts if n) or "-"


def _restarts(row: LeaderboardRow) -> str:
    return str(row.restarts) + (f" +{row.venue_failures}v" if row.venue_failures else "")


def _system_cell(row: LeaderboardRow) -> str:
    entry = row.entry_text()
    return row.system + (f" ({entry})" if entry else "") + (" (unsealed)" if row.unsealed else "")


def _quality(row: LeaderboardRow) -> str:
    figure = f"{_metric_name(row.metric)} {_pct(row.score)}"
    if row.ci_low is None or row.ci_high is None:
        return figure
    return f"{figure} [{100 * row.ci_low:.1f}, {100 * row.ci_high:.1f}]"


def leaderboard_table(rows: Sequence[LeaderboardRow], width: int | None = None) -> Table | Group:
    """The leaderboard as a rich table: quality, speed, stability per task and system.

    ``width`` is the terminal's; under WIDE_COLUMNS the compact layout is used, whose
    cells wrap instead of being cut.
    """
    if width is not None and width < WIDE_COLUMNS:
        return _compact_leaderboard(rows)
    out = Table(title="Leaderboard", caption=_CAPTION, box=box.SIMPLE_HEAD, pad_edge=False)
    for column in LEADERBOARD_COLUMNS:
        out.add_column(
            column,
            justify="left" if column in ("task", "system") else "right",
            no_wrap=True,
            min_width=len(column) if column in ("rank", "quality") else None,
        )
    for row in rows:
        out.add_row(
            row.task,
            row.rank_text(),
            _system_cell(row),
            f"{row.completed}/{row.items}",
            str(row.scored),
            _quality(row),
            row.detail + (f"; late {_pct(row.late_rate)}" if row.late_rate is not None else ""),
            _num(row.speed_mean),
            _num(row.speed_p95),
            _num(row.speed_max),
            _unit_name(row.speed_unit),
            str(row.over_budget),
            str(row.timeouts),
            str(row.crashes),
            str(row.errors),
            str(row.invalid_outputs),
            _restarts(row),
            _num(row.setup_seconds),
            _set_budget(row),
            _num(row.running_score, 1),
        )
    return out


def _compact_leaderboard(rows: Sequence[LeaderboardRow]) -> Group:
    """The leaderboard for a narrow terminal (80 columns): a table per task, one column of
    failures, no secondary figures; long names and figures wrap, never cut."""
    parts: list[Any] = []
    for task in dict.fromkeys(row.task for row in rows):
        out = Table(
            title=f"Leaderboard: {task}", box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True
        )
        for column in (
            "rank",
            "system",
            "items",
            "quality",
            "speed",
            "fails",
            "rst",
            "score",
            "set",
        ):
            out.add_column(
                column,
                justify="left" if column in ("system", "fails") else "right",
                overflow="fold",
            )
        for row in (r for r in rows if r.task == task):
            unit = _unit_name(row.speed_unit)
            speed = "-" if row.speed_mean is None else f"{row.speed_mean:.2f} {unit}"
            out.add_row(
                row.rank_text(),
                _system_cell(row),
                f"{row.completed}/{row.items}",
                _quality(row),
                speed,
                _failures(row),
                _restarts(row),
                _num(row.running_score, 1),
                _set_budget(row),
            )
        parts.append(out)
    parts.append(
        Text(
            "rank: 1-2 where no paired test separates the systems; quality: headline "
            "metric over completed items [95% interval]; speed: mean per item; fails: "
            "over budget, t/o, crash, err, inval; rst: restarts (+Nv the venue's); score: "
            "running score 0..100; set: seconds used of the set's budget",
            style="dim italic",
        )
    )
    return Group(*parts)


def verdict_style(verdict: str) -> str:
    """The colour a verdict is shown in."""
    return _VERDICT_STYLE.get(verdict, "")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    whole = int(round(seconds))
    hours, rest = divmod(whole, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


def _device_wait(wait: dict[str, Any] | None) -> str:
    """A waiting device's next try and tries so far, as `onsite status` shows them."""
    if not wait:
        return ""
    next_in = math.ceil(wait["next_try_in_seconds"])
    # The device's own error text: shown on one line, without its control characters.
    error = printable(str(wait["last_error"]))
    return f" (next try in {next_in} s, tries {wait['tries']}: {error})"


def status_table(status: Mapping[str, Any], width: int | None = None) -> Group:
    """`onsite status`: the console's status document (harness/console/view.py) as a table.

    Under WIDE_COLUMNS the speed and failure columns are left out and cells wrap, so an
    80-column terminal shows every job whole.
    """
    running = status["controller"] == "running"
    who = "a controller is running" if running else "no controller is running"
    head = Text(f"{status['run_dir']}: {who}; {status['records']} journal records")
    wide = width is None or width >= 120
    if wide:
        return Group(head, _status_rows("Status", status["jobs"], wide=True))
    # Narrow: a table per task, so that names need not share the line with the task's.
    tasks = dict.fromkeys(job["task"] for job in status["jobs"])
    return Group(
        head,
        *(
            _status_rows(f"Status: {task}", [j for j in status["jobs"] if j["task"] == task], False)
            for task in tasks
        ),
    )


def _status_rows(title: str, jobs: Sequence[Mapping[str, Any]], wide: bool) -> Table:
    columns = ["task"] if wide else []
    columns += ["system", "state", "done", "ETA", "quality"]
    columns += ["speed", "fails"] if wide else []
    columns += ["score", "restarts" if wide else "rst", "in flight"]
    out = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=not wide)
    for column in columns:
        left = column in ("task", "system", "state", "fails", "in flight")
        out.add_column(column, justify="left" if left else "right", overflow="fold")
    for job in jobs:
        quality = job["quality"]
        name = _metric_name(quality["metric"])
        speed = job["speed"]
        unit = _unit_name(speed["unit"])
        flight = job["in_flight"]
        cells: list[str | Text] = [job["task"]] if wide else []
        cells += [
            job["system"],
            Text(job["state"] + _device_wait(job.get("device_wait"))),
            f"{job['completed']}/{job['total'] if job['total'] is not None else '?'}",
            _duration(job["eta_seconds"]),
            "-" if quality["value"] is None else f"{name} {_pct(quality['value'])}",
        ]
        if wide:
            verdicts = {k: v for k, v in job["verdicts"].items() if k != "ok"}
            cells += [
                "-" if speed["mean"] is None else f"{speed['mean']:.2f} {unit}",
                " ".join(f"{n} {k}" for k, n in sorted(verdicts.items())) or "-",
            ]
        restarts = str(job["restarts"]) + (
            f" +{job['venue_failures']}v" if job.get("venue_failures") else ""
        )
        cells += [
            _num(job["running_score"], 1),
            restarts,
            f"{flight['item']} {flight['item_seconds']:.0f}s" if flight else "-",
        ]
        out.add_row(*cells)
    return out
