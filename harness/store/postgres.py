"""A run stored in PostgreSQL: the journal, the site file, and (task, system) job leases.

Several operator stations share one run through the server's own features: each
journal record is its own committed transaction; a per-run counter row, locked by
each append until it commits, gives records a gapless sequence in commit order (so a
reader following ``seq`` never misses one committed late); jobs are handed out with
``SELECT ... FOR UPDATE SKIP LOCKED`` and leased on the server's clock, so the
stations' clocks never matter. A station that stops heartbeating loses its jobs when
the lease runs out and any station may claim them; the journal's resume rules (read
the job's records first) then keep each item exactly once.

A station's name is held by one live station at a time: a station registers it with an
instance id of its own when it starts (``register_station``, one ``INSERT ... ON
CONFLICT`` statement, so of two stations starting at once exactly one wins), renews it
with its leases, and gives it back when it ends. Leases are held by (name, instance):
a station that lost its name (another took it over after its registration expired)
can claim nothing, renew nothing and write nothing more about any job.

Records are kept as ``json``, not ``jsonb``: jsonb refuses ``\\u0000`` inside strings
(a participant may answer with one) and reorders keys; the journal keeps every byte.

When the server goes away (restart, network), each operation waits with backoff,
reconnects and tries again, reporting what it waits for. Appends carry a record id the
client chose, so an append whose commit was lost in flight is never written twice.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

import orjson
import psycopg
from psycopg import sql

from harness.errors import LeaseLost

__all__ = [
    "Claim",
    "LeaseLost",
    "PgRunStore",
    "PgStoreError",
    "Registration",
    "Retry",
    "run_exists",
    "safe_dsn",
]

JobKey = tuple[str, str]  # (task, system)
T = TypeVar("T")

_log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS onsite_runs (
    run text PRIMARY KEY,
    last_seq bigint NOT NULL DEFAULT 0,
    site_toml text,
    meta json,
    created timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS onsite_records (
    run text NOT NULL REFERENCES onsite_runs (run),
    seq bigint NOT NULL,
    rid uuid NOT NULL,
    event text NOT NULL,
    task text,
    system text,
    body json NOT NULL,
    PRIMARY KEY (run, seq),
    UNIQUE (run, rid)
);
CREATE INDEX IF NOT EXISTS onsite_records_job ON onsite_records (run, task, system, seq);
CREATE TABLE IF NOT EXISTS onsite_jobs (
    run text NOT NULL REFERENCES onsite_runs (run),
    task text NOT NULL,
    system text NOT NULL,
    finished boolean NOT NULL DEFAULT false,
    station text,
    lease_seconds double precision,
    lease_until timestamptz,
    claims integer NOT NULL DEFAULT 0,
    PRIMARY KEY (run, task, system)
);
-- Which registration of the station name holds the lease (runs made before it: NULL).
ALTER TABLE onsite_jobs ADD COLUMN IF NOT EXISTS instance text;
-- Files a kind keeps beside the outputs (a synthesizer's audio: media/<task>/<id>.wav),
-- by their path in a run directory: each station keeps them on its own disk and here, so
-- a copy of the run (`onsite copy-run`) has every station's and the judges can hear them.
CREATE TABLE IF NOT EXISTS onsite_media (
    run text NOT NULL REFERENCES onsite_runs (run),
    path text NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (run, path)
);
-- One row per station name in use: the primary key is what lets one station in.
CREATE TABLE IF NOT EXISTS onsite_stations (
    run text NOT NULL REFERENCES onsite_runs (run),
    name text NOT NULL,
    instance text NOT NULL,
    host text NOT NULL,
    pid integer NOT NULL,
    process text,
    lease_seconds double precision NOT NULL,
    started timestamptz NOT NULL,
    last_seen timestamptz NOT NULL,
    PRIMARY KEY (run, name)
);
"""

# Connection failures worth waiting out: the server restarting, shutting down, or not
# reachable yet. Anything else (a wrong password, a missing database) is reported at once.
# A deadlock or serialization failure aborts only the transaction: run it again.
_TRANSIENT_SQLSTATES = {"57P01", "57P02", "57P03", "53300", "40P01", "40001"}
_PAGE = 2000
_PASSING_FATALS = (
    "starting up",
    "shutting down",
    "in recovery mode",
    "not yet accepting connections",
    "too many clients",
    "remaining connection slots",
    "administrator command",
)


