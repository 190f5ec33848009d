"""A CTM scored against an STM segment by segment, checked against SCTK's sclite itself.

sclite (``-h ctm -r stm stm``) gives each CTM word to the STM segment of its file
and channel whose end its middle has not reached (scoring/asr_stm.py says the rule
and where it comes from); onsite's `pair_ctm_stm` must give the same segments, the
same per-segment counts and so the same totals, speakers and files.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from scoring import score_asr
from scoring.asr_formats import read_ctm, read_stm, sclite_byte_warnings
from scoring.asr_stm import read_paired_ctm_stm
from scoring.errors import FormatError

SCLITE = Path("/usr/lib/sctk/bin/sclite")
_PRA = re.compile(
    r"^id: \((?P<id>[^)]*)\)\nFile: (?P<file>.*)\nChannel: (?P<chan>.*)\n"
    r"Scores: \(#C #S #D #I\) (\d+) (\d+) (\d+) (\d+)$",
    re.MULTILINE,
)

Counts = tuple[int, int, int, int]


@dataclass(frozen=True)
class Segmented:
    """Per-segment counts keyed by utterance id, with each segment's (file, channel)."""

    counts: dict[str, Counts]
    where: dict[str, tuple[str, str]]

    def totals(self) -> Counts:
        """Summed (C, S, D, I)."""
        rows = list(self.counts.values())
        return (
            sum(r[0] for r in rows),
            sum(r[1] for r in rows),
            sum(r[2] for r in rows),
            sum(r[3] for r in rows),
        )

    def by(self, key: str) -> dict[str, Counts]:
        """Summed counts per speaker (``key="speaker"``) or per file."""
        out: dict[str, list[int]] = {}
        for utt, row in self.counts.items():
            group = utt.rsplit("-", 1)[0] if key == "speaker" else self.where[utt][0]
            acc = out.setdefault(group, [0, 0, 0, 0])
            for k in range(4):
                acc[k] += row[k]
        return {g: (v[0], v[1], v[2], v[3]) for g, v in out.items()}


def _need_sclite() -> None:
    if not SCLITE.exists():
        pytest.fail("SCTK's sclite is not installed: run `make system-deps` (Debian package sctk)")


