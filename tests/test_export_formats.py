"""Every task kind: live leaderboard == `onsite score --run` == exported files scored offline.

Each case runs a small real site (the scripted fake system answers by item), with
the hostile answers a participant can send: newlines, parentheses, XML
metacharacters, case the reference does not have, empty outputs, crashes (items
never answered). Then the job is exported in each of its kind's formats (the
hypotheses, and with --references the matching reference file) and scored by
`onsite score` as a participant would score them.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from harness.cli.main import main
from harness.kinds.registry import task_kinds
from tests.helpers import FAKE_SERVE, REPO, make_testset, run_site, write_site

# --------------------------------------------------------------------------- helpers


def cli(*args: str) -> tuple[int, str, str]:
    """`onsite ARGS` in this process (the CLI's own main): exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    handler = signal.getsignal(signal.SIGTERM)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(list(args))
    finally:
        signal.signal(signal.SIGTERM, handler)
    return code, out.getvalue(), err.getvalue()


def cli_json(*args: str) -> Any:
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")


def images(root: Path, widths: dict[str, int]) -> None:
    """Small real PNGs; the fake system tells them apart by their width."""
    root.mkdir(parents=True, exist_ok=True)
    for name, width in widths.items():
        cv2.imwrite(str(root / name), np.full((8, width), 128, dtype=np.uint8))


def find(result: dict[str, Any], key: str) -> float:
    for place in (result, result.get("overall") or {}):
        if isinstance(place.get(key), int | float):
            return float(place[key])
    raise KeyError(f"{key} not in {sorted(result)}")


@dataclass(frozen=True)
class Offline:
    """One export format, scored offline: the file suffixes and the `onsite score` line."""

    fmt: str
    ref_name: str
    hyp_name: str
    # (ref path, hyp path, the test set root) -> `onsite score` arguments
    args: Callable[[Path, Path, Path], list[str]]


@dataclass(frozen=True)
class Case:
    """A kind's small site, its family, and the formats to check."""

    kind: str
    family: str
    build: Callable[[Path], tuple[Path, dict[str, Any]]]  # tmp -> (test set, fake plan)
    offline: tuple[Offline, ...]
    expected: float  # the live headline, worked out by hand
    task_keys: dict[str, Any] = field(default_factory=dict)
    budget: dict[str, Any] = field(default_factory=lambda: {"seconds": 20.0, "hang_seconds": 20.0})


def ref_hyp(family: str, *extra: str) -> Callable[[Path, Path, Path], list[str]]:
    return lambda ref, hyp, root: [family, "--ref", str(ref), "--hyp", str(hyp), *extra]


# --------------------------------------------------------------------------- the sets


def asr_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = make_testset(
        tmp / "set",
        [
            ("u1", 1600, "hello world"),
            ("u2", 3200, "good morning"),
            ("u3", 4800, "bye now"),
            ("u4", 6400, "open (the) door"),
            ("u5", 8000, "say nothing"),
        ],
    )
    plan = {
        1600: {"text": "Hello World"},  # case folds: right
        3200: {"text": "good\nevening"},  # a newline: two words, one wrong
        4800: {"do": "crash"},  # never answered: two deletions
        6400: {"text": "open (the) door (u1)"},  # parentheses, even a fake id: one insertion
        8000: {"text": ""},  # empty: two deletions
    }
    return root, plan


def command_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = make_testset(
        tmp / "set",
        [("c1", 1600, "Open File"), ("c2", 3200, "打开 文件"), ("c3", 4800, "call home")],
    )
    plan = {
        1600: {"text": "open file"},  # case only: right (the field folds case)
        3200: {"text": "打开\n文件"},  # a newline next to CJK: right
        4800: {"do": "crash"},
    }
    return root, plan


def kws_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = make_testset(tmp / "set", [("k1", 1600, ""), ("k2", 1700, ""), ("k3", 1800, "")])
    (root / "text").unlink()
    jsonl(
        root / "slots.jsonl",
        [
            {"id": "k1", "setting": "transportation", "slots": {"from": ["北京"], "to": ["上海"]}},
            {"id": "k2", "setting": "weather", "slots": {"city": ["广州"]}},
            {"id": "k3", "setting": "weather", "slots": {"city": ["深圳"]}},
        ],
    )
    plan = {
        1600: {"output": {"slots": {"from": ["北京"], "to": ["南京\n"]}}},
        1700: {"output": {"slots": {"city": ["广州"]}}},
        1800: {"do": "crash"},
    }
    return root, plan


def ocr_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    images(root, {"s1.png": 100, "s2.png": 200, "s3.png": 300})
    jsonl(
        root / "truth.jsonl",
        [
            {"id": "s1", "char": "天", "subsets": ["standard"]},
            {"id": "s2", "char": "天", "subsets": ["standard"]},
            {"id": "s3", "char": "<", "subsets": ["degraded"]},
        ],
    )
    plan = {
        100: {"output": {"candidates": ["天", "夭"]}},
        200: {"output": {"candidates": ["夭", "天"]}},
        300: {"do": "crash"},
    }
    return root, plan


def face_detect_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    images(root, {"f1.png": 100, "f2.png": 200, "f3.png": 300})
    face = {"left_eye": [30, 30], "right_eye": [50, 30], "mouth": [40, 50]}
    jsonl(
        root / "faces.jsonl",
        [{"image": f"f{n}.png", "subset": "clean", "faces": [face]} for n in (1, 2, 3)],
    )
    plan = {
        100: {"output": {"boxes": [[20, 20, 40, 40, 0.9], [200, 200, 10, 10, 0.2]]}},
        200: {"output": {"boxes": [[0, 0, 5, 5, 0.5]]}},
        300: {"do": "crash"},
    }
    return root, plan


def face_identify_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    images(root / "gallery", {"id1.png": 50, "id2.png": 60})
    images(root, {"p1.png": 100, "p2.png": 200, "p3.png": 300})
    jsonl(
        root / "probes.jsonl",
        [
            {"probe": "p1.png", "id": "id1", "subset": "pose"},
            {"probe": "p2.png", "id": "id2", "subset": "illumination"},
            {"probe": "p3.png", "id": "id2"},
        ],
    )
    plan = {
        100: {"output": {"candidates": [["id1", 0.9], ["id2", 0.3]]}},
        200: {"output": {"candidates": [["id1", 0.8], ["id2", 0.7]]}},
        300: {"do": "crash"},
    }
    return root, plan


def face_verify_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    images(root, {"a.png": 100, "b.png": 200, "c.png": 300, "d.png": 400})
    jsonl(
        root / "pairs.jsonl",
        [
            {"a": "a.png", "b": "b.png", "genuine": True},
            {"a": "b.png", "b": "c.png", "genuine": False},
            {"a": "c.png", "b": "d.png", "genuine": True},
            {"a": "d.png", "b": "a.png", "genuine": False},
        ],
    )
    plan = {
        100: {"output": {"score": 0.9}},
        200: {"output": {"score": 0.6}},
        300: {"output": {"score": 0.4}},
        400: {"do": "crash"},
    }
    return root, plan


def lid_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = make_testset(tmp / "set", [("l1", 1600, ""), ("l2", 1700, ""), ("l3", 1800, "")])
    (root / "text").unlink()
    (root / "lang").write_text("l1 en\nl2 zh\nl3 en-GB\n", encoding="utf-8")
    plan = {
        1600: {"output": {"language": "en"}},
        1700: {"output": {"language": "en"}},
        1800: {"output": {"language": "en-gb"}},  # codes compare case-insensitively
    }
    return root, plan


MT_SOURCE = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<srcset setid="zh_en_news_trans" srclang="zh" tgtlang="en">\n'
    '<doc docid="d1"><s id="1">你好世界</s><s id="2">研发</s></doc>\n'
    '<doc docid="d2"><s id="1">我们喜欢北京</s><s id="2">再见</s><s id="3">空</s></doc>\n'
    "</srcset>\n"
)
MT_REF = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<refset setid="zh_en_news_trans" srclang="zh" tgtlang="en">\n'
    '<doc docid="d1" site="r1"><s id="1">hello world</s><s id="2">R&amp;D &lt;b&gt;</s></doc>\n'
    '<doc docid="d2" site="r1"><s id="1">we love beijing</s><s id="2">goodbye (now)</s>'
    '<s id="3">nothing here</s></doc>\n'
    "</refset>\n"
)


