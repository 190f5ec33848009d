"""Example speech synthesizer: espeak-ng, resampled to the rate asked with sox.

Usage::

    python -m systems.espeak_tts                          # serve mode
    python -m systems.espeak_tts --speed 120 --pitch 30   # a second setting
    python -m systems.espeak_tts --fault stereo           # a faulty system (tests)

Input ``{"text", "sample_rate", "audio_out"}``: the WAV goes to ``audio_out``
(mono, 16-bit, at ``sample_rate``) and the answer is ``{"audio": audio_out}``.
``--fault`` makes the audio wrong on purpose: ``stereo``, ``rate`` (another
sample rate), ``garbage`` (not audio), ``empty`` (no samples), ``none`` (no file).

Needs the Debian packages espeak-ng and sox.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .jsonlines import exec_main, log, serve


class Espeak:
    """One espeak-ng setting (voice, words per minute, pitch) and an optional fault."""

    def __init__(self, voice: str, speed: int, pitch: int, fault: str | None) -> None:
        self.voice = voice
        self.speed = speed
        self.pitch = pitch
        self.fault = fault

    def setup(self, hello: dict[str, Any] | None = None) -> None:
        """Check that espeak-ng and sox run."""
        for tool in (["espeak-ng", "--version"], ["sox", "--version"]):
            subprocess.run(tool, check=True, capture_output=True)
        log(f"espeak-ng voice={self.voice} speed={self.speed} pitch={self.pitch}")

    def synthesize(self, item: dict[str, Any]) -> dict[str, Any]:
        """Write the item's text as speech to its audio_out; answer with that path."""
        out = Path(item["audio_out"])
        rate = int(item["sample_rate"])
        if self.fault == "none":
            return {"audio": str(out)}
        if self.fault == "garbage":
            out.write_bytes(b"this is not a wav file\n" * 10)
            return {"audio": str(out)}
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "raw.wav"
            subprocess.run(
                ["espeak-ng", "-v", self.voice, "-s", str(self.speed), "-p", str(self.pitch)]
                + ["-w", str(raw), "--", str(item["text"])],
                check=True,
                capture_output=True,
            )
            channels = "2" if self.fault == "stereo" else "1"
            out_rate = str(rate // 2 if self.fault == "rate" else rate)
            effects = ["trim", "0", "0"] if self.fault == "empty" else []
            subprocess.run(
                ["sox", str(raw), "-b", "16", "-c", channels, "-r", out_rate, str(out), *effects],
                check=True,
                capture_output=True,
            )
        return {"audio": str(out)}


def main(argv: list[str] | None = None) -> int:
    """Serve mode by default; --exec INPUT OUTPUT for one item."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", default="en-us")
    parser.add_argument("--speed", type=int, default=175, help="words per minute")
    parser.add_argument("--pitch", type=int, default=50, help="0..99")
    parser.add_argument("--fault", choices=("stereo", "rate", "garbage", "empty", "none"))
    parser.add_argument("--exec", nargs=2, metavar=("INPUT", "OUTPUT"))
    args = parser.parse_args(argv)
    tts = Espeak(args.voice, args.speed, args.pitch, args.fault)
    if args.exec:
        return exec_main(tts.synthesize, args.exec[0], args.exec[1], tts.setup)
    return serve("espeak-ng", "1.51", tts.synthesize, tts.setup)


if __name__ == "__main__":
    sys.exit(main())
