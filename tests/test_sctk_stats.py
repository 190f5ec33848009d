"""scoring.sctk_stats against SCTK's own sclite and sc_stats (the Debian package sctk).

Each case writes trn files, runs ``sclite -i spu_id -o sgml`` per system and
``sc_stats -p -t mapsswe sign wilc mcn -u`` on the sgml outputs, parses the unified
comparison matrix (winner and p-value at its printed precision, "%.3f" or "<0.001"),
and compares it with `compare_error_rates(..., sc_stats=True)` on onsite's own
alignment of the same files.
"""

from __future__ import annotations

import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from scoring.sctk_stats import (
    UnitErrors,
    compare_error_rates,
    p_text,
    sclite_speaker,
    sclite_speakers,
    unit_errors_from_trn,
)
from tests.helpers import onsite

SCTK_BIN = Path("/usr/lib/sctk/bin")
_ABBREV = {"MP": "mapsswe", "SI": "sign", "WI": "wilcoxon", "MN": "mcnemar"}


def _tool(name: str) -> str:
    found = shutil.which(name) or (str(SCTK_BIN / name) if (SCTK_BIN / name).exists() else None)
    if found is None:
        pytest.fail(f"SCTK's {name} is not installed: run `make system-deps` (Debian package sctk)")
    return found


def _write_trn(path: Path, lines: list[tuple[str, str]]) -> None:
    path.write_text("".join(f"{text} ({utt})\n" for utt, text in lines), encoding="utf-8")


def _run_sc_stats(
    tmp: Path, ref: list[tuple[str, str]], hyps: dict[str, list[tuple[str, str]]]
) -> dict[tuple[str, str, str], tuple[str | None, str]]:
    """sc_stats's verdicts {(a, b, test): (better or None, printed p)} for the files."""
    _write_trn(tmp / "ref.trn", ref)
    sgml = []
    for name, lines in hyps.items():
        _write_trn(tmp / f"{name}.trn", lines)
        subprocess.run(
            [
                _tool("sclite"),
                "-r",
                "ref.trn",
                "trn",
                "-h",
                f"{name}.trn",
                "trn",
                name,
                "-i",
                "spu_id",
                "-o",
                "sgml",
                "-n",
                name,
            ],
            cwd=tmp,
            check=True,
            capture_output=True,
        )
        sgml.append((tmp / f"{name}.sgml").read_bytes())
    done = subprocess.run(
        [_tool("sc_stats"), "-p", "-t", "mapsswe", "sign", "wilc", "mcn", "-u", "-n", "-"],
        cwd=tmp,
        input=b"".join(sgml),
        check=True,
        capture_output=True,
    )
    verbose = subprocess.run(
        [_tool("sc_stats"), "-p", "-t", "mapsswe", "wilc", "-v", "-n", "-"],
        cwd=tmp,
        input=b"".join(sgml),
        check=False,
        capture_output=True,
    )
    # sc_stats -v crashes (SIGSEGV) on two systems without a single MAPSSWE segment
    # (two perfect systems); the unified report above still runs.
    if verbose.returncode == 0:
        (tmp / "verbose.txt").write_bytes(verbose.stdout)
    return _parse_unified(done.stdout.decode(), list(hyps))


def _verbose_z(tmp: Path, names: list[str]) -> dict[tuple[str, str, str], str]:
    """The Z statistics sc_stats -v prints: MAPSSWE's "%5.3f", Wilcoxon's "%4.2f"."""
    text = (tmp / "verbose.txt").read_text(encoding="latin-1")  # sc_stats prints stray bytes
    out = {
        (a, b, "mapsswe"): z
        for a, b, z in re.findall(
            r"MTCH_PR_RESULTS \(systems: (\S+) (\S+)\).*?\(Z Stat: +(\S+)\)", text
        )
    }
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    wilcoxon = re.findall(r"The Z statistic = +(\S+),", text)
    assert len(wilcoxon) == len(pairs), text
    out.update({(a, b, "wilcoxon"): z for (a, b), z in zip(pairs, wilcoxon, strict=True)})
    return out


def _parse_unified(
    text: str, names: list[str]
) -> dict[tuple[str, str, str], tuple[str | None, str]]:
    out: dict[tuple[str, str, str], tuple[str | None, str]] = {}
    row = ""
    for line in text.splitlines():
        parts = line.split("||")
        if len(parts) != 3:
            continue
        abbrev = parts[0].strip("| ")
        if abbrev not in _ABBREV:
            continue
        cells = parts[1].split("|")
        row = cells[0].strip() or row
        for col, cell in zip(names, cells[1:], strict=True):
            fields = cell.split()
            if not fields:
                continue
            winner = None if fields[0] == "~" else fields[0]
            out[(row, col, _ABBREV[abbrev])] = (winner, fields[1])
    return out


