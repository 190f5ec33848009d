"""The fields' own file formats read back: one reader per format, for `onsite ingest`.

A participant who sends a file instead of running at the venue (CWMT's and the 2005
evaluation's online mode) gives the outputs of the same-named writer of
harness/kinds/formats.py: each reader here turns such a file into the output objects
the kind's systems send (``Submitted``), so the job scores, exports and compares as a
job that ran (`onsite export` of an ingested file gives the file back). The metric
code's readers (scoring/) read the files; these only place what they read on the
test set's items. A reader keeps every entry, repeats included, in file order:
`harness/engine/ingest.py` lists the missing, extra and repeated ids.

Formats with one line or block per item in test-set order (plain MT lines, SIGHAN
segmentation, CoNLL sentences) have no ids: an entry past the test set's end is
named ``#N`` (its place), and a short file misses the items after its last entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import InputError, Problem
from harness.kinds.base import Reader, Submitted, TaskConfig

if TYPE_CHECKING:
    from harness.testsets import TestSet

__all__ = [
    "cwmt_set",
    "read_conll_tags",
    "read_ctm_file",
    "read_cwmt_xml",
    "read_mt_lines",
    "read_sighan",
    "read_transcripts_as",
    "read_trec_run",
]


def _by_place(testset: TestSet, n: int) -> str:
    """The id of the test set's ``n``-th item (0-based), ``#N`` past its end."""
    items = testset.items
    return items[n].id if n < len(items) else f"#{n + 1}"


# --------------------------------------------------------------------------- speech


def read_transcripts_as(fmt: str) -> Reader:
    """sclite `trn` or Kaldi `text` (``fmt``): ``{"text": words}`` per utterance.

    The file's format is detected as `onsite score asr` detects it; a file that reads
    as the other one is refused, so the journal names the format truly.
    """

    def read(
        path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
    ) -> list[Submitted]:
        from scoring.asr_formats import transcript_lines

        found, lines = transcript_lines(path, encoding)
        if found != fmt:
            raise InputError(
                [
                    Problem(
                        path,
                        "--format",
                        f"the file reads as {found}, not {fmt}",
                        f"give --format {found}, or check the file",
                    )
                ]
            )
        return [Submitted(utt, line, {"text": words}) for line, utt, words in lines]

    return read


def read_ctm_file(
    path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
) -> list[Submitted]:
    """sclite CTM: each waveform's words in time order as ``{"text": words}``.

    A waveform of the test set with no CTM line is an empty transcript, as sclite
    scores it (a CTM has no line for an utterance without words); a waveform the
    test set does not have is an extra id.
    """
    from scoring.asr_formats import read_ctm

    words = read_ctm(path, encoding)
    entries = [Submitted(utt, None, {"text": text}) for utt, text in words.items()]
    entries += [Submitted(i.id, None, {"text": ""}) for i in testset.items if i.id not in words]
    return entries


# --------------------------------------------------------------------------- mt


def cwmt_set(testset: TestSet, task: str) -> tuple[str, str, str]:
    """(setid, srclang, tgtlang) of an MT test set as `onsite export --format cwmt-xml`
    writes them: the task part of a submitted file's name is ``task_id`` of these."""
    from scoring.cwmt_xml import load_mt_file, task_id

    source = testset.root / "source.xml"
    if source.is_file():
        src = load_mt_file(source, "source")
        return src.setid or task, src.srclang or "", src.tgtlang or ""
    tgtlang = str(testset.items[0].reference.lang) if testset.items else ""
    return task_id(task, "", tgtlang, "trans"), "", tgtlang


