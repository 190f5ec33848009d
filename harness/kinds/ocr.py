"""The `ocr` kind: one character per sample, from an image or from online ink.

docs/task-kinds.md gives the test-set layout; the scorer is scoring/'s (OLCCR's R, R10 and V).
"""

from __future__ import annotations

import argparse
from collections.abc import Hashable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.kinds.base import (
    CHARS_PER_SECOND,
    ENCODING_ARG,
    IMAGE_SUFFIXES,
    REF_HYP,
    AdditiveStatistics,
    FromRun,
    ItemStatistics,
    JobData,
    Outputs,
    ScoreFamily,
    TaskConfig,
    TaskKind,
    arg,
    overall,
    pct,
    ref_hyp_files,
    units_per_second,
)
from harness.kinds.formats import score_jsonl
from harness.media import check_image, check_ink
from harness.testsets import TestSet, file_testset, read_truth


def _check_candidates(output: Mapping[str, Any]) -> str | None:
    candidates = output.get("candidates")
    if (
        not isinstance(candidates, list)
        or not all(isinstance(c, str) for c in candidates)
        or len(candidates) > 10
    ):
        return 'output needs "candidates": up to ten strings, best first, e.g. ["天", "夭"]'
    return None


def _load_ocr(root: Path, task: TaskConfig) -> TestSet:
    # Scoring modules are imported where used: every kind module is imported by whatever
    # reads a site file, which must stay cheap (docs/task-kinds.md).
    from scoring import read_ocr_truth

    encoding = getattr(task, "encoding", None)
    truth = read_truth(
        root / "truth.jsonl",
        lambda path: read_ocr_truth(path, encoding),
        'one line per sample: {"id", "char", "subsets": [...]}, the image named <id>.png',
    )
    refs = {t.id: t for t in truth}
    subsets = {t.id: "/".join(t.subsets) for t in truth if t.subsets}
    # A sample is online ink when <id>.json is there, else an image <id>.png (or .jpg ...).
    files = {t.id: {"ink" if (root / f"{t.id}.json").is_file() else "image": t.id} for t in truth}
    return file_testset(
        root, refs, files, (*IMAGE_SUFFIXES, ".json"), subsets, units=1.0, check=_check_input
    )


def _check_input(key: str, path: Path) -> str | None:
    if key == "ink":
        return check_ink(path)
    return check_image(path)


def _candidates(testset: TestSet, outputs: Outputs) -> tuple[dict[str, Any], dict[str, Any]]:
    refs = testset.references()
    candidates = {
        k: (tuple(v["candidates"]) if v is not None else None)
        for k, v in outputs.items()
        if k in refs
    }
    return refs, candidates


def _score_ocr(
    testset: TestSet, task: TaskConfig, outputs: Outputs, seconds: Mapping[str, float]
) -> dict[str, Any]:
    from scoring import score_ocr

    refs, candidates = _candidates(testset, outputs)
    total = sum(seconds.get(k, 0.0) for k in refs) or None
    return score_ocr(refs.values(), candidates, seconds=total).to_dict()


def _items(testset: TestSet, task: TaskConfig, outputs: Outputs, _: Any) -> dict[str, Any]:
    """Each sample's (character, right first, right within ten): R averages per character."""
    from scoring.ocr import sample_hits

    refs, candidates = _candidates(testset, outputs)
    return sample_hits(refs.values(), candidates)


def _aggregate(task: TaskConfig, hits: Sequence[Any]) -> float:
    from scoring.ocr import OcrScore, character_scores

    return OcrScore.from_characters(character_scores(hits)).recognition_rate


def _vector(task: TaskConfig, hit: Any) -> Mapping[Hashable, float]:
    char, top1, _ = hit
    return {("samples", char): 1, ("top1", char): int(top1)}


def _headline(task: TaskConfig, sums: Mapping[Hashable, float]) -> float:
    from scoring.ocr import CharacterScore, OcrScore

    # R averages over the characters the selection has (samples > 0), as the aggregate.
    chars = [
        CharacterScore(key[1], int(n), int(sums.get(("top1", key[1]), 0)), 0)
        for key, n in sums.items()
        if isinstance(key, tuple) and key[0] == "samples" and n
    ]
    return OcrScore.from_characters(chars).recognition_rate


def _score_files(args: argparse.Namespace) -> dict[str, Any]:
    from scoring.ocr import read_ocr_outputs, read_ocr_truth, score_ocr

    encoding = getattr(args, "encoding", None)
    report = score_ocr(
        read_ocr_truth(args.ref, encoding),
        read_ocr_outputs(args.hyp, encoding),
        seconds=args.seconds,
    )
    return report.to_dict(include_characters=args.details)


write_ocr_jsonl = score_jsonl(
    lambda item: {
        "id": item.reference.id,
        "char": item.reference.char,
        "subsets": list(item.reference.subsets),
    },
    lambda job, item, answer: {"id": item.id, "candidates": list(answer["candidates"])},
)


def _run_args(job: JobData, directory: Path) -> dict[str, Any]:
    files = ref_hyp_files(write_ocr_jsonl, ".jsonl")(job, directory)
    return {**files, "seconds": job.run_seconds or None}


OCR = TaskKind(
    name="ocr",
    text_encodings=True,
    summary="character recognition: an image or online ink in, up to ten candidates out",
    max_output_bytes=64 << 10,
    load=_load_ocr,
    check_output=_check_candidates,
    score=_score_ocr,
    metric=lambda task: "recognition_rate",
    metric_labels={"recognition_rate": "R"},
    statistics=ItemStatistics(_items, _aggregate, AdditiveStatistics(_vector, _headline)),
    unit=CHARS_PER_SECOND,
    speed=units_per_second,
    detail=lambda s: f"R10 {pct(overall(s).get('top10_rate'))}",
    writers={"score-jsonl": write_ocr_jsonl},
    score_families={
        "ocr": ScoreFamily(
            _score_files,
            "character recognition: R, R^10 per subset, speed V",
            (
                *REF_HYP,
                arg("--seconds", type=float, help="total recognition seconds, for V"),
                ENCODING_ARG,
            ),
        )
    },
    from_run={"ocr": FromRun(_run_args)},
)

KINDS = (OCR,)
