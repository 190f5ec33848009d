"""harness.report verdicts and running score: hand-made journals and worked numbers."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from harness import RunStore, leaderboard, load_site
from harness.engine.audits import AuditLine
from harness.engine.running_score import DEFAULT_WEIGHTS, running_score
from harness.report import DEFAULT_LIMITS, build_report, judge_job
from tests.helpers import FAKE_SERVE, make_testset, write_site

# Five items of 0.1 s audio; each item's budget is 1.0 s, so the set's budget is 5.0 s.
ITEMS = [(f"u{i}", 1600, "a b") for i in range(1, 6)]


def hand_made_run(
    tmp_path: Path,
    results: dict[str, tuple[str, float]],
    scope: str = "set",
    restarts: int = 0,
    extra: Iterable[tuple[str, dict[str, Any]]] = (),
) -> Path:
    """A run directory whose journal says what `results` says: item -> (verdict, seconds)."""
    testset = make_testset(tmp_path / "set", ITEMS)
    site_path = write_site(
        tmp_path / "site.toml",
        testset,
        {"sys": {"command": FAKE_SERVE}},
        budget={"seconds": 1.0, "scope": scope},
    )
    site = load_site(site_path)
    store = RunStore(site.run_dir, "hand", fsync_seconds=0)
    try:
        store.keep_site_copy(site.path, site.root)
        job = {"task": "asr", "system": "sys"}
        store.record("session_started", pid=1, site="t", site_sha256=site.digest, limit=None)
        for n in range(restarts + 1):
            store.record(
                "system_started", **job, restart=n > 0, pid=100 + n, name="s", version="1",
                setup_seconds=0.5,
            )  # fmt: skip
        for event, fields in extra:
            store.record(event, **job, **fields)
        for item, (verdict, seconds) in results.items():
            answered = verdict in ("ok", "over_budget")
            store.record("dispatched", **job, item=item, attempt=1, anon_id="x", budget_seconds=1.0,
                         hang_seconds=5.0)  # fmt: skip
            store.record(
                "completed", **job, item=item, attempt=1, anon_id="x", verdict=verdict,
                output={"text": "a b"} if answered else None,
                message="" if answered else f"{verdict} on purpose",
                sent=0.0, done=seconds, seconds=seconds, budget_seconds=1.0,
                rtf=seconds / 0.1, speed=seconds / 0.1,
            )  # fmt: skip
        store.record("session_finished")
    finally:
        store.close()
    return site.run_dir


def all_ok(seconds: float = 0.5) -> dict[str, tuple[str, float]]:
    return {item: ("ok", seconds) for item, _, _ in ITEMS}


def only_row(run_dir: Path):
    (row,) = leaderboard(run_dir)
    return row


def failed(verdict) -> list[str]:
    return [line.rule for line in verdict.lines if not line.passed]


# --- verdicts --------------------------------------------------------------------------


def test_valid_run_has_one_passing_line_per_rule(tmp_path: Path) -> None:
    verdict = judge_job(only_row(hand_made_run(tmp_path, all_ok())))
    assert verdict.valid and verdict.label == "VALID"
    lines = {line.rule: line for line in verdict.lines}
    assert list(lines) == [
        "every item attempted",
        "set budget met",
        "timeouts within limit",
        "crashes within limit",
        "invalid outputs within limit",
    ]
    assert lines["every item attempted"].figure == "5/5 items completed"
    assert lines["set budget met"].figure == "2.50 s of 5.00 s (50.0% of the summed item budgets)"
    assert lines["timeouts within limit"].figure == "0 (limit 0)"


def test_not_every_item_attempted_is_invalid(tmp_path: Path) -> None:
    results = dict(list(all_ok().items())[:3])
    verdict = judge_job(only_row(hand_made_run(tmp_path, results)))
    assert failed(verdict) == ["every item attempted"]
    assert verdict.lines[0].figure == "3/5 items completed"


def test_set_budget_exceeded_is_invalid_though_each_item_may_be_late(tmp_path: Path) -> None:
    # 5 x 1.2 s = 6.0 s against 5 x 1.0 s: over budget as a set.
    results = {item: ("over_budget", 1.2) for item, _, _ in ITEMS}
    verdict = judge_job(only_row(hand_made_run(tmp_path, results)))
    assert verdict.label == "INVALID"
    assert failed(verdict) == ["set budget met"]
    assert "6.00 s of 5.00 s (120.0%" in verdict.lines[1].figure


def test_set_budget_met_with_some_late_items(tmp_path: Path) -> None:
    results = all_ok(0.5) | {"u1": ("over_budget", 2.0)}  # 4 x 0.5 + 2.0 = 4.0 s <= 5.0 s
    assert judge_job(only_row(hand_made_run(tmp_path, results))).valid


def test_item_scope_has_no_set_rule_and_over_budget_only_with_a_limit(tmp_path: Path) -> None:
    results = all_ok(0.5) | {"u1": ("over_budget", 2.0)}
    row = only_row(hand_made_run(tmp_path, results, scope="item"))
    verdict = judge_job(row)
    assert verdict.valid
    assert "set budget met" not in [line.rule for line in verdict.lines]
    strict = judge_job(row, {"max_over_budget": 0})
    assert failed(strict) == ["items over budget within limit"]
    assert strict.lines[-1].figure == "1 (limit 0)"


@pytest.mark.parametrize(
    ("verdict", "rule"),
    [
        ("timeout", "timeouts within limit"),
        ("crashed", "crashes within limit"),
        ("invalid_output", "invalid outputs within limit"),
    ],
)
def test_each_failure_kind_over_its_limit_is_invalid(
    tmp_path: Path, verdict: str, rule: str
) -> None:
    results = all_ok() | {"u2": (verdict, 0.2)}
    row = only_row(hand_made_run(tmp_path, results))
    judged = judge_job(row)
    assert judged.label == "INVALID"
    assert failed(judged) == [rule]
    key = {"timeout": "max_timeouts", "crashed": "max_crashes"}.get(verdict, "max_invalid_outputs")
    assert judge_job(row, {key: 1}).valid, "a limit of 1 allows one"


def test_errors_are_judged_only_when_a_limit_is_given(tmp_path: Path) -> None:
    row = only_row(hand_made_run(tmp_path, all_ok() | {"u3": ("error", 0.1)}))
    assert DEFAULT_LIMITS["max_errors"] is None
    assert judge_job(row).valid
    assert failed(judge_job(row, {"max_errors": 0})) == ["error replies within limit"]


def test_audit_lines_from_the_caller_are_shown_and_judged(tmp_path: Path) -> None:
    row = only_row(hand_made_run(tmp_path, all_ok()))
    verdict = judge_job(
        row,
        audits=[
            ("repeated items agree with the first answer", True, "2/2 agree"),
            {"rule": "order shuffled", "passed": True, "figure": "seeded"},
            AuditLine("repeated items not suspiciously faster", False, "1/2 took less"),
        ],
    )
    assert failed(verdict) == ["audit: repeated items not suspiciously faster"]
    assert [line.figure for line in verdict.lines[-3:]] == ["2/2 agree", "seeded", "1/2 took less"]


def test_bad_limits_are_refused_with_the_allowed_keys(tmp_path: Path) -> None:
    row = only_row(hand_made_run(tmp_path, all_ok()))
    with pytest.raises(ValueError, match="allowed: max_timeouts"):
        judge_job(row, {"max_timeout": 1})
    with pytest.raises(ValueError, match="0 or more"):
        judge_job(row, {"max_crashes": -1})


def test_build_report_takes_limits_per_task_and_lists_failures(tmp_path: Path) -> None:
    run_dir = hand_made_run(
        tmp_path,
        all_ok() | {"u2": ("crashed", 0.2)},
        restarts=1,
        extra=[("link_lost", {"item": "u4", "outcome": "link", "reason": "cable pulled"})],
    )
    assert build_report(run_dir).jobs()[0].verdict.label == "INVALID"
    job = build_report(run_dir, limits={"asr": {"max_crashes": 1}}).jobs()[0]
    assert job.verdict.valid
    assert [(f.item, f.verdict, f.message) for f in job.failures] == [
        ("u4", "link_lost", "cable pulled"),
        ("u2", "crashed", "crashed on purpose"),
    ]
    assert job.setup_seconds_total == pytest.approx(1.0)
    assert job.execution_seconds == pytest.approx(4 * 0.5 + 0.2 + 1.0)
    with pytest.raises(ValueError, match="unknown task 'nope'"):
        build_report(run_dir, limits={"nope": {}})


# --- running score ---------------------------------------------------------------------


def record(item: str, verdict: str, seconds: float, budget: float | None = 1.0) -> dict:
    return {"item": item, "verdict": verdict, "seconds": seconds, "budget_seconds": budget}


def worked_example() -> list[dict]:
    """docs/report.md's example: 20 items with a 1 s budget each."""
    return (
        [record(f"i{n}", "ok", 0.5) for n in range(16)]
        + [record("late", "over_budget", 1.5)]
        + [record("hung", "timeout", 10.0)]
        + [record("c1", "crashed", 0.1), record("c2", "crashed", 0.1)]
    )