def read_cwmt_xml(
    path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
) -> list[Submitted]:
    """A CWMT `tgtset`, its name checked by the naming rule as `onsite mt-check` checks
    it: task-site-primary|contrast-system.xml, the task part being the set's id, and the
    parts agreeing with the file's ``setid`` and ``<system site sysid>``. Each segment
    is ``{"text": ...}``, with its `<cand>` n-best list as ``nbest`` when it has one.

    The guidelines' other checks (the five items of the description, scores within
    0..1, one primary per site) are `onsite mt-check`'s: they say whether a file is fit
    to be sent, not what it translates, so they do not keep a file from being scored."""
    from scoring.cwmt_xml import load_mt_file, parse_result_name, task_id
    from scoring.mt_check import name_problems

    name = parse_result_name(path)  # FormatError naming the rule and the fix
    setid, srclang, tgtlang = cwmt_set(testset, task)
    expected = task_id(setid, srclang, tgtlang)
    target = load_mt_file(path, "target", encoding)
    problems: list[tuple[int | None, str, str]] = []
    if target.kind != "xml":
        fix = "send the tgtset with <doc> and <seg> elements, or give --format plain"
        problems.append((None, "not CWMT XML", fix))
    if name.task != expected:
        problems.append(
            (
                None,
                f"the file name's task part is {name.task!r}, the set's is {expected!r}",
                f"rename it {expected}-{name.site}-{name.kind}-{name.system}.xml",
            )
        )
    fix = "make the name's parts and the file's setid and <system> element agree"
    problems += [(m.line, m.problem, fix) for m in name_problems(path, target)]
    if problems:
        raise InputError(
            [
                Problem(path, "file name" if line is None else "", problem, fix, line=line)
                for line, problem, fix in dict.fromkeys(problems)
            ]
        )
    places = {(i.reference.doc_id, i.reference.seg_id): i.id for i in testset.items}
    entries = []
    for seg in target.segments:
        output: dict[str, Any] = {"text": seg.text}
        if seg.candidates:
            output["nbest"] = [{"text": c.text, "score": c.score} for c in seg.candidates]
        item = places.get((seg.doc_id, seg.seg_id), f"{seg.doc_id}/{seg.seg_id}")
        entries.append(Submitted(item, seg.line, output))
    return entries


def read_mt_lines(
    path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
) -> list[Submitted]:
    """Plain text: one translation per line, in the test set's segment order."""
    from scoring.cwmt_xml import read_plain

    target = read_plain(path, "target", encoding)
    return [
        Submitted(_by_place(testset, n), seg.line, {"text": seg.text})
        for n, seg in enumerate(target.segments)
    ]


# --------------------------------------------------------------------------- text kinds


def read_trec_run(
    path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
) -> list[Submitted]:
    """A TREC run `topic Q0 docno rank score tag`: ``{"results": [[docno, score], ...]}``
    per topic, best first (trec_eval ranks by score; ties keep the file's order)."""
    from scoring.ir import read_run

    run = read_run(path)
    return [
        Submitted(
            topic,
            None,
            {"results": [[d, s] for d, s in sorted(docs.items(), key=lambda p: -p[1])]},
        )
        for topic, docs in run.items()
    ]


def _blocks(path: Path, encoding: str | None) -> list[tuple[int, list[list[str]]]]:
    """The file's blank-line-separated blocks: (first line, each line's columns)."""
    from scoring.charsets import iter_lines

    blocks: list[tuple[int, list[list[str]]]] = []
    current: list[list[str]] = []
    start = 0
    for lineno, text in enumerate(iter_lines(path, encoding), start=1):
        cols = text.split()
        if not cols:
            if current:
                blocks.append((start, current))
            current = []
            continue
        if not current:
            start = lineno
        current.append(cols)
    if current:
        blocks.append((start, current))
    return blocks


def read_conll_tags(
    path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
) -> list[Submitted]:
    """CoNLL `token tag` lines (the last column is the tag), a blank line between
    sentences, in the test set's order: ``{"tags": [...]}`` per sentence."""
    entries = []
    for n, (line, rows) in enumerate(_blocks(path, encoding)):
        item = _by_place(testset, n)
        if n < len(testset.items):
            tokens = [str(t) for t in testset.items[n].fields["tokens"]]
            if [r[0] for r in rows] != tokens:
                raise InputError(
                    [
                        Problem(
                            path,
                            f"line {line}",
                            f"sentence {n + 1} ({item}) has tokens {[r[0] for r in rows][:8]}, "
                            f"the test set's are {tokens[:8]}",
                            "give the test set's tokens in its order, one `token tag` a line",
                        )
                    ]
                )
        entries.append(Submitted(item, line, {"tags": [r[-1] for r in rows]}))
    return entries


def read_sighan(
    path: Path, testset: TestSet, task: str, config: TaskConfig, encoding: str | None
) -> list[Submitted]:
    """SIGHAN segmented text: one sentence per line, words split by spaces, in the test
    set's order: ``{"text": line}`` (the kind's scorer splits the words)."""
    from scoring.charsets import iter_lines

    return [
        Submitted(_by_place(testset, n), n + 1, {"text": text.rstrip("\r")})
        for n, text in enumerate(iter_lines(path, encoding))
    ]


READ_ASR: dict[str, Reader] = {
    "trn": read_transcripts_as("trn"),
    "kaldi": read_transcripts_as("kaldi"),
    "ctm": read_ctm_file,
}
"""The speech kinds' submission formats (the writers' names)."""
