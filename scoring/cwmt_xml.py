"""CWMT 2008 file formats: source/target/reference XML, plain text, result names.

Source: ``<srcset setid srclang tgtlang>`` / ``<doc docid>`` / ``<p>`` (optional)
/ ``<s id>``. Target: ``<tgtset>`` with the same attributes, a ``<system site
sysid>`` element holding the system description, and documents mirroring the
source whose ``<s id score>`` holds the best translation followed by n-best
``<cand score>`` elements. Reference: ``<refset>`` whose documents carry the
references; several references are told apart by a ``refid``/``site``/``sysid``
attribute on the ``<doc>`` or on its ``<refset>`` (mteval-style ``<seg>`` and
``<tstset>`` are accepted as well).

Two leniencies, both from the guidelines' own target example: unquoted
attribute values (``score=0.03``) are quoted before parsing (each repair is
listed in ``MtFile.notes``), and ``<cant>`` is read as ``<cand>``.

Elements are parsed with expat (the parser under xml.etree) directly because
every element needs its line number for error messages, which etree's C
builder does not keep.
"""

from __future__ import annotations

import codecs
import re
import xml.parsers.expat
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from .charsets import codec_of, decode_text
from .errors import FormatError

__all__ = [
    "Candidate",
    "Mismatch",
    "MtFile",
    "ResultName",
    "SystemDescription",
    "TextSegment",
    "EntitySpots",
    "MtevalReading",
    "check_mirror",
    "check_submissions",
    "is_xml",
    "load_mt_file",
    "parse_result_name",
    "read_plain",
    "read_xml",
    "require_mirror",
    "validate_target",
]

Role = Literal["source", "target", "reference"]
# How mteval-v13a reads the file: as SGML (any name but *.xml) or with XML::Twig.
MtevalReading = Literal["sgml", "xml"]
_SET_TAGS: dict[str, frozenset[str]] = {
    "source": frozenset({"srcset"}),
    "target": frozenset({"tgtset", "tstset"}),
    "reference": frozenset({"refset"}),
}
_SEG_TAGS = frozenset({"s", "seg"})
_CAND_TAGS = frozenset({"cand", "cant"})  # "cant" is a typo in the guidelines' example
_REF_ATTRS = ("refid", "site", "sysid")


@dataclass(frozen=True)
class Candidate:
    """One n-best candidate of a target segment."""

    text: str
    score: float | None
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "score": self.score, "line": self.line}


@dataclass(frozen=True)
class TextSegment:
    """One segment: its text (the best translation for a target) and its place."""

    doc_id: str
    seg_id: str
    text: str
    line: int
    score: float | None = None
    candidates: tuple[Candidate, ...] = ()
    ref_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "doc_id": self.doc_id,
            "seg_id": self.seg_id,
            "text": self.text,
            "line": self.line,
            "score": self.score,
            "candidates": [c.to_dict() for c in self.candidates],
            "ref_id": self.ref_id,
        }


@dataclass(frozen=True)
class SystemDescription:
    """The ``<system site sysid>`` element of a target file (CWMT Appendix C)."""

    site: str | None
    sysid: str | None
    text: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {"site": self.site, "sysid": self.sysid, "description": self.text, "line": self.line}


@dataclass(frozen=True)
class EntitySpots:
    """Where a file's segments hold text that one of mteval-v13a's two readings takes
    otherwise than XML does: ``count`` of them, the first (``first``) in segment
    ``doc_id``/``seg_id`` at ``line`` (see `MtFile.xml_only_refs` and
    `MtFile.decoded_entities`)."""

    count: int
    doc_id: str
    seg_id: str
    line: int
    first: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "doc_id": self.doc_id,
            "seg_id": self.seg_id,
            "line": self.line,
            "first": self.first,
        }