def test_running_score_worked_example() -> None:
    score = running_score(worked_example(), restarts=3)
    # Usage: (16 x 0.5 + 1.5 + min(10, 2) + 2 x 0.1) / 20 = 11.7 / 20 = 0.585.
    assert score.mean_budget_usage == pytest.approx(0.585)
    assert score.speed_points == pytest.approx(5.85)
    # Per 100 items (x 5): timeout 5, crashes 10, restarts 15 points at weight 1.
    assert dict(score.penalties) == pytest.approx(
        {"timeout": 5.0, "crash": 10.0, "restart": 15.0, "error": 0.0, "invalid_output": 0.0}
    )
    assert score.score == pytest.approx(64.15)
    assert score.figure().endswith("over 20 items = 64.15")


def test_running_score_weights_override_and_clip() -> None:
    assert running_score(worked_example(), 3, {"restart": 0}).score == pytest.approx(79.15)
    assert running_score(worked_example(), 3, {"speed": 0, "crash": 2}).score == pytest.approx(
        100 - 5 - 20 - 15
    )
    assert running_score(worked_example(), 3, {"timeout": 50}).score == 0.0
    with pytest.raises(ValueError, match="allowed: speed"):
        running_score(worked_example(), 3, {"crashes": 1})
    assert set(DEFAULT_WEIGHTS) == {
        "speed",
        "timeout",
        "crash",
        "restart",
        "error",
        "invalid_output",
    }