def _check(
    tmp: Path,
    ref: list[tuple[str, str]],
    hyps: dict[str, list[tuple[str, str]]],
    z_too: bool = True,
) -> None:
    """Same verdicts and printed p-values as sc_stats, and (if `z_too`) the same
    statistics as its verbose report prints."""
    expected = _run_sc_stats(tmp, ref, hyps)
    systems = {name: unit_errors_from_trn(tmp / "ref.trn", tmp / f"{name}.trn") for name in hyps}
    got = {
        (t.a, t.b, t.test): (t.better, p_text(t.p))
        for t in compare_error_rates(systems, sc_stats=True)
    }
    n = len(hyps)
    assert len(expected) == 4 * n * (n - 1) // 2, expected
    assert got == expected
    # The same as a user runs it: `onsite compare asr ... --sc-stats --json`.
    args = ["compare", "asr", "--ref", "ref.trn", *(a for h in hyps for a in ("--hyp", f"{h}.trn"))]
    tests = ["--test", "mapsswe", "sign", "wilcoxon", "mcnemar"]
    proc = onsite(*args, *tests, "--sc-stats", "--json", cwd=tmp)
    assert proc.returncode == 0, proc.stderr
    name = {f"{h}.trn": h for h in hyps}
    cli = {
        (name[p["a"]], name[p["b"]], p["test"]): (
            None if p["better"] is None else name[p["better"]],
            p_text(p["p"]),
        )
        for p in json.loads(proc.stdout)["pairs"]
    }
    assert cli == expected
    if not z_too:
        return
    # The statistics behind the printed p-values, at sc_stats's -v precision. The
    # sign of Wilcoxon's Z is sc_stats's (its W is the smaller side's rank sum).
    z_printed = _verbose_z(tmp, list(hyps))
    assert len(z_printed) == 2 * n * (n - 1) // 2
    ours = {
        (t.a, t.b, t.test): f"{t.statistic:5.3f}" if t.test == "mapsswe" else f"{t.statistic:4.2f}"
        for t in compare_error_rates(systems, tests=["mapsswe", "wilcoxon"], sc_stats=True)
    }
    assert ours == z_printed


_VOCAB = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima".split()


def _corrupt(rng: random.Random, words: list[str], rate: float) -> str:
    out: list[str] = []
    for w in words:
        roll = rng.random()
        if roll < rate / 3:
            continue  # deletion
        if roll < 2 * rate / 3:
            out.append(rng.choice(_VOCAB) + "x")  # substitution
        else:
            out.append(w)
        if rng.random() < rate / 4:
            out.append(rng.choice(_VOCAB))  # insertion
    return " ".join(out)


def _corpus(rng: random.Random, speakers: int, per_speaker: int) -> list[tuple[str, list[str]]]:
    return [
        (f"spk{s:02d}_{u:03d}", [rng.choice(_VOCAB) for _ in range(rng.randint(3, 12))])
        for s in range(speakers)
        for u in range(per_speaker)
    ]


@pytest.mark.sctk
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_systems_match_sc_stats(tmp_path: Path, seed: int) -> None:
    # 24 speakers: past 20 units, so sc_stats's sign test takes its normal approximation.
    rng = random.Random(seed)
    corpus = _corpus(rng, speakers=24, per_speaker=3)
    ref = [(utt, " ".join(words)) for utt, words in corpus]
    rates = {"sysA": 0.05, "sysB": 0.15, "sysC": 0.16, "sysD": 0.4}
    hyps = {
        name: [(utt, _corrupt(rng, words, rate)) for utt, words in corpus]
        for name, rate in rates.items()
    }
    _check(tmp_path, ref, hyps)


@pytest.mark.sctk
@pytest.mark.parametrize("seed", range(10, 22))
def test_close_systems_match_sc_stats(tmp_path: Path, seed: int) -> None:
    # Close error rates, short utterances (many speakers with equal rates: the sign
    # test's split ties and Wilcoxon's alternating zeros), 3 to 30 speakers (exact
    # binomial and normal approximation), empty references and hypotheses, and the
    # hypothesis files in another order than the reference (sclite's speaker order).
    rng = random.Random(seed)
    speakers, per_speaker = rng.randint(3, 30), rng.randint(1, 4)
    corpus = [
        (utt, words[: rng.choice([0, 1, 2, len(words)])] if rng.random() < 0.3 else words)
        for utt, words in _corpus(rng, speakers, per_speaker)
    ]
    ref = [(utt, " ".join(words)) for utt, words in corpus]
    order = list(range(len(corpus)))
    rng.shuffle(order)
    base = rng.uniform(0.02, 0.25)
    hyps = {}
    for k in range(rng.randint(3, 5)):
        rate = base + rng.uniform(-0.02, 0.03)
        lines = [(utt, _corrupt(rng, words, rate)) for utt, words in corpus]
        hyps[f"s{k}"] = [lines[i] for i in order]
    _check(tmp_path, ref, hyps)


