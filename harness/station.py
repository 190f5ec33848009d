"""Operator stations sharing one run in PostgreSQL (`onsite run SITE --station NAME`).

A station is a controller whose journal records go to the PostgreSQL run store
(harness/pg_store.py) instead of the run directory's journal.jsonl, and whose jobs
are handed out by the database: it claims one (task, system) job at a time per
device, under a lease a heartbeat thread renews, reads the job's records before
running it (the resume rules of one controller), and gives it back finished or not.
Every record about a held job is written only while the station still holds it
(``PgRunStore.append(holder=...)``), so a station cut off past its lease writes
nothing more about a job another station took over.

A station's name is held by one live station at a time (``Station.take_name``): cloned
venue PCs share a host name, the default name, and two live stations of one name would
each take the name's jobs as their own and run every item twice.

What a station needs on its own disk stays in its local directory
(``runs/<site>/stations/<NAME>/``): the systems' logs, staged inputs, media, the
outputs files (rebuilt from the database when a job is claimed and at the end).

psycopg is imported by the functions that open a store, never when this module loads.
"""

from __future__ import annotations

import contextlib
import os
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
    from .pg_store import PgRunStore, Registration

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


class NameTaken(RuntimeError):
    """Another live station holds this station's name: this one must not start."""

    def __init__(self, message: str, holder: Registration) -> None:
        super().__init__(message)
        self.holder = holder


def describe_process() -> str | None:
    """This process as a station records it: its machine's boot, its PID namespace and
    its start time, so another station on the same machine can tell whether it still runs.

    None where /proc does not tell (then no other station can judge it gone).
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = os.readlink("/proc/self/ns/pid")
        # /proc must be the one of this PID namespace, or pids read in it mean others.
        if os.readlink("/proc/self") != str(os.getpid()):
            return None
        return f"{boot} {namespace} {_start_time('self')}"
    except (OSError, ValueError, IndexError):
        return None


def _start_time(pid: str) -> str:
    """When the process started, in clock ticks since boot (field 22 of /proc/PID/stat)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    # The command name (field 2) may hold spaces and parentheses: split after its end.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] == "Z":  # a zombie: ended, not yet reaped
        raise ProcessLookupError(pid)
    return fields[19]


def holder_is_gone(holder: Registration) -> bool:
    """Whether a name's holder is a process of this machine that no longer runs.

    Only a holder that described itself (``describe_process``) with this machine's
    boot and PID namespace can be judged: a host name proves nothing (cloned PCs share
    one), and neither does a pid seen from another machine.
    """
    mine = describe_process()
    if mine is None or holder.process is None:
        return False
    boot, namespace, started = (holder.process.split(" ") + ["", "", ""])[:3]
    if mine.split(" ")[:2] != [boot, namespace] or holder.pid <= 0:
        return False
    try:
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass  # another user's process: it runs
    try:
        return _start_time(str(holder.pid)) != started  # a pid used again by another
    except ProcessLookupError:  # a zombie
        return True
    except (OSError, ValueError, IndexError):
        return False  # hidden from this user (hidepid), or just ended: cannot tell


def name_taken_message(name: str, run: str, holder: Registration) -> str:
    """What an operator is told when a live station holds the name: who, and what to do."""
    lease = f"{holder.lease_seconds:g} s"
    left = max(0.0, holder.lease_seconds - holder.seen_seconds_ago)
    return (
        f"station name {name!r} is held by a live station on host {holder.host} "
        f"(pid {holder.pid}) in run {run!r}, started {holder.started:%Y-%m-%d %H:%M:%S %Z}, "
        f"last heard from {holder.seen_seconds_ago:.1f} s ago; two stations of one name "
        "would run the same jobs twice. Give this station another name "
        f"(--station OTHER-NAME), or stop the station on host {holder.host} first. If "
        f"that station died, its name expires {lease} after it was last heard from (its "
        f"--lease-seconds), in {left:.0f} s: then run the same command again"
    )


class PgJournal:
    """The journal interface of RunStore over the PostgreSQL store."""

    def __init__(
        self,
        pg: PgRunStore,
        session: str,
        holder: Callable[[JournalEvent], str | None],
        instance: str | None = None,
    ) -> None:
        self._pg = pg
        self.session = session
        self._holder = holder
        self._instance = instance
        # The journal interface's full-disk flag: records go to the database server,
        # whose disk this station does not fill (a full server fails the append).
        self.disk_full = False

    def append(self, event: JournalEvent) -> JournalEvent:
        """Commit one event to the database; LeaseLost when its job was taken over."""
        stamped = event.stamped(SCHEMA_VERSION, self.session, time.monotonic(), time.time())
        self._pg.append(stamped.__dict__, holder=self._holder(stamped), instance=self._instance)
        return stamped

    def sync(self) -> None:
        """Nothing to do: each append is already committed."""

    def close(self) -> None:
        """Nothing to do: the store's connection belongs to the caller."""


