"""Syllable-level ASR (`unit = "syllable"`): Chinese pinyin syllable recognition, scored as
sclite scores words with each syllable a word, checked against SCTK's sclite itself.

The input convention: tone-numbered pinyin, syllables separated by blanks or written
together as words ("ni3hao3"); a word splits after each tone digit and at apostrophes
("xi'an1" is xi + an1). sclite gets the same syllables one per word.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scoring import score_asr
from scoring.asr_align import tokenize
from tests.helpers import REPO, make_testset, onsite, write_site

SCLITE = Path("/usr/lib/sctk/bin/sclite")
TOTALS = re.compile(r"^Scores: \(#C #S #D #I\) (\d+) (\d+) (\d+) (\d+)$")
# Toneless bases: some start with a vowel, so a word needs an apostrophe before them.
BASES = ["ni", "hao", "zhong", "guo", "ren", "an", "xue", "da", "ma", "er", "shi", "ou", "lv"]


def test_syllables_split_at_tone_digits_and_apostrophes() -> None:
    assert tokenize("ni3 hao3", "syllable") == ["ni3", "hao3"]
    assert tokenize("Ni3Hao3  MA5", "syllable") == ["ni3", "hao3", "ma5"]
    assert tokenize("xi'an1 da4xue2", "syllable") == ["xi", "an1", "da4", "xue2"]
    # sclite's blanks and its trailing-star rule hold as for words.
    assert tokenize("zhong1guo2\vren2*", "syllable") == ["zhong1", "guo2", "ren2"]
    # No tone digit and no apostrophe: a toneless string cannot be split unambiguously
    # (xian: xi'an or xian), so it stays one token.
    assert tokenize("nihao", "syllable") == ["nihao"]


def _syllable(rng: random.Random) -> str:
    return rng.choice(BASES) + str(rng.randint(1, 5))


def _written(syllables: list[str], rng: random.Random) -> str:
    """The syllables as a participant may write them: words of 1-3 syllables, with an
    apostrophe before a syllable that starts with a vowel inside a word."""
    out, k = [], 0
    while k < len(syllables):
        size = rng.randint(1, 3)
        word = ""
        for syl in syllables[k : k + size]:
            word += ("'" if word and syl[0] in "aeo" else "") + syl
        out.append(word)
        k += size
    return " ".join(out)


def _hypothesis(ref: list[str], rng: random.Random) -> list[str]:
    out = []
    for syl in ref:
        roll = rng.random()
        if roll < 0.1:
            continue  # deleted
        out.append(syl[:-1] + str(rng.randint(1, 5)) if roll < 0.3 else syl)  # tone error
        if rng.random() < 0.08:
            out.append(_syllable(rng))  # inserted
    return out


@pytest.mark.sctk
def test_syllable_scores_equal_sclite_on_syllable_tokenised_files(tmp_path: Path) -> None:
    if not SCLITE.exists():
        pytest.fail("SCTK's sclite is not installed: run `make system-deps` (Debian package sctk)")
    rng = random.Random(30)
    ids = [f"spk1_u{i:03d}" for i in range(80)]
    refs = {u: [_syllable(rng) for _ in range(rng.randint(1, 12))] for u in ids}
    hyps = {u: _hypothesis(refs[u], rng) for u in ids}
    # sclite reads one syllable per word; onsite reads the participant's writing.
    for name, table in (("ref", refs), ("hyp", hyps)):
        sylls = "".join(f"{' '.join(table[u])} ({u})\n" for u in ids)
        (tmp_path / f"{name}.syl.trn").write_text(sylls, encoding="utf-8")
        words = "".join(f"{_written(table[u], rng)} ({u})\n" for u in ids)
        (tmp_path / f"{name}.trn").write_text(words, encoding="utf-8")
    out = subprocess.run(
        [str(SCLITE), "-r", "ref.syl.trn", "trn", "-h", "hyp.syl.trn", "trn", "-i", "spu_id",
         "-e", "utf-8", "-o", "pralign", "stdout"],
        cwd=tmp_path, capture_output=True, check=True,
    ).stdout.decode("utf-8")  # fmt: skip
    theirs = [
        tuple(int(g) for g in m.groups()) for line in out.splitlines() if (m := TOTALS.match(line))
    ]
    assert len(theirs) == len(ids)
    written = {
        name: dict(
            (line.rsplit(" (", 1)[1][:-1], line.rsplit(" (", 1)[0])
            for line in (tmp_path / f"{name}.trn").read_text(encoding="utf-8").splitlines()
        )
        for name in ("ref", "hyp")
    }
    report = score_asr(written["ref"], written["hyp"], unit="syllable")
    ours = [(u.correct, u.substitutions, u.deletions, u.insertions) for u in report.utterances]
    assert ours == theirs
    c, s, d, i = (sum(col) for col in zip(*theirs, strict=True))
    assert (report.overall.correct, report.overall.substitutions) == (c, s)
    assert (report.overall.deletions, report.overall.insertions) == (d, i)
    assert i > 0 and d > 0 and s > 0  # the case exercises every kind of error

    # The command line gives the same totals, from the participant's files.
    result = onsite("score", "asr", "--ref", str(tmp_path / "ref.trn"),
                    "--hyp", str(tmp_path / "hyp.trn"), "--unit", "syllable", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    assert figures["unit"] == "syllable"
    assert (figures["correct"], figures["substitutions"]) == (c, s)
    assert (figures["deletions"], figures["insertions"]) == (d, i)


def test_a_syllable_task_runs_and_ranks_by_the_syllable_error_rate(tmp_path: Path) -> None:
    # The references are one syllable per word; the system writes words of syllables.
    refs = {"u1": "ni3 hao3 ma5", "u2": "xi an1 da4 xue2", "u3": "zhong1 guo2 ren2"}
    answers = {"u1": "ni3hao3 ma1", "u2": "xi'an1 da4xue2", "u3": "zhong1guo2"}
    root = make_testset(
        tmp_path / "set", [(u, 1600 * k, refs[u]) for k, u in enumerate(refs, start=1)]
    )
    plan = {str(1600 * k): {"text": answers[u]} for k, u in enumerate(refs, start=1)}
    fake = str(REPO / "tests" / "systems" / "fake_system.py")
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"pinyin": {"command": [sys.executable, fake], "env": {"FAKE_PLAN": json.dumps(plan)}}},
        device={"transport": "local", "sandbox": False},
        task_keys={"unit": "syllable"},
    )
    run = onsite("run", str(site), "--runs", str(tmp_path / "runs"))
    assert run.returncode == 0, run.stdout + run.stderr
    report = onsite("report", str(tmp_path / "runs" / "t"), "--json")
    (row,) = json.loads(report.stdout)
    # 10 reference syllables: ma5 -> ma1 substituted, ren2 deleted: 2 errors.
    assert row["metric"] == "syler" and row["syler"] == pytest.approx(0.2)
    assert (row["ref_tokens"], row["substitutions"], row["deletions"]) == (10, 1, 1)
    table = onsite("report", str(tmp_path / "runs" / "t")).stdout
    assert "SylER 20.0%" in table
    # Rescored offline from the run, the number is the live one.
    again = onsite("score", "asr", "--run", str(tmp_path / "runs" / "t"), "--task", "asr",
                   "--system", "pinyin", "--json")  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["unit"] == "syllable"
    assert json.loads(again.stdout)["wer"] == pytest.approx(0.2)
