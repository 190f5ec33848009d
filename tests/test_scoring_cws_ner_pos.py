"""Word segmentation, named entity and POS scoring: hand-worked cases and cross-checks."""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from scoring.cws import (
    diff_pieces,
    match_words,
    read_accepted_pieces,
    score_cws,
    score_cws_files,
    split_words,
    write_cws_review,
)
from scoring.errors import FormatError
from scoring.ner import chunks, read_conll, score_ner, score_ner_file
from scoring.pos import PosTraining, baseline_tagger, score_pos, score_pos_files


def _write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def _lcs_len(a: list[str], b: list[str]) -> int:
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


# --- word segmentation --------------------------------------------------------


def test_split_words_uses_ascii_space_and_ideographic_space_only() -> None:
    assert split_words(" 中国\u3000人民\t银行 ") == ["中国", "人民", "银行"]
    # NBSP is not a separator for the bakeoff script (Perl byte-mode \s).
    assert split_words("a\u00a0b c") == ["a\u00a0b", "c"]


def test_lcs_matching_differs_from_position_matching() -> None:
    # Text "aaa": gold a|aa, test aa|a. No word sits at the same character
    # offsets, so position matching finds 0; diff (LCS) pairs one word.
    s = score_cws([["a", "aa"]], [["aa", "a"]])
    assert s.matched == 1
    assert s.precision == s.recall == 0.5
    # Pieces (character-aligned) see the whole line as one differing piece.
    assert [(p.gold, p.test) for p in diff_pieces(["a", "aa"], ["aa", "a"])] == [
        (("a", "aa"), ("aa", "a"))
    ]


def test_cws_precision_recall_f_and_oov_iv() -> None:
    gold = [["我们", "在", "北京", "工作"], ["他", "是", "张三"]]
    test = [["我们", "在北京", "工作"], ["他", "是", "张", "三"]]
    words = {"我们", "在", "北京", "他", "是"}  # OOV gold words: 工作, 张三
    s = score_cws(gold, test, words)
    assert (s.gold_words, s.test_words, s.matched) == (7, 7, 4)
    assert s.recall == pytest.approx(4 / 7)
    assert s.precision == pytest.approx(4 / 7)
    assert s.f == pytest.approx(4 / 7)
    assert (s.oov_words, s.oov_matched, s.iv_words, s.iv_matched) == (2, 1, 5, 3)
    assert s.oov_rate == pytest.approx(2 / 7)
    assert s.oov_recall == pytest.approx(0.5)
    assert s.iv_recall == pytest.approx(3 / 5)
    # diff -y: line 1 shows 在|在北京 and 北京< ; line 2 张三|张 and >三.
    assert (s.substitutions, s.deletions, s.insertions) == (2, 1, 1)
    d = s.to_dict()
    assert d["changes"] == 4 and d["f"] == pytest.approx(4 / 7)


def test_cws_without_word_list_has_no_oov_figures() -> None:
    d = score_cws([["a", "b"]], [["a", "b"]]).to_dict()
    assert d["precision"] == d["recall"] == d["f"] == 1.0
    assert d["oov_rate"] is None and d["oov_recall"] is None and d["iv_recall"] is None


def test_cws_empty_gold_line_is_skipped_like_the_script() -> None:
    s = score_cws([[], ["a"]], [["x", "y"], ["a"]])
    assert (s.gold_words, s.test_words, s.matched) == (1, 1, 1)
    assert s.warnings and "line 1" in s.warnings[0]


def test_match_words_is_an_lcs_on_random_inputs() -> None:
    rng = random.Random(7)
    for _ in range(2000):
        k = rng.randint(1, 4)
        a = [rng.choice("abcd"[:k]) for _ in range(rng.randint(0, 12))]
        b = [rng.choice("abcd"[:k]) for _ in range(rng.randint(0, 12))]
        pairs = match_words(a, b)
        assert len(pairs) == _lcs_len(a, b)
        assert all(a[i] == b[j] for i, j in pairs)
        assert all(p < q for (p, _), (q, _) in zip(pairs, pairs[1:], strict=False))
        assert all(p < q for (_, p), (_, q) in zip(pairs, pairs[1:], strict=False))


