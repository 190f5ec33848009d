"""A system-combination participant: the consensus pick among the MT systems' candidates.

Each item's input carries the source and every MT system's candidates
(``candidates``: ``[{"system", "best", "nbest": [{"text", "score"}]}]``). The
answer is the candidate that agrees most, on average, with the other systems'
best translations: agreement is a smoothed sentence BLEU (n-grams of 1 to 4,
add-one smoothing, brevity penalty), over characters for Chinese and Japanese
targets and over words otherwise. Ties go to the candidate listed first (its
system's higher-ranked one). With one system, its best translation is the answer.

Usage: ``python -m systems.consensus_combination``. Stand-alone: imports
nothing from the harness.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from .jsonlines import main

NAME = "consensus-combination"
VERSION = "1.0"
MAX_N = 4
# A CJK character is a token of its own; other text splits at whitespace.
_TOKEN = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]|[^\s\u3400-\u9fff\uf900-\ufaff]+")


def tokens(text: str, lang: str) -> list[str]:
    """Characters for zh/ja, words otherwise; case folded."""
    if lang in ("zh", "ja"):
        return [ch for ch in text.lower() if not ch.isspace()]
    return _TOKEN.findall(text.lower())


def _ngrams(words: list[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))


def agreement(hyp: list[str], ref: list[str]) -> float:
    """Smoothed sentence BLEU of `hyp` against `ref` (0 for an empty hypothesis)."""
    if not hyp:
        return 0.0
    log_sum = 0.0
    for n in range(1, MAX_N + 1):
        h, r = _ngrams(hyp, n), _ngrams(ref, n)
        matches = sum(min(c, r[g]) for g, c in h.items())
        log_sum += math.log((matches + 1) / (sum(h.values()) + 1))
    brevity = min(0.0, 1 - len(ref) / len(hyp)) if ref else 0.0
    return math.exp(brevity + log_sum / MAX_N)


def combine(item: dict[str, Any]) -> dict[str, Any]:
    """The consensus candidate for one segment."""
    lang = str(item.get("lang", "en"))
    systems = [s for s in item.get("candidates", []) if isinstance(s, dict)]
    if not systems:
        return {"text": ""}
    if len(systems) == 1:
        return {"text": str(systems[0].get("best", ""))}
    bests = [(str(s.get("system")), tokens(str(s.get("best", "")), lang)) for s in systems]
    best_text, best_value = str(systems[0].get("best", "")), -1.0
    for system in systems:
        name = str(system.get("system"))
        others = [ref for other, ref in bests if other != name]
        for cand in system.get("nbest") or [{"text": system.get("best", "")}]:
            text = str(cand.get("text", ""))
            hyp = tokens(text, lang)
            value = sum(agreement(hyp, ref) for ref in others) / len(others)
            if value > best_value:
                best_text, best_value = text, value
    return {"text": best_text}


if __name__ == "__main__":
    raise SystemExit(main(NAME, VERSION, combine))
