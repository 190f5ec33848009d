"""An exec-mode system: `fake_exec.py INPUT OUTPUT`, scripted like fake_system by FAKE_PLAN."""

from __future__ import annotations

import json
import os
import sys
import time
import wave


def main() -> None:
    source, target = sys.argv[1], sys.argv[2]
    with wave.open(source, "rb") as fh:
        frames = fh.getnframes()
    behaviour = json.loads(os.environ.get("FAKE_PLAN", "{}")).get(str(frames), {})
    time.sleep(behaviour.get("delay", 0))
    action = behaviour.get("do")
    if action == "crash":
        print("fake_exec: crashing", file=sys.stderr)
        sys.exit(4)
    if action == "hang":
        time.sleep(3600)
    if action == "no_output":
        return
    if action == "latin1":
        with open(target, "wb") as fh:
            fh.write("caf\xe9".encode("latin-1"))
        return
    text = behaviour.get("text", "")
    if action == "plain":
        with open(target, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")
        return
    with open(target, "w", encoding="utf-8") as fh:
        json.dump({"text": text}, fh)


if __name__ == "__main__":
    main()
