"""Regenerate the demo ASR test set (synthetic speech, clean and noisy copies).

Run as ``python -m datagen.make_demo_asr [--out DIR]``.  Needs the Debian
packages ``espeak-ng`` (speech synthesis) and ``sox`` (resampling to 16 kHz),
plus numpy and soundfile.  The output is deterministic for a given espeak-ng,
sox and libsndfile version: the noise uses fixed per-item seeds.

Output files in DIR:
  ``<utt-id>.flac``   16 kHz mono 16-bit audio, one per item
  ``text``            ``<utt-id> <reference transcript>`` per line
  ``conditions.tsv``  ``<utt-id>\\t<label>`` with labels clean/snr15/snr5
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

SAMPLE_RATE = 16000
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "site_config" / "data" / "demo-asr"

# (reference transcript, espeak-ng voice, words per minute).  Plain common
# words so that the stock pocketsphinx US-English model gets a fair share
# right; voices and speeds vary a little so the items are not all alike.
SENTENCES: list[tuple[str, str, int]] = [
    ("please call me back tomorrow morning", "en-us", 135),
    ("the weather is very nice today", "en-us+m3", 130),
    ("i would like a cup of coffee", "en-us+f2", 135),
    ("we need to buy some bread and milk", "en-us", 140),
    ("turn left at the next street", "en-us+m5", 125),
    ("the meeting starts at ten in the morning", "en-us+f4", 140),
    ("my brother lives in a small house", "en-us+m2", 130),
    ("can you open the window please", "en-us", 130),
]

# Label -> SNR in dB (None means the clean original).
CONDITIONS: list[tuple[str, float | None]] = [
    ("clean", None),
    ("snr15", 15.0),
    ("snr5", 5.0),
]


def synthesize(text: str, voice: str, speed: int, workdir: Path) -> np.ndarray:
    """Synthesize ``text`` with espeak-ng and return 16 kHz mono int16 samples."""
    raw_wav = workdir / "espeak.wav"
    wav16 = workdir / "16k.wav"
    subprocess.run(
        ["espeak-ng", "-w", str(raw_wav), "-s", str(speed), "-v", voice, text],
        check=True,
    )
    # -D: no dither and -R: repeatable, so regeneration is bit-identical.
    subprocess.run(
        [
            "sox",
            "-D",
            "-R",
            str(raw_wav),
            "-r",
            str(SAMPLE_RATE),
            "-c",
            "1",
            "-b",
            "16",
            str(wav16),
        ],
        check=True,
    )
    samples, rate = sf.read(wav16, dtype="int16")
    if rate != SAMPLE_RATE or samples.ndim != 1:
        raise RuntimeError(f"unexpected sox output: rate={rate} shape={samples.shape}")
    return samples


def add_noise(samples: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    """Return ``samples`` plus white Gaussian noise at ``snr_db`` (int16, clipped)."""
    signal = samples.astype(np.float64)
    # Power over the whole file, pauses included: simple and reproducible.
    signal_power = float(np.mean(signal**2))
    noise_power = signal_power / (10.0 ** (snr_db / 10.0))
    rng = np.random.default_rng(seed)
    noisy = signal + rng.normal(0.0, np.sqrt(noise_power), size=signal.shape)
    return np.clip(np.round(noisy), -32768, 32767).astype(np.int16)


def generate(out: Path) -> list[tuple[str, str, str, float]]:
    """Write the demo set into ``out``; return (utt-id, label, text, seconds) rows."""
    for tool in ("espeak-ng", "sox"):
        if shutil.which(tool) is None:
            raise RuntimeError(f"{tool} not found (install the Debian package '{tool}')")
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, (text, voice, speed) in enumerate(SENTENCES, start=1):
            clean = synthesize(text, voice, speed, Path(tmp))
            for cond_index, (label, snr_db) in enumerate(CONDITIONS):
                utt_id = f"s{index:02d}_{label}"
                if snr_db is None:
                    audio = clean
                else:
                    audio = add_noise(clean, snr_db, seed=1000 * index + cond_index)
                sf.write(
                    out / f"{utt_id}.flac", audio, SAMPLE_RATE, subtype="PCM_16", format="FLAC"
                )
                rows.append((utt_id, label, text, len(audio) / SAMPLE_RATE))
    (out / "text").write_text("".join(f"{u} {t}\n" for u, _, t, _ in rows), encoding="utf-8")
    (out / "conditions.tsv").write_text(
        "".join(f"{u}\t{lab}\n" for u, lab, _, _ in rows), encoding="utf-8"
    )
    return rows


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output directory (default {DEFAULT_OUT})"
    )
    args = parser.parse_args(argv)
    rows = generate(args.out)
    total = sum(seconds for *_, seconds in rows)
    size = sum(p.stat().st_size for p in args.out.glob("*.flac"))
    print(
        f"wrote {len(rows)} items, {total:.1f} s of audio, {size} bytes of FLAC to {args.out}",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