def mt_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    root.mkdir()
    (root / "source.xml").write_text(MT_SOURCE, encoding="utf-8")
    (root / "ref.xml").write_text(MT_REF, encoding="utf-8")
    plan = {
        "你好世界": {
            "output": {
                "text": "hello\nworld",
                "nbest": [
                    {"text": "hello world", "score": 0.9},
                    {"text": "hi world", "score": 0.4},
                ],
            }
        },
        "研发": {"output": {"text": "R&D <b>"}},  # XML metacharacters, literal
        "我们喜欢北京": {"output": {"text": "we like beijing\r"}},
        "再见": {"do": "crash"},
        "空": {"output": {"text": ""}},
    }
    return root, plan


def cws_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    root.mkdir()
    (root / "gold.txt").write_text(
        "我们 喜欢 北京\n\n他 在 北京 大学 学习\n（ 你好 ）\n", encoding="utf-8"
    )
    (root / "words.txt").write_text("我们\n喜欢\n北京\n大学\n", encoding="utf-8")
    plan = {
        "我们喜欢北京": {"output": {"text": "我们 喜欢\n北京"}},
        "他在北京大学学习": {"output": {"text": "他 在 北京大学 学习"}},
        "（你好）": {"do": "crash"},
    }
    return root, plan


def ner_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    root.mkdir()
    (root / "gold.conll").write_text(
        "张三 B-PER\n在 O\n北京 B-LOC\n工作 O\n\n李四 B-PER\n去 O\n上海 B-LOC\n\n"
        "王五 B-PER\n好 O\n\n( O\nIBM S-ORG\n) O\n",
        encoding="utf-8",
    )
    plan = {
        "张三 在 北京 工作": {"output": {"tags": ["B-PER", "O", "B-LOC", "O"]}},
        "李四 去 上海": {"output": {"tags": ["O", "O", "B-LOC"]}},
        "王五 好": {"do": "crash"},
        "( IBM )": {"output": {"tags": ["O", "S-ORG"]}},  # wrong length: invalid, no credit
    }
    return root, plan


def pos_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    root.mkdir()
    (root / "gold.pos").write_text(
        "我们/r 喜欢/v 北京/ns\n他/r 在/p 北京/ns 学习/v\n再见/v\n", encoding="utf-8"
    )
    (root / "train.pos").write_text("我们/r 在/p 学习/v\n北京/ns 喜欢/v\n", encoding="utf-8")
    plan = {
        "我们喜欢北京": {"output": {"text": "我们/r 喜欢/v\n北京/ns"}},
        "他在北京学习": {"output": {"text": "他/n 在/p 北京学习/v"}},
        "再见": {"do": "crash"},
    }
    return root, plan


def textcat_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    (root / "docs").mkdir(parents=True)
    docs = {"d1": "football", "d2": "stocks", "d3": "phones", "d4": "football and stocks"}
    for doc, text in docs.items():
        (root / "docs" / f"{doc}.txt").write_text(text, encoding="utf-8")
    (root / "gold.tsv").write_text(
        "d1\tsports\nd2\teconomy\nd3\ttech\nd4\tsports,economy\n", encoding="utf-8"
    )
    plan = {
        "football": {"output": {"categories": ["sports"]}},
        "stocks": {"output": {"categories": []}},  # an empty answer
        "phones": {"do": "crash"},
        "football and stocks": {"output": {"categories": ["economy", "sports"]}},
    }
    return root, plan


def ir_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    root = tmp / "set"
    root.mkdir()
    topics = "".join(
        f"<top>\n<num> Number: {n}\n<title> {t}\n<desc> Description: {t}.\n"
        f"<narr> Narrative: {t}.\n</top>\n\n"
        for n, t in (("001", "football"), ("002", "stock market"), ("003", "phone"))
    )
    (root / "topics").write_text(topics, encoding="utf-8")
    (root / "qrels").write_text(
        "001 0 D1 1\n001 0 D3 1\n002 0 D2 1\n002 0 D3 0\n003 0 D5 1\n", encoding="utf-8"
    )
    plan = {
        "football": {"output": {"results": [["D3", 1.0], ["D1", 2.0], ["D9", 0.5]]}},
        "stock market": {"output": {"results": [["D3", 2.0], ["D2", 2.0]]}},
        "phone": {"do": "crash"},
    }
    return root, plan


