"""Edge inputs where the scorers must give the reference tools' numbers (issue 13).

Each reproduction asserts the reference tool's counts, worked out from its
documented behaviour and source, in the default mode, and the documented
alternative where onsite offers one. The differential tests at the end run
small random cases against the models in tests/reference_models.py (the
real GNU diff for the SIGHAN script); benchmarks/scoring_differential.py
runs the same comparisons at scale.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from scoring import score_asr
from scoring.cws import score_cws_files
from scoring.errors import FormatError
from scoring.gnu_diff import changed_lines, render_sdiff_row, sdiff_rows
from scoring.mt import as_sgml_text
from scoring.mt_files import score_mt_files
from scoring.ner import read_conll, score_ner, score_ner_file
from tests.reference_models import (
    HAVE_DIFF,
    ScriptDied,
    conlleval_counts,
    mteval_bleu,
    mteval_nist,
    mteval_tokens,
    sclite_counts,
    sgml_escape,
    sighan_score,
)

ROOT = Path(__file__).resolve().parents[1]
needs_diff = pytest.mark.skipif(not HAVE_DIFF, reason="needs GNU diff and the C.UTF-8 locale")


def _asr(ref: str, hyp: str, unit: str = "word", **kw: bool) -> tuple[int, int, int, int]:
    o = score_asr({"u_1": ref}, {"u_1": hyp}, unit=unit, **kw).overall  # type: ignore[arg-type]
    return o.correct, o.substitutions, o.deletions, o.insertions


def _onsite(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "harness.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
    )


# --- ASR (sclite 2.10, -e utf-8, -c NOASCII for characters) -----------------


@pytest.mark.parametrize(
    ("ref", "hyp", "unit", "sclite", "unicode"),
    [
        ("École", "école", "word", (0, 1, 0, 0), (1, 0, 0, 0)),  # A-Z folding only
        ("Ａ", "ａ", "char", (0, 1, 0, 0), (1, 0, 0, 0)),
        ("a b", "a\u00a0b", "word", (0, 1, 1, 0), (2, 0, 0, 0)),  # space and tab only
        ("a b", "a\u3000b", "word", (0, 1, 1, 0), (2, 0, 0, 0)),
        ("a b", "a\x1cb", "word", (0, 1, 1, 0), (2, 0, 0, 0)),
        ("好 好", "好\u3000好", "char", (2, 0, 0, 1), (2, 0, 0, 0)),  # U+3000 is a token
        ("café", "cafe", "char", (0, 1, 1, 0), (0, 1, 0, 0)),  # caf + é
        ("a😀b", "a b", "char", (2, 0, 1, 0), (0, 1, 0, 1)),
        ("foo*", "foo", "word", (1, 0, 0, 0), (0, 1, 0, 0)),  # new_WORD drops one *
    ],
)
def test_asr_edges(
    ref: str, hyp: str, unit: str, sclite: tuple[int, ...], unicode: tuple[int, ...]
) -> None:
    assert _asr(ref, hyp, unit) == sclite == sclite_counts(ref, hyp, unit)
    assert _asr(ref, hyp, unit, unicode=True) == unicode


def test_asr_trn_keeps_unicode_blanks_at_the_ends(tmp_path: Path) -> None:
    ref, hyp = tmp_path / "ref.trn", tmp_path / "hyp.trn"
    ref.write_text("a b (u_1)\n", encoding="utf-8")
    hyp.write_text("\u00a0 a b (u_1)\n", encoding="utf-8")  # NBSP is a word to sclite
    out = _onsite("score", "asr", "--ref", str(ref), "--hyp", str(hyp), "--json")
    assert out.returncode == 0, out.stderr
    assert '"insertions": 1' in out.stdout
    out = _onsite("score", "asr", "--ref", str(ref), "--hyp", str(hyp), "--unicode", "--json")
    assert '"insertions": 0' in out.stdout


# --- MT (mteval-v13a -c) -----------------------------------------------------


def _mt(tmp_path: Path, hyp: str, ref: str) -> dict[str, float]:
    h, r = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    h.write_text(hyp, encoding="utf-8")
    r.write_text(ref, encoding="utf-8")
    return score_mt_files(h, [r])


def test_mt_plain_text_is_literal(tmp_path: Path) -> None:
    d = _mt(tmp_path, "a & b c\n", "a &amp; b c\n")
    assert (round(d["bleu"], 3), round(d["nist"], 3)) == (0.274, 1.292)
    d = _mt(tmp_path, "a b c d\n", "a <skipped> b c d\n")
    assert (round(d["bleu"], 3), round(d["nist"], 3)) == (0.302, 0.750)
    # A literal &lt; reads as < through mteval's one-entity-after-another decoding.
    assert _mt(tmp_path, "&lt;\n", "<\n")["bleu"] == 1.0


def _xml(kind: str, seg: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<{kind} setid="s" srclang="zh" trglang="en">'
        f'<doc docid="d" sysid="x"><seg id="1">{seg}</seg></doc></{kind}>\n'
    )


def test_mt_xml_is_decoded_once(tmp_path: Path) -> None:
    h, r = tmp_path / "hyp.xml", tmp_path / "ref.xml"
    # mteval reads &amp;amp; raw and decodes once: the text is "&amp;", not "&".
    h.write_text(_xml("tstset", "a &amp; b c"), encoding="utf-8")
    r.write_text(_xml("refset", "a &amp;amp; b c"), encoding="utf-8")
    d = score_mt_files(h, [r])
    assert (round(d["bleu"], 3), round(d["nist"], 3)) == (0.274, 1.292)


def test_mt_form_feed_in_xml_is_text(tmp_path: Path) -> None:
    h, r = tmp_path / "hyp.xml", tmp_path / "ref.xml"
    h.write_text(_xml("tstset", "a \x0c b"), encoding="utf-8")
    r.write_text(_xml("refset", "a b"), encoding="utf-8")
    assert score_mt_files(h, [r])["bleu"] == 1.0  # \f is whitespace to mteval


def test_mt_plain_text_starting_like_markup(tmp_path: Path) -> None:
    for first in ("<!-- a b\n", "<tstset a b\n"):
        d = _mt(tmp_path, first, first)
        assert d["format"] == "plain" and d["bleu"] == 1.0
    h, r = tmp_path / "h.xml", tmp_path / "r.txt"
    h.write_text('<tstset><doc docid="d"><seg id="1">a</seg></doc>\n', encoding="utf-8")
    r.write_text("a\n", encoding="utf-8")
    with pytest.raises(FormatError, match="malformed XML"):
        score_mt_files(h, [r])  # markup with segments is XML, broken or not


def test_mt_where_mteval_dies(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only empty references"):
        _mt(tmp_path, "a b\n", "\n")
    d = _mt(tmp_path, "\n", "a b\n")
    assert (d["bleu"], d["nist"]) == (0.0, 0.0)
    # Only Moses's copy of mteval-v13a.pl dies there (docs/scoring-mt.md); NIST's gives 0, 0.
    assert "log of 0" in d["warnings"][0] and "Moses" in d["warnings"][0]
    assert "NIST's mteval-v13a.pl reports BLEU 0 and NIST 0" in d["warnings"][0]


def test_mt_takes_any_number_of_references(tmp_path: Path) -> None:
    h = tmp_path / "hyp.txt"
    h.write_text("a b\n", encoding="utf-8")
    refs = []
    for k in range(5):
        refs.append(tmp_path / f"ref{k}.txt")
        refs[-1].write_text("a b\n", encoding="utf-8")
    assert score_mt_files(h, refs)["n_refs"] == 5
    out = _onsite("score", "mt", "--help")
    assert "1 to 4" not in out.stdout and "any number" in out.stdout


# --- word segmentation (SIGHAN score + GNU diff 3.8) ---------------------------


def _cws(tmp_path: Path, gold: bytes, test: bytes, words: bytes | None = None, **kw: Any):
    g, t = tmp_path / "gold", tmp_path / "test"
    g.write_bytes(gold)
    t.write_bytes(test)
    w = None
    if words is not None:
        w = tmp_path / "words"
        w.write_bytes(words)
    return score_cws_files(g, t, w, **kw)


def test_cws_counts_follow_diffs_choice(tmp_path: Path) -> None:
    d = _cws(tmp_path, b"a b b\n", b"b a\n")
    assert (d["insertions"], d["deletions"], d["substitutions"], d["matched"]) == (1, 2, 0, 1)
    d = _cws(tmp_path, b"a b b\n", b"b a\n", lcs=True)
    assert (d["insertions"], d["deletions"], d["substitutions"], d["matched"]) == (0, 1, 1, 1)


def test_cws_confusing_lines_are_discarded_as_diff_does(tmp_path: Path) -> None:
    gold = "z 的的 的的 的的 的的 的的 的的\n".encode()
    test = "z b的 的a的 的的的 的的 的 的aba的 的\n".encode()
    d = _cws(tmp_path, gold, test)
    assert (round(d["recall"], 4), round(d["precision"], 4)) == (0.1429, 0.125)
    d = _cws(tmp_path, gold, test, lcs=True)
    assert (round(d["recall"], 4), round(d["precision"], 4)) == (0.2857, 0.25)


def test_cws_script_quirks(tmp_path: Path) -> None:
    gold, test, words = "我们 好\n".encode(), "\u3000我们 好\n".encode(), "好\n我们".encode()
    d = _cws(tmp_path, gold, test, words)
    assert (d["test_words"], d["oov_rate"]) == (2, 0.0)
    assert any("U+3000" in w for w in d["warnings"]) and any("chop" in w for w in d["warnings"])
    q = _cws(tmp_path, gold, test, words, script_quirks=True)
    assert (q["test_words"], q["oov_rate"], q["precision"]) == (3, 0.5, 1.0)


def test_cws_marker_words_count_as_the_script_reads_them(tmp_path: Path) -> None:
    d = _cws(tmp_path, b"| a\n", b"| a\n")
    # The matched row `|<tabs>|` holds " | ": a substitution and a missed gold word.
    assert (d["substitutions"], d["matched"], d["test_matched"]) == (1, 1, 2)
    if HAVE_DIFF:
        want = sighan_score(b"| a\n", b"| a\n")
        assert (want["subst"], want["rr"], want["rp"]) == (1, 1, 2)


def test_cws_ideographic_space_in_gb18030_is_part_of_a_word(tmp_path: Path) -> None:
    gold, test = "我们\u3000好 人\n", "我们 好 人\n"
    d = _cws(tmp_path, gold.encode(), test.encode())
    assert (d["gold_words"], d["matched"]) == (3, 3)
    g = _cws(tmp_path, gold.encode("gb18030"), test.encode("gb18030"), encoding="gb18030")
    assert (g["gold_words"], g["matched"]) == (2, 1)  # the script keeps A1 A1 inside the word
    if HAVE_DIFF:
        want = sighan_score(gold.encode("gb18030"), test.encode("gb18030"))
        assert (want["true"], want["rr"]) == (2, 1)


def test_cws_words_at_diffs_column_limit(tmp_path: Path) -> None:
    # A 61-column gold word leaves one blank before the marker: the script's
    # "missed" pattern needs two, so the changed word counts as recognised.
    gold, test = b"x" * 61 + b" a\n", b"y a\n"
    d = _cws(tmp_path, gold, test)
    assert (d["substitutions"], d["matched"], d["test_matched"]) == (1, 2, 1)
    assert _cws(tmp_path, b"x" * 60 + b" a\n", test)["matched"] == 1
    if HAVE_DIFF:
        want = sighan_score(gold, test)
        assert (want["subst"], want["rr"], want["rp"]) == (1, 2, 1)


@pytest.mark.parametrize(("gold", "test"), [(b"", b""), (b"\n\n", b"\n\n"), (b"a b\n", b"\n")])
def test_cws_files_without_words_are_refused(tmp_path: Path, gold: bytes, test: bytes) -> None:
    with pytest.raises(FormatError, match="holds no words"):
        _cws(tmp_path, gold, test)


# --- NER (conlleval) -----------------------------------------------------------


def test_ner_type_zero_counts_like_conlleval(tmp_path: Path) -> None:
    lines = ["a B-0 B-0", "b I-0 I-0", "c O B-PER"]
    gold, pred = [[ln.split()[1] for ln in lines]], [[ln.split()[2] for ln in lines]]
    s = score_ner(gold, pred).to_dict()
    want = conlleval_counts(lines)
    assert (s["correct_chunks"], s["gold_chunks"], s["predicted_chunks"]) == (1, 1, 2)
    assert (want["correct"], want["gold"], want["predicted"]) == (1, 1, 2)
    assert "0" in s["per_type"] and "" in want["per_type"]  # conlleval's key is ""


def test_ner_empty_file_and_encoding_hints(tmp_path: Path) -> None:
    empty = tmp_path / "empty.conll"
    empty.write_bytes(b"\n\n")
    with pytest.raises(FormatError, match="no token lines"):
        score_ner_file(empty)
    # No Chinese encoding reads Latin-1 plausibly: the hint names none (the old
    # `iconv -f LATIN1` hint garbled Big5 files) and lists what --encoding takes.
    latin = tmp_path / "latin.conll"
    latin.write_bytes("José B-PER B-PER\n".encode("latin-1"))
    with pytest.raises(FormatError, match=r"name its encoding with `--encoding` \(one of utf-8"):
        read_conll(latin)
    gb = tmp_path / "gb.conll"
    gb.write_bytes("中国人民 B-LOC B-LOC\n".encode("gb18030"))
    with pytest.raises(FormatError, match="it reads as gbk; read it with `--encoding gbk`"):
        read_conll(gb)
    assert read_conll(gb, "gbk") == ([["B-LOC"]], [["B-LOC"]])


# --- odd inputs through the CLI -------------------------------------------------


def test_missing_file_and_directory_get_a_hint(tmp_path: Path) -> None:
    out = _onsite("score", "cws", "--gold", str(tmp_path / "nope"), "--test", str(tmp_path))
    assert out.returncode == 2 and "no such file; check the path" in out.stderr
    (tmp_path / "g").write_text("a\n", encoding="utf-8")
    out = _onsite("score", "cws", "--gold", str(tmp_path / "g"), "--test", str(tmp_path))
    assert out.returncode == 2 and "is a directory; give the file inside it" in out.stderr
    out = _onsite("score", "mt", "--hyp", str(tmp_path), "--ref", str(tmp_path / "g"))
    assert out.returncode == 2 and "is a directory" in out.stderr
    assert "Traceback" not in out.stderr


# --- differential tests (small; the benchmark runs them large) ---------------


def _random_words(rng: random.Random, pool: list[str], n: int) -> list[str]:
    return [rng.choice(pool) for _ in range(n)]


@needs_diff
def test_gnu_diff_model_equals_diff_y(tmp_path: Path) -> None:
    rng = random.Random(13)
    pool = [b"a", b"b", "的".encode(), "的的".encode(), b"|", b"", b"x" * 70, "中".encode() * 35]
    env = {**os.environ, "LC_ALL": "C.UTF-8"}
    for _ in range(60):
        vocab = rng.sample(pool, rng.randint(1, len(pool)))
        a = [rng.choice(vocab) for _ in range(rng.randint(0, rng.choice([5, 30, 120])))]
        b = [rng.choice(vocab) for _ in range(rng.randint(0, rng.choice([5, 30, 120])))]
        (tmp_path / "a").write_bytes(b"".join(w + b"\n" for w in a))
        (tmp_path / "b").write_bytes(b"".join(w + b"\n" for w in b))
        real = subprocess.run(
            ["diff", "-y", str(tmp_path / "a"), str(tmp_path / "b")], capture_output=True, env=env
        ).stdout
        rows = sdiff_rows(a, b)
        mine = b"".join(
            render_sdiff_row(
                r.marker,
                None if r.left is None else a[r.left],
                None if r.right is None else b[r.right],
            )
            for r in rows
        )
        assert mine == real, (a, b)
        ca, cb = changed_lines(a, b)
        assert len(ca) == len(a) and len(cb) == len(b)


_CWS_POOL = ["的", "的的", "我们", "中国", "人民", "a", "ab", "é", "好", "|", ">", "x" * 65]
_CWS_POOL += ["乡@好", "¡@"]  # bytes A1 40: the script's Big5 space, inside UTF-8
_SEPS = [" ", " ", " ", "\u3000", "\t", "\u00a0"]


def _cws_text(rng: random.Random, lines: int, leading_ideographic_space: bool) -> str:
    out = []
    for _ in range(lines):
        words = _random_words(rng, _CWS_POOL[: rng.randint(2, len(_CWS_POOL))], rng.randint(1, 12))
        text = "".join(w + rng.choice(_SEPS) for w in words).rstrip(" \t")
        if leading_ideographic_space and rng.random() < 0.3:
            text = "\u3000" + text
        out.append(text)
    return "\n".join(out) + "\n"


def cws_differential_case(rng: random.Random, tmp: Path, lines: int) -> None:
    """One random CWS case: onsite (both quirk settings) against the script model."""
    quirky = rng.random() < 0.5
    gold = _cws_text(rng, lines, quirky).encode()
    test = _cws_text(rng, lines, quirky).encode()
    words = "\n".join(rng.sample(_CWS_POOL, 6)) + ("" if quirky and rng.random() < 0.5 else "\n")
    try:
        want = sighan_score(gold, test, words.encode())
    except ScriptDied:
        return
    got = _cws(tmp, gold, test, words.encode(), script_quirks=quirky)
    assert got["recall"] == pytest.approx(want["recall"], abs=1e-12)
    assert got["precision"] == pytest.approx(want["precision"], abs=1e-12)
    assert (got["insertions"], got["deletions"], got["substitutions"]) == (
        want["ins"],
        want["del"],
        want["subst"],
    )
    assert (got["oov_words"], got["iv_words"]) == (want["oov"], want["iv"])
    assert got["oov_words"] - got["oov_matched"] == want["oov_missed"]
    assert got["iv_words"] - got["iv_matched"] == want["iv_missed"]


def test_cws_row_shortcut_counts_as_the_rendered_rows() -> None:
    from scoring.cws import _script_line

    rng = random.Random(7)
    pool = ["的", "的的", "我们", "a", "ab", "é", "x" * 61, "中" * 20]
    for _ in range(300):
        vocab = rng.sample(pool, rng.randint(1, len(pool)))
        g = _random_words(rng, vocab, rng.randint(1, 30))
        t = _random_words(rng, vocab, rng.randint(1, 30))
        words = set(rng.sample(pool, 3))
        assert _script_line(g, t, words, "utf-8") == _script_line(g, t, words, "utf-8", False)
        # An empty answer and a perfect one skip the diff altogether: the same counts.
        for same in ([], list(g)):
            for known in (words, None):
                got = _script_line(g, same, known, "utf-8")
                assert got == _script_line(g, same, known, "utf-8", False)


@needs_diff
def test_cws_equals_the_script_with_real_diff(tmp_path: Path) -> None:
    rng = random.Random(2003)
    for _ in range(25):
        cws_differential_case(rng, tmp_path, rng.randint(1, 4))


def asr_differential_case(rng: random.Random) -> None:
    """One random utterance: onsite's default tokens and alignment against sclite's model."""
    pieces = ["a", "B", "É", "é", "中", "文", " ", "\t", "\u00a0", "\u3000", "\x1c", "*", "😀"]
    pieces.append("Ａ")

    def text() -> str:
        return "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))

    ref, hyp = text(), text()
    for unit in ("word", "char"):
        assert _asr(ref, hyp, unit) == sclite_counts(ref, hyp, unit), (ref, hyp, unit)


def test_asr_equals_sclite_model_on_random_text() -> None:
    rng = random.Random(10)
    for _ in range(300):
        asr_differential_case(rng)


_MT_WORDS = ["a", "b", "the", "&", "&amp;", "&lt;", "<skipped>", "<", ">", '"', "café", "3.5"]


def mt_differential_case(rng: random.Random, tmp: Path, segments: int) -> None:
    """Random plain-text MT files: onsite against sacrebleu (BLEU) and the NIST model."""
    sacrebleu = pytest.importorskip("sacrebleu")

    def sent() -> str:
        words = [rng.choice(_MT_WORDS) for _ in range(rng.randint(1, 10))]
        return "".join(w + rng.choice([" ", " ", "\u00a0", "\u3000", "\u2003"]) for w in words)

    hyps = [sent() for _ in range(segments)]
    refs = [[sent() for _ in range(segments)] for _ in range(rng.randint(1, 3))]
    h = tmp / "hyp.txt"
    h.write_text("".join(x + "\n" for x in hyps), encoding="utf-8")
    ref_files = []
    for k, ref_set in enumerate(refs):
        ref_files.append(tmp / f"ref{k}.txt")
        ref_files[-1].write_text("".join(x + "\n" for x in ref_set), encoding="utf-8")
    try:
        got = score_mt_files(h, ref_files)
    except ValueError:
        return  # only when every reference of a segment is empty; refused like mteval
    raw_h = [sgml_escape(x) for x in hyps]
    raw_r = [[sgml_escape(x) for x in ref_set] for ref_set in refs]
    assert [as_sgml_text(x) for x in hyps] == raw_h
    bleu = sacrebleu.corpus_bleu(
        raw_h, raw_r, tokenize="13a", lowercase=False, smooth_method="exp"
    ).score
    case = (hyps, refs, got["bleu"], bleu, got["nist"])
    assert got["bleu"] == pytest.approx(mteval_bleu(raw_h, raw_r), abs=1e-12), case
    # sacrebleu leaves mteval where no hypothesis has 4 tokens (it reads an
    # order without n-grams as precision 0, mteval as log(1)) and where no
    # unigram matches (it stops at 0; mteval smooths every order).
    hyp_tokens = [mteval_tokens(x) for x in raw_h]
    unigram_hit = any(
        set(h) & {t for ref_set in raw_r for t in mteval_tokens(ref_set[i])}
        for i, h in enumerate(hyp_tokens)
    )
    if max(map(len, hyp_tokens)) >= 4 and unigram_hit:
        assert got["bleu"] * 100 == pytest.approx(bleu, abs=1e-9), case
    assert got["nist"] == pytest.approx(mteval_nist(raw_h, raw_r), abs=1e-9), case


def test_mt_equals_mteval_models_on_random_text(tmp_path: Path) -> None:
    rng = random.Random(11)
    for _ in range(20):
        mt_differential_case(rng, tmp_path, rng.randint(1, 5))


def ner_differential_case(rng: random.Random) -> None:
    """Random IOB tags (types incl. "0", -X- and -DOCSTART- lines) against conlleval's model."""
    tags = ["O", "O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-0", "I-0"]
    lines: list[str] = []
    for _ in range(rng.randint(1, 30)):
        r = rng.random()
        if r < 0.08:
            lines.append("")
        elif r < 0.12:
            lines.append("-X- x O O")
        elif r < 0.15:
            lines.append("-DOCSTART- x O O")
        else:
            lines.append(f"w x {rng.choice(tags)} {rng.choice(tags)}")
    if not any(ln and not ln.startswith("-X-") for ln in lines):
        return
    want = conlleval_counts(lines)
    gold: list[list[str]] = [[]]
    pred: list[list[str]] = [[]]
    for ln in lines:
        cols = ln.split()
        if not cols or cols[0] == "-X-":
            gold.append([])
            pred.append([])
        else:
            gold[-1].append(cols[-2])
            pred[-1].append(cols[-1])
    s = score_ner([g for g in gold if g], [p for p in pred if p]).to_dict()
    assert (s["correct_chunks"], s["gold_chunks"], s["predicted_chunks"]) == (
        want["correct"],
        want["gold"],
        want["predicted"],
    )
    assert s["accuracy"] == pytest.approx(want["correct_tags"] / want["tokens"])
    per = {("" if k == "0" else k): v for k, v in s["per_type"].items()}
    for kind, (correct, found_gold, found_pred) in want["per_type"].items():  # type: ignore[attr-defined]
        if kind in per:
            assert (per[kind]["correct"], per[kind]["gold"], per[kind]["predicted"]) == (
                correct,
                found_gold,
                found_pred,
            )


def test_ner_equals_conlleval_model_on_random_tags() -> None:
    rng = random.Random(12)
    for _ in range(400):
        ner_differential_case(rng)
