"""`combination`: MT system combination over the n-best lists the MT systems sent (CWMT).

The test set is what `onsite combination-set` writes from a finished MT run:
the MT test set's source, ``lang`` and references as they were, and
``candidates/<sysNN>.xml``, one CWMT ``<tgtset>`` per (anonymized) MT system
whose ``<s>`` holds that system's best translation and its ``<cand>`` n-best
list, best score first. Each item's input is the source segment and every
system's candidates::

    {"text": "<source>", "lang": "en",
     "candidates": [{"system": "sys01", "best": "...",
                     "nbest": [{"text": "...", "score": -1.2}, ...]}, ...]}

A system that did not translate a segment is left out of that segment's list;
a system that sent no n-best list has its best translation as its only
candidate, with score null. The answer is ``{"text": "<translation>"}``,
scored by BLEU only, the same BLEU as the `mt` kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.errors import Problem, TestSetError
from harness.kinds.base import FromRun, Outputs, TaskConfig, TaskKind
from harness.kinds.formats import write_cwmt_xml
from harness.kinds.text import (
    BLEU_STATISTICS,
    WORDS_PER_SECOND,
    load_mt_testset,
    mt_check_run_args,
    mt_run_args,
    score_mt_outputs,
    source_words,
)
from harness.testsets import TestItem, TestSet
from scoring.errors import FormatError

if TYPE_CHECKING:
    from scoring.cwmt_xml import MtFile, TextSegment

CANDIDATES_DIR = "candidates"
_SOURCES = ("source.txt", "source.xml")
# What the mt scorer's report says about BLEU (NIST, GTM and the error rates are left out).
_BLEU_FIGURES = ("bleu", "bleu_precisions", "hyp_len", "ref_len", "lang", "n_refs", "n_segments")


def _read_or_fail(path: Path, role: Any, fix: str, encoding: str | None = None) -> MtFile:
    # Imported here: every command that lists the task kinds would load the XML reader.
    from scoring.cwmt_xml import load_mt_file, read_xml

    try:
        if role == "source":
            return load_mt_file(path, role, encoding)
        return read_xml(path, role)
    except FormatError as exc:
        raise TestSetError([Problem(Path(exc.path), "", exc.problem, exc.fix, exc.line)]) from exc


def _entry(seg: TextSegment) -> dict[str, Any] | None:
    """One system's candidates for a segment, None when it gave no translation."""
    nbest = [{"text": c.text, "score": c.score} for c in seg.candidates]
    if not nbest and not seg.text:
        return None
    return {"best": seg.text, "nbest": nbest or [{"text": seg.text, "score": None}]}


def load_combination(root: Path, task: TaskConfig) -> TestSet:
    """The MT test set of `root` with each item's candidate lists from candidates/*.xml."""
    from scoring.cwmt_xml import require_mirror

    testset = load_mt_testset(root, task)
    [source_path] = [root / n for n in _SOURCES if (root / n).is_file()]
    # The source is the MT set's, in the task's encoding as load_mt_testset reads it; the
    # candidate lists are XML that `onsite combination-set` wrote, declaring their own.
    encoding = getattr(task, "encoding", None)
    source = _read_or_fail(source_path, "source", "give the MT test set's source", encoding)
    folder = root / CANDIDATES_DIR
    fix = "make the set with `onsite combination-set RUN_DIR --task MT_TASK -o DIR`"
    files = sorted(folder.glob("*.xml")) if folder.is_dir() else []
    if not files:
        raise TestSetError([Problem(folder, "", "no candidate lists (*.xml)", fix)])
    systems: list[tuple[str, dict[tuple[str, str], TextSegment]]] = []
    for path in files:
        target = _read_or_fail(path, "target", fix)
        try:
            require_mirror(source, target)
        except FormatError as exc:
            raise TestSetError([Problem(path, "", exc.problem, exc.fix, exc.line)]) from exc
        systems.append((path.stem, {(s.doc_id, s.seg_id): s for s in target.segments}))
    items: list[TestItem] = []
    # load_mt_testset makes one item per source segment, in the source's order.
    for item, seg in zip(testset.items, source.segments, strict=True):
        candidates = []
        for name, segments in systems:
            entry = _entry(segments[(seg.doc_id, seg.seg_id)])
            if entry is not None:
                candidates.append({"system": name, **entry})
        items.append(replace(item, fields={**item.fields, "candidates": candidates}))
    return replace(testset, items=tuple(items))


def _check_translation(output: Mapping[str, Any]) -> str | None:
    if not isinstance(output.get("text"), str):
        return 'output needs a "text" string, e.g. {"text": "the combined translation"}'
    return None


def _score(testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Any) -> dict[str, Any]:
    # BLEU only, as CWMT scores combination; the MT scorer's other figures are dropped.
    scores = score_mt_outputs(testset, task, outputs, seconds)
    return {k: v for k, v in scores.items() if k in _BLEU_FIGURES}


def _speed(item: TestItem, seconds: float) -> float | None:
    return source_words(item) / seconds if seconds > 0 else None


COMBINATION = TaskKind(
    name="combination",
    summary="MT system combination: a source segment and the MT systems' n-best lists in, "
    "one translation out",
    max_output_bytes=4 << 20,
    load=load_combination,
    check_output=_check_translation,
    score=_score,
    metric=lambda task: "bleu",
    metric_labels={"bleu": "BLEU"},
    statistics=BLEU_STATISTICS,
    unit=WORDS_PER_SECOND,
    speed=_speed,
    # The combined translations of the MT source: the mt kind's CWMT files, scored by
    # the mt kind's families (BLEU alone, as CWMT scores combination).
    writers={"cwmt-xml": write_cwmt_xml},
    from_run={
        "mt": FromRun(mt_run_args(("bleu",))),
        "mt-check": FromRun(mt_check_run_args, same_as={}),
    },
    text_encodings=True,
)

KINDS = (COMBINATION,)
