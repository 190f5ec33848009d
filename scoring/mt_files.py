"""Machine-translation scoring of files: a hypothesis file against reference files.

CWMT XML or plain text (`scoring.cwmt_xml` reads both), paired by document and segment
id or by line, handed on as mteval's SGML holds them (`scoring.mt.as_sgml_text`) and
scored for the whole test set at once (`scoring.mt_batch`): `score_mt`'s numbers.
`onsite score mt` calls `score_mt_files`; docs/scoring-mt.md defines the conventions.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .cwmt_xml import MtFile, load_mt_file, require_mirror
from .errors import FormatError
from .mt import MtReport, MtSegment, as_sgml_text
from .mt_batch import METRICS, score_mt_batch, select_metrics
from .mt_tokenize import tokenize

__all__ = ["score_mt_files"]


def score_mt_files(
    hyp: Path,
    refs: Sequence[Path],
    lang: str = "en",
    gtm_exponent: float = 1.0,
    metrics: Collection[str] | None = None,
    with_segments: bool = True,
    encoding: str | None = None,
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
    """
    chosen = tuple(METRICS if metrics is None else metrics)
    hyp = Path(hyp)
    if not refs:
        raise FormatError(hyp, None, "no reference file given", "pass at least one reference")
    hyp_file = load_mt_file(hyp, role="target", encoding=encoding)
    ref_sets = []
    for path in refs:
        ref_file = load_mt_file(Path(path), role="reference", encoding=encoding)
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
    segments = _pair(hyp_file, ref_sets)
    _refuse_empty_references(segments, lang)
    report = score_mt_batch(segments, lang, gtm_exponent, chosen, with_segments)
    info: dict[str, Any] = {
        "hyp_file": str(hyp),
        "ref_files": [str(p) for p in refs],
        "format": hyp_file.kind,
    }
    if report.system.ngrams.totals[0] == 0:
        # Moses's mteval-v13a.pl dies on log(0) here (its "length ratio" line); NIST's does not.
        info["warnings"] = [
            "every hypothesis segment is empty: NIST's mteval-v13a.pl reports BLEU 0 and "
            "NIST 0, as onsite does (no n-gram matched); the copy Moses distributes "
            "(scripts/generic/mteval-v13a.pl, which prints the length ratio) stops with "
            "'Can't take log of 0' instead"
        ]
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


def _pair(hyp_file: MtFile, ref_sets: Sequence[MtFile]) -> list[MtSegment]:
    """Pair hypothesis segments with one text from each reference set.

    Texts are handed on as mteval's SGML holds them (`as_sgml_text`).
    """
    return [
        replace(s, hyp=as_sgml_text(s.hyp), refs=tuple(as_sgml_text(r) for r in s.refs))
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
