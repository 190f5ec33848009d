"""`onsite dispute`: record a participant's challenge to an item's result, list the
disputes, and resolve one (rerun the item, amend its verdict, or reject the dispute).

Every step is a journal record of its own (harness/disputes.py); writing one takes the
run directory's lock, as a controller does, so the journal has one writer at a time.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.shared import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK, add_run_location
from harness.errors import InputError, Problem

if TYPE_CHECKING:
    from rich.console import Console

    from harness.disputes import Dispute
    from harness.store.directory import RunStore
    from harness.store.run_model import RunModel


def add_dispute_parser(sub: Any) -> None:
    """Register `onsite dispute` on the CLI's subparsers."""
    p = sub.add_parser(
        "dispute",
        help="record a challenge to an item's result, list disputes, resolve one",
        description="File: --task T --system S --item ID --reason TEXT. List: --list [--json]. "
        "Resolve: --resolve N with --rerun, --amend VERDICT --reason TEXT, or --reject "
        "--reason TEXT (docs/publishing.md).",
    )
    add_run_location(p)
    p.add_argument("--task", help="the disputed job's task")
    p.add_argument("--system", help="the disputed job's system")
    p.add_argument("--item", help="the disputed item's id in the test set")
    p.add_argument("--reason", default="", help="why (a challenge, or the organizer's decision)")
    p.add_argument("--by", default="", help="who files the dispute (e.g. the team)")
    p.add_argument("--list", action="store_true", help="list the run's disputes")
    p.add_argument("--json", action="store_true", help="with --list: as JSON")
    p.add_argument("--resolve", type=int, metavar="N", help="decide dispute N")
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--rerun", action="store_true", help="run the item again (an appeal attempt) and count it"
    )
    how.add_argument("--amend", metavar="VERDICT", help="count the item with this verdict")
    how.add_argument("--reject", action="store_true", help="keep the result as it was")
    p.set_defaults(handler=cmd_dispute)


def cmd_dispute(args: argparse.Namespace, console: Console) -> int:
    """File, list or resolve disputes."""
    resolving = args.rerun or args.amend is not None or args.reject
    filing = any(v is not None for v in (args.task, args.system, args.item))
    modes = sum(bool(m) for m in (args.list, args.resolve is not None, filing))
    if modes != 1 or (resolving and args.resolve is None):
        return _usage("give one of: --list; --resolve N with --rerun, --amend or --reject; "
                      "or --task, --system, --item and --reason to file a dispute")  # fmt: skip
    if args.list:
        return _list(args, console)
    run_dir = _run_dir(args.run_dir)
    if args.resolve is not None and not resolving:
        return _usage(f"--resolve {args.resolve} needs --rerun, --amend VERDICT or --reject")
    if filing and not (args.task and args.system and args.item):
        return _usage("filing a dispute needs --task, --system and --item (and --reason)")
    store, model = _open(run_dir)
    try:
        if filing:
            from harness.disputes import new_dispute

            ids = {task: [i.id for i in ts.items] for task, ts in model.testsets.items()}
            record = new_dispute(
                model.state, run_dir, model.site.jobs(), ids,
                args.task, args.system, args.item, args.reason, args.by,
            )  # fmt: skip
            store.emit(record)
            console.print(
                f"dispute {record.dispute} filed: {record.task}/{record.system} item "
                f"{record.item} ({record.verdict}, attempt {record.attempt})",
                markup=False,
            )
            return EXIT_OK
        return _resolve(args, run_dir, store, model, console)
    finally:
        store.close()


def _usage(message: str) -> int:
    sys.stderr.write(f"error: {message}\n")
    return EXIT_BAD_INPUT


def _run_dir(location: str) -> Path:
    """A run directory: disputes are written under its lock (a run in PostgreSQL is not
    supported here)."""
    if location.startswith(("postgresql://", "postgres://")):
        raise InputError(
            [Problem(Path(location.split("?")[0]), "run", "disputes are kept in a run directory",
                     "copy the run to a directory with `onsite copy-run` and dispute it there")]
        )  # fmt: skip
    run_dir = Path(location)
    if not (run_dir / "journal.jsonl").is_file():
        raise InputError(
            [Problem(run_dir, "run", "not a run directory (no journal.jsonl)",
                     "give the directory `onsite run` wrote, e.g. runs/demo")]
        )  # fmt: skip
    return run_dir


