"""A run kept in PostgreSQL, as the run-store interface (harness/store/api.py) has it.

``PgRunWriter`` is what a station's controller writes through (harness/engine/station.py hands
it its jobs): each record is committed to the database (harness/store/postgres.py), a record
about a job the station holds only while it still holds the job's lease, and the files a
controller needs on its own disk stay in the station's directory. ``PgRunSource`` is
what every reader reads: the records straight from the database, in order, followed by
their sequence numbers, and the site file kept with the run. Nothing is copied to a
directory on the way.

A record is stored as the very bytes of its journal line (orjson's, as in a run
directory's journal.jsonl), so the readers' replay and follower are the same code for
both stores.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from harness.errors import InputError, Problem
from harness.site import Site, load_site
from harness.store.directory import JobKey, RunState, RunWriterBase, site_meta
from harness.store.events import SCHEMA_VERSION, AuditSeed, JournalEvent
from harness.store.journal import parse_record
from harness.store.postgres import PgRunStore, PgStoreError, run_exists, safe_dsn

__all__ = [
    "PgRunSource",
    "PgRunWriter",
    "PgTail",
    "run_location",
    "split_run_location",
    "station_session",
]

# The least time between two reads of new records, or of which stations are live, by one
# reader: a console polled by many viewers asks the database a few times a second at most.
READ_SECONDS = 0.2


def station_session(station: str, instance: str | None) -> str:
    """The session id a station journals under: its name and its registration's id."""
    return f"{station}-{instance}" if instance else station


def split_run_location(text: str) -> tuple[str, str]:
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


def run_location(dsn: str, run: str) -> str:
    """The URL naming run ``run`` in the database ``dsn`` (postgresql://HOST/DB?run=NAME)."""
    parts = urlsplit(dsn)
    query = parse_qsl(parts.query, keep_blank_values=True) + [("run", run)]
    return urlunsplit(parts._replace(query=urlencode(query)))


def _shown(text: str) -> str:
    """The run's URL as people see it: without a password (in the address or the query)."""
    parts = urlsplit(text)
    netloc = parts.netloc
    if "@" in netloc:
        user, host = netloc.rsplit("@", 1)
        netloc = f"{user.split(':', 1)[0]}@{host}"
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "password"]
    return urlunsplit(parts._replace(netloc=netloc, query=urlencode(query)))


class PgTail:
    """Follows a run's records in the database: each ``read`` gives those committed since.

    Sequence numbers follow commit order without gaps (pg_store.py), so counting the
    records read is knowing where to go on, and one committed late is never passed over.
    Records are never taken out of a run, so a tail never restarts.
    """

    def __init__(self, pg: PgRunStore, every: float = READ_SECONDS) -> None:
        self._pg = pg
        self._seq = 0
        self._every = every
        self._last = -every

    def read(self) -> tuple[bool, list[bytes]]:
        """(False, the lines committed since the last read); none when asked again within
        ``every`` seconds."""
        now = time.monotonic()
        if now - self._last < self._every:
            return False, []
        self._last = now
        lines = list(self._pg.lines(after=self._seq))
        self._seq += len(lines)
        return False, lines


class PgRunSource:
    """A run in PostgreSQL as its readers read it, straight from the database.

    Several stations may work on it at once: it runs while any station holds a live
    registration or lease (on the server's clock).
    """

    def __init__(self, pg: PgRunStore, location: str) -> None:
        self.pg = pg
        self.location = _shown(location)
        self.run_dir: Path | None = None
        self.where = Path(f"{safe_dsn(pg.dsn)} run={pg.run}")
        self._live: tuple[float, bool, set[str]] | None = None

    @classmethod
    def open(cls, text: str) -> PgRunSource:
        """Connect to the run ``postgresql://HOST/DB?run=NAME`` (InputError: no such run, or
        no server there); nothing is written to the database."""
        dsn, run = split_run_location(text)
        where = Path(safe_dsn(dsn))
        try:
            if not run_exists(dsn, run):
                raise InputError(
                    [
                        Problem(
                            where,
                            "run",
                            f"the database holds no run named {run!r}",
                            "give the site's [site] name after ?run=",
                        )
                    ]
                )
            pg = PgRunStore(dsn, run, create=False)
        except PgStoreError as exc:
            raise InputError(
                [Problem(where, "run", str(exc), "check the DSN and the server")]
            ) from None
        return cls(pg, text)

    def site(self) -> Site:
        """The site file the stations recorded with the run (SiteError when none did yet)."""
        text, meta = self.pg.site()
        if text is None or meta is None:
            raise InputError(
                [
                    Problem(
                        self.where,
                        "site",
                        "no station has recorded the run's site file yet",
                        "start a station of the run (onsite run SITE --station NAME)",
                    )
                ]
            )
        return load_site(
            Path(meta["site_file"]), base=Path(meta["site_root"]), raw=text.encode("utf-8")
        )

    def lines(self) -> Iterator[bytes]:
        """Every record of the run, in order, each its journal line."""
        return self.pg.lines()

    def tail(self) -> PgTail:
        """A follower of the run's records."""
        return PgTail(self.pg)

    def _liveness(self) -> tuple[bool, set[str]]:
        now = time.monotonic()
        if self._live is None or now - self._live[0] >= READ_SECONDS:
            running, stations = self.pg.live()
            sessions = {station_session(name, instance) for name, instance in stations}
            self._live = (now, running, sessions)
        return self._live[1], self._live[2]

    def running(self) -> bool:
        """Whether a station works on the run: a live registration or lease."""
        return self._liveness()[0]

    def live_sessions(self) -> set[str]:
        """The sessions of the stations whose registrations are live."""
        return self._liveness()[1]

    def close(self) -> None:
        """Close the database connection."""
        self.pg.close()


