"""`onsite ingest`: a participant's submitted file becomes a job's outputs in a run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_BAD_INPUT, EXIT_OK, text_encoding

if TYPE_CHECKING:
    from rich.console import Console


def add_ingest_parser(sub: Any) -> None:
    """Register `onsite ingest` on the CLI's subparsers."""
    ing = sub.add_parser(
        "ingest",
        help="record a submitted file as a job's outputs (offline submissions)",
        description="Record a participant's submitted file as the outputs of one job of a "
        "run, journaled with its SHA-256 and marked offline (no timing): the leaderboard, "
        "report, judging panel, compare and export then treat it as any job "
        "(docs/publishing.md, 'Offline submissions').",
    )
    ing.add_argument("run_dir", help="the run directory (created with --site if it has no run)")
    ing.add_argument("file", help="the submitted file")
    ing.add_argument("--task", required=True, help="the task the file answers")
    ing.add_argument("--system", required=True, help="the system (site file) it is the output of")
    ing.add_argument(
        "--format",
        help="trn, kaldi, ctm (asr); cwmt-xml, plain (mt); trec (ir); conll (ner); sighan "
        "(cws); jsonl (any kind). Default: from the file's suffix",
    )
    ing.add_argument(
        "--site",
        help="the site file to create the run from when the run directory has no journal yet",
    )
    ing.add_argument(
        "--replace",
        action="store_true",
        help="the job has records already: record this file in their place (both are kept "
        "in the journal; the new one counts)",
    )
    ing.add_argument(
        "--encoding",
        type=text_encoding,
        help="the file's encoding: utf-8 (default), gb2312, gbk, gb18030, big5, utf-16, "
        "utf-16le; CWMT XML declares its own",
    )
    ing.set_defaults(handler=cmd_ingest)


def cmd_ingest(args: argparse.Namespace, console: Console) -> int:
    """Read, check and journal one submitted file."""
    import sys

    from harness.engine.ingest import ingest
    from harness.site import load_site
    from scoring.errors import FormatError

    if str(args.run_dir).startswith("postgresql://"):
        sys.stderr.write(
            "error: onsite ingest writes a run directory; ingest there, then copy the run "
            "with `onsite copy-run`\n"
        )
        return EXIT_BAD_INPUT
    site = load_site(args.site) if args.site else None
    try:
        done = ingest(
            Path(args.run_dir),
            args.task,
            args.system,
            Path(args.file),
            args.format,
            site=site,
            replace=args.replace,
            encoding=args.encoding,
        )
    except FormatError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_BAD_INPUT
    what = "created the run and recorded" if done.created else "recorded"
    replaced = f", in place of {done.superseded} earlier item(s)" if done.superseded else ""
    console.print(
        f"{what} {done.items} item(s) of {done.task}/{done.system} from {done.file} "
        f"({done.format}, sha256 {done.sha256}){replaced}; run directory: {done.run_dir}",
        markup=False,
    )
    return EXIT_OK
