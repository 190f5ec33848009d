"""A rule-based named-entity tagger for English (BIO tags: PER, LOC, ORG).

Rules, in order, over runs of capitalized tokens:

* a run ending in an organization word (``Corp``, ``Inc``, ``Bank``,
  ``University``, ``Company`` ...) or starting ``Bank of`` / ``University of``
  is an ORG (the run takes in ``of`` and the capitalized words after it);
* a run listed in the place gazetteer is a LOC;
* a run after a title (``Mr.``, ``Dr.``, ``President`` ...) or starting with a
  listed first name is a PER;
* anything else is O; a sentence's first word (``The``, ``It`` ...) is capitalized
  as the sentence's, not as a name's.

Usage: ``python -m systems.rule_ner`` (serve mode, kind ner).
Stand-alone: imports nothing from the harness, the runners or the scorers.
"""

from __future__ import annotations

from typing import Any

from .jsonlines import main

NAME = "rule-ner"
VERSION = "1.0"

TITLES = frozenset(
    {"Mr.", "Mrs.", "Ms.", "Dr.", "Prof.", "Professor", "President", "Minister", "General"}
)
ORG_WORDS = frozenset(
    {"Corp", "Inc", "Ltd", "Bank", "University", "Company", "Group", "Nations", "Telecom"}
)
PLACES = frozenset(
    {
        "Beijing", "Shanghai", "Guangzhou", "Hong Kong", "London", "Paris", "Berlin", "Rome",
        "Madrid", "Tokyo", "New York", "Detroit", "Cambridge", "China", "Japan", "France",
        "Germany", "Kenya", "England",
    }
)  # fmt: skip
# Capitalized only because they start the sentence: never part of a name.
STARTERS = frozenset({"The", "A", "An", "It", "He", "She", "They", "This", "In", "On", "At"})
FIRST_NAMES = frozenset(
    {"John", "Mary", "Anna", "David", "Tom", "Jerry", "Lucy", "Peter", "James", "Linda"}
)


def _capitalized(token: str) -> bool:
    return token[:1].isupper() and token not in TITLES


def _runs(tokens: list[str]) -> list[tuple[int, int]]:
    """Spans [start, end) of capitalized tokens, "of" joining two runs."""
    spans: list[tuple[int, int]] = []
    i = 0
    while i < len(tokens):
        if not _capitalized(tokens[i]):
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and (
            _capitalized(tokens[j])
            or (tokens[j] == "of" and j + 1 < len(tokens) and _capitalized(tokens[j + 1]))
        ):
            j += 1
        spans.append((i, j))
        i = j
    return spans


def _label(tokens: list[str], start: int, end: int) -> str | None:
    words = tokens[start:end]
    if words[-1] in ORG_WORDS or (len(words) > 2 and words[1] == "of" and words[0] in ORG_WORDS):
        return "ORG"
    if " ".join(words) in PLACES:
        return "LOC"
    if (start > 0 and tokens[start - 1] in TITLES) or words[0] in FIRST_NAMES:
        return "PER"
    return None


def tag(tokens: list[str]) -> list[str]:
    """One BIO tag per token."""
    tags = ["O"] * len(tokens)
    for start, end in _runs(tokens):
        if start == 0 and tokens[0] in STARTERS:
            start += 1
            if start == end:
                continue
        if start == 0 and end - start == 1 and tokens[0] not in PLACES | FIRST_NAMES:
            # A lone capital at the start is the sentence's capital, not a name.
            continue
        label = _label(tokens, start, end)
        if label is not None:
            tags[start] = f"B-{label}"
            for k in range(start + 1, end):
                tags[k] = f"I-{label}"
    return tags


def answer(item: dict[str, Any]) -> dict[str, Any]:
    """The tags of the item's tokens."""
    return {"tags": tag([str(t) for t in item["tokens"]])}


if __name__ == "__main__":
    raise SystemExit(main(NAME, VERSION, answer))
