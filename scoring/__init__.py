"""Scoring metrics for onsite evaluations.

Each metric is computed the way its reference tool computes it (for ASR:
NIST sclite's alignment weights and micro-averaged counts), so numbers can be
checked against that tool. This package imports nothing else from the
project: only the standard library.
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

__all__ = [
    "CORRECT_COST",
    "DELETION_COST",
    "INSERTION_COST",
    "SUBSTITUTION_COST",
    "AlignedPair",
    "Alignment",
    "AsrReport",
    "AsrScore",
    "Op",
    "Unit",
    "UtteranceScore",
    "align",
    "is_cjk_char",
    "score_asr",
    "tokenize",
]