@dataclass(frozen=True)
class MtFile:
    """A parsed source, target or reference file (XML or plain text)."""

    path: Path
    kind: Literal["xml", "plain"]
    role: Role
    segments: tuple[TextSegment, ...]
    setid: str | None = None
    srclang: str | None = None
    tgtlang: str | None = None
    root_line: int | None = None
    system: SystemDescription | None = None
    notes: tuple[str, ...] = ()
    # &apos;, &#N; and CDATA, which mteval-v13a's SGML reading keeps as written.
    xml_only_refs: EntitySpots | None = None
    # &amp; or &quot; in the decoded text (written &amp;amp;, &amp;quot;), which
    # mteval-v13a decodes a second time when it reads the file as *.xml.
    decoded_entities: EntitySpots | None = None

    def split_references(self) -> list[MtFile]:
        """One MtFile per reference (a reference file may hold several)."""
        ids: list[str | None] = []
        for seg in self.segments:
            if seg.ref_id not in ids:
                ids.append(seg.ref_id)
        if len(ids) <= 1:
            return [self]
        return [
            replace(self, segments=tuple(s for s in self.segments if s.ref_id == rid))
            for rid in ids
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "kind": self.kind,
            "role": self.role,
            "setid": self.setid,
            "srclang": self.srclang,
            "tgtlang": self.tgtlang,
            "system": self.system.to_dict() if self.system else None,
            "notes": list(self.notes),
            "segments": [s.to_dict() for s in self.segments],
        }


# --------------------------------------------------------------------------- reading


def _decode(path: Path, encoding: str | None = None) -> str:
    """The text of ``path`` in ``encoding``; with none named, in the encoding its XML
    declaration names (``<?xml ... encoding="GBK"?>``), else UTF-8 (scoring.charsets)."""
    try:
        data = path.read_bytes()
    except IsADirectoryError as exc:
        raise FormatError(path, None, "is a directory", "give the file inside it") from exc
    except FileNotFoundError as exc:
        raise FormatError(
            path, None, "no such file", f"check the path (relative paths start at {Path.cwd()})"
        ) from exc
    except OSError as exc:
        raise FormatError(
            path, None, f"cannot read file ({exc.strerror})", "check the path"
        ) from exc
    if encoding is None:
        encoding = _declared_encoding(path, data)
    return decode_text(path, data, encoding)


_DECLARATION = re.compile(
    rb"\A(?:\xef\xbb\xbf)?\s*<\?xml[^>]*?\bencoding\s*=\s*[\"']([^\"']+)[\"']"
)


