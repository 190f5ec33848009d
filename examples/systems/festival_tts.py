"""Example speech synthesizer: festival with its HTS voice, resampled with sox.

Usage::

    python -m systems.festival_tts                  # serve mode, cmu_us_slt_arctic_hts
    python -m systems.festival_tts --rate 0.9       # a little slower
    python -m systems.festival_tts --voice kal      # the diphone voice kal_diphone

Input ``{"text", "sample_rate", "audio_out"}``: the WAV goes to ``audio_out`` (mono,
16-bit, at ``sample_rate``) and the answer is ``{"audio": audio_out}``. A statistical
parametric (HMM) voice, where espeak-ng (systems/espeak_tts.py) is a formant
synthesizer: the demo's pair comparison sets two really different synthesizers side
by side.

Needs the Debian packages festival, festvox-us-slt-hts (festvox-kallpc16k for
``--voice kal``) and sox.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .jsonlines import exec_main, log, serve

VOICES = {"slt": "voice_cmu_us_slt_arctic_hts", "kal": "voice_kal_diphone"}


class Festival:
    """One festival voice at one speaking rate (> 1 is faster)."""

    def __init__(self, voice: str, rate: float) -> None:
        self.voice = voice
        self.rate = rate

    def scheme(self) -> list[str]:
        """text2wave's ``-eval`` arguments: the voice, then its rate."""
        args = ["-eval", f"({VOICES[self.voice]})"]
        if self.rate != 1.0:
            # The HTS engine takes its own speed ratio and ignores Duration_Stretch.
            hts = f'(list (list "-r" {self.rate}))'
            args += [
                "-eval",
                f"(set! hts_engine_params (append hts_engine_params {hts}))"
                if self.voice == "slt"
                else f"(Parameter.set 'Duration_Stretch {1.0 / self.rate:.4f})",
            ]
        return args

    def setup(self, hello: dict[str, Any] | None = None) -> None:
        """Synthesize a word, so that a missing voice fails here and not on an item."""
        with tempfile.TemporaryDirectory() as tmp:
            self._speak("ready", Path(tmp) / "probe.wav")
        subprocess.run(["sox", "--version"], check=True, capture_output=True)
        log(f"festival voice={VOICES[self.voice]} rate={self.rate}")

    def _speak(self, text: str, wav: Path) -> None:
        try:
            done = subprocess.run(
                ["text2wave", "-o", str(wav), *self.scheme()],
                input=text.encode("utf-8"),
                capture_output=True,
            )
        except FileNotFoundError:
            raise RuntimeError(
                "text2wave not found: install the Debian packages festival and "
                "festvox-us-slt-hts (`make system-deps`)"
            ) from None
        # text2wave exits 0 on some errors (an unknown voice): check the file too.
        if done.returncode != 0 or not wav.is_file() or wav.stat().st_size <= 44:
            raise RuntimeError(f"text2wave failed: {done.stderr.decode(errors='replace')[-300:]}")

    def synthesize(self, item: dict[str, Any]) -> dict[str, Any]:
        """Write the item's text as speech to its audio_out; answer with that path."""
        out = Path(item["audio_out"])
        rate = int(item["sample_rate"])
        with tempfile.TemporaryDirectory() as tmp:
            raw = Path(tmp) / "raw.wav"
            self._speak(str(item["text"]), raw)
            # -G: the HTS voice peaks at full scale, which resampling would clip.
            subprocess.run(
                ["sox", "-G", str(raw), "-b", "16", "-c", "1", "-r", str(rate), str(out)],
                check=True,
                capture_output=True,
            )
        return {"audio": str(out)}


def main(argv: list[str] | None = None) -> int:
    """Serve mode by default; --exec INPUT OUTPUT for one item."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voice", choices=sorted(VOICES), default="slt")
    parser.add_argument("--rate", type=float, default=1.0, help="speaking rate, > 1 is faster")
    parser.add_argument("--exec", nargs=2, metavar=("INPUT", "OUTPUT"))
    args = parser.parse_args(argv)
    tts = Festival(args.voice, args.rate)
    if args.exec:
        return exec_main(tts.synthesize, args.exec[0], args.exec[1], tts.setup)
    return serve("festival", "2.5", tts.synthesize, tts.setup)


if __name__ == "__main__":
    sys.exit(main())
