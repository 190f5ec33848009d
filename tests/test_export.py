"""`onsite export`: run outputs as sclite trn and Kaldi text, re-scored to the live number."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.helpers import FAKE_SERVE, make_testset, write_site
from tests.test_cli import onsite


@pytest.fixture
def asr_run(tmp_path: Path, plan_env) -> Path:
    testset = make_testset(
        tmp_path / "set",
        [("u1", 1600, "hello world"), ("u2", 3200, "good morning"), ("u3", 4800, "bye")],
    )
    # u3 crashes the system: the live scoring counts it as an empty hypothesis.
    env = plan_env(
        {1600: {"text": "hello world"}, 3200: {"text": "good\nevening"}, 4800: {"do": "crash"}}
    )
    site = write_site(
        tmp_path / "site.toml", testset, {"fake": {"command": FAKE_SERVE, "env": env}}
    )
    run = onsite("run", str(site))
    assert "Leaderboard" in run.stdout, run.stdout + run.stderr
    return tmp_path / "runs" / "t"


def test_export_trn_and_kaldi_rescore_to_the_live_number(asr_run: Path, tmp_path: Path) -> None:
    [row] = json.loads(onsite("report", str(asr_run), "--json").stdout)
    live = row["wer"]
    assert live == pytest.approx(2 / 5)
    for fmt in ("trn", "kaldi"):
        files = {}
        for which in ("hyp", "ref"):
            path = tmp_path / f"{which}.{fmt}"
            extra = ["--references"] if which == "ref" else []
            out = onsite(
                "export", str(asr_run), "--task", "asr", "--system", "fake",
                "--format", fmt, "-o", str(path), *extra,
            )  # fmt: skip
            assert out.returncode == 0, out.stderr
            files[which] = path
        hyp_lines = files["hyp"].read_text(encoding="utf-8").splitlines()
        if fmt == "trn":
            # sclite's rule: every line ends with its id in parentheses; ids unique.
            ids = [re.fullmatch(r".*\((\S+)\)", line).group(1) for line in hyp_lines]  # type: ignore[union-attr]
            assert ids == ["u1", "u2", "u3"]
            assert hyp_lines[1] == "good evening (u2)", "a newline in an output stays on one line"
            assert hyp_lines[2] == " (u3)", "an unanswered item is an empty hypothesis"
        else:
            assert hyp_lines == ["u1 hello world", "u2 good evening", "u3"]
        score = onsite(
            "score", "asr", "--ref", str(files["ref"]), "--hyp", str(files["hyp"]), "--json"
        )
        assert score.returncode == 0, score.stderr
        assert json.loads(score.stdout)["wer"] == pytest.approx(live)


def test_export_jsonl_keeps_verdicts_and_lists_every_item(asr_run: Path) -> None:
    out = onsite("export", str(asr_run), "--task", "asr", "--system", "fake", "--format", "jsonl")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["u1", "u2", "u3"]
    assert lines[0]["verdict"] == "ok" and lines[0]["output"] == {"text": "hello world"}
    assert lines[2]["verdict"] == "crashed" and not lines[2]["output"]


def test_export_refuses_what_does_not_fit(asr_run: Path) -> None:
    out = onsite("export", str(asr_run), "--task", "asr", "--system", "fake", "--format", "conll")
    assert out.returncode == 2
    assert "format 'conll' does not fit task 'asr' (kind asr)" in out.stderr
    assert "trn, ctm, kaldi, jsonl" in out.stderr
    out = onsite("export", str(asr_run), "--task", "nope", "--system", "fake", "--format", "trn")
    assert out.returncode == 2 and "no task 'nope'" in out.stderr and "asr" in out.stderr
    out = onsite("export", str(asr_run), "--task", "asr", "--system", "x", "--format", "trn")
    assert out.returncode == 2 and "no system 'x'" in out.stderr
