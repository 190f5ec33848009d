"""The `onsite export` writers: one function per format, (job, references) -> file text.

Each writes what the field's reference tool reads and what `onsite score`
reads back to the live number (docs/formats.md; tests/test_export_formats.py).
A hypothesis the format cannot carry faithfully is refused with an InputError
naming the item and a format that can, never silently changed.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import fields, is_dataclass
from typing import Any

from scoring.cwmt_write import (
    TargetCandidate,
    TargetEntry,
    UnwritableText,
    refset_xml,
    srcset_xml,
    tgtset_xml,
)
from scoring.cwmt_xml import name_part

from ..errors import InputError, Problem
from ..testsets import TestItem
from . import Job

Writer = Callable[[Job, bool], str]

# sclite splits words at these only; other blanks (NBSP, U+3000) are part of a word.
_SCLITE_BREAK = re.compile("[\n\r]")
_SCLITE_WORDS = re.compile("[ \t\n\r]+")


def _refuse(job: Job, item: str, problem: str, fix: str) -> InputError:
    where = job.run_dir / "outputs" / job.task / f"{job.system}.jsonl"
    return InputError([Problem(where, f"item {item}", problem, fix)])


def _one_line(text: str) -> str:
    # A line break would split the item; sclite and Kaldi count it as a word break.
    return _SCLITE_BREAK.sub(" ", text)


def _plain_id(job: Job, item: TestItem, fmt: str) -> str:
    if not item.id or any(ch.isspace() or ch in "()" for ch in item.id):
        raise _refuse(
            job,
            item.id,
            f"the id {item.id!r} cannot be written in {fmt} (a space or parenthesis in it)",
            "export with --format jsonl, or rename the test-set file",
        )
    return item.id


def _ref_text(item: TestItem) -> str:
    return str(item.reference)


# --------------------------------------------------------------------------- speech


def write_trn(job: Job, references: bool) -> str:
    """sclite `trn`: the words, then the utterance id in parentheses."""
    out = []
    for item in job.testset.items:
        item_id = _plain_id(job, item, "trn")
        text = _one_line(_ref_text(item) if references else job.text(item.id))
        if text.strip(" \t").startswith(";;"):
            raise _refuse(
                job,
                item.id,
                "the text starts with ';;', which sclite reads as a comment line",
                "export with --format kaldi, whose lines start with the id",
            )
        out.append(f"{text} ({item_id})\n")
    return "".join(out)


def write_kaldi(job: Job, references: bool) -> str:
    """Kaldi `text`: the utterance id, then the words."""
    from scoring.asr_formats import detect_format

    out = []
    for item in job.testset.items:
        item_id = _plain_id(job, item, "kaldi")
        text = _one_line(_ref_text(item) if references else job.text(item.id)).strip(" \t")
        out.append(f"{item_id} {text}".rstrip(" \t"))
    if out and detect_format(out) != "kaldi":
        # Most lines end in "(...)": read back, the file would be taken for trn.
        raise _refuse(
            job,
            job.testset.items[0].id,
            "most texts end with a parenthesis: the file would be read back as trn",
            "export with --format trn, whose ids are unambiguous",
        )
    return "".join(line + "\n" for line in out)


def _seconds(value: float) -> str:
    return f"{value:.3f}"


def write_ctm(job: Job, references: bool) -> str:
    """sclite CTM (with --references, its STM): one line per word, times spread evenly.

    The systems send no word times, so an item's words share its duration equally;
    every word's midpoint lies inside its item's STM segment, which is what sclite's
    time-mediated pairing needs. An item with no words has no CTM line.
    """
    out = []
    for item in job.testset.items:
        item_id = _plain_id(job, item, "ctm")
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


# --------------------------------------------------------------------------- JSON lines


def _jsonl(rows: list[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)


def write_jsonl(job: Job, references: bool) -> str:
    """The run's output line (with its verdict) of each completed item; or the references."""
    rows: list[Mapping[str, Any]] = []
    for item in job.testset.items:
        if references:
            rows.append({"id": item.id, "reference": _json_reference(item.reference)})
        else:
            rows.append(job.lines[item.id])
    return _jsonl(rows)


