"""`onsite report`: the leaderboard of a run; the full report as HTML, CSV or JSON files."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_OK, add_run_location

if TYPE_CHECKING:
    from rich.console import Console

    from harness.significance import IntervalSettings
    from harness.store.run_model import RunModel


def add_report_parser(sub: Any) -> None:
    """Register `onsite report` on the CLI's subparsers."""
    report = sub.add_parser("report", help="the leaderboard of a run")
    add_run_location(report)
    report.add_argument("--json", action="store_true", help="one JSON array of rows")
    report.add_argument(
        "--full", action="store_true", help="with --json: include every score breakdown"
    )
    report.add_argument("--html", metavar="FILE", help="write the self-contained HTML report")
    report.add_argument("--csv", metavar="FILE", help="write one CSV line per task and system")
    report.add_argument(
        "--json-file", metavar="FILE", help="write the whole report (verdicts, manifest) as JSON"
    )
    report.add_argument(
        "--track", help="only the systems that entered this track (the site's systems.X.track)"
    )
    intervals = report.add_argument_group(
        "intervals and ranks",
        'each headline\'s 95%% paired-bootstrap interval and its rank range ("1-2": no test '
        "separates those systems); docs/significance.md",
    )
    intervals.add_argument(
        "--samples", type=int, default=1000, help="bootstrap resamples (and ar trials): 1000"
    )
    intervals.add_argument("--seed", type=int, default=12345, help="the random seed: 12345")
    intervals.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the ranks: 0.05"
    )
    intervals.add_argument(
        "--rank-test",
        choices=("bootstrap", "ar"),
        default="bootstrap",
        help="the paired test that separates ranks (default bootstrap)",
    )
    intervals.add_argument(
        "--no-intervals", action="store_true", help="leave intervals and ranks out (faster)"
    )
    report.set_defaults(handler=cmd_report)


def interval_settings(args: argparse.Namespace) -> IntervalSettings | None:
    """The report's interval settings from its flags; None with --no-intervals."""
    from harness.errors import InputError, Problem
    from harness.significance import IntervalSettings

    if args.no_intervals:
        return None
    if args.samples < 1:
        raise InputError(
            [Problem(Path(args.run_dir), "--samples", f"{args.samples} samples", "give 1 or more")]
        )
    if not 0 < args.alpha < 1:
        raise InputError(
            [
                Problem(
                    Path(args.run_dir), "--alpha", f"alpha {args.alpha}", "give a level in (0, 1)"
                )
            ]
        )
    return IntervalSettings(args.rank_test, args.samples, args.seed, args.alpha)


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """The leaderboard of a run, as a table or JSON; the full report as HTML, CSV or JSON files."""
    from harness.cli.render import leaderboard_table
    from harness.leaderboard import leaderboard
    from harness.store.run_model import RunModel

    # Read once: the site, the records and the test sets serve the report and the table.
    run = RunModel.open(args.run_dir)
    settings = interval_settings(args)
    _check_track(run, args.track)
    if args.html or args.csv or args.json_file:
        from harness.report import build_report, write_csv, write_html, write_json

        site = run.site
        data = build_report(
            run,
            limits={task: cfg.rules.model_dump() for task, cfg in site.config.tasks.items()},
            weights=site.config.site.running_score.model_dump(),
            intervals=settings,
            track=args.track,
        )
        for path, write in (
            (args.html, write_html),
            (args.csv, write_csv),
            (args.json_file, write_json),
        ):
            if path:
                write(data, Path(path))
                console.print(f"wrote {Path(path).resolve()}", markup=False)
        if not args.json:
            return EXIT_OK
    rows = leaderboard(run, track=args.track)
    if settings is not None:
        from harness.significance import with_intervals

        rows = with_intervals(run, rows, settings)
    if args.json:
        found = []
        for row in rows:
            item = row.to_dict()
            # What the reference tool would print otherwise, even without the scores.
            item["notes"] = row.notes
            if not args.full:
                item.pop("scores")
            found.append(item)
        sys.stdout.write(json.dumps(found, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    console.print(leaderboard_table(rows, console.width))
    from harness.cli.terminal import printable

    for row in rows:
        for note in row.notes:
            # A note may quote what a system wrote: no control character reaches the terminal.
            console.print(printable(f"note ({row.task}, {row.system}): {note}"), markup=False)
    if run.run_dir is not None:
        _judging_section(run.run_dir, console)
    return EXIT_OK


def _check_track(run: RunModel, track: str | None) -> None:
    """--track names a track some system entered, or the error lists those there are."""
    if track is None:
        return
    from harness.errors import InputError, Problem

    tracks = sorted({s.track for s in run.site.config.systems.values() if s.track})
    if track not in tracks:
        raise InputError(
            [
                Problem(
                    run.where,
                    "--track",
                    f"no system entered track {track!r}",
                    f"use one of: {', '.join(tracks)}"
                    if tracks
                    else "give systems a track in the site file (systems.X.track)",
                )
            ]
        )


def _judging_section(run_dir: Path, console: Console) -> None:
    """The judging panels' results under the leaderboard (no panel: nothing imported)."""
    if not (run_dir / "judging").is_dir():
        return
    from harness.cli.judge_panel import print_judging

    print_judging(run_dir, console)