def combination_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    """The MT set above with two anonymous systems' candidate lists, as combination-set
    writes them (through the same writer)."""
    from scoring.cwmt_write import TargetCandidate, TargetEntry, tgtset_xml
    from scoring.cwmt_xml import load_mt_file

    root, _ = mt_set(tmp)
    source = load_mt_file(root / "source.xml", "source")
    (root / "candidates").mkdir()
    for n, best in enumerate(("hello world & <b>", "hi world"), 1):
        entries = [
            TargetEntry(s.doc_id, s.seg_id, best, -1.0 * n, (TargetCandidate(best, -1.0 * n),))
            for s in source.segments
        ]
        (root / "candidates" / f"sys0{n}.xml").write_text(
            tgtset_xml(entries, setid="zh_en_news_trans", srclang="zh", tgtlang="en",
                       site=f"sys0{n}", sysid=f"sys0{n}", description="withheld"),
            encoding="utf-8",
        )  # fmt: skip
    plan = {
        "你好世界": {"output": {"text": "hello world"}},
        "研发": {"output": {"text": "R&D <b>"}},
        "我们喜欢北京": {"output": {"text": "we love beijing\r"}},
        "再见": {"do": "crash"},
        "空": {"output": {"text": ""}},
    }
    return root, plan


SUMMARY_DOCS = {
    "a": "The cat sat on the mat. It was happy.",
    "b": "Stocks fell today. Investors worried.",
    "c": "Rain is coming tomorrow.",
    "d": "A long story about nothing.",
}


def summaries(root: Path, lang: str, docs: dict[str, str], refs: list[dict[str, str]]) -> Path:
    (root / "docs").mkdir(parents=True)
    for doc, text in docs.items():
        (root / "docs" / f"{doc}.txt").write_text(text, encoding="utf-8")
    for n, ref in enumerate(refs, 1):
        jsonl(root / f"ref{n}.jsonl", [{"id": d, "text": t} for d, t in ref.items()])
    (root / "lang").write_text(lang + "\n", encoding="utf-8")
    return root


def summarization_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    refs = [
        {"a": "The cat sat on the mat.", "b": "Stocks fell.", "c": "Rain tomorrow.",
         "d": "A story."},
        {"a": "A cat was on a mat."},  # a second reference for one document
    ]  # fmt: skip
    root = summaries(tmp / "set", "en", SUMMARY_DOCS, refs)
    plan = {
        SUMMARY_DOCS["a"]: {"output": {"text": "The cat sat\non the mat & <b>"}},
        # Nine words over a limit of eight: invalid_output, never scored.
        SUMMARY_DOCS["b"]: {"output": {"text": "one two three four five six seven eight nine"}},
        SUMMARY_DOCS["c"]: {"do": "crash"},
        SUMMARY_DOCS["d"]: {"output": {"text": ""}},
    }
    return root, plan


ZH_DOCS = {"x": "北京今天下雨。明天晴天。", "y": "上海股市上涨。", "z": "广州天气很好。"}


def summarization_zh_set(tmp: Path) -> tuple[Path, dict[str, Any]]:
    refs = [{"x": "北京今天下雨", "y": "上海股市上涨", "z": "广州天气好"}]
    root = summaries(tmp / "set", "zh", ZH_DOCS, refs)
    plan = {
        # Over the limit of 6 characters: cut to 北京今天下雨 before scoring.
        ZH_DOCS["x"]: {"output": {"text": "北京今天下雨了，明天晴天"}},
        ZH_DOCS["y"]: {"output": {"text": "上海\n股市 上涨"}},
        ZH_DOCS["z"]: {"do": "crash"},
    }
    return root, plan


# --------------------------------------------------------------------------- the cases

ASR_ARGS = ref_hyp("asr")
SCORE_JSONL = Offline("score-jsonl", "ref.jsonl", "hyp.jsonl", ref_hyp("KIND"))

