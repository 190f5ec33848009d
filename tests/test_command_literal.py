"""Command recognition: the normalised default, its warnings, and `--literal` against sclite.

`--literal` (a task's ``literal = true``) compares commands as sclite compares
sentences: its correct count must equal sclite's sentence-correct count (the
sys report's "# Snt" less "S.Err") on the same trn files, run by SCTK's sclite
itself. The default normalises full-width forms and spaces next to CJK
characters, and says in ``warnings`` which items that made correct.
"""

from __future__ import annotations

import json
import random
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from scoring.commands import literal_words, read_command_file, score_commands
from tests.helpers import FAKE_SERVE, make_testset, onsite, run_site, write_site

SCLITE = Path("/usr/lib/sctk/bin/sclite")
SUM = re.compile(r"^\s*\|\s*Sum\s*\|\s*(\d+)\s+(\d+)\s*\|(.*)\|\s*$")
SCORES = re.compile(r"^Scores: \(#C #S #D #I\) (\d+) (\d+) (\d+) (\d+)$")
ID = re.compile(r"^id: \((.*)\)$")

# (reference, hypothesis): Chinese with and without spaces, full-width letters and
# digits, U+3000, case (ASCII and not), sclite's blanks and non-blanks, `*`, empty.
HAND = [
    ("打开 文件", "打开文件"),
    ("打开文件", "打开 文件"),
    ("打开 文件", "打开 文件"),
    ("打开文件", "打开\u3000文件"),
    ("拨打 ABC", "拨打 ＡＢＣ"),
    ("OK", "ＯＫ"),
    ("call 110", "call １１０"),
    ("Call Home", "call home"),
    ("École", "école"),
    ("open  file", "open file"),
    ("open\tfile", "open file"),
    ("open\vfile", "open file"),
    ("open\x1cfile", "open file"),
    ("open\u00a0file", "open file"),
    ("foo* bar", "foo bar"),
    ("", ""),
    ("", "多余"),
    ("关闭", ""),
    ("关闭 屏幕", "关闭屏幕 "),
    ("音量 加", "音量 减"),
]

WORDS = ["打开", "文件", "关闭", "屏幕", "音量", "call", "Home", "OK", "ＯＫ", "１２", "12", "ab*"]
BLANKS = [" ", " ", "  ", "\t", "\u3000", "\v", "\f"]


def _random_pair(rng: random.Random) -> tuple[str, str]:
    words = [rng.choice(WORDS) for _ in range(rng.randint(1, 4))]

    def join(ws: list[str]) -> str:
        return "".join(w + (rng.choice(BLANKS) if rng.random() < 0.7 else "") for w in ws)

    ref = join(words)
    choice = rng.random()
    if choice < 0.5:
        hyp = join(words)  # the same words, other blanks (often equal after normalising)
    elif choice < 0.7:
        hyp = ref
    else:
        hyp = join([w if rng.random() < 0.7 else rng.choice(WORDS) for w in words])
    if rng.random() < 0.2:
        hyp = hyp.upper()
    return ref.strip(" "), hyp.strip(" ")


def _write_trn(path: Path, ids: list[str], texts: list[str]) -> None:
    path.write_bytes("".join(f"{t} ({u})\n" for u, t in zip(ids, texts, strict=True)).encode())


def _sclite(tmp: Path, case_sensitive: bool) -> tuple[int, int, set[str]]:
    """sclite's sentences, sentence errors (its sum report) and its correct ids (pralign)."""
    if not SCLITE.exists():
        pytest.fail("SCTK's sclite is not installed: run `make system-deps` (Debian package sctk)")
    options = ["-s"] if case_sensitive else []
    base = [str(SCLITE), "-r", "ref.trn", "trn", "-h", "hyp.trn", "trn", "-i", "spu_id"]
    out = subprocess.run(
        [*base, "-e", "utf-8", *options, "-o", "rsum", "pralign", "stdout"],
        cwd=tmp, capture_output=True, check=True,
    ).stdout.decode("utf-8", "replace")  # fmt: skip
    sums = [m for line in out.splitlines() if (m := SUM.match(line))]
    assert len(sums) == 1, out
    sentences = int(sums[0][1])
    sentence_errors = int(sums[0][3].split()[-1])
    correct: set[str] = set()
    current = None
    for line in out.splitlines():
        if m := ID.match(line):
            current = m[1]
        elif (m := SCORES.match(line)) and current is not None:
            if int(m[2]) + int(m[3]) + int(m[4]) == 0:
                correct.add(current)
    return sentences, sentence_errors, correct


