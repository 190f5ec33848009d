"""Write the mteval-v13a fixtures of tests/test_mt_mteval_entities.py (README.md says how).

Writes each case's source, reference and test file as mteval XML (cases/NAME/),
runs mteval-v13a.pl on each case twice, once with the files named ``*.xml``
(mteval parses them with XML::Twig) and once with the same bytes named
``*.sgm`` (mteval reads them as SGML, with regular expressions), and keeps the
system, document and segment BLEU and NIST that its ``--metricsMATR`` option
writes (all digits) in expected.json. Imports nothing of onsite's: the
expected figures come from the Perl script alone.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPTIONS = ["-c", "--metricsMATR"]

# Hand-made cases, as raw XML segment content (test, references). Moses'
# escape-special-chars.perl writes ' " & | < > [ ] as &apos; &quot; &amp; &#124;
# &lt; &gt; &#91; &#93;; some writers put numeric references or CDATA instead.
HAND: dict[str, list[tuple[str, list[str]]]] = {
    "moses_escaped": [
        ("I don&apos;t know what it is , really .", ["I don't know what it is , really ."]),
        ("the pipe &#124; and A &amp; B are here", ["the pipe | and A & B are here today"]),
        ("he said &quot;no&quot; &#91; twice &#93;", ['he said "no" [ twice ]']),
        ("it&apos;s 5 &lt; 6", ["it's 5 < 6"]),
    ],
    "numeric_and_cdata": [
        ("A &#38; B &#x26; C", ["A & B & C"]),
        ("it is not a <![CDATA[<tag>]]> but text", ["it is not a <tag> but text"]),
        ("<![CDATA[x & y]]> and &#x27;quoted&#x27;", ["x & y and 'quoted'"]),
    ],
    "double_escaped": [
        # Text that is itself escaped, then written as XML: &amp;apos; is the
        # characters "&apos;" to an XML reader.
        ("don&amp;apos;t stop &amp;quot;now&amp;quot;", ['don\'t stop "now"']),
        ("a &amp;amp; b", ["a &amp; b"]),
    ],
    "short_segments": [
        ("yes", ["yes"]),
        ("no way", ["no way"]),
        ("it&apos;s", ["it's"]),
        ("", ["empty hypothesis here"]),
        ("a b c", ["a b c d e"]),
    ],
}
# A second reference for two hand-made cases (mteval takes any number).
SECOND_REF: dict[str, list[str]] = {
    "moses_escaped": [
        "I do not know what it is , really .",
        "the pipe &#124; and A &amp; B",
        "he said no twice",
        "it&apos;s five &lt; six",
    ],
    "short_segments": ["yes", "no", "it is", "nothing", "a b"],
}

VOCAB = (
    "the a cat sat on mat don&apos;t it&apos;s &apos;s &#124; &#38; &amp; &quot;hi&quot; "
    "&lt;b&gt; &#x27; 1,000 3.5 e-mail U.S. café x-ray ( ) , . ; : 42"
).split() + ["<![CDATA[x<y]]>", "<![CDATA[a&b]]>"]


def _random_text(rng: random.Random, low: int) -> str:
    return " ".join(rng.choice(VOCAB) for _ in range(rng.randint(low, 9)))


def random_cases() -> dict[str, list[list[tuple[str, list[str]]]]]:
    """20 random cases (seed 13): 1-3 documents of 1-4 segments, 1-3 references."""
    rng = random.Random(13)
    out = {}
    for i in range(1, 21):
        n_refs = rng.randint(1, 3)
        docs = []
        for _ in range(rng.randint(1, 3)):
            docs.append(
                [
                    (_random_text(rng, 0), [_random_text(rng, 1) for _ in range(n_refs)])
                    for _ in range(rng.randint(1, 4))
                ]
            )
        # mteval's copy in Moses dies when every hypothesis is empty: keep one word.
        if not any(h for doc in docs for h, _ in doc):
            docs[0][0] = ("the", docs[0][0][1])
        out[f"random{i:02d}"] = docs
    return out


def all_cases() -> dict[str, list[list[tuple[str, list[str]]]]]:
    """Every case: name -> documents -> segments (raw test text, raw references)."""
    cases: dict[str, list[list[tuple[str, list[str]]]]] = {}
    for name, segs in HAND.items():
        second = SECOND_REF.get(name)
        if second:
            segs = [(h, [*refs, second[i]]) for i, (h, refs) in enumerate(segs)]
        cases[name] = [segs]
    cases.update(random_cases())
    return cases


def _plain(text: str) -> str:
    # A hand-made reference is plain text: escape it once for XML.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _files(docs: list[list[tuple[str, list[str]]]], hand: bool) -> dict[str, str]:
    head = '<?xml version="1.0" encoding="UTF-8"?>\n<mteval>\n'
    n_refs = len(docs[0][0][1])
    src = [head, '<srcset setid="s" srclang="zh">\n']
    tst = [head, '<tstset setid="s" srclang="zh" trglang="en" sysid="sys">\n']
    for d, doc in enumerate(docs, 1):
        src.append(f'<doc docid="d{d}">\n')
        tst.append(f'<doc docid="d{d}" sysid="sys">\n')
        for s, (hyp, _) in enumerate(doc, 1):
            src.append(f'<seg id="{s}">x</seg>\n')
            tst.append(f'<seg id="{s}">{hyp}</seg>\n')
        src.append("</doc>\n")
        tst.append("</doc>\n")
    ref = [head]
    for r in range(n_refs):
        ref.append(f'<refset setid="s" srclang="zh" trglang="en" refid="r{r + 1}">\n')
        for d, doc in enumerate(docs, 1):
            ref.append(f'<doc docid="d{d}" sysid="r{r + 1}">\n')
            for s, (_, refs) in enumerate(doc, 1):
                text = _plain(refs[r]) if hand and r == 0 else refs[r]
                ref.append(f'<seg id="{s}">{text}</seg>\n')
            ref.append("</doc>\n")
        ref.append("</refset>\n")
    return {
        "src": "".join([*src, "</srcset>\n</mteval>\n"]),
        "ref": "".join([*ref, "</mteval>\n"]),
        "tst": "".join([*tst, "</tstset>\n</mteval>\n"]),
    }


def _scores(out: Path, metric: str) -> dict[str, object]:
    sys_score = (out / f"{metric}-sys.scr").read_text().split("\t")[-1].strip()
    docs = {
        line.split("\t")[2]: float(line.split("\t")[3])
        for line in (out / f"{metric}-doc.scr").read_text().splitlines()
    }
    segs = {
        f"{line.split(chr(9))[2]}/{line.split(chr(9))[3]}": float(line.split("\t")[4])
        for line in (out / f"{metric}-seg.scr").read_text().splitlines()
    }
    return {"system": float(sys_score), "documents": docs, "segments": segs}


def run_mteval(script: Path, case_dir: Path, suffix: str) -> dict[str, object]:
    """mteval-v13a's BLEU and NIST on a case's files named ``*<suffix>``."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for part in ("src", "ref", "tst"):
            shutil.copy(case_dir / f"{part}.xml", work / f"{part}{suffix}")
        cmd = ["perl", str(script), *OPTIONS]
        cmd += ["-r", f"ref{suffix}", "-s", f"src{suffix}", "-t", f"tst{suffix}"]
        subprocess.run(cmd, cwd=work, check=True, capture_output=True)
        return {"bleu": _scores(work, "BLEU"), "nist": _scores(work, "NIST")}


def main(script: Path) -> None:
    """Write cases/ and expected.json with the mteval-v13a.pl at ``script``."""
    expected: dict[str, object] = {}
    for name, docs in all_cases().items():
        case_dir = HERE / "cases" / name
        case_dir.mkdir(parents=True, exist_ok=True)
        for part, text in _files(docs, name in HAND).items():
            (case_dir / f"{part}.xml").write_text(text, encoding="utf-8")
        expected[name] = {
            "xml": run_mteval(script, case_dir, ".xml"),
            "sgml": run_mteval(script, case_dir, ".sgm"),
        }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
