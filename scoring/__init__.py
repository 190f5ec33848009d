"""Scoring metrics for onsite evaluations.

Each metric is computed the way its reference tool computes it (for ASR:
NIST sclite's alignment weights and micro-averaged counts), so numbers can be
checked against that tool. This package imports nothing else from the
project: only the standard library and numpy. Each family lives in its own
module (asr, commands, kws, ocr, faces, tts); the main entry points are
re-exported here.
"""

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
    read_conditions,
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
    "read_command_file",
    "read_conditions",
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