# Set-wide data every item's reference shares (the training counts, the word list):
# not the item's reference, and it would repeat on every line.
_SHARED = frozenset({"training", "lexicon"})


def _json_reference(reference: Any) -> Any:
    to_dict = getattr(reference, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if is_dataclass(reference) and not isinstance(reference, type):
        return {
            f.name: _json_reference(getattr(reference, f.name))
            for f in fields(reference)
            if f.name not in _SHARED
        }
    if isinstance(reference, Mapping):
        return {str(k): _json_reference(v) for k, v in reference.items()}
    if isinstance(reference, tuple | list):
        return [_json_reference(v) for v in reference]
    return reference


def _score_rows(job: Job, references: bool) -> list[Mapping[str, Any]]:
    """The JSON lines `onsite score <family>` reads for the job's kind."""
    kind = job.kind.name
    rows: list[Mapping[str, Any]] = []
    for item in job.testset.items:
        ref = item.reference
        answer = job.answer(item.id)
        if kind == "command":
            if references:
                rows.append({"id": item.id, "text": _ref_text(item)})
            elif answer is not None:
                rows.append({"id": item.id, "text": job.text(item.id)})
        elif kind == "kws":
            if references:
                rows.append(ref.to_dict())
            elif answer is not None:
                rows.append({"id": item.id, "slots": answer["slots"]})
        elif kind == "ocr":
            if references:
                rows.append({"id": ref.id, "char": ref.char, "subsets": list(ref.subsets)})
            elif answer is not None:
                rows.append({"id": item.id, "candidates": list(answer["candidates"])})
        elif kind == "face-detect":
            if references:
                row: dict[str, Any] = {"image": ref.image}
                if ref.subset is not None:
                    row["subset"] = ref.subset
                row["faces"] = [
                    {"left_eye": list(f.left_eye), "right_eye": list(f.right_eye),
                     "mouth": list(f.mouth)}
                    for f in ref.faces
                ]  # fmt: skip
                rows.append(row)
            elif answer is not None:
                rows.append(
                    {
                        "image": ref.image,
                        "boxes": answer["boxes"],
                        "seconds": job.seconds.get(item.id),
                    }
                )
        elif kind == "face-identify":
            if references:
                row = {"probe": ref.probe, "id": ref.id}
                if ref.subset is not None:
                    row["subset"] = ref.subset
                rows.append(row)
            elif answer is not None:
                rows.append({"probe": ref.probe, "candidates": answer["candidates"]})
        elif kind == "face-verify":
            (a, b), genuine = ref
            if references:
                rows.append({"a": a, "b": b, "genuine": genuine})
            elif answer is not None:
                rows.append({"a": a, "b": b, "score": answer["score"]})
        elif kind == "lid":
            if not references and answer is not None:
                rows.append({"id": item.id, "language": answer["language"]})
        elif kind == "summarization":
            if references:
                # One line per reference summary, the id repeated, the first reference first.
                rows += [{"id": item.id, "text": text} for text in ref.refs]
            else:
                rows.append({"id": item.id, "text": _summary(item, answer)})
        else:  # pragma: no cover - a kind listing score-jsonl must be handled above
            raise NotImplementedError(f"score-jsonl for kind {kind}")
    return rows


def _summary(item: TestItem, answer: Mapping[str, Any] | None) -> str:
    """The summary as scored live: cut at the limit when the task truncates; an
    unanswered document is an empty summary (live ROUGE and CESTA count it so, and
    `onsite score cesta` needs one text per document)."""
    from ..kinds.summarization import scored_summary

    return scored_summary(item, answer) if answer is not None else ""


def write_score_jsonl(job: Job, references: bool) -> str:
    """The JSON lines `onsite score <family>` reads: answered items only, as the live scorer.

    For `lid` the references are the test set's `<utt-id> <code>` lines.
    """
    if references and job.kind.name == "lid":
        return "".join(f"{_plain_id(job, i, 'lid')} {i.reference}\n" for i in job.testset.items)
    return _jsonl(_score_rows(job, references))


# --------------------------------------------------------------------------- kws DET


def _trials(job: Job) -> tuple[list[Any], int, int]:
    from ..kinds.keywords import detection_trials

    trials = detection_trials(job.testset, job.outputs)
    where = job.run_dir / "outputs" / job.task / f"{job.system}.jsonl"
    if trials is None:
        raise InputError(
            [
                Problem(
                    where,
                    "detections",
                    "no DET curve: the test set has no keywords.json, or the system sent "
                    "no scored detections",
                    "score the slots with `onsite score kws`",
                )
            ]
        )
    detections, n_true, n_nontarget = trials
    if not detections or n_true == 0 or n_nontarget == 0:
        what = "no detection" if not detections else "no target or no non-target trial"
        raise InputError(
            [Problem(where, "detections", f"no DET curve: {what}", "use --format jsonl")]
        )
    return trials


def kws_trial_counts(job: Job) -> tuple[int, int]:
    """The DET's trial counts (true, non-target) from the test set, as live."""
    _, n_true, n_nontarget = _trials(job)
    return n_true, n_nontarget


def write_kws_det(job: Job, references: bool) -> str:
    """The scored trials `onsite score kws-det --hyp` reads; with --references the counts.

    One line per (keyword, utterance) pair the system proposed, with its highest
    score and ``is_true`` from the test set's slots (so this file, like the
    references, is the organizer's). --references: ``{"n_true", "n_nontarget"}``,
    the values of `onsite score kws-det --n-true --n-nontarget`.
    """
    detections, n_true, n_nontarget = _trials(job)
    if references:
        return _jsonl([{"n_true": n_true, "n_nontarget": n_nontarget}])
    return _jsonl(
        [
            {"keyword": d.keyword, "utterance": d.utterance, "score": d.score, "is_true": d.is_true}
            for d in detections
        ]
    )


# --------------------------------------------------------------------------- mt
# The CWMT files are written by scoring.cwmt_write, the one CWMT writer
# (`onsite combination-set` writes its candidate lists through it too).


def _mt_header(job: Job) -> tuple[str, str, str, list[tuple[str, list[TestItem]]]]:
    """(setid, srclang, tgtlang, documents in order with their items)."""
    from scoring.cwmt_xml import load_mt_file, task_id

    root = job.testset.root
    setid, srclang, tgtlang = job.task, "", ""
    source = root / "source.xml"
    if source.is_file():
        src = load_mt_file(source, "source")
        setid = src.setid or setid
        srclang, tgtlang = src.srclang or "", src.tgtlang or ""
    items = job.testset.items
    if not tgtlang and items:
        tgtlang = str(items[0].reference.lang)
    if not source.is_file():
        # A plain-text set has no set id: one of the CWMT form, from the task's name, so
        # that files named by the rule (task-site-primary-system.xml) can match it.
        setid = task_id(setid, srclang, tgtlang)
    docs: dict[str, list[TestItem]] = {}
    for item in items:
        docs.setdefault(item.reference.doc_id, []).append(item)
    return setid, srclang, tgtlang, list(docs.items())


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _description(job: Job) -> str:
    """What the run knows of the system, for the `<system>` element (CWMT Appendix C)."""
    seconds = sum(job.seconds.values())
    return (
        f"Hardware and software environment: as run by onsite (task {job.task}). "
        f"Execution time: {seconds:.1f} s for {len(job.testset.items)} segments, "
        "measured by the controller. Technology outline, training data and external "
        "technology: not given to the run; the participant states them."
    )


def _target_entry(job: Job, item: TestItem) -> TargetEntry:
    """The item's translation and its n-best list (as the system sent it) as a tgtset entry."""
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


def _cwmt(job: Job, write: Callable[[], str]) -> str:
    """``write()``, its unwritable text refused naming the item."""
    try:
        return write()
    except UnwritableText as exc:
        places = {(i.reference.doc_id, i.reference.seg_id): i.id for i in job.testset.items}
        item = places.get((exc.doc_id or "", exc.seg_id or ""), "-")
        raise _refuse(
            job,
            item,
            f"the {exc.what} holds a control character XML 1.0 cannot carry",
            "export with --format jsonl",
        ) from None


def write_cwmt_xml(job: Job, references: bool) -> str:
    """CWMT `tgtset` mirroring the source's docs and segments, n-best as `<cand>`.

    With --references, the `refset`: one `<doc>` per document and reference, told
    apart by `site` (r1, r2 ...), as mteval and `onsite score mt` read it.
    """
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


def write_cwmt_source(job: Job) -> str:
    """The `srcset` of the job's segments (for `onsite score mt-check --run`)."""
    setid, srclang, tgtlang, docs = _mt_header(job)
    entries = [
        TargetEntry(i.reference.doc_id, i.reference.seg_id, str(i.fields["text"]))
        for _, items in docs
        for i in items
    ]
    return _cwmt(job, lambda: srcset_xml(entries, setid=setid, srclang=srclang, tgtlang=tgtlang))


# --------------------------------------------------------------------------- text kinds


def write_trec(job: Job, references: bool) -> str:
    """TREC run `topic Q0 docno rank score tag` (with --references, qrels `topic 0 docno rel`).

    Ranks follow the scores (ties in the system's order), as trec_eval ranks by score.
    """
    out = []
    tag = re.sub(r"\s", "_", job.system) or "run"
    for item in job.testset.items:
        topic = _plain_id(job, item, "trec")
        if references:
            for docno, rel in item.reference.judgements.items():
                out.append(f"{topic} 0 {docno} {rel}\n")
            continue
        answer = job.answer(item.id)
        results = answer["results"] if answer else []
        ranked = sorted(enumerate(results), key=lambda p: (-float(p[1][1]), p[0]))
        for rank, (_, (docno, score)) in enumerate(ranked, 1):
            if not docno or any(ch.isspace() for ch in docno):
                raise _refuse(
                    job, item.id, f"document {docno!r} has a space in it", "use --format jsonl"
                )
            out.append(f"{topic} Q0 {docno} {rank} {float(score)!r} {tag}\n")
    return "".join(out)


def write_conll(job: Job, references: bool) -> str:
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


def write_sighan(job: Job, references: bool) -> str:
    """cws: one sentence per line, words split by spaces; pos: the same with word/TAG tokens."""
    from scoring.cws import split_words

    out = []
    for item in job.testset.items:
        if job.kind.name == "cws":
            words = list(item.reference.words) if references else split_words(job.text(item.id))
            out.append(" ".join(words) + "\n")
            continue
        if references:
            tokens = list(item.reference.tokens)
        else:
            from ..kinds.text import parse_tagged

            tokens = parse_tagged(job.text(item.id)) or []
        out.append(" ".join(f"{w}/{t}" for w, t in tokens) + "\n")
    return "".join(out)


def write_tsv(job: Job, references: bool) -> str:
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


WRITERS: dict[str, Writer] = {
    "trn": write_trn,
    "ctm": write_ctm,
    "kaldi": write_kaldi,
    "cwmt-xml": write_cwmt_xml,
    "trec": write_trec,
    "conll": write_conll,
    "sighan": write_sighan,
    "tsv": write_tsv,
    "score-jsonl": write_score_jsonl,
    "kws-det": write_kws_det,
    "jsonl": write_jsonl,
}
