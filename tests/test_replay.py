"""Replaying a journal fast: plain-JSON dispatches and completions read as the models read them.

A controller's state (``RunState`` without records or answers) and the rebuilt outputs
files take the journal's dispatched and completed lines as plain JSON after a type
check (``journal.quick_record``); everything else, and every line that check refuses,
goes through the typed models. These tests hold the two paths to the same answers,
on a real run's journal made hostile (torn, garbled, mistyped, duplicated, in flight).
"""

from __future__ import annotations

import io
import json
import math
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from rich.console import Console

from harness.cli.render import ProgressListener
from harness.leaderboard import leaderboard
from harness.store.directory import RunState, RunStore, output_line
from harness.store.events import BY_NAME, Completed, JobFinished, JobStarted
from harness.store.journal import complete_lines, parse_record, quick_record, read_journal
from harness.store.run_model import RunModel
from tests.helpers import FAKE_SERVE, make_testset, onsite, read_outputs, write_site

ITEMS = 8


def _run(tmp_path: Path, plan_env: Any) -> tuple[Path, Path]:
    """A finished run of 8 items: ok, an error answer, a crash (then a restart)."""
    testset = make_testset(tmp_path / "set", [(f"u{i}", 1700 + i, "x") for i in range(ITEMS)])
    plan: dict[int, dict[str, Any]] = {1700 + i: {"text": f"t{i}"} for i in range(ITEMS)}
    plan[1702] = {"do": "error"}
    plan[1705] = {"do": "crash"}
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": plan_env(plan)}},
        budget={"seconds": 5, "hang_seconds": 5},
    )
    done = onsite("run", str(site))
    assert done.returncode == 0, done.stdout + done.stderr
    return site, tmp_path / "runs" / "t"


def _as_model(record: dict[str, Any]) -> Any:
    return BY_NAME[record["event"]].model_validate(record)


def test_quick_records_are_what_the_models_read(tmp_path: Path, plan_env: Any) -> None:
    _, run_dir = _run(tmp_path, plan_env)
    quick = Counter()
    for line in complete_lines(run_dir / "journal.jsonl"):
        record = quick_record(line)
        typed = parse_record(line)
        assert typed is not None
        if record is not None:
            quick[record["event"]] += 1
            assert _as_model(record) == typed
        else:
            assert typed.event not in ("dispatched", "completed"), line
    assert quick["dispatched"] >= ITEMS and quick["completed"] == ITEMS


def _hostile_lines(journal: Path) -> list[bytes]:
    """Lines a replay must refuse or read as the models do, appended to a real journal."""
    first = next(
        orjson.loads(line)
        for line in complete_lines(journal)
        if orjson.loads(line)["event"] == "completed"
    )
    task, system, session = first["task"], first["system"], first["session"]

    def line(**fields: Any) -> bytes:
        return orjson.dumps(fields) + b"\n"

    completed = {k: v for k, v in first.items()}
    dispatched = {
        "v": 2,
        "event": "dispatched",
        "session": session,
        "mono": 1.0,
        "wall": 2.0,
        "task": task,
        "system": system,
        "anon_id": "ab",
        "budget_seconds": None,
    }
    return [
        # In flight when the controller died: attempt 1 sent, never completed.
        line(**dispatched, item="fresh", attempt=1),
        # Wrong types: neither path may take them.
        line(**dispatched, item="bad-attempt", attempt="3"),
        line(**dispatched, item="bool-attempt", attempt=True),
        line(**(completed | {"item": "bad-verdict", "verdict": "great"})),
        line(**(completed | {"item": "bad-output", "output": ["x"]})),
        line(**(completed | {"item": "bad-seconds", "seconds": "fast"})),
        b'{"v":2,"event":"completed","task":\n',
        b"not json at all\n",
        # A second completion of an item already completed: the first one counts.
        line(**(completed | {"verdict": "timeout", "output": None})),
        # Written by version 1 (no quick path): read through the model.
        line(**(completed | {"v": 1, "item": "old", "verdict": "crashed", "output": None})),
        # A later dispatch of the in-flight item: its next attempt is 3.
        line(**dispatched, item="fresh", attempt=2),
    ]


