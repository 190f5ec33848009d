"""Every `onsite score` family prints real tables without --json."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli.main import main
from harness.cli.score_tables import result_tables


def test_result_shapes_become_tables() -> None:
    result = {
        "unit": "word",
        "wer": 0.25,
        "systems": [{"system": "A", "unit": "word", "score": 1.0, "judges": {"J1": {}}}],
        "per_topic": {"401": {"ap": 0.5, "p10": 0.1}, "402": {"ap": 1.0, "p10": 0.2}},
        "per_tag": {"NN": 0.9, "VV": 0.8},
        "deep": {"a": {"b": {"c": 1}}},
        "empty": [],
    }
    tables = {name: (columns, rows) for name, columns, rows in result_tables("x", result)}
    assert tables["x scores"] == (["figure", "value"], [["unit", "word"], ["wer", "0.25"]])
    # A setting shown above is not repeated per row; nested breakdowns are left to --json.
    assert tables["systems"] == (["system", "score"], [["A", "1"]])
    assert tables["per_topic"] == (
        ["topic", "ap", "p10"],
        [["401", "0.5", "0.1"], ["402", "1", "0.2"]],
    )
    assert tables["per_tag"] == (["figure", "value"], [["NN", "0.9"], ["VV", "0.8"]])
    assert "deep" not in tables and "empty" not in tables


def test_lists_of_names_fit_one_cell() -> None:
    result = {"missing": ["d2", "d7"], "many": list(range(25)), "none": []}
    (figures,) = result_tables("x", result)
    assert figures[2] == [
        ["missing", "d2 d7"],
        ["many", " ".join(map(str, range(20))) + " ... (5 more)"],
    ]


def test_numbers_equal_to_the_mean_are_still_shown() -> None:
    result = {"recall": 0.5, "per_document": [{"document": "d1", "recall": 0.5}]}
    tables = {name: columns for name, columns, _ in result_tables("x", result)}
    assert tables["per_document"] == ["document", "recall"]


def test_mt_human_prints_its_systems(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sheet = tmp_path / "sheet.csv"
    sheet.write_text("judge,system,doc_id,seg_id,adequacy,fluency\nJ1,A,d1,1,4,3\nJ1,B,d1,1,2,3\n")
    assert main(["score", "mt-human", "--hyp", str(sheet)]) == 0
    out = capsys.readouterr().out
    assert "adequacy" in out and "fluency" in out
    line_a = next(line for line in out.splitlines() if line.split()[:1] == ["A"])
    assert line_a.split()[1:3] == ["4", "3"]


def test_summarization_prints_both_tasks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ratings = tmp_path / "ratings.tsv"
    ratings.write_text(
        "summary\tsysA\td1\tE1\t4\nsummary\tsysB\td1\tE1\t3\n"
        "keywords\tsysA\td1\tE1\t2\nkeywords\tsysB\td1\tE1\t1\n"
    )
    assert main(["score", "summarization", "--hyp", str(ratings)]) == 0
    out = capsys.readouterr().out
    assert "summary" in out and "keywords" in out
    rows = [
        line.split()
        for line in out.splitlines()
        if line.strip().startswith("sysA") or line.strip().startswith("sysB")
    ]
    assert ["sysA", "summary", "4"] == rows[0][:3] and len(rows) == 4


def test_ir_prints_topics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels, run = tmp_path / "qrels", tmp_path / "run"
    qrels.write_text("1 0 d1 1\n1 0 d2 0\n2 0 d3 1\n")
    run.write_text("1 Q0 d1 1 0.9 r\n1 Q0 d2 2 0.5 r\n2 Q0 d3 1 0.3 r\n")
    assert main(["score", "ir", "--qrels", str(qrels), "--run", str(run)]) == 0
    out = capsys.readouterr().out
    assert "per_topic" in out and "num_rel_ret" in out
