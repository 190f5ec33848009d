"""Regenerate the demo keyword-spotting set: 16 kHz spoken requests synthesized with
festival (datagen/festival.py), their reference slot frames (`slots.jsonl`) and the
keyword list handed to systems in hello (`keywords.json`), in two settings (travel and
weather).

Run: python -m datagen.make_demo_kws [--out DIR]. Needs festival, festvox-us-slt-hts,
festvox-kallpc16k and sox.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import soundfile as sf

from datagen.festival import Voice, check_tools, synthesize

RATE = 16000
CITIES = ["boston", "denver", "chicago", "seattle", "dallas", "atlanta"]
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
KEYWORDS = {
    "settings": {
        "transportation": {"from": CITIES, "to": CITIES, "date": DAYS},
        "weather": {"city": CITIES, "day": [*DAYS, "today", "tomorrow"]},
    }
}
# (id, setting, sentence, reference slots, festival voice)
RECORDINGS = [
    (
        "kw01",
        "transportation",
        "i want to fly from boston to denver on monday",
        {"from": ["boston"], "to": ["denver"], "date": ["monday"]},
        Voice("slt"),
    ),
    (
        "kw02",
        "transportation",
        "a ticket from seattle to chicago please",
        {"from": ["seattle"], "to": ["chicago"]},
        Voice("kal"),
    ),
    (
        "kw03",
        "transportation",
        "is there a train from atlanta to dallas on friday",
        {"from": ["atlanta"], "to": ["dallas"], "date": ["friday"]},
        Voice("slt", 0.9),
    ),
    (
        "kw04",
        "weather",
        "what is the weather in chicago tomorrow",
        {"city": ["chicago"], "day": ["tomorrow"]},
        Voice("slt", 1.1),
    ),
    (
        "kw05",
        "weather",
        "will it rain in seattle on sunday",
        {"city": ["seattle"], "day": ["sunday"]},
        Voice("kal", 0.9),
    ),
    (
        "kw06",
        "weather",
        "is it cold in denver today",
        {"city": ["denver"], "day": ["today"]},
        Voice("slt"),
    ),
]


def record(text: str, voice: Voice, target: Path, work: Path) -> None:
    """festival, then sox to 16 kHz mono 16-bit (datagen/festival.py), as FLAC."""
    sf.write(target, synthesize(text, voice, RATE, work), RATE, format="FLAC", subtype="PCM_16")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = Path(__file__).resolve().parent.parent / "site_config" / "data" / "demo-kws"
    parser.add_argument("--out", type=Path, default=default)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    check_tools()
    with tempfile.TemporaryDirectory() as tmp:
        for utt_id, _, text, _, voice in RECORDINGS:
            record(text, voice, args.out / f"{utt_id}.flac", Path(tmp))
    frames = [
        {"id": utt_id, "setting": setting, "slots": slots}
        for utt_id, setting, _, slots, _ in RECORDINGS
    ]
    (args.out / "slots.jsonl").write_text(
        "".join(json.dumps(f) + "\n" for f in frames), encoding="utf-8"
    )
    (args.out / "keywords.json").write_text(json.dumps(KEYWORDS, indent=2) + "\n", "utf-8")
    (args.out / "README.md").write_text(
        "# demo-kws\n\nSpoken travel and weather requests for the keyword-spotting task: "
        f"{len(RECORDINGS)} recordings at 16 kHz, 16-bit mono FLAC, synthesized with festival "
        "(its HTS voice cmu_us_slt_arctic_hts at three rates and the diphone voice kal_diphone) "
        "and resampled with sox. `slots.jsonl` holds each recording's reference slot frame; "
        "`keywords.json`, the keyword list of each setting, reaches the systems in hello. "
        "Regenerate with `python -m datagen.make_demo_kws`.\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
