"""A dictionary-based Chinese word segmenter: forward maximum matching.

The word list is the training list the organizer hands over in hello's
``files["words"]`` (one word per line; the closed track's training data).
At each position the longest listed word wins; a character that starts no
listed word is a word of its own. Runs of ASCII letters and digits stay
whole. Without a word list every character is a word.

Usage: ``python -m systems.fmm_segmenter`` (serve mode, kind cws).
Stand-alone: imports nothing from the harness, the runners or the scorers.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .jsonlines import log, main

NAME = "fmm-segmenter"
VERSION = "1.0"


class Lexicon:
    """A word list and the length of its longest word."""

    def __init__(self, words: Iterable[str] = ()) -> None:
        self.words = frozenset(w for w in words if w)
        self.longest = max((len(w) for w in self.words), default=1)

    def segment(self, text: str) -> list[str]:
        """Forward maximum matching over each whitespace-separated chunk of `text`."""
        out: list[str] = []
        for chunk in text.split():
            i = 0
            while i < len(chunk):
                size = self._match(chunk, i)
                out.append(chunk[i : i + size])
                i += size
        return out

    def _match(self, chunk: str, i: int) -> int:
        if chunk[i].isascii() and chunk[i].isalnum():
            # A Latin word or a number is one token, as in the gold standards.
            j = i
            while j < len(chunk) and chunk[j].isascii() and chunk[j].isalnum():
                j += 1
            return j - i
        for size in range(min(self.longest, len(chunk) - i), 1, -1):
            if chunk[i : i + size] in self.words:
                return size
        return 1


def read_words(path: str | Path) -> list[str]:
    """One word per line (UTF-8); blank lines skipped."""
    return Path(path).read_text(encoding="utf-8").split()


class Segmenter:
    """hello loads the word list; each item's text comes back segmented."""

    def __init__(self) -> None:
        self.lexicon = Lexicon()

    def setup(self, hello: dict[str, Any]) -> None:
        """Load hello's ``files["words"]``, if given."""
        files = hello.get("files") or {}
        if "words" in files:
            self.lexicon = Lexicon(read_words(files["words"]))
            log(f"{NAME}: {len(self.lexicon.words)} words")
        else:
            log(f"{NAME}: no word list in hello; one character per word")

    def answer(self, item: dict[str, Any]) -> dict[str, Any]:
        """The item's text, words separated by spaces."""
        return {"text": " ".join(self.lexicon.segment(str(item["text"])))}


if __name__ == "__main__":
    segmenter = Segmenter()
    raise SystemExit(main(NAME, VERSION, segmenter.answer, segmenter.setup))
