"""Operator stations sharing one run in PostgreSQL (`onsite run SITE --station NAME`).

A station is a controller that writes through the PostgreSQL run store
(harness/store/postgres_run.py's ``PgRunWriter``) instead of a run directory's, and whose jobs
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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from harness.store.directory import JobKey

if TYPE_CHECKING:
    from harness.engine.controller import JobResult
    from harness.store.postgres import PgRunStore, Registration
    from harness.store.postgres_run import PgRunWriter

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


class Station:
    """Claims jobs for one controller, heartbeats their leases, gives them back.

    It runs under a name it holds alone (``take_name``), and stops claiming the moment
    it learns another station took the name over (``name_lost``).
    """

    def __init__(
        self,
        store: PgRunWriter,
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
            raise ValueError("a station needs a PgRunWriter made with an instance id")
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
