"""`onsite check` as a participant runs it: each item's output, and the quality so far.

Real taggers (tests/systems/pos_table.py) on a development set with references; one
of them writes ESC, CR and BEL into its tags. The dry run shows every item's output on
one short line with no control character, and the quality over the items it ran,
which equals what `onsite report` gives for a run of the same items.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cli.check import dry_run_quality, output_text
from harness.engine.dryrun import dry_run
from harness.site import load_site
from tests.helpers import REPO, onsite, run_site, write_site

GOLD = [
    "我们/r 喜欢/v 北京/ns",
    "他/r 在/p 北京/ns 学习/v",
    "我们/r 在/p 上海/ns 工作/v",
    "他们/r 喜欢/v 学习/v",
    " ".join(["我们/r 喜欢/v 北京/ns"] * 8),  # a long line: its output is shortened
]
TABLE = {"我们": "r", "他": "r", "在": "p", "上海": "ns", "喜欢": "v", "北京": "ns"}
TABLE |= {"学习": "vn", "工作": "vn", "他们": "r"}
# ESC sequences and BEL in a tag (no whitespace: still one word/TAG token).
NASTY = {"北京": "ns\x1b[2J\x1b[31mX\x07"}


def _site(root: Path) -> Path:
    testset = root / "dev"
    testset.mkdir(parents=True)
    (testset / "gold.pos").write_text("\n".join(GOLD) + "\n", encoding="utf-8")
    command = [sys.executable, "-m", "tests.systems.pos_table"]
    systems = {
        "acme": {"command": command + [f"{w}={t}" for w, t in TABLE.items()]},
        "nasty": {"command": command + [f"{w}={t}" for w, t in (TABLE | NASTY).items()]},
    }
    for cfg in systems.values():
        cfg["workdir"] = str(REPO)
    return write_site(
        root / "site.toml",
        testset,
        systems,
        task="pos",
        task_keys={"kind": "pos"},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )


def _report_scores(run_dir: Path) -> dict[str, float]:
    done = onsite("report", str(run_dir), "--json")
    assert done.returncode == 0, done.stderr
    return {row["system"]: row["score"] for row in json.loads(done.stdout)}


def test_output_text_is_one_short_clean_line() -> None:
    assert output_text({"text": "a\x1b[2Jb\rc\x07d"}) == "ab c d"
    assert output_text({"tags": ["O", "B-LOC"]}) == '{"tags":["O","B-LOC"]}'
    assert output_text(None) == "-"
    long = output_text({"text": "字" * 100})
    assert len(long) == 60 and long.endswith("\u2026")


def test_check_shows_outputs_and_the_quality_the_report_gives(tmp_path: Path) -> None:
    site = _site(tmp_path)
    done = onsite("check", str(site), "--items", "5", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    # Every item's output is shown (the first line whole, the long one shortened) ...
    assert "我们/r 喜欢/v 北京/ns" in out and "他/r 在/p 北京/ns 学习/vn" in out
    assert "\u2026" in out
    # ... and nothing a participant wrote reaches the terminal as a control character.
    for ch in ("\x1b", "\r", "\x07"):
        assert ch not in out
    assert "北京/nsX" in out  # the nasty tag, made printable
    assert "Quality so far" in out
    # The run of the same items: `onsite report` gives the same figures.
    run_dir, results = run_site(site)
    assert all(r.failed is None for r in results)
    scores = _report_scores(run_dir)
    for system, score in scores.items():
        line = next(x for x in out.splitlines() if f" {system} " in x and "F " in x)
        assert f"F {100 * score:.1f}%" in line, (line, score)
    # And the numbers themselves, not only as printed.
    loaded = load_site(site)
    for result in dry_run(loaded, 5):
        found = dry_run_quality(loaded, result)
        assert found is not None and found[0] == "F"
        assert found[1] == scores[result.job.system]


def test_quality_of_a_partial_dry_run_is_that_of_a_partial_run(tmp_path: Path) -> None:
    site = _site(tmp_path)
    loaded = load_site(site)
    dry = {r.job.system: dry_run_quality(loaded, r) for r in dry_run(loaded, 2)}
    run_dir, _ = run_site(site, limit=2)
    scores = _report_scores(run_dir)
    assert {s: q[1] for s, q in dry.items() if q is not None} == scores
    # acme tags item 2's 学习 as vn: 6 of 7 words right in items 1-2.
    assert scores["acme"] == pytest.approx(6 / 7)


def test_no_quality_before_any_item_completed(tmp_path: Path) -> None:
    loaded = load_site(_site(tmp_path))
    [result, *_] = dry_run(loaded, 1)
    assert dry_run_quality(loaded, result) is not None
    assert dry_run_quality(loaded, replace(result, counted=())) is None