def test_match_count_equals_gnu_diff(tmp_path: Path) -> None:
    # The bakeoff script counts the lines GNU diff leaves unchanged.
    rng = random.Random(3)
    for _ in range(60):
        a = [rng.choice("abcde") for _ in range(rng.randint(0, 80))]
        b = [rng.choice("abcde") for _ in range(rng.randint(0, 80))]
        fa, fb = tmp_path / "a", tmp_path / "b"
        fa.write_text("".join(w + "\n" for w in a))
        fb.write_text("".join(w + "\n" for w in b))
        out = subprocess.run(
            ["diff", "--old-line-format=", "--new-line-format=", "--unchanged-line-format=%L"]
            + [str(fa), str(fb)],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        assert len(match_words(a, b)) == len(out.splitlines())


def test_score_cws_files_and_word_list(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.txt", "我们 在 北京 工作\n他 是 张三\n")
    test = _write(tmp_path / "test.txt", "我们 在北京 工作\r\n他 是 张 三\r\n")
    words = _write(tmp_path / "words.txt", "\ufeff我们\n在\n北京\n他\n是\n\n")
    d = score_cws_files(gold, test, words)
    assert d["oov_rate"] == pytest.approx(2 / 7) and d["iv_recall"] == pytest.approx(0.6)
    assert d["precision"] == pytest.approx(4 / 7)


def test_cws_errors_name_file_and_line(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.txt", "a b\nc d\n")
    short = _write(tmp_path / "short.txt", "a b\n")
    with pytest.raises(FormatError, match=r"short\.txt:2: the test file has 1 lines"):
        score_cws_files(gold, short)
    bad = tmp_path / "gbk.txt"
    bad.write_bytes(b"a b\n" + "中国 人".encode("gbk") + b"\n")
    with pytest.raises(FormatError, match=r"gbk\.txt:2: not valid utf-8"):
        score_cws_files(gold, bad)
    words = _write(tmp_path / "words.txt", "a\nb c\n")
    with pytest.raises(FormatError, match=r"words\.txt:2: line holds several words"):
        score_cws_files(gold, gold, words)
    # Another encoding can be named explicitly.
    gb = tmp_path / "gb.txt"
    gb.write_bytes("中国 人\n".encode("gb18030"))
    ok = score_cws_files(gb, gb, encoding="gb18030")
    assert ok["f"] == 1.0


def test_review_and_accepted_pieces(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.txt", "中华人民共和国 成立 了\n他 说\n")
    sys1 = _write(tmp_path / "sys1.txt", "中华 人民 共和国 成立 了\n他说\n")
    sys2 = _write(tmp_path / "sys2.txt", "中华 人民 共和国 成立了\n他 说\n")
    review = tmp_path / "review.tsv"
    assert write_cws_review(gold, [sys1, sys2], review) == 3
    rows = review.read_text(encoding="utf-8").splitlines()
    assert rows[0].startswith("#verdict")
    first = rows[1].split("\t")
    assert first[:5] == ["?", "中华人民共和国", "中华 人民 共和国", "2", f"{sys1}:1"]
    assert first[5] == "[中华 人民 共和国]成立了"
    # Judges accept the finer split of the country name, reject the rest.
    judged = [rows[0], "y" + rows[1][1:], *("n" + r[1:] for r in rows[2:])]
    review.write_text("\n".join(judged) + "\n", encoding="utf-8")
    accepted = read_accepted_pieces(review)
    assert accepted == {(("中华人民共和国",), ("中华", "人民", "共和国"))}

    before = score_cws_files(gold, sys1)
    after = score_cws_files(gold, sys1, accepted=review)
    assert (before["matched"], before["gold_words"], before["test_words"]) == (2, 5, 6)
    # The reference for line 1 now reads 中华 人民 共和国 成立 了: 5 words, all found.
    assert (after["matched"], after["gold_words"], after["accepted_pieces"]) == (5, 7, 1)
    assert after["recall"] == pytest.approx(5 / 7) and after["precision"] == pytest.approx(5 / 6)


def test_accepted_pieces_format_errors(tmp_path: Path) -> None:
    bad = _write(tmp_path / "r.tsv", "#c\ny\t中华\t中 国\n")
    with pytest.raises(FormatError, match=r"r\.tsv:2: the system piece"):
        read_accepted_pieces(bad)
    bad = _write(tmp_path / "r2.tsv", "maybe\t中华\t中 华\n")
    with pytest.raises(FormatError, match=r"r2\.tsv:1: verdict"):
        read_accepted_pieces(bad)
    bad = _write(tmp_path / "r3.tsv", "y 中华 中 华\n")
    with pytest.raises(FormatError, match=r"r3\.tsv:1: expected verdict"):
        read_accepted_pieces(bad)


# --- named entities -----------------------------------------------------------


def test_conlleval_chunk_rules() -> None:
    # I- after O starts a chunk (IOB1); a type change ends and starts one.
    assert chunks(["O", "I-PER", "I-PER", "I-LOC", "O"]) == {("PER", 1, 2), ("LOC", 3, 3)}
    # B- after I- of the same type starts a new chunk.
    assert chunks(["I-ORG", "B-ORG", "I-ORG"]) == {("ORG", 0, 0), ("ORG", 1, 2)}
    # IOBES: S is a one-token chunk, E ends one.
    assert chunks(["S-A", "S-A", "B-A", "E-A", "I-A"]) == {
        ("A", 0, 0),
        ("A", 1, 1),
        ("A", 2, 3),
        ("A", 4, 4),
    }
    # Sentence boundaries (None) close chunks.
    assert chunks(["B-X", None, "I-X"]) == {("X", 0, 0), ("X", 2, 2)}
    # Types may contain hyphens (split at the first one).
    assert chunks(["B-GPE-X", "I-GPE-X"]) == {("GPE-X", 0, 1)}


def test_ner_hand_worked_scores() -> None:
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "O"]]
    pred = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "O", "O"]]
    s = score_ner(gold, pred)
    assert (s.tokens, s.correct_tags) == (7, 5)
    assert (s.gold_chunks, s.predicted_chunks, s.correct_chunks) == (3, 3, 1)
    assert s.accuracy == pytest.approx(5 / 7)
    assert s.precision == s.recall == s.f1 == pytest.approx(1 / 3)
    d = s.to_dict()
    assert list(d["per_type"]) == ["LOC", "ORG", "PER"]
    assert d["per_type"]["LOC"] == {
        "precision": 0.0,
        "recall": 0.0,
        "f1": 0.0,
        "gold": 1,
        "predicted": 0,
        "correct": 0,
    }
    assert d["per_type"]["ORG"]["precision"] == 0.0 and d["per_type"]["ORG"]["predicted"] == 2
    assert d["per_type"]["PER"]["f1"] == 1.0


