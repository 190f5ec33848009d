"""Every task kind takes a task's ``encoding`` and reads its test set in GBK as in UTF-8.

Issue 30: every reader takes an encoding, a live task's through the site file. For each
registered kind a small test set with Chinese in its text files is written in UTF-8
and in GBK; the site file with ``encoding = "gbk"`` loads, and the GBK set gives the
items (ids, inputs, references, conditions) of the UTF-8 one. A kind added to the
registry without a set here fails the test, so no kind can be left reading UTF-8 only.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.kinds.registry import task_kind, task_kinds
from harness.site import load_site
from tests.helpers import FAKE_SERVE, REPO, make_testset, write_site
from tests.test_encodings import SIMPLIFIED
from tests.test_encodings_kws_ocr_faces import LIVE, _words
from tests.test_encodings_tts_summarization_mt import tts_set
from tests.test_textcat_ir_encodings import _chinese_demo

DATA = REPO / "site_config" / "data"
# (root, codec): write the kind's test set at root, its text files in codec.
Build = Callable[[Path, str], None]


def _reencode(root: Path, codec: str) -> None:
    """Every text file under root (not a README) rewritten from UTF-8 into codec."""
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.name.startswith("README"):
            continue
        try:
            text = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue  # audio, images
        path.write_bytes(text.encode(codec))


def _copied(source: Path) -> Build:
    def build(root: Path, codec: str) -> None:
        shutil.copytree(source, root)
        _reencode(root, codec)

    return build


def _asr(root: Path, codec: str) -> None:
    make_testset(root, [(f"u{i}", 1600 + 100 * i, SIMPLIFIED[i]) for i in range(4)])
    _reencode(root, codec)


def _command(root: Path, codec: str) -> None:
    shutil.copytree(DATA / "demo-command", root)
    commands = ["向左转", "向右转", "前进", "开门", "关门", "停止"]
    ids = [line.split()[0] for line in (root / "text").read_text("utf-8").splitlines()]
    text = "".join(f"{i} {c}\n" for i, c in zip(ids, commands, strict=True))
    (root / "text").write_text(text, "utf-8")
    (root / "vocabulary.txt").write_text("".join(f"{c}\n" for c in commands), "utf-8")
    _reencode(root, codec)


def _textual(kind: str) -> Build:
    def build(root: Path, codec: str) -> None:
        made = _chinese_demo(root.parent / f"{kind}-{codec}-made", kind, False)
        shutil.copytree(made, root)
        _reencode(root, codec)

    return build


def _live(kind: str) -> Build:
    make = dict(LIVE)[kind]

    def build(root: Path, codec: str) -> None:
        make(root, _words(SIMPLIFIED), codec)

    return build


def _tts(root: Path, codec: str) -> None:
    tts_set(root, codec)


def _combination(root: Path, codec: str) -> None:
    """An MT set (source and reference in codec) and one candidate list: XML that
    `onsite combination-set` writes, declaring UTF-8."""
    docs = {"d1": SIMPLIFIED[:3], "d2": SIMPLIFIED[3:5]}
    english = {"d1": ["one", "two", "three"], "d2": ["four", "five"]}

    def xml(tag: str, segs: dict[str, list[str]], extra: str = "") -> str:
        body = "".join(
            f'<doc docid="{d}"{extra}>'
            + "".join(f'<seg id="{n}">{t}</seg>' for n, t in enumerate(lines, 1))
            + "</doc>\n"
            for d, lines in segs.items()
        )
        return f'<{tag} setid="t1" srclang="zh" tgtlang="en">\n{body}</{tag}>\n'

    root.mkdir(parents=True)
    (root / "source.xml").write_bytes(xml("srcset", docs).encode(codec))
    (root / "ref1.xml").write_bytes(xml("refset", english, ' sysid="ref1"').encode(codec))
    (root / "candidates").mkdir()
    declared = '<?xml version="1.0" encoding="UTF-8"?>\n' + xml("tstset", english, ' sysid="c1"')
    (root / "candidates" / "c1.xml").write_text(declared, "utf-8")


BUILDS: dict[str, tuple[Build, dict[str, Any]]] = {
    "asr": (_asr, {}),
    "combination": (_combination, {}),
    "command": (_command, {"sample_rates": [8000]}),
    "cws": (_copied(DATA / "demo-text" / "cws"), {}),
    "face-detect": (_live("face-detect"), {}),
    "face-identify": (_live("face-identify"), {}),
    "face-verify": (_live("face-verify"), {}),
    "ir": (_textual("ir"), {}),
    "kws": (_live("kws"), {}),
    "lid": (_live("lid"), {}),
    "mt": (_copied(DATA / "demo-text" / "mt"), {}),
    "ner": (_copied(DATA / "demo-text" / "ner"), {}),
    "ocr": (_live("ocr"), {}),
    "pos": (_copied(DATA / "demo-text" / "pos"), {}),
    "spkv": (_live("spkv"), {}),
    "summarization": (_copied(DATA / "demo-summarization"), {"length_limit": 50}),
    "textcat": (_textual("textcat"), {}),
    "tts": (_tts, {"sample_rates": [16000]}),
}


def test_every_registered_kind_has_a_set_here() -> None:
    assert sorted(BUILDS) == sorted(task_kinds())


def _load(tmp: Path, kind: str, codec: str, encoding: str | None) -> tuple[Path, Any]:
    build, keys = BUILDS[kind]
    root = tmp / f"{kind}-{codec}"
    build(root, codec)
    task_keys = {"kind": kind, **keys} | ({"encoding": encoding} if encoding else {})
    site = load_site(
        write_site(
            tmp / f"{kind}-{codec}.toml",
            root,
            {"s": {"command": FAKE_SERVE}},
            task="t",
            task_keys=task_keys,
        )
    )
    assert site.config.tasks["t"].encoding == encoding
    return root, task_kind(kind).load_testset(site.testset_path("t"), site.config.tasks["t"])


def _items(testset: Any) -> list[tuple[Any, ...]]:
    return [
        (i.id, json.dumps(i.fields, ensure_ascii=False, default=str), i.reference, i.condition)
        for i in testset.items
    ]


def _text_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.name.startswith("README") and p.suffix not in (".wav", ".flac")
        and p.suffix not in (".png", ".jpg")
    }  # fmt: skip


@pytest.mark.parametrize("kind", sorted(BUILDS))
def test_every_kind_reads_its_test_set_in_gbk_as_in_utf8(tmp_path: Path, kind: str) -> None:
    plain_root, plain = _load(tmp_path, kind, "utf-8", None)
    gbk_root, read = _load(tmp_path, kind, "gbk", "gbk")
    assert plain.items and not plain.invalid and not read.invalid
    # The GBK set is another set of bytes: Chinese in at least one of its text files.
    assert _text_bytes(gbk_root) != _text_bytes(plain_root), kind
    assert _items(read) == _items(plain), kind
