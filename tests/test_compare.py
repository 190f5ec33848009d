"""`onsite compare` and scoring/resampling.py against sacrebleu's paired tests, on real runs.

sacrebleu (``sacrebleu REF -i A B C -m bleu --paired-bs`` / ``--paired-ar``) draws its
resamples with ``numpy.random.default_rng(12345)``, and onsite draws the same ones,
so with the same seed and sample count the p-values are those of sacrebleu. They may
differ only where a resampled difference ties the observed one to the last bits
(sacrebleu sums float32 counts and scales BLEU by 100): one sample's count, a p-value
difference of 1/(samples + 1), is the tolerance. With another seed the p-values
are two independent Monte-Carlo estimates of the same p: they agree within four
standard errors of their difference, 4 * sqrt(2 p (1 - p) / samples).
"""

from __future__ import annotations

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness import leaderboard, task_kind
from harness.cli.main import main
from harness.export import read_run
from harness.kinds.registry import task_kinds
from scoring.resampling import Additive, compare, resampled_scores
from tests.helpers import (
    onsite,
    three_asr_systems_run,
)
from tests.kind_examples import run_example

WORDS = (
    "the a cat dog sat on mat is was big small red green house tree river quickly "
    "slowly runs jumps over under"
).split()

SYSTEM_KEYS = {"system", "score", "ci_low", "ci_high", "rank_low", "rank_high"}
PAIR_KEYS = {"a", "b", "test", "statistic", "p", "better", "tool"}
TOP_KEYS = {"task", "metric", "higher_is_better", "items", "seed", "samples", "systems", "pairs"}
TOP_KEYS |= {"notes"}  # where a reference tool would print another value


@pytest.fixture(scope="module")
def mt_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A reference and three systems, two close and one far, one segment a line."""
    tmp = tmp_path_factory.mktemp("mt")
    rng = random.Random(7)
    refs = [[rng.choice(WORDS) for _ in range(rng.randint(5, 20))] for _ in range(80)]

    def noisy(ref: list[str], p: float) -> str:
        out = [w if rng.random() > p else rng.choice(WORDS) for w in ref]
        return " ".join(out[:-1] if rng.random() < p else out)

    (tmp / "ref.txt").write_text("\n".join(" ".join(r) for r in refs) + "\n", "utf-8")
    hyps = []
    for name, p in (("A", 0.3), ("B", 0.33), ("C", 0.5)):
        path = tmp / f"{name}.txt"
        path.write_text("\n".join(noisy(r, p) for r in refs) + "\n", "utf-8")
        hyps.append(path)
    return tmp / "ref.txt", hyps


def sacrebleu_json(ref: Path, hyps: list[Path], *test: str) -> list[dict[str, Any]]:
    """sacrebleu's multi-system paired test, as JSON (the first system is the baseline)."""
    env = {k: v for k, v in os.environ.items() if k != "SACREBLEU_SEED"}
    proc = subprocess.run(
        [sys.executable, "-m", "sacrebleu", ref.name, "-i", *(h.name for h in hyps), "-m", "bleu",
         *test, "-f", "json"],
        capture_output=True, text=True, check=True, cwd=ref.parent, env=env,
    )  # fmt: skip
    return list(json.loads(proc.stdout))


