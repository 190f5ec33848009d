"""Reading a run directory where it lies: the site it was made from, its records, whether a
controller works on it (the directory side of ``harness.store.api.RunSource``).

Kept apart from `harness.leaderboard` (which imports every task kind's
scorer) so `onsite status` stays light.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from pathlib import Path

from harness.errors import Problem, SiteError
from harness.site import Site, load_site
from harness.store.journal import FileTail, complete_lines

__all__ = ["DirectorySource", "controller_running", "site_of_run"]


def site_of_run(run_dir: Path) -> Site:
    """The site a run used: its copy in the run directory, paths resolved as the original's."""
    copy = run_dir / "site.toml"
    meta_path = run_dir / "run.json"
    if not copy.is_file() or not meta_path.is_file():
        raise SiteError(
            [
                Problem(
                    run_dir,
                    "",
                    "not a run directory (no site.toml and run.json)",
                    "give the directory `onsite run` wrote, e.g. runs/demo",
                )
            ]
        )
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    return load_site(copy, base=Path(meta["site_root"]))


def controller_running(run_dir: Path) -> bool:
    """True while a controller holds the run directory's lock (run.lock)."""
    try:
        fd = os.open(run_dir / "run.lock", os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


class DirectorySource:
    """A run directory as its readers read it: journal.jsonl and the site copy; one
    controller at a time works on it, holding run.lock."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir: Path | None = run_dir
        self.where = run_dir
        self.location = str(run_dir.resolve())
        self._journal = run_dir / "journal.jsonl"

    def site(self) -> Site:
        """The site copy in the directory (SiteError when it is not a run directory)."""
        return site_of_run(self.where)

    def lines(self) -> Iterator[bytes]:
        """The journal's complete lines."""
        return complete_lines(self._journal)

    def tail(self) -> FileTail:
        """A follower of the journal file."""
        return FileTail(self._journal)

    def running(self) -> bool:
        """Whether a controller holds run.lock."""
        return controller_running(self.where)

    def live_sessions(self) -> None:
        """None: one controller at a time, whose session is the last started."""
        return None

    def close(self) -> None:
        """Nothing is held open between reads."""
