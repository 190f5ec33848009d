"""Example ASR participant built on PocketSphinx and its bundled US-English model.

Usage::

    python -m systems.sphinx_asr                 # serve mode, default config
    python -m systems.sphinx_asr --fast          # serve mode, faster config
    python -m systems.sphinx_asr [--fast] --exec INPUT OUTPUT

The default configuration is PocketSphinx's own.  ``--fast`` trades some
accuracy for speed: no second (flat-lexicon) pass, narrower beams, a cap on
active HMMs per frame and fewer Gaussians scored per frame.  Audio must be
mono at the model's sample rate (16 kHz); anything else is rejected with an
error rather than resampled.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import soundfile as sf
from pocketsphinx import Decoder

from .jsonlines import exec_main, log, serve

# Keyword arguments for Decoder(); values chosen by measuring speed and WER on
# the demo set (see site_config/data/demo-asr/README.md).
FAST_OPTIONS: dict[str, Any] = {
    "fwdflat": False,  # skip the second search pass, the largest single cost
    "beam": 1e-40,
    "wbeam": 1e-24,
    "pbeam": 1e-40,
    "maxhmmpf": 5000,
    "topn": 3,
}


def pocketsphinx_version() -> str:
    """Return the installed pocketsphinx version string."""
    try:
        return version("pocketsphinx")
    except PackageNotFoundError:
        return "unknown"


class SphinxRecognizer:
    """Holds one PocketSphinx decoder and decodes audio files with it."""

    def __init__(self, fast: bool = False) -> None:
        self.options: dict[str, Any] = dict(FAST_OPTIONS) if fast else {}
        self.decoder: Decoder | None = None
        self.sample_rate = 16000

    def setup(self, hello: dict[str, Any] | None = None) -> None:
        """Load the acoustic model, dictionary and language model."""
        self.decoder = Decoder(loglevel="WARN", **self.options)
        self.sample_rate = int(self.decoder.config["samprate"])
        log(f"pocketsphinx decoder loaded, options={self.options or 'defaults'}")

    def recognize(self, item_input: dict[str, Any]) -> dict[str, Any]:
        """Decode ``item_input["audio"]`` and return ``{"text": hypothesis}``."""
        if self.decoder is None:
            self.setup()
        assert self.decoder is not None
        path = item_input.get("audio")
        if not isinstance(path, str):
            raise ValueError("input has no 'audio' path")
        info = sf.info(path)
        if info.channels != 1:
            raise ValueError(f"audio has {info.channels} channels, expected mono")
        if info.samplerate != self.sample_rate:
            raise ValueError(
                f"audio sample rate is {info.samplerate} Hz, the model needs {self.sample_rate} Hz"
            )
        samples, _ = sf.read(path, dtype="int16")
        if len(samples) == 0:
            return {"text": ""}
        # Noise-removal and CMN state otherwise carries over from the previous
        # utterance, which would make a hypothesis depend on item order (the
        # harness may shuffle or re-send items); resetting costs ~0.1 ms.
        self.decoder.reinit_feat()
        self.decoder.start_utt()
        self.decoder.process_raw(samples.tobytes(), no_search=False, full_utt=True)
        self.decoder.end_utt()
        hyp = self.decoder.hyp()
        return {"text": hyp.hypstr.lower() if hyp is not None else ""}


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point: serve mode, or one item with ``--exec``."""
    parser = argparse.ArgumentParser(description="PocketSphinx example ASR system")
    parser.add_argument("--fast", action="store_true", help="use the faster configuration")
    parser.add_argument("--exec", nargs=2, metavar=("INPUT", "OUTPUT"), help="exec mode")
    args = parser.parse_args(argv)
    recognizer = SphinxRecognizer(fast=args.fast)
    if args.exec:
        return exec_main(recognizer.recognize, args.exec[0], args.exec[1], recognizer.setup)
    name = "sphinx-fast" if args.fast else "sphinx-default"
    return serve(
        name, f"pocketsphinx {pocketsphinx_version()}", recognizer.recognize, recognizer.setup
    )


if __name__ == "__main__":
    sys.exit(main())
