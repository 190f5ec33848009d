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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rich.console import Console

    from harness.kinds.base import ScoreFamily

from harness.cli.compare import OFFLINE_FAMILIES
from harness.cli.shared import scored_or_reported
from harness.judge.args import add_panel_source


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
    if from_run or name in OFFLINE_FAMILIES:
        parser.add_argument(
            "--ci",
            action="store_true",
            help="also the headline's 95%% bootstrap interval (with --run: any kind; "
            f"from files: {', '.join(OFFLINE_FAMILIES)}); docs/significance.md",
        )
        parser.add_argument(
            "--samples", type=int, default=1000, help="with --ci: bootstrap resamples (1000)"
        )
        parser.add_argument("--seed", type=int, default=12345, help="with --ci: the seed (12345)")
    if family.plot is not None:
        parser.add_argument(
            "--plot", metavar="STEM", help="also write the figure to STEM.png and STEM.svg"
        )
    default = f" (default: {family.lines} as JSON lines)" if family.lines else ""
    parser.add_argument("--json", action="store_true", help="print one JSON object" + default)
    parser.set_defaults(handler=cmd_score, scorer=family.scorer)
    if family.panel is not None:
        add_panel_source(parser, family.panel)


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
        if getattr(args, "encoding", None) is not None:
            # onsite writes a run's files itself, in UTF-8: there is nothing to name.
            return "--encoding goes with files; a run's outputs are read as onsite wrote them"
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
    args.job = (job.task, job.system)  # as chosen when --task or --system was left out
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
    if getattr(args, "ci", False):
        found = scored_or_reported(lambda: _interval(args, family))
        if found is None:
            return 2
        result["interval"] = found
    # A checker (mt-check) reports "ok": false when it found problems: exit 1, as lint tools do.
    status = 1 if result.get("ok") is False else 0
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        return status
    if family.lines is not None:
        lines = [json.dumps(item, ensure_ascii=False) + "\n" for item in result[family.lines]]
        encoding = getattr(args, "encoding", None)
        if encoding is None:
            # Line by line: a closed pipe (`| head`) then ends the command (main.py).
            for line in lines:
                sys.stdout.write(line)
            return 0
        return _write_encoded("".join(lines), encoding)
    from harness.cli.score_tables import print_result

    print_result(console, args.family, result, family.tables)
    return status


def _write_encoded(text: str, encoding: str) -> int:
    """Write a family's lines in the encoding its input was named in, whatever the
    terminal's locale: a plan filled in reads back with the same --encoding. Encoded
    whole (UTF-16 has one BOM), written in pieces so a closed pipe is met as above."""
    from scoring.charsets import encode_text

    data = scored_or_reported(lambda: encode_text(text, encoding, "<standard output>"))
    if data is None:
        return 2
    sys.stdout.flush()
    piece = 1 << 12
    for start in range(0, len(data), piece):
        sys.stdout.buffer.write(data[start : start + piece])
    sys.stdout.buffer.flush()
    return 0


def _interval(args: argparse.Namespace, family: ScoreFamily) -> dict[str, Any]:
    """`--ci`: the job's (or the file's) headline interval from per-item statistics."""
    from harness.significance import system_interval

    if args.samples < 1:
        raise ValueError(f"--samples {args.samples}: give 1 or more")
    if _reads_run(args, family):
        from harness.significance import job_interval
        from harness.store.run_model import RunModel

        task, system = args.job
        return job_interval(
            RunModel.open(args.run), task, system, args.samples, args.seed
        ).to_dict()
    if args.family not in OFFLINE_FAMILIES:
        raise ValueError(
            f"--ci: {args.family} files have no per-item statistics here; give --run RUN "
            f"--task T --system S (any kind), or use the {' or '.join(OFFLINE_FAMILIES)} family"
        )
    from harness.cli.compare import systems_from_files

    refs = args.ref if isinstance(args.ref, list) else [args.ref]
    lang, encoding = getattr(args, "lang", "en"), getattr(args, "encoding", None)
    compared = systems_from_files(args.family, [args.hyp], refs, lang, encoding)
    return system_interval(compared, args.hyp, args.samples, args.seed).to_dict()
