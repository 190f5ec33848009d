"""Intervals and tied ranks wherever a score is shown: `onsite report` (table, --json,
HTML, the JSON file), `onsite score --ci` and the console's API, all equal to what
`onsite compare` computes with the same settings (harness/significance.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness.cli.main import main
from harness.significance import job_interval
from harness.store.run_model import RunModel
from tests.helpers import onsite
from tests.test_compare import asr_run  # noqa: F401 - the fixture: three ASR systems, a run

ROW_KEYS = {"ci_low", "ci_high", "rank_low", "rank_high"}


def _report(run: Path, *args: str) -> list[dict[str, Any]]:
    proc = onsite("report", str(run), "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout))


def _compare(run: Path, *args: str) -> dict[str, Any]:
    proc = onsite("compare", str(run), "--task", "asr", "--json", *args)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def test_report_rows_carry_comparees_intervals_and_ranks(asr_run: Path) -> None:  # noqa: F811
    rows = _report(asr_run)
    assert all(ROW_KEYS <= set(r) for r in rows)
    compared = _compare(asr_run)
    by_system = {s["system"]: s for s in compared["systems"]}
    assert [r["system"] for r in rows] == ["right", "wrong", "crashing"]
    for row in rows:
        theirs = by_system[row["system"]]
        # Every system completed every item: the report's figures are compare's.
        assert {k: row[k] for k in ("score", *ROW_KEYS)} == {
            k: theirs[k] for k in ("score", *ROW_KEYS)
        }
        assert row["ci_low"] <= row["score"] <= row["ci_high"]
    # Other settings reach both alike: approximate randomization ranks, another seed.
    settings = ("--samples", "300", "--seed", "7")
    rows = _report(asr_run, *settings, "--rank-test", "ar")
    compared = _compare(asr_run, *settings, "--test", "ar")
    assert [(r["rank_low"], r["rank_high"], r["ci_low"]) for r in rows] == [
        (s["rank_low"], s["rank_high"], s["ci_low"]) for s in compared["systems"]
    ]
    # Left out on request: the live leaderboard's fields, None.
    assert all(r[k] is None for r in _report(asr_run, "--no-intervals") for k in ROW_KEYS)


def test_a_system_with_fewer_items_has_its_own_interval(asr_run: Path) -> None:  # noqa: F811
    # An interval is around the row's own headline (its completed items); ranks compare
    # the systems on the items all of them completed.
    model = RunModel.open(asr_run)
    for system in ("right", "wrong", "crashing"):
        found = job_interval(model, "asr", system)
        row = next(r for r in _report(asr_run) if r["system"] == system)
        assert (found.score, found.ci_low, found.ci_high) == (
            row["score"],
            row["ci_low"],
            row["ci_high"],
        )
        assert found.items == 6 and found.samples == 1000 and found.seed == 12345


def test_html_and_json_reports_show_them_with_the_settings(
    asr_run: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    html, data = tmp_path / "r.html", tmp_path / "r.json"
    proc = onsite("report", str(asr_run), "--html", str(html), "--json-file", str(data))
    assert proc.returncode == 0, proc.stderr
    report = json.loads(data.read_text("utf-8"))
    assert report["intervals"]["seed"] == 12345 and report["intervals"]["bootstrap_samples"] == 1000
    assert report["intervals"]["reproduce"].startswith("onsite compare RUN --task TASK")
    text = html.read_text("utf-8")
    assert '<th class="l">rank</th>' in text
    for job in report["tasks"][0]["jobs"]:
        row = job["row"]
        interval = f"[{100 * row['ci_low']:.2f}, {100 * row['ci_high']:.2f}]"
        assert f'<span class="ci">{interval}</span>' in text
        rank = f"{row['rank_low']}" + (
            f"-{row['rank_high']}" if row["rank_high"] != row["rank_low"] else ""
        )
        assert f'<td class="l">{rank}</td><td class="l"><b>{row["system"]}</b>' in text
    # The test that separates ranks is named, with what reproduces it.
    assert "paired bootstrap resampling (1000 samples, seed 12345)" in text
    assert "onsite compare RUN --task asr --test bootstrap --samples 1000 --seed 12345" in text
    assert "id='intervals'" in text


def test_the_terminal_table_shows_ranks_and_intervals(asr_run: Path) -> None:  # noqa: F811
    proc = onsite("report", str(asr_run))
    assert proc.returncode == 0, proc.stderr
    rows = _report(asr_run)
    for row in rows:
        interval = f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}]"
        assert interval in proc.stdout, (interval, proc.stdout)
    assert "rank" in proc.stdout


def test_score_ci_is_the_reports_interval(
    asr_run: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
) -> None:
    rows = {r["system"]: r for r in _report(asr_run)}
    for system in rows:
        args = ["score", "asr", "--run", str(asr_run), "--task", "asr", "--system", system]
        assert main([*args, "--ci", "--json"]) == 0
        interval = json.loads(capsys.readouterr().out)["interval"]
        assert (interval["score"], interval["ci_low"], interval["ci_high"]) == (
            rows[system]["score"],
            rows[system]["ci_low"],
            rows[system]["ci_high"],
        )
    # Offline, from the job's own files: the same utterances give the same interval.
    export = ["export", str(asr_run), "--task", "asr", "--system", "wrong", "--format", "trn"]
    hyp = onsite(*export)
    ref = onsite(*export, "--references")
    assert hyp.returncode == ref.returncode == 0, hyp.stderr + ref.stderr
    hyp_file = asr_run.parent / "wrong.hyp.trn"
    ref_file = asr_run.parent / "wrong.ref.trn"
    hyp_file.write_text(hyp.stdout, "utf-8")
    ref_file.write_text(ref.stdout, "utf-8")
    assert main(["score", "asr", "--ref", str(ref_file), "--hyp", str(hyp_file), "--ci"]) == 0
    out = capsys.readouterr().out
    assert "interval" in out and f"{rows['wrong']['ci_low']:g}"[:6] in out
    # A family whose files have no per-item statistics here says what to do instead.
    gold = asr_run.parent / "gold.txt"
    gold.write_text("a b c\n", "utf-8")
    assert main(["score", "cws", "--gold", str(gold), "--test", str(gold), "--ci"]) == 2
    assert "--run RUN --task T --system S" in capsys.readouterr().err
