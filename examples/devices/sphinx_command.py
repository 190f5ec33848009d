"""Example device agent: a PocketSphinx command recognizer restricted to the task's vocabulary.

Run it on a device with ``python -m devices.agent --agent examples.devices.sphinx_command
--port /dev/ttyS0``, or under the emulator with ``python -m devices.emulator --agent
examples.devices.sphinx_command``.

The vocabulary (one command per line, sent by the controller in the SETUP
transfer) becomes a JSGF grammar with one alternative per command, so the
decoder can only answer with a command of the task. Commands containing a word
the dictionary lacks are left out of the grammar.

8 kHz audio: PocketSphinx's bundled US-English model is trained on 16 kHz
features, and its feat.params fixes the filterbank (upper edge 6800 Hz), so
``samprate=8000`` cannot simply be set. The device therefore upsamples 8 kHz
input by 2 with a windowed-sinc low-pass filter before decoding. That keeps the
model as it is (the 4-8 kHz band is empty, which costs little accuracy for
isolated commands). The harness itself never resamples; this is the device's
own choice. A device with an 8 kHz model would list 8000 and decode directly.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np
from pocketsphinx import Decoder

MODEL_RATE = 16000
_TAPS = 63


def _halfband_filter() -> np.ndarray:
    """Low-pass at a quarter of the new rate (the old Nyquist), gain 2 for zero-stuffing."""
    n = np.arange(_TAPS) - (_TAPS - 1) / 2
    h = np.sinc(n / 2) * np.hamming(_TAPS)
    return h * (2.0 / h.sum())


_FILTER = _halfband_filter()


def upsample_2x(pcm: bytes) -> bytes:
    """16-bit PCM at rate r to 16-bit PCM at 2r."""
    x = np.frombuffer(pcm, dtype="<i2").astype(np.float64)
    y = np.zeros(2 * len(x))
    y[::2] = x
    z = np.convolve(y, _FILTER, mode="same")
    return np.clip(np.round(z), -32768, 32767).astype("<i2").tobytes()


def grammar(commands: Sequence[str]) -> str:
    """A JSGF grammar accepting exactly one of ``commands``."""
    alternatives = " | ".join(commands)
    return f"#JSGF V1.0;\ngrammar commands;\npublic <command> = {alternatives};\n"


def _version() -> str:
    try:
        return f"pocketsphinx {version('pocketsphinx')}"
    except PackageNotFoundError:
        return "pocketsphinx"


class SphinxCommandRecognizer:
    """Closed-set command recognition with a JSGF grammar built from the vocabulary."""

    name = "sphinx-command"
    version = _version()
    sample_rates = (8000, 16000)

    def __init__(self) -> None:
        self.decoder: Decoder | None = None
        self.commands: list[str] = []
        self.skipped: list[str] = []

    def load(self, vocabulary: Sequence[str]) -> None:
        decoder = Decoder(loglevel="ERROR", lm=None)
        commands: list[str] = []
        skipped: list[str] = []
        for entry in vocabulary:
            words = entry.lower().split()
            if words and all(decoder.lookup_word(w) is not None for w in words):
                commands.append(" ".join(words))
            else:
                skipped.append(entry)
        if not commands:
            raise ValueError("no command of the vocabulary is in the pronunciation dictionary")
        decoder.add_jsgf_string("commands", grammar(commands))
        decoder.activate_search("commands")
        self.decoder, self.commands, self.skipped = decoder, commands, skipped

    def recognize(self, pcm: bytes, sample_rate: int) -> str:
        if self.decoder is None:
            raise RuntimeError("recognize before load")
        if sample_rate == MODEL_RATE // 2:
            pcm = upsample_2x(pcm)
        elif sample_rate != MODEL_RATE:
            raise ValueError(f"sample rate {sample_rate} Hz; accepted: {self.sample_rates}")
        if not pcm:
            return ""
        # Otherwise CMN state carries over and the answer depends on item order.
        self.decoder.reinit_feat()
        self.decoder.start_utt()
        self.decoder.process_raw(pcm, no_search=False, full_utt=True)
        self.decoder.end_utt()
        hyp = self.decoder.hyp()
        return hyp.hypstr if hyp is not None else ""


def make_recognizer() -> SphinxCommandRecognizer:
    return SphinxCommandRecognizer()
