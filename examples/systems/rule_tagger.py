"""A rule-based Chinese part-of-speech tagger (PKU-style tags).

Segmentation: forward maximum matching over the words of the training file
the organizer hands over in hello's ``files["train"]`` (``word/TAG`` tokens).
Tagging: a word seen in training gets its most frequent training tag; an
unseen word gets a tag from rules on its form (punctuation ``w``, numerals
``m``, time words ``t``, place names ``ns``, languages ``nz``, particles
``u``, conjunctions ``c``, localizers ``f``), else ``n``.

Usage: ``python -m systems.rule_tagger`` (serve mode, kind pos).
Stand-alone: imports nothing from the harness, the runners or the scorers.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from pathlib import Path
from typing import Any

from .fmm_segmenter import Lexicon
from .jsonlines import log, main

NAME = "rule-tagger"
VERSION = "1.0"

NUMERALS = frozenset("零〇一二三四五六七八九十百千万亿两0123456789")
PARTICLES = frozenset({"了", "着", "过", "的", "地", "得", "吗", "呢", "吧"})
CONJUNCTIONS = frozenset({"和", "与", "或", "但", "而", "及"})
LOCALIZERS = frozenset({"上", "下", "里", "外", "前", "后", "中", "内", "边"})
# Suffix -> tag for unseen words of two or more characters.
SUFFIXES = (
    (("天", "年", "月", "日", "晚", "夜", "期"), "t"),
    (("市", "省", "县", "州", "国", "京", "海", "江", "山"), "ns"),
    (("语", "文"), "nz"),
    (("边", "面", "方"), "f"),
    (("们",), "r"),
)


def rule_tag(word: str) -> str:
    """The tag of a word not seen in training, from its form."""
    if all(unicodedata.category(ch).startswith("P") for ch in word):
        return "w"
    if all(ch in NUMERALS for ch in word):
        return "m"
    if word in PARTICLES:
        return "u"
    if word in CONJUNCTIONS:
        return "c"
    if word in LOCALIZERS:
        return "f"
    if len(word) > 1:
        for endings, tag in SUFFIXES:
            if word.endswith(endings):
                return tag
    return "n"


class Tagger:
    """hello loads the training file; each item's text comes back as word/TAG tokens."""

    def __init__(self) -> None:
        self.lexicon = Lexicon()
        self.tags: dict[str, str] = {}

    def setup(self, hello: dict[str, Any]) -> None:
        """Learn the words and their most frequent tags from hello's ``files["train"]``."""
        files = hello.get("files") or {}
        if "train" not in files:
            log(f"{NAME}: no training file in hello; rules only")
            return
        counts: dict[str, Counter[str]] = {}
        for token in Path(files["train"]).read_text(encoding="utf-8").split():
            word, sep, tag = token.rpartition("/")
            if sep and word and tag:
                counts.setdefault(word, Counter())[tag] += 1
        # most_common keeps first-seen order on ties: the earlier tag wins.
        self.tags = {w: c.most_common(1)[0][0] for w, c in counts.items()}
        self.lexicon = Lexicon(self.tags)
        log(f"{NAME}: {len(self.tags)} training words")

    def tag(self, word: str) -> str:
        """The training tag, else the rules' tag."""
        return self.tags.get(word) or rule_tag(word)

    def answer(self, item: dict[str, Any]) -> dict[str, Any]:
        """Segment and tag the item's text."""
        words = self.lexicon.segment(str(item["text"]))
        return {"text": " ".join(f"{w}/{self.tag(w)}" for w in words)}


if __name__ == "__main__":
    tagger = Tagger()
    raise SystemExit(main(NAME, VERSION, tagger.answer, tagger.setup))