def test_running_score_leaves_out_audit_repeats_and_unbudgeted_speed() -> None:
    records = [record("a", "ok", 0.5), record("a#audit1", "timeout", 9.0)]
    assert running_score(records, 0).score == pytest.approx(95.0)
    unbudgeted = running_score([record("a", "ok", 3.0, budget=None)], 0)
    assert unbudgeted.mean_budget_usage is None and unbudgeted.score == 100.0


def test_running_score_in_the_report_matches_the_journal(tmp_path: Path) -> None:
    run_dir = hand_made_run(tmp_path, all_ok(0.5) | {"u5": ("timeout", 5.0)}, restarts=1)
    job = build_report(run_dir).jobs()[0]
    # Usage (4 x 0.5 + 2) / 5 = 0.8 -> 8 points; 1 timeout and 1 restart in 5 items -> 20 each.
    assert job.running.score == pytest.approx(100 - 8 - 20 - 20)


def test_one_name_table_agrees_with_rules_weights_and_columns() -> None:
    """Each failing verdict's rule, weight and column are named once (budgets.COUNTED_VERDICTS)."""
    from dataclasses import fields

    from harness.engine.budgets import COUNTED_VERDICTS, VERDICTS
    from harness.leaderboard import LeaderboardRow
    from harness.site import Rules, RunningScoreWeights

    assert {c.verdict for c in COUNTED_VERDICTS} == set(VERDICTS) - {"ok"}
    assert [c.rule for c in COUNTED_VERDICTS] == list(Rules.model_fields)
    weights = {c.weight for c in COUNTED_VERDICTS if c.weight is not None}
    # Speed and restarts are charged too, but they are not verdicts.
    assert weights | {"speed", "restart"} == set(RunningScoreWeights.model_fields)
    columns = {f.name for f in fields(LeaderboardRow)}
    assert {c.column for c in COUNTED_VERDICTS} <= columns
    # One definition of each default: the site file's models.
    assert DEFAULT_LIMITS == Rules().model_dump()
    assert DEFAULT_WEIGHTS == RunningScoreWeights().model_dump()
    doc = (Path(__file__).resolve().parent.parent / "docs" / "report.md").read_text("utf-8")
    for c in COUNTED_VERDICTS:
        weight = f"`{c.weight}`" if c.weight else "-"
        assert f"| `{c.verdict}` | `{c.rule}` | {weight} | `{c.column}` |" in doc
