"""TF-IDF retrieval (kind ir) and TF-IDF categorization (kind textcat).

Both weigh a term by ``(1 + log tf) * log(N / df)`` and compare texts by the
cosine of their weight vectors (the vector space model; Salton and Buckley's
ltc weighting).

* ``ir``: the collection is the participant's own: the ``<docno>.txt`` files
  of the directory in ``TFIDF_COLLECTION`` (default ``data/news-collection``
  beside this package, i.e. ``examples/data/``), indexed at setup.
  A query is the topic's title and description; every document with a
  positive cosine is returned, best first.
* ``textcat``: the training documents are the participant's own:
  ``category<TAB>text`` lines of ``TFIDF_TRAINING`` (default
  ``examples/data/textcat-train.tsv``, found the same way). Each category is the centroid of its
  documents' vectors (Rocchio); a document gets the nearest category, and
  the second nearest too when its cosine is at least ``SECOND`` (0.7) of the
  first's.

hello's ``kind`` chooses. Usage, in examples/: ``python -m systems.tfidf_text``.
Stand-alone: imports nothing from the harness, the runners or the scorers.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .jsonlines import log, main

NAME = "tfidf-text"
VERSION = "1.0"
# The participant's own data ships beside its code: found from this file, so the
# system runs from any working directory (the demo's is examples/).
DATA = Path(__file__).resolve().parent.parent / "data"
COLLECTION = DATA / "news-collection"
TRAINING = DATA / "textcat-train.tsv"
SECOND = 0.7
STOP = frozenset(
    "a an and are as at be by for from has in is it its of on or that the this to was were will "
    "with after before about into than their there they which who while more new".split()
)

Vector = dict[str, float]


def terms(text: str) -> list[str]:
    """Lower-cased words of letters and digits, stop words removed, a plural 's' cut."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return [w[:-1] if len(w) > 3 and w.endswith("s") else w for w in words if w not in STOP]


class Weights:
    """Document frequencies of a collection, and the ltc vectors they give."""

    def __init__(self, texts: Iterable[list[str]]) -> None:
        self.n = 0
        self.df: Counter[str] = Counter()
        for words in texts:
            self.n += 1
            self.df.update(set(words))

    def vector(self, words: list[str]) -> Vector:
        """The unit-length (1 + log tf) * idf vector of a text's terms."""
        tf = Counter(w for w in words if self.df[w])
        raw = {w: (1 + math.log(k)) * math.log(self.n / self.df[w]) for w, k in tf.items()}
        norm = math.sqrt(sum(v * v for v in raw.values()))
        return {w: v / norm for w, v in raw.items()} if norm else {}


def cosine(a: Mapping[str, float], b: Mapping[str, float]) -> float:
    """The dot product of two vectors (unit length: their cosine)."""
    if len(a) > len(b):
        a, b = b, a
    return sum(v * b.get(w, 0.0) for w, v in a.items())


class TfIdf:
    """The index (ir) or the category centroids (textcat) that hello sets up."""

    def __init__(self) -> None:
        self.kind = ""
        self.weights = Weights([])
        self.docs: dict[str, Vector] = {}
        self.centroids: dict[str, Vector] = {}

    def setup(self, hello: dict[str, Any]) -> None:
        """Index the collection (ir) or train the categories (textcat)."""
        self.kind = str(hello.get("kind", ""))
        if self.kind == "ir":
            root = Path(os.environ.get("TFIDF_COLLECTION", COLLECTION))
            texts = {p.stem: terms(p.read_text(encoding="utf-8")) for p in root.glob("*.txt")}
            self.weights = Weights(texts.values())
            self.docs = {d: self.weights.vector(t) for d, t in sorted(texts.items())}
            log(f"{NAME}: indexed {len(self.docs)} documents of {root}")
        elif self.kind == "textcat":
            self._train(Path(os.environ.get("TFIDF_TRAINING", TRAINING)))
        else:
            raise ValueError(f"{NAME} answers ir and textcat, not {self.kind!r}")

    def _train(self, path: Path) -> None:
        rows = []
        for line in path.read_text(encoding="utf-8").splitlines():
            category, tab, text = line.partition("\t")
            if tab and not line.startswith("#"):
                rows.append((category.strip(), terms(text)))
        self.weights = Weights(words for _, words in rows)
        sums: dict[str, Counter[str]] = {}
        for category, words in rows:
            sums.setdefault(category, Counter()).update(self.weights.vector(words))
        for category, total in sums.items():
            norm = math.sqrt(sum(v * v for v in total.values()))
            self.centroids[category] = {w: v / norm for w, v in total.items()}
        log(f"{NAME}: {len(rows)} training documents, {len(self.centroids)} categories")

    def answer(self, item: dict[str, Any]) -> dict[str, Any]:
        """Ranked documents (ir) or up to two categories (textcat)."""
        if self.kind == "ir":
            query = f"{item.get('query', '')} {item.get('description', '')}"
            vector = self.weights.vector(terms(query))
            scores = {d: cosine(vector, v) for d, v in self.docs.items()}
            ranked = sorted((d for d in scores if scores[d] > 0), key=lambda d: (-scores[d], d))
            return {"results": [[d, round(scores[d], 6)] for d in ranked[:1000]]}
        vector = self.weights.vector(terms(str(item["text"])))
        near = sorted(
            ((cosine(vector, c), name) for name, c in self.centroids.items()), reverse=True
        )
        if not near or near[0][0] <= 0:
            return {"categories": []}
        chosen = [near[0][1]]
        if len(near) > 1 and near[1][0] >= SECOND * near[0][0]:
            chosen.append(near[1][1])
        return {"categories": chosen}


if __name__ == "__main__":
    system = TfIdf()
    raise SystemExit(main(NAME, VERSION, system.answer, system.setup))
