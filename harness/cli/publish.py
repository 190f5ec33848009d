"""`onsite publish RUN -o DIR`: the anonymized results of a run (docs/publishing.md).

Every table and figure names systems "System 1..N", numbered in a seeded random order
(`--seed`) or by rank (`--order rank`); the key (system -> number, participant) is
written beside DIR as DIR.key.json, never inside it. Before the directory takes its
name every file in it is scanned for the site file's system, participant, device,
host and command names; one found, nothing is published.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_OK, add_run_location

if TYPE_CHECKING:
    from rich.console import Console

# The publish module's default, repeated here so that `onsite --help` loads nothing.
_DEFAULT_SEED = 2005


def add_numbering_arguments(parser: argparse.ArgumentParser) -> None:
    """``--order`` and ``--seed``: how systems are numbered (publish and package share
    them, so a participant's number is the one the published tables give)."""
    parser.add_argument(
        "--order",
        choices=("seeded", "rank"),
        default="seeded",
        help="number systems in a seeded random order (default) or by rank",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help=f"the numbering's random seed (default {_DEFAULT_SEED}; give your own: anyone "
        "who knows the default and the systems' names can draw the same numbers)",
    )


def add_publish_parser(sub: Any) -> None:
    """Register `onsite publish` on the CLI's subparsers."""
    parser = sub.add_parser(
        "publish",
        help="the anonymized results of a run: every table as System 1..N, the key beside",
        description="Write the run's tables and figures with systems as System 1..N to DIR, "
        "and the key (system -> number, participant) to DIR.key.json beside it.",
    )
    add_run_location(parser)
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="a new directory")
    add_numbering_arguments(parser)
    parser.add_argument("--track", help="only the systems that entered this track")
    parser.set_defaults(handler=cmd_publish)


def cmd_publish(args: argparse.Namespace, console: Console) -> int:
    """Write the anonymized results and the key."""
    from harness.publish.anonymize import DEFAULT_SEED
    from harness.publish.write import publish
    from harness.significance import IntervalSettings
    from harness.store.run_model import RunModel

    model = RunModel.open(args.run_dir)
    out = Path(args.output)
    result, key_file = publish(model, out, IntervalSettings(), args.order, args.seed, args.track)
    tables = len(result.published.tables)
    seed = DEFAULT_SEED if args.seed is None else args.seed
    how = "by rank" if args.order == "rank" else f"in a random order, seed {seed}"
    console.print(f"published {tables} table(s) of {len(result.key.entries)} systems to {out}")
    console.print(f"systems numbered {how}; the key is in {key_file} (keep it private)")
    return EXIT_OK