def _declared_encoding(path: Path, data: bytes) -> str | None:
    """The encoding an XML file declares, as XML reads it: a UTF-16 byte-order mark, or
    the declaration's ``encoding`` (None for UTF-8 or no declaration)."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)) and is_xml(
        data.decode("utf-16", errors="replace")[:200]
    ):
        return "utf-16"
    found = _DECLARATION.match(data[:200])
    if found is None:
        return None
    name = found.group(1).decode("ascii", errors="replace")
    try:
        codec = codec_of(name)
    except ValueError as exc:
        raise FormatError(
            path,
            1,
            f"the XML declaration names {name!r}, which onsite does not read",
            f're-save the file as UTF-8 with encoding="UTF-8" declared ({exc})',
        ) from None
    # A declaration of UTF-16 in bytes that read as ASCII is wrong: XML reads UTF-8 then.
    return None if codec in ("utf-8", "utf-16", "utf-16-le", "utf-16-be") else name


_XML_START = re.compile(r"\s*<(\?xml|!--|(srcset|tgtset|tstset|refset|mteval)\b)", re.IGNORECASE)


def is_xml(text: str) -> bool:
    """True when ``text`` starts like a CWMT/mteval XML file."""
    return _XML_START.match(text.removeprefix("\ufeff")) is not None


def read_plain(path: str | Path, role: Role = "target", encoding: str | None = None) -> MtFile:
    """One segment per line (``\\n`` ends a line; a trailing ``\\r`` is dropped), in
    ``encoding`` (None: UTF-8; scoring.charsets)."""
    path = Path(path)
    text = _decode(path, encoding)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    segs = tuple(
        TextSegment(path.name, str(i), line.removesuffix("\r"), i)
        for i, line in enumerate(lines, 1)
    )
    if not segs:
        raise FormatError(path, None, "file is empty", "give one segment per line")
    return MtFile(path, "plain", role, segs)


_SEG_TAG = re.compile(r"<seg\b", re.IGNORECASE)


def load_mt_file(
    path: str | Path,
    role: Role = "target",
    encoding: str | None = None,
    mteval: MtevalReading | None = None,
) -> MtFile:
    """Read ``path`` as CWMT XML if its content looks like XML, else as plain text.

    A file that starts like XML (``<!--``, ``<tstset`` ...) but has no
    ``<?xml`` declaration and no ``<seg`` element anywhere is plain text
    that happens to start with markup (a translated comment, say) and is
    read as such when it does not parse; malformed XML with segments is
    still an error. ``encoding`` (scoring.charsets) is the file's; left out, an XML
    file's declaration names it, and UTF-8 is read otherwise. ``mteval``: see
    `read_xml`.
    """
    path = Path(path)
    text = _decode(path, encoding)
    if not is_xml(text):
        return read_plain(path, role, encoding)
    try:
        return read_xml(path, role, text, mteval=mteval)
    except FormatError:
        declared = text.lstrip("\ufeff \t\r\n").startswith("<?xml")
        if declared or _SEG_TAG.search(text):
            raise
        return read_plain(path, role, encoding)


@dataclass
class _Node:
    tag: str
    attrib: dict[str, str]
    line: int
    children: list[_Node] = field(default_factory=list)
    text: list[str] = field(default_factory=list)  # text before the first child
    tail: list[str] = field(default_factory=list)  # text after this element

    def own_text(self, skip: frozenset[str] = frozenset()) -> str:
        """Text of this element and its children, leaving out ``skip`` subtrees."""
        parts = ["".join(self.text)]
        for child in self.children:
            if child.tag not in skip:
                parts.append(child.own_text(skip))
            parts.append("".join(child.tail))
        return "".join(parts)


_TAG = re.compile(r"<([A-Za-z_][\w.:-]*)([^<>]*)>")
_ATTR_PART = re.compile(r"(\"[^\"]*\"|'[^']*')|(=\s*)([^\s\"'>/=][^\s\"'>]*)")


def _quote_attributes(text: str) -> tuple[str, int]:
    """Quote unquoted attribute values inside start tags; line numbers stay put."""
    count = 0

    def fix_attrs(m: re.Match[str]) -> str:
        nonlocal count
        if m.group(1):
            return m.group(1)
        count += 1
        return f'{m.group(2)}"{m.group(3)}"'

    def fix_tag(m: re.Match[str]) -> str:
        attrs = m.group(2)
        closing = "/" if attrs.endswith("/") else ""
        body = attrs[:-1] if closing else attrs
        return f"<{m.group(1)}{_ATTR_PART.sub(fix_attrs, body)}{closing}>"

    return _TAG.sub(fix_tag, text), count


# C0 controls XML 1.0 forbids even as character references. mteval reads
# its SGML with Perl regexes and keeps them (a form feed is whitespace to
# its tokeniser), so they are carried through the parser as private-use
# stand-ins (plane 15) and put back in the text.
_FORBIDDEN_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")
_STAND_IN = 0xF0000
_RESTORE = {_STAND_IN + c: c for c in [*range(0, 9), 11, 12, *range(14, 32)]}


# XML markup that mteval's SGML reading does not decode (it knows only &quot; &amp;
# &lt; &gt;). Before parsing, each is replaced by its own text escaped, between
# two noncharacters, so the parser hands it on literally and `_finish` decides:
# decoded as XML (the default) or kept as mteval keeps it (--mteval-entities).
_XML_ONLY = re.compile(r"&(?:apos|#[0-9]+|#[xX][0-9A-Fa-f]+);|<!\[CDATA\[.*?\]\]>", re.S)
_OPEN, _CLOSE = "\ufdd0", "\ufdd1"
_MARKED = re.compile(f"{_OPEN}([^{_CLOSE}]*){_CLOSE}")


def _xml_char(code: int) -> bool:
    return code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0x10FFFF


def _mark(m: re.Match[str]) -> str:
    raw = m.group()
    if raw.startswith("&#"):
        digits = raw[2:-1]
        code = int(digits[1:], 16) if digits[:1] in "xX" else int(digits)
        if not _xml_char(code) or 0xFFFE <= code <= 0xFFFF:
            return raw  # left to the parser, which names the error
    escaped = raw.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return f"{_OPEN}{escaped}{_CLOSE}"


def _decoded(raw: str) -> str:
    if raw.startswith("<![CDATA["):
        return raw[9:-3]
    if raw == "&apos;":
        return "'"
    digits = raw[2:-1]
    return chr(int(digits[1:], 16) if digits[:1] in "xX" else int(digits))


def _finish(text: str, literal: bool = False) -> str:
    """Text with each marked reference decoded (XML) or, ``literal``, as written."""
    if _OPEN not in text:
        return text
    return _MARKED.sub(lambda m: m.group(1) if literal else _decoded(m.group(1)), text)


# XML::Twig (mteval's *.xml reader) drops whitespace-only text between two CDATA
# sections, as it drops it between elements.
_CDATA_GAP = re.compile(r"(?<=\]\]>)\s+(?=<!\[CDATA\[)")


def _parse_tree(path: Path, text: str, twig: bool = False) -> tuple[_Node, int]:
    text, repaired = _quote_attributes(text)
    if twig:
        text = _CDATA_GAP.sub("", text)
    text = _XML_ONLY.sub(_mark, text)
    if _FORBIDDEN_CONTROL.search(text):
        text = _FORBIDDEN_CONTROL.sub(lambda m: chr(_STAND_IN + ord(m.group())), text)
    parser = xml.parsers.expat.ParserCreate()
    stack: list[_Node] = []
    root: list[_Node] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        node = _Node(
            tag.lower(),
            {k.lower(): _finish(v.translate(_RESTORE)) for k, v in attrs.items()},
            parser.CurrentLineNumber,
        )
        if stack:
            stack[-1].children.append(node)
        else:
            root.append(node)
        stack.append(node)

    def end(tag: str) -> None:
        stack.pop()

    def data(chunk: str) -> None:
        chunk = chunk.translate(_RESTORE)
        if stack:
            top = stack[-1]
            (top.children[-1].tail if top.children else top.text).append(chunk)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = data
    try:
        parser.Parse(text, True)
    except xml.parsers.expat.ExpatError as exc:
        raise FormatError(
            path,
            exc.lineno,
            f"malformed XML: {xml.parsers.expat.ErrorString(exc.code)} at column {exc.offset + 1}",
            "fix the markup (escape & as &amp; and < as &lt; in text, close every element)",
        ) from exc
    return root[0], repaired


def _float_attr(path: Path, node: _Node, name: str) -> float | None:
    value = node.attrib.get(name)
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        raise FormatError(
            path, node.line, f"<{node.tag}> {name}={value!r} is not a number", "give a real number"
        ) from None


def _segments_of(node: _Node) -> Iterable[_Node]:
    for child in node.children:
        if child.tag in _SEG_TAGS:
            yield child
        elif child.tag not in _CAND_TAGS:
            yield from _segments_of(child)  # through <p> and similar wrappers


def read_xml(
    path: str | Path,
    role: Role = "target",
    text: str | None = None,
    encoding: str | None = None,
    mteval: MtevalReading | None = None,
) -> MtFile:
    """Parse a CWMT (or mteval) XML file of the given role (its text in ``encoding``, or
    in what its declaration names).

    ``&apos;``, numeric character references and CDATA in segments are decoded
    as XML; ``mteval="sgml"`` keeps them as written, as mteval-v13a's SGML
    reading does, and ``mteval="xml"`` drops whitespace between two CDATA
    sections, as its XML::Twig reading does (``MtFile.xml_only_refs`` and
    ``decoded_entities`` say where either reading would differ).
    """
    path = Path(path)
    if text is None:
        text = _decode(path, encoding)
    root, repaired = _parse_tree(path, text, twig=mteval == "xml")
    literal = mteval == "sgml"
    wanted = _SET_TAGS[role]
    sets = [root] if root.tag in wanted else [c for c in root.children if c.tag in wanted]
    if not sets:
        raise FormatError(
            path,
            root.line,
            f"root element <{root.tag}> holds no {'/'.join(sorted(wanted))} element",
            f"a {role} file needs <{sorted(wanted)[-1]}>",
        )
    if role != "reference" and len(sets) > 1:
        raise FormatError(
            path, sets[1].line, f"more than one <{sets[1].tag}>", f"give one per {role} file"
        )
    first = sets[0]
    system = None
    segments: list[TextSegment] = []
    marked: list[tuple[int, str, TextSegment]] = []
    twice: list[tuple[int, str, TextSegment]] = []
    for set_index, node in enumerate(sets):
        set_ref = next((node.attrib[a] for a in _REF_ATTRS if a in node.attrib), None)
        if set_ref is None and len(sets) > 1:
            set_ref = str(set_index + 1)
        for child in node.children:
            if child.tag == "system" and system is None:
                system = SystemDescription(
                    child.attrib.get("site"),
                    child.attrib.get("sysid"),
                    _clean_description(_finish(child.own_text())),
                    child.line,
                )
        docs = [c for c in node.children if c.tag == "doc"]
        if not docs:
            raise FormatError(path, node.line, f"<{node.tag}> has no <doc>", "add the documents")
        for doc in docs:
            doc_id = doc.attrib.get("docid")
            if not doc_id:
                raise FormatError(path, doc.line, "<doc> without docid", 'add docid="..."')
            ref_id = set_ref
            if role == "reference":
                ref_id = next((doc.attrib[a] for a in _REF_ATTRS if a in doc.attrib), set_ref)
            segs = list(_segments_of(doc))
            if not segs:
                raise FormatError(path, doc.line, f"document {doc_id!r} has no <s>", "add segments")
            for seg in segs:
                seg_id = seg.attrib.get("id")
                if not seg_id:
                    raise FormatError(path, seg.line, f"<{seg.tag}> without id", 'add id="N"')
                cands = tuple(
                    Candidate(
                        " ".join(_finish(c.own_text(), literal).split()),
                        _float_attr(path, c, "score"),
                        c.line,
                    )
                    for c in seg.children
                    if c.tag in _CAND_TAGS
                )
                raw = seg.own_text(skip=_CAND_TAGS)
                segments.append(
                    TextSegment(
                        doc_id,
                        seg_id,
                        _finish(raw, literal).strip(),
                        seg.line,
                        _float_attr(path, seg, "score"),
                        cands,
                        ref_id if role == "reference" else None,
                    )
                )
                found = _MARKED.findall(raw)
                if found:
                    marked.append((len(found), found[0], segments[-1]))
                again = _DECODED_AGAIN.findall(segments[-1].text)
                if again:
                    twice.append((len(again), again[0], segments[-1]))
    notes = (f"quoted {repaired} unquoted attribute value(s)",) if repaired else ()
    return MtFile(
        path,
        "xml",
        role,
        tuple(segments),
        first.attrib.get("setid"),
        first.attrib.get("srclang"),
        first.attrib.get("tgtlang", first.attrib.get("trglang")),
        first.line,
        system,
        notes,
        _spots(marked),
        _spots(twice),
    )


# After XML decoding, what mteval-v13a's tokeniser decodes once more when it reads
# a *.xml file (&lt; and &gt; read as < and > in onsite's reading too).
_DECODED_AGAIN = re.compile("&amp;|&quot;")


def _spots(found: Sequence[tuple[int, str, TextSegment]]) -> EntitySpots | None:
    if not found:
        return None
    _, first, seg = found[0]
    return EntitySpots(sum(n for n, _, _ in found), seg.doc_id, seg.seg_id, seg.line, first)


def _clean_description(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines()]
    return "\n".join(ln for ln in lines if ln)


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class Mismatch:
    """One way a file departs from what it must mirror or contain."""

    path: str
    line: int | None
    problem: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        return f"{where}: {self.problem}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "problem": self.problem}


def _doc_index(f: MtFile) -> dict[str, list[TextSegment]]:
    docs: dict[str, list[TextSegment]] = {}
    for seg in f.segments:
        docs.setdefault(seg.doc_id, []).append(seg)
    return docs


def check_mirror(source: MtFile, target: MtFile) -> list[Mismatch]:
    """Every way ``target`` fails to mirror ``source`` (set attributes, docids, segment ids).

    ``source`` may be a source or a reference file (each reference is
    checked on its own). An empty list means the target mirrors the source.
    """
    out: list[Mismatch] = []
    tpath = str(target.path)
    if source.kind == "xml" and target.kind == "xml":
        for name in ("setid", "srclang", "tgtlang"):
            want, got = getattr(source, name), getattr(target, name)
            if want is not None and want != got:
                out.append(
                    Mismatch(tpath, target.root_line, f"{name} is {got!r}, source has {want!r}")
                )
    src_docs, tgt_docs = _doc_index(source), _doc_index(target)
    first_line: dict[Any, Any] = {}
    for seg in target.segments:
        first_line.setdefault(seg.doc_id, seg.line)
    for doc_id, segs in src_docs.items():
        if doc_id not in tgt_docs:
            out.append(Mismatch(tpath, None, f"document {doc_id!r} is missing"))
            continue
        out.extend(_check_doc(tpath, doc_id, segs, tgt_docs[doc_id]))
    for doc_id in tgt_docs:
        if doc_id not in src_docs:
            out.append(
                Mismatch(tpath, first_line[doc_id], f"document {doc_id!r} is not in {source.path}")
            )
    return out


def _check_doc(
    tpath: str, doc_id: str, src: Sequence[TextSegment], tgt: Sequence[TextSegment]
) -> list[Mismatch]:
    out: list[Mismatch] = []
    src_ids = [s.seg_id for s in src]
    tgt_ids = {s.seg_id for s in tgt}
    seen: Counter[str] = Counter()
    for seg in tgt:
        seen[seg.seg_id] += 1
        if seen[seg.seg_id] == 2:
            out.append(
                Mismatch(tpath, seg.line, f"document {doc_id!r}: segment {seg.seg_id} repeated")
            )
        if seg.seg_id not in src_ids:
            out.append(
                Mismatch(
                    tpath, seg.line, f"document {doc_id!r}: segment {seg.seg_id} not in source"
                )
            )
    for sid in src_ids:
        if sid not in tgt_ids:
            out.append(
                Mismatch(tpath, tgt[0].line, f"document {doc_id!r}: segment {sid} is missing")
            )
    return out


def require_mirror(source: MtFile, target: MtFile) -> None:
    """Raise one FormatError listing every mismatch found by `check_mirror`."""
    problems = check_mirror(source, target)
    if problems:
        listing = "; ".join(str(p) for p in problems)
        first = next((p.line for p in problems if p.line is not None), None)
        raise FormatError(
            target.path,
            first,
            f"{len(problems)} mismatch(es) with {source.path}: {listing}",
            "give exactly the documents and segment ids of the source",
        )


def validate_target(target: MtFile) -> list[Mismatch]:
    """Guideline checks on a target file beyond the mirror: system element, scores."""
    out: list[Mismatch] = []
    p = str(target.path)
    if target.kind != "xml":
        return out
    if target.system is None:
        out.append(Mismatch(p, target.root_line, "no <system> element (system description)"))
    else:
        for attr in ("site", "sysid"):
            if not getattr(target.system, attr):
                out.append(Mismatch(p, target.system.line, f"<system> has no {attr} attribute"))
        if not target.system.text:
            out.append(Mismatch(p, target.system.line, "<system> description is empty"))
    for seg in target.segments:
        scores = [(seg.line, seg.score)] + [(c.line, c.score) for c in seg.candidates]
        for line, score in scores:
            if score is not None and not 0.0 <= score <= 1.0:
                out.append(Mismatch(p, line, f"score {score} is outside 0..1"))
        cand_scores = [c.score for c in seg.candidates if c.score is not None]
        if any(a < b for a, b in zip(cand_scores, cand_scores[1:], strict=False)):
            out.append(Mismatch(p, seg.line, "candidates are not sorted by score, high to low"))
    return out


# --------------------------------------------------------------------------- naming rule


@dataclass(frozen=True)
class ResultName:
    """``task-site-primary|contrast-system.xml`` split into its parts."""

    task: str
    site: str
    kind: Literal["primary", "contrast"]
    system: str

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "site": self.site, "kind": self.kind, "system": self.system}


# The hyphen separates the four parts, so no part may contain one; the task
# is src_tgt_domain_task in lower case (zh_en_news_trans, en_zh_scie_trans).
_NAME = re.compile(
    r"(?P<task>[a-z]{2}_[a-z]{2}_[a-z]+_[a-z]+)-(?P<site>[A-Za-z0-9_]+)"
    r"-(?P<kind>primary|contrast)-(?P<system>[A-Za-z0-9_]+)\.xml"
)


_TASK = re.compile(r"[a-z]{2}_[a-z]{2}_[a-z]+_[a-z]+")


def name_part(text: str) -> str:
    """``text`` as one part of a result file name, and so as the ``site`` or ``sysid`` the
    name must match: every character the rule does not take ('-' separates the parts)
    becomes '_'."""
    return re.sub(r"[^A-Za-z0-9_]", "_", text) or "_"


def _lang_part(lang: str | None) -> str:
    # The rule's two-letter language code: "zh", "en" (from "zh-CN" too); else "xx".
    code = (lang or "")[:2].lower()
    return code if re.fullmatch(r"[a-z]{2}", code) else "xx"


def result_file_name(
    setid: str,
    site: str,
    system: str,
    srclang: str | None = None,
    tgtlang: str | None = None,
    kind: Literal["primary", "contrast"] = "primary",
) -> str:
    """A file name the naming rule accepts for a system's result on a set.

    The task part is ``task_id(setid, srclang, tgtlang)``.
    """
    task = task_id(setid, srclang, tgtlang)
    return f"{task}-{name_part(site)}-{kind}-{name_part(system)}.xml"


def task_id(
    setid: str, srclang: str | None = None, tgtlang: str | None = None, task: str = "trans"
) -> str:
    """``setid`` when it has the naming rule's task form (zh_en_news_trans), else one made
    from it: ``src_tgt_<its letters>_<task>``, ``xx`` for a language not given. ``task``
    is the rule's last part: ``trans`` (translation) or ``combi`` (system combination)."""
    lowered = setid.lower()
    if _TASK.fullmatch(lowered):
        return lowered
    src, tgt = (_lang_part(lang) for lang in (srclang, tgtlang))
    domain = re.sub(r"[^a-z]", "", lowered) or "onsite"
    return f"{src}_{tgt}_{domain}_{task}"