def _hostile_journal(run_dir: Path) -> Path:
    journal = run_dir / "journal.jsonl"
    with open(journal, "ab") as fh:
        for line in _hostile_lines(journal):
            fh.write(line)
        fh.write(b'{"v":2,"event":"dispatched","session":"torn')  # torn by a crash
    return journal


def _facts(state: RunState) -> dict[str, Any]:
    items = {(t, s, i) for t, s, i in state.attempts} | {
        (t, s, i) for (t, s), done in state.done.items() for i in done
    }
    return {
        "done": {k: sorted(v) for k, v in state.done.items() if v},
        "next": {k: state.next_attempt(*k) for k in items if k[2] not in state.done[k[:2]]},
        "sessions": state.sessions,
        "incidents": {
            k: [(type(r).__name__, getattr(r, "item", None), a) for r, a in j.incidents]
            for k, j in state.jobs.items()
        },
        "starts": {k: len(j.starts) for k, j in state.jobs.items()},
        "in_progress": {k: j.in_progress for k, j in state.jobs.items()},
        "settings": state.job_settings,
        "hashes": state.testset_hashes,
        "seed": state.audit_seed,
    }


def test_a_controller_replay_equals_the_full_typed_replay(tmp_path: Path, plan_env: Any) -> None:
    _, run_dir = _run(tmp_path, plan_env)
    journal = _hostile_journal(run_dir)
    full = RunState.from_journal(journal)  # every record through the models
    slim = RunState.from_journal(journal, keep_records=False)
    answers = RunState.from_journal(journal, keep_records=False, keep_answers=True)
    assert _facts(slim) == _facts(full) == _facts(answers)
    job = ("asr", "fake")
    assert set(full.completed[job]) == full.done[job] == slim.done[job]
    assert "old" in slim.done[job] and "bad-verdict" not in slim.done[job]
    assert slim.next_attempt("asr", "fake", "fresh") == 3
    # A controller keeps no record per item; readers that score keep the answers.
    assert not slim.completed and not slim.records
    assert answers.completed[job] == full.completed[job]
    # Only a failure stays in a controller's memory, without its answer.
    failures = [r for r, _ in slim.jobs[job].incidents if isinstance(r, Completed)]
    assert failures and all(r.output is None for r in failures)


def test_the_state_after_a_run_scores_as_a_reader_replay(tmp_path: Path, plan_env: Any) -> None:
    """`onsite run` scores its closing leaderboard from the controller's own state and the
    journal's completions read back (RunModel.after_run): the same as `onsite report`."""
    site, run_dir = _run(tmp_path, plan_env)
    journal = _hostile_journal(run_dir)
    controller = RunState.from_journal(journal, keep_records=False)
    after = controller.with_answers(journal)
    reader = RunState.from_journal(journal, keep_records=False, keep_answers=True)
    assert after.completed == reader.completed
    assert _facts(after) == _facts(reader)
    model = RunModel.open(run_dir)
    closing = RunModel.after_run(run_dir, model.site, controller, model.testsets)
    assert leaderboard(closing) == leaderboard(model)


def test_rebuilt_outputs_are_the_first_completions(tmp_path: Path, plan_env: Any) -> None:
    _, run_dir = _run(tmp_path, plan_env)
    journal = _hostile_journal(run_dir)
    full = RunState.from_journal(journal)
    expected = [
        json.loads(orjson.dumps(output_line(r))) for r in full.completed[("asr", "fake")].values()
    ]
    (run_dir / "outputs" / "asr" / "fake.jsonl").write_text("garbage\n")
    store = RunStore(run_dir, "check", fsync_seconds=0)
    try:
        store.rebuild_outputs([("asr", "fake")])
    finally:
        store.close()
    assert read_outputs(run_dir, "asr", "fake") == expected
    # Rebuilt in the opening's replay (as `onsite run` opens a run): the same file, an
    # empty one for a job with no completion, nothing for a job not asked for.
    (run_dir / "outputs" / "asr" / "fake.jsonl").write_text("garbage\n")
    other = run_dir / "outputs" / "asr" / "other.jsonl"
    other.write_text("left alone\n")
    store = RunStore(run_dir, "check", fsync_seconds=0, outputs=[("asr", "fake"), ("asr", "new")])
    try:
        assert read_outputs(run_dir, "asr", "fake") == expected
        assert (run_dir / "outputs" / "asr" / "new.jsonl").read_bytes() == b""
        assert other.read_text() == "left alone\n"
        assert not list(run_dir.rglob("*.tmp"))
        # Asked again in the same session, nothing is read or written ...
        (run_dir / "outputs" / "asr" / "fake.jsonl").write_text("appended live\n")
        store.rebuild_outputs([("asr", "fake")])
        assert (run_dir / "outputs" / "asr" / "fake.jsonl").read_text() == "appended live\n"
        # ... unless the file went missing meanwhile.
        (run_dir / "outputs" / "asr" / "fake.jsonl").unlink()
        store.rebuild_outputs([("asr", "fake")])
        assert read_outputs(run_dir, "asr", "fake") == expected
    finally:
        store.close()


