"""Speech for the demo's test sets: festival's voices, resampled with sox.

The stock pocketsphinx US-English model follows festival's HTS voice (Debian
``festvox-us-slt-hts``) and its diphone voice (``festvox-kallpc16k``) well (about 4% WER
on the demo's clean sentences) where it missed three words in four of espeak-ng's, so a
newcomer's first leaderboard reads like a recognizer's, not like a broken harness.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

# festival's voice procedures, by the Debian package that installs them.
VOICES = {
    "slt": ("voice_cmu_us_slt_arctic_hts", "festvox-us-slt-hts"),
    "kal": ("voice_kal_diphone", "festvox-kallpc16k"),
}


@dataclass(frozen=True)
class Voice:
    """A festival voice and how fast it speaks: ``rate`` > 1 is faster. The rate goes to
    the HTS engine (its ``-r``), which ignores festival's Duration_Stretch; a diphone
    voice takes Duration_Stretch (its inverse) instead."""

    name: str = "slt"
    rate: float = 1.0

    def scheme(self) -> list[str]:
        """The ``-eval`` expressions that select and tune the voice for text2wave."""
        procedure, _ = VOICES[self.name]
        exprs = [f"({procedure})"]
        if self.rate != 1.0:
            hts = f'(list (list "-r" {self.rate}))'
            exprs.append(
                f"(set! hts_engine_params (append hts_engine_params {hts}))"
                if self.name == "slt"
                else f"(Parameter.set 'Duration_Stretch {1.0 / self.rate:.4f})"
            )
        return exprs


def check_tools() -> None:
    """Raise RuntimeError naming the Debian package when festival, a voice or sox is missing."""
    for tool, package in (("text2wave", "festival"), ("sox", "sox")):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not found: install the Debian package '{package}'")
    for procedure, package in VOICES.values():
        voice_dir = procedure.removeprefix("voice_")
        if not any(Path("/usr/share/festival/voices").glob(f"*/{voice_dir}")):
            raise RuntimeError(f"festival voice {voice_dir} missing: install '{package}'")


def synthesize(text: str, voice: Voice, rate: int, workdir: Path) -> np.ndarray:
    """``text`` spoken by ``voice`` as mono int16 samples at ``rate`` Hz."""
    raw = workdir / "festival.wav"
    resampled = workdir / "resampled.wav"
    command = ["text2wave", "-o", str(raw)]
    for expr in voice.scheme():
        command += ["-eval", expr]
    subprocess.run(command, input=text.encode("utf-8"), check=True, capture_output=True)
    # -D: no dither and -R: repeatable, so regeneration is bit-identical; -G: the HTS
    # voice peaks at full scale, which the resampler would clip.
    subprocess.run(
        ["sox", "-D", "-R", "-G", str(raw), "-r", str(rate), "-c", "1", "-b", "16", str(resampled)],
        check=True,
    )
    samples, got = sf.read(resampled, dtype="int16")
    if got != rate or samples.ndim != 1:
        raise RuntimeError(f"unexpected sox output: rate={got} shape={samples.shape}")
    return np.asarray(samples)


def low_frequency_noise(n: int, rate: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-variance Gaussian noise with the power mostly below 300 Hz (second-order
    roll-off above it), like a car cabin's: it masks speech's low end only, as a
    vehicle or machine room does, where white noise at the same SNR masks it all."""
    white = rng.normal(0.0, 1.0, n)
    freqs = np.fft.rfftfreq(n, 1.0 / rate)
    shaped = np.fft.irfft(np.fft.rfft(white) / (1.0 + (freqs / 300.0) ** 2), n)
    return np.asarray(shaped / np.std(shaped))


def add_noise(samples: np.ndarray, snr_db: float, seed: int, rate: int) -> np.ndarray:
    """``samples`` plus low-frequency noise at ``snr_db`` (int16, clipped); the signal's
    power is taken over the whole file, pauses included: simple and reproducible."""
    signal = samples.astype(np.float64)
    noise_power = float(np.mean(signal**2)) / (10.0 ** (snr_db / 10.0))
    noise = low_frequency_noise(len(signal), rate, np.random.default_rng(seed))
    noisy = signal + noise * np.sqrt(noise_power)
    return np.clip(np.round(noisy), -32768, 32767).astype(np.int16)