def combination_task_id(setid: str, srclang: str | None = None, tgtlang: str | None = None) -> str:
    """The system-combination task's id for an MT set: its ``task_id`` with the last part
    ``combi`` (zh_en_news_trans -> zh_en_news_combi, CWMT 2008's ZH-EN-NEWS-COMBI)."""
    src, tgt, domain, _ = task_id(setid, srclang, tgtlang).split("_")
    return f"{src}_{tgt}_{domain}_combi"


def parse_result_name(path: str | Path) -> ResultName:
    """Check a submitted file name against the CWMT naming rule."""
    name = Path(path).name
    m = _NAME.fullmatch(name)
    if m is None:
        raise FormatError(
            path,
            None,
            f"file name {name!r} breaks the naming rule task-site-primary|contrast-system.xml",
            "rename it like zh_en_news_trans-ict-primary-systema.xml "
            "(no '-' inside a part, lower-case task, .xml)",
        )
    return ResultName(m["task"], m["site"], m["kind"], m["system"])  # type: ignore[arg-type]


def check_submissions(paths: Sequence[str | Path]) -> list[Mismatch]:
    """Per task and site: one primary, at most two contrasts, distinct system names."""
    out: list[Mismatch] = []
    groups: dict[tuple[str, str], list[tuple[Path, ResultName]]] = {}
    for path in paths:
        try:
            rn = parse_result_name(path)
        except FormatError as exc:
            out.append(Mismatch(str(path), None, exc.problem))
            continue
        groups.setdefault((rn.task, rn.site), []).append((Path(path), rn))
    for (task, site), items in groups.items():
        kinds = Counter(rn.kind for _, rn in items)
        where = str(items[0][0])
        if kinds["primary"] != 1:
            out.append(
                Mismatch(where, None, f"{task}/{site}: {kinds['primary']} primary results, need 1")
            )
        if kinds["contrast"] > 2:
            out.append(
                Mismatch(
                    where, None, f"{task}/{site}: {kinds['contrast']} contrast results, at most 2"
                )
            )
        systems = Counter(rn.system for _, rn in items)
        for name, n in systems.items():
            if n > 1:
                out.append(
                    Mismatch(where, None, f"{task}/{site}: system {name!r} submitted {n} times")
                )
    return out
