"""A word-by-word translator: dictionary lookup, in the source's word order.

The bilingual dictionary is the one the organizer hands over in hello's
``files["dictionary"]`` (``source<TAB>target`` lines; an empty target drops
the word, e.g. a measure word). The source is split by forward maximum
matching over the dictionary's entries; each piece is replaced by its
translation, an unknown piece is copied. The first letter is capitalized.

Usage: ``python -m systems.word_mt`` (serve mode, kind mt).
Stand-alone: imports nothing from the harness, the runners or the scorers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .fmm_segmenter import Lexicon
from .jsonlines import log, main

NAME = "word-mt"
VERSION = "1.0"


def read_dictionary(path: str | Path) -> dict[str, str]:
    """``source<TAB>target`` lines (UTF-8); ``#`` lines and lines without a tab skipped."""
    entries: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        source, tab, target = line.partition("\t")
        if tab and source.strip() and not line.startswith("#"):
            entries.setdefault(source.strip(), target.strip())
    return entries


class Translator:
    """hello loads the dictionary; each item's text comes back translated word by word."""

    def __init__(self) -> None:
        self.entries: dict[str, str] = {}
        self.lexicon = Lexicon()

    def setup(self, hello: dict[str, Any]) -> None:
        """Load hello's ``files["dictionary"]``."""
        files = hello.get("files") or {}
        if "dictionary" not in files:
            log(f"{NAME}: no dictionary in hello; the source is copied")
            return
        self.entries = read_dictionary(files["dictionary"])
        self.lexicon = Lexicon(self.entries)
        log(f"{NAME}: {len(self.entries)} dictionary entries")

    def translate(self, text: str) -> str:
        """The word-by-word translation of one segment."""
        pieces = self.lexicon.segment(text)
        words = [self.entries.get(p, p) for p in pieces]
        out = " ".join(w for w in words if w)
        return out[:1].upper() + out[1:]

    def answer(self, item: dict[str, Any]) -> dict[str, Any]:
        """The translation of the item's text."""
        return {"text": self.translate(str(item["text"]))}


if __name__ == "__main__":
    translator = Translator()
    raise SystemExit(main(NAME, VERSION, translator.answer, translator.setup))
