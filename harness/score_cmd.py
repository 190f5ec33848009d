"""`onsite score FAMILY ...`: score saved files alone, without re-running any system."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from scoring import (
    FormatError,
    check_ids,
    read_command_file,
    read_face_detections,
    read_face_references,
    read_identification_candidates,
    read_identification_truth,
    read_ocr_outputs,
    read_ocr_truth,
    read_slot_file,
    read_transcripts,
    read_verification_scores,
    read_verification_truth,
    score_asr,
    score_commands,
    score_detection,
    score_identification,
    score_ocr,
    score_slots,
    score_verification_pairs,
)

from .render import table


def _asr(args: argparse.Namespace) -> dict[str, Any]:
    refs = read_transcripts(Path(args.ref))
    hyps = read_transcripts(Path(args.hyp))
    check_ids(refs, hyps, Path(args.ref), Path(args.hyp))
    report = score_asr(refs, hyps, unit=args.unit, case_sensitive=args.case_sensitive)
    overall = report.overall
    return {
        "unit": args.unit,
        "case_sensitive": args.case_sensitive,
        "n_ref": overall.ref_tokens,
        "correct": overall.correct,
        "substitutions": overall.substitutions,
        "deletions": overall.deletions,
        "insertions": overall.insertions,
        "errors": overall.errors,
        "wer": overall.wer,
        "correct_rate": overall.correct_rate,
        "sub_rate": overall.sub_rate,
        "del_rate": overall.del_rate,
        "ins_rate": overall.ins_rate,
        "sentences": overall.utterances,
        "sentences_correct": overall.sentences_correct,
        "sentence_correct_rate": overall.sentence_correct_rate,
        "utterances": [
            {
                "id": u.id,
                "n_ref": u.ref_tokens,
                "correct": u.correct,
                "substitutions": u.substitutions,
                "deletions": u.deletions,
                "insertions": u.insertions,
            }
            for u in report.utterances
        ],
    }


def _command(args: argparse.Namespace) -> dict[str, Any]:
    return score_commands(read_command_file(args.ref), read_command_file(args.hyp)).to_dict()


def _kws(args: argparse.Namespace) -> dict[str, Any]:
    refs = read_slot_file(args.ref)
    hyps = read_slot_file(args.hyp, require_setting=False)
    return score_slots(refs, hyps).to_dict(include_sentences=args.details)


def _ocr(args: argparse.Namespace) -> dict[str, Any]:
    report = score_ocr(read_ocr_truth(args.ref), read_ocr_outputs(args.hyp), seconds=args.seconds)
    return report.to_dict(include_characters=args.details)


def _face_detect(args: argparse.Namespace) -> dict[str, Any]:
    detections = read_face_detections(args.hyp)
    report = score_detection(
        read_face_references(args.ref), detections.boxes, seconds=detections.seconds or None
    )
    return report.to_dict(include_images=args.details)


def _face_identify(args: argparse.Namespace) -> dict[str, Any]:
    report = score_identification(
        read_identification_candidates(args.hyp), read_identification_truth(args.ref)
    )
    return report.to_dict(include_probes=args.details)


def _face_verify(args: argparse.Namespace) -> dict[str, Any]:
    report = score_verification_pairs(
        read_verification_scores(args.hyp), read_verification_truth(args.ref)
    )
    return report.to_dict(include_roc=args.details)


# family -> (scorer, help); each reads --ref (truth) and --hyp (system output).
_FAMILIES = {
    "command": (_command, "correct command rate; JSON lines {id, text}"),
    "kws": (_kws, "keyword spotting: correct slot and sentence rates; slot JSON lines"),
    "ocr": (_ocr, "character recognition: R, R^10 per subset, speed V"),
    "faces-detect": (_face_detect, "face detection: correct detection rate, false detections"),
    "faces-identify": (_face_identify, "face identification: rank-1, rank-10, CMC"),
    "faces-verify": (_face_verify, "face verification: ROC, EER, VR at FAR 1%% and 0.1%%"),
}


def add_score_parser(sub: Any) -> None:
    """Register `onsite score` and its families on the CLI's subparsers."""
    score = sub.add_parser("score", help="score saved outputs against references (files only)")
    families = score.add_subparsers(dest="family", required=True)
    asr = families.add_parser(
        "asr", help="WER/CER with sclite's conventions; trn or Kaldi text files"
    )
    asr.add_argument("--ref", required=True, help="reference transcripts (trn or Kaldi text)")
    asr.add_argument("--hyp", required=True, help="hypotheses (trn or Kaldi text)")
    asr.add_argument("--unit", choices=("word", "char"), default="word")
    asr.add_argument("--case-sensitive", action="store_true")
    asr.add_argument("--json", action="store_true", help="print one JSON object")
    asr.set_defaults(handler=cmd_score, scorer=_asr)
    for family, (scorer, text) in _FAMILIES.items():
        parser = families.add_parser(family, help=text)
        parser.add_argument("--ref", required=True, help="the truth file (docs/scoring*.md)")
        parser.add_argument("--hyp", required=True, help="the system's output file")
        parser.add_argument("--details", action="store_true", help="per-item breakdown too")
        parser.add_argument("--json", action="store_true", help="print one JSON object")
        if family == "ocr":
            parser.add_argument("--seconds", type=float, help="total recognition seconds, for V")
        parser.set_defaults(handler=cmd_score, scorer=scorer)


def cmd_score(args: argparse.Namespace, console: Console) -> int:
    """Run one family's scorer and print its figures."""
    try:
        result = args.scorer(args)
    except (FormatError, ValueError, OSError) as exc:
        # The readers name the file and line; an unreadable path arrives as OSError.
        sys.stderr.write(f"error: {exc}\n")
        return 2
    if args.json:
        sys.stdout.write(json.dumps(result, ensure_ascii=False, indent=2) + "\n")
        return 0
    rows = [(k, v) for k, v in result.items() if not isinstance(v, list | dict)]
    console.print(table(f"{args.family} scores", ("figure", "value"), rows))
    return 0
