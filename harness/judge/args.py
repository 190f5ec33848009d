"""The options of `onsite judge`, apart so that building the parser imports nothing heavy."""

from __future__ import annotations

import argparse

TESTS = (
    "sus",
    "pair",
    "mos",
    "mt-adequacy-fluency",
    "summary",
    "cws-review",
    "pos-review",
    "relevance",
)


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value <= 1.0:  # NaN fails too
        raise argparse.ArgumentTypeError(f"{text!r}: give a fraction in (0, 1], e.g. 0.3")
    return value


def _depth(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of documents, e.g. 20")
    return int(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `onsite judge` (harness/cli/judge.py registers the command)."""
    parser.add_argument("run_dir", help="the run directory whose outputs are judged")
    parser.add_argument(
        "--test",
        required=True,
        choices=TESTS,
    )
    parser.add_argument("--task", required=True, help="the task of the run to judge")
    parser.add_argument("--judges", type=int, help="number of judges (for a new panel)")
    parser.add_argument("--seed", type=int, help="plan seed (default 0); same seed, same plan")
    parser.add_argument(
        "--category", help="judge only the items of this category (categories.tsv), new panel"
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--subset",
        type=_fraction,
        metavar="FRACTION",
        help="judge a random FRACTION of the items (drawn with --seed), new panel",
    )
    which.add_argument(
        "--items", metavar="FILE", help="judge only the item ids listed in FILE, new panel"
    )
    parser.add_argument(
        "--pool-depth",
        type=_depth,
        metavar="K",
        help="relevance: pool the top K documents of every run per topic (default 100)",
    )
    parser.add_argument("--listen", default="127.0.0.1:8017", help="HOST:PORT to serve on")
    parser.add_argument("--link-host", help="host name to print in the links (default: HOST)")
    parser.add_argument("--plan-only", action="store_true", help="build, print links, don't serve")
    parser.add_argument("--progress", action="store_true", help="print each judge's progress")
    parser.add_argument("--results", action="store_true", help="scores, agreement, warnings")
    parser.add_argument("--json", action="store_true", help="with --results: one JSON object")
    parser.add_argument("--export", metavar="FILE", help="write the judgements as a score file")


def add_panel_source(parser: argparse.ArgumentParser, test: str) -> None:
    """Let an `onsite score` family read the judging panel's ``test`` results (--run,
    --task) instead of --hyp; the family names its test (its ``panel``)."""
    several = False
    for action in parser._actions:
        if "--hyp" in action.option_strings:
            action.required = False
            action.help = f"{action.help}; or --run and --task"
            several = action.nargs in ("+", "*")
    parser.add_argument("--run", metavar="RUN_DIR", help="read the judging panel of this run")
    parser.add_argument("--task", help="with --run: the judged task")
    scorer = parser.get_default("scorer")

    def from_panel(args: argparse.Namespace) -> dict:
        if args.run is None:
            if not args.hyp:
                raise ValueError("give --hyp FILE, or --run RUN_DIR --task TASK (a panel)")
            return scorer(args)
        if args.hyp or not args.task:
            raise ValueError("with --run give --task TASK and no --hyp")
        from pathlib import Path

        from harness.judge.source import panel_export

        with panel_export(Path(args.run), args.task, test) as path:
            args.hyp = [str(path)] if several else str(path)
            return scorer(args)

    parser.set_defaults(scorer=from_panel)