CASES = [
    # WER: u1 0, u2 1 sub, u3 2 del, u4 1 ins, u5 2 del: 6 errors over 11 words.
    Case(
        "asr",
        "asr",
        asr_set,
        (
            Offline("trn", "ref.trn", "hyp.trn", ASR_ARGS),
            Offline("kaldi", "ref.txt", "hyp.txt", ASR_ARGS),
            Offline("ctm", "ref.stm", "hyp.ctm", ASR_ARGS),
        ),
        6 / 11,
    ),
    Case(
        "command",
        "command",
        command_set,
        (
            Offline("trn", "ref.trn", "hyp.trn", ref_hyp("command")),
            Offline("kaldi", "ref.txt", "hyp.txt", ref_hyp("command")),
            Offline("score-jsonl", "ref.jsonl", "hyp.jsonl", ref_hyp("command")),
        ),
        2 / 3,
        task_keys={"kind": "command"},
    ),
    # Characters (an ASCII run is one token), case kept: 世界 vs 世介 one sub, Ab vs ab
    # one sub (case counts), 再见 never answered: 2 del. 4 errors over 8 tokens.
    Case(
        "asr",
        "asr",
        lambda tmp: (
            make_testset(
                tmp / "set",
                [("z1", 1600, "你好世界"), ("z2", 3200, "Ab 好"), ("z3", 4800, "再见")],
            ),
            {1600: {"text": "你好\n世介"}, 3200: {"text": "ab好"}, 4800: {"do": "crash"}},
        ),
        (
            Offline(
                "trn", "ref.trn", "hyp.trn", ref_hyp("asr", "--unit", "char", "--case-sensitive")
            ),
            Offline(
                "ctm", "ref.stm", "hyp.ctm", ref_hyp("asr", "--unit", "char", "--case-sensitive")
            ),
        ),
        4 / 8,
        task_keys={"unit": "char", "case_sensitive": True},
    ),
    # Slots: 北京 right, 南京 wrong, 广州 right, 深圳 missing: 2 of 4.
    Case("kws", "kws", kws_set, (SCORE_JSONL,), 2 / 4, task_keys={"kind": "kws"}),
    # RS(天) = 1/2, RS(<) = 0 (never answered): R = 1/4.
    Case("ocr", "ocr", ocr_set, (SCORE_JSONL,), 1 / 4, task_keys={"kind": "ocr"}),
    Case(
        "face-detect",
        "faces-detect",
        face_detect_set,
        (SCORE_JSONL,),
        1 / 3,
        task_keys={"kind": "face-detect"},
    ),
    Case(
        "face-identify",
        "faces-identify",
        face_identify_set,
        (SCORE_JSONL,),
        1 / 3,
        task_keys={"kind": "face-identify"},
    ),
    Case(
        "face-verify",
        "faces-verify",
        face_verify_set,
        (SCORE_JSONL,),
        -1.0,
        task_keys={"kind": "face-verify"},
    ),
    Case(
        "lid",
        "lid",
        lid_set,
        (Offline("score-jsonl", "lang", "hyp.jsonl", ref_hyp("lid")),),
        2 / 3,
        task_keys={"kind": "lid"},
    ),
    Case(
        "mt",
        "mt",
        mt_set,
        (Offline("cwmt-xml", "ref.xml", "hyp.xml", ref_hyp("mt")),),
        -1.0,  # checked against scoring's own BLEU of the same segments, below
        task_keys={"kind": "mt"},
    ),
    # A plain-text source: one document named after the file, the task as the set id.
    Case(
        "mt",
        "mt",
        lambda tmp: (
            REPO / "site_config" / "data" / "demo-text" / "mt",
            {"你好世界": {"output": {"text": "hello (world)"}}, "我们喜欢北京": {"do": "crash"}},
        ),
        (Offline("cwmt-xml", "ref.xml", "hyp.xml", ref_hyp("mt")),),
        -1.0,
        task_keys={"kind": "mt"},
    ),
    # The combined translations: the mt kind's CWMT files, BLEU only.
    Case(
        "combination",
        "mt",
        combination_set,
        (Offline("cwmt-xml", "ref.xml", "hyp.xml", ref_hyp("mt", "--metrics", "bleu")),),
        -1.0,
        task_keys={"kind": "combination"},
    ),
    # The summaries as scored: ROUGE of the answered ones; over the limit is invalid
    # (the site's choice; the default truncates, as ROUGE-1.5.5's -l).
    Case(
        "summarization",
        "rouge",
        summarization_set,
        (Offline("score-jsonl", "ref.jsonl", "hyp.jsonl", ref_hyp("rouge")),),
        -1.0,
        task_keys={"length_limit": 8, "length_unit": "word", "over_limit": "invalid"},
    ),
    # truncate: the export holds the text cut at the limit, so no --length-limit offline.
    # Characters: x cut to 北京今天下雨, the reference (1); y the reference's characters
    # (1); z unanswered (0): ROUGE-2 F 2/3 (uncut, x would score below 1).
    Case(
        "summarization",
        "rouge",
        summarization_zh_set,
        (Offline("score-jsonl", "ref.jsonl", "hyp.jsonl", ref_hyp("rouge", "--lang", "zh")),),
        2 / 3,
        task_keys={"length_limit": 6, "over_limit": "truncate"},
    ),
    # Line 1 exact (3 of 3); line 3: 他 在 北京大学 学习 (3 of 4 test, 3 of 5 gold);
    # line 4 unanswered (3 gold words). F = 2 * 6 / (7 + 11).
    Case(
        "cws",
        "cws",
        cws_set,
        (
            Offline(
                "sighan",
                "gold.txt",
                "test.txt",
                lambda r, h, root: [
                    "cws",
                    "--gold",
                    str(r),
                    "--test",
                    str(h),
                    "--words",
                    str(root / "words.txt"),
                ],
            ),
        ),  # fmt: skip
        12 / 18,
        task_keys={"kind": "cws"},
    ),
    # Chunks: 张三 北京 上海 found, 李四 missed; 王五 and IBM unanswered (invalid):
    # P = 3/3, R = 3/6, F1 = 2/3.
    Case(
        "ner",
        "ner",
        ner_set,
        (
            Offline(
                "conll", "conlleval.txt", "hyp.conll", lambda r, h, root: ["ner", "--conll", str(r)]
            ),
        ),
        2 / 3,
        task_keys={"kind": "ner"},
    ),
    # 3 of 3 right on line 1, 在/p of 3 test words on line 2; line 3 unanswered:
    # P = 4/6, R = 4/8, F = 2 * 4 / 14.
    Case(
        "pos",
        "pos",
        pos_set,
        (
            Offline(
                "sighan",
                "gold.pos",
                "test.pos",
                lambda r, h, root: [
                    "pos",
                    "--gold",
                    str(r),
                    "--test",
                    str(h),
                    "--train",
                    str(root / "train.pos"),
                ],
            ),
        ),  # fmt: skip
        8 / 14,
        task_keys={"kind": "pos"},
    ),
    Case(
        "textcat",
        "textcat",
        textcat_set,
        (
            Offline(
                "tsv",
                "gold.tsv",
                "pred.tsv",
                lambda r, h, root: ["textcat", "--gold", str(r), "--pred", str(h)],
            ),
        ),
        -1.0,
        task_keys={"kind": "textcat"},
    ),
    # 001: D1 then D3, AP 1; 002: D2 and D3 tie, trec_eval puts D3 first: AP 1/2; 003 0.
    Case(
        "ir",
        "ir",
        ir_set,
        (
            Offline(
                "trec",
                "qrels",
                "run",
                lambda r, h, root: ["ir", "--qrels", str(r), "--run", str(h), "--complete"],
            ),
        ),
        1.5 / 3,
        task_keys={"kind": "ir"},
    ),
]


def test_the_cases_name_kinds_and_families_that_read_runs() -> None:
    # The families `--run` reads a run for, and the kinds they read, come from the kinds;
    # every one of them is run on every kind by tests/test_kind_conformance.py, and the
    # cases here add the hostile answers.
    from harness.kinds.registry import run_kinds, score_families

    readable = {name for name in score_families() if run_kinds(name)}
    scored = {kind.name for name in readable for kind in run_kinds(name)}
    assert {case.kind for case in CASES} <= scored
    assert {case.family for case in CASES} <= readable