def test_ner_type_change_inside_chunk_is_wrong() -> None:
    # Predicted I-LOC after B-PER splits the chunk: no match, two found.
    s = score_ner([["B-PER", "I-PER"]], [["B-PER", "I-LOC"]])
    assert (s.gold_chunks, s.predicted_chunks, s.correct_chunks) == (1, 2, 0)


def test_score_ner_file_layout(tmp_path: Path) -> None:
    text = (
        "-DOCSTART- -X- O O\n"
        "\n"
        "张 NR B-PER B-PER\n"
        "三 NR I-PER I-PER\n"
        "-X- -X- O O\n"
        "去 VV O O\n"
        "北京 NR B-LOC O\n"
        "\n"
        "\n"
    )
    d = score_ner_file(_write(tmp_path / "out.conll", text))
    # -DOCSTART- counts as a token (as in conlleval); -X- and blanks do not.
    assert d["tokens"] == 5 and d["correct_tags"] == 4
    assert (d["gold_chunks"], d["predicted_chunks"], d["correct_chunks"]) == (2, 1, 1)
    assert d["precision"] == 1.0 and d["recall"] == 0.5


def test_ner_file_errors(tmp_path: Path) -> None:
    bad = _write(tmp_path / "cols.conll", "a B-PER B-PER\nb I-PER\n")
    with pytest.raises(FormatError, match=r"cols\.conll:2: 2 columns, but line 1 has 3"):
        read_conll(bad)
    bad = _write(tmp_path / "tag.conll", "a O O\nb PER B-PER\n")
    with pytest.raises(FormatError, match=r"tag\.conll:2: malformed gold tag 'PER'"):
        read_conll(bad)
    bad = _write(tmp_path / "one.conll", "O\n")
    with pytest.raises(FormatError, match=r"one\.conll:1: fewer than 2 columns"):
        read_conll(bad)
    bad = tmp_path / "enc.conll"
    bad.write_bytes(b"a O O\n" + "张 O O\n".encode("gbk"))
    with pytest.raises(FormatError, match=r"enc\.conll:2: not valid utf-8"):
        read_conll(bad)


