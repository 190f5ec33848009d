"""A word-by-word MT system that also sends an n-best list (``output.nbest``).

The best candidate is the text-baselines dictionary translation; the others
are plausible variants (lower-cased, source kept), scored so that the list is
sorted best first, as the protocol requires. With ``NBEST_MT_UNSORTED=1`` in
its environment it sends the list in the wrong order, to show the harness's
invalid_output verdict.

Usage: ``python -m systems.nbest_mt``.
"""

from __future__ import annotations

import os
from typing import Any

from .jsonlines import main
from .text_baselines import Baseline

NAME = "nbest-mt"
VERSION = "1.0"


class NbestMt:
    """Translate with the baseline dictionary and offer three candidates."""

    def __init__(self, unsorted: bool) -> None:
        self.baseline = Baseline()
        self.unsorted = unsorted

    def setup(self, hello: dict[str, Any]) -> None:
        """Let the baseline read hello (kind and files)."""
        self.baseline.setup(hello)

    def answer(self, item: dict[str, Any]) -> dict[str, Any]:
        """The best translation and its n-best list."""
        best = str(self.baseline.answer(item)["text"])
        nbest = [
            {"text": best, "score": -1.0},
            {"text": best.lower(), "score": -2.5},
            {"text": str(item["text"]), "score": -9.0},
        ]
        if self.unsorted:
            nbest.reverse()
        return {"text": best, "nbest": nbest}


if __name__ == "__main__":
    system = NbestMt(os.environ.get("NBEST_MT_UNSORTED") == "1")
    raise SystemExit(main(NAME, VERSION, system.answer, system.setup))