def _run(case: Case, tmp: Path) -> Path:
    root, plan = case.build(tmp)
    env = {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})}
    site = write_site(
        tmp / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task=case.kind.replace("-", "_"),
        task_keys={"kind": case.kind, **case.task_keys},
        budget=case.budget,
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    return run_dir


def _live(run_dir: Path) -> dict[str, Any]:
    [row] = cli_json("report", str(run_dir))
    return row


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}-{n}" for n, c in enumerate(CASES)])
def test_live_equals_score_run_equals_exported_files(case: Case, tmp_path: Path) -> None:
    run_dir = _run(case, tmp_path)
    row = _live(run_dir)
    live = row["score"]
    assert live is not None
    if case.expected >= 0:
        assert live == pytest.approx(case.expected), row
    key = "wer" if case.kind == "asr" else row["metric"]
    task = case.kind.replace("-", "_")
    # --run with the task and system named, and (one of each in the run) without.
    by_run = cli_json(
        "score", case.family, "--run", str(run_dir), "--task", task, "--system", "fake"
    )
    assert find(by_run, key) == pytest.approx(live, abs=1e-12)
    assert find(cli_json("score", case.family, "--run", str(run_dir)), key) == pytest.approx(live)
    for offline in case.offline:
        files = {}
        for which, name in (("ref", offline.ref_name), ("hyp", offline.hyp_name)):
            path = tmp_path / "export" / offline.fmt / name
            path.parent.mkdir(parents=True, exist_ok=True)
            extra = ["--references"] if which == "ref" else []
            code, _, err = cli(
                "export", str(run_dir), "--task", task, "--system", "fake",
                "--format", offline.fmt, "-o", str(path), *extra,
            )  # fmt: skip
            assert code == 0, err
            files[which] = path
        args = offline.args(files["ref"], files["hyp"], tmp_path / "set")
        args = [case.family if a == "KIND" else a for a in args]
        result = cli_json("score", *args)
        assert find(result, key) == pytest.approx(live, abs=1e-12), (offline.fmt, result)
        check_format(case.kind, offline.fmt, files["ref"], files["hyp"], tmp_path)


def check_format(kind: str, fmt: str, ref: Path, hyp: Path, tmp: Path) -> None:
    """The format's own rules, beyond what `onsite score` reads back."""
    hyp_text = hyp.read_text(encoding="utf-8")
    if fmt == "trn":
        lines = hyp_text.splitlines()
        ids = [re.fullmatch(r".*\((\S+)\)", line).group(1) for line in lines]  # type: ignore[union-attr]
        assert len(ids) == len(set(ids)) == len(ref.read_text().splitlines())
        if kind == "asr" and "(u4)" in hyp_text:
            assert lines[1] == "good evening (u2)", "a newline stays on the item's line"
            assert lines[2] == " (u3)", "an unanswered item is an empty hypothesis"
            assert lines[3] == "open (the) door (u1) (u4)", "the id is the last parentheses"
    if fmt == "ctm":
        # file channel begin duration word: every word inside its item's STM segment.
        spans = {
            f[0]: (float(f[3]), float(f[4]))
            for f in (line.split() for line in ref.read_text().splitlines())
        }
        for line in hyp_text.splitlines():
            name, channel, begin, duration, _word = line.split()
            mid = float(begin) + float(duration) / 2
            assert channel == "A" and spans[name][0] <= mid <= spans[name][1]
        assert "u3" not in {line.split()[0] for line in hyp_text.splitlines()}
    if fmt == "cwmt-xml" and "zh_en_news_trans" in hyp_text:
        if kind == "mt":
            assert '<cand score="0.9">hello world</cand><cand score="0.4">' in hyp_text
        assert "R&amp;D &lt;b&gt;" in hyp_text and "&#13;" in hyp_text
        # The CWMT checker takes the file under the naming rule, against the source.
        named = tmp / "zh_en_news_trans-fake-primary-fake.xml"
        named.write_text(hyp_text, encoding="utf-8")
        code, out, err = cli("score", "mt-check", "--src", str(tmp / "set" / "source.xml"),
                             "--hyp", str(named), "--json")  # fmt: skip
        assert code == 0, out + err
        assert json.loads(out)["ok"] is True
    if fmt == "conll":
        blocks = hyp_text.split("\n\n")
        assert blocks[2].split() == ["王五", "O", "好", "O"], "unanswered: all O"
        assert ref.read_text(encoding="utf-8").splitlines()[0] == "张三 B-PER B-PER"


def test_mt_bleu_is_scorings_own_and_mt_check_run_passes(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.kind == "mt")
    run_dir = _run(case, tmp_path)
    row = _live(run_dir)
    from scoring.mt import MtSegment, as_sgml_text
    from scoring.mt_batch import score_mt_batch

    hyps = {
        ("d1", "1"): "hello\nworld",
        ("d1", "2"): "R&D <b>",
        ("d2", "1"): "we like beijing\r",
        ("d2", "2"): "",
        ("d2", "3"): "",
    }
    refs = {
        ("d1", "1"): "hello world",
        ("d1", "2"): "R&D <b>",
        ("d2", "1"): "we love beijing",
        ("d2", "2"): "goodbye (now)",
        ("d2", "3"): "nothing here",
    }
    segments = [
        MtSegment(d, s, as_sgml_text(hyps[(d, s)]), (as_sgml_text(refs[(d, s)]),))
        for (d, s) in hyps
    ]
    assert row["score"] == pytest.approx(score_mt_batch(segments, "en").to_dict()["bleu"])
    code, out, err = cli("score", "mt-check", "--run", str(run_dir), "--json")
    assert code == 0, out + err
    assert json.loads(out)["ok"] is True


def test_a_combination_job_is_checked_and_scored_by_bleu_alone(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.kind == "combination")
    run_dir = _run(case, tmp_path)
    row = _live(run_dir)
    by_run = cli_json("score", "mt", "--run", str(run_dir))
    assert by_run["bleu"] == pytest.approx(row["score"], abs=1e-12)
    assert "nist" not in by_run and "mwer" not in by_run, "CWMT: combination by BLEU only"
    code, out, err = cli("score", "mt-check", "--run", str(run_dir), "--json")
    assert code == 0 and json.loads(out)["ok"] is True, out + err


# --------------------------------------------------------------------------- hostile and odd


def _asr_run(tmp: Path, plan: dict[int, dict[str, Any]], limit: int | None = None) -> Path:
    items = [("u1", 1600, "a b"), ("u2", 3200, "c d"), ("u3", 4800, "e (f)")][: len(plan)]
    root = make_testset(tmp / "set", items)
    env = {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})}
    site = write_site(tmp / "site.toml", root, {"fake": {"command": FAKE_SERVE, "env": env}})
    run_dir, _ = run_site(site, limit=limit)
    return run_dir