class StationStore(RunStore):
    """A RunStore whose records live in PostgreSQL and whose files live in ``run_dir``.

    ``instance`` is the station's registration of its name (``Station.take_name``): job
    records are then written only under that registration's leases.
    """

    def __init__(
        self,
        run_dir: Path,
        session: str,
        pg: PgRunStore,
        station: str,
        instance: str | None = None,
    ) -> None:
        # The base class takes the local directory's lock and clears stale staging; its
        # local journal is not used by a station, so it is closed and removed at once.
        super().__init__(run_dir, session, fsync_seconds=0.05)
        self.journal.close()
        with contextlib.suppress(OSError):
            self.journal_path.unlink()
        self.pg = pg
        self.station = station
        self.instance = instance
        self._held: set[JobKey] = set()
        self.state = state_of(pg.records(), keep_answers=False)
        self.journal = PgJournal(  # type: ignore[assignment]
            pg, session, self._holder_of, instance
        )

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
    """Claims jobs for one controller, heartbeats their leases, gives them back.

    It runs under a name it holds alone (``take_name``), and stops claiming the moment
    it learns another station took the name over (``name_lost``).
    """

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
        self.instance = store.instance
        self._registered = False
        self._closed = False
        # Set once another station holds this one's name; ``lost_name`` says how.
        self.name_lost = threading.Event()
        self.lost_name = ""
        # Called (from the heartbeat thread) when the name is lost: stop the controller.
        self.on_name_lost: Callable[[], None] = lambda: None

    def take_name(self, host: str, pid: int) -> None:
        """Register the station's name for this station alone; NameTaken when another
        live station holds it.

        A holder on this machine whose process is gone (a station killed and restarted
        here) is replaced at once; any other holder only once its registration expired.
        """
        if self.instance is None:
            raise ValueError("a station needs a StationStore made with an instance id")
        pg, name = self.store.pg, self.settings.name

        def register(replace: str | None = None) -> Registration | None:
            return pg.register_station(
                name,
                cast(str, self.instance),
                host=host,
                pid=pid,
                process=describe_process(),
                lease_seconds=self.settings.lease_seconds,
                replace=replace,
            )

        holder = register()
        if holder is not None and holder_is_gone(holder):
            holder = register(replace=holder.instance)
        if holder is not None:
            raise NameTaken(name_taken_message(name, pg.run, holder), holder)
        self._registered = True

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
                answer = self._beat.heartbeat(self.settings.name, instance=self.instance)
            except Exception as exc:  # the next beat tries again; appends wait on their own
                self._notice(f"heartbeat of station {self.settings.name} failed: {exc}")
                continue
            if answer is None:
                self._lose_name()
                return
            for key in self.store.held() - set(answer):
                if key not in self.lost:
                    self.lost.add(key)
                    self._notice(
                        f"station {self.settings.name} lost job {key[0]}/{key[1]}: "
                        "its lease ran out"
                    )

    def _lose_name(self) -> None:
        """Another station holds this one's name now: claim nothing more, stop, say so."""
        if self.name_lost.is_set():
            return
        name = self.settings.name
        holder = None
        with contextlib.suppress(Exception):
            holder = self._beat.station_holder(name)
        now = (
            f"a station on host {holder.host} (pid {holder.pid}) holds it now"
            if holder is not None and holder.instance != self.instance
            else "another station took it over and has given it back since"
        )
        self.lost_name = (
            f"station {name} lost its name: its registration was not renewed for more "
            f"than {self.settings.lease_seconds:g} s (was this machine suspended, or cut off "
            f"from the database?) and {now}. This station claims no more jobs and stops; "
            "its jobs are taken over by the other stations. To run it as well, give it "
            "a name of its own: --station OTHER-NAME"
        )
        self._stop.set()
        self.name_lost.set()
        self.lost.update(self.store.held())
        self._notice(self.lost_name)
        self.on_name_lost()

    def next_job(
        self,
        candidates: Sequence[JobKey],
        device_jobs: Sequence[JobKey],
        stopping: threading.Event,
    ) -> JobKey | None:
        """Claim the next job of ``candidates``, waiting while other live stations hold
        them (one may die); None once every candidate is finished, stopping is set, or
        the station lost its name."""
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
        claim = self.store.pg.claim_in(
            name, self.settings.lease_seconds, candidates, device_jobs, instance=self.instance
        )
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
        self.store.pg.release(
            self.settings.name,
            key[0],
            key[1],
            finished=result.failed is None,
            instance=self.instance,
        )

    def close(self) -> None:
        """Stop heartbeating, give back (unfinished) any job still held, give the name back.

        Safe to call more than once. A name found taken by another station on the way
        out sets ``name_lost`` too.
        """
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        name = self.settings.name
        for key in sorted(self.store.held()):
            self.store.drop(key)
            with contextlib.suppress(Exception):
                self.store.pg.release(name, key[0], key[1], finished=False, instance=self.instance)
        if self._registered and self.instance is not None:
            given_back = True
            with contextlib.suppress(Exception):
                given_back = self.store.pg.unregister_station(name, self.instance)
            if not given_back:
                self._lose_name()
        self._beat.close()
