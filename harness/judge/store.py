"""The panel's SQLite store in the run directory: plan, judges, answers, journal.

One database per (task, test): ``<run>/judging/<task>.<test>.sqlite``. The plan
is written once; every answer is committed (WAL, synchronous=FULL) together with
a journal row holding the time and the judge before the panel replies, so
stopping the panel at any moment loses nothing, and a restarted panel
serves the same plan from where each judge was.

Tables: ``meta`` (test, task, seed, category, subset, operator token), ``judges`` (name, token),
``trials`` (per judge and position: the hidden key, i.e. item and systems, and
the served view), ``media`` (anonymous id -> file, relative to the run directory, so
the panel serves it from any working directory and from a copy of the run directory;
meta ``media_paths = "run"`` marks that), ``answers`` (one per trial),
``plays`` (how often each medium was served), ``journal`` (every event: served,
answered, media played, refused).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.judge.material import Material
from harness.judge.plan import Plan, Trial
from harness.judge.schema import present
from harness.webguard import same_secret

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS judges (
    judge TEXT PRIMARY KEY, token TEXT NOT NULL UNIQUE, number INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
    trial TEXT PRIMARY KEY, judge TEXT NOT NULL, position INTEGER NOT NULL,
    item TEXT NOT NULL, systems TEXT NOT NULL, served TEXT NOT NULL,
    UNIQUE (judge, position));
CREATE TABLE IF NOT EXISTS media (
    media TEXT PRIMARY KEY, trial TEXT NOT NULL, path TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS answers (
    trial TEXT PRIMARY KEY, judge TEXT NOT NULL, answer TEXT NOT NULL,
    plays INTEGER, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS plays (media TEXT PRIMARY KEY, served INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, judge TEXT,
    trial TEXT, event TEXT NOT NULL, data TEXT);
"""


class PanelError(ValueError):
    """A panel cannot open or serve as asked (the message says what to do)."""


@dataclass(frozen=True)
class Answer:
    """One stored judgement with its hidden key."""

    judge: str
    position: int
    trial: str
    item: str
    systems: tuple[str, ...]
    answer: dict[str, Any]
    plays: int | None
    at: float


def panel_path(run_dir: Path, task: str, test: str) -> Path:
    """Where the panel of one task and test keeps its database."""
    return run_dir / "judging" / f"{task}.{test}.sqlite"


