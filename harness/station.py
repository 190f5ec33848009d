"""Operator stations sharing one run in PostgreSQL (`onsite run SITE --station NAME`).

A station is a controller whose journal records go to the PostgreSQL run store
(harness/pg_store.py) instead of the run directory's journal.jsonl, and whose jobs
are handed out by the database: it claims one (task, system) job at a time per
device, under a lease a heartbeat thread renews, reads the job's records before
running it (the resume rules of one controller), and gives it back finished or not.
Every record about a held job is written only while the station still holds it
(``PgRunStore.append(holder=...)``), so a station cut off past its lease writes
nothing more about a job another station took over.

What a station needs on its own disk stays in its local directory
(``runs/<site>/stations/<NAME>/``): the systems' logs, staged inputs, media, the
outputs files (rebuilt from the database when a job is claimed and at the end).

psycopg is imported by the functions that open a store, never when this module loads.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .events import SCHEMA_VERSION, AuditSeed, Completed, JournalEvent
from .journal import as_event
from .store import JobKey, RunState, RunStore

if TYPE_CHECKING:
    from .controller import JobResult
    from .pg_store import PgRunStore

E = TypeVar("E", bound=JournalEvent)

DEFAULT_LEASE_SECONDS = 30.0


@dataclass(frozen=True)
class StationSettings:
    """A station's name and how it holds jobs."""

    name: str
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    # How often a station with nothing to claim asks again (another may die meanwhile).
    poll_seconds: float = 1.0
    # At most this many jobs at once (None: one per device), so the stations share them.
    max_jobs: int | None = None

    @property
    def heartbeat_seconds(self) -> float:
        """A third of the lease: two heartbeats may be missed before the lease runs out."""
        return self.lease_seconds / 3


def state_of(records: Iterable[dict[str, Any]], keep_answers: bool = True) -> RunState:
    """A run's state replayed from its records as read from the database."""
    state = RunState(keep_records=False, keep_answers=keep_answers)
    for record in records:
        event = as_event(record)
        if event is not None:
            state.apply(event)
    return state


class PgJournal:
    """The journal interface of RunStore over the PostgreSQL store."""

    def __init__(
        self, pg: PgRunStore, session: str, holder: Callable[[JournalEvent], str | None]
    ) -> None:
        self._pg = pg
        self.session = session
        self._holder = holder

    def append(self, event: JournalEvent) -> JournalEvent:
        """Commit one event to the database; LeaseLost when its job was taken over."""
        stamped = event.stamped(SCHEMA_VERSION, self.session, time.monotonic(), time.time())
        self._pg.append(stamped.__dict__, holder=self._holder(stamped))
        return stamped

    def sync(self) -> None:
        """Nothing to do: each append is already committed."""

    def close(self) -> None:
        """Nothing to do: the store's connection belongs to the caller."""


class StationStore(RunStore):
    """A RunStore whose records live in PostgreSQL and whose files live in ``run_dir``."""

    def __init__(self, run_dir: Path, session: str, pg: PgRunStore, station: str) -> None:
        # The base class takes the local directory's lock and clears stale staging; its
        # local journal is not used by a station, so it is closed and removed at once.
        super().__init__(run_dir, session, fsync_seconds=0.05)
        self.journal.close()
        with contextlib.suppress(OSError):
            self.journal_path.unlink()
        self.pg = pg
        self.station = station
        self._held: set[JobKey] = set()
        self.state = state_of(pg.records(), keep_answers=False)
        self.journal = PgJournal(pg, session, self._holder_of)  # type: ignore[assignment]

    def _holder_of(self, event: JournalEvent) -> str | None:
        key = (getattr(event, "task", None), getattr(event, "system", None))
        return self.station if key in self._held else None

    def _completions(self, jobs: set[JobKey]) -> Iterator[Completed]:
        only = next(iter(jobs)) if len(jobs) == 1 else None
        for record in self.pg.records(job=only):
            event = as_event(record)
            if isinstance(event, Completed):
                yield event

    def emit(self, event: E) -> E:
        """As RunStore.emit; an audit seed is the run's first, whichever station drew it."""
        record = super().emit(event)
        if isinstance(record, AuditSeed):
            first = self.pg.first_record("audit_seed")
            seed = int(first["seed"]) if first else record.seed
            with self._lock:
                self.state.audit_seed = seed
            return cast(E, record.model_copy(update={"seed": seed}))
        return record

    def hold(self, key: JobKey) -> None:
        """Take a claimed job: read its records into the state and rebuild its outputs file.

        Another station may have run part of it since this one started, so the job's
        records are read again now (the resume rules: read the job's records first).
        """
        records = list(self.pg.records(job=key))
        with self._lock:
            self._held.add(key)
            state = self.state
            state.completed.pop(key, None)
            state.done.pop(key, None)
            state.jobs.pop(key, None)
            for stale in [k for k in state.attempts if k[:2] == key]:
                del state.attempts[stale]
            for record in records:
                event = as_event(record)
                if event is not None:
                    state.apply(event)
            old = self._outputs.pop(key, None)
        if old is not None:
            import os

            os.close(old)
        self.rebuild_outputs([key])

    def drop(self, key: JobKey) -> None:
        """Stop writing under this job's lease."""
        with self._lock:
            self._held.discard(key)

    def held(self) -> set[JobKey]:
        """The jobs this station holds now."""
        with self._lock:
            return set(self._held)


