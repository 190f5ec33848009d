"""The fields' own file formats: one writer per format, (job, references) -> file text.

Kinds choose from these in their ``writers`` (and write their own where a
format is theirs alone, such as each kind's `score-jsonl`). Each writes what
the field's reference tool reads and what `onsite score` reads back to the
live number (docs/formats.md; tests/test_export_formats.py,
tests/test_kind_conformance.py). A hypothesis the format cannot carry
faithfully is refused with an InputError naming the item and a format that
can, never silently changed. The CWMT writer (scoring.cwmt_write) is loaded
by the writer that uses it: reading a site file imports this module.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from harness.kinds.base import JobData, jsonl

if TYPE_CHECKING:
    from harness.testsets import TestItem
    from scoring.cwmt_write import TargetEntry

__all__ = [
    "plain_id",
    "score_jsonl",
    "write_conll",
    "write_ctm",
    "write_cwmt_source",
    "write_cwmt_xml",
    "write_kaldi",
    "write_sighan",
    "write_trec",
    "write_trn",
    "write_tsv",
]

# sclite splits words at these only; other blanks (NBSP, U+3000) are part of a word.
_SCLITE_BREAK = re.compile("[\n\r]")
_SCLITE_WORDS = re.compile("[ \t\n\r]+")


def _one_line(text: str) -> str:
    # A line break would split the item; sclite and Kaldi count it as a word break.
    return _SCLITE_BREAK.sub(" ", text)


def plain_id(job: JobData, item: TestItem, fmt: str) -> str:
    """The item's id as a whitespace-separated format writes it; refused if it cannot be."""
    if not item.id or any(ch.isspace() or ch in "()" for ch in item.id):
        raise job.refuse(
            f"item {item.id}",
            f"the id {item.id!r} cannot be written in {fmt} (a space or parenthesis in it)",
            "export with --format jsonl, or rename the test-set file",
        )
    return item.id


def _ref_text(item: TestItem) -> str:
    return str(item.reference)


# --------------------------------------------------------------------------- speech


def write_trn(job: JobData, references: bool) -> str:
    """sclite `trn`: the words, then the utterance id in parentheses."""
    out = []
    for item in job.testset.items:
        item_id = plain_id(job, item, "trn")
        text = _one_line(_ref_text(item) if references else job.text(item.id))
        if text.strip(" \t").startswith(";;"):
            raise job.refuse(
                f"item {item.id}",
                "the text starts with ';;', which sclite reads as a comment line",
                "export with --format kaldi, whose lines start with the id",
            )
        out.append(f"{text} ({item_id})\n")
    return "".join(out)


def write_kaldi(job: JobData, references: bool) -> str:
    """Kaldi `text`: the utterance id, then the words."""
    from scoring.asr_formats import detect_format

    out = []
    for item in job.testset.items:
        item_id = plain_id(job, item, "kaldi")
        text = _one_line(_ref_text(item) if references else job.text(item.id)).strip(" \t")
        out.append(f"{item_id} {text}".rstrip(" \t"))
    if out and detect_format(out) != "kaldi":
        # Most lines end in "(...)": read back, the file would be taken for trn.
        raise job.refuse(
            f"item {job.testset.items[0].id}",
            "most texts end with a parenthesis: the file would be read back as trn",
            "export with --format trn, whose ids are unambiguous",
        )
    return "".join(line + "\n" for line in out)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def write_ctm(job: JobData, references: bool) -> str:
    """sclite CTM (with --references, its STM): one line per word, times spread evenly.

    The systems send no word times, so an item's words share its duration equally;
    every word's midpoint lies inside its item's STM segment, which is what sclite's
    time-mediated pairing needs. An item with no words has no CTM line.
    """
    out = []
    for item in job.testset.items:
        item_id = plain_id(job, item, "ctm")
        duration = item.duration if item.duration and item.duration > 0 else 1.0
        if references:
            # STM: file channel speaker begin end transcript
            words = " ".join(w for w in _SCLITE_WORDS.split(_ref_text(item)) if w)
            out.append(f"{item_id} A {item_id} 0.000 {_seconds(duration)} {words}".rstrip() + "\n")
            continue
        words_list = [w for w in _SCLITE_WORDS.split(job.text(item.id)) if w]
        step = duration / len(words_list) if words_list else 0.0
        for n, word in enumerate(words_list):
            out.append(f"{item_id} A {_seconds(n * step)} {_seconds(step)} {word}\n")
    return "".join(out)


# --------------------------------------------------------------------------- mt
# The CWMT files are written by scoring.cwmt_write, the one CWMT writer
# (`onsite combination-set` writes its candidate lists through it too).