def onsite_json(ref: Path, hyps: list[Path], *args: str) -> dict[str, Any]:
    proc = onsite(
        "compare", "mt", "--ref", str(ref), *(a for h in hyps for a in ("--hyp", h.name)),
        *args, "--json", cwd=ref.parent,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def _p_with_baseline(ours: dict[str, Any], test: str) -> dict[str, float]:
    base = ours["systems"][0]["system"]
    return {p["b"]: p["p"] for p in ours["pairs"] if p["a"] == base and p["test"] == test}


@pytest.mark.parametrize(
    ("ours_test", "theirs", "samples"),
    [("bootstrap", "--paired-bs", 1000), ("ar", "--paired-ar", 2000)],
)
def test_p_values_are_sacrebleus_with_its_seed(
    mt_files: tuple[Path, list[Path]], ours_test: str, theirs: str, samples: int
) -> None:
    ref, hyps = mt_files
    count = "--paired-bs-n" if ours_test == "bootstrap" else "--paired-ar-n"
    sacre = sacrebleu_json(ref, hyps, theirs, count, str(samples))
    ours = onsite_json(ref, hyps, "--test", ours_test, "--samples", str(samples), "--sacrebleu")
    assert ours["seed"] == 12345 and ours["samples"][ours_test] == samples
    theirs_p = {row["system"]: row["BLEU"]["p_value"] for row in sacre[1:]}
    ours_p = _p_with_baseline(ours, ours_test)
    assert set(theirs_p) == set(ours_p) == {"B.txt", "C.txt"}
    for name, p in theirs_p.items():
        assert abs(ours_p[name] - p) <= 1 / (samples + 1), (name, ours_p[name], p)
    # The scores are sacrebleu's BLEU (mteval-v13a equals sacrebleu's 13a with exp smoothing).
    by_name = {s["system"]: s for s in ours["systems"]}
    for row in sacre:
        name = row["system"].removeprefix("Baseline: ")
        assert by_name[name]["score"] * 100 == pytest.approx(row["BLEU"]["score"], rel=1e-9)
    # A close pair is not separated, a far one is: the verdicts and the tied ranks.
    assert ours_p["B.txt"] > 0.05 and ours_p["C.txt"] < 0.01
    assert [(s["rank_low"], s["rank_high"]) for s in ours["systems"]] == [(1, 2), (1, 2), (3, 3)]


@pytest.mark.parametrize(
    ("ours_test", "theirs", "count"),
    [("bootstrap", "--paired-bs", "--paired-bs-n"), ("ar", "--paired-ar", "--paired-ar-n")],
)
def test_identical_systems_are_never_significant(
    mt_files: tuple[Path, list[Path]], ours_test: str, theirs: str, count: str
) -> None:
    # sacrebleu counts only resampled differences larger than the observed one: for two
    # identical systems (observed 0, every resampled difference 0) p = 1 / (samples + 1),
    # "significant" at any alpha. onsite counts ties too (Noreen's test): p = 1.
    ref, hyps = mt_files
    copy = ref.parent / "A-copy.txt"  # beside the others: both tools run in that directory
    copy.write_bytes(hyps[0].read_bytes())
    samples = 200
    sacre = sacrebleu_json(ref, [hyps[0], copy], theirs, count, str(samples))
    assert sacre[1]["BLEU"]["p_value"] == pytest.approx(1 / (samples + 1))
    for extra, expected in (((), 1.0), (("--sacrebleu",), 1 / (samples + 1))):
        ours = onsite_json(ref, [hyps[0], copy], "--test", ours_test, "--samples", str(samples),
                           *extra)  # fmt: skip
        [pair] = ours["pairs"]
        assert pair["p"] == pytest.approx(expected) and pair["better"] is None, extra
        assert [(s["rank_low"], s["rank_high"]) for s in ours["systems"]] == [(1, 2), (1, 2)]


def test_bootstrap_intervals_contain_sacrebleus_score(mt_files: tuple[Path, list[Path]]) -> None:
    ref, hyps = mt_files
    sacre = sacrebleu_json(ref, hyps, "--paired-bs")
    ours = onsite_json(ref, hyps)
    assert set(ours) == TOP_KEYS
    for row, mine in zip(sacre, ours["systems"], strict=True):
        bleu = row["BLEU"]
        assert mine["ci_low"] <= bleu["score"] / 100 <= mine["ci_high"]
        # sacrebleu prints the same percentile interval as its half-width around the mean.
        assert (mine["ci_high"] - mine["ci_low"]) / 2 * 100 == pytest.approx(bleu["ci"], rel=1e-6)


def test_another_seed_agrees_within_the_monte_carlo_error(
    mt_files: tuple[Path, list[Path]],
) -> None:
    ref, hyps = mt_files
    samples = 1000
    sacre = sacrebleu_json(ref, hyps, "--paired-bs")
    ours = _p_with_baseline(onsite_json(ref, hyps, "--seed", "2004"), "bootstrap")
    for row in sacre[1:]:
        p = row["BLEU"]["p_value"]
        tolerance = 4 * math.sqrt(2 * max(p * (1 - p), 1 / samples) / samples)
        assert abs(ours[row["system"]] - p) <= tolerance, (row["system"], ours, p)


# --------------------------------------------------------------------------- every kind


def _examples() -> dict[str, Any]:
    from tests.test_kind_conformance import _all_examples

    return _all_examples()


@pytest.mark.parametrize("kind", list(task_kinds()))
def test_the_full_set_once_is_the_leaderboards_headline(kind: str, tmp_path: Path) -> None:
    tmp_path.chmod(0o755)  # a sealed system reads its test set as another user
    run_dir = run_example(kind, _examples()[kind](tmp_path), tmp_path)
    [row] = leaderboard(run_dir)
    job = read_run(run_dir, None, None)
    the_kind = task_kind(kind)
    stats = list(
        the_kind.item_statistics(job.testset, job.config, job.outputs, job.seconds).values()
    )

    def aggregate(items: Any) -> float | None:
        return the_kind.aggregate(job.config, items)

    every_item_once = np.arange(len(stats))[None, :]
    [score] = resampled_scores(stats, aggregate, every_item_once)
    assert score == row.score
    # And as compare() scores a system: the same figure, with an interval around it.
    [first, _] = compare({"a": stats, "b": stats}, aggregate, samples={"bootstrap": 20}).systems
    assert first.score == row.score
    assert first.rank_low == 1 and first.rank_high == 2


def test_additive_resampling_equals_the_aggregate() -> None:
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 9, size=(30, 2))

    def rate(total: np.ndarray) -> float:
        return float(total[0] / total[1]) if total[1] else 0.0

    def aggregate(items: Any) -> float:
        return rate(np.sum(np.asarray(items), axis=0))

    indices = rng.integers(0, 30, size=(50, 30))
    fast = resampled_scores(Additive(rows, rate), aggregate, indices)
    slow = resampled_scores(list(rows), aggregate, indices)
    assert np.array_equal(fast, slow)


# --------------------------------------------------------------------------- a run


@pytest.fixture(scope="module")
def asr_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three ASR systems on six utterances: one right, one with errors, one that crashes."""
    return three_asr_systems_run(tmp_path_factory.mktemp("run"))


def test_compare_a_run_as_json(asr_run: Path) -> None:
    proc = onsite("compare", str(asr_run), "--task", "asr", "--test", "bootstrap", "ar",
                  "--samples", "200", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == TOP_KEYS
    assert all(set(s) == SYSTEM_KEYS for s in out["systems"])
    assert all(set(p) == PAIR_KEYS for p in out["pairs"])
    assert (out["task"], out["metric"], out["higher_is_better"]) == ("asr", "wer", False)
    assert (out["items"], out["seed"], out["samples"]) == (6, 12345, {"bootstrap": 200, "ar": 200})
    # Every system's score is its leaderboard headline: the crashed utterance counts as the
    # leaderboard counts it (no output: its four words deleted).
    rows: dict[str, Any] = {r.system: r.score for r in leaderboard(asr_run)}
    assert {s["system"]: s["score"] for s in out["systems"]} == rows
    assert rows["crashing"] == pytest.approx(4 / 24)
    assert [(p["a"], p["b"], p["test"]) for p in out["pairs"]] == [
        ("right", "wrong", "bootstrap"), ("right", "wrong", "ar"),
        ("right", "crashing", "bootstrap"), ("right", "crashing", "ar"),
        ("wrong", "crashing", "bootstrap"), ("wrong", "crashing", "ar"),
    ]  # fmt: skip
    for pair in out["pairs"]:
        assert pair["statistic"] == pytest.approx(rows[pair["a"]] - rows[pair["b"]])
        assert 0 < pair["p"] <= 1
        assert pair["better"] in (None, pair["a"], pair["b"])
        if pair["better"] is not None:  # the better system has the lower WER
            assert pair["p"] < 0.05 and rows[pair["better"]] == min(
                rows[pair["a"]], rows[pair["b"]]
            )
    for s in out["systems"]:
        assert s["ci_low"] <= s["score"] <= s["ci_high"]
        assert 1 <= s["rank_low"] <= s["rank_high"] <= 3


def test_compare_a_run_as_a_table(asr_run: Path) -> None:
    proc = onsite("compare", str(asr_run), "--task", "asr", "--systems", "right,wrong",
                  "--samples", "100")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "seed 12345" in proc.stdout and "bootstrap 100 resamples" in proc.stdout
    assert "right vs wrong" in proc.stdout and "crashing" not in proc.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--task", "nope"], ["[--task]", "no task 'nope'", "use one of: asr"]),
        (
            ["--task", "asr", "--systems", "right"],
            ["[--systems]", "only right to compare", "two or more"],
        ),
        (["--task", "asr", "--systems", "right,ghost"], ["[--systems]", "'ghost'", "right, wrong"]),
        (["--task", "asr", "--test", "fisher"], ["[--test]", "unknown test 'fisher'", "bootstrap"]),
        (["--task", "asr", "--sc-stats"], ["[--sc-stats]", "add --test with some of them"]),
        ([], ["[--task]", "which task?", "--task T"]),
    ],
)
def test_bad_input_names_the_key_and_the_fix(
    asr_run: Path, args: list[str], says: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", str(asr_run), *args]) == 2
    err = capsys.readouterr().err
    for words in says:
        assert words in err, err


def test_offline_bad_input(
    mt_files: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    ref, hyps = mt_files
    assert main(["compare", "mt", "--ref", str(ref), "--hyp", str(hyps[0])]) == 2
    assert "[--hyp]" in capsys.readouterr().err
    assert (
        main(["compare", "ocr", "--ref", str(ref), "--hyp", str(hyps[0]), "--hyp", str(hyps[1])])
        == 2
    )
    assert "no offline comparison for 'ocr'" in capsys.readouterr().err
    short = ref.parent / "short.txt"
    short.write_text("the cat\n", "utf-8")
    assert (
        main(["compare", "mt", "--ref", str(ref), "--hyp", str(hyps[0]), "--hyp", str(short)]) == 2
    )
    assert "short.txt" in capsys.readouterr().err


# --------------------------------------------------------------------------- SCTK's tests


def test_sctk_tests_on_a_run_are_scoring_sctk_stats(asr_run: Path, tmp_path: Path) -> None:
    from scoring.sctk_stats import compare_error_rates, unit_errors_from_trn

    tests = ["mapsswe", "sign", "wilcoxon", "mcnemar"]
    proc = onsite("compare", str(asr_run), "--task", "asr", "--test", "bootstrap", *tests,
                  "--sc-stats", "--samples", "100", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    # The same alignments as the trn files `onsite export --format trn` writes.
    units = {}
    for system in ("right", "wrong", "crashing"):
        files = {}
        for side, refs in (("hyp", False), ("ref", True)):
            args = ["export", str(asr_run), "--task", "asr", "--system", system, "--format", "trn"]
            exported = onsite(*args, *(["--references"] if refs else []))
            assert exported.returncode == 0, exported.stderr
            files[side] = tmp_path / f"{system}.{side}.trn"
            files[side].write_text(exported.stdout, "utf-8")
        units[system] = unit_errors_from_trn(files["ref"], files["hyp"])
    expected = compare_error_rates(units, tests, sc_stats=True)
    got = [p for p in out["pairs"] if p["test"] != "bootstrap"]
    assert got == [
        {"a": p.a, "b": p.b, "test": p.test, "statistic": p.statistic, "p": p.p, "better": p.better,
         "tool": None}  # --sc-stats: sc_stats's own values, nothing beside them
        for p in expected
    ]  # fmt: skip


def test_sctk_tests_offline_and_where_they_do_not_apply(
    tmp_path: Path, mt_files: tuple[Path, list[Path]], capsys: pytest.CaptureFixture[str]
) -> None:
    from scoring import read_transcripts, score_asr
    from scoring.sctk_stats import compare_error_rates, unit_errors_from_trn

    rng = random.Random(5)
    refs = {f"spk{s}-u{u}": " ".join(rng.choices(WORDS, k=6)) for s in range(4) for u in range(5)}
    (tmp_path / "ref.trn").write_text("".join(f"{t} ({k})\n" for k, t in refs.items()), "utf-8")
    hyps = []
    for name, p in (("a", 0.1), ("b", 0.4)):
        lines = []
        for k, text in refs.items():
            words = [w if rng.random() > p else rng.choice(WORDS) for w in text.split()]
            lines.append(f"{' '.join(words)} ({k})\n")
        (tmp_path / f"{name}.trn").write_text("".join(lines), "utf-8")
        hyps.append(tmp_path / f"{name}.trn")
    args = ["compare", "asr", "--ref", str(tmp_path / "ref.trn")]
    args += [a for h in hyps for a in ("--hyp", str(h))]
    assert main([*args, "--test", "ar", "mcnemar", "sign", "--samples", "300", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    truth = read_transcripts(tmp_path / "ref.trn")
    for system, path in zip(out["systems"], hyps, strict=True):
        assert system["score"] == score_asr(truth, read_transcripts(path)).overall.wer
    units = {str(h): unit_errors_from_trn(tmp_path / "ref.trn", h) for h in hyps}
    [mcn, sign] = compare_error_rates(units, ["mcnemar", "sign"])
    assert [(p["test"], p["p"]) for p in out["pairs"]][1:] == [("mcnemar", mcn.p), ("sign", sign.p)]
    # BLEU has no alignments: the SCTK tests say so and what to use.
    ref, mt_hyps = mt_files
    mt = ["compare", "mt", "--ref", str(ref), "--hyp", str(mt_hyps[0]), "--hyp", str(mt_hyps[1])]
    assert main([*mt, "--test", "mapsswe"]) == 2
    err = capsys.readouterr().err
    assert "[--test]" in err and "sclite's alignments" in err and "bootstrap or ar" in err
