"""A keyword-spotting system whose answers the tests script, and which shows what it was given.

FAKE_PLAN maps an item's audio length in frames to {"slots": {...}, "scores":
{keyword: score}, "extra": [detections sent as they are]}. A scored keyword is
sent as a detection only if hello's keyword list (``files.keywords``) lists it
for the item's ``setting``, so the detections show that the list arrived; each
answer also says how many keywords the list gave the setting ("listed") and
whether the file named by KWS_PEEK (the test set's references) could be read
("peeked"). Standard library only: it must not import the harness.
"""

from __future__ import annotations

import json
import os
import sys
import wave


def main() -> None:
    plan = json.loads(os.environ.get("FAKE_PLAN", "{}"))
    peek = os.environ.get("KWS_PEEK", "")
    settings: dict[str, dict[str, list[str]]] = {}
    peeked = False

    def send(message: dict) -> None:
        # allow_nan: a plan may script a NaN score, as a careless system would send it.
        sys.stdout.write(json.dumps(message, allow_nan=True) + "\n")
        sys.stdout.flush()

    for line in sys.stdin:
        message = json.loads(line)
        op = message["op"]
        if op == "hello":
            path = message.get("files", {}).get("keywords")
            if path:
                with open(path, encoding="utf-8") as fh:
                    settings = json.load(fh)["settings"]
            if peek:
                try:
                    with open(peek, encoding="utf-8") as fh:
                        peeked = bool(fh.read())
                except OSError:
                    peeked = False
            send({"op": "ready", "name": "kws-fake", "version": "1.0"})
        elif op == "item":
            inputs = message["input"]
            with wave.open(inputs["audio"], "rb") as fh:
                behaviour = plan.get(str(fh.getnframes()), {})
            slots = settings.get(inputs.get("setting", ""), {})
            listed = sorted({w for words in slots.values() for w in words})
            scores = behaviour.get("scores", {})
            detections = [{"keyword": k, "score": scores[k]} for k in listed if k in scores]
            output = {
                "slots": behaviour.get("slots", {}),
                "detections": detections + behaviour.get("extra", []),
                "listed": len(listed),
                "peeked": peeked,
            }
            send({"op": "result", "id": message["id"], "output": output})
        elif op == "bye":
            return


if __name__ == "__main__":
    main()
