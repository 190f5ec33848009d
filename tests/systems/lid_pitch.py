"""A toy language identifier for the lid kind's tests: it decides by one acoustic feature.

It estimates the dominant frequency from the zero-crossing rate and answers the
language whose band holds it, from LID_BANDS ("code:low-high,..." in Hz; default
"en:0-400,zh:400-100000"). Tone-only test sets make its answers predictable, which
is all a test of the harness needs. Standard library only, so it starts fast
inside the sandbox.
"""

from __future__ import annotations

import array
import json
import os
import sys
import wave


def dominant_hz(path: str) -> float:
    """Zero crossings per second / 2: the frequency of a pure tone."""
    with wave.open(path, "rb") as fh:
        rate, frames = fh.getframerate(), fh.getnframes()
        samples = array.array("h", fh.readframes(frames))
    if sys.byteorder == "big":
        samples.byteswap()
    crossings = sum(1 for a, b in zip(samples, samples[1:], strict=False) if (a < 0) != (b < 0))
    return crossings * rate / (2 * max(frames, 1))


def bands(text: str) -> list[tuple[str, float, float]]:
    """ "en:0-400,zh:400-100000" -> [("en", 0, 400), ("zh", 400, 100000)]."""
    out = []
    for part in text.split(","):
        code, _, span = part.partition(":")
        low, _, high = span.partition("-")
        out.append((code, float(low), float(high)))
    return out


def main() -> None:
    table = bands(os.environ.get("LID_BANDS", "en:0-400,zh:400-100000"))
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "hello":
            reply = {"op": "ready", "name": "lid-pitch", "version": "1.0"}
        elif message["op"] == "item":
            hz = dominant_hz(message["input"]["audio"])
            code = next((c for c, low, high in table if low <= hz < high), "und")
            reply = {"op": "result", "id": message["id"], "output": {"language": code}}
        else:
            return
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
