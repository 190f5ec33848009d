"""`onsite run`: run (or resume) the evaluation a site file describes, with one controller
here, or as one operator station of a run in PostgreSQL (harness/cli/station.py)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli.console import announce, listen_at
from harness.cli.shared import EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK
from harness.errors import InputError, Problem

if TYPE_CHECKING:
    import socket

    from rich.console import Console

    from harness.engine.controller import Controller
    from harness.site import Site
    from harness.store.directory import JobKey, RunStore

# Errors of the disk under the run directory: the run stops cleanly and can resume.
_DISK_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EROFS}


def add_run_parser(sub: Any) -> None:
    """Register `onsite run` on the CLI's subparsers."""
    run = sub.add_parser("run", help="run (or resume) the evaluation a site file describes")
    run.add_argument("site", help="the site file, e.g. site_config/demo.toml")
    run.add_argument("--limit", type=int, help="only the first N items of each task")
    run.add_argument(
        "--fresh", action="store_true", help="move an earlier run aside and start again"
    )
    run.add_argument("--runs", help="put the run directory under this one instead of [site] runs")
    run.add_argument(
        "--accept-site-change",
        action="store_true",
        help="resume although the site or a test set changed since items completed "
        "(the change is journaled and shown in the report)",
    )
    run.add_argument("--task", action="append", default=[], help="run only this task (repeatable)")
    run.add_argument(
        "--system", action="append", default=[], help="run only this system (repeatable)"
    )
    run.add_argument(
        "--console",
        metavar="HOST:PORT",
        help="serve the live console with operator controls there (e.g. 127.0.0.1:8765), "
        "from a process of its own",
    )
    run.add_argument(
        "--link-host",
        help="with --console: the host name to print in its link, and to answer to "
        "(default: the address listened on)",
    )
    run.add_argument(
        "--station",
        metavar="NAME",
        help="with [site] store = postgresql://...: this operator station's name "
        "(default: the host name); stations share the run's jobs (docs/scale.md)",
    )
    run.add_argument(
        "--lease-seconds",
        type=float,
        default=30.0,
        help="with a PostgreSQL store: how long a station's job lease lasts without a "
        "heartbeat (default 30)",
    )
    run.add_argument(
        "--max-jobs",
        type=int,
        metavar="N",
        help="with a PostgreSQL store: at most N jobs at once on this station "
        "(default: one per device), leaving the others to the other stations",
    )
    run.set_defaults(handler=cmd_run)


def cmd_run(args: argparse.Namespace, console: Console) -> int:
    """Run (or resume) every job of a site."""
    from harness.cli.render import ProgressListener, leaderboard_table
    from harness.engine.controller import DEVICE_DOWN, SKIPPED, Controller
    from harness.engine.preflight import refuse_unstartable
    from harness.leaderboard import leaderboard
    from harness.site import load_site
    from harness.store.directory import RunStore, RunStoreError
    from harness.store.run_model import RunModel

    site = load_site(args.site)
    run_dir = (Path(args.runs).resolve() / site.name) if args.runs else site.run_dir
    if site.config.site.store is not None or args.station is not None or args.max_jobs:
        from harness.cli.station import run_station

        jobs = _selected_jobs(site, args.task, args.system)
        # Bound before anything starts, as for one controller.
        bound = listen_at(args.console) if args.console else None
        return run_station(
            args,
            site,
            run_dir,
            jobs,
            console,
            None
            if bound is None
            else lambda controller, location: _console_beside(
                controller, location, bound, console, args.link_host
            ),
        )
    jobs = _selected_jobs(site, args.task, args.system)
    # Before --fresh moves anything and before any system starts.
    refuse_unstartable(site, jobs)
    lock_fd = _fresh_run_dir(run_dir, console) if args.fresh else None
    # Bound before anything starts, so a port in use is refused with nothing changed.
    listen = listen_at(args.console) if args.console else None
    import secrets  # here: `onsite score` and the other short commands never need it

    # The outputs files are rebuilt in the same pass over the journal as the replay.
    store = RunStore(
        run_dir, secrets.token_hex(6), site.config.site.fsync_seconds, lock_fd, site.jobs()
    )
    resume = f"onsite run {args.site}" + "".join(
        f" --{flag} {name}" for flag in ("task", "system") for name in getattr(args, flag)
    )
    background = None
    try:
        store.keep_site_copy(site.path, site.root)
        controller = Controller(
            site, store, limit=args.limit, accept_site_change=args.accept_site_change
        )
        controller.load_testsets()
        if listen is not None:
            background = _console_beside(controller, run_dir, listen, console, args.link_host)
        with ProgressListener(
            console, testsets=controller.testsets, site=site, outputs=store.outputs_path
        ) as listener:
            controller.listener = listener
            results = controller.run(jobs)
    except KeyboardInterrupt:
        _quietly_record(store, "session_interrupted", reason="stopped by the operator")
        console.print(
            f"interrupted; everything recorded is kept. Run the same command to resume: {resume}",
            markup=False,
        )
        return EXIT_INTERRUPTED
    except (RunStoreError, OSError) as exc:
        if isinstance(exc, OSError):
            if exc.errno not in _DISK_ERRORS:
                raise
            exc = RunStoreError.from_os_error(exc, run_dir)
        _quietly_record(store, "session_interrupted", reason=str(exc))
        sys.stderr.write(f"error: {exc}\n")
        return EXIT_FAILED
    except InputError:
        _quietly_record(store, "session_interrupted", reason="refused: bad or changed input")
        raise
    finally:
        if background is not None:
            background.stop()
        try:
            store.close()
        except RunStoreError as exc:
            sys.stderr.write(f"error: {exc}\n")
    console.print(f"run directory: {run_dir}", markup=False)
    run = RunModel.after_run(run_dir, site, store.state, controller.testsets)
    console.print(leaderboard_table(leaderboard(run), console.width))
    failed = [r for r in results if r.failed]
    for job in failed:
        what = job.failed if job.failed in (SKIPPED, DEVICE_DOWN) else f"failed: {job.failed}"
        console.print(f"job {job.task} / {job.system} {what}", markup=False)
    return EXIT_FAILED if failed else EXIT_OK


