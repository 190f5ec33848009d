"""Word alignment scoring: precision, recall, F1 and AER (Och & Ney 2003).

With system links A, sure gold links S and possible gold links P (S is a
subset of P: every sure link also counts as possible)::

    precision = |A & P| / |A|        recall = |A & S| / |S|
    F1 = 2 * precision * recall / (precision + recall)
    AER = 1 - (|A & S| + |A & P|) / (|A| + |S|)

Corpus figures add the counts of every sentence pair before dividing.

File format: one line per sentence pair, links separated by whitespace.
``i-j`` links source word i to target word j (any consistent numbering);
in a gold file ``i-j`` is sure and ``i-j-p`` (or ``i?j``) is possible. A
system file has plain ``i-j`` links only. An empty line is a pair with no
links. Gold and system files must have the same number of lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .encoded_text import read_named_lines
from .errors import FormatError

__all__ = [
    "AlignmentCounts",
    "GoldAlignment",
    "read_alignments",
    "read_gold",
    "score_alignment",
    "score_alignment_files",
]

Link = tuple[int, int]
_SURE = re.compile(r"(\d+)-(\d+)")
_POSSIBLE = re.compile(r"(\d+)-(\d+)-[pP]|(\d+)\?(\d+)")


@dataclass(frozen=True)
class GoldAlignment:
    """Sure and possible links of one sentence pair (``possible`` includes ``sure``)."""

    sure: frozenset[Link]
    possible: frozenset[Link]


def _lines(path: Path, encoding: str | None) -> list[str]:
    try:
        return read_named_lines(path, encoding)
    except OSError as exc:
        raise FormatError(path, None, f"cannot read ({exc.strerror})", "check the path") from None


def read_gold(path: str | Path, encoding: str | None = None) -> list[GoldAlignment]:
    """Read a gold file with sure (``i-j``) and possible (``i-j-p``, ``i?j``) links.

    ``encoding`` is the file's (scoring.charsets; None: UTF-8, a BOM allowed).
    """
    path = Path(path)
    out = []
    for n, line in enumerate(_lines(path, encoding), 1):
        sure: set[Link] = set()
        possible: set[Link] = set()
        for tok in line.split():
            if m := _SURE.fullmatch(tok):
                link = (int(m[1]), int(m[2]))
                sure.add(link)
                possible.add(link)
            elif m := _POSSIBLE.fullmatch(tok):
                possible.add((int(m[1] or m[3]), int(m[2] or m[4])))
            else:
                raise FormatError(
                    path, n, f"bad link {tok!r}", "write sure links as i-j, possible as i-j-p"
                )
        out.append(GoldAlignment(frozenset(sure), frozenset(possible)))
    return out


def read_alignments(path: str | Path, encoding: str | None = None) -> list[frozenset[Link]]:
    """Read a system alignment file: ``i-j`` links, one sentence pair per line, in
    ``encoding`` (None: UTF-8)."""
    path = Path(path)
    out = []
    for n, line in enumerate(_lines(path, encoding), 1):
        links: set[Link] = set()
        for tok in line.split():
            m = _SURE.fullmatch(tok)
            if m is None:
                raise FormatError(
                    path, n, f"bad link {tok!r}", "a system alignment has plain i-j links only"
                )
            links.add((int(m[1]), int(m[2])))
        out.append(frozenset(links))
    return out


@dataclass(frozen=True)
class AlignmentCounts:
    """Summed link counts and the scores computed from them."""

    system: int
    sure: int
    system_and_sure: int
    system_and_possible: int

    @property
    def precision(self) -> float:
        return self.system_and_possible / self.system if self.system else 0.0

    @property
    def recall(self) -> float:
        return self.system_and_sure / self.sure if self.sure else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r > 0 else 0.0

    @property
    def aer(self) -> float:
        denom = self.system + self.sure
        return 1.0 - (self.system_and_sure + self.system_and_possible) / denom if denom else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "aer": self.aer,
            "system_links": self.system,
            "sure_links": self.sure,
            "system_and_sure": self.system_and_sure,
            "system_and_possible": self.system_and_possible,
        }


def score_alignment(
    system: Sequence[frozenset[Link]], gold: Sequence[GoldAlignment]
) -> AlignmentCounts:
    """Corpus precision, recall, F1 and AER from per-sentence link sets."""
    if len(system) != len(gold):
        raise ValueError(f"{len(system)} system sentence pairs for {len(gold)} gold pairs")
    a = s = a_s = a_p = 0
    for links, g in zip(system, gold, strict=True):
        a += len(links)
        s += len(g.sure)
        a_s += len(links & g.sure)
        a_p += len(links & g.possible)
    return AlignmentCounts(a, s, a_s, a_p)


def score_alignment_files(
    system: str | Path, gold: str | Path, encoding: str | None = None
) -> dict[str, Any]:
    """Read both files (in ``encoding``; None: UTF-8), check they have the same number
    of lines, score them."""
    sys_links, gold_links = read_alignments(system, encoding), read_gold(gold, encoding)
    if len(sys_links) != len(gold_links):
        short, n = (
            (system, len(sys_links))
            if len(sys_links) < len(gold_links)
            else (gold, len(gold_links))
        )
        raise FormatError(
            short,
            n,
            f"{len(sys_links)} system lines for {len(gold_links)} gold lines; file ends here",
            "give one line per sentence pair in both files",
        )
    return score_alignment(sys_links, gold_links).to_dict()
