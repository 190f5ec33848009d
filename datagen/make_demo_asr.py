"""Regenerate the demo ASR test set (synthetic speech, clean and noisy copies).

Run as ``python -m datagen.make_demo_asr [--out DIR]``.  Needs the Debian
packages ``festival``, ``festvox-us-slt-hts`` and ``festvox-kallpc16k`` (speech
synthesis, datagen/festival.py) and ``sox`` (resampling to 16 kHz), plus numpy
and soundfile.  The output is deterministic for a given festival, voice, sox and
libsndfile version: the noise uses fixed per-item seeds.

Output files in DIR:
  ``<utt-id>.flac``   16 kHz mono 16-bit audio, one per item
  ``text``            ``<utt-id> <reference transcript>`` per line
  ``conditions.tsv``  ``<utt-id>\\t<label>`` with labels clean/snr15/snr5
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import soundfile as sf

from datagen.festival import Voice, add_noise, check_tools, synthesize

SAMPLE_RATE = 16000
DEFAULT_OUT = Path(__file__).resolve().parent.parent / "site_config" / "data" / "demo-asr"

# (reference transcript, festival voice).  Plain common words so that the stock
# pocketsphinx US-English model gets most of them right; two voices (the HTS voice
# at three speaking rates, and the diphone voice) so the items are not all alike.
SENTENCES: list[tuple[str, Voice]] = [
    ("please call me back tomorrow morning", Voice("slt")),
    ("the weather is very nice today", Voice("kal")),
    ("i would like a cup of coffee", Voice("slt", 0.9)),
    ("we need to buy some bread and milk", Voice("slt", 1.1)),
    ("turn left at the next street", Voice("kal", 0.9)),
    ("the meeting starts at ten in the morning", Voice("slt")),
    ("my brother lives in a small house", Voice("slt", 0.9)),
    ("can you open the window please", Voice("kal")),
]

# Label -> SNR in dB (None means the clean original); the noise is low-frequency,
# car-like (datagen/festival.py).
CONDITIONS: list[tuple[str, float | None]] = [
    ("clean", None),
    ("snr15", 15.0),
    ("snr5", 5.0),
]


def generate(out: Path) -> list[tuple[str, str, str, float]]:
    """Write the demo set into ``out``; return (utt-id, label, text, seconds) rows."""
    check_tools()
    out.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str, str, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, (text, voice) in enumerate(SENTENCES, start=1):
            clean = synthesize(text, voice, SAMPLE_RATE, Path(tmp))
            for cond_index, (label, snr_db) in enumerate(CONDITIONS):
                utt_id = f"s{index:02d}_{label}"
                if snr_db is None:
                    audio = clean
                else:
                    audio = add_noise(clean, snr_db, 1000 * index + cond_index, SAMPLE_RATE)
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
