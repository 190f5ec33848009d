"""The whole-input audit line: a first answer far faster than its whole-input repeat is the
mark of a device that worked on its input while it crossed the line (harness/engine/audits.py).

Judged from completion records alone, as the leaderboard judges a job; the serial runs
behind it are tests/test_serial_whole_input_run.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness import RunStore, leaderboard, load_site
from harness.engine.audits import WHOLE_INPUT_SPEEDUP_LIMIT, whole_input_lines
from harness.report import build_report, judge_job
from tests.helpers import FAKE_SERVE, make_testset, write_site

RULE = "first answers not suspiciously faster than whole-input repeats"


def record(item: str, seconds: float, whole: bool | None = None, **kw: Any) -> dict[str, Any]:
    return {
        "item": item,
        "verdict": "ok",
        "seconds": seconds,
        "output": {"text": "a b"},
        "whole_input_first": whole,
        **kw,
    }


def test_a_first_answer_far_faster_than_its_whole_input_repeat_fails() -> None:
    records = [
        record("u1", 0.4),
        record("u2", 1.0),
        record("u1#audit1", 1.6, True),
        record("u2#audit2", 1.1, True),
    ]
    (line,) = whole_input_lines(records)
    assert line.rule == RULE and not line.passed
    assert line.figure.startswith(
        f"1/2 first answers took less than {WHOLE_INPUT_SPEEDUP_LIMIT:g}x"
    )
    assert "u1 (0.400 s against 1.600 s)" in line.figure


def test_an_honest_device_passes() -> None:
    records = [record("u1", 1.0), record("u1#audit1", 1.3, True)]
    (line,) = whole_input_lines(records)
    assert line.passed and line.figure.startswith("0/1 first answers"), line.figure


def test_a_go_back_n_device_is_not_checked_and_the_line_says_so() -> None:
    records = [record("u1", 0.2), record("u1#audit1", 1.6, False)]
    (line,) = whole_input_lines(records)
    # Its repeat went in order like the first answer: the comparison would prove nothing,
    # and failing a device for what it cannot be sent would break honest ones.
    assert line.passed
    assert line.figure.startswith("not checked"), line.figure
    assert "only in order" in line.figure and "READY flag bit 1" in line.figure


def test_no_line_where_the_transport_holds_nothing_back() -> None:
    # Local and SSH systems are handed an item once its file is staged whole.
    assert whole_input_lines([record("u1", 0.2), record("u1#audit1", 1.6)]) == []
    assert whole_input_lines([record("u1", 0.2), record("u2", 1.6)]) == []


def test_what_a_lost_link_charged_is_left_out_of_the_comparison() -> None:
    # The repeat was re-sent after a lost link: its record carries the lost attempt's
    # time, which is not the device's work on the whole input.
    records = [record("u1", 1.0), record("u1#audit1", 3.0, True, resent=1, lost_seconds=2.0)]
    (line,) = whole_input_lines(records)
    assert line.passed, line.figure
    # And a first answer charged for a lost attempt is compared on its own time too.
    records = [record("u1", 2.5, resent=1, lost_seconds=2.2), record("u1#audit1", 1.6, True)]
    (line,) = whole_input_lines(records)
    assert not line.passed, line.figure


def test_small_differences_are_noise_not_a_gain() -> None:
    # Far below the limit as a ratio, but a few hundredths of a second apart: scheduling.
    records = [record("u1", 0.01), record("u1#audit1", 0.06, True)]
    (line,) = whole_input_lines(records)
    assert line.passed, line.figure


def test_a_first_answer_that_failed_is_not_compared() -> None:
    records = [
        record("u1", 30.0, verdict="timeout", output=None),
        record("u1#audit1", 1.6, True),
    ]
    (line,) = whole_input_lines(records)
    assert line.passed and "1 not compared (the first answer failed)" in line.figure, line.figure


def test_failing_the_whole_input_repeat_escapes_nothing() -> None:
    # Repeats are neither scored nor counted in the verdict's limits: a device that fails
    # the items it is sent out of order (an error reply, a hang) must not escape the
    # comparison by it.
    for verdict in ("error", "timeout", "crashed", "invalid_output"):
        records = [
            record("u1", 0.2),
            record("u1#audit1", 1.6, True, verdict=verdict, output=None),
        ]
        (line,) = whole_input_lines(records)
        assert not line.passed, (verdict, line.figure)
        assert f"u1 ({verdict})" in line.figure and "not whole input first" in line.figure


def test_mixed_orders_count_only_the_checked_pairs() -> None:
    records = [
        record("u1", 0.3),
        record("u2", 0.3),
        record("u1#audit1", 1.6, True),
        record("u2#audit2", 1.6, False),
    ]
    (line,) = whole_input_lines(records)
    assert not line.passed
    assert line.figure.startswith("1/1 first answers"), line.figure
    assert "1 repeat went in order" in line.figure


ITEMS = [(f"u{i}", 1600, "a b") for i in range(1, 4)]


def run_with(tmp_path: Path, results: dict[str, tuple[float, bool | None]]) -> Path:
    """A run directory whose journal holds these completions: item -> (seconds, order)."""
    testset = make_testset(tmp_path / "set", ITEMS)
    site_path = write_site(
        tmp_path / "site.toml",
        testset,
        {"sys": {"command": FAKE_SERVE}},
        task_keys={"audit": {"repeats": 1}},
    )
    site = load_site(site_path)
    store = RunStore(site.run_dir, "hand", fsync_seconds=0)
    try:
        store.keep_site_copy(site.path, site.root)
        job = {"task": "asr", "system": "sys"}
        store.record("session_started", pid=1, site="t", site_sha256=site.digest, limit=None)
        store.record("system_started", **job, restart=False, pid=100, name="s", version="1",
                     setup_seconds=0.5)  # fmt: skip
        for item, (seconds, whole) in results.items():
            store.record("dispatched", **job, item=item, attempt=1, anon_id="x",
                         budget_seconds=5.0, hang_seconds=50.0)  # fmt: skip
            store.record(
                "completed", **job, item=item, attempt=1, anon_id="x", verdict="ok",
                output={"text": "a b"}, sent=0.0, done=seconds, seconds=seconds,
                budget_seconds=5.0, whole_input_first=whole,
                audit_of=item.split("#")[0] if "#" in item else None,
            )  # fmt: skip
        store.record("session_finished")
    finally:
        store.close()
    return site.run_dir


def test_the_line_is_in_the_leaderboard_and_the_verdict(tmp_path: Path) -> None:
    run_dir = run_with(
        tmp_path,
        {"u1": (0.3, None), "u2": (1.0, None), "u3": (1.0, None), "u1#audit1": (1.6, True)},
    )
    (row,) = leaderboard(run_dir)
    lines = {line["rule"]: line for line in row.audits}
    assert RULE in lines and not lines[RULE]["passed"], row.audits
    verdict = judge_job(row)
    assert not verdict.valid
    assert [line.rule for line in verdict.lines if not line.passed] == [f"audit: {RULE}"]
    job = build_report(run_dir).jobs()[0]
    assert job.verdict.label == "INVALID"