class Station:
    """Claims jobs for one controller, heartbeats their leases, gives them back."""

    def __init__(
        self,
        store: StationStore,
        settings: StationSettings,
        heartbeat_store: PgRunStore,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.settings = settings
        self._beat = heartbeat_store
        self._notice = on_notice or (lambda line: None)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.lost: set[JobKey] = set()
        self._slots = threading.BoundedSemaphore(settings.max_jobs) if settings.max_jobs else None

    def register(self, jobs: Iterable[JobKey]) -> None:
        """Make the site's jobs known to the database (jobs already there keep their state)."""
        self.store.pg.add_jobs(jobs)

    def start(self) -> None:
        """Start the heartbeat thread."""
        self._thread = threading.Thread(target=self._heartbeats, name="heartbeat", daemon=True)
        self._thread.start()

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.settings.heartbeat_seconds):
            try:
                still = set(self._beat.heartbeat(self.settings.name))
            except Exception as exc:  # the next beat tries again; appends wait on their own
                self._notice(f"heartbeat of station {self.settings.name} failed: {exc}")
                continue
            for key in self.store.held() - still:
                if key not in self.lost:
                    self.lost.add(key)
                    self._notice(
                        f"station {self.settings.name} lost job {key[0]}/{key[1]}: "
                        "its lease ran out"
                    )

    def next_job(
        self,
        candidates: Sequence[JobKey],
        device_jobs: Sequence[JobKey],
        stopping: threading.Event,
    ) -> JobKey | None:
        """Claim the next job of ``candidates``, waiting while other live stations hold
        them (one may die); None once every candidate is finished or stopping is set."""
        slot = False
        try:
            while not stopping.is_set() and not self._stop.is_set():
                if self._slots is not None and not slot:
                    slot = self._slots.acquire(timeout=self.settings.poll_seconds)
                    if not slot:
                        continue
                key = self._claim(candidates, device_jobs)
                if key is not None:
                    slot = False  # job_ended gives the slot back
                    return key
                if not self._open(candidates):
                    return None
                if slot and self._slots is not None:
                    # Waiting for another station's job: leave the slot to this station's
                    # other devices meanwhile.
                    self._slots.release()
                    slot = False
                stopping.wait(self.settings.poll_seconds)
            return None
        finally:
            if slot and self._slots is not None:
                self._slots.release()

    def _claim(self, candidates: Sequence[JobKey], device_jobs: Sequence[JobKey]) -> JobKey | None:
        name = self.settings.name
        claim = self.store.pg.claim_in(name, self.settings.lease_seconds, candidates, device_jobs)
        if claim is None:
            return None
        key = (claim.task, claim.system)
        if claim.previous_station not in (None, name):
            self._notice(
                f"station {name} takes over {key[0]}/{key[1]} from station {claim.previous_station}"
            )
        self.store.hold(key)
        return key

    def _open(self, candidates: Sequence[JobKey]) -> bool:
        """Whether any of the jobs is not finished yet (another station may hold it)."""
        wanted = set(candidates)
        return any(
            (row["task"], row["system"]) in wanted and not row["finished"]
            for row in self.store.pg.jobs()
        )

    def job_ended(self, key: JobKey, result: JobResult | None) -> None:
        """Give a job back: finished when it ended without failing, else free for anyone."""
        self.store.drop(key)
        if self._slots is not None:
            self._slots.release()
        if result is None:
            return
        self.store.pg.release(self.settings.name, key[0], key[1], finished=result.failed is None)

    def close(self) -> None:
        """Stop heartbeating and give back (unfinished) any job still held."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        for key in sorted(self.store.held()):
            self.store.drop(key)
            with contextlib.suppress(Exception):
                self.store.pg.release(self.settings.name, key[0], key[1], finished=False)
        self._beat.close()
