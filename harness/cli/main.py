"""The `onsite` command: the parser, and what every command shares (exit codes, the
interrupt, how an error is shown). Each command has a module of its own in harness/cli/,
whose ``add_<command>_parser(sub)`` registers the command and the handler it runs."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import Any

from harness.cli.check import add_check_parser
from harness.cli.combination_set import add_combination_set_parser
from harness.cli.compare import add_compare_parser
from harness.cli.console import add_console_parser
from harness.cli.copy_run import OLD_COMMAND_NAMES, add_copy_run_parser
from harness.cli.devices import add_devices_parser
from harness.cli.dispute import add_dispute_parser
from harness.cli.export import add_export_parser
from harness.cli.ingest import add_ingest_parser
from harness.cli.judge import add_judge_parser
from harness.cli.meta import add_meta_parser
from harness.cli.package import add_package_parser
from harness.cli.publish import add_publish_parser
from harness.cli.report import add_report_parser
from harness.cli.run import add_run_parser
from harness.cli.score import add_score_parser
from harness.cli.shared import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from harness.cli.status import add_status_parser
from harness.errors import InputError

# Each command imports what it uses when it runs: the controller, runners,
# report (HTML, plots) and scorers cost most of a second to import, and
# `onsite --help`, `onsite status` or `onsite score ir` need none of them.
# The command modules imported above register their parsers and nothing more.

__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_BROKEN_PIPE",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "build_parser",
    "main",
]


def _interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked for (package metadata is slow)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version"
        )

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from harness import __version__

        sys.stdout.write(f"onsite {__version__}\n")
        parser.exit()


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser, kept separate so tests and docs can inspect it.

    Given the command line, `onsite score FAMILY ...` gets a parser with that
    family only (see `add_score_parser`); help and errors are the same.
    """
    parser = argparse.ArgumentParser(
        prog="onsite", description="On-site evaluation harness for participant systems."
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", required=True)

    add_run_parser(sub)
    add_console_parser(sub)
    add_check_parser(sub)
    add_status_parser(sub)
    add_report_parser(sub)
    add_export_parser(sub)
    add_judge_parser(sub)
    add_devices_parser(sub)

    family = None
    command = next((a for a in argv if not a.startswith("-")), None) if argv is not None else None
    if argv is not None and len(argv) >= 2 and argv[0] == "score":
        family = argv[1]
    # Another command (or `onsite --help`) needs `score` only as a name: its families,
    # some brought by the task kinds, load only when `score` is the command.
    add_score_parser(sub, only=family, listed=argv is None or command == "score")
    add_meta_parser(sub)
    add_compare_parser(sub)
    add_copy_run_parser(sub)
    add_combination_set_parser(sub)
    add_publish_parser(sub)
    add_package_parser(sub)
    add_dispute_parser(sub)
    add_ingest_parser(sub)
    # Old command names (export-store) work but are not offered in the list of commands.
    sub.metavar = "{" + ",".join(n for n in sub.choices if n not in OLD_COMMAND_NAMES) + "}"
    return parser


# A reader of our output went away (`onsite score tts-plan | head`): 128 + SIGPIPE, as a
# shell reports a command that a closed pipe ended.
EXIT_BROKEN_PIPE = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `onsite` command.

    Every command ends quietly when the reader of its output closes the pipe
    (`onsite ... | head`): no traceback, exit status 141.
    """
    try:
        status = _main(argv)
        # Output still buffered meets the closed pipe here, not in the interpreter's exit.
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        # The interpreter flushes stdout once more at exit, and that write would fail
        # again ("Exception ignored ... BrokenPipeError"): send what is left nowhere.
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (BrokenPipeError, ValueError):
                try:
                    os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
                except (OSError, ValueError):
                    pass
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None) -> int:
    # SIGTERM ends a run as Ctrl-C does: journaled, resumable, no traceback.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        args = build_parser(argv).parse_args(argv)
        from harness.cli.terminal import make_console, show_warnings_plainly

        console = make_console()
        show_warnings_plainly()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    try:
        return int(args.handler(args, console))
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return EXIT_INTERRUPTED
    except InputError as exc:
        # Plain writes: an error line must never be re-wrapped or coloured.
        for problem in exc.problems:
            sys.stderr.write(f"error: {problem}\n")
        return EXIT_BAD_INPUT
    except Exception as exc:
        # The run store is imported only when a command failed: `onsite score` never needs it.
        from harness.store.directory import RunLocked

        if not isinstance(exc, RunLocked):
            raise
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED
