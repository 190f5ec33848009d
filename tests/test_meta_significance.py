"""`onsite meta stability` and `discriminability` on scoring/resampling.py's machinery.

Worked cases whose answer is known (identical systems: no pair separated; every segment
perfect against every segment empty: separated), the pooled BLEU stability redone by
hand (the same subsets drawn with the same seed, each subset's lines written to files
and scored by `onsite score mt`), and the full item set's metric equal to `onsite score
mt`'s BLEU exactly.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from harness import leaderboard
from harness.cli.main import main
from scoring.meta import mean_of_scores, pair_separation, pooled_subsample_curve, subset_indices
from tests.helpers import (
    onsite,
    three_asr_systems_run,
)

WORDS = "the a cat dog sat on mat is was big small red green house tree river runs".split()


def meta(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["meta", *args, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def bleu_of(capsys: pytest.CaptureFixture[str], ref: Path, hyp: Path) -> float:
    """`onsite score mt`'s BLEU of one file."""
    assert main(["score", "mt", "--ref", str(ref), "--hyp", str(hyp), "--json"]) == 0
    return float(json.loads(capsys.readouterr().out)["bleu"])


@pytest.fixture
def mt(tmp_path: Path) -> tuple[Path, dict[str, Path], list[str], dict[str, list[str]]]:
    """A 12-segment reference, two noisy systems, a perfect one, a copy and an empty one."""
    rng = random.Random(11)
    refs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12))) for _ in range(12)]

    def noisy(line: str, p: float) -> str:
        words = line.split()
        return " ".join(w if rng.random() > p else rng.choice(WORDS) for w in words)

    lines = {
        "A": [noisy(r, 0.3) for r in refs],
        "B": [noisy(r, 0.5) for r in refs],
        "perfect": refs,
        "copy": refs,
        "empty": [""] * len(refs),
    }
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n", "utf-8")
    files = {}
    for name, text in lines.items():
        files[name] = tmp_path / f"{name}.txt"
        files[name].write_text("\n".join(text) + "\n", "utf-8")
    return tmp_path / "ref.txt", files, refs, lines


def hyps(files: dict[str, Path], *names: str) -> list[str]:
    return [a for n in names for a in ("--hyp", str(files[n]))]


@pytest.mark.parametrize("test", ["bootstrap", "ar"])
def test_identical_systems_are_never_separated(mt, capsys, test: str) -> None:
    ref, files, _, _ = mt
    out = meta(capsys, "discriminability", "--ref", str(ref), *hyps(files, "perfect", "copy"),
               "--test", test, "--samples", "200")  # fmt: skip
    (row,) = out["metrics"]
    assert (row["pairs"], row["separated"], row["proportion"]) == (1, 0, 0.0)
    assert row["statistic"] == "bleu pooled from per-item statistics"
    (pair,) = out["comparisons"]
    assert pair["difference"] == 0.0 and pair["better"] is None
    # Every resampled difference ties the observed 0, and ties count: p = 1.
    assert pair["p"] == 1.0
    assert (out["test"], out["seed"], out["samples"], out["alpha"]) == (test, 12345, 200, 0.05)


@pytest.mark.parametrize("test", ["bootstrap", "ar"])
def test_perfect_against_empty_is_separated(mt, capsys, test: str) -> None:
    ref, files, _, _ = mt
    out = meta(capsys, "discriminability", "--ref", str(ref),
               *hyps(files, "perfect", "empty", "copy"), "--test", test,
               "--samples", "200")  # fmt: skip
    (row,) = out["metrics"]
    # perfect and copy tie; each beats empty: two of the three pairs.
    assert (row["systems"], row["pairs"], row["separated"]) == (3, 3, 2)
    assert row["proportion"] == pytest.approx(2 / 3)
    verdicts = {(p["a"], p["b"]): p["better"] for p in out["comparisons"]}
    perfect, empty, copy = (str(files[n]) for n in ("perfect", "empty", "copy"))
    assert verdicts == {(perfect, empty): perfect, (perfect, copy): None, (empty, copy): copy}
    # Every resample of an all-or-nothing pair differs by exactly 1: p is the smallest there is.
    assert [p["p"] for p in out["comparisons"] if p["better"]] == [1 / 201, 1 / 201]


def test_the_proportion_is_the_pairs_compare_separates(mt, capsys) -> None:
    """The same pairs, p-values and verdicts as `onsite compare mt` (one machinery)."""
    ref, files, _, _ = mt
    names = ("A", "B", "perfect", "empty")
    out = meta(capsys, "discriminability", "--ref", str(ref), *hyps(files, *names),
               "--test", "ar", "--samples", "300", "--alpha", "0.01")  # fmt: skip
    assert main(["compare", "mt", "--ref", str(ref), *hyps(files, *names), "--test", "ar",
                 "--samples", "300", "--alpha", "0.01", "--json"]) == 0  # fmt: skip
    compared = json.loads(capsys.readouterr().out)
    want = [(p["a"], p["b"], p["p"], p["better"]) for p in compared["pairs"]]
    assert [(p["a"], p["b"], p["p"], p["better"]) for p in out["comparisons"]] == want
    separated = sum(p["better"] is not None for p in compared["pairs"])
    assert out["metrics"][0]["separated"] == separated
    assert out["metrics"][0]["proportion"] == separated / 6


def test_pooled_stability_is_subsets_scored_by_hand(mt, capsys, tmp_path: Path) -> None:
    ref, files, refs, lines = mt
    sizes, repeats, seed = [4, 8], 3, 5
    out = meta(capsys, "stability", "--ref", str(ref), *hyps(files, "A", "B"),
               "--sizes", "4,8", "--repeats", str(repeats), "--seed", str(seed))  # fmt: skip
    assert out["statistic"] == "bleu pooled from per-item statistics"
    curves = {(c["system"], c["size"]): c for c in out["curves"]}
    full = {f["system"]: f["full"] for f in out["full"]}
    for name in ("A", "B"):
        system = str(files[name])
        # The full item set: `onsite score mt`'s BLEU, exactly.
        assert full[system] == bleu_of(capsys, ref, files[name])
        # By hand: the same subsets (numpy's default_rng(seed), one choice per subset,
        # sizes in order), each written out as files and scored by `onsite score mt`.
        rng = np.random.default_rng(seed)
        for size in sizes:
            values = []
            for _ in range(repeats):
                chosen = rng.choice(len(refs), size=size, replace=False)
                sub_ref, sub_hyp = tmp_path / "sub_ref.txt", tmp_path / "sub_hyp.txt"
                sub_ref.write_text("\n".join(refs[i] for i in chosen) + "\n", "utf-8")
                sub_hyp.write_text("\n".join(lines[name][i] for i in chosen) + "\n", "utf-8")
                values.append(bleu_of(capsys, sub_ref, sub_hyp))
            got = curves[system, size]
            assert got["mean"] == pytest.approx(np.mean(values), rel=1e-12, abs=1e-15)
            assert got["sd"] == pytest.approx(np.std(values, ddof=1), rel=1e-9, abs=1e-15)
            assert got["low"] == pytest.approx(np.percentile(values, 5), rel=1e-12, abs=1e-15)
            assert got["high"] == pytest.approx(np.percentile(values, 95), rel=1e-12, abs=1e-15)


def test_pooled_is_not_the_mean_of_sentence_scores() -> None:
    """Two segments: 1 of 1 right and 0 of 3 right pool to 1/4, not (1 + 0) / 2."""
    rows = np.array([[1, 1], [0, 3]])

    def score(sums: np.ndarray) -> float:
        return float(sums[0] / sums[1])

    from scoring.resampling import Additive

    curve = pooled_subsample_curve(Additive(rows, score), lambda items: None, [2], repeats=2)
    assert curve.full == 0.25 and curve.mean == (0.25,) and curve.sd == (0.0,)
    # A sequence of statistics with its aggregate gives the same as the Additive form.
    stats = [(1, 1), (0, 3)]
    by_aggregate = pooled_subsample_curve(
        stats, lambda items: sum(a for a, _ in items) / sum(b for _, b in items), [1, 2], 4, 9
    )
    by_sums = pooled_subsample_curve(Additive(rows, score), lambda items: None, [1, 2], 4, 9)
    assert by_aggregate == by_sums
    # Rows may be a scipy sparse matrix (a kind with many columns, e.g. OCR's characters).
    sparse = pytest.importorskip("scipy.sparse")
    as_sparse = Additive(sparse.csr_matrix(rows), score)
    assert pooled_subsample_curve(as_sparse, lambda items: None, [1, 2], 4, 9) == by_sums
    assert [len(d[0]) for d in subset_indices(2, [1, 2], 4, 9)] == [1, 2]


def test_segment_scores_give_means_only(tmp_path: Path, capsys) -> None:
    path = tmp_path / "seg.csv"
    rows = ["system,segment,bleu,ter"]
    for i in range(1, 9):
        rows += [f"good,{i},0.9,0.1", f"twin,{i},0.9,0.1", f"bad,{i},0.1,0.8"]
    path.write_text("\n".join(rows) + "\n")
    out = meta(capsys, "discriminability", "--segments", str(path), "--lower-is-better", "ter",
               "--samples", "100")  # fmt: skip
    by_metric = {r["metric"]: r for r in out["metrics"]}
    assert set(by_metric) == {"bleu", "ter"}
    for row in by_metric.values():
        assert row["statistic"] == "mean of segment scores"
        assert (row["pairs"], row["separated"]) == (3, 2)
    verdicts = {(p["metric"], p["a"], p["b"]): p["better"] for p in out["comparisons"]}
    assert verdicts["ter", "good", "bad"] == "good"  # the lower error rate
    assert verdicts["bleu", "twin", "bad"] == "twin"
    # The aggregate of a file of sentence scores is their mean.
    assert pair_separation(
        {"x": mean_of_scores([0.2, 0.4]), "y": mean_of_scores([0.2, 0.4])}, lambda _: None
    ).comparison.systems[0].score == pytest.approx(0.3)
    # A system missing a segment cannot be paired.
    path.write_text("\n".join(rows[:-1]) + "\n")
    assert main(["meta", "discriminability", "--segments", str(path)]) == 2
    assert "does not score the segments" in capsys.readouterr().err


def test_input_errors_name_the_fix(mt, capsys, tmp_path: Path) -> None:
    ref, files, _, _ = mt
    assert main(["meta", "discriminability"]) == 2
    assert "no input given; give one of --segments" in capsys.readouterr().err
    seg = tmp_path / "s.csv"
    seg.write_text("system,segment,bleu\nA,1,0.5\n")
    assert main(["meta", "stability", "--segments", str(seg), "--ref", str(ref),
                 *hyps(files, "A")]) == 2  # fmt: skip
    assert "segments and files given" in capsys.readouterr().err
    assert main(["meta", "stability", "--ref", str(ref), *hyps(files, "A"), "--metric",
                 "bleu"]) == 2  # fmt: skip
    assert "--metric names a column of --segments" in capsys.readouterr().err
    assert main(["meta", "discriminability", "--ref", str(ref), *hyps(files, "A", "B"),
                 "--task", "mt"]) == 2  # fmt: skip
    assert "--task and --systems choose a run's" in capsys.readouterr().err
    assert main(["meta", "discriminability", "--ref", str(ref), *hyps(files, "A")]) == 2
    assert "1 system to compare" in capsys.readouterr().err
    assert main(["meta", "discriminability", "--ref", str(ref), *hyps(files, "A", "B"),
                 "--alpha", "1.5"]) == 2  # fmt: skip
    assert "give a level in (0, 1)" in capsys.readouterr().err


@pytest.fixture(scope="module")
def asr_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three ASR systems on six utterances: one right, one with errors, one that crashes."""
    return three_asr_systems_run(tmp_path_factory.mktemp("run"))


def test_a_run_is_resampled_with_its_kinds_statistics(asr_run: Path) -> None:
    proc = onsite("meta", "stability", "--run", str(asr_run), "--task", "asr", "--sizes",
                  "3,6", "--repeats", "5", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["metric"], out["statistic"]) == ("wer", "wer pooled from per-item statistics")
    headline = {r.system: r.score for r in leaderboard(asr_run)}
    assert {f["system"]: f["full"] for f in out["full"]} == headline
    at_six = {c["system"]: c["mean"] for c in out["curves"] if c["size"] == 6}
    assert at_six == pytest.approx(headline)  # all six items: the headline every time
    proc = onsite("meta", "discriminability", "--run", str(asr_run), "--task", "asr",
                  "--samples", "200", "--json")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(proc.stdout)["metrics"]
    assert (row["metric"], row["higher_is_better"], row["items"], row["pairs"]) == (
        "wer",
        False,
        6,
        3,
    )
    assert 0 <= row["separated"] <= 3


def test_asr_files_pool_word_errors(tmp_path: Path, capsys) -> None:
    """--family asr: WER from summed errors and words, `onsite score asr`'s on the whole set."""
    ref = ["one two three four (spk1-u1)", "five six seven (spk1-u2)", "eight nine ten (spk2-u3)"]
    bad = ["one too (spk1-u1)", "five seven (spk1-u2)", "nine (spk2-u3)"]
    for name, lines in (("ref", ref), ("good", ref), ("bad", bad)):
        (tmp_path / f"{name}.trn").write_text("\n".join(lines) + "\n")
    files = [str(tmp_path / n) for n in ("ref.trn", "good.trn", "bad.trn")]
    out = meta(capsys, "stability", "--family", "asr", "--ref", files[0], "--hyp", files[1],
               "--hyp", files[2], "--sizes", "1,3", "--repeats", "4")  # fmt: skip
    assert main(["score", "asr", "--ref", files[0], "--hyp", files[2], "--json"]) == 0
    wer = json.loads(capsys.readouterr().out)["wer"]
    assert {f["system"]: f["full"] for f in out["full"]} == {files[1]: 0.0, files[2]: wer}
    assert wer == 0.6  # 6 errors over 10 reference words; the mean of utterance WERs is 0.58
    out = meta(capsys, "discriminability", "--family", "asr", "--ref", files[0], "--hyp",
               files[1], "--hyp", files[2], "--samples", "100")  # fmt: skip
    (row,) = out["metrics"]
    assert (row["metric"], row["higher_is_better"], row["pairs"]) == ("wer", False, 1)
    (pair,) = out["comparisons"]
    assert pair["difference"] == pytest.approx(-0.6)
