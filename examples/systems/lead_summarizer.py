"""A lead-sentences summarizer: the document's first sentences, within the limit.

Sentences end at line breaks and at 。！？ (and . ! ? followed by a space).
The summary takes whole sentences from the start of the document while the
item's ``length_limit`` allows (counted in ``length_unit``: non-space
characters or whitespace-separated words, as the harness counts); when even
the first sentence is longer, its beginning up to the limit is sent. One
sentence per line, so that ROUGE-L sees the summary's sentences.

Usage: ``python -m systems.lead_summarizer`` (serve mode, kind
summarization). Stand-alone: imports nothing from the harness, the runners or
the scorers.
"""

from __future__ import annotations

import re
from typing import Any

from .jsonlines import main

NAME = "lead-summarizer"
VERSION = "1.0"

_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The document's sentences, in order, stripped."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def length(text: str, unit: str) -> int:
    """Non-space characters (``char``) or whitespace-separated words (``word``)."""
    if unit == "word":
        return len(text.split())
    return sum(1 for ch in text if not ch.isspace())


def cut(text: str, limit: int, unit: str) -> str:
    """The beginning of one sentence, `limit` units long."""
    if unit == "word":
        return " ".join(text.split()[:limit])
    out: list[str] = []
    counted = 0
    for ch in text:
        if not ch.isspace():
            if counted == limit:
                break
            counted += 1
        out.append(ch)
    return "".join(out).rstrip()


def summarize(text: str, limit: int, unit: str = "char") -> str:
    """The lead sentences of `text` that fit in `limit`."""
    chosen: list[str] = []
    used = 0
    for sentence in sentences(text):
        size = length(sentence, unit)
        if used + size > limit:
            if not chosen:
                chosen.append(cut(sentence, limit, unit))
            break
        chosen.append(sentence)
        used += size
    return "\n".join(chosen)


def answer(item: dict[str, Any]) -> dict[str, Any]:
    """The summary of the item's document."""
    limit = int(item.get("length_limit") or 100)
    return {"text": summarize(str(item["text"]), limit, str(item.get("length_unit") or "char"))}


if __name__ == "__main__":
    raise SystemExit(main(NAME, VERSION, answer))