def test_a_format_that_cannot_carry_an_output_refuses_and_names_one_that_can(
    tmp_path: Path,
) -> None:
    # ";;" starts a comment line in sclite's trn; most texts ending in "(...)" make a
    # Kaldi file read back as trn. Either would change the number: refused, not mangled.
    run_dir = _asr_run(
        tmp_path, {1600: {"text": ";; a b"}, 3200: {"text": "c (d)"}, 4800: {"text": "e (f)"}}
    )
    code, _, err = cli("export", str(run_dir), "--format", "trn")
    assert code == 2 and "item u1" in err and "';;'" in err and "--format kaldi" in err
    code, _, err = cli("export", str(run_dir), "--format", "kaldi")
    assert code == 2 and "read back as trn" in err and "--format trn" in err
    # The hypotheses still score offline through the format that carries them.
    [row] = cli_json("report", str(run_dir))
    ref, hyp = tmp_path / "ref.txt", tmp_path / "hyp.txt"
    run_dir_ok = _asr_run(tmp_path / "two", {1600: {"text": ";; a b"}, 3200: {"text": "c d"}})
    assert cli("export", str(run_dir_ok), "--format", "kaldi", "-o", str(hyp))[0] == 0
    assert (
        cli("export", str(run_dir_ok), "--format", "kaldi", "--references", "-o", str(ref))[0] == 0
    )
    [row] = cli_json("report", str(run_dir_ok))
    assert cli_json("score", "asr", "--ref", str(ref), "--hyp", str(hyp))["wer"] == row["wer"]
    assert row["wer"] == pytest.approx(1 / 4)  # ";;" is an inserted word


def test_score_run_says_what_is_missing_or_contradictory(tmp_path: Path) -> None:
    run_dir = _asr_run(tmp_path, {1600: {"text": "a b"}})
    code, _, err = cli("score", "asr")
    assert code == 2 and "give --ref and --hyp" in err and "--run RUN_DIR" in err
    code, _, err = cli("score", "asr", "--run", str(run_dir), "--ref", "x.trn")
    assert code == 2 and "not both" in err
    code, _, err = cli("score", "asr", "--ref", "r", "--hyp", "h", "--task", "asr")
    assert code == 2 and "--task and --system go with --run" in err
    code, _, err = cli("score", "mt", "--run", str(run_dir))
    assert code == 2 and "task 'asr' is of kind asr" in err and "kind mt" in err
    code, _, err = cli("score", "asr", "--run", str(run_dir), "--system", "nobody")
    assert code == 2 and "no system 'nobody'" in err and "fake" in err
    code, _, err = cli("score", "asr", "--run", str(tmp_path))
    assert code == 2 and "not a run directory" in err
    # ir's own --run is the TREC run file; only a directory means a run directory.
    code, _, err = cli("score", "ir", "--run", str(tmp_path / "nofile"))
    assert code == 2 and "give --qrels" in err


def test_a_job_stopped_early_is_scored_over_its_completed_items(tmp_path: Path) -> None:
    run_dir = _asr_run(
        tmp_path, {1600: {"text": "a b"}, 3200: {"text": "c x"}, 4800: {"text": "e"}}, limit=2
    )
    [row] = cli_json("report", str(run_dir))
    assert row["completed"] == 2 and row["wer"] == pytest.approx(1 / 4)
    code, out, err = cli("score", "asr", "--run", str(run_dir), "--json")
    assert code == 0 and json.loads(out)["wer"] == row["wer"]
    assert "completed 2 of 3 items" in err
    code, out, err = cli("export", str(run_dir), "--format", "trn")
    assert out.splitlines() == ["a b (u1)", "c x (u2)"]
    assert "completed 2 of 3 items" in err


def test_command_scores_the_test_sets_own_text_file(tmp_path: Path) -> None:
    # The issue: `score command --ref <set>/text` failed ("invalid JSON") and the same
    # outputs gave 33.3% live and 0.0% offline (case). Now both read, and agree.
    root = make_testset(
        tmp_path / "set", [("c1", 1600, "Open File"), ("c2", 3200, "Stop"), ("c3", 4800, "Go")]
    )
    env = {"FAKE_PLAN": json.dumps({"1600": {"text": "OPEN FILE"}, "3200": {"text": "halt"}})}
    site = write_site(
        tmp_path / "site.toml",
        root,
        {"fake": {"command": FAKE_SERVE, "env": env}},
        task="cmd",
        task_keys={"kind": "command"},
    )
    run_dir, _ = run_site(site)
    [row] = cli_json("report", str(run_dir))
    assert row["correct_rate"] == pytest.approx(1 / 3)
    hyp = tmp_path / "hyp.jsonl"
    assert cli("export", str(run_dir), "--format", "score-jsonl", "-o", str(hyp))[0] == 0
    offline = cli_json("score", "command", "--ref", str(root / "text"), "--hyp", str(hyp))
    assert offline["overall"]["correct_rate"] == row["correct_rate"]
    strict = cli_json(
        "score", "command", "--ref", str(root / "text"), "--hyp", str(hyp), "--case-sensitive"
    )
    assert strict["overall"]["correct_rate"] == 0.0
    code, out, _ = cli("score", "command", "--run", str(run_dir))
    assert code == 0 and "correct_rate" in out, "a table without --json"


def test_docs_formats_table_lists_each_formats_kinds() -> None:
    # docs/formats.md's table is a promise: each format's kinds as the registry has them.
    text = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    documented: dict[str, set[str]] = {}
    for line in text.splitlines():
        m = re.match(r"\| `([a-z-]+)` \| ([^|]+) \|", line)
        if m:
            documented[m.group(1)] = {k.strip() for k in m.group(2).split(",")}
    actual: dict[str, set[str]] = {}
    for kind in task_kinds().values():
        for fmt in kind.formats:
            actual.setdefault(fmt, set()).add(kind.name)
    every = actual.pop("jsonl")
    assert documented.pop("jsonl") == {"every kind"} and every == set(task_kinds())
    # A kind with a page of its own (docs/kind-<name>.md) may document its files there.
    for fmt, kinds in actual.items():
        for kind in list(kinds):
            page = REPO / "docs" / f"kind-{kind}.md"
            own = page.is_file() and f"`{fmt}`" in page.read_text(encoding="utf-8")
            if own and kind not in documented.get(fmt, set()):
                kinds.discard(kind)
    assert documented == actual


