"""A first topic judged only -1: trec_eval stops on it; onsite scores it 0 and warns.

trec_eval (form_res_rels.c) asks for room for max_rel + 1 = 0 relevance levels;
on the first topic nothing was allocated yet, so it gets NULL, takes it for an
error, and exits 4 with "Can't calculate measure 'num_ret'". pytrec-eval-terrier
runs the same C code but ignores the error: that topic comes back all zeros,
even num_ret, while the same topic scored later has its real num_ret. The C code
keeps its buffers for the life of the process, so it shows only in a fresh one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from scoring.ir import score_ir

RUN = {"1": {"d1": 1.0, "d2": 0.5}, "2": {"d3": 1.0, "d4": 0.5}}


def fresh_pytrec_eval(qrels: dict[str, dict[str, int]]) -> dict[str, dict[str, float]]:
    """pytrec_eval's figures from a process of its own (trec_eval's first topic is its first)."""
    code = (
        "import json, sys, pytrec_eval\n"
        "q, r = json.load(sys.stdin)\n"
        "e = pytrec_eval.RelevanceEvaluator(q, {'num_ret', 'map', 'P_10'})\n"
        "print(json.dumps(e.evaluate(r)))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps([qrels, RUN]),
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(proc.stdout))


def test_first_topic_with_only_negative_judgements_is_named() -> None:
    pytest.importorskip("pytrec_eval")
    qrels = {"1": {"d1": -1, "d2": -1}, "2": {"d3": 1}}
    theirs = fresh_pytrec_eval(qrels)
    # The error trec_eval stops at shows in pytrec_eval as a topic with nothing retrieved.
    assert theirs["1"]["num_ret"] == 0.0 and theirs["2"]["num_ret"] == 2.0
    report = score_ir(qrels, RUN)
    scores = {s.topic: s for s in report.per_topic}
    assert scores["1"].ap == theirs["1"]["map"] == 0.0
    assert scores["2"].ap == theirs["2"]["map"] == 1.0
    assert scores["1"].num_ret == 2  # what trec_eval gives the topic when it is not first
    [warning] = report.warnings
    assert warning.startswith("topic 1: every judgement is negative")
    assert "Can't calculate measure 'num_ret'" in warning


def test_a_later_topic_with_only_negative_judgements_is_fine() -> None:
    pytest.importorskip("pytrec_eval")
    qrels = {"1": {"d1": 1}, "2": {"d3": -1, "d4": -1}}
    theirs = fresh_pytrec_eval(qrels)
    assert theirs["2"]["num_ret"] == 2.0  # scored normally: no error
    report = score_ir(qrels, RUN)
    assert report.warnings == ()
    assert report.map == pytest.approx((theirs["1"]["map"] + theirs["2"]["map"]) / 2)
    # trec_eval's order is strcmp's: "10" comes before "9".
    late = score_ir({"9": {"d1": 1}, "10": {"d2": -1}}, {"9": {"d1": 1.0}, "10": {"d2": 1.0}})
    assert late.warnings and late.warnings[0].startswith("topic 10:")


def test_cli_shows_the_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qrels = tmp_path / "qrels"
    qrels.write_text("1 0 d1 -1\n1 0 d2 -1\n2 0 d3 1\n")
    run = tmp_path / "run"
    run.write_text("1 Q0 d1 1 1.0 r\n1 Q0 d2 2 0.5 r\n2 Q0 d3 1 1.0 r\n")
    assert main(["score", "ir", "--qrels", str(qrels), "--run", str(run), "--json"]) == 0
    out = capsys.readouterr().out
    assert "topic 1: every judgement is negative" in out
