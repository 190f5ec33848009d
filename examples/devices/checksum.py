"""A test agent whose answer proves the audio arrived intact: its length and CRC-32.

``recognize`` returns ``"<bytes> <crc32 as 8 hex digits>"``, optionally after
sleeping a fixed time so tests can check that transfer time is not counted as
processing time. It accepts 8 and 16 kHz.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence


def expected_text(pcm: bytes) -> str:
    """What the recognizer answers for ``pcm``."""
    return f"{len(pcm)} {zlib.crc32(pcm):08x}"


class ChecksumRecognizer:
    """Answers with the input's length and checksum; ``sleep`` seconds per item."""

    name = "checksum"
    version = "1"
    sample_rates: tuple[int, ...] = (8000, 16000)

    def __init__(self, sleep: float = 0.0) -> None:
        self.sleep = sleep
        self.vocabulary: list[str] = []

    def load(self, vocabulary: Sequence[str]) -> None:
        self.vocabulary = list(vocabulary)

    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        if self.sleep:
            time.sleep(self.sleep)
        return expected_text(pcm)


def make_recognizer() -> ChecksumRecognizer:
    return ChecksumRecognizer()
