"""`onsite compare` says where a reference tool would print another p-value or verdict.

onsite's defaults are the correct values (docs/significance.md); sc_stats (SCTK, the
Debian package sctk) and sacrebleu print others on ordinary input. Each such pair gets
the tool's value in its JSON ``tool`` and a line in ``notes`` (and in the table) naming
the flag that reproduces the tool. Checked here against the tools themselves: a note
appears exactly where the tool's printed value differs from onsite's.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from harness.significance import tool_notes
from scoring.resampling import PairResult, ToolValue
from scoring.sctk_stats import p_text
from tests.helpers import onsite
from tests.test_compare import sacrebleu_json
from tests.test_sctk_stats import _corpus, _corrupt, _mcnemar_45_66, _run_sc_stats

SCTK_TESTS = ("--test", "mapsswe", "sign", "wilcoxon", "mcnemar")


def _compare(tmp: Path, family: str, ref: str, hyps: list[str], *extra: str) -> dict[str, Any]:
    args = [a for h in hyps for a in ("--hyp", h)]
    proc = onsite("compare", family, "--ref", ref, *args, *extra, "--json", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout))


def _table(tmp: Path, family: str, ref: str, hyps: list[str], *extra: str) -> str:
    args = [a for h in hyps for a in ("--hyp", h)]
    proc = onsite("compare", family, "--ref", ref, *args, *extra, cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _sctk_case(
    tmp: Path, ref: list[tuple[str, str]], hyps: dict[str, list[tuple[str, str]]]
) -> tuple[dict[str, Any], dict[tuple[str, str, str], tuple[str | None, str]]]:
    """onsite's default comparison of the files and sc_stats's own report of them."""
    expected = _run_sc_stats(tmp, ref, hyps)  # writes ref.trn and NAME.trn
    ours = _compare(tmp, "asr", "ref.trn", [f"{h}.trn" for h in hyps], *SCTK_TESTS)
    return ours, expected


def _check_notes_where_sc_stats_differs(
    ours: dict[str, Any], expected: dict[tuple[str, str, str], tuple[str | None, str]]
) -> int:
    """A pair carries sc_stats's value exactly where sc_stats prints another p-value or
    winner, and that value is what sc_stats prints; returns the pairs that differ."""
    differ = 0
    for pair in ours["pairs"]:
        key = (pair["a"].removesuffix(".trn"), pair["b"].removesuffix(".trn"), pair["test"])
        winner = None if pair["better"] is None else pair["better"].removesuffix(".trn")
        mine = (winner, p_text(pair["p"]))
        tool = pair["tool"]
        if tool is None:
            assert mine == expected[key], key
            continue
        differ += 1
        assert tool["name"] == "sc_stats"
        theirs = None if tool["better"] is None else tool["better"].removesuffix(".trn")
        assert (theirs, p_text(tool["p"])) == expected[key], key
        assert mine != expected[key], key
    if differ:
        assert ours["notes"] and all("--sc-stats reproduces sc_stats" in n for n in ours["notes"])
    else:
        assert ours["notes"] == []
    return differ


@pytest.mark.sctk
def test_mcnemar_past_twenty_discordant_utterances_is_noted(tmp_path: Path) -> None:
    ref, hyps = _mcnemar_45_66()
    ours, expected = _sctk_case(tmp_path, ref, hyps)
    assert expected[("A", "B", "mcnemar")] == ("A", "<0.001")
    assert _check_notes_where_sc_stats_differs(ours, expected) >= 1
    [note] = [n for n in ours["notes"] if n.startswith("mcnemar, A.trn vs B.trn")]
    assert "p = 0.0572 (no significant difference)" in note
    assert "sc_stats would give p < 0.001 (A.trn better)" in note
    assert "R * 0.5" in note and note.endswith("--sc-stats reproduces sc_stats")
    # The table says it too; with --sc-stats there is nothing to say.
    table = _table(tmp_path, "asr", "ref.trn", ["A.trn", "B.trn", "C.trn"], *SCTK_TESTS)
    assert "notes (where the reference tool would print another value):" in table
    assert "  mcnemar, A.trn vs B.trn: p = 0.0572" in table
    same = _compare(tmp_path, "asr", "ref.trn", ["A.trn", "B.trn", "C.trn"], *SCTK_TESTS,
                    "--sc-stats")  # fmt: skip
    assert same["notes"] == [] and all(p["tool"] is None for p in same["pairs"])
    table = _table(tmp_path, "asr", "ref.trn", ["A.trn", "B.trn"], *SCTK_TESTS, "--sc-stats")
    assert "notes" not in table


def _sign_case() -> tuple[list[tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    # 15 speakers (the binomial is exact in sc_stats too): A is better on 13 by one word
    # in ten, B on 2 by every word, so B has the lower summed per-speaker rate.
    words = "one two three four five six seven eight nine ten".split()
    ref = [(f"s{k:02d}_1", " ".join(words)) for k in range(15)]
    a, b = [], []
    for utt, text in ref:
        k = int(utt[1:3])
        wrong = " ".join(w + "x" for w in words)
        one_off = " ".join(["onex", *words[1:]])
        a.append((utt, wrong if k >= 13 else text))
        b.append((utt, text if k >= 13 else one_off))
    return ref, {"A": a, "B": b}


@pytest.mark.sctk
def test_sign_test_naming_another_system_is_noted(tmp_path: Path) -> None:
    ref, hyps = _sign_case()
    ours, expected = _sctk_case(tmp_path, ref, hyps)
    assert expected[("A", "B", "sign")] == ("B", "0.007")
    assert _check_notes_where_sc_stats_differs(ours, expected) >= 1
    [sign] = [p for p in ours["pairs"] if p["test"] == "sign"]
    assert sign["better"] == "A.trn" and p_text(sign["p"]) == "0.007"
    [note] = [n for n in ours["notes"] if n.startswith("sign,")]
    assert "p = 0.0074 (A.trn better)" in note
    assert "sc_stats would give p = 0.007 (B.trn better)" in note
    assert "lower summed per-speaker rate" in note and "R * 0.5" not in note


@pytest.mark.sctk
@pytest.mark.parametrize("seed", [1, 2, 3, 10, 11, 12])
def test_notes_appear_exactly_where_sc_stats_differs(tmp_path: Path, seed: int) -> None:
    # Random systems, 3 to 30 speakers: the exact binomial and the normal approximation,
    # MAPSSWE and Wilcoxon p-values from sc_stats's table.
    rng = random.Random(seed)
    corpus = _corpus(rng, speakers=rng.randint(3, 30), per_speaker=rng.randint(1, 3))
    ref = [(utt, " ".join(words)) for utt, words in corpus]
    hyps = {
        f"s{k}": [(utt, _corrupt(rng, words, rng.uniform(0.02, 0.3))) for utt, words in corpus]
        for k in range(3)
    }
    ours, expected = _sctk_case(tmp_path, ref, hyps)
    _check_notes_where_sc_stats_differs(ours, expected)


@pytest.mark.sctk
def test_no_note_where_sc_stats_agrees(tmp_path: Path) -> None:
    # Few speakers, few discordant utterances: sc_stats's exact binomial is onsite's.
    ref = [(f"s{k}_1", "one two three four") for k in range(6)]
    hyps = {
        "x": [(u, "one two tree four" if k < 2 else t) for k, (u, t) in enumerate(ref)],
        "y": [(u, "one too three four" if k in (1, 2, 3) else t) for k, (u, t) in enumerate(ref)],
    }
    ours, expected = _sctk_case(tmp_path, ref, hyps)
    mine = {(p["test"]): (p["better"], p_text(p["p"])) for p in ours["pairs"]}
    assert mine["mcnemar"] == ("y.trn" if expected[("x", "y", "mcnemar")][0] else None,
                               expected[("x", "y", "mcnemar")][1])  # fmt: skip
    for test in ("sign", "mcnemar"):
        assert [p["tool"] for p in ours["pairs"] if p["test"] == test] == [None]
    assert not [n for n in ours["notes"] if n.startswith(("sign", "mcnemar"))]


def test_many_differing_pairs_are_one_line_per_test() -> None:
    def pair(a: str, b: str, test: str, p: float, tool: float | None) -> PairResult:
        value = None if tool is None else ToolValue("sc_stats", tool, None, False)
        return PairResult(a, b, test, 1.0, p, None, value)

    names = ["s1", "s2", "s3", "s4", "s5"]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    many = [pair(a, b, "mapsswe", 0.2 + k / 100, 0.21 + k / 100) for k, (a, b) in enumerate(pairs)]
    few = [pair(a, b, "wilcoxon", 0.5, None if k else 0.51) for k, (a, b) in enumerate(pairs)]
    notes = tool_notes(many + few)
    assert len(notes) == 2
    assert notes[0].startswith("mapsswe: on 10 of 10 pairs sc_stats would give another p-value")
    assert "(0 verdicts change)" in notes[0] and notes[0].endswith("--sc-stats reproduces sc_stats")
    assert notes[1].startswith("wilcoxon, s1 vs s2: p = 0.5000 (no significant difference); "
                               "sc_stats would give p = 0.510")  # fmt: skip


@pytest.mark.parametrize(
    ("ours_test", "theirs", "count"),
    [("bootstrap", "--paired-bs", "--paired-bs-n"), ("ar", "--paired-ar", "--paired-ar-n")],
)
def test_ties_give_sacrebleus_p_value_beside_onsites(
    tmp_path: Path, ours_test: str, theirs: str, count: str
) -> None:
    rng = random.Random(3)
    words = "the a cat dog sat on mat is was big small red green house".split()
    refs = [" ".join(rng.choice(words) for _ in range(rng.randint(4, 12))) for _ in range(40)]
    (tmp_path / "ref.txt").write_text("\n".join(refs) + "\n", "utf-8")
    far = [" ".join(w if rng.random() > 0.4 else "x" for w in r.split()) for r in refs]
    (tmp_path / "A.txt").write_text("\n".join(far) + "\n", "utf-8")
    (tmp_path / "B.txt").write_bytes((tmp_path / "A.txt").read_bytes())  # identical: ties
    close = [" ".join(w if rng.random() > 0.35 else "y" for w in r.split()) for r in far]
    (tmp_path / "C.txt").write_text("\n".join(close) + "\n", "utf-8")
    samples = "300"
    hyps = ["A.txt", "B.txt", "C.txt"]
    ours = _compare(tmp_path, "mt", "ref.txt", hyps, "--test", ours_test, "--samples", samples)
    sacre = sacrebleu_json(tmp_path / "ref.txt", [tmp_path / "A.txt", tmp_path / "B.txt"],
                           theirs, count, samples)  # fmt: skip
    by_pair = {(p["a"], p["b"]): p for p in ours["pairs"]}
    tied = by_pair[("A.txt", "B.txt")]
    assert tied["p"] == 1.0 and tied["better"] is None
    assert tied["tool"]["name"] == "sacrebleu"
    assert tied["tool"]["p"] == pytest.approx(sacre[1]["BLEU"]["p_value"])
    assert tied["tool"]["significant"] is True
    # BLEU of two different systems: no resampled difference equals the observed one.
    assert by_pair[("A.txt", "C.txt")]["tool"] is None
    [note] = ours["notes"]
    assert note.startswith(f"{ours_test}, A.txt vs B.txt: p = 1.0000 (no significant difference)")
    assert "sacrebleu would give p = 0.0033 (significant, of equal scores)" in note
    assert note.endswith("--sacrebleu reproduces sacrebleu")
    table = _table(tmp_path, "mt", "ref.txt", hyps, "--test", ours_test, "--samples", samples)
    assert f"  {note}" in table
    strict = _compare(tmp_path, "mt", "ref.txt", hyps, "--test", ours_test, "--samples", samples,
                      "--sacrebleu")  # fmt: skip
    assert strict["notes"] == [] and all(p["tool"] is None for p in strict["pairs"])
