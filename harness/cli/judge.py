"""`onsite judge`: registered here; the command's body is harness/cli/judge_panel.py,
loaded (with the panel's web stack) only when the command runs."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from harness.judge.args import add_arguments

if TYPE_CHECKING:
    from rich.console import Console


def add_judge_parser(sub: Any) -> None:
    """Register `onsite judge` on the CLI's subparsers."""
    judge = sub.add_parser(
        "judge", help="judging panel: listening tests, MT and summary scores, CWS review, relevance"
    )
    add_arguments(judge)
    judge.set_defaults(handler=cmd_judge)


def cmd_judge(args: argparse.Namespace, console: Console) -> int:
    """The judging panel (docs/judging.md); its web stack loads only here."""
    from harness.cli.judge_panel import cmd_judge as judge

    return judge(args, console)