def _fresh_run_dir(run_dir: Path, console: Console) -> int | None:
    """Move an earlier run aside for --fresh, holding its lock while doing so.

    The lock is taken before anything moves, so --fresh while a controller works there
    is refused instead of starting a second controller beside it. Returns the lock fd
    of the new, empty run directory (or None when there was nothing to move).
    """
    from harness.store.directory import lock_run_dir

    if not (run_dir / "journal.jsonl").exists():
        return None
    old_lock = lock_run_dir(run_dir)
    try:
        archived = run_dir.with_name(f"{run_dir.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        run_dir.rename(archived)
        new_lock = lock_run_dir(run_dir)
    finally:
        os.close(old_lock)
    console.print(f"previous run moved to {archived}", markup=False)
    return new_lock


def _selected_jobs(site: Site, tasks: Sequence[str], systems: Sequence[str]) -> list[JobKey]:
    """The site's jobs narrowed by --task and --system (each repeatable); names are checked."""
    problems = [
        Problem(
            site.path,
            flag,
            f"no {flag} {name!r} in the site file",
            f"use one of: {', '.join(known)}",
        )
        for flag, names, known in (
            ("task", tasks, list(site.config.tasks)),
            ("system", systems, list(site.config.systems)),
        )
        for name in names
        if name not in known
    ]
    if problems:
        raise InputError(problems)
    jobs = [
        (task, system)
        for task, system in site.jobs()
        if (not tasks or task in tasks) and (not systems or system in systems)
    ]
    if not jobs:
        raise InputError(
            [Problem(site.path, "", "no job matches the --task and --system given", "widen them")]
        )
    return jobs


def _console_beside(
    controller: Controller,
    run: Path | str,
    listen: tuple[str, socket.socket],
    console: Console,
    link_host: str | None,
) -> Any:
    """Serve the live console (with controls) of ``run`` (the run directory, or a
    station's run in PostgreSQL) from a process of its own, at the lowest priority: no
    viewer's request reaches this process (harness/console/process.py)."""
    # Imported here, and without the web stack: only the console process loads it.
    from harness.console.auth import Tokens
    from harness.console.process import start_console

    host, sock = listen
    tokens = Tokens.for_bind(host, controls=True)
    address = sock.getsockname()
    beside = start_console(controller, run, host, sock, tokens, link_host)
    announce(console, address, tokens, link_host)
    return beside


def _quietly_record(store: RunStore, event: str, **fields: object) -> None:
    """Journal how a session ended when the disk still lets us; never raise from here."""
    from harness.store.directory import RunStoreError

    with contextlib.suppress(RunStoreError, OSError, ValueError):
        store.record(event, **fields)
