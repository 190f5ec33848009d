"""Simple baselines for every text task kind, in one serve-mode program.

hello's ``kind`` chooses the baseline:

* ``mt``: dictionary lookup by forward maximum matching; unknown characters
  and words are copied from the source;
* ``cws``: forward maximum matching over a small built-in word list, plus
  the training word list when hello's ``files`` carries ``words``;
* ``ner``: a one-token gazetteer (B-<type> for a listed token, else O);
* ``pos``: segment as cws, then each word's most frequent training tag
  (hello's ``files["train"]``), else a built-in tag, else ``n``;
* ``textcat``: keyword counts per category, up to two categories;
* ``ir``: term-frequency ranking of the documents in the directory named by
  ``TEXT_BASELINE_COLLECTION`` (``<docno>.txt`` files, indexed at setup); no
  directory, no results.

Usage: ``python -m systems.text_baselines``. Stand-alone: imports
nothing from the harness, the runners or the scorers.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from .jsonlines import log, main

NAME = "text-baselines"
VERSION = "1.0"

WORDS = frozenset(
    {"我们", "你们", "他们", "喜欢", "北京", "北京大学", "大学", "学习", "上海", "工作", "你好"}
)
MT_DICTIONARY = {
    "你好": "hello",
    "世界": "world",
    "我们": "we",
    "喜欢": "like",
    "北京": "beijing",
    "上海": "shanghai",
    "他": "he",
    "在": "in",
}
GAZETTEER = {"北京": "LOC", "上海": "LOC", "张三": "PER", "Beijing": "LOC", "Shanghai": "LOC"}
TAGS = {"我们": "r", "在": "p", "北京": "ns", "上海": "ns", "喜欢": "v", "学习": "v"}
KEYWORDS = {
    "sports": frozenset({"football", "match", "team", "club", "goal"}),
    "economy": frozenset({"stock", "market", "prices", "shares", "bank"}),
    "tech": frozenset({"phone", "chip", "computer", "software"}),
}
COLLECTION_ENV = "TEXT_BASELINE_COLLECTION"


class Baseline:
    """The state hello sets up: the kind, and the word lists or index it needs."""

    def __init__(self) -> None:
        self.kind = ""
        self.words: frozenset[str] = WORDS
        self.tags: dict[str, str] = dict(TAGS)
        self.index: dict[str, Counter[str]] = {}

    def setup(self, hello: dict[str, Any]) -> None:
        """Remember the kind and load what hello's files and the environment provide."""
        self.kind = str(hello.get("kind", ""))
        files = hello.get("files") or {}
        if "words" in files:
            lines = Path(files["words"]).read_text(encoding="utf-8").split()
            self.words = WORDS | frozenset(lines)
        if "train" in files:
            self._train(Path(files["train"]))
        collection = os.environ.get(COLLECTION_ENV)
        if self.kind == "ir" and collection:
            for path in sorted(Path(collection).glob("*.txt")):
                self.index[path.stem] = Counter(_terms(path.read_text(encoding="utf-8")))
            log(f"{NAME}: indexed {len(self.index)} documents")

    def _train(self, path: Path) -> None:
        counts: dict[str, Counter[str]] = {}
        for token in path.read_text(encoding="utf-8").split():
            word, _, tag = token.rpartition("/")
            counts.setdefault(word, Counter())[tag] += 1
        self.tags.update({w: c.most_common(1)[0][0] for w, c in counts.items()})
        self.words = self.words | frozenset(counts)

    def answer(self, item: dict[str, Any]) -> dict[str, Any]:
        """The baseline's output for one item of the kind hello named."""
        if self.kind == "mt":
            pieces = _segment(str(item["text"]), frozenset(MT_DICTIONARY))
            return {"text": " ".join(MT_DICTIONARY.get(p, p) for p in pieces)}
        if self.kind == "cws":
            return {"text": " ".join(_segment(str(item["text"]), self.words))}
        if self.kind == "ner":
            tokens = [str(t) for t in item["tokens"]]
            return {"tags": [f"B-{GAZETTEER[t]}" if t in GAZETTEER else "O" for t in tokens]}
        if self.kind == "pos":
            words = _segment(str(item["text"]), self.words)
            return {"text": " ".join(f"{w}/{self.tags.get(w, 'n')}" for w in words)}
        if self.kind == "textcat":
            return {"categories": _categorize(str(item["text"]))}
        if self.kind == "ir":
            return {"results": self._rank(str(item.get("query", "")))}
        raise ValueError(f"no baseline for kind {self.kind!r}")

    def _rank(self, query: str) -> list[list[Any]]:
        terms = _terms(query)
        scores = {doc: float(sum(tf[t] for t in terms)) for doc, tf in self.index.items()}
        ranked = sorted((d for d, s in scores.items() if s > 0), key=lambda d: -scores[d])
        return [[doc, scores[doc]] for doc in ranked[:1000]]


def _segment(text: str, words: frozenset[str]) -> list[str]:
    """Forward maximum matching: the longest listed word at each position, else one character."""
    longest = max((len(w) for w in words), default=1)
    out: list[str] = []
    for chunk in text.split():
        i = 0
        while i < len(chunk):
            for size in range(min(longest, len(chunk) - i), 0, -1):
                if size == 1 or chunk[i : i + size] in words:
                    out.append(chunk[i : i + size])
                    i += size
                    break
    return out


def _terms(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _categorize(text: str) -> list[str]:
    """Up to two categories by keyword count, most first (ties alphabetical)."""
    terms = _terms(text)
    counts = {c: sum(t in words for t in terms) for c, words in KEYWORDS.items()}
    ranked = sorted((c for c, n in counts.items() if n > 0), key=lambda c: (-counts[c], c))
    return ranked[:2]


if __name__ == "__main__":
    baseline = Baseline()
    raise SystemExit(main(NAME, VERSION, baseline.answer, baseline.setup))