@pytest.mark.sctk
def test_edge_case_systems_match_sc_stats(tmp_path: Path) -> None:
    # A perfect system, its copy (identical systems), a system with every word wrong,
    # one with empty hypotheses, one with a single error, on few utterances.
    rng = random.Random(7)
    corpus = _corpus(rng, speakers=3, per_speaker=2)
    ref = [(utt, " ".join(words)) for utt, words in corpus]
    hyps = {
        "perfect": list(ref),
        "copy": list(ref),
        "allwrong": [(utt, " ".join(w + "z" for w in words)) for utt, words in corpus],
        "empty": [(utt, "") for utt, _ in corpus],
        "oneerr": [
            (utt, " ".join(words[1:] if k == 0 else words)) for k, (utt, words) in enumerate(corpus)
        ],
    }
    _check(tmp_path, ref, hyps, z_too=False)
    assert not (tmp_path / "verbose.txt").exists()  # sc_stats -v crashed: perfect vs copy
    # The statistics of every pair but the one that crashes sc_stats -v.
    del hyps["copy"]
    _check(tmp_path, ref, hyps)


@pytest.mark.sctk
def test_ties_and_single_utterance_match_sc_stats(tmp_path: Path) -> None:
    ref = [("a_1", "one two three four five six")]
    hyps = {
        "x": [("a_1", "one two tree four five six")],
        "y": [("a_1", "one two three four fiv six")],
        "z": [("a_1", "one two three four five six seven")],
    }
    _check(tmp_path, ref, hyps)


@pytest.mark.sctk
def test_speakers_are_sclites(tmp_path: Path) -> None:
    # An id without - or _ joins the speaker before it (the first one: speaker "").
    ids = ["first", "SpkA_1", "spka_2", "b-x_y", "c_d-e", "plain", "Other", "e_f_g"]
    lines = [(utt, "w") for utt in ids]
    _write_trn(tmp_path / "ref.trn", lines)
    _write_trn(tmp_path / "hyp.trn", lines)
    subprocess.run(
        [_tool("sclite"), "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "hyp",
         "-i", "spu_id", "-o", "sgml", "-n", "hyp"],
        cwd=tmp_path, check=True, capture_output=True,
    )  # fmt: skip
    sgml = (tmp_path / "hyp.sgml").read_text()
    speaker = ""
    theirs = {}
    for line in sgml.splitlines():
        if m := re.match(r'<SPEAKER id="(.*)">', line):
            speaker = m.group(1)
        elif m := re.match(r'<PATH id="\((.*)\)"', line):
            theirs[m.group(1)] = speaker
    assert theirs == {utt.lower(): spk for utt, spk in sclite_speakers(ids).items()}


def _mcnemar_45_66() -> tuple[list[tuple[str, str]], dict[str, list[tuple[str, str]]]]:
    # 45 utterances only A gets wrong, 66 only B gets wrong, 30 both get right.
    ref = [(f"s{k:03d}_1", "hello world again") for k in range(141)]
    a, b = [], []
    for k, (utt, text) in enumerate(ref):
        a.append((utt, "hello word again" if k < 45 else text))
        b.append((utt, "hello world gain" if 45 <= k < 111 else text))
    return ref, {"A": a, "B": b, "C": list(ref)}


@pytest.mark.sctk
def test_mcnemar_bug_case_against_sc_stats(tmp_path: Path) -> None:
    ref, hyps = _mcnemar_45_66()
    expected = _run_sc_stats(tmp_path, ref, hyps)
    # sc_stats's flip = R * 0.5 turns an exact p of 0.057 into "<0.001" and a verdict.
    assert expected[("A", "B", "mcnemar")] == ("A", "<0.001")
    _check(tmp_path, ref, hyps)


def test_mcnemar_bug_case_exact_by_default() -> None:
    ref, hyps = _mcnemar_45_66()
    systems = {
        name: [
            UnitErrors.from_ops(
                utt, sclite_speaker(utt) or "", "CCC" if text == dict(ref)[utt] else "CSC"
            )
            for utt, text in lines
        ]
        for name, lines in hyps.items()
    }
    (exact,) = compare_error_rates({"A": systems["A"], "B": systems["B"]}, tests=["mcnemar"])
    want = 2 * sum(math.comb(111, k) for k in range(46)) / 2**111
    assert exact.p == pytest.approx(want, rel=1e-12)
    assert 0.056 < exact.p < 0.058
    assert exact.better is None and exact.statistic == 45
    (buggy,) = compare_error_rates(
        {"A": systems["A"], "B": systems["B"]}, tests=["mcnemar"], sc_stats=True
    )
    assert p_text(buggy.p) == "<0.001" and buggy.better == "A"


