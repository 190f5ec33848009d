"""sclite parity for scoring.asr_align, and the trn / Kaldi transcript readers.

The tie cases below were worked by hand from SCTK's net_dp.c
(calculate_internal_cells / extract_NET_ALIGN_result): each cell keeps one
back pointer, diagonal if ``sub <= del and sub <= ins``, else deletion if
``del < ins``, else insertion, and the path is read back from the end.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest

from scoring import (
    AlignedPair,
    FormatError,
    align,
    check_ids,
    detect_format,
    read_transcripts,
    score_asr,
)


def ops(ref: str, hyp: str) -> str:
    return "".join(p.op for p in align(ref.split(), hyp.split()).pairs)


def sdi(ref: str, hyp: str) -> tuple[int, int, int]:
    a = align(ref.split(), hyp.split())
    return a.substitutions, a.deletions, a.insertions


# --- tie-breaking -------------------------------------------------------------


def test_tie_diagonal_beats_insertion_and_deletion() -> None:
    # ref "a a b", hyp "b c c". S S S costs 12; D D C I I (drop "a a", match
    # "b", insert "c c") also costs 3+3+0+3+3 = 12. At the last cell (b vs c)
    # the diagonal, deletion and insertion all reach 12 and sclite keeps the
    # diagonal because `sub <= del && sub <= ins`; the same holds at every
    # earlier cell, so sclite reports 3 substitutions. An order that tried
    # insertion first would report 2 D + 2 I instead.
    assert ops("a a b", "b c c") == "SSS"
    assert sdi("a a b", "b c c") == (3, 0, 0)


def test_tie_insertion_beats_deletion_and_changes_counts() -> None:
    # ref "a c c a", hyp "b b d a c". Cost table (rows ref, columns hyp):
    #        -   b   b   d   a   c
    #   -    0   3   6   9  12  15
    #   a    3   4   7  10   9  12
    #   c    6   7   8  11  12   9
    #   c    9  10  11  12  15  12
    #   a   12  13  14  15  12  15
    # Last cell (a vs c, 15): diagonal 15+4 = 19 loses; insertion 12+3 and
    # deletion 12+3 tie. sclite stores the insertion (del is not < ins), then
    # C(a) and three diagonal steps: S S S C I, 4 errors.
    # Had the deletion been taken, the path continues C(c) D(c) C(a) I I I:
    # I I I C D C D, also cost 15 but 5 errors. So the D/I order changes
    # per-utterance counts, not just where the errors sit.
    a = align("a c c a".split(), "b b d a c".split())
    assert a.cost == 15
    assert "".join(p.op for p in a.pairs) == "SSSCI"
    assert (a.substitutions, a.deletions, a.insertions) == (3, 0, 1)
    assert a.pairs[-1] == AlignedPair("I", None, "c")


def test_tie_swapped_words_put_insertion_last() -> None:
    # ref "a b", hyp "b a": D(a) C(b) I(a) and I(b) C(a) D(b) both cost 6.
    # At the last cell (b vs a) deletion and insertion tie at 6; sclite takes
    # the insertion, so the hypothesis' trailing "a" is the inserted word.
    a = align(["a", "b"], ["b", "a"])
    assert a.pairs == (
        AlignedPair("D", "a", None),
        AlignedPair("C", "b", "b"),
        AlignedPair("I", None, "a"),
    )


def test_tie_is_resolved_from_the_end() -> None:
    # ref "a b", hyp "c": S(a,c) D(b) and D(a) S(b,c) both cost 7. sclite
    # walks back from the last cell, where the diagonal (b vs c) is optimal,
    # so the substitution lands on the last word. A front-to-back walk with
    # the same preferences would give S(a,c) D(b).
    assert align(["a", "b"], ["c"]).pairs == (
        AlignedPair("D", "a", None),
        AlignedPair("S", "b", "c"),
    )
    # Mirror image: the extra word is in the hypothesis.
    assert align(["c"], ["a", "b"]).pairs == (
        AlignedPair("I", None, "a"),
        AlignedPair("S", "c", "b"),
    )


def _sclite_pointer_path(ref: list[str], hyp: list[str]) -> str:
    """Independent model of net_dp.c: store one back pointer per cell, follow it.

    Deliberately written the way sclite is (pointers chosen while filling the
    table) rather than the way align() is (re-deriving moves while tracing).
    """
    n, m = len(ref), len(hyp)
    dist = [[0.0] * (m + 1) for _ in range(n + 1)]
    back = [[""] * (m + 1) for _ in range(n + 1)]
    for b in range(1, m + 1):  # calculate_margin_cells, row 0: insertions
        dist[0][b], back[0][b] = dist[0][b - 1] + 3.0, "I"
    for a in range(1, n + 1):  # calculate_margin_cells, column 0: deletions
        dist[a][0], back[a][0] = dist[a - 1][0] + 3.0, "D"
    for a in range(1, n + 1):
        for b in range(1, m + 1):
            sub = dist[a - 1][b - 1] + (0.0 if ref[a - 1] == hyp[b - 1] else 4.0)
            dele = dist[a - 1][b] + 3.0
            ins = dist[a][b - 1] + 3.0
            if sub <= dele and sub <= ins:
                dist[a][b], back[a][b] = sub, "C" if ref[a - 1] == hyp[b - 1] else "S"
            elif dele < ins:
                dist[a][b], back[a][b] = dele, "D"
            else:
                dist[a][b], back[a][b] = ins, "I"
    out: list[str] = []
    a, b = n, m
    while a > 0 or b > 0:
        move = back[a][b]
        out.append(move)
        if move in "CSD":
            a -= 1
        if move in "CSI":
            b -= 1
    return "".join(reversed(out))


def test_random_paths_match_sclite_pointer_model() -> None:
    rng = random.Random(20240607)
    for _ in range(3000):
        # A small vocabulary makes equal-cost paths, and so ties, common.
        ref = [rng.choice("abc") for _ in range(rng.randint(0, 9))]
        hyp = [rng.choice("abcd") for _ in range(rng.randint(0, 9))]
        got = "".join(p.op for p in align(ref, hyp).pairs)
        assert got == _sclite_pointer_path(ref, hyp), (ref, hyp)


# --- sclite versus unit-cost Levenshtein (jiwer) ------------------------------


def test_sclite_counts_differ_from_unit_cost_levenshtein() -> None:
    # ref "a b", hyp "b c". Unit costs tie S S (2) with D C I (2), and jiwer
    # reports 2 substitutions. Under 4/3/3, S S costs 8 and D C I costs 6,
    # so sclite reports 1 deletion and 1 insertion: same WER, other counts.
    assert sdi("a b", "b c") == (0, 1, 1)
    # ref "a a a b c", hyp "b c c b". Unit-cost minimum is 4 edits
    # (S S S C D, weighted 12+3 = 15). The 4/3/3 minimum is also 15, reached
    # too by D D D C I C I; sclite's tie-break (insertion before deletion at
    # the last cell, c vs b) picks the latter: 5 errors, so sclite's WER is
    # higher than the Levenshtein WER on this utterance.
    a = align("a a a b c".split(), "b c c b".split())
    assert a.cost == 15
    assert "".join(p.op for p in a.pairs) == "DDDCICI"
    assert (a.substitutions, a.deletions, a.insertions) == (0, 3, 2)


def test_against_jiwer() -> None:
    import jiwer

    def jiwer_sdi(ref: str, hyp: str) -> tuple[int, int, int]:
        o = jiwer.process_words(ref, hyp)
        return o.substitutions, o.deletions, o.insertions

    # The two documented cases above, as jiwer sees them.
    assert jiwer_sdi("a b", "b c") == (2, 0, 0)
    assert sum(jiwer_sdi("a a a b c", "b c c b")) == 4

    rng = random.Random(7)
    for _ in range(2000):
        ref = " ".join(rng.choice("abc") for _ in range(rng.randint(1, 8)))
        hyp = " ".join(rng.choice("abcd") for _ in range(rng.randint(1, 8)))
        s, d, i = jiwer_sdi(ref, hyp)
        ours = align(ref.split(), hyp.split())
        # Levenshtein minimises the number of edits, sclite the 4/3/3 cost:
        # each is at least as good as the other on its own measure.
        assert ours.errors >= s + d + i
        assert ours.cost <= 4 * s + 3 * (d + i)
        # Both account for every word, so D - I is fixed by the lengths.
        assert ours.deletions - ours.insertions == d - i


# --- empty reference ----------------------------------------------------------


def test_empty_reference_scores_as_insertions(tmp_path: Path) -> None:
    ref = tmp_path / "ref.trn"
    ref.write_text("(u1)\nhello world (u2)\n", encoding="utf-8")
    hyp = tmp_path / "hyp.trn"
    hyp.write_text("uh um (u1)\nhello world (u2)\n", encoding="utf-8")
    refs, hyps = read_transcripts(ref), read_transcripts(hyp)
    assert refs["u1"] == ""
    rep = score_asr(refs, hyps)
    u1 = rep.utterances[0]
    assert (u1.ref_tokens, u1.insertions, u1.errors) == (0, 2, 2)
    assert [p.op for p in u1.alignment.pairs] == ["I", "I"]
    o = rep.overall
    assert (o.ref_tokens, o.insertions, o.errors) == (2, 2, 2)
    assert o.wer == pytest.approx(1.0)
    # An all-empty reference set keeps every rate finite (max(N, 1)).
    alone = score_asr({"u1": ""}, {"u1": "uh um"}).overall
    assert alone.wer == 2.0 and all(math.isfinite(v) for v in (alone.ins_rate, alone.wer))
    json.dumps(rep.to_dict(include_utterances=True))


# --- readers ------------------------------------------------------------------


def write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(data, bytes):
        p.write_bytes(data)
    else:
        p.write_text(data, encoding="utf-8", newline="")
    return p


def test_read_trn(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "a.trn",
        ";; a comment line\n"
        "hello world (spk1-u1)\n"
        "\n"
        "  (laughter) yes  (spk1-u2)  \n"
        "(spk1-u3)\n"
        "我们 好 (u4)",
    )
    assert read_transcripts(p) == {
        "spk1-u1": "hello world",
        "spk1-u2": "(laughter) yes",  # only the last "(...)" is the id
        "spk1-u3": "",
        "u4": "我们 好",
    }
    assert list(read_transcripts(p)) == ["spk1-u1", "spk1-u2", "spk1-u3", "u4"]


def test_read_kaldi(tmp_path: Path) -> None:
    p = write(tmp_path, "text", "u1 hello world\nu2\tTabs  and  Case\nu3\n")
    assert read_transcripts(p) == {"u1": "hello world", "u2": "Tabs  and  Case", "u3": ""}


def test_kaldi_line_ending_in_parenthesis_stays_kaldi(tmp_path: Path) -> None:
    # One of three lines ends with "(...)": less than half, so the file is
    # Kaldi and "(laughter)" stays part of the transcript.
    p = write(tmp_path, "text", "u1 hello\nu2 we laughed (laughter)\nu3 bye\n")
    assert read_transcripts(p)["u2"] == "we laughed (laughter)"


def test_detect_format() -> None:
    assert detect_format(["a b (u1)", "c (u2)"]) == "trn"
    assert detect_format(["u1 a b", "u2 c"]) == "kaldi"
    assert detect_format(["a (u1)", "u2 b"]) == "trn"  # half: a trn file with a bad line
    assert detect_format([]) == "kaldi"


def test_crlf_and_bom(tmp_path: Path) -> None:
    p = write(tmp_path, "bom.trn", "\ufeffhello (u1)\r\nworld (u2)\r\n")
    assert read_transcripts(p) == {"u1": "hello", "u2": "world"}
    k = write(tmp_path, "bom.txt", "\ufeffu1 hello\r\n")
    assert read_transcripts(k) == {"u1": "hello"}


def test_read_accepts_str_path(tmp_path: Path) -> None:
    p = write(tmp_path, "a.trn", "x (u1)\n")
    assert read_transcripts(str(p)) == {"u1": "x"}


# --- reader errors ------------------------------------------------------------


def test_format_error_shape(tmp_path: Path) -> None:
    p = write(tmp_path, "d.trn", "a (u1)\nb (u1)\n")
    with pytest.raises(FormatError) as info:
        read_transcripts(p)
    err = info.value
    assert isinstance(err, ValueError)
    assert err.path == str(p) and err.line == 2
    assert str(err).startswith(f"{p}:2: ")
    assert "first on line 1" in str(err) and "keep one transcript per id" in str(err)


def test_duplicate_id_kaldi(tmp_path: Path) -> None:
    p = write(tmp_path, "text", "u1 a\nu2 b\n\nu1 a\n")
    with pytest.raises(FormatError, match=r":4: duplicate utterance id 'u1'") as info:
        read_transcripts(p)
    assert info.value.line == 4


def test_non_utf8_names_the_line(tmp_path: Path) -> None:
    p = write(tmp_path, "l1.trn", b"ok (u1)\n" + "caf\xe9 (u2)\n".encode("latin-1"))
    with pytest.raises(FormatError, match=r":2: not valid UTF-8 \(byte 0xe9") as info:
        read_transcripts(p)
    assert info.value.line == 2
    assert "UTF-8" in info.value.fix


def test_trn_line_without_id(tmp_path: Path) -> None:
    p = write(tmp_path, "n.trn", "a b (u1)\nc d\ne (u3)\n")
    with pytest.raises(FormatError, match=r":2: trn line without an utterance id") as info:
        read_transcripts(p)
    assert info.value.line == 2 and "(spk1-utt1)" in info.value.fix


def test_trn_empty_id(tmp_path: Path) -> None:
    p = write(tmp_path, "e.trn", "a b (u1)\nc d ( )\n")
    with pytest.raises(FormatError, match=r":2: trn line with an empty id"):
        read_transcripts(p)


@pytest.mark.parametrize("content", ["", "\n\n  \n", ";; only a comment\n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    p = write(tmp_path, "empty.trn", content)
    with pytest.raises(FormatError, match="holds no transcripts") as info:
        read_transcripts(p)
    assert info.value.line is None
    assert str(info.value).startswith(f"{p}: ")


def test_missing_file_is_not_a_format_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_transcripts(tmp_path / "nope.trn")


# --- check_ids ----------------------------------------------------------------


def test_check_ids_ok() -> None:
    check_ids({"a": "x", "b": ""}, {"b": "y", "a": ""}, "ref.trn", "hyp.trn")


def test_check_ids_lists_both_sides() -> None:
    with pytest.raises(FormatError) as info:
        check_ids({"a": "", "b": "", "c": ""}, {"a": "", "z": ""}, "ref.trn", "hyp.trn")
    err = info.value
    assert err.path == "hyp.trn" and err.line is None
    msg = str(err)
    assert "2 reference id(s) from ref.trn have no hypothesis: 'b', 'c'" in msg
    assert "1 hypothesis id(s) are not in ref.trn: 'z'" in msg
    assert "empty transcript" in msg


def test_check_ids_one_side_only() -> None:
    with pytest.raises(FormatError, match="not in ref.trn: 'x'") as info:
        check_ids({"a": ""}, {"a": "", "x": ""}, Path("ref.trn"), Path("hyp.trn"))
    assert "have no hypothesis" not in str(info.value)
    with pytest.raises(FormatError, match="have no hypothesis: 'b'") as info:
        check_ids({"a": "", "b": ""}, {"a": ""}, "ref.trn", "hyp.trn")
    assert "are not in" not in str(info.value)


def test_check_ids_truncates_long_lists() -> None:
    refs = {f"u{i:02d}": "" for i in range(25)}
    with pytest.raises(FormatError, match=r"25 reference id\(s\).*'u09' \(\+15 more\)"):
        check_ids(refs, {}, "ref.trn", "hyp.trn")


# --- files end to end -----------------------------------------------------------


def test_trn_against_kaldi_end_to_end(tmp_path: Path) -> None:
    ref = write(tmp_path, "ref.trn", "a c c a (u1)\nA B (u2)\n")
    hyp = write(tmp_path, "hyp.txt", "u2 b a\nu1 b b d a c\n")
    refs, hyps = read_transcripts(ref), read_transcripts(hyp)
    check_ids(refs, hyps, ref, hyp)
    rep = score_asr(refs, hyps)
    by_id = {u.id: u for u in rep.utterances}
    assert (by_id["u1"].substitutions, by_id["u1"].deletions, by_id["u1"].insertions) == (
        3,
        0,
        1,
    )
    assert (by_id["u2"].deletions, by_id["u2"].insertions, by_id["u2"].correct) == (1, 1, 1)
    assert rep.overall.errors == 6 and rep.overall.ref_tokens == 6