class PgRunWriter(RunWriterBase):
    """The run store of an operator station: records in PostgreSQL, files in ``run_dir``
    (the station's own directory: logs, staged inputs, media, outputs files).

    Every record about a job the station holds (``hold``) is written only while the
    station still holds it: ``PgRunStore.append(holder=...)`` checks the lease in the
    statement that writes, and raises LeaseLost otherwise. ``instance`` is the station's
    registration of its name (``Station.take_name``): the lease must then be that
    registration's.
    """

    def __init__(
        self,
        run_dir: Path,
        session: str,
        pg: PgRunStore,
        station: str,
        instance: str | None = None,
    ) -> None:
        super().__init__(run_dir)
        self.pg = pg
        self.session = session
        self.station = station
        self.instance = instance
        self._held: set[JobKey] = set()
        # The run so far, as every claim starts from it (a claimed job is read again).
        self.state = RunState.from_lines(pg.lines(), keep_records=False)
        self._clear_stage()

    def _append(self, event: JournalEvent) -> JournalEvent:
        """Commit one event; LeaseLost when its job was taken over. An audit seed is the
        run's first, whichever station drew it."""
        stamped = event.stamped(SCHEMA_VERSION, self.session, time.monotonic(), time.time())
        job = (getattr(stamped, "task", None), getattr(stamped, "system", None))
        holder = self.station if job in self._held else None
        self.pg.append(stamped.__dict__, holder=holder, instance=self.instance)
        if isinstance(stamped, AuditSeed):
            first = self.pg.first_record("audit_seed")
            if first is not None:
                return stamped.model_copy(update={"seed": int(first["seed"])})
        return stamped

    def lines(self, job: JobKey | None = None) -> Iterator[bytes]:
        """The run's records in order (``job``: that job's only)."""
        return self.pg.lines(job=job)

    def sync(self) -> None:
        """Nothing to do: each record is committed as it is written."""

    def _close_records(self) -> None:
        """Nothing to close: the database connection belongs to the caller."""

    def _check_room(self, record: JournalEvent) -> None:
        """Never full: records go to the database server, whose disk this station does not
        fill (a full server fails the append instead)."""

    def keep_media(self, path: str) -> None:
        """Keep a media file in the run too, so a copy of the run has every station's."""
        self.pg.put_media(path, (self.dir / path).read_bytes())

    def keep_site_copy(self, site_path: Path, site_root: Path) -> None:
        """Keep the site file in the station's directory and, for the readers, in the run."""
        super().keep_site_copy(site_path, site_root)
        # Bytes as they are (no newline translation): readers load what the stations ran.
        raw = site_path.read_bytes().decode("utf-8")
        self.pg.set_site(raw, site_meta(site_path, site_root))

    def hold(self, key: JobKey) -> None:
        """Take a claimed job: read its records into the state and rebuild its outputs file.

        Another station may have run part of it since this one started, so the job's
        records are read again now (the resume rules: read the job's records first).
        """
        lines = list(self.pg.lines(job=key))
        with self._lock:
            self._held.add(key)
            state = self.state
            state.completed.pop(key, None)
            state.done.pop(key, None)
            state.jobs.pop(key, None)
            for table in (state.attempts, state.lost):
                for stale in [k for k in table if k[:2] == key]:
                    del table[stale]
            for line in lines:
                record = parse_record(line)
                if record is not None:
                    state.apply(record)
        self._close_outputs(key)
        self.rebuild_outputs([key])

    def drop(self, key: JobKey) -> None:
        """Stop writing under this job's lease."""
        with self._lock:
            self._held.discard(key)

    def held(self) -> set[JobKey]:
        """The jobs this station holds now."""
        with self._lock:
            return set(self._held)
