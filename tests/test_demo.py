"""The demo site with the real pocketsphinx systems, end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from harness import load_site, task_kind
from tests.helpers import REPO, onsite, read_outputs
from tests.test_publish import publish_names_nothing

DEMO = REPO / "site_config" / "demo.toml"


def test_demo_site_is_valid_and_its_data_is_complete() -> None:
    site = load_site(DEMO)
    assert site.jobs() == [
        ("asr-2x", "sphinx"),
        ("asr-2x", "sphinx-fast"),
        ("asr-2x", "faulty"),
        ("asr-20x", "sphinx"),
        ("command", "pda-sphinx"),
        ("ocr", "tesseract"),
        ("ocr-ink", "tesseract-ink"),
        ("face-detect", "cascade"),
        ("face-video", "cascade"),
        ("face-identify", "lbp"),
        ("face-identify", "pixels"),
        ("face-verify", "lbp"),
        ("face-verify", "pixels"),
        ("mt", "word-mt"),
        ("cws", "fmm"),
        ("pos", "rule-tagger"),
        ("ner", "rule-ner"),
        ("textcat", "tfidf"),
        ("ir", "tfidf"),
        ("summarization", "lead"),
        ("tts", "espeak"),
        ("tts", "festival"),
        ("kws", "sphinx-kws"),
    ]
    for task in site.config.tasks:
        testset = task_kind(site.config.tasks[task].kind).load(
            site.testset_path(task), site.config.tasks[task]
        )
        assert testset.items and not testset.invalid, task
    data = site.testset_path("asr-2x")
    assert len(list(data.glob("*.flac"))) == 24
    assert sum(p.stat().st_size for p in data.iterdir()) < 3_000_000


def test_demo_runs_with_real_pocketsphinx(tmp_path: Path) -> None:
    run = onsite("run", str(DEMO), "--runs", str(tmp_path), "--limit", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    run_dir = tmp_path / "demo"
    rows = read_outputs(run_dir, "asr-2x", "sphinx")
    # The demo audits asr-2x: a shuffled order and two hidden repeats, marked audit_of.
    assert sorted(r["id"] for r in rows if not r["audit_of"]) == [
        "s01_clean",
        "s01_snr15",
        "s01_snr5",
    ]
    assert len([r for r in rows if r["audit_of"]]) == 2
    # Speed belongs to benchmarks/, not here: on a slow machine an item may run into the
    # hang limit, and then only as a timeout that really waited that long.
    hang = load_site(DEMO).config.tasks["asr-2x"].budget.hang_seconds
    assert all(
        r["verdict"] == "ok" or (r["verdict"] == "timeout" and r["seconds"] >= hang) for r in rows
    ), [(r["id"], r["verdict"], r["seconds"]) for r in rows]
    assert any(r["verdict"] == "ok" and r["output"]["text"] for r in rows), (
        "pocketsphinx recognised nothing"
    )
    assert all(r["rtf"] > 0 for r in rows if r["verdict"] == "ok")
    report = json.loads(onsite("report", str(run_dir), "--json").stdout)
    assert {(r["task"], r["system"]) for r in report} == set(load_site(DEMO).jobs())
    by_task = {r["task"]: r for r in report}
    assert by_task["ocr"]["speed_unit"] == "chars_per_second" and by_task["ocr"]["speed_mean"]
    assert by_task["face-detect"]["speed_unit"] == "ms_per_frame"
    assert "false detections" in by_task["face-detect"]["detail"]
    assert by_task["face-video"]["late_rate"] is not None
    # The keyword list reached the spotter and its scored proposals give a DET curve.
    assert by_task["kws"]["score"] is not None and "EER" in by_task["kws"]["detail"]
    # Every text kind is in the demo, each with a number from its first items.
    for task in ("mt", "cws", "pos", "ner", "textcat", "ir", "summarization"):
        assert isinstance(by_task[task]["score"], float), by_task[task]
        assert by_task[task]["completed"] == 3 and by_task[task]["speed_mean"], task
    sphinx = next(r for r in report if r["system"] == "sphinx" and r["task"] == "asr-2x")
    assert 0 <= sphinx["wer"] < 1 and sphinx["setup_seconds"] > 0
    live_equals_score_run(run_dir, report)
    intervals_and_ranks_shown(run_dir, report, tmp_path / "report.html")
    # Published, the demo's results hold none of its site file's names (docs/publishing.md).
    publish_names_nothing(run_dir, tmp_path / "published")


def intervals_and_ranks_shown(run_dir: Path, report: list[dict[str, Any]], html: Path) -> None:
    """Every demo row with a score has its interval and rank range; they are `onsite
    compare`'s for asr-2x's three systems, and the HTML report shows them."""
    for row in report:
        if row["score"] is None:
            continue
        assert row["ci_low"] <= row["score"] <= row["ci_high"], row
        assert 1 <= row["rank_low"] <= row["rank_high"], row
    proc = onsite("compare", str(run_dir), "--task", "asr-2x", "--json")
    assert proc.returncode == 0, proc.stderr
    compared = json.loads(proc.stdout)
    asr = {r["system"]: r for r in report if r["task"] == "asr-2x"}
    assert [s["system"] for s in compared["systems"]] == list(asr)
    keys = ("score", "ci_low", "ci_high", "rank_low", "rank_high")
    for s in compared["systems"]:
        assert {k: s[k] for k in keys} == {k: asr[s["system"]][k] for k in keys}
    made = onsite("report", str(run_dir), "--html", str(html))
    assert made.returncode == 0, made.stderr
    text = html.read_text("utf-8")
    for row in asr.values():
        assert f'<span class="ci">[{100 * row["ci_low"]:.2f}, {100 * row["ci_high"]:.2f}]' in text
    assert 'section id="task-asr-2x"' in text and "does not separate the systems" in text


# The `onsite score` family giving each kind's headline from a run (tts has none: its
# quality comes from listeners).
HEADLINE_FAMILY = {
    "asr": "asr",
    "command": "command",
    "kws": "kws",
    "ocr": "ocr",
    "face-detect": "faces-detect",
    "face-identify": "faces-identify",
    "face-verify": "faces-verify",
    "mt": "mt",
    "cws": "cws",
    "pos": "pos",
    "ner": "ner",
    "textcat": "textcat",
    "ir": "ir",
    "summarization": "rouge",
}


def live_equals_score_run(run_dir: Path, report: list[dict[str, Any]]) -> None:
    """Every demo job with a score: the leaderboard's headline == `onsite score --run`."""
    from harness import leaderboard
    from tests.test_export_formats import cli_json, find

    kinds = {t: c.kind for t, c in load_site(DEMO).config.tasks.items()}
    assert set(kinds.values()) - set(HEADLINE_FAMILY) == {"tts"}
    checked = set()
    for row in report:
        kind = kinds[row["task"]]
        if kind not in HEADLINE_FAMILY or row["score"] is None:
            continue
        family = HEADLINE_FAMILY[kind]
        result = cli_json(
            "score", family, "--run", str(run_dir), "--task", row["task"], "--system", row["system"]
        )
        key = "wer" if kind == "asr" else row["metric"]
        assert find(result, key) == pytest.approx(row["score"], abs=1e-12), (row["task"], result)
        checked.add(kind)
    assert checked == set(HEADLINE_FAMILY)
    # The spotter's DET curve: the live det block == `onsite score kws-det --run`.
    [kws] = [r for r in leaderboard(run_dir) if r.task == "kws"]
    det = cli_json("score", "kws-det", "--run", str(run_dir), "--task", "kws")
    assert det["points"] == kws.scores["det"]["points"] and det["eer"] == kws.scores["det"]["eer"]
    # The MT job exported as CWMT XML passes the CWMT checks: the file is named by the rule
    # although the set's id is "mt", and the system "word-mt" is written site/sysid word_mt.
    checked_xml = cli_json("score", "mt-check", "--run", str(run_dir), "--task", "mt")
    assert checked_xml["ok"] is True, checked_xml
