"""`onsite score FAMILY ...`: score saved files, or a run's job (--run), re-running nothing.

Every family is a task kind's (harness/kinds/: its ``score_families``), and so
is the way a family reads one of the kind's jobs with ``--run`` (its
``from_run``, through harness/export). Nothing here names a family or a kind.
Each family's scorer imports its own scoring module when it runs, so `onsite
score ir` loads neither numpy, the numba aligner, matplotlib nor the other
families; the kind modules it finds them through load none of these either.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from rich.console import Console

    from harness.kinds.base import ScoreFamily

from harness.judge.args import add_panel_source

T = TypeVar("T")


def _families() -> Mapping[str, ScoreFamily]:
    from harness.kinds.registry import score_families

    return score_families()


def _reads_runs(name: str) -> bool:
    """Some kind's jobs can be scored by this family with --run."""
    from harness.kinds.registry import run_kinds

    return bool(run_kinds(name))


def add_score_parser(sub: Any, only: str | None = None, listed: bool = True) -> None:
    """Register `onsite score` and its families on the CLI's subparsers.

    With `only` naming a family, just that family is registered: enough to
    parse a command line that names it, at a fraction of the cost of all
    twenty-odd parsers (argparse formats help text as each option is added).
    With `listed` false, `score` is registered without its families (another
    command is being parsed), so the task kinds are not loaded.
    """
    score = sub.add_parser(
        "score", help="score saved outputs against references (files, or a run's job with --run)"
    )
    families = score.add_subparsers(dest="family", required=True)
    if not listed:
        return
    known = _families()
    names = [only] if only is not None and only in known else list(known)
    for name in names:
        _add_family(families, name, known[name])


def _add_family(families: Any, name: str, family: ScoreFamily) -> None:
    parser = families.add_parser(name, help=family.help)
    from_run = _reads_runs(name)
    needs: list[tuple[str, str]] = []
    for flags, options in family.args:
        if from_run and options.get("required"):
            # With --run the files come from the run: required only without it.
            options = {**options, "required": False}
            needs.append((flags[0].lstrip("-").replace("-", "_"), flags[0]))
        parser.add_argument(*flags, **options)
    # A family's own --run (ir's TREC run file): there a directory means a run directory.
    if from_run and not family.has_own_run:
        parser.add_argument(
            "--run",
            metavar="RUN_DIR",
            help="score a run's job instead of files: its outputs and the task's "
            "references, with the task's settings (the live leaderboard's number)",
        )
    if from_run:
        parser.add_argument("--task", help="with --run: the task (if the run has several)")
        parser.add_argument("--system", help="with --run: the system (if several)")
    parser.set_defaults(needs=needs, from_run=from_run)
    if family.plot is not None:
        parser.add_argument(
            "--plot", metavar="STEM", help="also write the figure to STEM.png and STEM.svg"
        )
    default = f" (default: {family.lines} as JSON lines)" if family.lines else ""
    parser.add_argument("--json", action="store_true", help="print one JSON object" + default)
    parser.set_defaults(handler=cmd_score, scorer=family.scorer)
    if family.panel is not None:
        add_panel_source(parser, family.panel)


def scored_or_reported(compute: Callable[[], T]) -> T | None:
    """``compute()``, or None after writing the input error it raised to stderr.

    Shared by `onsite score` and `onsite meta`: the readers name the file and line, and
    an unreadable path gets its fix.
    """
    from scoring.errors import FormatError

    try:
        return compute()
    except (FormatError, ValueError) as exc:
        sys.stderr.write(f"error: {exc}\n")
    except OSError as exc:
        sys.stderr.write(f"error: {_os_error(exc)}\n")
    return None


