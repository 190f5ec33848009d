"""The typed journal: event models are the schema, what listeners get, and the doc's table.

tests/data/journal_v1 is a run directory's journal written by onsite before the typed
journal (schema version 1): `onsite run site.toml --limit 3` over its five-item set
with the fake system (u2 crashes), then a second session that died with u4 in flight.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from pydantic import ValidationError

from harness import Controller, RunState, RunStore, load_site, read_events, read_journal
from harness.errors import SiteDeprecationWarning
from harness.leaderboard import leaderboard
from harness.report import build_report
from harness.store.events import (
    BY_NAME,
    RECORD_TYPES,
    SCHEMA_VERSION,
    AuditSeed,
    Completed,
    Dispatched,
    JobFinished,
    JobStarted,
    JournalEvent,
    SessionInterrupted,
    SystemLost,
    event_name,
)
from harness.store.journal import Journal
from harness.store.journal_doc import DOC, render
from tests.helpers import FAKE_SERVE, REPO, make_testset, read_outputs, write_site

FIXTURE = REPO / "tests" / "data" / "journal_v1"


def old_run(tmp_path: Path) -> Path:
    """The fixture as a venue would have it: site, test set, the system's dir, the run."""
    root = tmp_path / "venue"
    root.mkdir()
    shutil.copy(FIXTURE / "site.toml", root / "site.toml")
    shutil.copytree(FIXTURE / "set", root / "set")
    os.symlink(REPO / "tests" / "systems", root / "fake")
    run_dir = root / "runs" / "old"
    run_dir.mkdir(parents=True)
    shutil.copy(FIXTURE / "journal.jsonl", run_dir / "journal.jsonl")
    return root


def test_doc_table_is_generated_from_the_models() -> None:
    current = DOC.read_text(encoding="utf-8")
    assert render(current) == current, "run: python -m harness.store.journal_doc"
    for model in RECORD_TYPES:
        assert f"| `{event_name(model)}` |" in current


def test_every_record_type_is_frozen_and_named_once() -> None:
    assert len(BY_NAME) == len(RECORD_TYPES)
    event = SystemLost(task="t", system="s", item="i", outcome="crashed", reason="x")
    with pytest.raises(ValidationError):
        event.reason = "changed"
    assert event.failure_class == "participant"


def test_old_journal_reads_typed(tmp_path: Path) -> None:
    raw = list(read_journal(FIXTURE / "journal.jsonl"))
    typed = list(read_events(FIXTURE / "journal.jsonl"))
    assert [r["event"] for r in raw] == [e.event for e in typed]
    assert {r["v"] for r in raw} == {1}
    done = [e for e in typed if isinstance(e, Completed)]
    assert [(e.item, e.verdict) for e in done] == [("u1", "ok"), ("u2", "crashed"), ("u3", "ok")]
    assert done[0].output == {"text": "a b c"}
    # Fields added in version 2 are simply absent from version 1 records.
    finished = next(e for e in typed if isinstance(e, JobFinished))
    assert (finished.completed, finished.scored, finished.total) == (3, None, None)
    state = RunState.from_journal(FIXTURE / "journal.jsonl")
    assert state.next_attempt("asr", "fake", "u4") == 2