def test_resume_after_a_hostile_journal_sends_each_missing_item_once(
    tmp_path: Path, plan_env: Any
) -> None:
    site, run_dir = _run(tmp_path, plan_env)
    journal = run_dir / "journal.jsonl"
    # Cut the journal back to a controller killed mid-run: drop the last three items'
    # completions and everything after, keep their dispatches (in flight at the kill).
    lines = list(complete_lines(journal))
    completions = [i for i, line in enumerate(lines) if quick_record(line) is not None]
    completions = [i for i in completions if orjson.loads(lines[i])["event"] == "completed"]
    cut = completions[-3]
    kept = [line for line in lines[:cut]] + [
        line for line in lines[cut:] if orjson.loads(line)["event"] == "dispatched"
    ]
    journal.write_bytes(b"".join(kept) + b'{"v":2,"event":"completed","ta')
    before = RunState.from_journal(journal, keep_records=False).done[("asr", "fake")]
    assert len(before) == ITEMS - 3
    done = onsite("run", str(site))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = read_outputs(run_dir, "asr", "fake")
    counts = Counter(row["id"] for row in rows)
    assert sorted(counts) == [f"u{i}" for i in range(ITEMS)] and set(counts.values()) == {1}
    resent = {row["id"]: row["attempt"] for row in rows if row["id"] not in before}
    assert len(resent) == 3 and all(attempt >= 2 for attempt in resent.values()), resent
    # Nothing already completed was sent again.
    sent_again = [
        r
        for r in read_journal(journal)
        if r["event"] == "dispatched" and r["session"] != orjson.loads(kept[0])["session"]
    ]
    assert {r["item"] for r in sent_again} == set(resent)


def test_plain_progress_prints_at_most_its_share_of_item_lines() -> None:
    console = Console(file=io.StringIO(), force_terminal=False, width=100, record=True)
    listener = ProgressListener(console, verbose_items=True)
    listener.ITEM_LINES_PER_SECOND = 5
    started = time.monotonic()
    with listener:
        listener(JobStarted("asr", "fake", 3000, 0))
        for n in range(3000):
            listener(
                Completed(
                    task="asr",
                    system="fake",
                    item=f"u{n}",
                    attempt=1,
                    anon_id="x",
                    verdict="ok" if n % 7 else "timeout",
                    output=None,
                    seconds=0.001,
                    budget_seconds=1.0,
                )
            )
        listener(JobFinished(task="asr", system="fake", completed=3000, scored=3000, total=3000))
    seconds = time.monotonic() - started
    lines = console.export_text().splitlines()
    item_lines = [ln for ln in lines if ln.startswith("asr fake u")]
    # However fast the items come: a few lines a second, never one per item.
    assert 1 <= len(item_lines) <= 5 * (math.ceil(seconds) + 1)
    # What was left out is counted, and the count is said before the job's last line.
    left_out = sum(int(ln.split("(")[1].split()[0]) for ln in lines if "not shown" in ln)
    assert len(item_lines) + left_out == 3000
    assert lines[-1] == "asr fake: done, 3000/3000 items completed"
    assert "asr fake: 3000/3000 items done" in lines[-2]