def _check_against_sclite(
    tmp: Path, pairs: list[tuple[str, str]], case_sensitive: bool
) -> tuple[int, int]:
    """onsite's --literal correct count equals sclite's; (literal, default) counts."""
    ids = [f"spk_u{i:03d}" for i in range(len(pairs))]
    _write_trn(tmp / "ref.trn", ids, [p[0] for p in pairs])
    _write_trn(tmp / "hyp.trn", ids, [p[1] for p in pairs])
    sentences, errors, correct_ids = _sclite(tmp, case_sensitive)
    refs, hyps = read_command_file(tmp / "ref.trn"), read_command_file(tmp / "hyp.trn")
    literal = score_commands(refs, hyps, case_sensitive=case_sensitive, literal=True)
    assert sentences == literal.overall.commands == len(pairs)
    assert literal.overall.correct == sentences - errors
    assert set(ids) - set(literal.wrong_ids) == {u.lower() for u in correct_ids}
    assert literal.warnings == ()
    default = score_commands(refs, hyps, case_sensitive=case_sensitive)
    return literal.overall.correct, default.overall.correct


@pytest.mark.sctk
@pytest.mark.parametrize("case_sensitive", [False, True])
def test_literal_equals_sclite_on_hand_made_cases(tmp_path: Path, case_sensitive: bool) -> None:
    literal, default = _check_against_sclite(tmp_path, HAND, case_sensitive)
    assert literal < default, "the normalisation makes some commands correct"


@pytest.mark.sctk
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_literal_equals_sclite_on_random_commands(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    pairs = [_random_pair(rng) for _ in range(150)]
    _check_against_sclite(tmp_path, pairs, case_sensitive=seed == 3)


@pytest.mark.sctk
def test_cli_literal_gives_sclites_figure(tmp_path: Path) -> None:
    ids = [f"spk_u{i:03d}" for i in range(len(HAND))]
    _write_trn(tmp_path / "ref.trn", ids, [p[0] for p in HAND])
    _write_trn(tmp_path / "hyp.trn", ids, [p[1] for p in HAND])
    sentences, errors, _ = _sclite(tmp_path, case_sensitive=False)
    files = ("--ref", str(tmp_path / "ref.trn"), "--hyp", str(tmp_path / "hyp.trn"))
    proc = onsite("score", "command", *files, "--literal", "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["overall"]["correct"] == sentences - errors
    assert result["matching"] == "literal" and result["warnings"] == []
    proc = onsite("score", "command", *files, "--json")
    assert proc.returncode == 0, proc.stderr
    default = json.loads(proc.stdout)
    assert default["overall"]["correct"] > sentences - errors
    assert any("--literal" in w for w in default["warnings"])


def test_literal_words_are_sclites() -> None:
    assert literal_words("打开 文件") == ["打开", "文件"]
    assert literal_words("打开\u3000文件") == ["打开\u3000文件"], "U+3000 is part of a word"
    assert literal_words("ＯＫ Call") == ["ＯＫ", "call"], "full width kept, A-Z folded"
    assert literal_words("École", case_sensitive=True) == ["École"]
    assert literal_words("a\vb\fc") == ["a", "b", "c"]
    assert literal_words("foo* bar") == ["foo", "bar"]


def test_warnings_name_the_items_normalisation_made_correct() -> None:
    refs = {f"c{i}": "打开 文件" for i in range(8)} | {"ok": "OK", "star": "ab*", "same": "关闭"}
    hyps = {f"c{i}": "打开文件" for i in range(8)} | {"ok": "ＯＫ", "star": "ab", "same": "关闭"}
    report = score_commands(refs, hyps)
    assert report.overall.correct == 10
    right, wrong = report.warnings
    assert right.startswith("9 of 11 commands counted correct only after normalisation")
    assert "c0, c1, c2, c3, c4 and 4 more" in right
    assert "--literal" in right and "sclite" in right
    assert wrong.startswith("1 of 11 commands counted wrong that sclite counts correct")
    assert "star" in wrong
    literal = score_commands(refs, hyps, literal=True)
    assert literal.overall.correct == 2 and literal.warnings == ()
    assert literal.to_dict()["matching"] == "literal"
    # Nothing changed by the normalisation: no warning.
    assert score_commands({"a": "关闭"}, {"a": "关闭"}).warnings == ()


@pytest.mark.parametrize("literal", [False, True])
def test_a_command_task_with_literal_scores_as_sclite(
    tmp_path: Path, plan_env: Any, literal: bool
) -> None:
    testset = make_testset(
        tmp_path / "set", [("c1", 1600, "打开 文件"), ("c2", 3200, "OK"), ("c3", 4800, "关闭")]
    )
    env = plan_env({1600: {"text": "打开文件"}, 3200: {"text": "ＯＫ"}, 4800: {"text": "关闭"}})
    site = write_site(
        tmp_path / "site.toml",
        testset,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task="cmd",
        task_keys={"kind": "command", "literal": literal},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    [row] = json.loads(onsite("report", str(run_dir), "--json").stdout)
    assert row["correct_rate"] == pytest.approx(1 / 3 if literal else 1.0)
    again = onsite("score", "command", "--run", str(run_dir), "--json")
    assert again.returncode == 0, again.stderr
    scored = json.loads(again.stdout)
    assert scored["overall"]["correct_rate"] == row["correct_rate"]
    assert scored["matching"] == ("literal" if literal else "normalised")
    if literal:
        assert scored["warnings"] == []
    else:
        [note] = scored["warnings"]
        assert note.startswith("2 of 3 commands counted correct only after normalisation")
        assert "c1, c2" in note and "--literal" in note