def _random_tags(rng: random.Random, n: int, prefixes: str) -> list[str]:
    out = []
    for _ in range(n):
        p = rng.choice(prefixes + "OO")
        out.append("O" if p == "O" else f"{p}-{rng.choice(['PER', 'LOC', 'ORG'])}")
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("prefixes", ["BI", "BIES"])
def test_ner_matches_seqeval_default_mode(prefixes: str) -> None:
    import seqeval.metrics as metrics

    rng = random.Random(11)
    for _ in range(200):
        lengths = [rng.randint(1, 8) for _ in range(rng.randint(1, 4))]
        gold = [_random_tags(rng, n, prefixes) for n in lengths]
        pred = [_random_tags(rng, n, prefixes) for n in lengths]
        s = score_ner(gold, pred)
        assert s.precision == pytest.approx(metrics.precision_score(gold, pred, mode=None))
        assert s.recall == pytest.approx(metrics.recall_score(gold, pred, mode=None))
        assert s.f1 == pytest.approx(metrics.f1_score(gold, pred, mode=None))
        assert s.accuracy == pytest.approx(metrics.accuracy_score(gold, pred))
        report = metrics.classification_report(
            gold, pred, mode=None, output_dict=True, zero_division=0
        )
        mine = s.to_dict()["per_type"]
        assert set(mine) == set(report) - {"micro avg", "macro avg", "weighted avg"}
        for kind, row in mine.items():
            assert row["precision"] == pytest.approx(report[kind]["precision"])
            assert row["recall"] == pytest.approx(report[kind]["recall"])
            assert row["f1"] == pytest.approx(report[kind]["f1-score"])
            assert row["gold"] == report[kind]["support"]


# --- POS ----------------------------------------------------------------------


def test_pos_htrdp_relative_precision_with_segmentation_errors() -> None:
    gold = [[("我们", "r"), ("在", "p"), ("北京", "ns"), ("工作", "v")]]
    test = [[("我们", "r"), ("在北京", "v"), ("工作", "n")]]
    s = score_pos(gold, test)
    # Segmented right: 我们, 工作 (2 of 3 test words); tagged right: 我们.
    assert (s.segmented, s.tagged) == (2, 1)
    d = s.to_dict()
    assert d["precision"] == pytest.approx(1 / 3)
    assert d["recall"] == pytest.approx(1 / 4)
    assert d["f"] == pytest.approx(2 * (1 / 3) * (1 / 4) / (1 / 3 + 1 / 4))
    assert d["relative_precision"] == pytest.approx(1 / 2)
    assert d["relative_precision"] == pytest.approx(d["precision"] / d["cws_precision"])
    assert d["segmentation_identical"] is False


