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
    report.set_defaults(handler=cmd_report)


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """The leaderboard of a run, as a table or JSON; the full report as HTML, CSV or JSON files."""
    from harness.cli.render import leaderboard_table
    from harness.leaderboard import leaderboard
    from harness.store.run_model import RunModel

    # Read once: the site, the records and the test sets serve the report and the table.
    run = RunModel.open(args.run_dir)
    if args.html or args.csv or args.json_file:
        from harness.report import build_report, write_csv, write_html, write_json

        site = run.site
        data = build_report(
            run,
            limits={task: cfg.rules.model_dump() for task, cfg in site.config.tasks.items()},
            weights=site.config.site.running_score.model_dump(),
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
    rows = leaderboard(run)
    if args.json:
        found = []
        for row in rows:
            item = row.to_dict()
            if not args.full:
                item.pop("scores")
            found.append(item)
        sys.stdout.write(json.dumps(found, indent=2, ensure_ascii=False) + "\n")
        return EXIT_OK
    console.print(leaderboard_table(rows, console.width))
    if run.run_dir is not None:
        _judging_section(run.run_dir, console)
    return EXIT_OK


def _judging_section(run_dir: Path, console: Console) -> None:
    """The judging panels' results under the leaderboard (no panel: nothing imported)."""
    if not (run_dir / "judging").is_dir():
        return
    from harness.cli.judge_panel import print_judging

    print_judging(run_dir, console)