def test_jsonl_references_are_each_items_own(tmp_path: Path) -> None:
    # pos references share the training counts: not repeated on every line.
    case = next(c for c in CASES if c.kind == "pos")
    run_dir = _run(case, tmp_path)
    code, out, err = cli("export", str(run_dir), "--format", "jsonl", "--references")
    assert code == 0, err
    first = json.loads(out.splitlines()[0])
    assert first == {
        "id": "1",
        "reference": {"tokens": [["我们", "r"], ["喜欢", "v"], ["北京", "ns"]]},
    }
    code, out, _ = cli("export", str(run_dir), "--format", "jsonl")
    verdicts = [json.loads(line)["verdict"] for line in out.splitlines()]
    assert verdicts == ["ok", "ok", "crashed"]


def test_ctm_and_stm_readers(tmp_path: Path) -> None:
    from scoring import FormatError, read_any_transcripts, read_ctm, read_stm

    ctm = tmp_path / "h.ctm"
    # Out of order in the file, two channels, a confidence: words come in time order.
    ctm.write_text(
        ";; comment\nu1 A 0.50 0.2 world 0.9\nu1 A 0.10 0.2 hello\nu2 1 0 1 x\n", "utf-8"
    )
    assert read_ctm(ctm) == {"u1": "hello world", "u2": "x"}
    stm = tmp_path / "r.stm"
    stm.write_text(
        "u1 A spk 2.0 3.0 <o,f0,male> world\nu1 A spk 0.0 1.0 hello\n"
        "u1 A spk 1.0 2.0 IGNORE_TIME_SEGMENT_IN_SCORING\nu2 A spk 0 1\n",
        "utf-8",
    )
    assert read_stm(stm) == {"u1": "hello world", "u2": ""}
    assert read_any_transcripts(stm) == read_stm(stm)
    (tmp_path / "bad.ctm").write_text("u1 A zero 0.2 hello\n", "utf-8")
    with pytest.raises(FormatError) as info:
        read_ctm(tmp_path / "bad.ctm")
    assert info.value.line == 1 and "'zero' is not a number" in str(info.value)
    (tmp_path / "short.stm").write_text("u1 A spk 0.0\n", "utf-8")
    with pytest.raises(FormatError, match="4 fields, expected at least 5"):
        read_stm(tmp_path / "short.stm")
    (tmp_path / "nan.ctm").write_text("u1 A nan 0.2 hello\n", "utf-8")
    with pytest.raises(FormatError, match="not a finite number"):
        read_ctm(tmp_path / "nan.ctm")
    # Scored: a reference the CTM does not name is an empty hypothesis (deletions) ...
    ref = tmp_path / "two.stm"
    ref.write_text("u1 A s 0 1 hello world\nu3 A s 0 1 bye now\n", "utf-8")
    hyp = tmp_path / "one.ctm"
    hyp.write_text("u1 A 0 0.5 hello\nu1 A 0.5 0.5 world\n", "utf-8")
    assert cli_json("score", "asr", "--ref", str(ref), "--hyp", str(hyp))["wer"] == 0.5
    # ... and a CTM file that is no reference is an error, as any unknown id.
    code, _, err = cli("score", "asr", "--ref", str(ref), "--hyp", str(ctm))
    assert code == 2 and "not in" in err and "'u2'" in err


def test_a_runs_outputs_file_given_as_a_transcript_says_use_run(tmp_path: Path) -> None:
    # The issue: `score asr --hyp runs/X/outputs/asr/S.jsonl` read JSON lines as ids,
    # `score mt` read them as a document named after the file.
    run_dir = _asr_run(tmp_path, {1600: {"text": "a b"}})
    outputs = run_dir / "outputs" / "asr" / "fake.jsonl"
    ref = tmp_path / "set" / "text"
    for family, args in (("asr", ["--ref", str(ref)]), ("mt", ["--ref", str(ref)])):
        code, _, err = cli("score", family, *args, "--hyp", str(outputs))
        assert code == 2 and "a run's outputs file?" in err, err
        assert f"onsite score {family} --run RUN_DIR" in err


def test_score_run_gives_the_live_figures_per_condition(tmp_path: Path) -> None:
    root = make_testset(tmp_path / "set", [("u1", 1600, "a b"), ("u2", 3200, "c d")])
    (root / "conditions.tsv").write_text("u1\tquiet\nu2\tnoisy\n", encoding="utf-8")
    env = {"FAKE_PLAN": json.dumps({"1600": {"text": "a b"}, "3200": {"text": "c"}})}
    site = write_site(tmp_path / "site.toml", root, {"fake": {"command": FAKE_SERVE, "env": env}})
    run_dir, _ = run_site(site)
    # The report's JSON rows leave the breakdowns out: the leaderboard's own row has them.
    from harness import leaderboard

    [row] = leaderboard(run_dir)
    by_run = cli_json("score", "asr", "--run", str(run_dir))
    live = {c: s["wer"] for c, s in row.scores["by_condition"].items()}
    assert live == {"quiet": 0.0, "noisy": 0.5}
    assert {c: s["wer"] for c, s in by_run["by_condition"].items()} == live


# --------------------------------------------------------------------------- summaries: cut, CESTA


def test_summaries_export_what_was_scored_and_cesta_agrees(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.build is summarization_zh_set)
    run_dir = _run(case, tmp_path)
    from harness import leaderboard

    [row] = leaderboard(run_dir)
    hyp, ref = tmp_path / "hyp.jsonl", tmp_path / "ref.jsonl"
    assert cli("export", str(run_dir), "--format", "score-jsonl", "-o", str(hyp))[0] == 0
    assert cli("export", str(run_dir), "--format", "score-jsonl", "--references",
               "-o", str(ref))[0] == 0  # fmt: skip
    # The summary as scored (cut at the limit); the run's own line keeps what was sent.
    rows = [json.loads(line) for line in hyp.read_text("utf-8").splitlines()]
    assert rows == [
        {"id": "x", "text": "北京今天下雨"},
        {"id": "y", "text": "上海\n股市 上涨"},
        {"id": "z", "text": ""},  # unanswered: empty, as live counts it
    ]
    code, out, _ = cli("export", str(run_dir), "--format", "jsonl")
    assert json.loads(out.splitlines()[0])["output"]["text"] == "北京今天下雨了，明天晴天"
    # Cutting again changes nothing: --length-limit may be given or not.
    again = cli_json("score", "rouge", "--ref", str(ref), "--hyp", str(hyp), "--lang", "zh",
                     "--length-limit", "6")  # fmt: skip
    assert again["rouge2_f"] == pytest.approx(row.score, abs=1e-12)
    # CESTA o, u, o&u: live == --run == the exported files.
    by_run = cli_json("score", "cesta", "--run", str(run_dir))
    offline = cli_json("score", "cesta", "--ref", str(ref), "--hyp", str(hyp), "--lang", "zh")
    for key in ("o", "u", "ou"):
        live = row.scores[f"cesta_{key}"]
        assert live is not None
        assert by_run[key] == pytest.approx(live, abs=1e-12), key
        assert offline[key] == pytest.approx(live, abs=1e-12), key
    for family in ("rouge", "cesta"):
        code, out, _ = cli("score", family, "--run", str(run_dir))
        assert code == 0 and ("rouge2_f" in out if family == "rouge" else "ou" in out), out
    # A summarization task is no mt task, and mt's family says so.
    code, _, err = cli("score", "mt", "--run", str(run_dir))
    assert code == 2 and "kind summarization" in err


