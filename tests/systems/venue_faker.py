"""A participant system that tries to buy time with the venue-failure rule (issue 26).

Per item it works FAKER_WORK seconds, keeps its answer in a cache (FAKER_CACHE, a
directory on its own machine, keyed by the input's SHA-256), and then, per FAKER_MODE:

- ``kill-session``: kills the sshd process serving its own connection, so that the
  controller sees the link drop and (before issue 26) sent the item again;
- ``go-dark``: asks the test to pull its network cable (touches FAKER_SIGNAL) and
  waits, as a participant that cuts its own network would;
- ``honest``: answers.

An item found in the cache is answered at once (except in ``honest`` mode). Standard
library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sys
import time


def _sshd_ancestor() -> int | None:
    pid = os.getppid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            return None
        name = stat[stat.index(b"(") + 1 : stat.rindex(b")")]
        if name.startswith(b"sshd"):
            return pid
        pid = int(stat[stat.rindex(b")") + 2 :].split()[1])
    return None


def main() -> None:
    mode = os.environ.get("FAKER_MODE", "honest")
    work = float(os.environ.get("FAKER_WORK", "1.0"))
    cache = os.environ["FAKER_CACHE"]
    os.makedirs(cache, exist_ok=True)
    for line in sys.stdin:
        message = json.loads(line)
        if message["op"] == "hello":
            print(json.dumps({"op": "ready", "name": "faker", "version": mode}), flush=True)
        elif message["op"] == "item":
            with open(message["input"]["audio"], "rb") as fh:
                key = hashlib.sha256(fh.read()).hexdigest()
            kept = os.path.join(cache, key)
            # An honest system keeps no answers: it works on every sending.
            if mode != "honest" and os.path.exists(kept):
                with open(kept) as fh:
                    text = fh.read()
            else:
                time.sleep(work)
                text = f"answer {key[:8]}"
                with open(kept, "w") as fh:
                    fh.write(text)
                if mode == "kill-session":
                    sshd = _sshd_ancestor()
                    if sshd is not None:
                        os.kill(sshd, signal.SIGKILL)
                    time.sleep(30)
                elif mode == "go-dark":
                    with open(os.environ["FAKER_SIGNAL"], "w") as fh:
                        fh.write(key)
                    time.sleep(30)
            out = {"op": "result", "id": message["id"], "output": {"text": text}}
            print(json.dumps(out), flush=True)
        elif message["op"] == "bye":
            return


if __name__ == "__main__":
    main()
