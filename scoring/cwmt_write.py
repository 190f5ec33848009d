"""Writing CWMT files: one system's ``<tgtset>`` (with n-best lists), ``<srcset>``, ``<refset>``.

The one CWMT writer: `onsite export --format cwmt-xml` (harness/export/writers.py)
and `onsite combination-set` (harness/combination_set.py) both write through it.
The layout is the one `scoring.cwmt_xml.read_xml` reads (CWMT 2008, Appendix
C): ``<tgtset setid srclang tgtlang>``, a ``<system site sysid>`` element with
the description, then the source's documents mirrored, each ``<s id score>``
holding the best translation followed by its ``<cand score>`` elements, highest
score first (candidates without a score last, in their given order).

Text is escaped so that the XML reader gives back exactly what was written:
``&``, ``<``, ``>``, and a carriage return as ``&#13;`` (a parser turns a raw CR
into LF). A control character XML 1.0 cannot hold even as a reference is an
`UnwritableText` error naming the document and segment, never dropped silently.
"""

from __future__ import annotations

import codecs
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .charsets import codec_of, encode_text, xml_name

__all__ = [
    "TargetCandidate",
    "xml_bytes",
    "TargetEntry",
    "UnwritableText",
    "ranked",
    "refset_xml",
    "srcset_xml",
    "tgtset_xml",
    "xml_text",
]

# What XML 1.0 cannot hold, even as a character reference.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_HEAD = '<?xml version="1.0" encoding="UTF-8"?>\n'


# XML attribute quoting as xml.sax.saxutils.quoteattr does it: that module imports
# urllib.request, http.client and email, a fifth of every onsite command's start-up.
_ATTR_ESCAPES = (
    ("&", "&amp;"),
    (">", "&gt;"),
    ("<", "&lt;"),
    ("\n", "&#10;"),
    ("\r", "&#13;"),
    ("\t", "&#9;"),
)


def xml_bytes(text: str, encoding: str | None, where: str | os.PathLike[str]) -> bytes:
    """A CWMT XML text written by this module as a file in ``encoding`` (None: UTF-8).

    The declaration names the encoding (``encoding="GBK"``), so the reader and any XML
    parser read the file back without being told; UTF-16 gets the byte-order mark XML
    requires of it. ValueError naming ``where`` and the first character the encoding
    lacks (scoring.charsets.encode_text).
    """
    if text.startswith(_HEAD):
        text = f'<?xml version="1.0" encoding="{xml_name(encoding)}"?>\n' + text[len(_HEAD) :]
    data = encode_text(text, encoding, where)
    codec = codec_of(encoding)
    if codec == "utf-16-le":
        data = codecs.BOM_UTF16_LE + data
    elif codec == "utf-16-be":
        data = codecs.BOM_UTF16_BE + data
    return data


def quoteattr(data: str) -> str:
    """``data`` escaped and quoted as an XML attribute value (quotes chosen to need no
    escaping where possible, else ``&quot;``)."""
    for char, entity in _ATTR_ESCAPES:
        data = data.replace(char, entity)
    if '"' not in data:
        return f'"{data}"'
    if "'" not in data:
        return f"'{data}'"
    return '"' + data.replace('"', "&quot;") + '"'


class UnwritableText(ValueError):
    """A text holds a character XML 1.0 cannot carry; ``doc_id``/``seg_id`` say where."""

    def __init__(self, doc_id: str | None, seg_id: str | None, what: str) -> None:
        self.doc_id = doc_id
        self.seg_id = seg_id
        self.what = what
        where = f"document {doc_id!r} segment {seg_id!r}" if doc_id is not None else what
        super().__init__(f"{where}: the {what} holds a control character XML 1.0 cannot carry")


@dataclass(frozen=True)
class TargetCandidate:
    """One n-best candidate: its text and the system's score (None: no score given)."""

    text: str
    score: float | None = None