def test_old_run_directory_resumes_and_reports(tmp_path: Path) -> None:
    root = old_run(tmp_path)
    # Written before a device's transport had its own name: still read, with a warning.
    with pytest.warns(SiteDeprecationWarning, match=r"\[devices\.local\.kind\]"):
        site = load_site(root / "site.toml")
    run_dir = root / "runs" / "old"
    seen: list[object] = []
    store = RunStore(run_dir, "new", fsync_seconds=0)
    store.keep_site_copy(site.path, site.root)  # as `onsite run` does
    try:
        results = Controller(site, store, listener=seen.append).run()
    finally:
        store.close()
    assert [(r.completed, r.total, r.failed) for r in results] == [(5, 5, None)]

    rows = read_outputs(run_dir, "asr", "fake")
    assert sorted(r["id"] for r in rows) == ["u1", "u2", "u3", "u4", "u5"]
    by_id = {r["id"]: r for r in rows}
    # What the old session recorded stays as it was; the item in flight went again.
    assert by_id["u2"]["verdict"] == "crashed" and by_id["u1"]["output"] == {"text": "a b c"}
    assert by_id["u4"]["attempt"] == 2 and by_id["u4"]["verdict"] == "ok"

    events = list(read_events(run_dir / "journal.jsonl"))
    assert {e.v for e in events} == {1, SCHEMA_VERSION}
    new = [e for e in events if e.session == "new"]
    # One emission: each journaled event reached the listener as the very object written.
    journaled = [e for e in seen if isinstance(e, JournalEvent)]
    assert [e.event for e in journaled] == [e.event for e in new if e.event != "audit_seed"]
    assert journaled == [e for e in new if e.event != "audit_seed"]
    assert any(isinstance(e, JobStarted) for e in seen)

    (row,) = leaderboard(run_dir)
    assert (row.completed, row.crashes, row.restarts) == (5, 1, 1)
    report = build_report(run_dir)
    ((job,),) = [task.jobs for task in report.tasks]
    assert job.row.completed == 5 and len(job.failures) == 1
    assert [s.end_event for s in report.sessions] == [
        "session_finished",
        None,
        "session_finished",
    ]


def test_dispatch_is_journaled_once_and_judged_against(tmp_path: Path, plan_env) -> None:
    testset = make_testset(tmp_path / "set", [("a", 1600, "x"), ("b", 1601, "y")])
    plan = {1600: {"text": "x"}, 1601: {"delay": 0.3, "text": "y"}}
    site = load_site(
        write_site(
            tmp_path / "site.toml",
            testset,
            {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}},
            budget={"seconds": 0.2, "hang_seconds": 5},
        )
    )
    store = RunStore(tmp_path / "run", "s", fsync_seconds=0)
    try:
        Controller(site, store).run()
    finally:
        store.close()
    events = list(read_events(tmp_path / "run" / "journal.jsonl"))
    sent = {e.item: e for e in events if isinstance(e, Dispatched)}
    done = {e.item: e for e in events if isinstance(e, Completed)}
    for item in ("a", "b"):
        assert done[item].anon_id == sent[item].anon_id
        assert done[item].budget_seconds == sent[item].budget_seconds == 0.2
        assert sent[item].hang_seconds == 5
    assert (done["a"].verdict, done["b"].verdict) == ("ok", "over_budget")
    finished = next(e for e in events if isinstance(e, JobFinished))
    assert (finished.scored, finished.total) == (2, 2)


def test_garbled_unknown_and_torn_lines_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "journal.jsonl"
    journal = Journal(path, "s", fsync_seconds=0)
    first = journal.append(AuditSeed(seed=7))
    journal.close()
    with open(path, "ab") as fh:
        fh.write(b"{not json\n")
        fh.write(b'["a list"]\n')
        fh.write(b'{"v": 9, "event": "from_the_future", "x": 1}\n')
        fh.write(b'{"v": 1, "event": "completed", "task": "t"}\n')  # missing its fields
        fh.write(orjson.dumps({"v": 1, "event": "session_finished"}) + b"\n")
        fh.write(b'{"v": 1, "event": "session_fin')  # torn by a power cut
    events = list(read_events(path))
    assert [e.event for e in events] == ["audit_seed", "session_finished"]
    assert events[0] == first and isinstance(events[0], AuditSeed) and events[0].seed == 7
    # The next writer ends the torn line; the records after it read again.
    journal = Journal(path, "t", fsync_seconds=0)
    journal.append(SessionInterrupted(reason="test"))
    journal.close()
    assert [e.event for e in read_events(path)][-1] == "session_interrupted"
