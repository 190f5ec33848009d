"""`onsite run SITE --station NAME`: one operator station of a run kept in PostgreSQL.

Loaded only when a site names a PostgreSQL store, so psycopg is never imported
otherwise. Readers of such a run (`onsite status|report|console|export`, `onsite score
--run`) open it through harness/store/api.py like any run directory.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import secrets
import socket
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem

if TYPE_CHECKING:
    from rich.console import Console

    from harness.engine.controller import Controller
    from harness.site import Site
    from harness.store.directory import JobKey

# Starts the console beside the run (cli.py's): given the controller and the run's location.
ConsoleStarter = Callable[["Controller", str], Any]

_STATION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def _refuse(site: Site, key: str, message: str, fix: str) -> InputError:
    return InputError([Problem(site.path, key, message, fix)])


def run_station(
    args: argparse.Namespace,
    site: Site,
    run_dir: Path,
    jobs: list[JobKey],
    console: Console,
    serve_console: ConsoleStarter | None = None,
) -> int:
    """`onsite run SITE [--station NAME]` with a PostgreSQL store: one station of a shared run.

    ``serve_console``: start the console with operator controls beside the station (its
    address was bound before anything started).
    """
    from harness.cli.render import ProgressListener, leaderboard_table
    from harness.engine.controller import DEVICE_DOWN, SKIPPED, TAKEN_OVER, Controller
    from harness.engine.station import NameTaken, Station, StationSettings
    from harness.leaderboard import leaderboard
    from harness.store.directory import RunStoreError
    from harness.store.postgres import PgRunStore, PgStoreError
    from harness.store.postgres_run import PgRunSource, PgRunWriter, run_location, station_session
    from harness.store.run_model import RunModel

    dsn = site.config.site.store
    if dsn is None:
        raise _refuse(
            site,
            "site.store",
            "--station and --max-jobs need the run in a PostgreSQL store",
            'add store = "postgresql://USER@HOST/DB" under [site] (docs/scale.md)',
        )
    name = args.station or socket.gethostname()
    if not _STATION.match(name):
        raise _refuse(
            site,
            "--station",
            f"station name {name!r} is not usable",
            "give letters, digits, '.', '_' or '-' (starting with a letter or digit)",
        )
    if not args.lease_seconds > 0:
        raise _refuse(site, "--lease-seconds", "the lease must be positive", "e.g. 30")
    if args.max_jobs is not None and args.max_jobs < 1:
        raise _refuse(site, "--max-jobs", "a station runs at least one job", "e.g. 2")
    if args.fresh:
        raise _refuse(
            site,
            "--fresh",
            "--fresh does not apply to a run shared in PostgreSQL",
            "give the site a new [site] name to start a new run; archive the old one with "
            "onsite copy-run",
        )

    local = run_dir / "stations" / name
    # This station's registration of its name; its session is named after it too.
    instance = secrets.token_hex(6)
    try:
        pg = PgRunStore(dsn, site.name, on_wait=_to_stderr)
        beat = PgRunStore(dsn, site.name, on_wait=_to_stderr)
        # Reads the run's records so far (the state every claim starts from).
        store = PgRunWriter(local, station_session(name, instance), pg, name, instance)
    except PgStoreError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    station = Station(
        store,
        StationSettings(name, args.lease_seconds, max_jobs=args.max_jobs),
        beat,
        on_notice=lambda line: console.print(line, markup=False),
    )
    try:
        # Before anything is written: a station refused its name leaves no trace in the run.
        station.take_name(socket.gethostname(), os.getpid())
    except (NameTaken, PgStoreError) as exc:
        hint = (
            " (no --station was given, so this station took its host name as its name: "
            "cloned PCs share one, so give each station a --station name of its own)"
            if isinstance(exc, NameTaken) and args.station is None
            else ""
        )
        sys.stderr.write(f"error: {exc}{hint}\n")
        station.close()
        store.close()
        pg.close()
        return 1
    resume = f"onsite run {args.site} --station {name}"
    location = run_location(dsn, site.name)
    background = None
    try:
        store.keep_site_copy(site.path, site.root)
        station.register(site.jobs())
        station.start()
        controller = Controller(
            site,
            store,
            limit=args.limit,
            accept_site_change=args.accept_site_change,
            jobs_source=station,
        )
        controller.load_testsets()
        if serve_console is not None:
            background = serve_console(controller, location)
        with ProgressListener(
            console, testsets=controller.testsets, site=site, outputs=store.outputs_path
        ) as listener:
            controller.listener = listener
            # Another station took the name over: stop at once (its records are refused).
            station.on_name_lost = controller.stop
            results = controller.run(jobs)
        station.close()
        if station.name_lost.is_set():
            raise KeyboardInterrupt("name lost")  # ends as an interrupted session, saying why
        # This station's outputs files, every job's, as the database has them now.
        store.rebuild_outputs(site.jobs())
    except KeyboardInterrupt:
        station.close()
        if station.name_lost.is_set():
            with contextlib.suppress(Exception):
                store.record("session_interrupted", reason="station name taken over")
            sys.stderr.write(f"error: {station.lost_name}\n")
            return 1
        with contextlib.suppress(Exception):
            store.record("session_interrupted", reason="stopped by the operator")
        console.print(
            f"interrupted; everything recorded is kept. Run the same command to resume: {resume}",
            markup=False,
        )
        return 130
    except (PgStoreError, RunStoreError) as exc:
        station.close()
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except InputError:
        station.close()
        with contextlib.suppress(Exception):
            store.record("session_interrupted", reason="refused: bad or changed input")
        raise
    finally:
        if background is not None:
            background.stop()
        station.close()  # gives back the name whatever ended the run (closing twice is fine)
        try:
            store.close()
        except RunStoreError as exc:
            sys.stderr.write(f"error: {exc}\n")
    console.print(f"station {name}: local files in {local}", markup=False)
    # The whole run's leaderboard, every station's jobs, read as any reader reads it.
    run = RunModel.open(PgRunSource(pg, location), site=site, testsets=controller.testsets)
    console.print(leaderboard_table(leaderboard(run), console.width))
    pg.close()
    failed = [r for r in results if r.failed and r.failed != TAKEN_OVER]
    for job in failed:
        what = job.failed if job.failed in (SKIPPED, DEVICE_DOWN) else f"failed: {job.failed}"
        console.print(f"job {job.task} / {job.system} {what}", markup=False)
    return 1 if failed else 0
