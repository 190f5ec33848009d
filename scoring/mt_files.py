"""Machine-translation scoring of files: a hypothesis file against reference files.

CWMT XML or plain text (`scoring.cwmt_xml` reads both), paired by document and segment
id or by line, handed on as mteval's SGML holds them (`scoring.mt.as_sgml_text`) and
scored for the whole test set at once (`scoring.mt_batch`): `score_mt`'s numbers.
`onsite score mt` calls `score_mt_files`; docs/scoring-mt.md defines the conventions.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .cwmt_xml import MtevalReading, MtFile, load_mt_file, require_mirror
from .errors import FormatError
from .mt import MtReport, MtSegment, as_sgml_text
from .mt_batch import METRICS, score_mt_batch, select_metrics
from .mt_tokenize import tokenize

__all__ = ["entity_warnings", "gtm_warnings", "score_mt_files", "tokenization_note"]


def score_mt_files(
    hyp: Path,
    refs: Sequence[Path],
    lang: str = "en",
    gtm_exponent: float = 1.0,
    metrics: Collection[str] | None = None,
    with_segments: bool = True,
    encoding: str | None = None,
    mteval: MtevalReading | None = None,
) -> dict[str, Any]:
    """Score a hypothesis file against reference files (CWMT XML or plain text).

    XML is recognised by content (a ``<?xml`` declaration or a leading
    ``<tgtset``/``<refset``-style element). XML hypotheses and references are
    paired by (docid, segment id) after checking the hypothesis mirrors each
    reference file; otherwise segments are paired in file order. Returns
    ``MtReport.to_dict()``: fractions for BLEU/GTM/mWER/mPER, raw NIST.

    `metrics` (names of `scoring.mt_batch.METRICS`, default all) limits what
    is computed and reported; `with_segments=False` leaves out the
    per-segment scores. The numbers are `score_mt`'s, computed for the whole
    set at once (`scoring.mt_batch`). ``encoding`` is the files' (scoring.charsets;
    None: UTF-8, or what an XML file declares).

    XML files are decoded once, as XML defines them. ``mteval="sgml"`` reads
    them as mteval-v13a reads a file not named ``*.xml`` (SGML: ``&apos;``,
    ``&#N;`` and CDATA kept as written); ``mteval="xml"`` as it reads a
    ``*.xml`` file (XML::Twig, then its tokeniser decodes ``&amp; &quot;`` a
    second time). The result's ``warnings`` name each file where a reading
    differs, and where GTM 1.4 would (docs/scoring-mt.md).
    """
    chosen = tuple(METRICS if metrics is None else metrics)
    hyp = Path(hyp)
    if not refs:
        raise FormatError(hyp, None, "no reference file given", "pass at least one reference")
    hyp_file = load_mt_file(hyp, "target", encoding, mteval)
    ref_sets = []
    warnings = entity_warnings(hyp_file, mteval)
    for path in refs:
        ref_file = load_mt_file(Path(path), "reference", encoding, mteval)
        warnings += entity_warnings(ref_file, mteval)
        ref_sets.extend(ref_file.split_references())
    lang = lang.lower()
    declared = hyp_file.tgtlang
    if declared and declared.lower() != lang:
        raise FormatError(
            hyp,
            hyp_file.root_line,
            f"tgtlang is {declared!r} but scoring was asked for lang {lang!r}",
            f"score with lang={declared!r} (character level for zh/ja)",
        )
    segments = _pair(hyp_file, ref_sets, decode_again=mteval == "xml")
    _refuse_empty_references(segments, lang)
    report = score_mt_batch(segments, lang, gtm_exponent, chosen, with_segments)
    info: dict[str, Any] = {
        "hyp_file": str(hyp),
        "ref_files": [str(p) for p in refs],
        "format": hyp_file.kind,
        "tokenization": tokenization_note(lang),
    }
    if hyp_file.kind == "xml" or any(r.kind == "xml" for r in ref_sets):
        info["entities"] = _READINGS[mteval]
    if report.system.ngrams.totals[0] == 0:
        # Moses's mteval-v13a.pl dies on log(0) here (its "length ratio" line); NIST's does not.
        warnings.insert(
            0,
            "every hypothesis segment is empty: NIST's mteval-v13a.pl reports BLEU 0 and "
            "NIST 0, as onsite does (no n-gram matched); the copy Moses distributes "
            "(scripts/generic/mteval-v13a.pl, which prints the length ratio) stops with "
            "'Can't take log of 0' instead",
        )
    if "gtm" in chosen:
        warnings += gtm_warnings(segments, len(ref_sets))
    if warnings:
        info["warnings"] = warnings
    if hyp_file.system is not None:
        info["system"] = hyp_file.system.to_dict()
    out = MtReport(
        report.lang, report.n_refs, report.system, report.documents, report.segments, info
    ).to_dict()
    if set(chosen) != set(METRICS):
        out = select_metrics(out, chosen)
        out["metrics"] = list(chosen)
        for key in ("documents", "segments"):
            out[key] = [select_metrics(item, chosen) for item in out[key]]
    if not with_segments:
        del out["segments"]
        out["n_segments"] = len(segments)
    return out


def _refuse_empty_references(segments: Sequence[MtSegment], lang: str) -> None:
    """FormatError-free ValueError for a segment whose references are all empty.

    mteval stops there ("Illegal division by zero"); `score_mt` would give
    an artifact (smoothing makes a hypothesis ``a b`` score BLEU 0.5).
    """
    for seg in segments:
        if not any(tokenize(r, lang) for r in seg.refs):
            raise ValueError(
                f"segment {seg.doc_id}/{seg.seg_id}"
                + (f" (line {seg.line})" if seg.line else "")
                + " has only empty references, which mteval cannot score "
                "(Illegal division by zero); give a reference text or leave the segment out"
            )


def _pair(
    hyp_file: MtFile, ref_sets: Sequence[MtFile], decode_again: bool = False
) -> list[MtSegment]:
    """Pair hypothesis segments with one text from each reference set.

    Texts are handed on as mteval's SGML holds them (`as_sgml_text`), those of
    XML files with ``decode_again`` as XML::Twig hands them to its tokeniser
    (which decodes ``&quot; &amp; &lt; &gt;`` in them once more).
    """

    def held(kind: str) -> Callable[[str], str]:
        return (lambda t: t) if decode_again and kind == "xml" else as_sgml_text

    hyp_text = held(hyp_file.kind)
    ref_text = [held(r.kind) for r in ref_sets]
    return [
        replace(
            s,
            hyp=hyp_text(s.hyp),
            refs=tuple(f(r) for f, r in zip(ref_text, s.refs, strict=True)),
        )
        for s in _pair_texts(hyp_file, ref_sets)
    ]


def _pair_texts(hyp_file: MtFile, ref_sets: Sequence[MtFile]) -> list[MtSegment]:
    hyp_segs = hyp_file.segments
    if hyp_file.kind == "xml" and all(r.kind == "xml" for r in ref_sets):
        for ref in ref_sets:
            require_mirror(ref, hyp_file)
        lookups = [{(s.doc_id, s.seg_id): s.text for s in r.segments} for r in ref_sets]
        return [
            MtSegment(
                s.doc_id,
                s.seg_id,
                s.text,
                tuple(lk[(s.doc_id, s.seg_id)] for lk in lookups),
                s.line,
            )
            for s in hyp_segs
        ]
    for ref in ref_sets:
        if len(ref.segments) != len(hyp_segs):
            shorter = ref if len(ref.segments) < len(hyp_segs) else hyp_file
            raise FormatError(
                shorter.path,
                shorter.segments[-1].line,
                f"{len(ref.segments)} reference segments in {ref.path} for "
                f"{len(hyp_segs)} hypothesis segments in {hyp_file.path}",
                "give one reference segment per hypothesis segment, in the same order",
            )
    # Mixed XML/plain: pair in order; document ids come from an XML side if any.
    ids_from = hyp_file
    if hyp_file.kind != "xml":
        ids_from = next((r for r in ref_sets if r.kind == "xml"), hyp_file)
    return [
        MtSegment(
            ids_from.segments[i].doc_id,
            ids_from.segments[i].seg_id,
            s.text,
            tuple(r.segments[i].text for r in ref_sets),
            s.line,
        )
        for i, s in enumerate(hyp_segs)
    ]


def tokenization_note(lang: str) -> str:
    """How ``lang``'s text is tokenised, and where that leaves mteval-v13a."""
    if lang in ("zh", "ja"):
        return (
            "characters, the CWMT rule: full-width forms (U+FF01-FF5E) to ASCII and U+3000 "
            "to a space, then each CJK character and punctuation mark a token, other runs "
            "tokenised as mteval-v13a's English; mteval-v13a itself tokenises every "
            "language as English (--lang en gives its tokens) and sacrebleu's 'zh' keeps "
            "full-width forms"
        )
    return "mteval-v13a's default tokenization, case kept (-c)"


_READINGS: dict[str | None, str] = {
    None: "XML, decoded once",
    "sgml": "mteval-v13a's SGML reading (--mteval-entities sgml)",
    "xml": "mteval-v13a's *.xml reading (--mteval-entities xml)",
}


def entity_warnings(f: MtFile, mteval: MtevalReading | None) -> list[str]:
    """The lines naming where ``f``'s text reads otherwise in one of mteval-v13a's two
    readings of an XML file (docs/scoring-mt.md, "Entities")."""
    out = []
    spots = f.xml_only_refs
    if spots is not None and mteval != "xml":
        where = (
            f"{f.path}: {spots.count} XML reference(s) or CDATA section(s) that "
            f"mteval-v13a's SGML reading does not decode (the first, {spots.first!r}, in "
            f"segment {spots.doc_id}/{spots.seg_id}, line {spots.line})"
        )
        if mteval == "sgml":
            out.append(
                f"{where}: kept as written, as mteval-v13a reads a file whose name does "
                "not end in .xml (--mteval-entities sgml); &apos; scores as '& apos ;'"
            )
        else:
            out.append(
                f"{where}: decoded as XML, as mteval-v13a decodes a file named *.xml; "
                "given any other name (.sgm) it reads SGML, decodes only &quot; &amp; "
                "&lt; &gt; and scores &apos; as the tokens '& apos ;': "
                "--mteval-entities sgml reproduces that"
            )
    spots = f.decoded_entities
    if spots is not None and mteval != "sgml":
        where = (
            f"{f.path}: {spots.count} escaped entity text(s) (the first, {spots.first!r} "
            f"after XML decoding, in segment {spots.doc_id}/{spots.seg_id}, line "
            f"{spots.line})"
        )
        if mteval == "xml":
            out.append(
                f"{where}: decoded a second time, as mteval-v13a does with a file named "
                "*.xml (--mteval-entities xml)"
            )
        else:
            out.append(
                f"{where}: kept as text, as mteval-v13a's SGML reading keeps it; reading "
                "a file named *.xml, mteval-v13a decodes it a second time (&amp;quot; "
                "becomes '\"'): --mteval-entities xml reproduces that"
            )
    return out


def gtm_warnings(segments: Sequence[MtSegment], n_refs: int) -> list[str]:
    """Where GTM 1.4 (the NYU Java tool) would give another GTM than onsite's rule.

    onsite matches runs within a segment and takes each segment's best
    reference; GTM 1.4 matches over a document's whole grid and has its own
    multi-reference rule. Its source was not at hand to reproduce it
    (docs/scoring-mt.md#gtm), so every input where the two can part is named.
    """
    per_doc: dict[str, int] = {}
    for seg in segments:
        per_doc[seg.doc_id] = per_doc.get(seg.doc_id, 0) + 1
    long_docs = [d for d, n in per_doc.items() if n > 1]
    out = []
    if long_docs:
        out.append(
            f"GTM: {len(long_docs)} document(s) of more than one segment (the first: "
            f"{long_docs[0]!r}, {per_doc[long_docs[0]]} segments): onsite matches runs within "
            "each segment and adds the segments' counts; GTM 1.4 (Turian, Shen and "
            "Melamed's Java tool) matches over the document's whole grid, so its figure "
            "can differ there (with an exponent above 1, or a word matched in another "
            "segment); no flag reproduces GTM 1.4 (docs/scoring-mt.md#gtm)"
        )
    if n_refs > 1:
        out.append(
            f"GTM: {n_refs} references: onsite scores each segment against the reference "
            "with the best F (the first on a tie); GTM 1.4 has its own multi-reference rule, "
            "so its figure can differ; no flag reproduces GTM 1.4 (docs/scoring-mt.md#gtm)"
        )
    return out
