"""scoring/cwmt_write.py, the one CWMT writer: what it writes reads back exactly, or is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scoring.cwmt_write import (
    TargetCandidate,
    TargetEntry,
    UnwritableText,
    ranked,
    refset_xml,
    srcset_xml,
    tgtset_xml,
)
from scoring.cwmt_xml import check_mirror, read_xml
from tests.helpers import FAKE_SERVE, run_site, write_site
from tests.test_export_formats import MT_REF, MT_SOURCE, cli

HEAD = {"setid": "s", "srclang": "zh", "tgtlang": "en"}


def tgt(entries: list[TargetEntry], description: str = "d") -> str:
    return tgtset_xml(entries, **HEAD, site="x", sysid="x", description=description)


def test_hostile_text_reads_back_as_written(tmp_path: Path) -> None:
    # A CR (a parser would turn it into LF), XML metacharacters, quotes in attributes.
    entries = [
        TargetEntry('d"1', "1", "a & b < c >\r", None, (TargetCandidate("x\ry", 0.5),)),
        TargetEntry('d"1', "2", ""),
        TargetEntry("d2", "1", "]]> &amp;"),
    ]
    path = tmp_path / "t.xml"
    path.write_text(tgt(entries, description="R&D <team>"), "utf-8")
    read = read_xml(path, "target")
    assert [(s.doc_id, s.seg_id, s.text) for s in read.segments] == [
        ('d"1', "1", "a & b < c >"),  # the reader strips the segment's ends
        ('d"1', "2", ""),
        ("d2", "1", "]]> &amp;"),
    ]
    assert "&#13;" in path.read_text("utf-8")
    assert read.system is not None and read.system.text == "R&D <team>"


def test_candidates_are_written_best_first_unscored_last() -> None:
    cands = (
        TargetCandidate("c", None),
        TargetCandidate("b", -2.0),
        TargetCandidate("n", float("nan")),
        TargetCandidate("a", 0.5),
        TargetCandidate("b2", -2.0),
    )
    assert [c.text for c in ranked(cands)] == ["a", "b", "b2", "c", "n"]
    text = tgt([TargetEntry("d", "1", "a", None, cands)])
    # No score attribute for a missing or non-finite score; ties keep their order.
    assert (
        '<cand score="0.5">a</cand><cand score="-2.0">b</cand><cand score="-2.0">b2</cand>'
        "<cand>c</cand><cand>n</cand>"
    ) in text


@pytest.mark.parametrize("where", ["text", "candidate", "description"])
def test_a_control_character_is_refused_naming_the_segment(where: str) -> None:
    bad = "a\x01b"
    entry = TargetEntry(
        "d1",
        "7",
        bad if where == "text" else "ok",
        None,
        (TargetCandidate(bad if where == "candidate" else "ok"),),
    )
    with pytest.raises(UnwritableText) as info:
        tgt([entry], description=bad if where == "description" else "d")
    if where == "description":
        assert info.value.doc_id is None and "system description" in str(info.value)
    else:
        assert (info.value.doc_id, info.value.seg_id) == ("d1", "7")
        assert "document 'd1' segment '7'" in str(info.value)


def test_source_and_references_mirror_each_other(tmp_path: Path) -> None:
    segs = [("d1", "1"), ("d1", "2"), ("d2", "1")]
    src = tmp_path / "src.xml"
    src.write_text(srcset_xml([TargetEntry(d, s, f"源{d}{s}") for d, s in segs], **HEAD), "utf-8")
    refs = tmp_path / "ref.xml"
    refs.write_text(
        refset_xml([[TargetEntry(d, s, f"r{n} {d}{s}") for d, s in segs] for n in (1, 2)], **HEAD),
        "utf-8",
    )
    source = read_xml(src, "source")
    split = read_xml(refs, "reference").split_references()
    assert [r.segments[0].ref_id for r in split] == ["r1", "r2"]
    assert [s.text for s in split[1].segments] == ["r2 d11", "r2 d12", "r2 d21"]
    for ref in split:
        assert not check_mirror(source, ref)


def test_export_refuses_a_translation_xml_cannot_carry(tmp_path: Path) -> None:
    root = tmp_path / "set"
    root.mkdir()
    (root / "source.xml").write_text(MT_SOURCE, encoding="utf-8")
    (root / "ref.xml").write_text(MT_REF, encoding="utf-8")
    plan = {"研发": {"output": {"text": "R\u0007D"}}}
    env = {"FAKE_PLAN": json.dumps(plan)}
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task="mt",
        task_keys={"kind": "mt"},
        budget={"seconds": 20.0, "hang_seconds": 20.0},
    )
    run_dir, _ = run_site(site)
    code, _, err = cli("export", str(run_dir), "--format", "cwmt-xml")
    assert code == 2 and "item d1:2" in err and "XML 1.0" in err and "--format jsonl" in err
    code, out, err = cli("export", str(run_dir), "--format", "jsonl")
    assert code == 0 and "\\u0007" in out


def test_attribute_quoting_is_the_standard_library_s() -> None:
    """Written here to keep xml.sax (and the urllib it imports) out of start-up; the same
    output as xml.sax.saxutils.quoteattr on random text."""
    import random
    from xml.sax.saxutils import quoteattr as reference

    from scoring.cwmt_write import quoteattr

    rng = random.Random(5)
    pieces = list("ab&<>\"'\n\r\t 中;") + ["&amp;", "]]>"]
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert quoteattr(text) == reference(text), repr(text)