def test_pos_sighan_iv_oov_multi_pos_and_baseline() -> None:
    train = [
        [("我", "r"), ("爱", "v"), ("北京", "ns")],
        [("爱", "v"), ("爱", "n"), ("爱", "v"), ("工作", "vn"), ("工作", "v")],
        [("了", "u"), ("了", "v")],
    ]
    # Overall training tag counts: v 4 -> unique most frequent tag.
    training = PosTraining.from_sentences(train)
    table = baseline_tagger(training)
    assert table["爱"] == "v"  # unique most frequent of v:2, n:1
    assert table["工作"] == "v"  # tie vn/v -> overall most frequent v
    assert table["北京"] == "ns" and table[""] == "v"
    gold = [[("我", "r"), ("爱", "n"), ("北京", "ns"), ("上海", "ns"), ("我", "n")]]
    test = [[("我", "r"), ("爱", "n"), ("北京", "v"), ("上海", "ns"), ("我", "r")]]
    d = score_pos(gold, test, training).to_dict()
    assert d["accuracy"] == pytest.approx(3 / 5) and d["segmentation_identical"] is True
    assert d["accuracy"] == d["precision"] == d["recall"]
    # IV POS tags: 我/r, 爱/n, 北京/ns. OOV: 上海/ns (OOV word), 我/n (unseen tag).
    assert (d["iv_pos_tags"], d["iv_correct"]) == (3, 2)
    assert (d["oov_pos_tags"], d["oov_correct"]) == (2, 1)
    assert d["oov_pos_tag_rate"] == pytest.approx(2 / 5)
    # Multi-POS: 爱 (two tags in training), 我 (one in training, another in
    # the gold test data); 上海 is OOV so never multi-POS.
    assert (d["multi_pos_tokens"], d["multi_pos_correct"]) == (3, 2)
    # Baseline: 我->r ok, 爱->v wrong, 北京->ns ok, 上海->v wrong, 我->r wrong.
    assert d["baseline_accuracy"] == pytest.approx(2 / 5)


def test_pos_baseline_without_unique_overall_tag_counts_wrong() -> None:
    training = PosTraining.from_sentences([[("a", "x"), ("b", "y")]])
    d = score_pos([[("c", "x"), ("a", "x")]], [[("c", "x"), ("a", "x")]], training).to_dict()
    assert d["baseline_correct"] == 1  # only a/x; c has no unique overall tag


def test_score_pos_files_and_errors(tmp_path: Path) -> None:
    gold = _write(tmp_path / "gold.txt", "迈向/v 1/2/m 世纪/n\n\n")
    test = _write(tmp_path / "test.txt", "迈向/v 1/2/m 世纪/v\n\n")
    train = _write(tmp_path / "train.txt", "迈向/v 世纪/n\n")
    d = score_pos_files(gold, test, train)
    assert d["gold_words"] == 3 and d["correctly_tagged"] == 2
    assert d["oov_pos_tags"] == 1  # 1/2/m: the word 1/2 is not in training
    assert score_pos_files(gold, test)["iv_accuracy"] is None
    bad = _write(tmp_path / "bad.txt", "迈向/v 1/2/m\n世纪\n")
    with pytest.raises(FormatError, match=r"bad\.txt:2: token '世纪' is not word/TAG"):
        score_pos_files(gold, bad)
    short = _write(tmp_path / "short.txt", "迈向/v 1/2/m 世纪/v\n")
    with pytest.raises(FormatError, match=r"short\.txt:2: the test file has 1 lines"):
        score_pos_files(gold, short)