def sclite_segments(tmp: Path, ref: str = "ref.stm", hyp: str = "hyp.ctm") -> Segmented:
    """sclite's per-segment counts from its pralign report."""
    out = subprocess.run(
        [str(SCLITE), "-r", ref, "stm", "-h", hyp, "ctm", "-e", "utf-8", "-o", "pra", "stdout"],
        cwd=tmp, capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")  # fmt: skip
    counts: dict[str, Counts] = {}
    where: dict[str, tuple[str, str]] = {}
    for m in _PRA.finditer(out):
        counts[m["id"]] = (int(m[4]), int(m[5]), int(m[6]), int(m[7]))
        where[m["id"]] = (m["file"], m["chan"])
    return Segmented(counts, where)


def onsite_segments(tmp: Path, ref: str = "ref.stm", hyp: str = "hyp.ctm") -> Segmented:
    """onsite's per-segment counts: `pair_ctm_stm` then `score_asr`."""
    paired = read_paired_ctm_stm(tmp / ref, tmp / hyp)
    report = score_asr(paired.refs, paired.hyps)
    counts = {
        u.id: (u.correct, u.substitutions, u.deletions, u.insertions) for u in report.utterances
    }
    where = {k: (paired.files[k], paired.channels[k]) for k in paired.refs}
    return Segmented(counts, where)


def onsite_by_file_join(tmp: Path) -> Counts:
    """The totals of onsite's former pairing: each file's segments joined, all channels."""
    refs, hyps = read_stm(tmp / "ref.stm"), read_ctm(tmp / "hyp.ctm")
    total = score_asr(refs, {k: hyps.get(k, "") for k in refs}).overall
    return total.correct, total.substitutions, total.deletions, total.insertions


def write(tmp: Path, stm: str, ctm: str) -> None:
    (tmp / "ref.stm").write_text(stm, encoding="utf-8")
    (tmp / "hyp.ctm").write_text(ctm, encoding="utf-8")


def assert_as_sclite(tmp: Path) -> Segmented:
    theirs, ours = sclite_segments(tmp), onsite_segments(tmp)
    assert ours.counts == theirs.counts
    assert ours.where == theirs.where
    assert ours.by("speaker") == theirs.by("speaker")
    assert ours.by("file") == theirs.by("file")
    return theirs


# --- odd cases, each with what sclite does -------------------------------------------

CROSSING_STM = """\
f1 A s1 0.00 2.00 the cat sat
f1 A s2 2.00 4.00 on the mat
f1 A s1 4.00 6.00 and slept
"""
# A recognizer's times: "sat" runs 1.80-2.40 (middle 2.10: the second segment),
# "on" 1.95-2.05 (middle 2.00, equal to the end: not before it, so the second too).
CROSSING_CTM = """\
f1 A 0.10 0.50 the
f1 A 0.70 0.60 cat
f1 A 1.80 0.60 sat
f1 A 1.95 0.10 on
f1 A 2.50 0.30 the
f1 A 3.70 0.60 mat
f1 A 4.20 0.50 and
f1 A 5.90 0.40 slept
"""


@pytest.mark.sctk
def test_words_across_segment_edges_go_where_their_middle_is(tmp_path: Path) -> None:
    _need_sclite()
    write(tmp_path, CROSSING_STM, CROSSING_CTM)
    theirs = assert_as_sclite(tmp_path)
    # "mat" (middle 4.0) goes to the third segment, "slept" (6.1, past the end) too:
    # the last segment of a channel takes every word left.
    assert theirs.counts == {
        "s1-000": (2, 0, 1, 0),
        "s2-000": (2, 0, 1, 1),
        "s1-001": (2, 0, 0, 1),
    }
    # Joined per file, the same words align with no error at all.
    assert onsite_by_file_join(tmp_path) == (8, 0, 0, 0)


@pytest.mark.sctk
def test_words_in_gaps_go_to_the_next_segment(tmp_path: Path) -> None:
    _need_sclite()
    stm = "f1 A s1 1.0 2.0 a b\nf1 A s1 5.0 6.0 c d\n"
    # "x" before the first segment, "y" in the gap, "z" after the last.
    ctm = "f1 A 0.1 0.2 x\nf1 A 1.2 0.2 a\nf1 A 1.5 0.2 b\nf1 A 3.0 0.2 y\n"
    ctm += "f1 A 5.2 0.2 c\nf1 A 5.5 0.2 d\nf1 A 8.0 0.2 z\n"
    write(tmp_path, stm, ctm)
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {"s1-000": (2, 0, 0, 1), "s1-001": (2, 0, 0, 2)}


@pytest.mark.sctk
def test_two_channels_are_scored_apart(tmp_path: Path) -> None:
    _need_sclite()
    stm = "f1 A s1 0 5 a b c\nf1 B s2 0 5 x y z\n"
    # Channel B's words are earlier than A's: joined per file they would interleave.
    ctm = "f1 A 2.0 0.5 a\nf1 A 2.5 0.5 b\nf1 A 3.0 0.5 c\n"
    ctm += "f1 B 0.0 0.5 x\nf1 B 0.5 0.5 y\nf1 B 1.0 0.5 z\n"
    write(tmp_path, stm, ctm)
    theirs = assert_as_sclite(tmp_path)
    assert theirs.totals() == (6, 0, 0, 0)
    assert theirs.where == {"s1-000": ("f1", "a"), "s2-000": ("f1", "b")}
    assert onsite_by_file_join(tmp_path) != (6, 0, 0, 0)


@pytest.mark.sctk
def test_a_file_or_channel_missing_from_the_ctm_is_all_deletions(tmp_path: Path) -> None:
    _need_sclite()
    stm = "f1 A s1 0 5 a b\nf2 A s2 0 5 c d\nf2 B s3 0 5 e\nf3 A s1 0 5 g h\n"
    # No f2 at all; f3 has no channel B (nor does the STM); f1 fine.
    ctm = "f1 A 1 1 a\nf1 A 2 1 b\nf3 A 1 1 g\n"
    write(tmp_path, stm, ctm)
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {
        "s1-000": (2, 0, 0, 0),
        "s2-000": (0, 0, 2, 0),
        "s3-000": (0, 0, 1, 0),
        "s1-001": (1, 0, 1, 0),
    }


@pytest.mark.sctk
def test_an_empty_ctm_is_all_deletions(tmp_path: Path) -> None:
    _need_sclite()
    write(tmp_path, "f1 A s1 0 5 a b\nf2 A s2 0 5 c\n", "")
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {"s1-000": (0, 0, 2, 0), "s2-000": (0, 0, 1, 0)}


@pytest.mark.sctk
def test_a_missing_channel_of_a_two_channel_file(tmp_path: Path) -> None:
    _need_sclite()
    stm = "f1 A s1 0 5 a b\nf1 B s2 0 5 c d\n"
    write(tmp_path, stm, "f1 B 1 1 c\nf1 B 2 1 d\n")
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {"s1-000": (0, 0, 2, 0), "s2-000": (2, 0, 0, 0)}


@pytest.mark.sctk
def test_words_of_an_ignored_segment_are_dropped(tmp_path: Path) -> None:
    _need_sclite()
    stm = "f1 A s1 0 2 a b\nf1 A s1 2 4 <O> ignore_time_segment_in_scoring\nf1 A s2 4 6 c\n"
    # "noise" (middle 3.0) is in the ignored segment: neither scored nor an insertion.
    ctm = "f1 A 0.5 0.5 a\nf1 A 1.0 0.5 b\nf1 A 2.8 0.4 noise\nf1 A 4.5 0.5 c\n"
    write(tmp_path, stm, ctm)
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {"s1-000": (2, 0, 0, 0), "s2-000": (1, 0, 0, 0)}


@pytest.mark.sctk
def test_an_empty_segment_counts_its_words_as_insertions(tmp_path: Path) -> None:
    _need_sclite()
    stm = "f1 A s1 0 2\nf1 A s1 2 4 a\n"
    write(tmp_path, stm, "f1 A 0.5 0.5 uh\nf1 A 2.5 0.5 a\n")
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {"s1-000": (0, 0, 0, 1), "s1-001": (1, 0, 0, 0)}


@pytest.mark.sctk
def test_names_are_compared_without_case(tmp_path: Path) -> None:
    _need_sclite()
    write(tmp_path, "F1 A Spk 0 5 a b\n", "f1 a 1 1 a\nf1 a 2 1 b\n")
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {"spk-000": (2, 0, 0, 0)}


@pytest.mark.sctk
def test_a_middle_on_the_edge_falls_as_sclite_rounds_the_end(tmp_path: Path) -> None:
    # sclite keeps STM times in single precision: 4.88 is stored as 4.8800001, and
    # "f" (4.65 + 0.46 / 2, 4.880000000000001 in double) is before that end.
    _need_sclite()
    write(tmp_path, "f1 A s1 0 4.88 a f\nf1 A s1 4.88 9 b\n", "f1 A 4.65 0.46 f\nf1 A 5 1 b\n")
    theirs = assert_as_sclite(tmp_path)
    assert theirs.counts == {"s1-000": (1, 0, 1, 0), "s1-001": (1, 0, 0, 0)}


def test_words_on_a_channel_the_stm_lacks_are_refused(tmp_path: Path) -> None:
    write(tmp_path, "f1 A s1 0 5 a\n", "f1 A 1 1 a\nf1 B 1 1 b\n")
    with pytest.raises(FormatError, match=r"hyp.ctm:2: .*channel 'B' is not in"):
        read_paired_ctm_stm(tmp_path / "ref.stm", tmp_path / "hyp.ctm")


@pytest.mark.sctk
def test_unsorted_files_are_sorted_and_warned_about(tmp_path: Path) -> None:
    _need_sclite()
    write(tmp_path, CROSSING_STM, "".join(reversed(CROSSING_CTM.splitlines(keepends=True))))
    paired = read_paired_ctm_stm(tmp_path / "ref.stm", tmp_path / "hyp.ctm")
    assert len(paired.warnings) == 1
    assert "hyp.ctm: line 2 is out of order" in paired.warnings[0]
    assert "sort -k1,1 -k2,2 -k3,3n" in paired.warnings[0]
    ours = onsite_segments(tmp_path)
    (tmp_path / "sorted.ctm").write_text(CROSSING_CTM, encoding="utf-8")
    # onsite's figures are sclite's on the sorted file.
    assert ours.counts == sclite_segments(tmp_path, hyp="sorted.ctm").counts
    assert not read_paired_ctm_stm(tmp_path / "ref.stm", tmp_path / "sorted.ctm").warnings


# --- random cases -------------------------------------------------------------------

VOCAB = ["a", "b", "c", "d", "e", "f"]


def random_case(rng: random.Random) -> tuple[str, str]:
    """A sorted STM (files, one or two channels, gaps, ignored and empty segments) and a
    sorted CTM whose word times stray across segment edges and into gaps; some
    files and channels have no words."""
    stm: list[str] = []
    ctm: list[str] = []
    for f in range(rng.randint(1, 4)):
        for chan in rng.choice([["A"], ["A", "B"], ["1"]]):
            t = round(rng.uniform(0, 1), 2)
            words: list[tuple[float, float, str]] = []
            for _ in range(rng.randint(1, 5)):
                end = round(t + rng.uniform(0.5, 3), 2)
                roll = rng.random()
                if roll < 0.1:
                    text = "<O> IGNORE_TIME_SEGMENT_IN_SCORING"
                    ref: list[str] = []
                else:
                    ref = [rng.choice(VOCAB) for _ in range(rng.randint(0 if roll < 0.2 else 1, 6))]
                    text = " ".join(ref)
                stm.append(f"f{f} {chan} s{rng.randint(1, 3)} {t:.2f} {end:.2f} {text}".rstrip())
                said = [w if rng.random() < 0.7 else rng.choice(VOCAB) for w in ref]
                said += [rng.choice(VOCAB) for _ in range(rng.randint(0, 2))]
                for w in said:
                    begin = round(rng.uniform(t - 0.8, end + 0.8), 2)
                    words.append((max(begin, 0.0), round(rng.uniform(0.05, 0.9), 2), w))
                t = round(end + rng.choice([0.0, rng.uniform(0.01, 2)]), 2)
            if rng.random() < 0.15:
                continue  # no words for this channel
            for begin, dur, w in sorted(words):
                ctm.append(f"f{f} {chan} {begin:.2f} {dur:.2f} {w}")
    if not ctm:
        ctm.append("f0 " + stm[0].split()[1] + " 0.10 0.20 a")
    return "\n".join(stm) + "\n", "\n".join(ctm) + "\n"


def agreement(tmp: Path, cases: int, seed: int) -> tuple[int, int, int]:
    """(cases, cases whose totals the former per-file join gets right, cases where the
    segment pairing gives sclite's counts for every segment)."""
    rng = random.Random(seed)
    before = after = 0
    for _ in range(cases):
        write(tmp, *random_case(rng))
        theirs, ours = sclite_segments(tmp), onsite_segments(tmp)
        before += onsite_by_file_join(tmp) == theirs.totals()
        after += ours.counts == theirs.counts and ours.where == theirs.where
    return cases, before, after


@pytest.mark.sctk
def test_fifty_random_cases_as_sclite(tmp_path: Path) -> None:
    _need_sclite()
    rng = random.Random(30)
    for case in range(50):
        stm, ctm = random_case(rng)
        write(tmp_path, stm, ctm)
        theirs, ours = sclite_segments(tmp_path), onsite_segments(tmp_path)
        assert ours.counts == theirs.counts, (case, stm, ctm)
        assert ours.where == theirs.where, case
        assert ours.by("speaker") == theirs.by("speaker"), case
        assert ours.by("file") == theirs.by("file"), case
        assert not read_paired_ctm_stm(tmp_path / "ref.stm", tmp_path / "hyp.ctm").warnings


# --- the command line ---------------------------------------------------------------


def onsite_json(*args: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-m", "harness.cli", "score", "asr", *args, "--json"],
        capture_output=True, check=True, text=True,
    ).stdout  # fmt: skip
    result: dict[str, object] = json.loads(out)
    return result


@pytest.mark.sctk
def test_score_asr_pairs_an_stm_and_a_ctm_as_sclite(tmp_path: Path) -> None:
    _need_sclite()
    write(tmp_path, CROSSING_STM + "f1 B s3 0 3 x y\n", CROSSING_CTM + "f1 B 0.1 0.3 x\n")
    theirs = sclite_segments(tmp_path)
    got = onsite_json("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"))
    c, s, d, i = theirs.totals()
    assert (got["correct"], got["substitutions"], got["deletions"], got["insertions"]) == (
        c,
        s,
        d,
        i,
    )
    assert got["sentences"] == len(theirs.counts)
    by_speaker = got["by_speaker"]
    assert isinstance(by_speaker, dict)
    assert {
        k: (v["correct"], v["substitutions"], v["deletions"], v["insertions"])
        for k, v in by_speaker.items()
    } == theirs.by("speaker")
    utterances = got["utterances"]
    assert isinstance(utterances, list)
    assert {u["id"]: (u["file"], u["channel"]) for u in utterances} == theirs.where
    assert got["warnings"] == []