def test_sign_test_exact_past_twenty_speakers() -> None:
    # 25 speakers, A better on 18, B on 7: exact two-tailed p = 0.0433.
    systems: dict[str, list[UnitErrors]] = {"A": [], "B": []}
    for k in range(25):
        good, bad = "CCCC", "CSCC"
        a_ops, b_ops = (good, bad) if k < 18 else (bad, good)
        systems["A"].append(UnitErrors.from_ops(f"s{k}_1", f"s{k}", a_ops))
        systems["B"].append(UnitErrors.from_ops(f"s{k}_1", f"s{k}", b_ops))
    (sign,) = compare_error_rates(systems, tests=["sign"])
    want = 2 * sum(math.comb(25, k) for k in range(8)) / 2**25
    assert sign.p == pytest.approx(want, rel=1e-12)
    assert sign.better == "A"


def test_refuses_systems_on_other_utterances() -> None:
    a = [UnitErrors.from_ops("s_1", "s", "CC")]
    b = [UnitErrors.from_ops("s_2", "s", "CC")]
    with pytest.raises(ValueError, match="same references"):
        compare_error_rates({"a": a, "b": b})
    with pytest.raises(ValueError, match="unknown test"):
        compare_error_rates({"a": a, "b": a}, tests=["ttest"])  # type: ignore[list-item]


def _random_units(rng: random.Random, speakers: int, rate: float) -> list[UnitErrors]:
    """Units with random alignments, 1 to 3 utterances per speaker."""
    units = []
    for s in range(speakers):
        for u in range(rng.randint(1, 3)):
            ops = "".join(
                rng.choice("SDI") if rng.random() < rate else "C" for _ in range(rng.randint(2, 9))
            )
            units.append(UnitErrors.from_ops(f"s{s}_{u}", f"s{s}", ops))
    return units


@pytest.mark.parametrize("seed", range(6))
def test_default_p_values_are_exact(seed: int) -> None:
    # The default mode against scipy: exact binomial tails for McNemar and the sign
    # test (sc_stats's tie split kept), exact normal tails for the z-tests.
    from scipy import stats

    rng = random.Random(seed)
    speakers = rng.choice([5, 15, 25, 40])
    base = _random_units(rng, speakers, 0.2)
    systems = {"a": base}
    for name, wrong in (("b", "CCCS"), ("c", "CCCCCCSD")):
        # The utterances and reference lengths of `a`, other errors.
        systems[name] = [
            UnitErrors.from_ops(
                u.id, u.speaker, "".join(rng.choice(wrong) for _ in range(u.ref_words))
            )
            for u in base
        ]
    by_speaker = {
        name: {
            spk: 100.0
            * sum(u.errors for u in units if u.speaker == spk)
            / max(1, sum(u.ref_words for u in units if u.speaker == spk))
            for spk in dict.fromkeys(u.speaker for u in units)
        }
        for name, units in systems.items()
    }
    for t in compare_error_rates(systems):
        ua, ub = systems[t.a], systems[t.b]
        if t.test == "mcnemar":
            n10 = sum(1 for x, y in zip(ua, ub, strict=True) if x.errors and not y.errors)
            n01 = sum(1 for x, y in zip(ua, ub, strict=True) if y.errors and not x.errors)
            want = 1.0 if n10 == n01 else stats.binomtest(n10, n10 + n01).pvalue
            assert t.p == pytest.approx(want, rel=1e-9)
        elif t.test == "sign":
            # Differences taken from the system with the higher summed speaker rate,
            # whose N(-) gets the odd tie (sc_stats's orientation).
            hi, lo = (
                (t.a, t.b)
                if sum(by_speaker[t.a].values()) > sum(by_speaker[t.b].values())
                else (t.b, t.a)
            )
            diffs = [by_speaker[hi][s] - by_speaker[lo][s] for s in by_speaker[hi]]
            ties = sum(1 for d in diffs if abs(d) <= 0.005)
            plus = sum(1 for d in diffs if d > 0.005)
            n = len(diffs)
            k = min(plus + ties // 2, n - plus - ties // 2)
            want = 1.0 if 2 * k == n else stats.binomtest(k, n).pvalue
            assert t.p == pytest.approx(want, rel=1e-9)
        else:
            assert t.p == pytest.approx(2 * stats.norm.sf(abs(t.statistic)), rel=1e-9)
        assert (t.better is not None) == (t.p < 0.05)