def _mt_header(job: JobData) -> tuple[str, str, str, list[tuple[str, list[TestItem]]]]:
    """(setid, srclang, tgtlang, documents in order with their items)."""
    from scoring.cwmt_xml import load_mt_file, task_id

    root = job.testset.root
    setid, srclang, tgtlang = job.task, "", ""
    source = root / "source.xml"
    if source.is_file():
        src = load_mt_file(source, "source", getattr(job.config, "encoding", None))
        setid = src.setid or setid
        srclang, tgtlang = src.srclang or "", src.tgtlang or ""
    items = job.testset.items
    if not tgtlang and items:
        tgtlang = str(items[0].reference.lang)
    if not source.is_file():
        # A plain-text set has no set id: one of the CWMT form, from the task's name, so
        # that files named by the rule (task-site-primary-system.xml) can match it; a
        # combination job's is a combination task's (zh_en_news_combi), not the MT one's.
        part = "combi" if job.kind.name == "combination" else "trans"
        setid = task_id(setid, srclang, tgtlang, part)
    docs: dict[str, list[TestItem]] = {}
    for item in items:
        docs.setdefault(item.reference.doc_id, []).append(item)
    return setid, srclang, tgtlang, list(docs.items())


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _description(job: JobData) -> str:
    """What the run knows of the system, for the `<system>` element (CWMT Appendix C)."""
    seconds = sum(job.seconds.values())
    if job.lines and all(line.get("offline") for line in job.lines.values()):
        return (
            f"Submitted as a file for task {job.task} (onsite ingest): not run by onsite, "
            "no execution time measured. Technology outline, training data and external "
            "technology: not given to the run; the participant states them."
        )
    return (
        f"Hardware and software environment: as run by onsite (task {job.task}). "
        f"Execution time: {seconds:.1f} s for {len(job.testset.items)} segments, "
        "measured by the controller. Technology outline, training data and external "
        "technology: not given to the run; the participant states them."
    )


def _target_entry(job: JobData, item: TestItem) -> TargetEntry:
    """The item's translation and its n-best list (as the system sent it) as a tgtset entry."""
    from scoring.cwmt_write import TargetCandidate, TargetEntry

    answer = job.answer(item.id) or {}
    nbest = answer.get("nbest")
    cands = tuple(
        TargetCandidate(
            str(c.get("text", "")), float(c["score"]) if _finite(c.get("score")) else None
        )
        for c in (nbest if isinstance(nbest, list) else ())
        if isinstance(c, Mapping)
    )
    ref = item.reference
    return TargetEntry(ref.doc_id, ref.seg_id, job.text(item.id), None, cands)


def _cwmt(job: JobData, write: Callable[[], str]) -> str:
    """``write()``, its unwritable text refused naming the item."""
    from scoring.cwmt_write import UnwritableText

    try:
        return write()
    except UnwritableText as exc:
        places = {(i.reference.doc_id, i.reference.seg_id): i.id for i in job.testset.items}
        item = places.get((exc.doc_id or "", exc.seg_id or ""), "-")
        raise job.refuse(
            f"item {item}",
            f"the {exc.what} holds a control character XML 1.0 cannot carry",
            "export with --format jsonl",
        ) from None


def write_cwmt_xml(job: JobData, references: bool) -> str:
    """CWMT `tgtset` mirroring the source's docs and segments, n-best as `<cand>`.

    With --references, the `refset`: one `<doc>` per document and reference, told
    apart by `site` (r1, r2 ...), as mteval and `onsite score mt` read it.
    """
    from scoring.cwmt_write import TargetEntry, refset_xml, tgtset_xml
    from scoring.cwmt_xml import name_part

    setid, srclang, tgtlang, docs = _mt_header(job)
    items = [item for _, doc_items in docs for item in doc_items]
    if references:
        n_refs = max((len(i.reference.refs) for i in items), default=0)
        refs = [
            [
                TargetEntry(i.reference.doc_id, i.reference.seg_id, i.reference.refs[r])
                for i in items
            ]
            for r in range(n_refs)
        ]
        return _cwmt(job, lambda: refset_xml(refs, setid=setid, srclang=srclang, tgtlang=tgtlang))
    entries = [_target_entry(job, item) for item in items]
    return _cwmt(
        job,
        lambda: tgtset_xml(
            entries,
            setid=setid,
            srclang=srclang,
            tgtlang=tgtlang,
            # The naming rule's parts: a system named "word-mt" is site and sysid "word_mt".
            site=name_part(job.system),
            sysid=name_part(job.system),
            description=_description(job),
        ),
    )


