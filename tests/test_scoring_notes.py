"""A live job whose figure the reference tool would print differently says so in the report.

The NER kind scores IOBES chunks; conlleval.pl does not know S- and merges `S-X S-X`.
A run whose tags hit that gets a note on the leaderboard (terminal, --json, HTML)
naming conlleval.pl's figure and how to get it, and that figure is what `onsite score
ner --run --conlleval` gives. A run that does not hit it gets no note. The same for
word segmentation, where the SIGHAN script counts an extra word before a leading U+3000."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.helpers import FAKE_SERVE, onsite, run_site, write_site

GOLD = "张三 S-PER\n李四 S-PER\n在 O\n北京 B-LOC\n工作 E-LOC\n\n王五 B-PER\n好 O\n"


def _live_run(tmp: Path, kind: str, gold: tuple[str, str], plan: dict[str, Any]) -> Path:
    """A finished run of one `kind` task: its test set the one file ``gold`` (name, text),
    the fake system answering each input as ``plan`` says."""
    root = tmp / "set"
    root.mkdir()
    (root / gold[0]).write_text(gold[1], encoding="utf-8")
    site = write_site(
        tmp / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": {"FAKE_PLAN": json.dumps(plan)}}},
        task=kind,
        task_keys={"kind": kind},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    return run_dir


def _ner_run(tmp: Path, merged: bool) -> Path:
    # Two one-word names (gold) against one two-word name: two chunks apart for onsite,
    # one and the same for conlleval.pl.
    first = (
        ["B-PER", "E-PER", "O", "B-LOC", "E-LOC"] if merged else ["O", "O", "O", "B-LOC", "I-LOC"]
    )
    plan = {
        "张三 李四 在 北京 工作": {"output": {"tags": first}},
        "王五 好": {"output": {"tags": ["B-PER", "O"]}},
    }
    gold = GOLD if merged else GOLD.replace("S-PER", "O").replace("E-LOC", "I-LOC")
    return _live_run(tmp, "ner", ("gold.conll", gold), plan)


def _report_json(run_dir: Path) -> dict[str, Any]:
    out = onsite("report", str(run_dir), "--json", "--no-intervals")
    assert out.returncode == 0, out.stderr
    [row] = json.loads(out.stdout)
    return dict(row)


def test_a_job_conlleval_would_score_otherwise_carries_the_note_everywhere(
    tmp_path: Path,
) -> None:
    run_dir = _ner_run(tmp_path, merged=True)
    row = _report_json(run_dir)
    assert round(row["score"], 4) == 0.5714
    [note] = row["notes"]
    assert "conlleval.pl gives F1 1.0000, onsite 0.5714" in note
    assert "sentence" in note and "--conlleval" in note

    table = onsite("report", str(run_dir), "--no-intervals")
    assert table.returncode == 0, table.stderr
    assert "note (ner, fake): " in table.stdout and "conlleval.pl gives F1 1.0000" in table.stdout

    html = tmp_path / "report.html"
    done = onsite("report", str(run_dir), "--html", str(html), "--no-intervals")
    assert done.returncode == 0, done.stderr
    text = html.read_text(encoding="utf-8")
    assert "Scoring notes" in text and "conlleval.pl gives F1 1.0000" in text

    # The figure the note names is conlleval.pl's on the job, as the note says to get it.
    scored = onsite("score", "ner", "--run", str(run_dir), "--conlleval", "--json")
    assert scored.returncode == 0, scored.stderr
    assert json.loads(scored.stdout)["f1"] == 1.0
    assert json.loads(scored.stdout)["chunking"] == "conlleval"


def test_a_job_conlleval_scores_alike_has_no_note(tmp_path: Path) -> None:
    run_dir = _ner_run(tmp_path, merged=False)
    row = _report_json(run_dir)
    assert row["notes"] == []
    table = onsite("report", str(run_dir), "--no-intervals")
    assert "note (" not in table.stdout


def test_a_cws_job_the_sighan_script_would_count_otherwise_says_where(tmp_path: Path) -> None:
    """A gold line and an answer starting with U+3000: the script counts an extra empty
    word in each; the live figure does not, and the leaderboard says so."""
    plan = {
        "我们喜欢北京": {"output": {"text": "\u3000我们 喜欢 北京"}},
        "他在学习": {"output": {"text": "他 在 学习"}},
    }
    gold = ("gold.txt", "\u3000我们 喜欢 北京\n他 在 学习\n")
    run_dir = _live_run(tmp_path, "cws", gold, plan)
    row = _report_json(run_dir)
    assert row["score"] == 1.0
    gold_note, answer_note = row["notes"]
    assert gold_note.endswith(
        "gold.txt:1: starts with U+3000 (ideographic space); the script would count an extra "
        "empty word here (--sighan-quirks reproduces that)"
    )
    assert answer_note.startswith("1 answer(s) start with U+3000 (ideographic space): '1';")
    # The answers' side, as the note says to get it: an extra empty word in the test file.
    quirks = onsite("score", "cws", "--run", str(run_dir), "--sighan-quirks", "--json")
    assert quirks.returncode == 0, quirks.stderr
    assert json.loads(quirks.stdout)["test_words"] == 7
    plain = onsite("score", "cws", "--run", str(run_dir), "--json")
    assert json.loads(plain.stdout)["test_words"] == 6