def test_conditions_label_the_stm_files(tmp_path: Path) -> None:
    write(tmp_path, "F1 A s1 0 5 a b\nf2 A s2 0 5 c\n", "f1 A 1 1 a\nf2 A 1 1 x\n")
    (tmp_path / "cond.tsv").write_text("F1\tquiet\nf2\tnoisy\n", encoding="utf-8")
    got = onsite_json(
        "--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"),
        "--conditions", str(tmp_path / "cond.tsv"),
    )  # fmt: skip
    by_condition = got["by_condition"]
    assert isinstance(by_condition, dict)
    assert {k: v["wer"] for k, v in by_condition.items()} == {"noisy": 1.0, "quiet": 0.5}
    assert got["by_file"] == {"f1": by_condition["quiet"], "f2": by_condition["noisy"]}


# --- bytes sclite keeps: CR and BOM -----------------------------------------------------


@pytest.mark.sctk
def test_crlf_ctm_is_warned_about_and_scored_as_with_lf(tmp_path: Path) -> None:
    _need_sclite()
    stm = "f1 A s1 0 5 a b c\n"
    lf = "f1 A 1 1 a\nf1 A 2 1 b 0.9\nf1 A 3 1 c\n"
    write(tmp_path, stm, lf.replace("\n", "\r\n"))
    (tmp_path / "lf.ctm").write_text(lf, encoding="utf-8")
    # sclite keeps the CR in the word of a five-field line: `a\r` and `c\r` are errors.
    assert sclite_segments(tmp_path).counts == {"s1-000": (1, 2, 0, 0)}
    assert sclite_segments(tmp_path, hyp="lf.ctm").counts == {"s1-000": (3, 0, 0, 0)}
    assert onsite_segments(tmp_path).counts == {"s1-000": (3, 0, 0, 0)}
    got = onsite_json("--ref", str(tmp_path / "ref.stm"), "--hyp", str(tmp_path / "hyp.ctm"))
    warnings = got["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 1
    assert "hyp.ctm: 2 line(s) end in CR LF after the word (first: line 1)" in warnings[0]
    assert "count the last word of each such line as a different word" in warnings[0]
    assert "LF line ends" in warnings[0]
    assert sclite_byte_warnings(tmp_path / "lf.ctm", "ctm") == []


@pytest.mark.sctk
def test_crlf_stm_and_trn_need_no_warning(tmp_path: Path) -> None:
    # sclite splits trn and STM text at a CR as at a space: same figures either way.
    _need_sclite()
    write(tmp_path, "f1 A s1 0 5 a b\r\n", "f1 A 1 1 a\nf1 A 2 1 b\n")
    assert sclite_segments(tmp_path).counts == {"s1-000": (2, 0, 0, 0)}
    assert sclite_byte_warnings(tmp_path / "ref.stm", "stm") == []
    (tmp_path / "ref.trn").write_bytes(b"a b (u1)\r\n")
    assert sclite_byte_warnings(tmp_path / "ref.trn", "trn") == []


@pytest.mark.sctk
def test_bom_is_warned_about(tmp_path: Path) -> None:
    _need_sclite()
    (tmp_path / "ref.trn").write_bytes(b"\xef\xbb\xbfa b (spk1_u1)\nc (spk1_u2)\n")
    (tmp_path / "hyp.trn").write_bytes(b"a b (spk1_u1)\nc (spk1_u2)\n")
    out = subprocess.run(
        [str(SCLITE), "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id",
         "-o", "pra", "stdout"],
        cwd=tmp_path, capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")  # fmt: skip
    # sclite: the BOM is part of the first word, a substitution.
    assert "Scores: (#C #S #D #I) 1 1 0 0" in out
    got = onsite_json("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"))
    assert got["substitutions"] == 0
    warnings = got["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 1
    assert "ref.trn: starts with a byte-order mark" in warnings[0]
    assert "first word of line 1" in warnings[0]
    # A Kaldi text file is not sclite's: no warning.
    (tmp_path / "ref.txt").write_bytes(b"\xef\xbb\xbfu1 a b\n")
    assert sclite_byte_warnings(tmp_path / "ref.txt", "trn") == []
    write(tmp_path, "\ufefff1 A s1 0 5 a\n", "f1 A 1 1 a\n")
    (warning,) = sclite_byte_warnings(tmp_path / "ref.stm", "stm")
    assert "file name on line 1" in warning


def _agreement_table(cases: Sequence[int] = (50,)) -> None:
    """Print how many random cases agree with sclite before and after (run by hand)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for n in cases:
            print(agreement(Path(tmp), n, 30))


if __name__ == "__main__":
    _agreement_table()


def test_an_interval_and_a_comparison_pair_an_stm_and_a_ctm_as_the_score_does(
    tmp_path: Path,
) -> None:
    """`--ci` and `onsite compare asr` read the pair as `onsite score asr` does: segment
    by segment (they read it by utterance id before, and refused it)."""
    write(tmp_path, CROSSING_STM + "f1 B s3 0 3 x y\n", CROSSING_CTM + "f1 B 0.1 0.3 x\n")
    other = tmp_path / "other.ctm"
    other.write_text(CROSSING_CTM.replace(" cat\n", " dog\n") + "f1 B 0.1 0.3 x\n", "utf-8")
    ref, hyp = str(tmp_path / "ref.stm"), str(tmp_path / "hyp.ctm")
    got = onsite_json("--ref", ref, "--hyp", hyp, "--ci", "--samples", "200")
    interval = got["interval"]
    assert isinstance(interval, dict)
    assert interval["ci_low"] <= got["wer"] <= interval["ci_high"]
    compared = subprocess.run(
        [sys.executable, "-m", "harness.cli", "compare", "asr", "--ref", ref, "--hyp", hyp]
        + ["--hyp", str(other)]
        + ["--test", "bootstrap", "--samples", "200", "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    systems = {s["system"]: s["score"] for s in json.loads(compared.stdout)["systems"]}
    assert systems[hyp] == pytest.approx(got["wer"])
    # The second system has one more substitution ("dog" for "cat") over the same words.
    assert systems[str(other)] == pytest.approx(got["wer"] + 1 / got["n_ref"])