def _open(run_dir: Path) -> tuple[RunStore, RunModel]:
    """Take the run's lock (RunLocked while a controller works there), then read it."""
    from harness.store.directory import RunStore, lock_run_dir
    from harness.store.run_model import RunModel

    fd = lock_run_dir(run_dir)
    store = RunStore(run_dir, "dispute-" + secrets.token_hex(4), fsync_seconds=0, lock_fd=fd)
    try:
        return store, RunModel.open(run_dir)
    except BaseException:
        store.close()
        raise


def _resolve(
    args: argparse.Namespace, run_dir: Path, store: RunStore, model: RunModel, console: Console
) -> int:
    from harness.disputes import appeal_attempt, decision, open_dispute
    from harness.store.events import DisputeDecided

    number = int(args.resolve)
    if not args.rerun:
        from harness.kinds.registry import task_kind

        filed = open_dispute(model.state, run_dir, number).filed
        kind = task_kind(model.site.config.tasks[filed.task].kind)
        item = next(i for i in model.testset(filed.task).items if i.id == filed.item)

        def check(output: Mapping[str, Any]) -> str | None:
            """The kind's checks of an output, as the controller runs them."""
            problem = kind.check_output(output)
            if not problem and kind.check_item is not None:
                problem = kind.check_item(item, output)
            return problem

        record = decision(
            model.state,
            run_dir,
            number,
            "amended" if args.amend is not None else "rejected",
            args.reason,
            args.amend,
            check,
        )
        store.emit(record)
        what = f"amended to {record.verdict}" if record.verdict else "rejected"
        console.print(f"dispute {number} {what}", markup=False)
        return EXIT_OK
    from harness.engine.controller import AppealFailed, Controller

    dispute = open_dispute(model.state, run_dir, number)
    filed = dispute.filed
    attempt = appeal_attempt(model.state, dispute)
    controller = Controller(model.site, store)
    try:
        result = controller.appeal(filed.task, filed.system, filed.item, number, attempt)
    except AppealFailed as exc:
        sys.stderr.write(
            f"error: dispute {number}: the appeal attempt gave no result ({exc}); the dispute "
            "stays open: run the same command again once the system or its device is fixed\n"
        )
        return EXIT_FAILED
    store.emit(
        DisputeDecided(
            task=filed.task,
            system=filed.system,
            dispute=number,
            item=filed.item,
            decision="rerun",
            reason=args.reason.strip(),
            attempt=attempt,
        )
    )
    console.print(
        f"dispute {number}: appeal attempt {attempt} of {filed.task}/{filed.system} item "
        f"{filed.item}: {result.verdict} in {result.seconds:.3f} s (was "
        f"{filed.verdict}); the item counts with it",
        markup=False,
    )
    return EXIT_OK


def _list(args: argparse.Namespace, console: Console) -> int:
    from harness.disputes import disputes_of
    from harness.store.run_model import RunModel

    disputes = disputes_of(RunModel.open(args.run_dir).state)
    if args.json:
        sys.stdout.write(json.dumps([d.to_dict() for d in disputes], indent=2) + "\n")
        return EXIT_OK
    if not disputes:
        console.print("no disputes", markup=False)
        return EXIT_OK
    from rich.table import Table
    from rich.text import Text

    table = Table("#", "job", "item", "challenged", "state", "counts as", "reason", "decision")
    for d in disputes:
        # Plain text: a reason is the participant's words, never markup.
        table.add_row(*(Text(cell) for cell in _row(d)))
    console.print(table)
    return EXIT_OK


def _row(d: Dispute) -> list[str]:
    filed, decided, counted = d.filed, d.decision, d.counted
    return [
        str(d.number),
        f"{filed.task}/{filed.system}",
        filed.item,
        f"{filed.verdict} (attempt {filed.attempt})",
        d.state,
        "-" if counted is None else f"{counted.verdict} (attempt {counted.attempt})",
        filed.reason,
        "" if decided is None else decided.reason,
    ]
