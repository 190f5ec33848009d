"""The panel's audio in one canonical form, held in memory: blind judging.

A file as a system wrote it tells its system apart without being heard: its size and
header (a 44-byte header or LIST chunks, 16-bit, 24-bit or float samples), its file
times, and how long it takes to read. The panel therefore decodes every audio file of
its plan when it starts and serves each one re-encoded the same way: a 44-byte RIFF
header, 16-bit little-endian PCM, mono, at the one sample rate of the panel, from
memory. What remains is the audio itself: its duration (so its length in bytes), its
samples and their silences are the system's own.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.judge.store import PanelError

# 16-bit PCM: full scale of the canonical samples.
_FULL_SCALE = 32768


def canonical_wav(samples: bytes, rate: int) -> bytes:
    """A 44-byte-header RIFF/WAVE around mono 16-bit little-endian PCM ``samples``."""
    fmt = struct.pack("<4sIHHIIHH", b"fmt ", 16, 1, 1, rate, rate * 2, 2, 16)
    head = b"RIFF" + struct.pack("<I", 36 + len(samples)) + b"WAVE" + fmt
    return head + b"data" + struct.pack("<I", len(samples)) + samples


def _pcm16(path: Path) -> tuple[bytes, int]:
    """The samples of a mono audio file as 16-bit little-endian PCM, and its rate."""
    import numpy as np
    import soundfile

    try:
        # Read as floats whatever the file holds: 16-bit samples come back exactly
        # (x / 32768), deeper ones are rounded to 16 bits, floats past full scale clipped.
        data, rate = soundfile.read(str(path), dtype="float64", always_2d=True)
    except (OSError, RuntimeError, soundfile.LibsndfileError) as exc:
        raise PanelError(
            f"cannot read the audio {path} ({exc}); the run directory changed since the run: "
            "restore the file from the run's copy"
        ) from None
    if data.shape[1] != 1:
        raise PanelError(
            f"{path} has {data.shape[1]} channels; the tts kind keeps mono audio only: "
            "restore the file from the run's copy"
        )
    scaled = np.clip(np.round(data[:, 0] * _FULL_SCALE), -_FULL_SCALE, _FULL_SCALE - 1)
    return scaled.astype("<i2").tobytes(), int(rate)


class MediaBank:
    """Every audio file of a panel, decoded once and held in its canonical form."""

    def __init__(self, audio: Mapping[str, bytes], rate: int | None) -> None:
        self._audio = dict(audio)
        self.rate = rate

    @classmethod
    def load(cls, paths: Iterable[Path]) -> MediaBank:
        """Decode every file; all must be mono at one sample rate (else PanelError)."""
        decoded: dict[str, tuple[bytes, int]] = {}
        for path in paths:
            if str(path) not in decoded:
                decoded[str(path)] = _pcm16(path)
        rates = sorted({rate for _, rate in decoded.values()})
        if len(rates) > 1:
            # The tts kind keeps audio at the rate its items ask for, one per task; two
            # rates would tell systems apart by ear and by header.
            example = {r: p for p, (_, r) in decoded.items()}
            raise PanelError(
                "the panel's audio has several sample rates ("
                + ", ".join(f"{r} Hz: {example[r]}" for r in rates)
                + "); one task keeps one rate: judge a run whose audio was kept by the tts kind"
            )
        rate = rates[0] if rates else None
        return cls({p: canonical_wav(s, r) for p, (s, r) in decoded.items()}, rate)

    def get(self, path: Path) -> bytes | None:
        """The canonical WAV of a file of the plan, or None."""
        return self._audio.get(str(path))