def test_two_references_per_document_score_as_live(tmp_path: Path) -> None:
    case = next(c for c in CASES if c.build is summarization_set)
    run_dir = _run(case, tmp_path)
    code, out, err = cli("export", str(run_dir), "--format", "score-jsonl", "--references")
    assert code == 0, err
    # One line per reference, the id repeated, the first reference first.
    assert [json.loads(line)["id"] for line in out.splitlines()] == ["a", "a", "b", "c", "d"]
    from harness import leaderboard

    [row] = leaderboard(run_dir)
    by_run = cli_json("score", "cesta", "--run", str(run_dir))
    assert by_run["ou"] == pytest.approx(row.scores["cesta_ou"], abs=1e-12)


# --------------------------------------------------------------------------- kws DET

KWS_FAKE = [sys.executable, str(REPO / "tests" / "systems" / "kws_fake.py")]
CITIES = ["boston", "denver", "dallas"]


def kws_det_run(tmp: Path, plan: dict[int, Any], keywords: bool = True) -> Path:
    root = make_testset(tmp / "set", [("k1", 1600, ""), ("k2", 1700, ""), ("k3", 1800, "")])
    (root / "text").unlink()
    jsonl(
        root / "slots.jsonl",
        [
            {"id": "k1", "setting": "trip", "slots": {"from": ["boston"], "to": ["denver"]}},
            {"id": "k2", "setting": "weather", "slots": {"city": ["dallas"]}},
            {"id": "k3", "setting": "trip", "slots": {"from": ["dallas"]}},
        ],
    )
    if keywords:
        settings = {"trip": {"from": CITIES, "to": CITIES}, "weather": {"city": CITIES}}
        (root / "keywords.json").write_text(json.dumps({"settings": settings}), "utf-8")
    env = {"FAKE_PLAN": json.dumps({str(k): v for k, v in plan.items()})}
    site = write_site(
        tmp / "site.toml",
        root,
        {"spotter": {"command": KWS_FAKE, "env": env}},
        task="kws",
        task_keys={"kind": "kws"},
        budget={"seconds": 20.0, "hang_seconds": 20.0},
    )
    run_dir, results = run_site(site)
    assert [r.failed for r in results] == [None]
    return run_dir


def test_kws_det_live_equals_score_run_equals_exported_files(tmp_path: Path) -> None:
    # Every true pair proposed (so the curve crosses and has an EER); a repeated
    # keyword's best score is the trial's; k3 crashes: its true pair is a miss.
    plan = {
        1600: {
            "slots": {"from": ["boston"]},
            "scores": {"boston": 0.9, "denver": 0.4, "dallas": 0.6},
            "extra": [{"keyword": "denver", "score": 0.8}],
        },
        1700: {"slots": {"city": ["dallas"]}, "scores": {"dallas": 0.7, "boston": 0.5}},
        1800: {"do": "crash"},
    }
    run_dir = kws_det_run(tmp_path, plan)
    from harness import leaderboard

    [row] = leaderboard(run_dir)
    live = row.scores["det"]
    # Trials: 3 keywords x 3 utterances; true pairs k1 boston, denver; k2 dallas; k3 dallas.
    assert (live["n_true"], live["n_nontarget"]) == (4, 5)
    assert (live["detections"], live["true_detections"]) == (5, 3)
    assert live["eer"] is not None
    by_run = cli_json("score", "kws-det", "--run", str(run_dir), "--task", "kws",
                      "--system", "spotter")  # fmt: skip
    hyp, ref = tmp_path / "det.jsonl", tmp_path / "counts.json"
    assert cli("export", str(run_dir), "--format", "kws-det", "-o", str(hyp))[0] == 0
    exported = cli("export", str(run_dir), "--format", "kws-det", "--references", "-o", str(ref))
    assert exported[0] == 0
    counts = json.loads(ref.read_text("utf-8"))
    assert counts == {"n_true": 4, "n_nontarget": 5}
    offline = cli_json("score", "kws-det", "--hyp", str(hyp), "--n-true", str(counts["n_true"]),
                       "--n-nontarget", str(counts["n_nontarget"]))  # fmt: skip
    for result in (by_run, offline):
        assert result["eer"] == pytest.approx(live["eer"], abs=1e-12)
        assert result["points"] == live["points"]
        assert (result["n_true"], result["n_nontarget"]) == (4, 5)
    lines = [json.loads(line) for line in hyp.read_text("utf-8").splitlines()]
    assert {"keyword": "denver", "utterance": "k1", "score": 0.8, "is_true": True} in lines
    # A table without --json.
    code, out, _ = cli("score", "kws-det", "--run", str(run_dir))
    assert code == 0 and "p_miss" in out


def test_kws_det_without_a_curve_says_why(tmp_path: Path) -> None:
    run_dir = kws_det_run(tmp_path, {1600: {"scores": {"boston": 0.9}}}, keywords=False)
    code, _, err = cli("score", "kws-det", "--run", str(run_dir))
    assert code == 2 and "no DET curve" in err and "keywords.json" in err
    assert "onsite score kws" in err
    code, _, err = cli("export", str(run_dir), "--format", "kws-det")
    assert code == 2 and "no DET curve" in err
    # The slots still score through kws.
    assert cli_json("score", "kws", "--run", str(run_dir))["overall"]["slots"] == 4
