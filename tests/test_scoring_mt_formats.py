"""CWMT XML, plain text, naming rule, human sheets, word alignment, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoring.cwmt_xml import (
    check_mirror,
    check_submissions,
    load_mt_file,
    parse_result_name,
    read_xml,
    require_mirror,
    validate_target,
)
from scoring.errors import FormatError
from scoring.mt_files import score_mt_files
from scoring.mt_human import read_human_sheet, score_human
from scoring.word_alignment import read_gold, score_alignment, score_alignment_files

SOURCE = """<?xml version="1.0" encoding="UTF-8"?>
<srcset setid="zh_en_news_trans" srclang="zh" tgtlang="en">
<doc docid="d1">
<p>
<s id="1">玻利维亚举行总统与国会选举</s>
</p>
<s id="2">投票所关闭</s>
<s id="3">三</s>
</doc>
<doc docid="d2">
<s id="1">一</s>
</doc>
</srcset>
"""

# The guidelines' own example style: unquoted scores and the <cant> typo.
TARGET = """<?xml version="1.0" encoding="UTF-8"?>
<tgtset setid="zh_en_news_trans" srclang="zh" tgtlang="en">
<system site="ict" sysid="systema">
OS: Linux, 4 CPUs
Technology outline: phrase-based
</system>
<doc docid="d1">
<p>
<s id="1" score=0.03>
Bolivia Holds Presidential and Parliament Elections
<cand score=0.005> Bolivia Holds Elections </cand>
<cant score=0.0007> Bolivia votes </cant>
</s>
</p>
<s id="2" score="0.5">The polling stations closed</s>
<s id="3">three</s>
</doc>
<doc docid="d2">
<s id="1">one</s>
</doc>
</tgtset>
"""

REFS = """<?xml version="1.0" encoding="UTF-8"?>
<refset setid="zh_en_news_trans" srclang="zh" tgtlang="en">
<doc docid="d1" site="r1">
<s id="1">Bolivia Holds Presidential and Parliament Elections</s>
<s id="2">The polling stations closed</s>
<s id="3">three</s>
</doc>
<doc docid="d2" site="r1"><s id="1">one</s></doc>
<doc docid="d1" site="r2">
<s id="1">Bolivia holds presidential and congressional elections</s>
<s id="2">Polling stations closed</s>
<s id="3">3</s>
</doc>
<doc docid="d2" site="r2"><s id="1">one</s></doc>
</refset>
"""


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    p = tmp_path / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text, encoding="utf-8")
    return p


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


# --------------------------------------------------------------------------- XML


def test_target_parsed_with_guideline_quirks(tmp_path: Path) -> None:
    t = read_xml(write(tmp_path, "t.xml", TARGET), "target")
    assert t.setid == "zh_en_news_trans" and t.tgtlang == "en"
    assert t.system is not None and (t.system.site, t.system.sysid) == ("ict", "systema")
    assert "phrase-based" in t.system.text
    first = t.segments[0]
    assert first.text == "Bolivia Holds Presidential and Parliament Elections"
    assert first.score == 0.03 and first.line == line_of(TARGET, '<s id="1"')
    assert [c.text for c in first.candidates] == ["Bolivia Holds Elections", "Bolivia votes"]
    assert [c.score for c in first.candidates] == [0.005, 0.0007]
    assert t.notes and "unquoted" in t.notes[0]
    assert validate_target(t) == []


def test_mirror_check_lists_every_mismatch(tmp_path: Path) -> None:
    bad = """<tgtset setid="other" srclang="zh" tgtlang="en">