class JudgeStore:
    """The database of one panel; thread-safe (one connection behind a lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        # <run>/judging/<task>.<test>.sqlite: media paths are kept relative to <run>.
        self.run_dir = path.resolve().parent.parent
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)

    def close(self) -> None:
        """Close the database (everything is already committed)."""
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # --- the plan ---------------------------------------------------------------------

    def meta(self) -> dict[str, str]:
        """The plan's settings (empty before a plan is written)."""
        return {str(k): str(v) for k, v in self._query("SELECT key, value FROM meta")}

    def write_plan(self, plan: Plan, material: Material, category: str = "") -> None:
        """Store a new plan with fresh tokens and anonymous media ids."""
        if self.meta():
            raise PanelError(f"{self.path} already holds a plan")
        with self._tx() as db:
            meta = {
                "test": plan.test,
                "task": plan.task,
                "seed": str(plan.seed),
                "judges": str(len(plan.judges)),
                "operator": secrets.token_urlsafe(16),
                "created": str(time.time()),
                "systems": json.dumps(list(material.systems)),
                "category": category,
                "media_paths": "run",
            }
            if material.subset is not None:
                # Which items were drawn and how: the results say which subset was judged.
                meta["subset"] = material.subset.to_meta()
            if material.pool is not None:
                # The pool's depth and figures (relevance): the results report them.
                meta["pool"] = json.dumps(material.pool, ensure_ascii=False)
            db.executemany("INSERT INTO meta VALUES (?, ?)", list(meta.items()))
            for n, judge in enumerate(plan.judges, 1):
                db.execute(
                    "INSERT INTO judges VALUES (?, ?, ?)", (judge, secrets.token_urlsafe(16), n)
                )
            for trial in plan.trials:
                self._write_trial(db, plan, trial, material)
            db.execute(
                "INSERT INTO journal (at, event, data) VALUES (?, 'plan', ?)",
                (time.time(), json.dumps({k: v for k, v in meta.items() if k != "operator"})),
            )

    def _stored_path(self, path: Path) -> str:
        """A media file as kept: relative to the run directory (absolute if outside it)."""
        full = path.resolve()
        try:
            return full.relative_to(self.run_dir).as_posix()
        except ValueError:
            return str(full)

    def _located(self, stored: str) -> Path:
        """Where a kept media path is now.

        Relative paths are the run directory's. A panel planned before ``media_paths``
        was kept relative to the working directory of the planning: that path if it
        still exists, else the longest tail of it found under the run directory (the
        run directory moved or was copied).
        """
        path = Path(stored)
        if path.is_absolute():
            return path
        if self.meta().get("media_paths") == "run":
            return self.run_dir / path
        if path.exists():
            return path
        for k in range(1, len(path.parts)):
            tail = self.run_dir.joinpath(*path.parts[k:])
            if tail.exists():
                return tail
        return Path(os.path.abspath(path))

    def _write_trial(
        self, db: sqlite3.Connection, plan: Plan, trial: Trial, material: Material
    ) -> None:
        trial_id = secrets.token_hex(8)
        shown = present(plan.test, trial, material)
        media = []
        for path in shown.audio:
            media_id = secrets.token_hex(12)
            stored = self._stored_path(path)
            db.execute("INSERT INTO media VALUES (?, ?, ?)", (media_id, trial_id, stored))
            media.append(media_id)
        served = {
            "test": plan.test,
            "text": shown.text,
            "media": media,
            "answer_schema": shown.schema,
            "play_once": shown.play_once,
        }
        db.execute(
            "INSERT INTO trials VALUES (?, ?, ?, ?, ?, ?)",
            (
                trial_id,
                trial.judge,
                trial.position,
                trial.item,
                json.dumps(list(trial.systems)),
                json.dumps(served, ensure_ascii=False),
            ),
        )

    def plan(self) -> Plan:
        """The stored plan, as built."""
        meta = self.meta()
        judges = tuple(j for (j,) in self._query("SELECT judge FROM judges ORDER BY number"))
        rows = self._query("SELECT judge, position, item, systems FROM trials")
        trials = tuple(
            sorted(
                (Trial(j, p, i, tuple(json.loads(s))) for j, p, i, s in rows),
                key=lambda t: (judges.index(t.judge), t.position),
            )
        )
        return Plan(meta["test"], meta["task"], int(meta["seed"]), judges, trials)  # type: ignore[arg-type]

    def tokens(self) -> dict[str, str]:
        """Judge -> token, in judge order."""
        return {
            str(j): str(t)
            for j, t in self._query("SELECT judge, token FROM judges ORDER BY number")
        }

    # --- serving ----------------------------------------------------------------------

    def judge_of(self, token: str) -> str | None:
        """The judge a token belongs to, or None.

        Every judge's token is compared in constant time (no SQL lookup whose time says
        how much of a token was right), and any text, however odd, is just no match.
        """
        found = None
        for judge, wanted in self._query("SELECT judge, token FROM judges"):
            if same_secret(token, str(wanted)):
                found = str(judge)
        return found

    def is_operator(self, token: str) -> bool:
        """Whether the token is the operator's (constant time, never raises)."""
        return same_secret(token, self.meta().get("operator"))

    def next_trial(self, judge: str) -> tuple[str, dict[str, Any], int, int] | None:
        """(trial id, served view, answered, total) of the judge's first unanswered trial."""
        rows = self._query(
            "SELECT t.trial, t.served FROM trials t LEFT JOIN answers a ON a.trial = t.trial "
            "WHERE t.judge = ? AND a.trial IS NULL ORDER BY t.position LIMIT 1",
            (judge,),
        )
        done, total = self._counts(judge)
        if not rows:
            return None
        return rows[0][0], json.loads(rows[0][1]), done, total

    def _counts(self, judge: str) -> tuple[int, int]:
        [(done,)] = self._query("SELECT COUNT(*) FROM answers WHERE judge = ?", (judge,))
        [(total,)] = self._query("SELECT COUNT(*) FROM trials WHERE judge = ?", (judge,))
        return int(done), int(total)

    def served(self, trial: str) -> tuple[str, dict[str, Any]] | None:
        """(judge, served view) of a trial."""
        rows = self._query("SELECT judge, served FROM trials WHERE trial = ?", (trial,))
        return (rows[0][0], json.loads(rows[0][1])) if rows else None

    def is_answered(self, trial: str) -> bool:
        """Whether the trial has its answer."""
        return bool(self._query("SELECT 1 FROM answers WHERE trial = ?", (trial,)))

    def record_answer(
        self, judge: str, trial: str, answer: dict[str, Any], plays: int | None
    ) -> bool:
        """Store an answer and journal it in one transaction; False if already answered."""
        now = time.time()
        with self._tx() as db:
            if db.execute("SELECT 1 FROM answers WHERE trial = ?", (trial,)).fetchone():
                return False
            text = json.dumps(answer, ensure_ascii=False)
            db.execute(
                "INSERT INTO answers VALUES (?, ?, ?, ?, ?)", (trial, judge, text, plays, now)
            )
            db.execute(
                "INSERT INTO journal (at, judge, trial, event, data) "
                "VALUES (?, ?, ?, 'answered', ?)",
                (now, judge, trial, json.dumps({"answer": answer, "plays": plays})),
            )
        return True

    def journal(self, event: str, judge: str | None, trial: str | None, **data: Any) -> None:
        """Journal an event (served, played, refused) with the time and the judge."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO journal (at, judge, trial, event, data) VALUES (?, ?, ?, ?, ?)",
                (time.time(), judge, trial, event, json.dumps(data, ensure_ascii=False)),
            )

    def media_path(self, judge: str, media: str) -> tuple[str, Path] | None:
        """(trial, file) of a media id, only if it belongs to one of this judge's trials."""
        rows = self._query(
            "SELECT m.trial, m.path FROM media m JOIN trials t ON t.trial = m.trial "
            "WHERE m.media = ? AND t.judge = ?",
            (media, judge),
        )
        return (rows[0][0], self._located(rows[0][1])) if rows else None

    def media_files(self) -> list[Path]:
        """Every audio file of the plan (once each)."""
        rows = self._query("SELECT DISTINCT path FROM media ORDER BY path")
        return [self._located(p) for (p,) in rows]

    def claim_play(
        self, judge: str, trial: str, media: str, allowed: int | None, ranged: str | None
    ) -> bool:
        """Count a request of a medium's bytes as a play, if one is left; False if not.

        ``allowed`` is how often the medium may be served (None: no limit). The count,
        the check and the journal row (``played`` or ``refused``, with the Range header
        the client sent) are one transaction, so two requests at once cannot both get
        the last play.
        """
        data = {"media": media, "range": None if ranged is None else ranged[:200]}
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT served FROM plays WHERE media = ?", (media,)).fetchone()
            served = int(row[0]) if row else 0
            if allowed is not None and served >= allowed:
                data["reason"] = f"played {served} time(s) already, {allowed} allowed"
                event = "refused"
            else:
                db.execute(
                    "INSERT INTO plays VALUES (?, 1) "
                    "ON CONFLICT (media) DO UPDATE SET served = served + 1",
                    (media,),
                )
                event = "played"
            db.execute(
                "INSERT INTO journal (at, judge, trial, event, data) VALUES (?, ?, ?, ?, ?)",
                (now, judge, trial, event, json.dumps(data, ensure_ascii=False)),
            )
        return event == "played"

    def fetched(self, trial: str) -> int:
        """How many times the trial's audio was served (every request served is a play)."""
        [(n,)] = self._query(
            "SELECT COUNT(*) FROM journal WHERE trial = ? AND event = 'played'", (trial,)
        )
        return int(n)

    # --- results ----------------------------------------------------------------------

    def progress(self) -> list[dict[str, Any]]:
        """Per judge: answered, total, the time of the last answer."""
        out = []
        for (judge,) in self._query("SELECT judge FROM judges ORDER BY number"):
            done, total = self._counts(judge)
            [(last,)] = self._query("SELECT MAX(at) FROM answers WHERE judge = ?", (judge,))
            out.append({"judge": judge, "answered": done, "total": total, "last_answer": last})
        return out

    def answers(self) -> list[Answer]:
        """Every stored judgement with its hidden key, by judge and position."""
        rows = self._query(
            "SELECT a.judge, t.position, a.trial, t.item, t.systems, a.answer, a.plays, a.at "
            "FROM answers a JOIN trials t ON t.trial = a.trial "
            "JOIN judges j ON j.judge = a.judge ORDER BY j.number, t.position"
        )
        return [
            Answer(j, p, tr, i, tuple(json.loads(s)), json.loads(a), pl, at)
            for j, p, tr, i, s, a, pl, at in rows
        ]

    def journal_rows(self) -> list[dict[str, Any]]:
        """The whole journal, oldest first."""
        rows = self._query("SELECT seq, at, judge, trial, event, data FROM journal ORDER BY seq")
        return [
            {"seq": s, "at": at, "judge": j, "trial": t, "event": e, "data": json.loads(d or "{}")}
            for s, at, j, t, e, d in rows
        ]
