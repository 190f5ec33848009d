"""The CLI side of a PostgreSQL run: `onsite run` as a station, and reading a run from the
database (`onsite status|report|console|export postgresql://.../db?run=NAME`).

Loaded only when a site names a PostgreSQL store or a command is given a DSN, so psycopg
is never imported otherwise.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import fcntl
import os
import re
import secrets
import shutil
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson

from .errors import InputError, Problem

if TYPE_CHECKING:
    from rich.console import Console

    from .pg_store import PgRunStore
    from .site import Site
    from .store import JobKey

_STATION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def _refuse(site: Site, key: str, message: str, fix: str) -> InputError:
    return InputError([Problem(site.path, key, message, fix)])


def run_station(
    args: argparse.Namespace, site: Site, run_dir: Path, jobs: list[JobKey], console: Console
) -> int:
    """`onsite run SITE [--station NAME]` with a PostgreSQL store: one station of a shared run."""
    from .controller import DEVICE_DOWN, SKIPPED, TAKEN_OVER, Controller
    from .leaderboard import leaderboard
    from .pg_store import PgRunStore, PgStoreError, safe_dsn
    from .render import ProgressListener, leaderboard_table
    from .run_model import RunModel
    from .station import NameTaken, Station, StationSettings, StationStore, state_of
    from .store import RunStoreError

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
            "onsite export-store",
        )
    if args.console:
        raise _refuse(
            site,
            "--console",
            "a station does not serve the console",
            f"serve it from any machine: onsite console '{safe_dsn(dsn)}?run={site.name}'",
        )

    local = run_dir / "stations" / name
    # This station's registration of its name; its session is named after it too.
    instance = secrets.token_hex(6)
    try:
        pg = PgRunStore(dsn, site.name, on_wait=_to_stderr)
        beat = PgRunStore(dsn, site.name, on_wait=_to_stderr)
        # Reads the run's records so far (the state every claim starts from).
        store = StationStore(local, f"{name}-{instance}", pg, name, instance)
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
    try:
        store.keep_site_copy(site.path, site.root)
        pg.set_site(
            site.path.read_text(encoding="utf-8"),
            {"site_file": str(site.path), "site_root": str(site.root)},
        )
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
        station.close()  # gives back the name whatever ended the run (closing twice is fine)
        try:
            store.close()
        except RunStoreError as exc:
            sys.stderr.write(f"error: {exc}\n")
    console.print(f"station {name}: local files in {local}", markup=False)
    run = RunModel(
        run_dir=local, site=site, state=state_of(pg.records()), _testsets=controller.testsets
    )
    console.print(leaderboard_table(leaderboard(run), console.width))
    pg.close()
    failed = [r for r in results if r.failed and r.failed != TAKEN_OVER]
    for job in failed:
        what = job.failed if job.failed in (SKIPPED, DEVICE_DOWN) else f"failed: {job.failed}"
        console.print(f"job {job.task} / {job.system} {what}", markup=False)
    return 1 if failed else 0


def is_pg_run(text: str) -> bool:
    """A run kept in PostgreSQL (postgresql://HOST/DB?run=NAME), not a directory."""
    return text.startswith(("postgresql://", "postgres://"))


def run_dir_of(text: str, follow: bool) -> Path:
    """A run directory, or a PostgreSQL run copied to a temporary one (``mirror_of``)
    that this process keeps following when ``follow``."""
    return mirror_of(text, follow) if is_pg_run(text) else Path(text)


def split_run_dsn(text: str) -> tuple[str, str]:
    """``postgresql://.../db?run=NAME`` as (the DSN to connect with, the run's name)."""
    parts = urlsplit(text)
    query = parse_qsl(parts.query, keep_blank_values=True)
    runs = [v for k, v in query if k == "run"]
    if len(runs) != 1 or not runs[0]:
        raise InputError(
            [
                Problem(
                    Path("run"),
                    "",
                    "a PostgreSQL run is given as postgresql://HOST/DB?run=NAME",
                    "add ?run= and the run's name (the site's [site] name)",
                )
            ]
        )
    rest = urlencode([(k, v) for k, v in query if k != "run"])
    return urlunsplit(parts._replace(query=rest)), runs[0]


def mirror_of(text: str, follow: bool) -> Path:
    """A temporary run directory holding the PostgreSQL run's records, site file and outputs.

    The readers (status, report, console, export) then read it as any run directory.
    With ``follow``, a thread of this process appends the records committed later, and
    holds the copy's run.lock while any station holds a live lease, so "controller
    running" means the same as for a directory. The copy is removed when the process ends.
    """
    from .export_store import export_run
    from .pg_store import PgRunStore, PgStoreError, run_exists, safe_dsn

    dsn, run = split_run_dsn(text)
    try:
        if not run_exists(dsn, run):
            raise InputError(
                [
                    Problem(
                        Path(safe_dsn(dsn)),
                        "run",
                        f"the database holds no run named {run!r}",
                        "give the site's [site] name after ?run=",
                    )
                ]
            )
        store = PgRunStore(dsn, run, on_wait=_to_stderr)
        home = Path(tempfile.mkdtemp(prefix="onsite-pgrun-"))
        atexit.register(shutil.rmtree, home, True)
        copy = home / run
        count = export_run(store, copy)
    except PgStoreError as exc:
        raise InputError(
            [Problem(Path(safe_dsn(dsn)), "run", str(exc), "check the DSN and the server")]
        ) from None
    mirror = _Mirror(store, copy, count)
    mirror.update_lock()
    if follow:
        threading.Thread(target=mirror.follow, name="pg-mirror", daemon=True).start()
    return copy


class _Mirror:
    """Keeps a run directory copy in step with the database."""

    def __init__(self, store: PgRunStore, run_dir: Path, count: int) -> None:
        self.store = store
        self.dir = run_dir
        self.seq = count  # sequence numbers are gapless: the count read is the last seq
        self._lock_fd = os.open(run_dir / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
        self._locked = False

    def update_lock(self) -> None:
        """Hold run.lock while some station holds a live lease."""
        live = any(row["station"] and not row["expired"] for row in self.store.jobs())
        if live and not self._locked:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        elif not live and self._locked:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        self._locked = live

    def follow(self, interval: float = 0.5) -> None:
        """Append new records to the copy's journal, for ever (a daemon thread)."""
        stop = threading.Event()
        with open(self.dir / "journal.jsonl", "ab") as journal:
            while not stop.wait(interval):
                with contextlib.suppress(Exception):
                    lines: list[bytes] = []
                    for record in self.store.records(after=self.seq):
                        lines.append(orjson.dumps(record) + b"\n")
                    if lines:
                        journal.write(b"".join(lines))
                        journal.flush()
                        self.seq += len(lines)
                    self.update_lock()