def write_cwmt_source(job: JobData) -> str:
    """The `srcset` of the job's segments (for `onsite score mt-check --run`)."""
    from scoring.cwmt_write import TargetEntry, srcset_xml

    setid, srclang, tgtlang, docs = _mt_header(job)
    entries = [
        TargetEntry(i.reference.doc_id, i.reference.seg_id, str(i.fields["text"]))
        for _, items in docs
        for i in items
    ]
    return _cwmt(job, lambda: srcset_xml(entries, setid=setid, srclang=srclang, tgtlang=tgtlang))


# --------------------------------------------------------------------------- text kinds


def write_trec(job: JobData, references: bool) -> str:
    """TREC run `topic Q0 docno rank score tag` (with --references, qrels `topic 0 docno rel`).

    Ranks follow the scores (ties in the system's order), as trec_eval ranks by score.
    """
    out = []
    tag = re.sub(r"\s", "_", job.system) or "run"
    for item in job.testset.items:
        topic = plain_id(job, item, "trec")
        if references:
            for docno, rel in item.reference.judgements.items():
                out.append(f"{topic} 0 {docno} {rel}\n")
            continue
        answer = job.answer(item.id)
        results = answer["results"] if answer else []
        ranked = sorted(enumerate(results), key=lambda p: (-float(p[1][1]), p[0]))
        for rank, (_, (docno, score)) in enumerate(ranked, 1):
            if not docno or any(ch.isspace() for ch in docno):
                raise job.refuse(
                    f"item {item.id}", f"document {docno!r} has a space in it", "use --format jsonl"
                )
            out.append(f"{topic} Q0 {docno} {rank} {float(score)!r} {tag}\n")
    return "".join(out)


def write_conll(job: JobData, references: bool) -> str:
    """NER: `token tag` lines, a blank line between sentences.

    With --references, conlleval's own input `token gold predicted`: what
    `onsite score ner --conll` and conlleval read. An unanswered sentence (or one
    with a wrong number of tags) is all O.
    """
    out = []
    for item in job.testset.items:
        tokens = [str(t) for t in item.fields["tokens"]]
        gold = list(item.reference)
        answer = job.answer(item.id)
        tags = answer.get("tags") if answer else None
        if not isinstance(tags, list) or len(tags) != len(tokens):
            tags = ["O"] * len(tokens)
        for token, g, p in zip(tokens, gold, tags, strict=True):
            out.append(f"{token} {g} {p}\n" if references else f"{token} {p}\n")
        out.append("\n")
    return "".join(out)


def write_sighan(job: JobData, references: bool) -> str:
    """Word segmentation: one sentence per line, words split by spaces."""
    from scoring.cws import split_words

    out = []
    for item in job.testset.items:
        if references:
            out.append(" ".join(item.reference.words) + "\n")
            continue
        text = job.text(item.id)
        # An answer led by U+3000 keeps it: the SIGHAN script counts an extra empty word
        # there, which `onsite score cws --run --sighan-quirks` must see to reproduce.
        lead = "\u3000" if text.strip(" \t\n\r\f\v").startswith("\u3000") else ""
        out.append(lead + " ".join(split_words(text)) + "\n")
    return "".join(out)


def write_tsv(job: JobData, references: bool) -> str:
    """Text categorization `doc_id<TAB>category[,category2]`; unanswered documents left out."""
    out = []
    for item in job.testset.items:
        if references:
            cats = list(item.reference)
        else:
            answer = job.answer(item.id)
            if answer is None:
                continue
            cats = [str(c).strip() for c in answer["categories"]]
        out.append(f"{item.id}\t{','.join(cats)}\n")
    return "".join(out)


# --------------------------------------------------------------------------- score-jsonl


def score_jsonl(
    reference: Callable[[TestItem], Mapping[str, Any]],
    hypothesis: Callable[[JobData, TestItem, Mapping[str, Any]], Mapping[str, Any]],
) -> Callable[[JobData, bool], str]:
    """A kind's `score-jsonl` writer: the JSON lines its `onsite score` family reads.

    With --references one ``reference(item)`` line per item; else one
    ``hypothesis(job, item, answer)`` line per answered item, as the live
    scorer counts an unanswered one (no line: the family scores it as missing).
    """

    def write(job: JobData, references: bool) -> str:
        items = job.testset.items
        if references:
            return jsonl([reference(item) for item in items])
        answered = ((item, job.answer(item.id)) for item in items)
        return jsonl([hypothesis(job, item, a) for item, a in answered if a is not None])

    return write