def _os_error(exc: OSError) -> str:
    """An unreadable path, with the fix: the bare errno text names no remedy."""
    where = exc.filename if exc.filename is not None else "?"
    if isinstance(exc, FileNotFoundError):
        return f"{where}: no such file; check the path (relative paths start at {Path.cwd()})"
    if isinstance(exc, IsADirectoryError):
        return f"{where}: is a directory; give the file inside it"
    if isinstance(exc, PermissionError):
        return f"{where}: permission denied; make the file readable (chmod a+r)"
    return f"{where}: {exc.strerror or exc}; check that the path is a readable file"


def _reads_run(args: argparse.Namespace, family: ScoreFamily) -> bool:
    """--run names a run (a directory or a PostgreSQL URL), not a family's own file."""
    run = getattr(args, "run", None)
    if run is None or not getattr(args, "from_run", False):
        return False
    from harness.store.api import is_pg_location

    return not family.has_own_run or is_pg_location(run) or Path(run).is_dir()


def _files_or_run(args: argparse.Namespace, family: ScoreFamily) -> str | None:
    """The problem with the choice between the family's files and --run, if any."""
    needs: list[tuple[str, str]] = getattr(args, "needs", [])
    reads_run = _reads_run(args, family)
    if reads_run:
        needs = [(dest, flag) for dest, flag in needs if dest != "run"]
    given = [flag for dest, flag in needs if getattr(args, dest, None) is not None]
    files = " and ".join(flag for _, flag in needs)
    if reads_run:
        if given:
            return f"give {files}, or --run, not both ({', '.join(given)} given with --run)"
        return None
    # The judging panel's families take --run and --task of their own (not these).
    if getattr(args, "from_run", False) and (
        getattr(args, "task", None) is not None or getattr(args, "system", None) is not None
    ):
        return "--task and --system go with --run RUN_DIR"
    missing = [flag for dest, flag in needs if getattr(args, dest, None) is None]
    if missing:
        return f"give {files} (missing {', '.join(missing)}), or --run RUN_DIR --task T --system S"
    return None


def cmd_score(args: argparse.Namespace, console: Console) -> int:
    """Run one family's scorer and print its figures."""
    family = _families()[args.family]
    problem = _files_or_run(args, family)
    if problem is not None:
        sys.stderr.write(f"error: onsite score {args.family}: {problem}\n")
        return 2
    if _reads_run(args, family):
        import tempfile

        with tempfile.TemporaryDirectory(prefix="onsite-score-") as tmp:
            return _score_run(args, family, console, Path(tmp))
    return _score(args, family, console)


def _score_run(args: argparse.Namespace, family: ScoreFamily, console: Console, tmp: Path) -> int:
    """`--run`: the job's files written to ``tmp`` by its kind, then scored as files are."""
    from harness.export import run_arguments

    # A run directory or postgresql://HOST/DB?run=NAME: RunModel.open reads either.
    job, values = run_arguments(args.family, args.run, args.task, args.system, tmp)
    vars(args).update(values)
    if not job.complete:
        sys.stderr.write(
            f"note: {job.task}/{job.system} completed {len(job.testset.items)} of "
            f"{job.total} items; scored over those, as the leaderboard scores it\n"
        )
    return _score(args, family, console)


def _score(args: argparse.Namespace, family: ScoreFamily, console: Console) -> int:
    """Score with the family's scorer and print (shared by files and --run)."""

    def compute() -> dict[str, Any]:
        result: dict[str, Any] = args.scorer(args)
        if getattr(args, "plot", None) and family.plot is not None:
            files = family.plot(args, Path(args.plot))
            sys.stderr.write(f"wrote {files.png} and {files.svg}\n")
        return result

    result = scored_or_reported(compute)
    if result is None:
        return 2
    # A checker (mt-check) reports "ok": false when it found problems: exit 1, as lint tools do.
    status = 1 if result.get("ok") is False else 0
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        return status
    if family.lines is not None:
        for item in result[family.lines]:
            sys.stdout.write(json.dumps(item, ensure_ascii=False) + "\n")
        return 0
    from harness.cli.score_tables import print_result

    print_result(console, args.family, result, family.tables)
    return status
