"""Which blanks separate words: sclite's (C isspace), checked against SCTK's sclite itself.

sclite splits at space, tab, vertical tab, form feed and carriage return and
nowhere else: \\x1c-\\x1f (which Python's str.split takes for blanks), NBSP and
U+3000 are characters of a word. onsite's default tokens follow it, in word
units and in character units (sclite ``-c NOASCII``).
"""

from __future__ import annotations

import random
import re
import subprocess
from pathlib import Path

import pytest

from scoring import align, read_transcripts
from scoring.asr_align import tokenize
from scoring.asr_formats import read_ctm, read_stm

SCLITE = Path("/usr/lib/sctk/bin/sclite")
SCORES = re.compile(r"^Scores: \(#C #S #D #I\) (\d+) (\d+) (\d+) (\d+)$")
BLANKS = [" ", "\t", "\v", "\f", "\r", "\x1c", "\x1f", "\u00a0", "\u3000"]
WORDS = ["ab", "cd", "x", "yz", "中", "文字", "é"]


def test_vertical_tab_and_form_feed_separate_words() -> None:
    assert tokenize("a\vb\fc d") == ["a", "b", "c", "d"]
    assert tokenize("x\x1cy\u00a0z") == ["x\x1cy\u00a0z"]
    assert tokenize("ab\vcd中\f文", unit="char") == ["ab", "cd", "中", "文"]


def _utterance(rng: random.Random) -> str:
    out = rng.choice(WORDS)
    for _ in range(rng.randint(0, 6)):
        out += rng.choice(BLANKS) + rng.choice(WORDS)
    return out


def _sclite_counts(tmp: Path, unit: str) -> list[tuple[int, int, int, int]]:
    options = ["-e", "utf-8"] + (["-c", "NOASCII"] if unit == "char" else [])
    out = subprocess.run(
        [str(SCLITE), "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id",
         *options, "-o", "pralign", "stdout"],
        cwd=tmp, capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")  # fmt: skip
    return [
        (int(m[1]), int(m[2]), int(m[3]), int(m[4]))
        for line in out.splitlines()
        if (m := SCORES.match(line))
    ]


@pytest.mark.sctk
@pytest.mark.parametrize("unit", ["word", "char"])
def test_random_blanks_as_sclite_counts_them(tmp_path: Path, unit: str) -> None:
    if not SCLITE.exists():
        pytest.fail("SCTK's sclite is not installed: run `make system-deps` (Debian package sctk)")
    rng = random.Random(4)
    pairs = [(_utterance(rng), _utterance(rng)) for _ in range(60)]
    # Utterance ids in sclite's sorted order: its report comes in that order.
    ids = [f"spk1_u{i:03d}" for i in range(len(pairs))]
    for name, column in (("ref.trn", 0), ("hyp.trn", 1)):
        text = "".join(f"{p[column]} ({u})\n" for u, p in zip(ids, pairs, strict=True))
        (tmp_path / name).write_bytes(text.encode("utf-8"))
    theirs = _sclite_counts(tmp_path, unit)
    refs = read_transcripts(tmp_path / "ref.trn")
    hyps = read_transcripts(tmp_path / "hyp.trn")
    ours = []
    for utt in ids:
        a = align(tokenize(refs[utt], unit), tokenize(hyps[utt], unit))
        ours.append((a.correct, a.substitutions, a.deletions, a.insertions))
    assert len(theirs) == len(ids)
    assert ours == theirs


CTM_WORDS = ["ab", "x\u00a0y", "p\x1cq", "中文", "é", "cd"]


@pytest.mark.sctk
def test_ctm_fields_split_at_spaces_and_tabs_only(tmp_path: Path) -> None:
    # sclite splits a CTM line at spaces and tabs: a word keeps its NBSP or \x1c.
    if not SCLITE.exists():
        pytest.fail("SCTK's sclite is not installed: run `make system-deps` (Debian package sctk)")
    rng = random.Random(7)
    stm, ctm, files = [], [], []
    for f in range(20):
        name = f"f{f:02d}"
        files.append(name)
        ref = [rng.choice(CTM_WORDS) for _ in range(rng.randint(1, 6))]
        hyp = [rng.choice(CTM_WORDS) for _ in range(rng.randint(1, 6))]
        stm.append(f"{name} 1 spk{f:02d} 0.0 100.0 {' '.join(ref)}\n")
        for i, word in enumerate(hyp):
            gap = rng.choice([" ", "\t", " \t "])
            ctm.append(gap.join([name, "1", f"{i}.0", "1.0", word]) + "\n")
    (tmp_path / "ref.stm").write_bytes("".join(stm).encode("utf-8"))
    (tmp_path / "hyp.ctm").write_bytes("".join(ctm).encode("utf-8"))
    out = subprocess.run(
        [str(SCLITE), "-r", "ref.stm", "stm", "-h", "hyp.ctm", "ctm", "-e", "utf-8",
         "-o", "pralign", "stdout"],
        cwd=tmp_path, capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")  # fmt: skip
    theirs = [tuple(map(int, m.groups())) for line in out.splitlines() if (m := SCORES.match(line))]
    refs, hyps = read_stm(tmp_path / "ref.stm"), read_ctm(tmp_path / "hyp.ctm")
    ours = []
    for name in files:
        a = align(tokenize(refs[name]), tokenize(hyps.get(name, "")))
        ours.append((a.correct, a.substitutions, a.deletions, a.insertions))
    assert len(theirs) == len(files)
    assert [sum(c) for c in zip(*ours, strict=True)] == [sum(c) for c in zip(*theirs, strict=True)]
    assert sorted(ours) == sorted(theirs)
