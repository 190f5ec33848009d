"""Regenerate the demo command-recognition set (PDA style): 8 kHz recordings of command
words synthesized with festival (datagen/festival.py), their `text`, and the
`vocabulary.txt` handed out.

Run: python -m datagen.make_demo_command [--out DIR]. Needs festival,
festvox-us-slt-hts, festvox-kallpc16k and sox.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import soundfile as sf

from datagen.festival import Voice, check_tools, synthesize

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
    ("c01", "turn left", Voice("slt")),
    ("c02", "go forward", Voice("kal")),
    ("c03", "open the door", Voice("slt", 1.1)),
    ("c04", "turn right", Voice("kal", 0.9)),
    ("c05", "play music", Voice("slt", 0.9)),
    ("c06", "close the door", Voice("slt")),
]


def record(text: str, voice: Voice, target: Path, work: Path) -> None:
    """festival, then sox to 8 kHz mono 16-bit (datagen/festival.py), as FLAC."""
    sf.write(target, synthesize(text, voice, RATE, work), RATE, format="FLAC", subtype="PCM_16")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "site_config" / "data" / "demo-command"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    check_tools()
    with tempfile.TemporaryDirectory() as tmp:
        for utt_id, text, voice in RECORDINGS:
            record(text, voice, args.out / f"{utt_id}.flac", Path(tmp))
    (args.out / "text").write_text(
        "".join(f"{utt_id} {text}\n" for utt_id, text, _ in RECORDINGS), encoding="utf-8"
    )
    (args.out / "vocabulary.txt").write_text("\n".join(VOCABULARY) + "\n", encoding="utf-8")
    (args.out / "README.md").write_text(
        "# demo-command\n\nCommand words for the PDA command-recognition task: "
        f"{len(RECORDINGS)} recordings at 8 kHz, 16-bit mono FLAC, synthesized with festival "
        "(its HTS voice cmu_us_slt_arctic_hts and the diphone voice kal_diphone) "
        "and resampled with sox, and `vocabulary.txt`, the command list handed to the device "
        "at setup. Regenerate with `python -m datagen.make_demo_command`.\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
