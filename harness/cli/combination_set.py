"""`onsite combination-set` on the command line (harness/combination_set.py builds the set).

Registering the command loads nothing of the MT file formats: every other command
(and `onsite --help`) builds the same parser.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.shared import text_encoding

if TYPE_CHECKING:
    from rich.console import Console


def add_combination_set_parser(sub: Any) -> None:
    """Register `onsite combination-set` on the CLI's subparsers."""
    parser = sub.add_parser(
        "combination-set",
        help="the system-combination test set: a finished MT run's n-best lists, anonymized",
    )
    parser.add_argument("run_dir", help="the run directory of the finished MT run")
    parser.add_argument("--task", required=True, help="the MT task")
    parser.add_argument("-o", "--output", required=True, help="the new test-set directory")
    parser.add_argument(
        "--key", help="where the sysNN -> system key goes (default: OUTPUT.key.json beside it)"
    )
    parser.add_argument("--seed", type=int, help="fix the anonymous order (default: random)")
    parser.add_argument(
        "--setid",
        help="the combination task's CWMT set id (default: the MT set's with _combi, "
        "e.g. zh_en_news_combi)",
    )
    parser.add_argument(
        "--encoding",
        type=text_encoding,
        help="the MT test set's encoding: utf-8, gb2312, gbk, gb18030, big5, utf-16 (with a "
        "BOM), utf-16le (default: the task's `encoding` in the site file, else utf-8; a "
        "CWMT XML file's declaration is read when neither names one)",
    )
    parser.set_defaults(handler=cmd_combination_set)


def cmd_combination_set(args: argparse.Namespace, console: Console) -> int:
    """Write the combination set and say where it and its key are."""
    from harness.combination_set import build_combination_set

    made = build_combination_set(
        Path(args.run_dir),
        args.task,
        Path(args.output),
        Path(args.key) if args.key else None,
        args.seed,
        args.setid,
        args.encoding,
    )
    console.print(
        f"wrote {made.directory.resolve()}: {made.segments} segments, "
        f"{len(made.systems)} systems' candidate lists ({', '.join(made.systems)}), "
        f"set id {made.setid}",
        markup=False,
    )
    console.print(f"key (keep it apart): {made.key.resolve()}", markup=False)
    return 0
