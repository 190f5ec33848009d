"""`onsite package RUN --participant P -o DIR`: one participant's own results
(docs/publishing.md).

Their systems' per-item outputs, verdicts, times and scores, the numbers their systems
have in the published tables (the same `--order` and `--seed` as `onsite publish`), the
anonymized tables, and the references and test inputs once the run's embargo
(`[site] release_after`) has passed or when the operator gives `--with-references`,
which the run's journal records. Nothing of another participant's outputs.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.publish import add_numbering_arguments
from harness.cli.shared import EXIT_OK, add_run_location

if TYPE_CHECKING:
    from rich.console import Console


def add_package_parser(sub: Any) -> None:
    """Register `onsite package` on the CLI's subparsers."""
    parser = sub.add_parser(
        "package",
        help="one participant's package: their outputs, scores and numbers, the tables",
        description="Write one participant's outputs, verdicts, times and scores, their "
        "systems' published numbers and the anonymized tables to DIR; the references and "
        "test inputs only after the run's embargo ([site] release_after) or with "
        "--with-references.",
    )
    add_run_location(parser)
    parser.add_argument(
        "--participant",
        required=True,
        help="the site file's participant (or a system's name where it gives none)",
    )
    parser.add_argument("-o", "--output", required=True, metavar="DIR", help="a new directory")
    add_numbering_arguments(parser)
    parser.add_argument(
        "--with-references",
        action="store_true",
        help="include the references and test inputs before the embargo ends (journaled)",
    )
    parser.set_defaults(handler=cmd_package)


def cmd_package(args: argparse.Namespace, console: Console) -> int:
    """Write one participant's package."""
    from harness.publish.package import package
    from harness.significance import IntervalSettings
    from harness.store.run_model import RunModel

    model = RunModel.open(args.run_dir)
    out = Path(args.output)
    result = package(
        model,
        args.participant,
        out,
        IntervalSettings(),
        args.order,
        args.seed,
        args.with_references,
    )
    numbers = ", ".join(f"{s} = {label}" for s, label in result.systems.items())
    console.print(f"package of {result.participant} written to {out}: {numbers}")
    state = "included" if result.references else "not included"
    console.print(f"references and test inputs {state}: {result.why}")
    if result.references and args.with_references:
        console.print("the release is recorded in the run's journal (references_released)")
    console.print(f"the key is in {result.key_file} (keep it private)")
    return EXIT_OK
