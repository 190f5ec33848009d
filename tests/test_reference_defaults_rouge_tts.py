"""Defaults that follow the reference: ROUGE-1.5.5 (its real output, tests/data/rouge155/)
and the HTRDP survey's pair-comparison table (Table 56).

* `onsite score rouge --length-limit N` counts words for English, as ``-l N``;
* the `summarization` kind truncates by default, so its live figures are ``-l N``'s;
* ``--average rouge155`` gives ROUGE-1.5.5's own system figures (its seeded bootstrap),
  and the default result says how the exact mean differs from them;
* pair comparison takes one sample per listener, as Table 56; MOS intervals as computed.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from harness import leaderboard, load_site
from harness.cli.main import main
from harness.kinds import task_kind
from harness.kinds.summarization import SummarizationOptions
from scoring.rouge import read_summaries, rouge155_bootstrap, rouge155_printed
from scoring.tts import PairJudgement, pair_comparison, score_mos
from tests.helpers import REPO, run_site, write_site
from tests.test_rouge_155 import HYP, METRICS, REF, as_printed, rouge_155


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    """`onsite score ... --json` in process, its JSON."""
    assert main(["score", *args, "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def printed(per_document: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[str, str, str]]:
    return {
        (m, d["document"]): as_printed(d[f"{m}_recall"], d[f"{m}_precision"])
        for d in per_document
        for m in METRICS.values()
    }


# --------------------------------------------------------------------------- ROUGE


def test_length_limit_counts_words_for_english_as_rouge_l(
    capsys: pytest.CaptureFixture[str],
) -> None:
    expected, _ = rouge_155("l12")
    got = cli(capsys, "rouge", "--hyp", str(HYP), "--ref", str(REF), "--length-limit", "12")
    assert got["length_unit"] == "word"
    got = cli(
        capsys, "rouge", "--hyp", str(HYP), "--ref", str(REF), "--length-limit", "12", "--details"
    )
    assert printed(got["per_document"]) == expected
    # Chinese: characters, said in the result (ROUGE-1.5.5 has no unit for it).
    zh = cli(
        capsys,
        "rouge",
        "--hyp",
        str(HYP),
        "--ref",
        str(REF),
        "--length-limit",
        "12",
        "--lang",
        "zh",
    )
    assert zh["length_unit"] == "char"
    assert any("counts non-space characters" in w for w in zh["warnings"])


def test_help_says_which_unit(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["score", "rouge", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "word (ROUGE's -l) by default for --lang en" in text
    assert "char (non-space characters) for --lang zh" in text


def test_summarization_kind_defaults_give_rouge_l12(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    summaries = {d: t[0] for d, t in read_summaries(HYP).items()}
    for doc in summaries:
        (tmp_path / "docs" / f"{doc}.txt").write_text("a document", encoding="utf-8")
    (tmp_path / "ref1.jsonl").write_bytes(REF.read_bytes())
    (tmp_path / "lang").write_text("en\n", encoding="utf-8")
    kind = task_kind("summarization")
    # Only the limit: the unit (word, for en) and over_limit (truncate) are the defaults.
    task = SummarizationOptions(length_limit=12)
    testset = kind.load(tmp_path, task)
    assert testset.items[0].fields["length_unit"] == "word"
    long = next(i for i in testset.items if len(summaries[i.id].split()) > 12)
    assert (
        kind.check_item is not None and kind.check_item(long, {"text": summaries[long.id]}) is None
    )
    scores = kind.score(testset, task, {d: {"text": t} for d, t in summaries.items()}, {})
    expected, _ = rouge_155("l12")
    assert printed(scores["per_document"]) == expected
    assert long.id in scores["truncated"]


@pytest.mark.parametrize("name", ["nolimit", "l12", "l0"])
def test_average_rouge155_is_rouge_155s_system_figure(
    capsys: pytest.CaptureFixture[str], name: str
) -> None:
    _, averages = rouge_155(name)
    limit = {"nolimit": [], "l12": ["--length-limit", "12"], "l0": ["--length-limit", "0"]}[name]
    args = ["rouge", "--hyp", str(HYP), "--ref", str(REF), *limit]
    ours = cli(capsys, *args, "--average", "rouge155")
    assert {k: ours[k] for k in averages} == averages  # all nine, to the printed digit
    exact = cli(capsys, *args)
    assert exact["average"] == "exact"
    differ = [abs(exact[k] - v) for k, v in averages.items()]
    assert 1e-5 < max(differ) < 2e-3
    [warning] = exact["warnings"]
    assert "exact means" in warning and "bootstrap" in warning
    assert "3rd to 5th decimal" in warning and "--average rouge155" in warning


def test_rouge155_bootstrap_depends_on_the_evaluation_ids() -> None:
    # The estimate is deterministic (srand(i) per resample) but the same values under
    # other ids are drawn in another order: another figure, within the bootstrap noise.
    values = [rouge155_printed(r, 1.0)[0] for r in (0.1, 0.9, 0.35, 0.6, 0.2, 0.75, 0.5)]
    a = rouge155_bootstrap({f"d{i}.onsite": v for i, v in enumerate(values)})
    b = rouge155_bootstrap({f"d{6 - i}.onsite": v for i, v in enumerate(values)})
    assert a == rouge155_bootstrap({f"d{i}.onsite": v for i, v in enumerate(values)})
    exact = math.fsum(values) / len(values)
    assert a != b and abs(a - exact) < 0.01 and abs(b - exact) < 0.01
    assert rouge155_printed(0.123456, 0.5) == (0.12346, 0.5, 0.19802)


# --------------------------------------------------------------------------- TTS

# Table 56, System 1 over System 3: mean 1.61328, sd 0.25538, 95% [1.4772, 1.74936].
# 16 listeners rate the pair on 16 paragraphs each (1 or 2), half of them heard as
# B then A (the score negated); listener sums of 22..31 reproduce the row.
TABLE_56_SUMS = (22, 22, 22, 22, 22, 22, 22, 22, 26, 29, 30, 30, 30, 30, 31, 31)


def table_56_judgements() -> list[PairJudgement]:
    out = []
    for n, total in enumerate(TABLE_56_SUMS):
        scores = [2] * (total - 16) + [1] * (32 - total)
        for s, score in enumerate(scores):
            if s % 2:
                out.append(PairJudgement(f"L{n:02d}", f"p{s:02d}", "System 3", "System 1", -score))
            else:
                out.append(PairJudgement(f"L{n:02d}", f"p{s:02d}", "System 1", "System 3", score))
    return out


def test_pair_default_is_per_listener_as_table_56() -> None:
    ab = next(p for p in pair_comparison(table_56_judgements()) if p.system_a == "System 1")
    assert (ab.unit, ab.n, ab.ratings) == ("listener", 16, 256)
    shown = tuple(round(v, 5) for v in (ab.mean, ab.sd, ab.ci_low, ab.ci_high))  # type: ignore[arg-type]
    assert shown == (1.61328, 0.25538, 1.4772, 1.74936)
    # One sample per rating: n 256 and an sd no integer ratings can avoid at this mean.
    per_rating = pair_comparison(table_56_judgements(), unit="rating")[0]
    assert per_rating.n == 256 and per_rating.mean == ab.mean
    assert per_rating.sd is not None and per_rating.sd > 0.48


def test_mos_interval_as_computed_unless_clipped() -> None:
    few = [("S", 1.0), ("S", 1.0), ("S", 3.0)]
    raw = score_mos(few)["S"]
    half = 4.302652729911275 * (2 / math.sqrt(3)) / math.sqrt(3)
    assert raw.ci_low == pytest.approx(5 / 3 - half) and raw.ci_low < 1  # type: ignore[operator]
    assert score_mos(few, clip=True)["S"].ci_low == 1


def test_live_run_with_default_options_is_rouge_l12(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A live summarization task with only `length_limit = 12`: a system answers the 40
    # fixture summaries; the leaderboard's per-document figures are ROUGE-1.5.5's -l 12.
    root = tmp_path / "set"
    (root / "docs").mkdir(parents=True)
    for doc in read_summaries(HYP):
        (root / "docs" / f"{doc}.txt").write_text(f"{doc} is the document\n", encoding="utf-8")
    (root / "ref1.jsonl").write_bytes(REF.read_bytes())
    (root / "lang").write_text("en\n", encoding="utf-8")
    system = [sys.executable, str(REPO / "tests" / "systems" / "fixture_summarizer.py"), str(HYP)]
    site_path = write_site(
        tmp_path / "site.toml",
        root,
        {"fixture": {"command": system}},
        task="summ",
        task_keys={"kind": "summarization", "length_limit": 12},
        budget={"seconds": 10.0, "hang_seconds": 20.0},
    )
    run_dir, _ = run_site(site_path)
    [row] = leaderboard(load_site(site_path).run_dir)
    expected, averages = rouge_155("l12")
    assert row.invalid_outputs == 0 and len(row.scores["truncated"]) > 0
    assert printed(row.scores["per_document"]) == expected
    run = ["rouge", "--run", str(run_dir), "--task", "summ"]
    assert {
        k: v for k, v in cli(capsys, *run, "--average", "rouge155").items() if k in averages
    } == (averages)
    offline = cli(capsys, *run)
    assert offline["rouge2_f"] == pytest.approx(row.score)
    assert "--average rouge155" in offline["warnings"][0]
