"""Human assessment on a subset of the items: a seeded random fraction, or a list in a file.

HTRDP and CWMT judged adequacy and fluency by hand on 20-40% of the segments. A
panel built with a subset judges only those items, every system on the same ones
(the judgements stay paired), and its results say which subset it was.

The fraction is drawn from the test set's items (after ``--category``), not from
the items the systems answered: the draw depends on the test set, the fraction and
the seed only, so it can be published and repeated, and a system's failures cannot
move it. Drawn items some system did not answer are left out with a warning, as
without a subset.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np


class SubsetError(ValueError):
    """A subset cannot be drawn or read as asked (the message says what to change)."""


@dataclass(frozen=True)
class Subset:
    """What to judge of the items: ``fraction`` drawn with ``seed``, or the ids of ``file``."""

    fraction: float | None = None
    seed: int = 0
    file: Path | None = None

    def __post_init__(self) -> None:
        if (self.fraction is None) == (self.file is None):
            raise SubsetError("give either --subset FRACTION or --items FILE")
        if self.fraction is not None and not 0.0 < self.fraction <= 1.0:
            raise SubsetError(f"--subset {self.fraction}: give a fraction in (0, 1], e.g. 0.3")


@dataclass(frozen=True)
class Drawn:
    """The items a subset chose from a candidate list, and how (stored with the panel)."""

    items: tuple[str, ...]
    of: int  # how many items it was drawn from
    fraction: float | None
    seed: int | None
    file: str | None
    sha256: str | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: how the subset was made, its size and its item ids."""
        return {
            "fraction": self.fraction,
            "seed": self.seed,
            "file": self.file,
            "sha256": self.sha256,
            "items": len(self.items),
            "of": self.of,
            "ids": list(self.items),
        }

    def to_meta(self) -> str:
        """The panel's ``subset`` meta value."""
        return json.dumps(self.to_dict(), ensure_ascii=False)


def subset_size(fraction: float, total: int) -> int:
    """round(fraction x total) items (halves up), at least one of a non-empty list."""
    if total == 0:
        return 0
    return min(total, max(1, math.floor(fraction * total + 0.5)))


def read_items_file(path: Path) -> tuple[tuple[str, ...], str]:
    """The item ids of an ``--items`` file (one per line; blank lines and ``#`` comments
    skipped) and the file's SHA-256."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SubsetError(f"--items {path}: cannot read it ({exc.strerror})") from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise SubsetError(f"{path}, line {line}: not UTF-8; save the file as UTF-8") from exc
    ids: list[str] = []
    seen: dict[str, int] = {}
    for number, written in enumerate(text.splitlines(), 1):
        item = written.strip()
        if not item or item.startswith("#"):
            continue
        if item in seen:
            raise SubsetError(
                f"{path}, line {number}: item {item!r} again (first on line {seen[item]}); "
                "list each item once"
            )
        seen[item] = number
        ids.append(item)
    if not ids:
        raise SubsetError(f"{path}: no item ids; write one item id per line")
    return tuple(ids), hashlib.sha256(data).hexdigest()


def draw(subset: Subset, candidates: Sequence[str]) -> Drawn:
    """The items of ``candidates`` (in their order) the subset keeps.

    A fraction keeps ``subset_size`` items drawn without replacement by numpy's PCG64
    seeded with ``seed``; a file keeps its ids, each of which must be a candidate.
    """
    if subset.fraction is not None:
        k = subset_size(subset.fraction, len(candidates))
        picked = np.random.default_rng(subset.seed).permutation(len(candidates))[:k]
        items = tuple(candidates[i] for i in sorted(int(i) for i in picked))
        return Drawn(items, len(candidates), subset.fraction, subset.seed, None, None)
    assert subset.file is not None
    ids, sha = read_items_file(subset.file)
    known = set(candidates)
    unknown = [i for i in ids if i not in known]
    if unknown:
        shown = ", ".join(repr(i) for i in unknown[:5])
        raise SubsetError(
            f"{subset.file}: {len(unknown)} id(s) not among the items to judge ({shown}); "
            "list item ids of the test set (of the --category, if given)"
        )
    wanted = set(ids)
    items = tuple(i for i in candidates if i in wanted)
    return Drawn(items, len(candidates), None, None, str(subset.file), sha)


def stored_subset(meta: dict[str, str]) -> dict[str, Any] | None:
    """A panel's subset as stored in its meta (None: every item was judged)."""
    text = meta.get("subset")
    return json.loads(text) if text else None


def describe(subset: dict[str, Any]) -> str:
    """One line for people: which subset a panel judged."""
    head = f"judged a subset: {subset['items']} of {subset['of']} items"
    if subset.get("fraction") is not None:
        return f"{head} (fraction {subset['fraction']:g}, seed {subset['seed']})"
    return f"{head} (listed in {subset['file']}, SHA-256 {subset['sha256']})"
