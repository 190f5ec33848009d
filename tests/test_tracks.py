"""Tracks, run types, participants and declarations (issue 29, item 1): checked in the
site file, shown in every leaderboard and report, and `onsite report --track` filters."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest

from harness.site import SiteError, load_site
from tests.helpers import FAKE_SERVE, make_testset, onsite, run_site, write_site

ITEMS = [(f"u{i}", 1600 * i, "one two three four") for i in range(1, 5)]


def _system(plan: dict[int, Any], **keys: Any) -> dict[str, Any]:
    return {
        "command": FAKE_SERVE,
        "env": {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})},
        **keys,
    }


RIGHT = {1600 * i: {"text": "one two three four"} for i in range(1, 5)}
WRONG = {**RIGHT, 1600: {"text": "one too three"}}


@pytest.fixture(scope="module")
def tracked_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("tracks")
    tmp.chmod(0o755)  # a sealed system reads its test set as another user
    root = make_testset(tmp / "set", ITEMS)
    site = write_site(
        tmp / "site.toml",
        root,
        {
            "alpha": _system(RIGHT, participant="team-a", track="closed", run_type="primary"),
            "alpha2": _system(WRONG, participant="team-a", track="closed", run_type="contrast"),
            "beta": _system(
                WRONG,
                participant="team-b",
                track="open",
                run_type="primary",
                declarations="trained on the 2005 Gigaword corpus",
            ),
        },
        task_keys={"tracks": ["closed", "open"]},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None, None, None], results
    return run_dir


def _site_error(tmp_path: Path, systems: dict[str, dict[str, Any]], **task: Any) -> str:
    root = make_testset(tmp_path / "set", ITEMS[:1])
    path = write_site(tmp_path / "site.toml", root, systems, task_keys=task or None)
    with pytest.raises(SiteError) as err:
        load_site(path)
    return str(err.value)


def test_a_track_outside_the_tasks_list_is_refused(tmp_path: Path) -> None:
    message = _site_error(
        tmp_path, {"a": _system(RIGHT, track="unlimited")}, tracks=["closed", "open"]
    )
    assert "systems.a" in message and "'unlimited'" in message and "closed" in message


def test_a_task_with_tracks_needs_every_systems_track(tmp_path: Path) -> None:
    message = _site_error(tmp_path, {"a": _system(RIGHT)}, tracks=["closed"])
    assert "systems.a: no track" in message and "set track" in message


def test_one_primary_and_two_contrastive_runs_per_participant(tmp_path: Path) -> None:
    two = {n: _system(RIGHT, participant="t", run_type="primary") for n in ("a", "b")}
    message = _site_error(tmp_path, two)
    assert "participant 't'" in message and "2 primary run(s) (a, b)" in message
    three = {n: _system(RIGHT, participant="t", run_type="contrast") for n in ("c", "d", "e")}
    assert "3 contrastive (c, d, e)" in _site_error(tmp_path / "x", three)
    # Two teams may each have their primary; a system with no participant is its own.
    fine = {
        "a": _system(RIGHT, participant="t", run_type="primary"),
        "b": _system(RIGHT, participant="u", run_type="primary"),
        "c": _system(RIGHT, run_type="primary"),
    }
    root = make_testset(tmp_path / "ok" / "set", ITEMS[:1])
    site = load_site(write_site(tmp_path / "ok" / "site.toml", root, fine))
    assert [site.participant(s) for s in fine] == ["t", "u", "c"]


def test_rows_carry_the_entry_and_track_filters(tracked_run: Path) -> None:
    rows = json.loads(onsite("report", str(tracked_run), "--json").stdout)
    entry = {r["system"]: (r["participant"], r["track"], r["run_type"]) for r in rows}
    assert entry == {
        "alpha": ("team-a", "closed", "primary"),
        "alpha2": ("team-a", "closed", "contrast"),
        "beta": ("team-b", "open", "primary"),
    }
    assert [r["declarations"] for r in rows] == ["", "", "trained on the 2005 Gigaword corpus"]
    closed = json.loads(onsite("report", str(tracked_run), "--json", "--track", "closed").stdout)
    assert [r["system"] for r in closed] == ["alpha", "alpha2"]
    # Ranked among the track's systems: two of them.
    assert all(1 <= r["rank_low"] <= r["rank_high"] <= 2 for r in closed)
    unknown = onsite("report", str(tracked_run), "--track", "unlimited")
    assert unknown.returncode == 2 and "use one of: closed, open" in unknown.stderr
    table = onsite("report", str(tracked_run)).stdout
    assert "closed, primary" in table and "open, primary, + declared" in table


def test_html_csv_and_json_reports_show_them(tracked_run: Path, tmp_path: Path) -> None:
    html, table, data = tmp_path / "r.html", tmp_path / "r.csv", tmp_path / "r.json"
    args = ["--html", str(html), "--csv", str(table), "--json-file", str(data)]
    proc = onsite("report", str(tracked_run), *args, "--track", "open")
    assert proc.returncode == 0, proc.stderr
    text = html.read_text("utf-8")
    assert "<th class=\"l\">participant</th><th class=\"l\">track</th>" in text
    assert "<b>beta</b> †" in text and "trained on the 2005 Gigaword corpus" in text
    assert "Track <b>open</b> only" in text and "<b>alpha</b>" not in text
    [line] = csv.DictReader(io.StringIO(table.read_text("utf-8")))
    assert (line["system"], line["participant"], line["track"], line["run_type"]) == (
        "beta",
        "team-b",
        "open",
        "primary",
    )
    report = json.loads(data.read_text("utf-8"))
    assert report["track"] == "open"
    assert [s["name"] for s in report["systems"]] == ["beta"]
    assert report["systems"][0]["participant"] == "team-b"