class PgStoreError(RuntimeError):
    """The PostgreSQL run store cannot be used; the message says what to fix."""


@dataclass(frozen=True)
class Retry:
    """How long operations wait for the server, and how the waits grow."""

    give_up_seconds: float = 600.0
    first_delay: float = 0.1
    max_delay: float = 5.0


@dataclass(frozen=True)
class Claim:
    """A job a station holds a lease on."""

    task: str
    system: str
    claims: int  # how many times the job was handed out, this claim included
    previous_station: str | None  # who held it before (a takeover when claims > 1)


@dataclass(frozen=True)
class Registration:
    """Who holds a station name in a run: the station that registered it last."""

    name: str
    instance: str  # the holder's own random id; a later station of the name has another
    host: str
    pid: int
    # Where the holder runs, as the holder described itself (harness/engine/station.py), so a
    # station on the same machine can tell that the holder's process is gone.
    process: str | None
    lease_seconds: float  # the registration expires this long after it was last renewed
    started: datetime
    seen_seconds_ago: float  # on the server's clock


def safe_dsn(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "<unparsable DSN>"
    info.pop("password", None)
    return psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in info.items() if v is not None})


def _transient(exc: psycopg.Error) -> bool:
    if isinstance(exc, psycopg.errors.AdminShutdown | psycopg.errors.CannotConnectNow):
        return True
    state = getattr(exc, "sqlstate", None)
    if state is not None:
        return state in _TRANSIENT_SQLSTATES or state.startswith("08")
    if not isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
        return False
    # A failed connection carries no SQLSTATE. The server refusing us for good (no such
    # database or role, authentication) says FATAL; so does a server starting or
    # stopping, which is worth waiting for. Refused or reset connections say neither.
    text = str(exc)
    if "FATAL:" not in text:
        return True
    return any(reason in text for reason in _PASSING_FATALS)


