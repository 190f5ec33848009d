"""A deliberately faulty ASR participant, for demonstrating fault handling.

It answers quickly with a weak fixed hypothesis (``"the"``), except that it
crashes on some items and hangs on others.  Which items misbehave depends
only on the audio content, so the same item misbehaves the same way whatever
its id, file name, position, or how often it is re-sent after a restart.

The rule: decode the file to int16 samples and take
``v = first 4 bytes of sha256(SALT + samples), big-endian, / 2**32``.

* ``v < 0.04``: hang.  It first starts a child ``sleep 1000`` (sharing our
  stderr and process group), then sleeps forever, so the harness has to kill
  the whole process tree, not just this process.
* ``0.04 <= v < 0.17``: crash.  A line goes to stderr, then ``os._exit(3)``.
* otherwise: answer ``{"text": "the"}``.

SALT was picked so that on the demo set (``python -m datagen.make_demo_asr``
with festival 2.5 and Debian's festvox-us-slt-hts and festvox-kallpc16k) it hangs
on exactly one item (s05_clean) and crashes on three (s02_snr5, s04_clean,
s07_clean).  A different festival or voice version synthesizes different samples
and so may give different counts.

Usage: ``python -m systems.faulty_asr [--exec INPUT OUTPUT]``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import time
from typing import Any, Literal

import soundfile as sf

from .jsonlines import log, main

SALT = b"onsite-faulty-49"
HANG_BELOW = 0.04
CRASH_BELOW = 0.17
CRASH_EXIT_CODE = 3

Behaviour = Literal["answer", "crash", "hang"]


def behaviour(audio_path: str) -> Behaviour:
    """Return what the system does for this audio file (see module docstring)."""
    samples, _ = sf.read(audio_path, dtype="int16")
    digest = hashlib.sha256(SALT + samples.tobytes()).digest()
    v = int.from_bytes(digest[:4], "big") / 2**32
    if v < HANG_BELOW:
        return "hang"
    if v < CRASH_BELOW:
        return "crash"
    return "answer"


def recognize(item_input: dict[str, Any]) -> dict[str, Any]:
    """Answer, crash or hang depending on the audio content."""
    path = item_input.get("audio")
    if not isinstance(path, str):
        raise ValueError("input has no 'audio' path")
    action = behaviour(path)
    if action == "crash":
        log(f"faulty_asr: simulated crash on {path}")
        # os._exit skips cleanup and flushing, like a real native crash would.
        os._exit(CRASH_EXIT_CODE)
    if action == "hang":
        child = subprocess.Popen(
            ["sleep", "1000"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL
        )
        log(f"faulty_asr: simulated hang on {path} (child pid {child.pid})")
        while True:
            time.sleep(3600)
    return {"text": "the"}


if __name__ == "__main__":
    sys.exit(main("faulty-asr", "1.0", recognize))
