"""Regenerate the demo command-recognition set (PDA style): 8 kHz recordings of command
words synthesized with espeak-ng, their `text`, and the `vocabulary.txt` handed out.

Run: python -m datagen.make_demo_command [--out DIR]. Needs espeak-ng and sox.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import soundfile as sf

RATE = 8000
# The vocabulary handed to the device at setup; the recordings say some of them.
VOCABULARY = [
    "turn left",
    "turn right",
    "go forward",
    "go back",
    "stop",
    "open the door",
    "close the door",
    "call home",
    "play music",
    "lights on",
    "lights off",
    "next page",
]
RECORDINGS = [
    ("c01", "turn left", "en-us", 175),
    ("c02", "go forward", "en-us", 175),
    ("c03", "open the door", "en-us", 175),
    ("c04", "turn right", "en-us", 175),
    ("c05", "play music", "en-us", 175),
    ("c06", "close the door", "en-us", 175),
]


def record(text: str, voice: str, speed: int, target: Path, work: Path) -> None:
    """espeak-ng, then sox to 8 kHz mono 16-bit; -R seeds sox's dither so files repeat."""
    raw = work / "raw.wav"
    subprocess.run(["espeak-ng", "-w", str(raw), "-s", str(speed), "-v", voice, text], check=True)
    wav = work / "8k.wav"
    subprocess.run(
        ["sox", "-R", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(wav)],
        check=True,
    )
    samples, rate = sf.read(wav, dtype="int16")
    assert rate == RATE and samples.ndim == 1
    sf.write(target, samples, RATE, format="FLAC", subtype="PCM_16")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "site_config" / "data" / "demo-command"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for utt_id, text, voice, speed in RECORDINGS:
            record(text, voice, speed, args.out / f"{utt_id}.flac", Path(tmp))
    (args.out / "text").write_text(
        "".join(f"{utt_id} {text}\n" for utt_id, text, _, _ in RECORDINGS), encoding="utf-8"
    )
    (args.out / "vocabulary.txt").write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    (args.out / "README.md").write_text(
        "# demo-command\n\nCommand words for the PDA command-recognition task: "
        f"{len(RECORDINGS)} recordings at 8 kHz, 16-bit mono FLAC, synthesized with espeak-ng "
        "and resampled with sox, and `vocabulary.txt`, the command list handed to the device "
        "at setup. Regenerate with `python -m datagen.make_demo_command`.\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