class PgRunStore:
    """One run in a PostgreSQL database, shared by any number of stations.

    ``on_wait`` hears one line each time an operation waits for the server (default:
    a log warning); library code does not print.
    """

    def __init__(
        self,
        dsn: str,
        run: str,
        *,
        retry: Retry = Retry(),
        on_wait: Callable[[str], None] | None = None,
        create: bool = True,
    ) -> None:
        self.dsn = dsn
        self.run = run
        self.retry = retry
        self._on_wait = on_wait or (lambda line: _log.warning("%s", line))
        self._conn: psycopg.Connection[Any] | None = None
        # One connection per store; a station's job threads take turns on it.
        self._lock = threading.Lock()
        # A reader (create=False) writes nothing, so a role that may only read can read.
        if create:
            self._with_retry("create the schema", self._create_schema)

    # -- connection and retries -------------------------------------------------

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            # Autocommit outside the explicit transactions: no transaction stays open idle.
            self._conn = psycopg.connect(self.dsn, connect_timeout=5, autocommit=True)
        return self._conn

    def _with_retry(
        self,
        what: str,
        operation: Callable[[psycopg.Connection[Any]], T],
        transaction: bool = True,
    ) -> T:
        """Run ``operation`` in one transaction (or, without ``transaction``, as the one
        statement it makes); reconnect and retry while the server is away."""
        with self._lock:
            return self._retrying(what, operation, transaction)

    def _retrying(
        self,
        what: str,
        operation: Callable[[psycopg.Connection[Any]], T],
        transaction: bool = True,
    ) -> T:
        started = time.monotonic()
        delay = self.retry.first_delay
        while True:
            try:
                conn = self._connection()
                if not transaction:
                    return operation(conn)
                with conn.transaction():
                    return operation(conn)
            except psycopg.Error as exc:
                if not _transient(exc):
                    raise PgStoreError(
                        f"PostgreSQL run store {safe_dsn(self.dsn)}: cannot {what}: "
                        f"{str(exc).strip()}; check [site] store and the database "
                        "(docs/scale.md)"
                    ) from exc
                self._drop_connection()
                waited = time.monotonic() - started
                if waited >= self.retry.give_up_seconds:
                    raise PgStoreError(
                        f"PostgreSQL run store {safe_dsn(self.dsn)}: gave up after "
                        f"{waited:.0f} s waiting to {what}: {str(exc).strip()}; start the "
                        "database server, then run the same command to resume"
                    ) from exc
                self._on_wait(
                    f"waiting for PostgreSQL at {safe_dsn(self.dsn)} to {what} "
                    f"({str(exc).strip() or type(exc).__name__}); retrying in {delay:.1f} s"
                )
                time.sleep(delay)
                delay = min(delay * 2, self.retry.max_delay)

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                pass
        self._conn = None

    def close(self) -> None:
        """Close the connection (every append is already committed)."""
        self._drop_connection()

    def __enter__(self) -> PgRunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _create_schema(self, conn: psycopg.Connection[Any]) -> None:
        # Two stations starting at once must not race on CREATE TABLE IF NOT EXISTS.
        # DDL only when a table is missing: CREATE ... IF NOT EXISTS still locks the
        # tables, which would stall (or deadlock with) stations appending to them.
        missing = conn.execute(
            "SELECT to_regclass('onsite_jobs') IS NULL OR to_regclass('onsite_records') IS NULL "
            "OR to_regclass('onsite_stations') IS NULL"
        ).fetchone()
        if missing and missing[0]:
            conn.execute("SELECT pg_advisory_xact_lock(hashtext('onsite_schema'))")
            conn.execute(SCHEMA)
        conn.execute("INSERT INTO onsite_runs (run) VALUES (%s) ON CONFLICT DO NOTHING", [self.run])

    # -- the run itself --------------------------------------------------------

    def set_site(self, site_toml: str, meta: dict[str, Any]) -> None:
        """Keep the site file and its run.json facts beside the run, as the run directory does."""
        self._with_retry(
            "record the site file",
            lambda conn: conn.execute(
                "UPDATE onsite_runs SET site_toml = %s, meta = %s::json WHERE run = %s",
                [site_toml, orjson.dumps(meta).decode(), self.run],
            ),
        )

    def put_media(self, path: str, data: bytes) -> None:
        """Keep a media file (``path`` as in a run directory: media/<task>/<name>).

        A file is written once per path (its name is the item's anonymous id): a second
        write of the same path, a resumed station's, keeps the first."""
        self._with_retry(
            "keep a media file",
            lambda conn: conn.execute(
                "INSERT INTO onsite_media (run, path, data) VALUES (%s, %s, %s) "
                "ON CONFLICT (run, path) DO NOTHING",
                [self.run, path, data],
            ),
        )

    def media(self) -> Iterator[tuple[str, bytes]]:
        """Every media file kept with ``put_media``: (path, bytes), in path order."""
        paths = self._with_retry(
            "list the media files",
            lambda conn: [
                str(row[0])
                for row in conn.execute(
                    "SELECT path FROM onsite_media WHERE run = %s ORDER BY path", [self.run]
                ).fetchall()
            ],
        )
        # One file at a time: a run's audio may not fit in memory at once.
        for path in paths:
            data = self._with_retry(
                "read a media file",
                lambda conn, path=path: conn.execute(  # type: ignore[misc]
                    "SELECT data FROM onsite_media WHERE run = %s AND path = %s",
                    [self.run, path],
                ).fetchone(),
            )
            if data is not None:
                yield path, bytes(data[0])

    def site(self) -> tuple[str | None, dict[str, Any] | None]:
        """The site file and run.json facts recorded with ``set_site`` (None when never set)."""

        def read(conn: psycopg.Connection[Any]) -> tuple[str | None, dict[str, Any] | None]:
            row = conn.execute(
                "SELECT site_toml, meta::text FROM onsite_runs WHERE run = %s", [self.run]
            ).fetchone()
            if row is None:
                return None, None
            return row[0], (orjson.loads(row[1]) if row[1] is not None else None)

        return self._with_retry("read the site file", read)

    def append(
        self,
        record: dict[str, Any],
        record_id: uuid.UUID | None = None,
        holder: str | None = None,
        instance: str | None = None,
    ) -> int:
        """Commit one journal record and return its sequence number in the run.

        Idempotent per ``record_id`` (one is made when not given, and kept across
        retries): a record whose commit was lost with the connection is not written
        again. Returns the existing record's number in that case.

        With ``holder``, the record (about the job its task and system name) is written
        only while that station holds the job, checked in the same transaction with the
        job's row locked against a claim; otherwise LeaseLost is raised and nothing is
        written. A station cut off past its lease can then never add to a job another
        station has taken over. With ``instance`` too (a registered station), the lease
        must be that registration's and the registration must still hold the name.
        """
        rid = record_id or uuid.uuid4()
        body = orjson.dumps(record).decode()
        event = str(record.get("event", ""))
        task, system = record.get("task"), record.get("system")

        params = {
            "run": self.run,
            "rid": rid,
            "event": event,
            "task": _text(task),
            "system": _text(system),
            "body": body,
            "holder": holder,
            "instance": instance,
        }

        def write(conn: psycopg.Connection[Any]) -> int:
            # One statement, so one round trip that commits on its own (autocommit). The
            # counter row stays locked until that commit, so numbers follow commit order;
            # the job's row is share-locked against a claim while the lease is checked.
            row = conn.execute(_APPEND, params).fetchone()
            if row is not None:
                return int(row[0])
            # Nothing written: either this record was written before the connection was
            # lost (its commit acknowledgement with it), or the lease is gone.
            existing = conn.execute(
                "SELECT seq FROM onsite_records WHERE run = %s AND rid = %s", [self.run, rid]
            ).fetchone()
            if existing is not None:
                return int(existing[0])
            if holder is not None:
                raise LeaseLost(holder, str(task), str(system))
            raise PgStoreError(f"run {self.run!r} is missing from the database")

        return self._with_retry("append a journal record", write, transaction=False)

    def import_records(
        self,
        records: Callable[[], Iterable[dict[str, Any]]],
        media: Callable[[], Iterable[tuple[str, bytes]]] = lambda: (),
    ) -> int:
        """Copy records, and the media files the run kept, into this run, which must be
        empty, in one transaction.

        ``records`` and ``media`` make a fresh iterable each time: a lost connection
        repeats the whole copy. Returns how many records were copied, or -1 when the run
        held records.
        """

        def copy(conn: psycopg.Connection[Any]) -> int:
            row = conn.execute(
                "SELECT last_seq FROM onsite_runs WHERE run = %s FOR UPDATE", [self.run]
            ).fetchone()
            if row is None or int(row[0]) != 0:
                return -1
            seq = 0
            with conn.cursor().copy(
                "COPY onsite_records (run, seq, rid, event, task, system, body) FROM STDIN"
            ) as pipe:
                for record in records():
                    seq += 1
                    pipe.write_row(
                        (
                            self.run,
                            seq,
                            uuid.uuid4(),
                            str(record.get("event", "")),
                            _text(record.get("task")),
                            _text(record.get("system")),
                            orjson.dumps(record).decode(),
                        )
                    )
            conn.execute("UPDATE onsite_runs SET last_seq = %s WHERE run = %s", [seq, self.run])
            for path, data in media():
                conn.execute(
                    "INSERT INTO onsite_media (run, path, data) VALUES (%s, %s, %s) "
                    "ON CONFLICT (run, path) DO NOTHING",
                    [self.run, path, data],
                )
            return seq

        return self._with_retry("copy records into the run", copy)

    def records(
        self,
        run: str | None = None,
        after: int = 0,
        job: JobKey | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Every record of a run (default: this store's) after sequence ``after``, in order,
        as plain JSON (``lines`` gives them as written)."""
        for line in self.lines(after, job, run):
            yield orjson.loads(line)

    def lines(
        self, after: int = 0, job: JobKey | None = None, run: str | None = None
    ) -> Iterator[bytes]:
        """Every record of a run (default: this store's) after sequence ``after``, in order,
        each the bytes of its journal line (what ``append`` was given, as orjson wrote it).

        Read in pages, so memory stays bounded and a server restart mid-read resumes
        where it stopped. ``job`` keeps only one (task, system) job's records. Sequence
        numbers have no gaps, so a reader that counts the lines it read knows the number
        of the last.
        """
        name = run or self.run
        last = after
        while True:
            page = self._with_retry(
                "read the journal",
                lambda conn, after=last: _read_page(conn, name, after, job),  # type: ignore[misc]
            )
            for seq, text in page:
                last = seq
                yield text.encode()
            if len(page) < _PAGE:
                return

    def last_seq(self) -> int:
        """The sequence number of the run's last record (0 when empty)."""
        row = self._with_retry(
            "read the journal",
            lambda conn: conn.execute(
                "SELECT last_seq FROM onsite_runs WHERE run = %s", [self.run]
            ).fetchone(),
        )
        return int(row[0]) if row else 0

    # -- job leases ----------------------------------------------------------

    def add_jobs(self, jobs: Iterable[JobKey]) -> None:
        """Make the run's (task, system) jobs known; jobs already there keep their state."""
        rows = [(self.run, task, system) for task, system in jobs]

        def write(conn: psycopg.Connection[Any]) -> None:
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO onsite_jobs (run, task, system) VALUES (%s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    rows,
                )

        self._with_retry("add jobs", write)

    def claim(
        self, station: str, lease_seconds: float, instance: str | None = None
    ) -> Claim | None:
        """Lease one unfinished job nobody holds (or whose lease ran out) to ``station``.

        Rows another station is claiming at this instant are skipped, not waited for.
        None when every unfinished job is leased to a live station, or when ``instance``
        is given and no longer holds the name ``station``.
        """
        _check_lease(lease_seconds)

        def take(conn: psycopg.Connection[Any]) -> Claim | None:
            if not self._holds_name(conn, station, instance):
                return None
            row = conn.execute(
                "SELECT task, system, station FROM onsite_jobs "
                "WHERE run = %s AND NOT finished "
                "AND (station IS NULL OR lease_until < clock_timestamp()) "
                "ORDER BY task, system LIMIT 1 FOR UPDATE SKIP LOCKED",
                [self.run],
            ).fetchone()
            if row is None:
                return None
            task, system, previous = row
            return self._lease(conn, station, instance, lease_seconds, task, system, previous)

        return self._with_retry(f"claim a job for station {station}", take)

    def _lease(
        self,
        conn: psycopg.Connection[Any],
        station: str,
        instance: str | None,
        lease_seconds: float,
        task: str,
        system: str,
        previous: str | None,
    ) -> Claim:
        """Lease a job row this transaction has locked to ``station``."""
        claims = conn.execute(
            "UPDATE onsite_jobs SET station = %s, instance = %s, lease_seconds = %s, "
            "lease_until = clock_timestamp() + make_interval(secs => %s), "
            "claims = claims + 1 WHERE run = %s AND task = %s AND system = %s "
            "RETURNING claims",
            [station, instance, lease_seconds, lease_seconds, self.run, task, system],
        ).fetchone()
        assert claims is not None
        return Claim(task, system, int(claims[0]), previous)

    def claim_in(
        self,
        station: str,
        lease_seconds: float,
        candidates: Iterable[JobKey],
        group: Iterable[JobKey],
        instance: str | None = None,
    ) -> Claim | None:
        """Lease one of ``candidates`` to ``station`` unless another live station holds a
        job of ``group`` (the jobs sharing one device), so a device runs one job at a time
        across stations.

        Every row of the group is locked (``FOR UPDATE SKIP LOCKED``) while deciding; a
        row another station is locking at this instant makes the answer None, to be asked
        again later. A job held by ``station`` itself (a restarted station of the same
        name) may be claimed again at once: with ``instance``, only while that
        registration holds the name, so the earlier holder of the name is gone (it gave
        the name back, or its registration, renewed with its leases, expired).
        """
        _check_lease(lease_seconds)
        wanted = sorted(set(candidates))
        members = sorted(set(group) | set(wanted))

        def take(conn: psycopg.Connection[Any]) -> Claim | None:
            if not self._holds_name(conn, station, instance):
                return None
            tasks, systems = [t for t, _ in members], [s for _, s in members]
            pick = (
                "FROM onsite_jobs WHERE run = %s AND (task, system) IN "
                "(SELECT * FROM unnest(%s::text[], %s::text[]))"
            )
            present = conn.execute("SELECT count(*) " + pick, [self.run, tasks, systems]).fetchone()
            rows = conn.execute(
                "SELECT task, system, finished, station, "
                "lease_until IS NOT NULL AND lease_until >= clock_timestamp() "
                + pick
                + " ORDER BY task, system FOR UPDATE SKIP LOCKED",
                [self.run, tasks, systems],
            ).fetchall()
            if present is None or len(rows) < int(present[0]):
                return None  # another station is claiming or writing in this group now
            if any(holder not in (None, station) and live for _, _, _, holder, live in rows):
                return None
            free = [
                (t, s, holder)
                for t, s, finished, holder, live in rows
                if (t, s) in wanted and not finished
            ]
            if not free:
                return None
            task, system, previous = free[0]
            return self._lease(conn, station, instance, lease_seconds, task, system, previous)

        return self._with_retry(f"claim a job for station {station}", take)

    def first_record(self, event: str) -> dict[str, Any] | None:
        """The run's first record of one event type (None when there is none)."""
        row = self._with_retry(
            "read the journal",
            lambda conn: conn.execute(
                "SELECT body::text FROM onsite_records WHERE run = %s AND event = %s "
                "ORDER BY seq LIMIT 1",
                [self.run, event],
            ).fetchone(),
        )
        return orjson.loads(row[0]) if row else None

    def heartbeat(self, station: str, instance: str | None = None) -> list[JobKey] | None:
        """Extend every lease ``station`` holds; return the jobs it still holds.

        A job missing from the answer was taken over after its lease ran out: the
        station must stop working on it. With ``instance``, the name's registration is
        renewed in the same transaction, and None is the answer when that registration
        no longer holds the name (another station took it over): the station must stop.
        """

        def beat(conn: psycopg.Connection[Any]) -> list[JobKey] | None:
            if instance is not None:
                renewed = conn.execute(
                    "UPDATE onsite_stations SET last_seen = clock_timestamp() "
                    "WHERE run = %s AND name = %s AND instance = %s RETURNING 1",
                    [self.run, station, instance],
                ).fetchone()
                if renewed is None:
                    return None
            rows = conn.execute(
                "UPDATE onsite_jobs SET lease_until = clock_timestamp() "
                "+ make_interval(secs => lease_seconds) "
                "WHERE run = %s AND station = %s AND instance IS NOT DISTINCT FROM %s "
                "AND NOT finished RETURNING task, system",
                [self.run, station, instance],
            ).fetchall()
            return sorted((str(t), str(s)) for t, s in rows)

        return self._with_retry(f"renew the leases of station {station}", beat)

    def release(
        self, station: str, task: str, system: str, finished: bool, instance: str | None = None
    ) -> bool:
        """Give a job back: finished (nobody claims it again) or not (free for anyone now).

        False when ``station`` (that registration of it, with ``instance``) no longer
        held it (its lease ran out and another took it).
        """

        def give_back(conn: psycopg.Connection[Any]) -> bool:
            row = conn.execute(
                "UPDATE onsite_jobs SET finished = %s, station = NULL, instance = NULL, "
                "lease_until = NULL WHERE run = %s AND task = %s AND system = %s "
                "AND station = %s AND instance IS NOT DISTINCT FROM %s RETURNING 1",
                [finished, self.run, task, system, station, instance],
            ).fetchone()
            return row is not None

        return self._with_retry(f"release {task}/{system}", give_back)

    def mark_finished(self, task: str, system: str) -> None:
        """Record a job as finished whoever holds it (used when importing a finished run)."""
        self._with_retry(
            f"mark {task}/{system} finished",
            lambda conn: conn.execute(
                "UPDATE onsite_jobs SET finished = true, station = NULL, instance = NULL, "
                "lease_until = NULL WHERE run = %s AND task = %s AND system = %s",
                [self.run, task, system],
            ),
        )

    # -- station names ---------------------------------------------------------

    def _holds_name(
        self, conn: psycopg.Connection[Any], station: str, instance: str | None
    ) -> bool:
        """Whether ``instance`` holds the name ``station`` (always, without an instance).

        The registration row is share-locked until the transaction ends, so the name
        cannot be taken over while this transaction claims under it.
        """
        if instance is None:
            return True
        row = conn.execute(
            "SELECT 1 FROM onsite_stations WHERE run = %s AND name = %s AND instance = %s "
            "FOR SHARE",
            [self.run, station, instance],
        ).fetchone()
        return row is not None

    def register_station(
        self,
        name: str,
        instance: str,
        *,
        host: str,
        pid: int,
        process: str | None,
        lease_seconds: float,
        replace: str | None = None,
    ) -> Registration | None:
        """Take the station name ``name`` for ``instance``; None when it now holds it.

        Otherwise the answer is the live station that holds the name: one whose
        registration has not expired (``lease_seconds`` after it was last renewed, on
        the server's clock) and is not ``replace`` (a holder the caller knows is gone).
        The name is taken in one statement on the name's unique row, so of any number
        of stations registering one name at the same instant exactly one gets it.
        """
        _check_lease(lease_seconds)
        params = {
            "run": self.run,
            "name": name,
            "instance": instance,
            "host": host,
            "pid": pid,
            "process": process,
            "lease": lease_seconds,
            "replace": replace,
        }

        def take(conn: psycopg.Connection[Any]) -> Registration | None:
            # The row may be given back between the refusal and the read of its holder:
            # then try again.
            while True:
                if conn.execute(_REGISTER, params).fetchone() is not None:
                    return None
                holder = _holder(conn, self.run, name)
                if holder is not None:
                    return holder

        return self._with_retry(f"register station name {name}", take)

    def station_holder(self, name: str) -> Registration | None:
        """Who holds the station name ``name`` now (None: nobody)."""
        return self._with_retry(
            f"read station name {name}", lambda conn: _holder(conn, self.run, name)
        )

    def unregister_station(self, name: str, instance: str) -> bool:
        """Give the name back; False when ``instance`` no longer held it."""
        return self._with_retry(
            f"give back station name {name}",
            lambda conn: (
                conn.execute(
                    "DELETE FROM onsite_stations WHERE run = %s AND name = %s AND instance = %s "
                    "RETURNING 1",
                    [self.run, name, instance],
                ).fetchone()
                is not None
            ),
        )

    def live(self) -> tuple[bool, set[tuple[str, str]]]:
        """Whether a station works on the run (one holds a live lease or a registration
        that has not expired, on the server's clock), and the registrations that are live
        (name, instance)."""

        def read(conn: psycopg.Connection[Any]) -> tuple[bool, set[tuple[str, str]]]:
            stations = conn.execute(
                "SELECT name, instance FROM onsite_stations WHERE run = %s "
                "AND last_seen + make_interval(secs => lease_seconds) >= clock_timestamp()",
                [self.run],
            ).fetchall()
            leased = conn.execute(
                "SELECT EXISTS (SELECT 1 FROM onsite_jobs WHERE run = %s "
                "AND station IS NOT NULL AND lease_until >= clock_timestamp())",
                [self.run],
            ).fetchone()
            live = {(str(name), str(instance)) for name, instance in stations}
            return bool(live) or bool(leased and leased[0]), live

        return self._with_retry("read which stations are live", read)

    def jobs(self) -> list[dict[str, Any]]:
        """Every job with its lease state, for status displays."""

        def read(conn: psycopg.Connection[Any]) -> list[dict[str, Any]]:
            cur = conn.execute(
                "SELECT task, system, finished, station, lease_until, claims, "
                "lease_until IS NOT NULL AND lease_until < clock_timestamp() AS expired "
                "FROM onsite_jobs WHERE run = %s ORDER BY task, system",
                [self.run],
            )
            names = [d.name for d in cur.description or ()]
            return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

        return self._with_retry("read the jobs", read)


_APPEND = """
WITH counter AS (
    UPDATE onsite_runs SET last_seq = last_seq + 1
    WHERE run = %(run)s
    AND NOT EXISTS (SELECT 1 FROM onsite_records WHERE run = %(run)s AND rid = %(rid)s)
    AND (%(holder)s::text IS NULL OR EXISTS (
        SELECT 1 FROM onsite_jobs
        WHERE run = %(run)s AND task = %(task)s AND system = %(system)s
        AND station = %(holder)s AND instance IS NOT DISTINCT FROM %(instance)s::text
        AND NOT finished
        FOR SHARE))
    AND (%(holder)s::text IS NULL OR %(instance)s::text IS NULL OR EXISTS (
        SELECT 1 FROM onsite_stations
        WHERE run = %(run)s AND name = %(holder)s AND instance = %(instance)s::text))
    RETURNING last_seq
)
INSERT INTO onsite_records (run, seq, rid, event, task, system, body)
SELECT %(run)s, last_seq, %(rid)s, %(event)s, %(task)s, %(system)s, %(body)s::json FROM counter
RETURNING seq
"""


# The name is free (no row), held by this instance already, held by a holder known to be
# gone, or held by a registration that expired: in each case this instance takes it. The
# conflicting row is locked by ON CONFLICT and the WHERE is evaluated on its latest
# version, so two stations cannot both take it.
_REGISTER = """
INSERT INTO onsite_stations AS s
    (run, name, instance, host, pid, process, lease_seconds, started, last_seen)
VALUES (%(run)s, %(name)s, %(instance)s, %(host)s, %(pid)s, %(process)s, %(lease)s,
        clock_timestamp(), clock_timestamp())
ON CONFLICT (run, name) DO UPDATE SET
    instance = excluded.instance, host = excluded.host, pid = excluded.pid,
    process = excluded.process, lease_seconds = excluded.lease_seconds,
    started = excluded.started, last_seen = excluded.last_seen
WHERE s.instance = excluded.instance
    OR s.instance = %(replace)s::text
    OR s.last_seen + make_interval(secs => s.lease_seconds) < clock_timestamp()
RETURNING 1
"""


def _holder(conn: psycopg.Connection[Any], run: str, name: str) -> Registration | None:
    row = conn.execute(
        "SELECT name, instance, host, pid, process, lease_seconds, started, "
        "extract(epoch FROM clock_timestamp() - last_seen) "
        "FROM onsite_stations WHERE run = %s AND name = %s",
        [run, name],
    ).fetchone()
    if row is None:
        return None
    name, instance, host, pid, process, lease, started, ago = row
    return Registration(
        str(name),
        str(instance),
        str(host),
        int(pid),
        None if process is None else str(process),
        float(lease),
        started,
        float(ago),
    )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _check_lease(lease_seconds: float) -> None:
    if not lease_seconds > 0:
        raise ValueError(f"lease_seconds must be positive, not {lease_seconds!r}")


def _read_page(
    conn: psycopg.Connection[Any], run: str, after: int, job: JobKey | None
) -> list[tuple[int, str]]:
    query: sql.Composable = sql.SQL(
        "SELECT seq, body::text FROM onsite_records WHERE run = %s AND seq > %s"
    )
    params: list[Any] = [run, after]
    if job is not None:
        query += sql.SQL(" AND task = %s AND system = %s")
        params += list(job)
    query += sql.SQL(" ORDER BY seq LIMIT {}").format(sql.Literal(_PAGE))
    return [(int(seq), str(text)) for seq, text in conn.execute(query, params).fetchall()]


def run_exists(dsn: str, run: str) -> bool:
    """Whether the database holds a run of this name (without creating anything)."""
    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            found = conn.execute("SELECT to_regclass('onsite_runs') IS NOT NULL").fetchone()
            if not found or not found[0]:
                return False
            row = conn.execute("SELECT 1 FROM onsite_runs WHERE run = %s", [run]).fetchone()
            return row is not None
    except psycopg.Error as exc:
        raise PgStoreError(
            f"PostgreSQL run store {safe_dsn(dsn)}: {str(exc).strip()}; check the DSN "
            "and that the server runs (docs/scale.md)"
        ) from exc
