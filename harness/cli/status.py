"""`onsite status`: where a run stands, once or refreshed in place."""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_OK, add_run_location

if TYPE_CHECKING:
    from rich.console import Console


def add_status_parser(sub: Any) -> None:
    """Register `onsite status` on the CLI's subparsers."""
    status = sub.add_parser("status", help="where a run stands")
    add_run_location(status)
    status.add_argument("--watch", action="store_true", help="refresh in place until Ctrl-C")
    status.add_argument(
        "--interval", type=float, default=1.0, help="seconds between refreshes (default 1)"
    )
    status.add_argument(
        "--until-stopped",
        action="store_true",
        help="with --watch: end once no controller works on the run",
    )
    status.set_defaults(handler=cmd_status)


def cmd_status(args: argparse.Namespace, console: Console) -> int:
    """Where a run stands, from its journal; with --watch, refreshed in place."""
    from harness.cli.render import status_table
    from harness.console.view import RunView  # the read model only: no web stack

    view = RunView(args.run_dir, intervals=False)  # light: no numpy for a glance
    if not args.watch:
        view.refresh()
        console.print(status_table(view.status(), console.width))
        return EXIT_OK
    from rich.live import Live

    with Live(console=console, auto_refresh=False, transient=False) as live:
        while True:
            view.refresh()
            status = view.status()
            live.update(status_table(status, console.width), refresh=True)
            if status["controller"] == "stopped" and args.until_stopped:
                return EXIT_OK
            time.sleep(args.interval)
