"""Regenerate the demo keyword-spotting set: 16 kHz spoken requests synthesized with
espeak-ng, their reference slot frames (`slots.jsonl`) and the keyword list handed to
systems in hello (`keywords.json`), in two settings (travel and weather).

Run: python -m datagen.make_demo_kws [--out DIR]. Needs espeak-ng and sox.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import soundfile as sf

RATE = 16000
CITIES = ["boston", "denver", "chicago", "seattle", "dallas", "atlanta"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
KEYWORDS = {
    "settings": {
        "transportation": {"from": CITIES, "to": CITIES, "date": DAYS},
        "weather": {"city": CITIES, "day": [*DAYS, "today", "tomorrow"]},
    }
}
# (id, setting, sentence, reference slots, espeak voice, words per minute)
RECORDINGS = [
    (
        "kw01",
        "transportation",
        "i want to fly from boston to denver on monday",
        {"from": ["boston"], "to": ["denver"], "date": ["monday"]},
        "en-us",
        150,
    ),
    (
        "kw02",
        "transportation",
        "a ticket from seattle to chicago please",
        {"from": ["seattle"], "to": ["chicago"]},
        "en-us",
        150,
    ),
    (
        "kw03",
        "transportation",
        "is there a train from atlanta to dallas on friday",
        {"from": ["atlanta"], "to": ["dallas"], "date": ["friday"]},
        "en-us",
        140,
    ),
    (
        "kw04",
        "weather",
        "what is the weather in chicago tomorrow",
        {"city": ["chicago"], "day": ["tomorrow"]},
        "en-us",
        150,
    ),
    (
        "kw05",
        "weather",
        "will it rain in seattle on sunday",
        {"city": ["seattle"], "day": ["sunday"]},
        "en-us",
        140,
    ),
    (
        "kw06",
        "weather",
        "is it cold in denver today",
        {"city": ["denver"], "day": ["today"]},
        "en-us",
        150,
    ),
]


def record(text: str, voice: str, speed: int, target: Path, work: Path) -> None:
    """espeak-ng, then sox to 16 kHz mono 16-bit; -R seeds sox's dither so files repeat."""
    raw = work / "raw.wav"
    subprocess.run(["espeak-ng", "-w", str(raw), "-s", str(speed), "-v", voice, text], check=True)
    wav = work / "16k.wav"
    subprocess.run(
        ["sox", "-R", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(wav)], check=True
    )
    samples, rate = sf.read(wav, dtype="int16")
    assert rate == RATE and samples.ndim == 1
    sf.write(target, samples, RATE, format="FLAC", subtype="PCM_16")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "site_config" / "data" / "demo-kws"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for utt_id, _, text, _, voice, speed in RECORDINGS:
            record(text, voice, speed, args.out / f"{utt_id}.flac", Path(tmp))
    frames = [
        {"id": utt_id, "setting": setting, "slots": slots}
        for utt_id, setting, _, slots, _, _ in RECORDINGS
    ]
    (args.out / "slots.jsonl").write_text(
        "".join(json.dumps(f) + "\n" for f in frames), encoding="utf-8"
    )
    (args.out / "keywords.json").write_text(json.dumps(KEYWORDS, indent=2) + "\n", "utf-8")
    (args.out / "README.md").write_text(
        "# demo-kws\n\nSpoken travel and weather requests for the keyword-spotting task: "
        f"{len(RECORDINGS)} recordings at 16 kHz, 16-bit mono FLAC, synthesized with espeak-ng "
        "and resampled with sox. `slots.jsonl` holds each recording's reference slot frame; "
        "`keywords.json`, the keyword list of each setting, reaches the systems in hello. "
        "Regenerate with `python -m datagen.make_demo_kws`.\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
