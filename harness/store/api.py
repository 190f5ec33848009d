"""The run-store interface: what a controller writes a run through, and what every reader
reads it from, wherever the run is kept.

Two implementations, one interface:

- a run directory: ``harness.store.directory.RunStore`` writes it (journal.jsonl, one line per
  record), ``harness.store.directory_source.DirectorySource`` reads it;
- a run in PostgreSQL shared by operator stations: ``harness.store.postgres_run.PgRunWriter`` writes
  it (one committed row per record, under the station's job leases),
  ``harness.store.postgres_run.PgRunSource`` reads it.

The controller writes through ``RunWriter``. The readers (`onsite report`, `status`,
`console`, `export`, `score --run`, the leaderboard) open a ``RunSource`` with
``open_source``: a run directory's path, or ``postgresql://HOST/DB?run=NAME``. Both give
a record as the same bytes (the journal line orjson wrote), so one replay
(``RunState.from_lines``) and one follower (the console's ``RunView``) serve both.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from harness.site import Site
    from harness.store.directory import JobKey, RunState
    from harness.store.events import JournalEvent

E = TypeVar("E", bound="JournalEvent")

PG_SCHEMES = ("postgresql://", "postgres://")


def is_pg_location(text: str | Path) -> bool:
    """Whether a run is named by a PostgreSQL URL (postgresql://HOST/DB?run=NAME), not a path."""
    return isinstance(text, str) and text.startswith(PG_SCHEMES)


class RunWriter(Protocol):
    """What a controller writes a run through.

    Records go where the store keeps them (``emit``: written, folded into ``state``,
    copied to the job's outputs file); the files a controller needs on its own disk
    (logs, staged inputs, media, outputs, the site copy) live under ``dir``. A store
    whose jobs are shared hands them out through the controller's ``JobSource``
    (harness/engine/station.py: claims under leases).
    """

    dir: Path
    state: RunState

    @property
    def stage_dir(self) -> Path:
        """Where inputs are staged under anonymous names."""
        ...

    def emit(self, event: E) -> E:
        """Write one event and return it as written (stamped with session and clocks)."""
        ...

    def record(self, event: str, **fields: Any) -> JournalEvent:
        """Write an event given by name and fields."""
        ...

    def sync(self) -> None:
        """Make every record written so far durable."""
        ...

    def close(self) -> None:
        """Sync and close; the store takes no more records."""
        ...

    def lines(self, job: JobKey | None = None) -> Iterator[bytes]:
        """The run's records in order, each its journal line (``job``: at least its)."""
        ...

    def rebuild_outputs(self, jobs: Iterable[JobKey]) -> None:
        """Rewrite the jobs' outputs files from the records."""
        ...

    def keep_media(self, path: str) -> None:
        """A file a kind kept under ``dir`` (``path`` relative to it: media/<task>/...)
        is complete: keep it wherever else the run's records are kept."""
        ...

    def open_outputs(self, task: str, system: str) -> None:
        """Keep a job's outputs file open for the completions to come."""
        ...

    def outputs_path(self, task: str, system: str) -> Path:
        """A job's outputs file."""
        ...

    def log_path(self, task: str, system: str) -> Path:
        """Where a system's stderr goes."""
        ...

    def keep_site_copy(self, site_path: Path, site_root: Path) -> None:
        """Keep the site file with the run, so readers load what the run used."""
        ...


class JournalTail(Protocol):
    """Follows a run's records as they are written."""

    def read(self) -> tuple[bool, list[bytes]]:
        """(restarted, lines): the records written since the last read, each its journal
        line; ``restarted`` when the run was replaced, so that everything read before is
        void and the lines start from its beginning."""
        ...


class RunSource(Protocol):
    """A run as its readers see it, wherever it is kept; reading writes nothing."""

    # How the run is named to people: the run directory, or the PostgreSQL URL (no password).
    location: str
    # The run directory holding its files (outputs, media, logs, judging), or None for a
    # run in PostgreSQL, whose files stay on the disks of the stations that ran its jobs.
    run_dir: Path | None
    # The path errors about the run name (the directory, or the database and run).
    where: Path

    def site(self) -> Site:
        """The site file the run used (its copy kept with the run)."""
        ...

    def lines(self) -> Iterator[bytes]:
        """Every record so far, in order, each its journal line."""
        ...

    def tail(self) -> JournalTail:
        """A follower of the records, from the first."""
        ...

    def running(self) -> bool:
        """Whether a controller (or a station) works on the run now."""
        ...

    def live_sessions(self) -> set[str] | None:
        """The sessions of the controllers working on the run now, when several may (a
        shared run); None for a run one controller at a time works on."""
        ...

    def close(self) -> None:
        """Let go of what reading holds (a database connection)."""
        ...


def open_source(location: str | Path) -> RunSource:
    """The run at ``location``: a run directory, or ``postgresql://HOST/DB?run=NAME``.

    Raises InputError naming what is wrong (not a run directory, no such run in the
    database, a server that cannot be reached). psycopg is loaded for a URL only.
    """
    if is_pg_location(location):
        from harness.store.postgres_run import PgRunSource

        return PgRunSource.open(str(location))
    from harness.store.directory_source import DirectorySource

    return DirectorySource(Path(location))
