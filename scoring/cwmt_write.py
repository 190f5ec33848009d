"""Writing CWMT target files: a ``<tgtset>`` with one system's translations and n-best lists.

The layout is the one `scoring.cwmt_xml.read_xml` reads (CWMT 2008, Appendix
C): ``<tgtset setid srclang tgtlang>``, a ``<system site sysid>`` element with
the description, then the source's documents mirrored, each ``<s id score>``
holding the best translation followed by its ``<cand score>`` elements, best
first. Text is escaped (``&``, ``<``, ``>``); whitespace inside a segment is
kept as it is.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

__all__ = ["TargetCandidate", "TargetEntry", "tgtset_xml"]


@dataclass(frozen=True)
class TargetCandidate:
    """One n-best candidate: its text and the system's score (None: no score given)."""

    text: str
    score: float | None = None


@dataclass(frozen=True)
class TargetEntry:
    """One segment of a target file: its place, best translation and candidates."""

    doc_id: str
    seg_id: str
    text: str
    score: float | None = None
    candidates: tuple[TargetCandidate, ...] = ()


def _score(score: float | None) -> str:
    # repr round-trips a float exactly, so a reader gets the system's own number back.
    return "" if score is None else f" score={quoteattr(repr(float(score)))}"


def tgtset_xml(
    entries: Iterable[TargetEntry],
    *,
    setid: str,
    srclang: str,
    tgtlang: str,
    site: str,
    sysid: str,
    description: str,
) -> str:
    """The text of a ``<tgtset>`` file holding ``entries`` in their order, grouped by document.

    Candidates are written in the order given: sort them best first before.
    """
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        f"<tgtset setid={quoteattr(setid)} srclang={quoteattr(srclang)} "
        f"tgtlang={quoteattr(tgtlang)}>\n",
        f"<system site={quoteattr(site)} sysid={quoteattr(sysid)}>{escape(description)}</system>\n",
    ]
    doc: str | None = None
    for entry in entries:
        if entry.doc_id != doc:
            if doc is not None:
                out.append("</doc>\n")
            doc = entry.doc_id
            out.append(f"<doc docid={quoteattr(doc)}>\n")
        cands = "".join(f"<cand{_score(c.score)}>{escape(c.text)}</cand>" for c in entry.candidates)
        start = f"<s id={quoteattr(entry.seg_id)}{_score(entry.score)}>"
        out.append(f"{start}{escape(entry.text)}{cands}</s>\n")
    if doc is not None:
        out.append("</doc>\n")
    out.append("</tgtset>\n")
    return "".join(out)
