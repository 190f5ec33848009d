"""Scoring metrics for onsite evaluations.

Each metric is computed the way its reference tool computes it (for ASR:
NIST sclite's alignment weights and micro-averaged counts), so numbers can be
checked against that tool. This package imports nothing else from the
project: only the standard library and numpy. Each family lives in its own
module (asr, commands, kws, ocr, faces, tts); the main entry points are
re-exported here and loaded on first use.
"""

from typing import TYPE_CHECKING

from lazy_exports import lazy_exports

if TYPE_CHECKING:
    from .asr import AsrReport, AsrScore, UtteranceScore, score_asr
    from .asr_align import (
        CORRECT_COST,
        DELETION_COST,
        INSERTION_COST,
        SUBSTITUTION_COST,
        AlignedPair,
        Alignment,
        Op,
        Unit,
        align,
        is_cjk_char,
        tokenize,
    )
    from .asr_formats import (
        TranscriptFormat,
        check_ids,
        detect_format,
        read_any_transcripts,
        read_conditions,
        read_ctm,
        read_stm,
        read_transcripts,
    )
    from .commands import CommandReport, read_command_file, score_commands
    from .errors import FormatError
    from .faces import (
        DetectionReport,
        IdentificationReport,
        VerificationReport,
        read_face_detections,
        read_face_references,
        read_identification_candidates,
        read_identification_truth,
        read_verification_scores,
        read_verification_truth,
        score_detection,
        score_identification,
        score_verification_pairs,
    )
    from .kws import DetCurve, KwsReport, det_curve, read_detections, read_slot_file, score_slots
    from .ocr import OcrReport, read_ocr_outputs, read_ocr_truth, score_ocr
    from .tts import (
        listening_plan,
        pair_comparison,
        read_mos_ratings,
        read_pair_judgements,
        read_sentence_ids,
        read_sus_responses,
        score_mos,
        score_sus,
    )

# Where each public name lives. A module is loaded when one of its names is
# first used (PEP 562): `onsite score ir` should not import numpy, the numba
# aligner or the face scorers.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AsrReport": ".asr",
        "AsrScore": ".asr",
        "UtteranceScore": ".asr",
        "score_asr": ".asr",
        "AlignedPair": ".asr_align",
        "Alignment": ".asr_align",
        "CORRECT_COST": ".asr_align",
        "DELETION_COST": ".asr_align",
        "INSERTION_COST": ".asr_align",
        "Op": ".asr_align",
        "SUBSTITUTION_COST": ".asr_align",
        "Unit": ".asr_align",
        "align": ".asr_align",
        "is_cjk_char": ".asr_align",
        "tokenize": ".asr_align",
        "TranscriptFormat": ".asr_formats",
        "check_ids": ".asr_formats",
        "detect_format": ".asr_formats",
        "read_any_transcripts": ".asr_formats",
        "read_conditions": ".asr_formats",
        "read_ctm": ".asr_formats",
        "read_stm": ".asr_formats",
        "read_transcripts": ".asr_formats",
        "CommandReport": ".commands",
        "read_command_file": ".commands",
        "score_commands": ".commands",
        "FormatError": ".errors",
        "DetectionReport": ".faces",
        "IdentificationReport": ".faces",
        "VerificationReport": ".faces",
        "read_face_detections": ".faces",
        "read_face_references": ".faces",
        "read_identification_candidates": ".faces",
        "read_identification_truth": ".faces",
        "read_verification_scores": ".faces",
        "read_verification_truth": ".faces",
        "score_detection": ".faces",
        "score_identification": ".faces",
        "score_verification_pairs": ".faces",
        "DetCurve": ".kws",
        "KwsReport": ".kws",
        "det_curve": ".kws",
        "read_detections": ".kws",
        "read_slot_file": ".kws",
        "score_slots": ".kws",
        "OcrReport": ".ocr",
        "read_ocr_outputs": ".ocr",
        "read_ocr_truth": ".ocr",
        "score_ocr": ".ocr",
        "listening_plan": ".tts",
        "pair_comparison": ".tts",
        "read_mos_ratings": ".tts",
        "read_pair_judgements": ".tts",
        "read_sentence_ids": ".tts",
        "read_sus_responses": ".tts",
        "score_mos": ".tts",
        "score_sus": ".tts",
    },
)


__all__ = [
    "CORRECT_COST",
    "DELETION_COST",
    "INSERTION_COST",
    "SUBSTITUTION_COST",
    "AlignedPair",
    "Alignment",
    "AsrReport",
    "AsrScore",
    "CommandReport",
    "DetCurve",
    "DetectionReport",
    "FormatError",
    "IdentificationReport",
    "KwsReport",
    "OcrReport",
    "Op",
    "TranscriptFormat",
    "Unit",
    "UtteranceScore",
    "VerificationReport",
    "align",
    "check_ids",
    "det_curve",
    "detect_format",
    "is_cjk_char",
    "listening_plan",
    "pair_comparison",
    "read_any_transcripts",
    "read_command_file",
    "read_conditions",
    "read_ctm",
    "read_detections",
    "read_face_detections",
    "read_face_references",
    "read_identification_candidates",
    "read_identification_truth",
    "read_mos_ratings",
    "read_ocr_outputs",
    "read_ocr_truth",
    "read_pair_judgements",
    "read_sentence_ids",
    "read_slot_file",
    "read_stm",
    "read_sus_responses",
    "read_transcripts",
    "read_verification_scores",
    "read_verification_truth",
    "score_asr",
    "score_commands",
    "score_detection",
    "score_identification",
    "score_mos",
    "score_ocr",
    "score_slots",
    "score_sus",
    "score_verification_pairs",
    "tokenize",
]
