"""`onsite export`: one job's outputs (or its task's references) in a field's own format."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_OK, add_run_location, text_encoding

if TYPE_CHECKING:
    from rich.console import Console


def add_export_parser(sub: Any) -> None:
    """Register `onsite export` on the CLI's subparsers."""
    exp = sub.add_parser("export", help="a job's outputs in a field's own format (trn, kaldi ...)")
    add_run_location(exp)
    exp.add_argument("--task", help="the task (may be left out when the run has one)")
    exp.add_argument("--system", help="the system (may be left out when the task has one)")
    exp.add_argument(
        "--format",
        required=True,
        help="trn, ctm, kaldi, cwmt-xml, trec, conll, sighan, tsv, score-jsonl, kws-det or "
        "jsonl: what fits the task's kind (docs/formats.md)",
    )
    exp.add_argument("-o", "--output", help="the file to write (default: standard output)")
    exp.add_argument(
        "--encoding",
        type=text_encoding,
        help="the file's encoding: utf-8, gb2312, gbk, gb18030, big5, utf-16, utf-16le "
        "(default: the task's `encoding` in the site file, else utf-8); CWMT XML declares it",
    )
    exp.add_argument(
        "--references",
        action="store_true",
        help="write the task's references instead (an organizer action)",
    )
    exp.set_defaults(handler=cmd_export)


def cmd_export(args: argparse.Namespace, console: Console) -> int:
    """One job's outputs (or, for the organizer, its task's references) in a field format."""
    from harness.export import export_job, read_run
    from harness.export.encoding import export_bytes, export_encoding

    job = read_run(args.run_dir, args.task, args.system)
    text = export_job(job, args.format, args.references)
    data = export_bytes(job, text, args.encoding, args.output or "<standard output>")
    if not job.complete:
        sys.stderr.write(
            f"note: {job.task}/{job.system} completed {len(job.testset.items)} of {job.total} "
            "items; the file holds those, as the leaderboard scores them\n"
        )
    if args.output:
        Path(args.output).write_bytes(data)
        console.print(f"wrote {Path(args.output).resolve()}", markup=False)
    elif export_encoding(job, args.encoding) is None:
        sys.stdout.write(text)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return EXIT_OK
