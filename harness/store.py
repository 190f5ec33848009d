"""The run directory: journal, per-system outputs, logs, and the state a resumed run starts from.

Layout of runs/<site>/:
    journal.jsonl                  every event (the source of truth)
    outputs/<task>/<system>.jsonl  one line per completed item, rebuilt from the journal
    logs/<task>/<system>.log       the system's stderr
    stage/                         inputs under anonymous names while an item runs
    site.toml                      the site file as it was when the run (re)started
    run.lock                       held while a controller works here
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .journal import Journal, read_journal

JobKey = tuple[str, str]  # (task, system)

OUTPUT_FIELDS = (
    "id",
    "output",
    "verdict",
    "seconds",
    "budget_seconds",
    "rtf",
    "speed",
    "attempt",
    "message",
    "cpu_seconds",
    "peak_rss_bytes",
    "stage_seconds",
    "round_trip_seconds",
    "audit_of",
    "latency_seconds",
    "late",
)


class RunLocked(RuntimeError):
    """Another controller is working in this run directory."""


@dataclass
class RunState:
    """What the journal says has happened so far."""

    completed: dict[JobKey, dict[str, dict[str, Any]]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    attempts: dict[tuple[str, str, str], int] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def from_journal(cls, path: Path) -> RunState:
        """Replay a journal. The first completion of an item wins; later ones are ignored."""
        state = cls()
        for record in read_journal(path):
            state.apply(record)
        return state

    def apply(self, record: dict[str, Any]) -> None:
        """Fold one record into the state."""
        self.records.append(record)
        event = record["event"]
        if event == "dispatched":
            key = (record["task"], record["system"], record["item"])
            self.attempts[key] = max(self.attempts.get(key, 0), record["attempt"])
        elif event == "completed":
            done = self.completed[(record["task"], record["system"])]
            done.setdefault(record["item"], record)

    def next_attempt(self, task: str, system: str, item: str) -> int:
        """1 for a fresh item; one more than the last dispatch for an item that was in flight."""
        return self.attempts.get((task, system, item), 0) + 1

    def job_records(self, task: str, system: str) -> list[dict[str, Any]]:
        """Every record about one (task, system) job, in order."""
        return [r for r in self.records if r.get("task") == task and r.get("system") == system]


def output_line(record: dict[str, Any]) -> dict[str, Any]:
    """The outputs/<task>/<system>.jsonl line for one completion record."""
    line = {k: record.get(k) for k in OUTPUT_FIELDS}
    line["id"] = record["item"]
    return line


class RunStore:
    """Owns one run directory while a controller works in it."""

    def __init__(self, run_dir: Path, session: str, fsync_seconds: float = 0.05) -> None:
        self.dir = run_dir
        run_dir.mkdir(parents=True, exist_ok=True)
        self._lock_fd = os.open(run_dir / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._lock_fd)
            raise RunLocked(
                f"{run_dir} is in use by another onsite controller; wait for it to finish "
                "or stop it (a killed controller releases the lock at once)"
            ) from None
        os.ftruncate(self._lock_fd, 0)
        os.write(self._lock_fd, f"{os.getpid()}\n".encode())
        self.state = RunState.from_journal(self.journal_path)
        self.journal = Journal(self.journal_path, session, fsync_seconds)
        self._outputs: dict[JobKey, int] = {}
        # Jobs on different devices record from their own threads.
        self._lock = threading.Lock()

    @property
    def journal_path(self) -> Path:
        """runs/<site>/journal.jsonl"""
        return self.dir / "journal.jsonl"

    def log_path(self, task: str, system: str) -> Path:
        """Where a system's stderr goes."""
        return self.dir / "logs" / task / f"{system}.log"

    @property
    def stage_dir(self) -> Path:
        """Where inputs are staged under anonymous names."""
        return self.dir / "stage"

    def outputs_path(self, task: str, system: str) -> Path:
        """outputs/<task>/<system>.jsonl"""
        return self.dir / "outputs" / task / f"{system}.jsonl"

    def keep_site_copy(self, site_path: Path, site_root: Path) -> None:
        """Keep the site file beside the run so reports read what the run used."""
        shutil.copyfile(site_path, self.dir / "site.toml")
        (self.dir / "run.json").write_text(
            json.dumps({"site_file": str(site_path), "site_root": str(site_root)}, indent=2) + "\n",
            encoding="utf-8",
        )

    def open_outputs(self, task: str, system: str) -> None:
        """Rewrite a job's outputs file from the journal, then keep it open for appends.

        Rebuilding is what makes "each item exactly once" hold whatever moment
        the last controller died at: an output line is only ever a copy of a
        journal record.
        """
        path = self.outputs_path(task, system)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".jsonl.tmp")
        with open(tmp, "wb") as fh:
            for record in self.state.completed.get((task, system), {}).values():
                fh.write(orjson.dumps(output_line(record)) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        self._outputs[(task, system)] = os.open(path, os.O_WRONLY | os.O_APPEND)

    def record(self, event: str, **fields: Any) -> dict[str, Any]:
        """Journal an event, fold it into the state, and copy completions to the outputs file."""
        with self._lock:
            return self._record(event, fields)

    def _record(self, event: str, fields: dict[str, Any]) -> dict[str, Any]:
        record = self.journal.append(event, **fields)
        first = event != "completed" or record["item"] not in self.state.completed.get(
            (record["task"], record["system"]), {}
        )
        self.state.apply(record)
        if event == "completed" and first:
            out = self._outputs.get((record["task"], record["system"]))
            if out is not None:
                os.write(out, orjson.dumps(output_line(record)) + b"\n")
        return record

    def close(self) -> None:
        """Sync the journal, close outputs and release the lock."""
        for out in self._outputs.values():
            os.close(out)
        self._outputs.clear()
        self.journal.close()
        os.close(self._lock_fd)