@dataclass(frozen=True)
class TargetEntry:
    """One segment: its place, its text (best translation, source or reference), candidates."""

    doc_id: str
    seg_id: str
    text: str
    score: float | None = None
    candidates: tuple[TargetCandidate, ...] = ()


def xml_text(text: str) -> str:
    """``text`` as XML character data read back unchanged; ValueError for a control character."""
    if _NOT_XML.search(text):
        raise ValueError("a control character XML 1.0 cannot carry")
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return escaped.replace("\r", "&#13;")


def _finite(value: float | None) -> bool:
    return value is not None and math.isfinite(value)


def ranked(candidates: Iterable[TargetCandidate]) -> tuple[TargetCandidate, ...]:
    """Candidates highest score first; unscored (or non-finite) ones last, in their order."""
    return tuple(
        sorted(candidates, key=lambda c: -c.score if _finite(c.score) else math.inf)  # type: ignore[operator]
    )


def _score(score: float | None) -> str:
    # repr round-trips a float exactly, so a reader gets the system's own number back.
    if score is None or not math.isfinite(score):
        return ""
    return f" score={quoteattr(repr(float(score)))}"


def _attrs(setid: str, srclang: str, tgtlang: str) -> str:
    return f"setid={quoteattr(setid)} srclang={quoteattr(srclang)} tgtlang={quoteattr(tgtlang)}"


def _text(entry: TargetEntry, text: str, what: str) -> str:
    try:
        return xml_text(text)
    except ValueError:
        raise UnwritableText(entry.doc_id, entry.seg_id, what) from None


def _documents(
    entries: Iterable[TargetEntry], doc_attrs: str = "", candidates: bool = False
) -> list[str]:
    """The ``<doc>`` elements of ``entries`` in their order, one per run of a document id."""
    out: list[str] = []
    doc: str | None = None
    for entry in entries:
        if entry.doc_id != doc:
            if doc is not None:
                out.append("</doc>\n")
            doc = entry.doc_id
            out.append(f"<doc docid={quoteattr(doc)}{doc_attrs}>\n")
        cands = ""
        if candidates:
            cands = "".join(
                f"<cand{_score(c.score)}>{_text(entry, c.text, f'candidate {n}')}</cand>"
                for n, c in enumerate(ranked(entry.candidates), 1)
            )
        start = f"<s id={quoteattr(entry.seg_id)}{_score(entry.score) if candidates else ''}>"
        out.append(f"{start}{_text(entry, entry.text, 'text')}{cands}</s>\n")
    if doc is not None:
        out.append("</doc>\n")
    return out


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

    Each entry's candidates are written best score first (`ranked`).
    """
    try:
        about = xml_text(description)
    except ValueError:
        raise UnwritableText(None, None, "system description") from None
    return "".join(
        [
            _HEAD,
            f"<tgtset {_attrs(setid, srclang, tgtlang)}>\n",
            f"<system site={quoteattr(site)} sysid={quoteattr(sysid)}>{about}</system>\n",
            *_documents(entries, candidates=True),
            "</tgtset>\n",
        ]
    )


def srcset_xml(entries: Iterable[TargetEntry], *, setid: str, srclang: str, tgtlang: str) -> str:
    """The text of a ``<srcset>`` file: the source segments, grouped by document."""
    head = f"<srcset {_attrs(setid, srclang, tgtlang)}>\n"
    return "".join([_HEAD, head, *_documents(entries), "</srcset>\n"])


def refset_xml(
    references: Sequence[Iterable[TargetEntry]], *, setid: str, srclang: str, tgtlang: str
) -> str:
    """The text of a ``<refset>`` file holding several references.

    Each reference's documents carry ``site="r1"``, ``"r2"`` ..., which is how
    mteval and `onsite score mt` tell the references apart.
    """
    body: list[str] = []
    for n, entries in enumerate(references, 1):
        body += _documents(entries, doc_attrs=f" site={quoteattr(f'r{n}')}")
    return "".join([_HEAD, f"<refset {_attrs(setid, srclang, tgtlang)}>\n", *body, "</refset>\n"])
