"""A test synthesizer: the same samples for a text, written in the WAV layout asked for.

Every layout holds exactly the same 16-bit samples for a given text (a tone whose length
and pitch follow the text), so after the judging panel's normalisation the audio of
every layout must be byte for byte the same; before it, each layout tells its system
apart by its size and header alone.

    python -m tests.systems.wav_layouts --layout plain|list|float|pcm24
"""

from __future__ import annotations

import argparse
import struct
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import soundfile

from examples.systems.jsonlines import serve

LAYOUTS = ("plain", "list", "float", "pcm24")


def samples(text: str, rate: int) -> np.ndarray:
    """The int16 samples every layout writes for ``text``."""
    n = int(rate * 0.04 * len(text))
    freq = 150 + zlib.crc32(text.encode()) % 300
    t = np.arange(n) / rate
    return np.round(9000 * np.sin(2 * np.pi * freq * t)).astype(np.int16)


def _chunk(name: bytes, data: bytes) -> bytes:
    pad = b"\0" if len(data) % 2 else b""
    return name + struct.pack("<I", len(data)) + data + pad


def write(path: Path, layout: str, x: np.ndarray, rate: int) -> None:
    """Write ``x`` at ``path`` in ``layout``."""
    if layout in ("plain", "list"):
        fmt = _chunk(b"fmt ", struct.pack("<HHIIHH", 1, 1, rate, rate * 2, 2, 16))
        extra = b""
        if layout == "list":
            # What many tools write: an INFO list naming the software, before the samples.
            info = b"INFO" + _chunk(b"ISFT", b"Acme Voice Studio 3.1\0")
            extra = _chunk(b"LIST", info)
        body = b"WAVE" + fmt + extra + _chunk(b"data", x.astype("<i2").tobytes())
        path.write_bytes(b"RIFF" + struct.pack("<I", len(body)) + body)
    elif layout == "float":
        soundfile.write(str(path), x.astype(np.float32) / 32768, rate, subtype="FLOAT")
    else:
        soundfile.write(str(path), x.astype(np.int32) << 16, rate, subtype="PCM_24")


def main(argv: list[str] | None = None) -> int:
    """Serve mode: one WAV per item in the layout given."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layout", choices=LAYOUTS, required=True)
    args = parser.parse_args(argv)

    def synthesize(item: dict[str, Any]) -> dict[str, Any]:
        rate = int(item["sample_rate"])
        out = Path(item["audio_out"])
        write(out, args.layout, samples(str(item["text"]), rate), rate)
        return {"audio": str(out)}

    return serve("wav-layouts", "1", synthesize)


if __name__ == "__main__":
    sys.exit(main())
