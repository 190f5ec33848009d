"""onsite's ROUGE against ROUGE-1.5.5 itself: the Perl script's output, kept as fixtures.

ROUGE-1.5.5 is no Debian or PyPI package; tests/data/rouge155/README.md says how
its output was made (the public script, XML::DOM from libxml-dom-perl, the WordNet
exceptions database rebuilt with DB_File) and the exact command.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness.cli.main import main
from harness.kinds import task_kind
from harness.kinds.summarization import SummarizationOptions
from scoring.rouge import cut_to_limit, read_summaries, rouge_document, score_rouge_files

DATA = Path(__file__).parent / "data" / "rouge155"
HYP, REF = DATA / "hyp.jsonl", DATA / "ref.jsonl"
METRICS = {"ROUGE-1": "rouge1", "ROUGE-2": "rouge2", "ROUGE-L": "rougeL"}
EVAL = re.compile(r"^onsite (ROUGE-[12L]) Eval (\S+)\.onsite R:(\S+) P:(\S+) F:(\S+)$")
AVERAGE = re.compile(r"^onsite (ROUGE-[12L]) Average_([RPF]): (\S+) ")


def rouge_155(name: str) -> tuple[dict[tuple[str, str], tuple[str, str, str]], dict[str, float]]:
    """ROUGE-1.5.5's per-document R, P, F (as printed) and its system averages."""
    per_doc: dict[tuple[str, str], tuple[str, str, str]] = {}
    averages: dict[str, float] = {}
    for line in (DATA / f"rouge-{name}.out").read_text(encoding="utf-8").splitlines():
        if m := EVAL.match(line):
            per_doc[(METRICS[m[1]], m[2])] = (m[3], m[4], m[5])
        elif m := AVERAGE.match(line):
            key = {"R": "recall", "P": "precision", "F": "f"}[m[2]]
            averages[f"{METRICS[m[1]]}_{key}"] = float(m[3])
    assert len(per_doc) == 3 * 40 and len(averages) == 9
    return per_doc, averages


def as_printed(recall: float, precision: float) -> tuple[str, str, str]:
    """R, P and F as ROUGE-1.5.5 prints them: F from the R and P rounded to 5 decimals."""
    r, p = f"{recall:7.5f}", f"{precision:7.5f}"
    rr, pp = float(r), float(p)
    f = 0.0 if rr == 0 or pp == 0 else pp * rr / (0.5 * pp + 0.5 * rr)
    return r, p, f"{f:7.5f}"


@pytest.mark.parametrize(
    ("name", "limit"), [("nolimit", None), ("l12", 12), ("l0", 0)], ids=["no-limit", "l12", "l0"]
)
def test_every_document_as_rouge_155_prints_it(name: str, limit: int | None) -> None:
    expected, averages = rouge_155(name)
    ours = score_rouge_files(HYP, [REF], length_limit=limit, length_unit="word")
    got = {
        (m, d["document"]): as_printed(d[f"{m}_recall"], d[f"{m}_precision"])
        for d in ours["per_document"]
        for m in METRICS.values()
    }
    differ = {k: (got[k], v) for k, v in expected.items() if got[k] != v}
    assert not differ
    # ROUGE's system figure is the mean of 1,000 bootstrap resamples of the rounded
    # per-document values; onsite's the exact mean: they agree to about 1e-3.
    for key, value in averages.items():
        assert ours[key] == pytest.approx(value, abs=2e-3)


def test_length_limit_cuts_the_references_too() -> None:
    cut, _ = rouge_155("l12")
    whole, _ = rouge_155("nolimit")
    # d10: a 13-word summary against a 14-word reference; at 12 both keep "one".."twelve".
    assert whole[("rouge1", "d10")] == ("0.92857", "1.00000", "0.96296")
    assert cut[("rouge1", "d10")] == ("1.00000", "1.00000", "1.00000")
    assert cut_to_limit("one two three\nfour five", 4) == "one two three\nfour"
    # Perl's split(/\s+/) gives a leading empty field: a line starting with a blank
    # has one word more for the limit (ROUGE-1.5.5's count, kept).
    assert cut_to_limit("  a b c", 3) == " a b"
    assert cut_to_limit("a b", 0) == "a b"


def test_hyphens_and_line_separators_as_rouge_155() -> None:
    rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
    expected, _ = rouge_155("nolimit")
    assert expected[("rouge1", "d01")] == expected[("rouge2", "d01")] == ("1.00000",) * 3
    s = rouge_document("a well-known fact", ["a well known fact"])
    assert all(v.recall == v.precision == 1.0 for v in s.values())
    google = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"])
    assert all(
        v.fmeasure == 1.0 for v in google.score("a well known fact", "a well-known fact").values()
    )
    # U+2028 ends no sentence in ROUGE-1.5.5 (Perl reads lines at "\n"): one LCS, R 0.5.
    assert expected[("rougeL", "d02")] == ("0.50000",) * 3
    assert rouge_document("c d\u2028a b", ["a b c d"])["rougeL"].recall == 0.5


def test_summarization_task_truncating_at_12_words_is_rouge_l_12(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    summaries = {d: t[0] for d, t in read_summaries(HYP).items()}
    for doc in summaries:
        (tmp_path / "docs" / f"{doc}.txt").write_text("a document", encoding="utf-8")
    (tmp_path / "ref1.jsonl").write_bytes(REF.read_bytes())
    (tmp_path / "lang").write_text("en\n", encoding="utf-8")
    kind = task_kind("summarization")
    task = SummarizationOptions(length_limit=12, length_unit="word", over_limit="truncate")
    testset = kind.load(tmp_path, task)
    scores = kind.score(testset, task, {d: {"text": t} for d, t in summaries.items()}, {})
    expected, _ = rouge_155("l12")
    got = {
        (m, d["document"]): as_printed(d[f"{m}_recall"], d[f"{m}_precision"])
        for d in scores["per_document"]
        for m in METRICS.values()
    }
    assert got == expected


def test_cli_length_limit_0_is_no_limit(capsys: pytest.CaptureFixture[str]) -> None:
    def cli(*extra: str) -> dict[str, float]:
        assert main(["score", "rouge", "--hyp", str(HYP), "--ref", str(REF), *extra, "--json"]) == 0
        return dict(json.loads(capsys.readouterr().out))

    whole, zero = cli(), cli("--length-limit", "0", "--length-unit", "word")
    assert zero["rouge2_f"] == whole["rouge2_f"] > 0.2  # -l 0: no limit, not every score 0
    cut = cli("--length-limit", "12", "--length-unit", "word")
    _, averages = rouge_155("l12")
    assert cut["rouge2_f"] == pytest.approx(averages["rouge2_f"], abs=2e-3)
    assert main(["score", "rouge", "--hyp", str(HYP), "--ref", str(REF), "--length-limit", "-1"])
    assert "--length-limit -1: give 0 (no limit) or more" in capsys.readouterr().err