<system site="ict" sysid="a">x</system>
<doc docid="d1">
<s id="1">a</s>
<s id="2">b</s>
<s id="2">b again</s>
<s id="4">d</s>
</doc>
<doc docid="d3"><s id="1">z</s></doc>
</tgtset>
"""
    src = read_xml(write(tmp_path, "src.xml", SOURCE), "source")
    tgt = read_xml(write(tmp_path, "bad.xml", bad), "target")
    problems = [m.problem for m in check_mirror(src, tgt)]
    assert len(problems) == 6, problems
    joined = " | ".join(problems)
    for expected in (
        "setid is 'other'",
        "segment 2 repeated",
        "segment 4 not in source",
        "segment 3 is missing",
        "document 'd2' is missing",
        "document 'd3' is not in",
    ):
        assert expected in joined
    with pytest.raises(FormatError) as exc:
        require_mirror(src, tgt)
    assert "6 mismatch(es)" in str(exc.value) and "bad.xml:" in str(exc.value)
    good = read_xml(write(tmp_path, "t.xml", TARGET), "target")
    assert check_mirror(src, good) == []


def test_score_xml_with_two_references_in_one_file(tmp_path: Path) -> None:
    hyp = write(tmp_path, "zh_en_news_trans-ict-primary-systema.xml", TARGET)
    refs = write(tmp_path, "ref.xml", REFS)
    d = score_mt_files(hyp, [refs])
    assert d["n_refs"] == 2 and d["format"] == "xml"
    assert d["bleu"] == pytest.approx(1.0) and d["mwer"] == 0.0
    assert d["system"]["sysid"] == "systema"
    assert [x["doc_id"] for x in d["documents"]] == ["d1", "d2"]
    assert [(s["doc_id"], s["seg_id"]) for s in d["segments"]][:2] == [("d1", "1"), ("d1", "2")]
    for key in ("bleu", "nist", "gtm", "mwer", "mper", "bleu_shortest", "segments", "documents"):
        assert key in d


def test_score_plain_text_and_mixed(tmp_path: Path) -> None:
    hyp = write(tmp_path, "hyp.txt", "the cat sat\na dog\n")
    r1 = write(tmp_path, "r1.txt", "the cat sat\na dog barked\n")
    r2 = write(tmp_path, "r2.txt", "a cat sat\nthe dog\n")
    d = score_mt_files(hyp, [r1, r2])
    assert d["format"] == "plain" and len(d["segments"]) == 2 and d["n_refs"] == 2
    assert d["segments"][0]["bleu"] == pytest.approx(1.0)
    # XML hypothesis against plain references: paired in order
    plain = write(tmp_path, "p.txt", "\n".join(
        ["Bolivia Holds Presidential and Parliament Elections", "The polling stations closed",
         "three", "one"]) + "\n")  # fmt: skip
    d2 = score_mt_files(write(tmp_path, "t.xml", TARGET), [plain])
    assert d2["bleu"] == pytest.approx(1.0)


def test_zh_xml_scored_at_character_level(tmp_path: Path) -> None:
    tgt = TARGET.replace('tgtlang="en"', 'tgtlang="zh"')
    hyp = write(tmp_path, "t.xml", tgt)
    ref = write(tmp_path, "r.xml", REFS.replace('tgtlang="en"', 'tgtlang="zh"'))
    with pytest.raises(FormatError, match="tgtlang is 'zh'"):
        score_mt_files(hyp, [ref])
    assert score_mt_files(hyp, [ref], lang="zh")["lang"] == "zh"


# --------------------------------------------------------------------------- naming rule


@pytest.mark.parametrize(
    "name",
    [
        "zh_en_news_trans-ict-primary-systema.xml",
        "zh_en_news_trans-ict-contrast-systemb.xml",
        "en_zh_scie_trans-hit_mt-contrast-sys2.xml",
    ],
)
def test_naming_rule_accepts(name: str) -> None:
    assert parse_result_name(name).task in ("zh_en_news_trans", "en_zh_scie_trans")


@pytest.mark.parametrize(
    "name",
    [
        "zh_en_news_trans-ict-primary-system-a.xml",  # hyphen inside the system name
        "zh_en_news_trans-ict-best-systema.xml",  # neither primary nor contrast
        "ZH-EN-NEWS-TRANS-ict-primary-systema.xml",  # task id instead of the file form
        "zh_en_news_trans-ict-primary-systema.txt",
        "zh_en_news_trans-ict-primary.xml",
    ],
)
def test_naming_rule_rejects(name: str) -> None:
    with pytest.raises(FormatError, match="naming rule"):
        parse_result_name(name)


def test_submission_set_limits() -> None:
    t = "zh_en_news_trans-ict-"
    ok = [t + "primary-a.xml", t + "contrast-b.xml", t + "contrast-c.xml"]
    assert check_submissions(ok) == []
    bad = [*ok, t + "contrast-d.xml", t + "primary-e.xml"]
    problems = " | ".join(m.problem for m in check_submissions(bad))
    assert "2 primary" in problems and "3 contrast" in problems


# --------------------------------------------------------------------------- human, alignment


def test_human_sheets_averaged_per_system(tmp_path: Path) -> None:
    csv_sheet = write(
        tmp_path,
        "j1.csv",
        "judge,system,doc_id,seg_id,adequacy,fluency\n"
        "j1,s1,d,1,4,3\nj1,s1,d,2,5,4.5\nj1,s2,d,1,2,2\n",
    )
    jsonl = write(
        tmp_path,
        "j2.jsonl",
        '{"judge":"j2","system":"s1","doc_id":"d","seg_id":"1","adequacy":3,"fluency":3.5}\n',
    )
    report = score_human([csv_sheet, jsonl]).to_dict()
    s1 = report["systems"][0]
    assert s1["system"] == "s1" and s1["adequacy"] == pytest.approx(4.0)
    assert s1["fluency"] == pytest.approx(11 / 3) and s1["segments"] == 2
    assert s1["judges"]["j1"]["adequacy"] == pytest.approx(4.5)


def test_word_alignment_sure_and_possible(tmp_path: Path) -> None:
    gold = write(tmp_path, "gold.txt", "0-0 1-1 2-2-p\n0-1 1?0\n")
    sys_ = write(tmp_path, "sys.txt", "0-0 2-2 2-3\n0-1 1-0\n")
    g = read_gold(gold)
    assert g[0].sure == {(0, 0), (1, 1)} and g[0].possible == {(0, 0), (1, 1), (2, 2)}
    d = score_alignment_files(sys_, gold)
    # A = 5, S = 3, A&S = 2 (0-0, 0-1), A&P = 4 (0-0, 2-2, 0-1, 1-0)
    assert d["precision"] == pytest.approx(4 / 5) and d["recall"] == pytest.approx(2 / 3)
    assert d["aer"] == pytest.approx(1 - (2 + 4) / (5 + 3))
    assert d["f1"] == pytest.approx(2 * 0.8 * (2 / 3) / (0.8 + 2 / 3))
    perfect = score_alignment([frozenset({(0, 0), (1, 1)})], g[:1])
    assert perfect.aer == 0.0


# --------------------------------------------------------------------------- bad input: file:line


@pytest.mark.parametrize(
    ("text", "needle", "message"),
    [
        (SOURCE.replace('<s id="3">三</s>', '<s id="3">三 & 四</s>'), "三 & 四", "malformed XML"),
        (SOURCE.replace('<doc docid="d2">', "<doc>"), "<doc>", "without docid"),
        (SOURCE.replace('<s id="2">', "<s>"), "<s>投票", "without id"),
        (SOURCE.replace("</doc>\n<doc", "</dok>\n<doc", 1), "</dok>", "malformed XML"),
    ],
)
def test_bad_source_names_file_and_line(tmp_path: Path, text: str, needle: str, message: str):
    path = write(tmp_path, "src.xml", text)
    with pytest.raises(FormatError, match=message) as exc:
        read_xml(path, "source")
    assert exc.value.path == str(path) and exc.value.line == line_of(text, needle)
    assert str(exc.value).startswith(f"{path}:{exc.value.line}: ")


def test_bad_score_attribute(tmp_path: Path) -> None:
    text = TARGET.replace('score="0.5"', 'score="high"')
    with pytest.raises(FormatError, match="not a number") as exc:
        load_mt_file(write(tmp_path, "t.xml", text))
    assert exc.value.line == line_of(text, 'score="high"')


def test_not_utf8_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, "h.txt", b"ok\nbad \xff byte\n")
    with pytest.raises(FormatError, match="not valid UTF-8") as exc:
        load_mt_file(path)
    assert exc.value.line == 2


def test_wrong_root_for_role(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="no tgtset") as exc:
        read_xml(write(tmp_path, "src.xml", SOURCE), "target")
    assert exc.value.line == 2


def test_plain_segment_count_mismatch(tmp_path: Path) -> None:
    hyp = write(tmp_path, "h.txt", "a\nb\nc\n")
    ref = write(tmp_path, "r.txt", "a\nb\n")
    with pytest.raises(FormatError, match="2 reference segments") as exc:
        score_mt_files(hyp, [ref])
    assert exc.value.path == str(ref) and exc.value.line == 2


def test_xml_mismatch_raises_from_score(tmp_path: Path) -> None:
    tgt = TARGET.replace('<s id="3">three</s>', "")
    with pytest.raises(FormatError, match="segment 3 is missing"):
        score_mt_files(write(tmp_path, "t.xml", tgt), [write(tmp_path, "r.xml", REFS)])


def test_empty_and_no_refs(tmp_path: Path) -> None:
    empty = write(tmp_path, "h.txt", "")
    with pytest.raises(FormatError, match="empty"):
        score_mt_files(empty, [empty])
    with pytest.raises(FormatError, match="no reference"):
        score_mt_files(write(tmp_path, "h2.txt", "a\n"), [])


@pytest.mark.parametrize(
    ("name", "text", "line", "message"),
    [
        ("h.csv", "judge,system,doc_id,seg_id,adequacy,fluency\nj,s,d,1,6,3\n", 2, "adequacy"),
        ("h.csv", "judge,system,doc_id,seg_id,adequacy,fluency\nj,s,d,1,3,2.25\n", 2, "fluency"),
        ("h.csv", "judge,system,seg_id,adequacy,fluency\n", 1, "header lacks doc_id"),
        ("h.csv", "judge,system,doc_id,seg_id,adequacy,fluency\nj,s,,1,3,2\n", 2, "missing"),
        ("h.jsonl", '{"judge":"j"}\n{bad\n', 1, "missing"),
        ("h2.jsonl", "\n{bad\n", 2, "bad JSON"),
    ],
)
def test_bad_human_sheet(tmp_path: Path, name: str, text: str, line: int, message: str) -> None:
    with pytest.raises(FormatError, match=message) as exc:
        read_human_sheet(write(tmp_path, name, text))
    assert exc.value.line == line


def test_bad_alignment_files(tmp_path: Path) -> None:
    gold = write(tmp_path, "g.txt", "0-0\n1-x\n")
    with pytest.raises(FormatError, match="bad link '1-x'") as exc:
        read_gold(gold)
    assert exc.value.line == 2
    sys_ = write(tmp_path, "s.txt", "0-0-p\n")
    with pytest.raises(FormatError, match="plain i-j") as exc:
        score_alignment_files(sys_, write(tmp_path, "g2.txt", "0-0\n"))
    assert exc.value.line == 1
    with pytest.raises(FormatError, match="1 system lines for 2 gold") as exc:
        score_alignment_files(
            write(tmp_path, "s2.txt", "0-0\n"), write(tmp_path, "g3.txt", "0-0\n1-1\n")
        )
    assert exc.value.path.endswith("s2.txt") and exc.value.line == 1
